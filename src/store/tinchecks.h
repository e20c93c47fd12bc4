/* store/tinchecks: the queue of TIN checks. Three kinds share it: a
 * real-time matching request (POST /v1/tin-validations), an account owner's
 * TIN (created or changed) and a W-9's TIN. A check is enqueued inside the
 * write transaction of the change that asks for it, so a committed change
 * always gets its check; the background engine (src/tincheck/) claims it
 * with a lease and writes its result and its event in one transaction.
 * TINs arrive sealed (core/tin.h) with the tenant id and the check's id as
 * associated data; the store never sees a clear TIN.
 *
 * Life of a check: PENDING (validated_at NULL) -> claimed by a worker with a
 * lease (claimed_by, lease_until; an expired lease makes it claimable
 * again) -> finished with its result status and validated_at, fenced by the
 * claim so a worker that lost its lease writes nothing. A check whose
 * subject got a newer check (the owner's TIN or name changed again, or the
 * TIN was removed) is finished as STALE at once, and its result is never
 * delivered: only the latest check of a subject speaks. */
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
 * (store_write). When subject_id is set, the subject's earlier unfinished
 * checks of the same kind become STALE (store_tin_check_supersede_in_tx). */
store_status_t store_tin_check_enqueue_in_tx(store_conn_t *conn, const store_tin_check_new_t *c);

/* Finishes as STALE (validated_at = now) every unfinished check of kind for
 * subject_id in the tenant: a claimed one's worker then writes nothing. For
 * a subject whose TIN was removed. Runs inside store_write. */
store_status_t store_tin_check_supersede_in_tx(store_conn_t *conn, const char *tenant_id,
                                               store_tin_check_kind_t kind,
                                               const char *subject_id, int64_t now);

#define STORE_TIN_CHECK_STATUS_MAX 16
#define STORE_TIN_CHECK_CLAIM_MAX 64
#define STORE_TIN_CHECK_STALE "STALE"          /* finished without a result */

/* A check as stored. Strings are "" when the column is NULL. */
typedef struct store_tin_check {
    char id[STORE_UUID_LEN];
    char tenant_id[STORE_UUID_LEN];
    store_tin_check_kind_t kind;
    char subject_id[STORE_ID_MAX];
    char owner_uuid[STORE_UUID_LEN];
    char name[DOMAIN_NAME_SIZE];
    uint8_t tin_sealed[STORE_TIN_SEALED_MAX];
    size_t tin_sealed_len;
    char tin_type[16];
    char status[STORE_TIN_CHECK_STATUS_MAX]; /* PENDING until finished */
    int64_t created_at;
    int64_t validated_at; /* 0 while pending */
} store_tin_check_t;

/* Claims the oldest unfinished check that is not leased (or whose lease
 * ended at or before lease_now): sets claimed_by = claim and lease_until,
 * and copies the check into *out. lease_now and lease_until are on the
 * wall clock unshifted by tests (clock_now_ms(NULL)), like every lease.
 * STORE_NOT_FOUND when there is nothing to do. */
store_status_t store_tin_check_claim(store_conn_t *conn, const char *claim, int64_t lease_now,
                                     int64_t lease_until, store_tin_check_t *out);

/* Records the result of a claimed check: status and validated_at, lease
 * cleared. STORE_NOT_FOUND (nothing written) when the claim is no longer
 * this worker's or the check was finished meanwhile (superseded): the
 * caller must then not raise the result's event. Runs inside store_write. */
store_status_t store_tin_check_finish_in_tx(store_conn_t *conn, const char *id,
                                            const char *claim, const char *status,
                                            int64_t validated_at);

/* The caller id of the tenant's owner with uuid owner_uuid (for the
 * ACCOUNT_OWNER_TIN_VALIDATION event); STORE_NOT_FOUND when it is gone.
 * Runs inside store_write. */
store_status_t store_tin_check_owner_id_in_tx(store_conn_t *conn, const char *tenant_id,
                                              const char *owner_uuid, char id[STORE_ID_MAX]);

/* The tenant's check `id` into *out (id lower-case canonical);
 * STORE_NOT_FOUND when the tenant has none with that id. */
store_status_t store_tin_check_get(store_conn_t *conn, const char *tenant_id, const char *id,
                                   store_tin_check_t *out);

#endif
