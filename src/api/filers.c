/* filers: the tax filers of a tenant. Every tenant has its default filer
 * (caller id "default", "is_default": true) from creation; clients create
 * more, read them, change them with a merge patch and delete them.
 *
 * Design and trade-offs:
 *  - Filers are addressed by the caller's id within the token's tenant, so
 *    another tenant's filer is simply not found: the 404 for "exists in
 *    another tenant" is byte for byte the 404 for "exists nowhere".
 *  - A TIN is sealed (core/tin.h) before it reaches the store, bound to the
 *    tenant and the filer's uuid, which is therefore generated before
 *    sealing. Answers carry it masked, opened from the stored bytes on every
 *    read so that create, get, list and patch share one path. A stored TIN
 *    that does not open (a foreign key file, a damaged row) fails the
 *    request with 500 rather than answering a record without it; the log
 *    names the filer's uuid, never the TIN. Validation messages never echo a
 *    TIN either: error bodies are logged.
 *  - is_default is the service's fact, not the client's: a body may repeat
 *    the value (clients send back what they read) but not change it, so a
 *    create asking for true is refused rather than silently given false.
 *    id and uuid are likewise fixed in a patch.
 *  - A patch that changes nothing (no name or tin, or their stored values)
 *    answers the stored record without a write, so updated_at means "last
 *    changed".
 *  - Ids are at most 256 bytes (docs/decisions.md) while the validator
 *    counts characters, so a byte check follows the schema for ids with
 *    multi-byte characters. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/tin.h"
#include "store/filers.h"

#define FILER_ID_MAX_BYTES (STORE_ID_MAX - 1)
#define FILER_TIN_MAX_CHARS 40

static const v_field CREATE_FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = 256},
    {"name", V_STRING, .required = true, .min_len = 1, .max_len = 256},
    {"tin", V_STRING, .nullable = true, .min_len = 1, .max_len = FILER_TIN_MAX_CHARS},
    {"is_default", V_BOOLEAN, .required = false},
    {.name = NULL},
};
static const v_schema CREATE_SCHEMA = {CREATE_FIELDS};

/* name is not nullable: a required field set to null is refused. */
static const v_field PATCH_FIELDS[] = {
    {"id", V_STRING, .min_len = 1, .max_len = 256},
    {"uuid", V_STRING, .min_len = 1, .max_len = 64},
    {"name", V_STRING, .min_len = 1, .max_len = 256},
    {"tin", V_STRING, .nullable = true, .min_len = 1, .max_len = FILER_TIN_MAX_CHARS},
    {"is_default", V_BOOLEAN, .required = false},
    {.name = NULL},
};
static const v_schema PATCH_SCHEMA = {PATCH_FIELDS};

/* ---- answers */

/* The masked TIN, null when there is none; NULL when the sealed bytes do
 * not open for this tenant and filer. */
static json_t *tin_json(const api_context_t *api, const char *tenant_id, const store_filer_t *f)
{
    if (f->tin_sealed_len == 0)
        return json_null();
    char clear[TIN_MAX], masked[TIN_MAX];
    if (tin_open(api->tin_key, tenant_id, f->uuid, f->tin_sealed, f->tin_sealed_len, clear) != 0) {
        log_event(LOG_ERROR, "filers: stored TIN does not open",
                  json_pack("{s:s}", "filer_uuid", f->uuid));
        return NULL;
    }
    tin_mask(clear, masked);
    explicit_bzero(clear, sizeof clear);
    return json_string(masked);
}

/* The record as answered, or NULL (TIN does not open, or out of memory). */
static json_t *filer_json(const request_t *req, const store_filer_t *f)
{
    json_t *tin = tin_json(api_ctx(req), req->claims.tenant_id, f);
    if (tin == NULL)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:o, s:b, s:o, s:o}", "id", f->id, "uuid", f->uuid, "name",
                     f->name, "tin", tin, "is_default", f->is_default, "created_at",
                     jsonval_time(f->created_at), "updated_at", jsonval_time(f->updated_at));
}

static void reply_filer(request_t *req, int status, const store_filer_t *f)
{
    json_t *data = filer_json(req, f);
    if (data == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    reply_data(req, status, data);
}

#define FILER "Filer" /* the record named by a 404 */

static void reply_not_found(request_t *req, const char *id)
{
    api_found(req, STORE_NOT_FOUND, FILER, id);
}

/* ---- checks a schema cannot state */

typedef struct issues {
    json_t *list;
    size_t count; /* counted even when an issue could not be built: fail closed */
} issues_t;

static void add_custom(issues_t *issues, const char *field, const char *message)
{
    issues->count++;
    json_t *path = json_pack("[s]", field);
    json_t *issue = v_issue("custom", path, message, NULL);
    json_decref(path);
    if (issue != NULL)
        json_array_append_new(issues->list, issue);
}

/* Answers 400 with the issues when there are any; true when there were none. */
static bool issues_pass(request_t *req, issues_t *issues)
{
    if (issues->count == 0) {
        json_decref(issues->list);
        return true;
    }
    reply_invalid(req, "Invalid filer", issues->list);
    return false;
}

/* Digits, ASCII letters, '-' and ' ': what TINs of any country are written with. */
static bool tin_chars_valid(const char *tin)
{
    for (const char *p = tin; *p != '\0'; p++) {
        char c = *p;
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '-' || c == ' ';
        if (!ok)
            return false;
    }
    return true;
}

static void check_tin(issues_t *issues, const char *tin)
{
    if (tin != NULL && !tin_chars_valid(tin))
        add_custom(issues, "tin", "Invalid TIN: only digits, letters, '-' and ' ' are allowed");
}

static void check_id_bytes(issues_t *issues, const char *id)
{
    if (id != NULL && strlen(id) > FILER_ID_MAX_BYTES)
        add_custom(issues, "id", "Too big: expected id to have <=256 bytes");
}

/* A string member, or NULL when absent or null (the schema checked types). */
static const char *member_string(const json_t *body, const char *name)
{
    return json_string_value(json_object_get(body, name));
}

/* is_default may be sent with the value the filer has (or, on create, will
 * have: false), never to change it. */
static void check_is_default(issues_t *issues, const json_t *body, bool current)
{
    const json_t *is_default = json_object_get(body, "is_default");
    if (json_is_boolean(is_default) && json_is_true(is_default) != current)
        add_custom(issues, "is_default", "is_default cannot be set through the API");
}

/* id, uuid and is_default may be repeated in a patch but not changed. */
static void check_unchangeable(issues_t *issues, const json_t *body, const char *path_id,
                               const store_filer_t *stored)
{
    const char *id = member_string(body, "id");
    if (id != NULL && strcmp(id, path_id) != 0)
        add_custom(issues, "id", "id cannot be changed");
    const char *uuid = member_string(body, "uuid");
    if (uuid != NULL && strcasecmp(uuid, stored->uuid) != 0)
        add_custom(issues, "uuid", "uuid cannot be changed");
    check_is_default(issues, body, stored->is_default);
}

/* Seals tin for the filer (tenant, uuid). False only when the crypto library
 * fails; the caller answers 500. */
static bool seal_tin(const request_t *req, const char *uuid, const char *tin, uint8_t *sealed,
                     size_t *sealed_len)
{
    const uint8_t *key = api_ctx(req)->tin_key;
    return tin_seal(key, req->claims.tenant_id, uuid, tin, sealed, sealed_len) == 0;
}

/* ---- handlers */

void api_filers_get(request_t *req)
{
    const char *id = request_param(req, "filerId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_filer_t filer;
    store_status_t rc = store_filer_get(db, req->claims.tenant_id, id, &filer);
    if (!api_found(req, rc, FILER, id))
        return;
    reply_filer(req, 200, &filer);
}

typedef struct list_ctx {
    request_t *req;
    json_t *items;
    bool failed;
} list_ctx_t;

static int append_filer(const store_filer_t *filer, void *ctx)
{
    list_ctx_t *list = ctx;
    json_t *item = filer_json(list->req, filer);
    if (item == NULL || json_array_append_new(list->items, item) != 0) {
        list->failed = true;
        return 1;
    }
    return 0;
}

void api_filers_list(request_t *req)
{
    size_t limit;
    const char *after;
    if (!api_page_params(req, &limit, &after))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    list_ctx_t list = {req, json_array(), false};
    bool more = false;
    store_status_t rc =
        store_filer_list(db, req->claims.tenant_id, after, limit, append_filer, &list, &more);
    if (rc != STORE_OK || list.failed) {
        json_decref(list.items);
        reply_store_failure(req, rc != STORE_OK ? rc : STORE_ERROR);
        return;
    }
    size_t n = json_array_size(list.items);
    const char *last =
        n > 0 ? json_string_value(json_object_get(json_array_get(list.items, n - 1), "id")) : NULL;
    api_reply_page(req, list.items, last, more);
}

/* Fills a new filer from a checked create body: fresh uuid, times, sealed TIN. */
static bool new_filer(request_t *req, const json_t *body, store_filer_t *f)
{
    memset(f, 0, sizeof *f);
    if (ids_uuid_v4(f->uuid) != 0)
        return false;
    snprintf(f->id, sizeof f->id, "%s", member_string(body, "id"));
    snprintf(f->name, sizeof f->name, "%s", member_string(body, "name"));
    f->created_at = f->updated_at = api_now_ms(req);
    const char *tin = member_string(body, "tin");
    return tin == NULL || seal_tin(req, f->uuid, tin, f->tin_sealed, &f->tin_sealed_len);
}

void api_filers_create(request_t *req)
{
    json_t *body = api_read_body(req, &CREATE_SCHEMA, "filer");
    if (body == NULL)
        return;
    issues_t issues = {json_array(), 0};
    check_id_bytes(&issues, member_string(body, "id"));
    check_tin(&issues, member_string(body, "tin"));
    check_is_default(&issues, body, false);
    if (!issues_pass(req, &issues))
        return;
    store_filer_t filer;
    if (!new_filer(req, body, &filer)) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_status_t rc = store_filer_create(db, req->claims.tenant_id, &filer);
    if (rc == STORE_CONFLICT) {
        reply_error(req, 409, "Filer with id '%s' already exists", filer.id);
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_filer(req, 201, &filer);
}

/* Is tin the filer's stored TIN? A stored TIN that does not open is taken
 * as different, so the patch replaces it. */
static bool is_stored_tin(const request_t *req, const store_filer_t *stored, const char *tin)
{
    if (stored->tin_sealed_len == 0)
        return false;
    char clear[TIN_MAX];
    bool same = tin_open(api_ctx(req)->tin_key, req->claims.tenant_id, stored->uuid,
                         stored->tin_sealed, stored->tin_sealed_len, clear) == 0 &&
                strcmp(clear, tin) == 0;
    explicit_bzero(clear, sizeof clear);
    return same;
}

/* Turns a checked patch body into a store patch; the TIN is sealed into
 * `sealed` (TIN_SEALED_MAX bytes) for the stored filer's uuid. Values equal
 * to the stored ones are left out, so sending back the record as read
 * changes nothing. */
static bool make_patch(request_t *req, const json_t *body, const store_filer_t *stored,
                       store_filer_patch_t *patch, uint8_t *sealed)
{
    memset(patch, 0, sizeof *patch);
    patch->name = member_string(body, "name");
    if (patch->name != NULL && strcmp(patch->name, stored->name) == 0)
        patch->name = NULL;
    patch->updated_at = api_now_ms(req);
    const json_t *tin = json_object_get(body, "tin");
    if (tin == NULL || (json_is_null(tin) && stored->tin_sealed_len == 0) ||
        (json_is_string(tin) && is_stored_tin(req, stored, json_string_value(tin))))
        return true;
    if (json_is_null(tin)) {
        patch->tin = STORE_FILER_TIN_CLEAR;
        return true;
    }
    patch->tin = STORE_FILER_TIN_SET;
    patch->tin_sealed = sealed;
    return seal_tin(req, stored->uuid, json_string_value(tin), sealed, &patch->tin_sealed_len);
}

static void apply_patch(request_t *req, store_conn_t *db, const json_t *body,
                        const store_filer_t *stored)
{
    store_filer_patch_t patch;
    uint8_t sealed[TIN_SEALED_MAX];
    if (!make_patch(req, body, stored, &patch, sealed)) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    if (patch.name == NULL && patch.tin == STORE_FILER_TIN_KEEP) {
        reply_filer(req, 200, stored);
        return;
    }
    store_filer_t updated;
    store_status_t rc =
        store_filer_update(db, req->claims.tenant_id, stored->uuid, &patch, &updated);
    if (rc == STORE_NOT_FOUND) { /* deleted since it was read */
        reply_not_found(req, request_param(req, "filerId"));
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_filer(req, 200, &updated);
}

void api_filers_update(request_t *req)
{
    const char *id = request_param(req, "filerId");
    json_t *body = api_read_body(req, &PATCH_SCHEMA, "filer");
    if (body == NULL)
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_filer_t stored;
    store_status_t rc = store_filer_get(db, req->claims.tenant_id, id, &stored);
    if (!api_found(req, rc, FILER, id))
        return;
    issues_t issues = {json_array(), 0};
    check_unchangeable(&issues, body, id, &stored);
    check_tin(&issues, member_string(body, "tin"));
    if (!issues_pass(req, &issues))
        return;
    apply_patch(req, db, body, &stored);
}

void api_filers_delete(request_t *req)
{
    const char *id = request_param(req, "filerId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_filer_refusal_t refusal;
    store_status_t rc = store_filer_delete(db, req->claims.tenant_id, id, &refusal);
    if (rc == STORE_OK) {
        reply_empty(req, 204);
        return;
    }
    if (rc == STORE_NOT_FOUND) {
        reply_not_found(req, id);
        return;
    }
    if (rc == STORE_CONFLICT && refusal == STORE_FILER_IS_DEFAULT) {
        reply_error(req, 409, "The default filer cannot be deleted");
        return;
    }
    if (rc == STORE_CONFLICT && refusal == STORE_FILER_HAS_ACCOUNTS) {
        reply_error(req, 409, "Filer '%s' has accounts and cannot be deleted", id);
        return;
    }
    reply_store_failure(req, rc);
}
