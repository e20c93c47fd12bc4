/* dispositions: an account's disposition method records (scope `inventory`):
 *
 *   POST   /v1/accounts/{accountId}/disposition-methods-history
 *   GET    /v1/accounts/{accountId}/disposition-methods-history   (paged, by effective_from)
 *   PATCH  /v1/accounts/{accountId}/disposition-methods-history/{recordId}
 *   DELETE /v1/accounts/{accountId}/disposition-methods-history/{recordId}  (204)
 *
 * A record is a standing order for specific identification (FIFO, HIFO,
 * LIFO, LOFO) from its effective_from on. Such an order counts only when it
 * was given before the disposals it governs, so an effective_from earlier
 * than the request's now is refused (400 on effective_from) unless the body
 * says recorded_elsewhere: true, the platform's word that it kept the order
 * before it used taxd. A record already in force (effective_from <= now)
 * is history: it cannot be changed or deleted (409). The rules that need the
 * stored rows (in force, one record per effective_from, an AUSTRIA account
 * takes none) are decided by the store inside its write transaction.
 *
 * Order of answers: 400 (shape, then the past rule when the body alone
 * decides it), 404 (account, then record), 409 in force, 400 past (PATCH:
 * on the merged record), 409 AUSTRIA, 409 same effective_from. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/domain.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "store/accounts.h"
#include "store/dispositions.h"

#define WHAT "disposition method record"

static const v_field CREATE_FIELDS[] = {
    {"method", V_ENUM, .required = true, .values = DOMAIN_DISPOSITION_METHOD_NAMES},
    {"effective_from", V_DATETIME, .required = true},
    {"recorded_elsewhere", V_BOOLEAN, .required = false},
    {.name = NULL}};
static const v_schema CREATE_SCHEMA = {CREATE_FIELDS};

static const v_field PATCH_FIELDS[] = {
    {"method", V_ENUM, .values = DOMAIN_DISPOSITION_METHOD_NAMES},
    {"effective_from", V_DATETIME, .required = false},
    {"recorded_elsewhere", V_BOOLEAN, .required = false},
    {.name = NULL}};
static const v_schema PATCH_SCHEMA = {PATCH_FIELDS};

#define PAST_MESSAGE                                                                             \
    "Earlier than now: a standing order counts only from when it is given; set "              \
    "recorded_elsewhere to true for one the platform recorded before"

/* ---- output and issues ------------------------------------------------ */

static json_t *record_json(const store_disposition_t *r)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:b, s:o, s:o}", "id", r->uuid, "account_id",
                     r->account_id, "method", r->method, "effective_from",
                     jsonval_time(r->effective_from), "recorded_elsewhere", r->recorded_elsewhere,
                     "created_at", jsonval_time(r->created_at), "updated_at",
                     jsonval_time(r->updated_at));
}

static void reply_issue(request_t *req, const char *field, const char *message)
{
    json_t *path = json_pack("[s]", field);
    json_t *issues = json_array();
    json_array_append_new(issues, v_issue("custom", path, message, NULL));
    json_decref(path);
    reply_invalid(req, "Invalid " WHAT, issues);
}

/* The body's effective_from in ms; false (after answering 400) when the
 * validator's well-formed datetime lies outside the instants taxd keeps. */
static bool effective_from_of(request_t *req, const json_t *body, int64_t *ms)
{
    const char *text = json_string_value(json_object_get(body, "effective_from"));
    if (clock_parse_rfc3339(text, ms) == 0)
        return true;
    reply_issue(req, "effective_from", "Invalid datetime: outside 0001-01-01 to 9999-12-31 UTC");
    return false;
}

/* The refusals every write shares. */
static void reply_refusal(request_t *req, store_disposition_refusal_t why, const char *account_id,
                          const char *record_id, int64_t effective_from)
{
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(effective_from, when);
    switch (why) {
    case STORE_DISPOSITION_NO_ACCOUNT:
        reply_error(req, 404, "Account with id '%s' not found", account_id);
        break;
    case STORE_DISPOSITION_NO_RECORD:
        reply_error(req, 404, "Disposition method record with id '%s' not found", record_id);
        break;
    case STORE_DISPOSITION_AUSTRIA:
        reply_error(req, 409,
                    "Account '%s' uses the AUSTRIA method, which takes no disposition method "
                    "records",
                    account_id);
        break;
    case STORE_DISPOSITION_IN_FORCE:
        reply_error(req, 409,
                    "Disposition method record '%s' is in force and cannot be changed or deleted",
                    record_id);
        break;
    case STORE_DISPOSITION_DUPLICATE:
        reply_error(req, 409,
                    "Account '%s' already has a disposition method record effective from %s",
                    account_id, when);
        break;
    case STORE_DISPOSITION_PAST:
        reply_issue(req, "effective_from", PAST_MESSAGE);
        break;
    case STORE_DISPOSITION_DONE:
        api_internal_error(req, "disposition method write refused without a reason");
        break;
    }
}

/* ---- POST ------------------------------------------------------------- */

void api_dispositions_create(request_t *req)
{
    const char *account_id = request_param(req, "accountId");
    json_t *body = api_read_body(req, &CREATE_SCHEMA, WHAT);
    if (body == NULL)
        return;
    store_disposition_t rec = {0};
    if (!effective_from_of(req, body, &rec.effective_from))
        return;
    rec.recorded_elsewhere = json_is_true(json_object_get(body, "recorded_elsewhere"));
    rec.created_at = rec.updated_at = api_now_ms(req);
    if (rec.effective_from < rec.created_at && !rec.recorded_elsewhere) {
        reply_issue(req, "effective_from", PAST_MESSAGE);
        return;
    }
    buf_copy(rec.method, sizeof rec.method, json_string_value(json_object_get(body, "method")));
    buf_copy(rec.account_id, sizeof rec.account_id, account_id);
    if (strlen(account_id) >= sizeof rec.account_id) { /* no such account can exist */
        reply_error(req, 404, "Account with id '%s' not found", account_id);
        return;
    }
    if (ids_uuid_v4(rec.uuid) != 0) {
        api_internal_error(req, "uuid generation");
        return;
    }
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_disposition_refusal_t why;
    store_status_t st = store_disposition_create(db, req->claims.tenant_id, &rec, &why);
    if (st == STORE_OK)
        reply_data(req, 201, record_json(&rec));
    else if (why != STORE_DISPOSITION_DONE) {
        reply_refusal(req, why, account_id, NULL, rec.effective_from);
    } else {
        reply_store_failure(req, st);
    }
}

/* ---- GET (list) ------------------------------------------------------- */

static int append_record(const store_disposition_t *rec, void *page)
{
    return api_page_add(page, record_json(rec));
}

/* The cursor is the last record's effective_from as answered; one that does
 * not parse (a forged cursor) starts after every record: an empty page. */
static store_status_t fetch_records(store_conn_t *db, api_page_t *page, const void *arg)
{
    int64_t after = INT64_MIN;
    if (page->after[0] != '\0' && clock_parse_rfc3339(page->after, &after) != 0)
        after = INT64_MAX;
    return store_disposition_list(db, page->req->claims.tenant_id, arg, after, page->limit,
                                  append_record, page, &page->more);
}

void api_dispositions_list(request_t *req)
{
    const char *account_id = request_param(req, "accountId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    char uuid[STORE_UUID_LEN], method[DOMAIN_METHOD_SIZE];
    store_status_t st = store_account_uuid(db, req->claims.tenant_id, account_id, uuid, method);
    if (!api_found(req, st, "Account", account_id))
        return;
    api_list(req, "effective_from", fetch_records, account_id);
}

/* ---- PATCH and DELETE ------------------------------------------------- */

/* The patch a validated body asks for; false after answering 400. */
static bool patch_of(request_t *req, const json_t *body, store_disposition_patch_t *p)
{
    memset(p, 0, sizeof *p);
    const char *method = json_string_value(json_object_get(body, "method"));
    const json_t *elsewhere = json_object_get(body, "recorded_elsewhere");
    p->has_method = method != NULL;
    if (method != NULL)
        buf_copy(p->method, sizeof p->method, method);
    p->has_recorded_elsewhere = elsewhere != NULL;
    p->recorded_elsewhere = json_is_true(elsewhere);
    p->has_effective_from = json_object_get(body, "effective_from") != NULL;
    return !p->has_effective_from || effective_from_of(req, body, &p->effective_from);
}

void api_dispositions_update(request_t *req)
{
    const char *account_id = request_param(req, "accountId");
    const char *record_id = request_param(req, "recordId");
    json_t *body = api_read_body(req, &PATCH_SCHEMA, WHAT);
    store_disposition_patch_t patch;
    if (body == NULL || !patch_of(req, body, &patch))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_disposition_t out;
    store_disposition_refusal_t why;
    store_status_t st = store_disposition_update(db, req->claims.tenant_id, account_id, record_id,
                                                 &patch, api_now_ms(req), &out, &why);
    if (st == STORE_OK) {
        reply_data(req, 200, record_json(&out));
    } else if (why != STORE_DISPOSITION_DONE) {
        reply_refusal(req, why, account_id, record_id, patch.effective_from);
    } else {
        reply_store_failure(req, st);
    }
}

void api_dispositions_delete(request_t *req)
{
    const char *account_id = request_param(req, "accountId");
    const char *record_id = request_param(req, "recordId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_disposition_refusal_t why;
    store_status_t st = store_disposition_delete(db, req->claims.tenant_id, account_id, record_id,
                                                 api_now_ms(req), &why);
    if (st == STORE_OK) {
        reply_empty(req, 204);
    } else if (why != STORE_DISPOSITION_DONE) {
        reply_refusal(req, why, account_id, record_id, 0);
    } else {
        reply_store_failure(req, st);
    }
}
