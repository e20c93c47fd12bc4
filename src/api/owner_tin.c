/* api/owner_tin: see owner_tin.h. The check's TIN is sealed anew for the
 * check (tenant id and check id as associated data): the owner's sealed
 * bytes open only for the owner's record. */
#include "api/owner_tin.h"

#include <string.h>

#include "api/gateway.h"
#include "core/ids.h"
#include "store/tinchecks.h"

int owner_tin_snapshot(request_t *req, const store_owner_t *owner, owner_tin_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->tin_type, sizeof out->tin_type, "%s", owner->tin_type);
    snprintf(out->name, sizeof out->name, "%s", owner->name);
    if (owner->tin_sealed_len == 0)
        return 0;
    out->has_tin = true;
    return tin_open(api_ctx(req)->tin_key, req->claims.tenant_id, owner->uuid, owner->tin_sealed,
                    owner->tin_sealed_len, out->tin);
}

void owner_tin_wipe(owner_tin_t *snapshot)
{
    explicit_bzero(snapshot, sizeof *snapshot);
}

/* Does the result of a check depend on anything that changed? */
static bool needs_check(const owner_tin_t *before, const owner_tin_t *after)
{
    if (!after->has_tin)
        return false;
    return before == NULL || !before->has_tin || strcmp(before->tin, after->tin) != 0 ||
           strcmp(before->tin_type, after->tin_type) != 0 ||
           strcmp(before->name, after->name) != 0;
}

typedef struct owner_write {
    const char *tenant_id;
    const store_owner_t *owner;
    bool create;
    const store_tin_check_new_t *check; /* NULL: none to queue */
    bool retire;                        /* the TIN was removed */
} owner_write_t;

static store_status_t owner_write_tx(store_conn_t *conn, const void *arg)
{
    const owner_write_t *w = arg;
    store_status_t st = w->create ? store_owner_create_in_tx(conn, w->tenant_id, w->owner)
                                  : store_owner_update_in_tx(conn, w->tenant_id, w->owner);
    if (st != STORE_OK)
        return st;
    if (w->check != NULL)
        return store_tin_check_enqueue_in_tx(conn, w->check);
    if (w->retire)
        return store_tin_check_supersede_in_tx(conn, w->tenant_id, STORE_TIN_CHECK_ACCOUNT_OWNER,
                                               w->owner->uuid, w->owner->updated_at);
    return STORE_OK;
}

/* Writes with the check of `after` queued (its TIN sealed for the check). */
static store_status_t write_with_check(request_t *req, store_conn_t *db, owner_write_t *w,
                                       const owner_tin_t *after)
{
    char id[IDS_UUID_LEN];
    uint8_t sealed[TIN_SEALED_MAX];
    size_t sealed_len = 0;
    const char *tenant_id = req->claims.tenant_id;
    if (ids_uuid_v4(id) != 0 ||
        tin_seal(api_ctx(req)->tin_key, tenant_id, id, after->tin, sealed, &sealed_len) != 0)
        return STORE_ERROR;
    store_tin_check_new_t check = {
        .id = id, .tenant_id = tenant_id, .kind = STORE_TIN_CHECK_ACCOUNT_OWNER,
        .subject_id = w->owner->uuid, .owner_uuid = w->owner->uuid, .name = after->name,
        .tin_sealed = sealed, .tin_sealed_len = sealed_len, .tin_type = after->tin_type,
        .now = w->owner->updated_at};
    w->check = &check;
    store_status_t st = store_write(db, owner_write_tx, w);
    explicit_bzero(sealed, sizeof sealed);
    if (st == STORE_OK)
        api_wake_engines(req);
    return st;
}

store_status_t owner_tin_write(request_t *req, const store_owner_t *owner,
                               const owner_tin_t *before)
{
    store_conn_t *db = api_request_db(req);
    if (db == NULL)
        return STORE_ERROR;
    owner_tin_t after;
    if (owner_tin_snapshot(req, owner, &after) != 0) {
        owner_tin_wipe(&after);
        return STORE_ERROR;
    }
    owner_write_t w = {req->claims.tenant_id, owner, before == NULL, NULL,
                       before != NULL && before->has_tin && !after.has_tin};
    store_status_t st = needs_check(before, &after) ? write_with_check(req, db, &w, &after)
                                                    : store_write(db, owner_write_tx, &w);
    owner_tin_wipe(&after);
    return st;
}
