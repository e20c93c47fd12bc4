/* store/dispositions.h: an account's disposition method records (standing
 * orders for specific identification: FIFO, HIFO, LIFO or LOFO from an
 * effective_from on), and the schedule the inventory recalculation reads
 * from them.
 *
 * Every write that changes what the inventory computes lowers the account's
 * dirty watermark in its own write transaction: a record's create, update and
 * delete to the earliest effective_from it touches. The rules that need the
 * stored record (in force, same effective_from, an AUSTRIA account) are
 * decided inside that transaction, so two writers cannot both pass them.
 * Records are copied into caller-owned structs. */
#ifndef TAXD_STORE_DISPOSITIONS_H
#define TAXD_STORE_DISPOSITIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_disposition {
    char uuid[STORE_UUID_LEN];
    char account_id[STORE_ID_MAX];   /* the caller's account id */
    char method[DOMAIN_METHOD_SIZE]; /* a name of DOMAIN_DISPOSITION_METHOD_NAMES */
    int64_t effective_from;
    bool recorded_elsewhere;
    int64_t created_at, updated_at;
} store_disposition_t;

/* Why a write was refused; the status that comes with it in brackets. */
typedef enum store_disposition_refusal {
    STORE_DISPOSITION_DONE = 0,
    STORE_DISPOSITION_NO_ACCOUNT, /* [NOT_FOUND] no such account in the tenant */
    STORE_DISPOSITION_NO_RECORD,  /* [NOT_FOUND] no such record of that account */
    STORE_DISPOSITION_AUSTRIA,    /* [CONFLICT] the account uses AUSTRIA */
    STORE_DISPOSITION_IN_FORCE,   /* [CONFLICT] the stored record is in force (effective_from <= now) */
    STORE_DISPOSITION_DUPLICATE,  /* [CONFLICT] another record of the account has that effective_from */
    STORE_DISPOSITION_PAST,       /* [CONFLICT] the updated record would start before now
                                     without recorded_elsewhere */
} store_disposition_refusal_t;

/* Inserts rec (uuid, account_id, method, effective_from, recorded_elsewhere,
 * created_at = updated_at) for the tenant. Checks in this order: NO_ACCOUNT,
 * AUSTRIA, DUPLICATE. The caller has checked the method's name and that an
 * effective_from before created_at comes with recorded_elsewhere. */
store_status_t store_disposition_create(store_conn_t *conn, const char *tenant_id,
                                        const store_disposition_t *rec,
                                        store_disposition_refusal_t *refusal);

/* What an update changes (each has_ flag: the field is set). */
typedef struct store_disposition_patch {
    bool has_method, has_effective_from, has_recorded_elsewhere;
    char method[DOMAIN_METHOD_SIZE];
    int64_t effective_from;
    bool recorded_elsewhere;
} store_disposition_patch_t;

/* Updates the record record_uuid of the account in one write transaction.
 * Checks in this order: NO_ACCOUNT, NO_RECORD, IN_FORCE (the stored
 * effective_from <= now), PAST (the merged effective_from < now and the
 * merged recorded_elsewhere false), AUSTRIA, DUPLICATE. A patch that changes
 * nothing keeps updated_at. *out is the record as stored on STORE_OK. */
store_status_t store_disposition_update(store_conn_t *conn, const char *tenant_id,
                                        const char *account_id, const char *record_uuid,
                                        const store_disposition_patch_t *patch, int64_t now,
                                        store_disposition_t *out,
                                        store_disposition_refusal_t *refusal);

/* Deletes the record: NO_ACCOUNT, NO_RECORD, IN_FORCE as for an update. */
store_status_t store_disposition_delete(store_conn_t *conn, const char *tenant_id,
                                        const char *account_id, const char *record_uuid,
                                        int64_t now, store_disposition_refusal_t *refusal);

/* The account's records by effective_from, starting after after_ms (INT64_MIN:
 * from the first), at most limit; each(rec, ctx) while the statement steps
 * (it must not use this connection), a non-zero return stops. *more tells
 * whether records follow. STORE_NOT_FOUND for an unknown account. */
store_status_t store_disposition_list(store_conn_t *conn, const char *tenant_id,
                                      const char *account_id, int64_t after_ms, size_t limit,
                                      int (*each)(const store_disposition_t *rec, void *ctx),
                                      void *ctx, bool *more);

/* The method in force at `at` for the account (service uuid): the record
 * with the greatest effective_from <= at copied into method, else
 * STORE_NOT_FOUND (the account's own method applies). */
store_status_t store_disposition_in_force(store_conn_t *conn, const char *account_uuid,
                                          int64_t at, char method[DOMAIN_METHOD_SIZE]);

/* For the recalculation: every record of the account (service uuid) in
 * effective_from order, each(effective_ms, method, ctx); a non-zero return
 * stops the walk. method is borrowed for the call. */
store_status_t store_dispositions_schedule(store_conn_t *conn, const char *account_uuid,
                                           int (*each)(int64_t effective_ms, const char *method,
                                                       void *ctx),
                                           void *ctx);


#endif
