/* store/events: the outbox for every event type but INVENTORY_UPDATE (whose
 * range columns store/transactions.c widens). A module that raises an event
 * calls store_event_append_in_tx inside the write transaction of the change
 * that causes it, so the change and its event commit or roll back together;
 * the same call queues one delivery per subscription of the tenant that
 * lists the type (held for a deauthorized one). The webhook engine renders
 * the event object from the payload (webhooks/event.h): "event_type" and
 * "event_id" first, then the payload's fields in their order. */
#ifndef TAXD_STORE_EVENTS_H
#define TAXD_STORE_EVENTS_H

#include <stdint.h>

#include "store/store.h"

/* Appends event event_id (a UUID v4 the caller made) of catalog type `type`
 * for tenant_id. payload is the event's fields as a compact JSON object
 * (without event_type and event_id; optional fields absent, never null).
 * Must run inside a write transaction (conn_write); errors are the store's. */
store_status_t store_event_append_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *event_id, const char *type,
                                        const char *payload, int64_t now);

#endif
