/* store/events: see events.h. */
#include "store/events.h"

#include <stdlib.h>

#include "core/ids.h"

#include "store/internal.h"
#include "store/webhooks.h"

static const store_sql_t Q_EVENT_APPEND = {
    "event_append", "INSERT INTO events (id, tenant_id, type, created_at, payload)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)", NULL};

static store_status_t append_text(store_conn_t *conn, const char *tenant_id,
                                  const char *event_id, const char *type, const char *payload,
                                  int64_t now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_EVENT_APPEND, event_id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, tenant_id) && bind_text(stmt, 3, type) &&
                 bind_int(stmt, 4, now) && bind_text(stmt, 5, payload);
    if ((st = run_bound(conn, &Q_EVENT_APPEND, stmt, bound)) != STORE_OK)
        return st;
    return store_deliveries_fan_out_in_tx(conn, tenant_id, event_id, type, now);
}

store_status_t store_event_append_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *type, const json_t *fields, int64_t now)
{
    char event_id[IDS_UUID_LEN];
    if (!json_is_object(fields) || ids_uuid_v4(event_id) != 0)
        return store_bad_argument("event_append");
    char *payload = json_dumps(fields, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (payload == NULL)
        return STORE_ERROR;
    store_status_t st = append_text(conn, tenant_id, event_id, type, payload, now);
    free(payload);
    return st;
}
