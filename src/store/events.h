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

#include <jansson.h>

#include "store/store.h"

/* Appends a new event of catalog type `type` for tenant_id, its id a fresh
 * UUID v4. fields is the event's object without event_type and event_id
 * (optional fields absent, never null), stored as compact JSON in its key
 * order; the caller keeps its reference. Must run inside a write transaction
 * (store_write); errors are the store's. */
store_status_t store_event_append_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *type, const json_t *fields, int64_t now);

#endif
