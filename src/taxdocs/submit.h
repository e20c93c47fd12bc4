/* taxdocs/submit: a submission and the owner's state, through the store.
 * taxdocs_submit records an accepted submission, makes it the owner's
 * current one for its object, queues a W-9's TIN check and emits
 * ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS, all in one write transaction.
 * The owner's state (GET) and the status event are built by the same
 * function, taxdocs_status_json (model.h), from the same store read. */
#ifndef TAXD_TAXDOCS_SUBMIT_H
#define TAXD_TAXDOCS_SUBMIT_H

#include <jansson.h>
#include <stdint.h>

#include "core/crypto.h"
#include "store/store.h"
#include "taxdocs/comprehensive.h"
#include "taxdocs/model.h"

typedef struct taxdocs_submission {
    const uint8_t *tin_key;  /* CRYPTO_AEAD_KEY_LEN bytes: seals the document and TINs */
    const char *tenant_id;
    const char *owner_uuid;
    taxdocs_type_t type;
    const json_t *body;      /* the native document; passed taxdocs_check */
    int64_t now;
    const char *source;      /* "api", "sdk" or "tax-documentation-data" */
    /* Taxbit's COMPREHENSIVE body and what its check derived, or NULL for a
     * native submission. When set, it is the document kept (sealed), so the
     * SDK reads back exactly what it sent; body is its native conversion. */
    const json_t *comprehensive_body;
    const taxdocs_comprehensive_t *comprehensive;
} taxdocs_submission_t;

/* Writes the submission; id receives its tax_documentation_id (a UUID v4).
 * STORE_NOT_FOUND when the owner vanished; STORE_ERROR for a failure to
 * seal or assess (logged without any submitted value). */
store_status_t taxdocs_submit(store_conn_t *conn, const taxdocs_submission_t *s,
                              char id[STORE_UUID_LEN]);

/* The owner's current state as answered ({"account_owner_id", objects on
 * file}) into *out (new reference). Outside a transaction. */
store_status_t taxdocs_status_get(store_conn_t *conn, const char *tenant_id,
                                  const char *owner_uuid, json_t **out);

/* Emits ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS with the owner's state as it
 * stands inside the current write transaction. */
store_status_t taxdocs_status_event_in_tx(store_conn_t *conn, const char *tenant_id,
                                          const char *owner_uuid, int64_t now);

#endif
