/* webhooks/event: see event.h. Key order is insertion order (jansson keeps
 * it), and the body serializer (webhooks/payload.h) writes keys in that
 * order, so the order here is the order on the wire. */
#include "webhooks/event.h"

#include <string.h>

#include "core/clock.h"
#include "core/jsonval.h"

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
