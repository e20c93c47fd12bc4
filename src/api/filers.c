/* filers: the tax filers of a tenant. Every tenant has its default filer
 * (caller id "default") from creation; creating, changing and deleting filers
 * arrive with the tenant-records work. Filers are addressed by the caller's
 * id within the token's tenant, so another tenant's filer is simply not
 * found. */
#include <string.h>

#include "api/api.h"
#include "app/service.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "http/validate.h"

static json_t *filer_json(const store_filer_t *f)
{
    char created[CLOCK_RFC3339_LEN], updated[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(f->created_at, created);
    clock_format_rfc3339(f->updated_at, updated);
    return json_pack("{s:s, s:s, s:s, s:b, s:s, s:s}", "id", f->id, "uuid", f->uuid, "name",
                     f->name, "is_default", f->is_default, "created_at", created, "updated_at",
                     updated);
}

void api_filers_get(request_t *req)
{
    const char *id = request_param(req, "filerId");
    store_conn_t *db = request_db(req);
    if (db == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    store_filer_t filer;
    store_status_t rc = store_filer_get(db, req->claims.tenant_id, id, &filer);
    if (rc == STORE_NOT_FOUND) {
        reply_error(req, 404, "Filer with id '%s' not found", id);
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_data(req, 200, filer_json(&filer));
}

static int append_filer(const store_filer_t *filer, void *ctx)
{
    json_t *items = ctx;
    return json_array_append_new(items, filer_json(filer)) == 0 ? 0 : 1;
}

/* The cursor is the base64url of the last caller id of the previous page:
 * opaque to clients, stable under inserts. */
static bool decode_cursor(const char *cursor, char *after, size_t cap)
{
    size_t len = 0;
    if (crypto_base64url_decode(cursor, strlen(cursor), (uint8_t *)after, cap - 1, &len) != 0)
        return false;
    after[len] = '\0';
    return strlen(after) == len && len > 0;
}

static json_t *encode_cursor(const char *last_id)
{
    char out[CRYPTO_BASE64_LEN(STORE_ID_MAX)];
    if (crypto_base64url_encode(last_id, strlen(last_id), out, sizeof out) == 0)
        return json_null();
    return json_string(out);
}

void api_filers_list(request_t *req)
{
    size_t limit;
    const char *cursor = NULL;
    if (!api_page_params(req, &limit, &cursor))
        return;
    char after[STORE_ID_MAX] = "";
    if (cursor != NULL && !decode_cursor(cursor, after, sizeof after)) {
        json_t *path = json_pack("[s]", "cursor");
        json_t *issues = json_array();
        json_array_append_new(issues, v_issue("custom", path, "Invalid cursor", NULL));
        json_decref(path);
        reply_invalid(req, "Invalid query parameters", issues);
        return;
    }
    store_conn_t *db = request_db(req);
    if (db == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    json_t *items = json_array();
    bool more = false;
    store_status_t rc =
        store_filer_list(db, req->claims.tenant_id, after, limit, append_filer, items, &more);
    if (rc != STORE_OK) {
        json_decref(items);
        reply_store_failure(req, rc);
        return;
    }
    size_t n = json_array_size(items);
    json_t *next = json_null();
    if (more && n > 0)
        next = encode_cursor(json_string_value(json_object_get(json_array_get(items, n - 1),
                                                               "id")));
    reply_json(req, 200, json_pack("{s:o, s:{s:o}}", "data", items, "meta", "next_cursor", next));
}
