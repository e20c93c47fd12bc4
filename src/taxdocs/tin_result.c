/* taxdocs/tin_result: see tin_result.h.
 *
 * A result always lands on the submission it was asked for (tin_status,
 * tin_validation_date and, for INVALID_FORMAT or MISMATCH, an issue that
 * makes the W-9 need resubmission) and always emits
 * TAX_DOCUMENTATION_TIN_VALIDATION, which names that submission. The
 * owner's state changes only when that W-9 is still the current W-form:
 * then a status event follows. A result for a superseded W-9 changes no
 * state, so it emits no status event. A result for a submission that does
 * not exist (or is not a W-9) is logged and dropped with STORE_OK, so the
 * engine's transaction still records the check instead of retrying forever. */
#include "taxdocs/tin_result.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/events.h"
#include "store/taxdocs.h"
#include "taxdocs/record.h"
#include "taxdocs/submit.h"

static store_status_t validation_event_in_tx(store_conn_t *conn, const char *tenant_id,
                                             const store_taxdoc_t *doc, const char *owner_id,
                                             int64_t now)
{
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(doc->tin_validated_at, when);
    json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:s}", "tax_documentation_id", doc->id,
                                "account_owner_id", doc->owner_uuid,
                                "account_owner_external_id", owner_id, "status",
                                doc->tin_status, "validation_date", when);
    if (payload == NULL)
        return STORE_ERROR;
    store_status_t st = store_event_append_in_tx(conn, tenant_id,
                                                 "TAX_DOCUMENTATION_TIN_VALIDATION", payload, now);
    json_decref(payload);
    return st;
}

/* A submission as the store keeps it and as the model sees it. */
typedef struct submission {
    store_taxdoc_t row;
    taxdocs_state_t state;
} submission_t;

static store_status_t record(store_conn_t *conn, const char *tenant_id, const char *id,
                             submission_t *sub, const char *status, int64_t validated_at,
                             int64_t now)
{
    bool current = false;
    char owner_id[STORE_ID_MAX];
    store_taxdoc_t *doc = &sub->row;
    store_status_t st = store_taxdoc_get_in_tx(conn, tenant_id, id, doc, &current, owner_id);
    if (st == STORE_OK && !taxdocs_record_to_state(doc, &sub->state)) {
        log_event(LOG_ERROR, "tax documentation: a stored submission does not fit",
                  json_pack("{s:s}", "tax_documentation_id", id));
        return STORE_ERROR;
    }
    if (st == STORE_OK && sub->state.type != TAXDOCS_W9)
        st = STORE_NOT_FOUND;
    if (st == STORE_NOT_FOUND) {
        log_event(LOG_WARN, "tax documentation: TIN result for no W-9 on file, dropped",
                  json_pack("{s:s}", "tax_documentation_id", id));
        return STORE_OK;
    }
    if (st != STORE_OK)
        return st;
    if (taxdocs_apply_tin_result(&sub->state, status, validated_at) != 0)
        return STORE_ERROR;
    taxdocs_record_from_state(&sub->state, doc);
    st = store_taxdoc_set_tin_result_in_tx(conn, tenant_id, doc);
    if (st == STORE_OK)
        st = validation_event_in_tx(conn, tenant_id, doc, owner_id, now);
    if (st == STORE_OK && current)
        st = taxdocs_status_event_in_tx(conn, tenant_id, doc->owner_uuid, now);
    return st;
}

store_status_t taxdocs_record_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                               const char *tax_documentation_id,
                                               const char *status, int64_t validated_at,
                                               int64_t now)
{
    submission_t *sub = calloc(1, sizeof *sub);
    if (sub == NULL)
        return STORE_ERROR;
    store_status_t st =
        record(conn, tenant_id, tax_documentation_id, sub, status, validated_at, now);
    free(sub);
    return st;
}
