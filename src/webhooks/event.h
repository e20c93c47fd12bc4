/* webhooks/event: the event catalog and the event object of a delivery
 * (spec § Events). Every event object starts with "event_type" and
 * "event_id" (stable across retries and replays, so receivers can
 * deduplicate; equal to "id" for INVENTORY_UPDATE). INVENTORY_UPDATE is
 * built from the event row's columns (its range may have been widened until
 * the event was claimed); every other type carries its fields in the row's
 * payload, a JSON object written by the code that raised the event. Optional
 * fields are absent, never null. */
#ifndef TAXD_WEBHOOKS_EVENT_H
#define TAXD_WEBHOOKS_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The event types of the catalog, NULL-terminated. */
extern const char *const WEBHOOK_EVENT_TYPES[];

/* True when the first len bytes of type name a catalog type. */
bool webhook_event_type_known(const char *type, size_t len);

typedef struct webhook_event_row {
    const char *id;
    const char *type;
    const char *payload;      /* other types: a JSON object; NULL for INVENTORY_UPDATE */
    const char *account_uuid; /* INVENTORY_UPDATE: "account_id" */
    const char *account_id;   /* INVENTORY_UPDATE: "alternate_account_id" (the caller's) */
    int64_t from_ms, latest_ms;
    const char *from_tx, *latest_tx; /* used only when has_ids */
    bool has_ids;
} webhook_event_row_t;

/* A new reference to the event object, or NULL when the row cannot be
 * rendered (missing columns, a payload that is not a JSON object). */
json_t *webhook_event_render(const webhook_event_row_t *row);

/* The same event object as canonical JSON text (webhooks/payload.h), byte
 * for byte what payload_dump writes of webhook_event_render: malloc'd (the
 * caller frees), its length in *len; NULL when the row cannot be rendered
 * or a string is not valid UTF-8. INVENTORY_UPDATE, the event a backlog is
 * made of, is written straight from the row without building a tree. */
char *webhook_event_text(const webhook_event_row_t *row, size_t *len);

#endif
