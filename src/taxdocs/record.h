/* taxdocs/record: the bridge between the model's state of a submission
 * (taxdocs/model.h: types and objects as enums, rules applied) and the
 * store's row (store/taxdocs.h: text columns, no rules). The store depends
 * on neither the model nor its words; only these functions know both. */
#ifndef TAXD_TAXDOCS_RECORD_H
#define TAXD_TAXDOCS_RECORD_H

#include <stdbool.h>

#include "store/taxdocs.h"
#include "taxdocs/model.h"

/* Writes st into the row's state columns; the row's id, owner_uuid and
 * created_at are left as they are. A DPS keeps no issues (NULL in the
 * table): the model answers none for it. */
void taxdocs_record_from_state(const taxdocs_state_t *st, store_taxdoc_t *row);

/* The state a row holds. false when its document type is not one the model
 * knows (a row this build did not write). */
bool taxdocs_record_to_state(const store_taxdoc_t *row, taxdocs_state_t *st);

/* The name of the owner's object a state fills ("w_form_questionnaire", ...),
 * as store_taxdoc_new_t.object wants it. */
const char *taxdocs_record_object(const taxdocs_state_t *st);

#endif
