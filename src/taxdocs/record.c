/* taxdocs/record: see record.h. The text fields have the same capacity on
 * both sides (checked below at compile time), so a copy never cuts. */
#include "taxdocs/record.h"

#include <stdio.h>
#include <string.h>

#define SAME_CAPACITY(field, cap)                                                           \
    _Static_assert(sizeof(((taxdocs_state_t *)0)->field) == (cap) &&                        \
                       sizeof(((store_taxdoc_t *)0)->field) == (cap),                       \
                   #field " differs between the model and the store")

SAME_CAPACITY(data_collection_status, STORE_TAXDOC_STATUS_MAX);
SAME_CAPACITY(tax_documentation_status, STORE_TAXDOC_STATUS_MAX);
SAME_CAPACITY(issues, STORE_TAXDOC_ISSUES_MAX);
SAME_CAPACITY(tin_status, STORE_TAXDOC_STATUS_MAX);
SAME_CAPACITY(expiration_date, STORE_TAXDOC_DATE_LEN);
SAME_CAPACITY(treaty_claim_status, STORE_TAXDOC_STATUS_MAX);
SAME_CAPACITY(vat_status, STORE_TAXDOC_STATUS_MAX);
_Static_assert(TAXDOCS_OBJECT_COUNT == STORE_TAXDOC_CURRENT_MAX,
               "the store keeps one current submission per object");

#define COPY(to, from) memcpy((to), (from), sizeof(to))

void taxdocs_record_from_state(const taxdocs_state_t *st, store_taxdoc_t *row)
{
    snprintf(row->document_type, sizeof row->document_type, "%s", taxdocs_type_name(st->type));
    COPY(row->data_collection_status, st->data_collection_status);
    row->needs_resubmission = st->needs_resubmission;
    COPY(row->tax_documentation_status, st->tax_documentation_status);
    if (st->type == TAXDOCS_DPS)
        row->issues[0] = '\0';
    else
        COPY(row->issues, st->issues);
    COPY(row->tin_status, st->tin_status);
    row->tin_validated_at = st->tin_validated_at;
    COPY(row->expiration_date, st->expiration_date);
    COPY(row->treaty_claim_status, st->treaty_claim_status);
    COPY(row->vat_status, st->vat_status);
    row->vat_validated_at = st->vat_validated_at;
}

bool taxdocs_record_to_state(const store_taxdoc_t *row, taxdocs_state_t *st)
{
    memset(st, 0, sizeof *st);
    if (!taxdocs_type_parse(row->document_type, &st->type))
        return false;
    COPY(st->data_collection_status, row->data_collection_status);
    st->needs_resubmission = row->needs_resubmission;
    COPY(st->tax_documentation_status, row->tax_documentation_status);
    COPY(st->issues, row->issues);
    COPY(st->tin_status, row->tin_status);
    st->tin_validated_at = row->tin_validated_at;
    COPY(st->expiration_date, row->expiration_date);
    COPY(st->treaty_claim_status, row->treaty_claim_status);
    COPY(st->vat_status, row->vat_status);
    st->vat_validated_at = row->vat_validated_at;
    return true;
}

const char *taxdocs_record_object(const taxdocs_state_t *st)
{
    return taxdocs_object_name(taxdocs_object_of(st->type));
}
