/* Fuzzes request-body parsing and validation: any bytes with any content type
 * must give either a parsed value or a 400 message, never a crash or leak.
 * The input is also tried as a Content-Type on a text/plain route. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/errors.h"
#include "core/validate.h"

static const char *const KINDS[] = {"individual", "entity", NULL};
static const v_field ADDRESS[] = {
    {"line1", V_STRING, .required = true, .min_len = 1, .max_len = 64},
    {"country", V_STRING, .max_len = 2},
    {NULL, V_ANY, .required = false},
};
static const v_schema ADDRESS_SCHEMA = {ADDRESS};
static const v_field ITEM = {"item", V_OBJECT, .required = true, .object = &ADDRESS_SCHEMA};
static const v_field FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = 256},
    {"kind", V_ENUM, .values = KINDS},
    {"amount", V_DECIMAL},
    {"when", V_DATETIME},
    {"born", V_DATE},
    {"count", V_INTEGER, .has_range = true, .min_int = 0, .max_int = 100},
    {"flag", V_BOOLEAN, .nullable = true},
    {"address", V_OBJECT, .object = &ADDRESS_SCHEMA},
    {"items", V_ARRAY, .max_items = 8, .items = &ITEM},
    {NULL, V_ANY, .required = false},
};
static const v_schema SCHEMA = {FIELDS};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256];
    /* The Content-Type header is client data too: the same bytes as the
     * type of a body on a ROUTE_TEXT_JSON route (text/plain parameters). */
    char *type = strndup((const char *)data, size);
    if (type != NULL)
        json_decref(v_parse_body_text("{}", 2, type, false, msg, sizeof msg));
    free(type);
    json_t *body = v_parse_body((const char *)data, size, "application/json", true, msg, sizeof msg);
    if (body == NULL)
        return 0;
    json_t *issues = json_array();
    v_check_object(&SCHEMA, body, NULL, issues);
    json_t *err = error_body_validation("fuzz", issues);
    char *text = json_dumps(err, JSON_COMPACT);
    free(text);
    json_decref(err);
    json_decref(body);
    return 0;
}
