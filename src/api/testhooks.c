/* testhooks: routes that exist only when taxd runs with --test-hooks, so
 * black-box tests can move the service clock (token expiry, URL expiry,
 * retention), hold a request in flight (load shedding) without sleeping
 * on timings, and make the store fail as on an I/O error (500, 503). Never enabled in production. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/validate.h"

static const v_field CLOCK_FIELDS[] = {
    {"offset_ms", V_INTEGER, .required = true, .has_range = true,
     .min_int = -100LL * 365 * 86400 * 1000, .max_int = 100LL * 365 * 86400 * 1000},
    {NULL},
};
static const v_schema CLOCK_REQUEST = {CLOCK_FIELDS};

void api_test_clock(request_t *req)
{
    json_t *body = api_read_body(req, &CLOCK_REQUEST, "clock request");
    if (body == NULL)
        return;
    json_int_t offset = json_integer_value(json_object_get(body, "offset_ms"));
    clock_set_offset_ms(api_ctx(req)->clock, (int64_t)offset);
    reply_json(req, 200, json_pack("{s:I}", "offset_ms", offset));
}

static const v_field FAULT_FIELDS[] = {
    {"failing", V_BOOLEAN, .required = true},
    {NULL},
};
static const v_schema FAULT_REQUEST = {FAULT_FIELDS};

void api_test_store_fault(request_t *req)
{
    json_t *body = api_read_body(req, &FAULT_REQUEST, "fault request");
    if (body == NULL)
        return;
    bool failing = json_is_true(json_object_get(body, "failing"));
    store_set_fault(api_ctx(req)->store, failing);
    reply_json(req, 200, json_pack("{s:b}", "failing", failing));
}

void api_test_pause(request_t *req)
{
    bool malformed = false;
    const char *text = request_query(req, "ms", &malformed);
    char *end = NULL;
    errno = 0;
    long ms = text ? strtol(text, &end, 10) : 0;
    if (malformed || (text != NULL && (*end != '\0' || errno != 0)) || ms < 0 || ms > 60000) {
        reply_error(req, 400, "ms must be an integer between 0 and 60000");
        return;
    }
    clock_sleep_ms(ms);
    reply_json(req, 200, json_object());
}
