/* forms: the tax form operations (generate, file, delete) over the store,
 * shared by the operator commands (admin/forms.c) and the API's view of a
 * form (api/tax_documents.c). Each operation decides with forms/state.h and
 * writes the change and its FORM_STATUS_UPDATE event in one store_write, so
 * a refused transition writes nothing and emits nothing.
 *
 * Generation computes the content first (forms/content.h, after bringing the
 * account's inventory up to date with inventory_refresh, the same path every
 * inventory read takes), then decides and writes in one transaction: the
 * content is the inventory as it stood at generation. A 1099_DA is refused
 * before tax year DOMAIN_1099DA_FIRST_YEAR and for AUSTRIA accounts. */
#ifndef TAXD_FORMS_FORMS_H
#define TAXD_FORMS_FORMS_H

#include <jansson.h>

#include "forms/content.h"
#include "forms/state.h"
#include "store/forms.h"
#include "store/inventory.h"

typedef enum forms_result {
    FORMS_OK = 0,
    FORMS_REFUSED,         /* the state machine refused; message says why */
    FORMS_NOT_FOUND,       /* no such form */
    FORMS_FAILED,          /* the database or memory failed; message says what */
} forms_result_t;

#define FORMS_MESSAGE_MAX 320

/* What an operation did. */
typedef struct forms_outcome {
    forms_result_t result;
    forms_decision_t decision;        /* the state machine's, when it was asked */
    store_status_t store;             /* with FORMS_FAILED */
    char form_id[STORE_UUID_LEN];     /* the form concerned ("" when none) */
    char status[STORE_FORM_STATUS_MAX]; /* its status afterwards */
    char message[FORMS_MESSAGE_MAX];  /* refusals and failures: an operator sentence */
} forms_outcome_t;

/* Generates (or regenerates, state.h) the form of `type` and `year` for the
 * account (store_inv_account's record) of tenant_id at `now`. */
forms_outcome_t forms_generate(store_conn_t *db, const char *tenant_id,
                               const store_inv_account_t *account, forms_type_t type, int year,
                               int64_t now);

/* The same for the regeneration engine (forms/regen.h): refreshes the form
 * only when it is still Generated with this generated_at (another worker,
 * or the operator, did not regenerate or move it meanwhile); otherwise
 * nothing is written and the result is FORMS_NOT_FOUND. The event is the
 * one a manual refresh emits. */
forms_outcome_t forms_regenerate(store_conn_t *db, const char *tenant_id,
                                 const store_inv_account_t *account, forms_type_t type,
                                 int year, int64_t generated_at, int64_t now);

/* True for the types whose content taxd computes (GAIN_LOSS_SUMMARY,
 * TRANSACTION_SUMMARY, 1099_DA): they record the account's
 * inventory_version they were computed from (source_version). */
bool forms_type_computed(forms_type_t type);

/* Whether a form of `type` and `year` may be generated for the account: a
 * 1099_DA only from tax year DOMAIN_1099DA_FIRST_YEAR and never for an
 * AUSTRIA account. False with an operator sentence in why. */
bool forms_type_allowed(const store_inv_account_t *account, forms_type_t type, int year,
                        char *why, size_t cap);

/* Files (FORMS_FILE) or deletes (FORMS_DELETE) form form_id at `now`. On
 * FORMS_OK *after (may be NULL) receives the form as it now is (the caller
 * clears it with store_form_clear). */
forms_outcome_t forms_move(store_conn_t *db, const char *form_id, forms_action_t action,
                           int64_t now, store_form_t *after);

/* The form as answered by the API and printed by the operator commands:
 * form_id, account_id (the caller's id), form_type, tax_year (an integer),
 * status, created_at, generated_at, filed_at (null unless Filed),
 * deleted_at (only when Deleted), updated_at, correction_needed (a Filed
 * form whose account changed since: a corrected form is needed), content
 * (the stored JSON).
 * New reference; NULL when out of memory or the content does not parse. */
json_t *forms_form_json(const store_form_t *form);

#endif
