/* filers: the tax filers of a tenant. Every tenant has its default filer
 * (caller id "default") from creation; creating, changing and deleting filers
 * arrive with the tenant-records work. Filers are addressed by the caller's
 * id within the token's tenant, so another tenant's filer is simply not
 * found. */
#include <string.h>

#include "api/api.h"
#include "app/service.h"
#include "core/clock.h"

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

void api_filers_list(request_t *req)
{
    size_t limit;
    const char *after;
    if (!api_page_params(req, &limit, &after))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
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
    const char *last = n > 0 ? json_string_value(json_object_get(json_array_get(items, n - 1),
                                                                 "id"))
                             : NULL;
    api_reply_page(req, items, last, more);
}

void api_filers_create(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_filers_update(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_filers_delete(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}
