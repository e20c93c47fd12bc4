/* taxdocs/taxbit_map: see taxbit_map.h. */
#include "taxdocs/taxbit_map.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonval.h"

static bool is(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static bool is_w_form(const char *type)
{
    return is(type, "W-9") || is(type, "W-8BEN") || is(type, "W-8BEN-E");
}

const char *taxbit_tin_status(const store_taxdoc_t *row)
{
    if (!is(row->document_type, "W-9"))
        return "FOREIGN";
    const char *s = row->tin_status;
    if (is(s, "PENDING"))
        return "PENDING";
    if (is(s, "VALID"))
        return is(row->tin_type, "EIN") ? "VALID_EIN_MATCH" : "VALID_SSN_MATCH";
    if (is(s, "INVALID_FORMAT"))
        return "INVALID_DATA";
    if (is(s, "MISMATCH"))
        return "MISMATCH";
    return "ERROR"; /* ERROR, or an opaque result a matcher gave */
}

const char *taxbit_vat_status(const store_taxdoc_t *row)
{
    if (is(row->vat_note, "NON_EU"))
        return "NON_EU";
    if (is(row->vat_status, "VALID") || is(row->vat_status, "INVALID"))
        return row->vat_status;
    return is(row->vat_note, "NOT_REQUIRED") ? "NOT_REQUIRED" : "INSUFFICIENT_DATA";
}

/* "2027-12-31" as Taxbit writes dates: "2027-12-31T00:00:00.000Z". */
static json_t *date_time(const char *date)
{
    char text[32];
    snprintf(text, sizeof text, "%.10sT00:00:00.000Z", date);
    return json_string(text);
}

static int set_common(json_t *o, const store_taxdoc_t *row)
{
    int rc = json_object_set_new(o, "data_collection_status",
                                 json_string(row->data_collection_status));
    if (row->expiration_date[0] != '\0')
        rc |= json_object_set_new(o, "expiration_date", date_time(row->expiration_date));
    return rc;
}

/* o when every set succeeded (rc 0), else NULL (o released). */
static json_t *built(json_t *o, int rc)
{
    if (rc == 0)
        return o;
    json_decref(o);
    return NULL;
}

static json_t *w_form_json(const store_taxdoc_t *row)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int rc = set_common(o, row) |
             json_object_set_new(o, "type", json_string(row->document_type)) |
             json_object_set_new(o, "tin_status", json_string(taxbit_tin_status(row))) |
             json_object_set_new(o, "needs_resubmission", json_boolean(row->needs_resubmission));
    if (row->tin_validated_at > 0)
        rc |= json_object_set_new(o, "tin_validation_date", jsonval_time(row->tin_validated_at));
    return built(o, rc);
}

static json_t *dps_json(const store_taxdoc_t *row)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int rc = set_common(o, row) |
             json_object_set_new(o, "vat_status", json_string(taxbit_vat_status(row)));
    if (row->vat_validated_at > 0)
        rc |= json_object_set_new(o, "vat_validation_date", jsonval_time(row->vat_validated_at));
    return built(o, rc);
}

json_t *taxbit_status_json(const store_taxdoc_t *rows, size_t count)
{
    json_t *status = json_object();
    for (size_t i = 0; status != NULL && i < count; i++) {
        const store_taxdoc_t *row = &rows[i];
        json_t *o = NULL;
        const char *key = NULL;
        if (is_w_form(row->document_type)) {
            o = w_form_json(row);
            key = "w_form_questionnaire";
        } else if (is(row->document_type, "DPS")) {
            o = dps_json(row);
            key = "dps_questionnaire";
        } else {
            continue; /* a native self-certification has no place in Taxbit's status */
        }
        if (o == NULL || json_object_set_new(status, key, o) != 0) {
            json_decref(status);
            status = NULL;
        }
    }
    return status;
}
