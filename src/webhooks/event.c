/* webhooks/event: see event.h. Key order is insertion order (jansson keeps
 * it), and the body serializer (webhooks/payload.h) writes keys in that
 * order, so the order here is the order on the wire. */
#include "webhooks/event.h"

#include <string.h>

#include "core/clock.h"
#include "core/dbuf.h"
#include "core/jsonval.h"
#include "core/utf8.h"
#include "webhooks/payload.h"

const char *const WEBHOOK_EVENT_TYPES[] = {
    "RTTM_TIN_VALIDATION",
    "ACCOUNT_OWNER_TIN_VALIDATION",
    "TAX_DOCUMENTATION_TIN_VALIDATION",
    "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS",
    "FORM_STATUS_UPDATE",
    "INVENTORY_UPDATE",
    NULL,
};

bool webhook_event_type_known(const char *type, size_t len)
{
    for (const char *const *t = WEBHOOK_EVENT_TYPES; *t != NULL; t++)
        if (strlen(*t) == len && memcmp(*t, type, len) == 0)
            return true;
    return false;
}

static json_t *render_inventory(const webhook_event_row_t *row)
{
    if (row->account_uuid == NULL || row->account_id == NULL ||
        (row->has_ids && (row->from_tx == NULL || row->latest_tx == NULL)))
        return NULL;
    json_t *e = json_object();
    int rc = json_object_set_new(e, "event_type", json_string(row->type)) |
             json_object_set_new(e, "event_id", json_string(row->id)) |
             json_object_set_new(e, "id", json_string(row->id)) |
             json_object_set_new(e, "account_id", json_string(row->account_uuid)) |
             json_object_set_new(e, "alternate_account_id", json_string(row->account_id)) |
             json_object_set_new(e, "latest_transaction_datetime", jsonval_time(row->latest_ms)) |
             json_object_set_new(e, "update_from_datetime", jsonval_time(row->from_ms));
    if (row->has_ids)
        rc |= json_object_set_new(e, "latest_transaction_id", json_string(row->latest_tx)) |
              json_object_set_new(e, "update_from_transaction_id", json_string(row->from_tx));
    if (rc != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static json_t *render_payload(const webhook_event_row_t *row)
{
    if (row->payload == NULL)
        return NULL;
    json_t *fields = json_loads(row->payload, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(fields)) {
        json_decref(fields);
        return NULL;
    }
    json_t *e = json_object();
    int rc = json_object_set_new(e, "event_type", json_string(row->type)) |
             json_object_set_new(e, "event_id", json_string(row->id));
    const char *key;
    json_t *value;
    json_object_foreach(fields, key, value) {
        if (strcmp(key, "event_type") != 0 && strcmp(key, "event_id") != 0)
            rc |= json_object_set(e, key, value);
    }
    json_decref(fields);
    if (rc != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

json_t *webhook_event_render(const webhook_event_row_t *row)
{
    if (row->id == NULL || row->type == NULL)
        return NULL;
    if (strcmp(row->type, "INVENTORY_UPDATE") == 0)
        return render_inventory(row);
    return render_payload(row);
}

/* ---- canonical text */

/* `"key":` then s as a JSON string, escaped as payload_dump escapes. */
static void put_field(dbuf_t *b, const char *key, const char *s)
{
    dbuf_puts(b, key);
    dbuf_put_json_string(b, s, strlen(s));
}

static void put_time_field(dbuf_t *b, const char *key, int64_t ms)
{
    char text[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(ms, text);
    put_field(b, key, text);
}

/* The fields render_inventory sets, in its order, refused where it (or
 * payload_dump, for UTF-8) refuses them. */
static char *inventory_text(const webhook_event_row_t *row, size_t *len)
{
    const char *strings[] = {row->type, row->id, row->account_uuid, row->account_id,
                             row->has_ids ? row->latest_tx : "", row->has_ids ? row->from_tx : ""};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (strings[i] == NULL || !utf8_valid(strings[i], strlen(strings[i])))
            return NULL;
    dbuf_t b;
    dbuf_init(&b, 512); /* an event's usual size: one allocation */
    put_field(&b, "{\"event_type\":", row->type);
    put_field(&b, ",\"event_id\":", row->id);
    put_field(&b, ",\"id\":", row->id);
    put_field(&b, ",\"account_id\":", row->account_uuid);
    put_field(&b, ",\"alternate_account_id\":", row->account_id);
    put_time_field(&b, ",\"latest_transaction_datetime\":", row->latest_ms);
    put_time_field(&b, ",\"update_from_datetime\":", row->from_ms);
    if (row->has_ids) {
        put_field(&b, ",\"latest_transaction_id\":", row->latest_tx);
        put_field(&b, ",\"update_from_transaction_id\":", row->from_tx);
    }
    dbuf_put(&b, "}", 1);
    return dbuf_finish(&b, len);
}

char *webhook_event_text(const webhook_event_row_t *row, size_t *len)
{
    if (row->id == NULL || row->type == NULL)
        return NULL;
    if (strcmp(row->type, "INVENTORY_UPDATE") == 0)
        return inventory_text(row, len);
    json_t *event = render_payload(row);
    char *text = event != NULL ? payload_dump(event, len) : NULL;
    json_decref(event);
    return text;
}
