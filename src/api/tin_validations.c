/* tin_validations: real-time TIN matching (spec § Events: RTTM_TIN_VALIDATION).
 *
 *   POST /v1/tin-validations                  queue a check: 202 {"data": validation}
 *   GET  /v1/tin-validations/{validationId}   the check as it is now: 200 {"data": validation}
 *
 * A validation is a row of the TIN check queue (store/tinchecks.h) of kind
 * rttm whose id is the validation_id: the POST inserts it in one
 * transaction and wakes this process's engines; the engine
 * (tincheck/runner.c) writes the result and RTTM_TIN_VALIDATION together.
 *
 * The body's TIN is not judged here beyond its size and characters a JSON
 * string may carry: a TIN that breaks the structural rules is a result
 * (INVALID_FORMAT), not a bad request, so callers learn it the same way as
 * every other outcome. tin_type must be one of the supported types (400
 * with `values` otherwise). account_owner_id, when given, is the caller's
 * owner id and must exist (404 naming it).
 *
 * The TIN is sealed at once (tenant id and validation id as associated
 * data) and answered masked; it never reaches a log line or an error body.
 * A malformed id, an unknown one and another tenant's are the same 404. */
#include <ctype.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/tin.h"
#include "store/owners.h"
#include "store/tinchecks.h"
#include "tincheck/runner.h"

#define TIN_TEXT_MAX 40   /* characters and bytes of the tin field */
#define NAME_TEXT_MAX 256 /* characters of the name */

static const char *const TIN_TYPES[] = {"SSN", "EIN", "ITIN", "ATIN", "FOREIGN", NULL};

static const v_field CREATE_FIELDS[] = {
    {"name", V_STRING, .required = true, .min_len = 1, .max_len = NAME_TEXT_MAX},
    {"tin", V_STRING, .required = true, .min_len = 1, .max_len = TIN_TEXT_MAX},
    {"tin_type", V_ENUM, .required = true, .values = TIN_TYPES},
    {"account_owner_id", V_STRING, .nullable = true, .min_len = 1, .max_len = 256},
    {.name = NULL}};
static const v_schema CREATE = {CREATE_FIELDS};

/* ---- the body --------------------------------------------------------- */

static void add_issue(json_t *issues, const char *field, const char *message)
{
    json_t *path = json_pack("[s]", field);
    json_t *issue = v_issue("custom", path, message, NULL);
    json_array_append_new(issues, issue != NULL ? issue : json_null());
    json_decref(path);
}

/* A string the schema accepted that holds a NUL or control character, or
 * (for the TIN) more bytes than characters allow: refused without quoting. */
static void check_text(json_t *issues, const json_t *body, const char *field, size_t max_bytes)
{
    const json_t *v = json_object_get(body, field);
    if (!json_is_string(v))
        return;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            add_issue(issues, field, "Invalid string: control characters are not allowed");
            return;
        }
    }
    if (max_bytes > 0 && len > max_bytes)
        add_issue(issues, field, "Too big: expected tin to have <=40 bytes");
}

/* The validated body, or NULL after answering 400. */
static json_t *read_body(request_t *req)
{
    json_t *body = request_json(req, false);
    if (body == NULL)
        return NULL;
    json_t *issues = json_array();
    if (v_check_object(&CREATE, body, NULL, issues) == 0) {
        check_text(issues, body, "name", 0);
        check_text(issues, body, "tin", TIN_TEXT_MAX);
        check_text(issues, body, "account_owner_id", 0);
    }
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid TIN validation", issues);
        return NULL;
    }
    json_decref(issues);
    return body;
}

static const char *text_at(const json_t *body, const char *key)
{
    const json_t *v = json_object_get(body, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- the answer ------------------------------------------------------- */

/* The validation as answered; NULL when its TIN does not open or memory ran
 * out. owner_id: the caller's owner id, or NULL. */
static json_t *validation_json(request_t *req, const store_tin_check_t *c, const char *owner_id)
{
    char clear[TIN_MAX], masked[TIN_MAX];
    if (tin_open(api_ctx(req)->tin_key, c->tenant_id, c->id, c->tin_sealed, c->tin_sealed_len,
                 clear) != 0) {
        log_event(LOG_ERROR, "tin validation: sealed TIN does not open",
                  json_pack("{s:s}", "validation_id", c->id));
        return NULL;
    }
    tin_mask(clear, masked);
    explicit_bzero(clear, sizeof clear);
    bool done = c->validated_at != 0;
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "validation_id", c->id,
                     "status", c->status, "name", c->name, "tin", masked, "tin_type",
                     c->tin_type, "account_owner_id", api_string_or_null(owner_id),
                     "created_at", jsonval_time(c->created_at), "validation_date",
                     done ? jsonval_time(c->validated_at) : json_null());
}

static void reply_validation(request_t *req, int status, const store_tin_check_t *c,
                             const char *owner_id)
{
    json_t *data = validation_json(req, c, owner_id);
    if (data == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    reply_data(req, status, data);
}

/* ---- POST ------------------------------------------------------------- */

static store_status_t enqueue_tx(store_conn_t *conn, const void *arg)
{
    return store_tin_check_enqueue_in_tx(conn, arg);
}

/* The owner's uuid into uuid when the body names one; false after a reply. */
static bool find_owner(request_t *req, store_conn_t *db, const char *owner_id,
                       char uuid[STORE_UUID_LEN])
{
    uuid[0] = '\0';
    if (owner_id == NULL)
        return true;
    store_status_t st = store_owner_uuid(db, req->claims.tenant_id, owner_id, uuid);
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Account owner with id '%s' not found", owner_id);
    else if (st != STORE_OK)
        reply_store_failure(req, st);
    return st == STORE_OK;
}

/* Fills c (the row as inserted) from the body and seals the TIN into it. */
static int build_check(request_t *req, const json_t *body, const char *owner_uuid,
                       store_tin_check_t *c)
{
    memset(c, 0, sizeof *c);
    if (ids_uuid_v4(c->id) != 0)
        return -1;
    snprintf(c->tenant_id, sizeof c->tenant_id, "%.36s", req->claims.tenant_id);
    c->kind = STORE_TIN_CHECK_RTTM;
    snprintf(c->owner_uuid, sizeof c->owner_uuid, "%s", owner_uuid);
    snprintf(c->name, sizeof c->name, "%s", text_at(body, "name"));
    snprintf(c->tin_type, sizeof c->tin_type, "%s", text_at(body, "tin_type"));
    snprintf(c->status, sizeof c->status, "%s", TINCHECK_PENDING);
    c->created_at = api_now_ms(req);
    return tin_seal(api_ctx(req)->tin_key, c->tenant_id, c->id, text_at(body, "tin"), c->tin_sealed,
                    &c->tin_sealed_len);
}

static void create_with(request_t *req, const json_t *body, store_tin_check_t *c)
{
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    const char *owner_id = text_at(body, "account_owner_id");
    char owner_uuid[STORE_UUID_LEN];
    if (!find_owner(req, db, owner_id, owner_uuid))
        return;
    if (build_check(req, body, owner_uuid, c) != 0) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    store_tin_check_new_t row = {
        .id = c->id, .tenant_id = c->tenant_id, .kind = STORE_TIN_CHECK_RTTM,
        .subject_id = NULL, .owner_uuid = owner_uuid, .name = c->name,
        .tin_sealed = c->tin_sealed, .tin_sealed_len = c->tin_sealed_len,
        .tin_type = c->tin_type, .now = c->created_at};
    store_status_t st = store_write(db, enqueue_tx, &row);
    if (st != STORE_OK) {
        reply_store_failure(req, st);
        return;
    }
    api_wake_engines(req);
    reply_validation(req, 202, c, owner_id);
}

void api_tin_validations_create(request_t *req)
{
    json_t *body = read_body(req);
    if (body == NULL)
        return;
    store_tin_check_t *c = arena_alloc(req->arena, sizeof *c);
    if (c == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    create_with(req, body, c);
    explicit_bzero(c->tin_sealed, sizeof c->tin_sealed);
}

/* ---- GET -------------------------------------------------------------- */

void api_tin_validations_get(request_t *req)
{
    const char *raw = request_param(req, "validationId");
    if (raw == NULL || !ids_is_uuid_v4(raw)) {
        reply_error(req, 404, "TIN validation with id '%s' not found", raw != NULL ? raw : "");
        return;
    }
    char id[STORE_UUID_LEN];
    for (size_t i = 0; i < sizeof id; i++)
        id[i] = (char)tolower((unsigned char)raw[i]);
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_tin_check_t *c = arena_alloc(req->arena, sizeof *c);
    store_status_t st = c != NULL ? store_tin_check_get(db, req->claims.tenant_id, id, c)
                                  : STORE_ERROR;
    if (st == STORE_OK && c->kind != STORE_TIN_CHECK_RTTM)
        st = STORE_NOT_FOUND; /* owners' and W-9s' checks are not validations */
    char owner_id[STORE_ID_MAX] = "";
    if (st == STORE_OK && c->owner_uuid[0] != '\0') {
        st = store_owner_id_of(db, c->owner_uuid, owner_id);
        if (st == STORE_NOT_FOUND) { /* the owner is gone: the validation stays */
            owner_id[0] = '\0';
            st = STORE_OK;
        }
    }
    if (!api_found(req, st, "TIN validation", raw))
        return;
    reply_validation(req, 200, c, owner_id[0] != '\0' ? owner_id : NULL);
}
