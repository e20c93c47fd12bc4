/* store/taxdocs: account owners' tax documentation. Every submission is
 * kept (its id is the tax_documentation_id); for each owner and state object
 * (taxdocs/model.h) one submission is current, the latest. The document as
 * submitted arrives sealed by the caller (it holds TINs), and a W-9's TIN
 * sealed on its own; the store never sees a clear TIN. Every function runs
 * inside a write transaction (store_write) except store_taxdoc_current. */
#ifndef TAXD_STORE_TAXDOCS_H
#define TAXD_STORE_TAXDOCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "taxdocs/model.h"

typedef struct store_taxdoc {
    char id[STORE_UUID_LEN];         /* the tax_documentation_id */
    char owner_uuid[STORE_UUID_LEN];
    taxdocs_state_t state;
    int64_t created_at;
} store_taxdoc_t;

typedef struct store_taxdoc_new {
    const char *tenant_id;
    const store_taxdoc_t *doc;
    const uint8_t *document_sealed;  /* the submitted document, sealed */
    size_t document_sealed_len;
    const uint8_t *tin_sealed;       /* W-9: its TIN (core/tin.h); else NULL */
    size_t tin_sealed_len;
} store_taxdoc_new_t;

/* Inserts the submission and makes it the owner's current one for its
 * object. STORE_NOT_FOUND when the owner or tenant does not exist. */
store_status_t store_taxdoc_insert_in_tx(store_conn_t *conn, const store_taxdoc_new_t *n);

/* The owner's current submissions: out[i] is filled and present[i] set for
 * each object i (taxdocs_object_t) on file. An owner with nothing on file
 * is STORE_OK with no present[i]. */
store_status_t store_taxdoc_current_in_tx(store_conn_t *conn, const char *tenant_id,
                                          const char *owner_uuid,
                                          store_taxdoc_t out[TAXDOCS_OBJECT_COUNT],
                                          bool present[TAXDOCS_OBJECT_COUNT]);
/* The same as a read outside any transaction (GET). */
store_status_t store_taxdoc_current(store_conn_t *conn, const char *tenant_id,
                                    const char *owner_uuid,
                                    store_taxdoc_t out[TAXDOCS_OBJECT_COUNT],
                                    bool present[TAXDOCS_OBJECT_COUNT]);

/* Submission id of the tenant into *out, whether it is its owner's current
 * one (*is_current) and the owner's caller id. STORE_NOT_FOUND when the
 * tenant has no such submission. */
store_status_t store_taxdoc_get_in_tx(store_conn_t *conn, const char *tenant_id, const char *id,
                                      store_taxdoc_t *out, bool *is_current,
                                      char owner_id[STORE_ID_MAX]);

/* Writes doc's TIN result and what follows from it (tin_status,
 * tin_validated_at, issues, needs_resubmission, tax_documentation_status).
 * STORE_NOT_FOUND when the tenant has no such submission. */
store_status_t store_taxdoc_set_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                                 const store_taxdoc_t *doc);

#endif
