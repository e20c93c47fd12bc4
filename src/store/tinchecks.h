/* store/tinchecks: the queue of TIN checks. Three kinds share it: a
 * real-time matching request (POST /v1/tin-validations), an account owner's
 * TIN (created or changed) and a W-9's TIN. A check is enqueued inside the
 * write transaction of the change that asks for it, so a committed change
 * always gets its check; the background engine (src/tincheck/) claims it
 * with a lease and writes its result and its event in one transaction.
 * TINs arrive sealed (core/tin.h); the store never sees a clear TIN. */
#ifndef TAXD_STORE_TINCHECKS_H
#define TAXD_STORE_TINCHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef enum store_tin_check_kind {
    STORE_TIN_CHECK_RTTM,              /* subject_id: NULL; id is the validation_id */
    STORE_TIN_CHECK_ACCOUNT_OWNER,     /* subject_id: the owner's uuid */
    STORE_TIN_CHECK_TAX_DOCUMENTATION, /* subject_id: the tax_documentation_id */
} store_tin_check_kind_t;

typedef struct store_tin_check_new {
    const char *id;          /* a UUID v4 made by the caller */
    const char *tenant_id;
    store_tin_check_kind_t kind;
    const char *subject_id;  /* see the kinds; NULL for RTTM */
    const char *owner_uuid;  /* the account owner concerned; NULL when none */
    const char *name;        /* the name to match with the TIN */
    const uint8_t *tin_sealed;
    size_t tin_sealed_len;
    const char *tin_type;
    int64_t now;
} store_tin_check_new_t;

/* Queues a check with status PENDING. Must run inside a write transaction
 * (store_write). */
store_status_t store_tin_check_enqueue_in_tx(store_conn_t *conn, const store_tin_check_new_t *c);

#endif
