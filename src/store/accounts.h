/* store/accounts: a tenant's accounts. The interface speaks caller ids (the
 * account's, its owner's and its filer's); the service uuids of owner and
 * filer are resolved inside each statement, so a caller never handles them.
 * Every function works within one tenant: another tenant's records are not
 * found. Records are returned by value into caller-owned structs. */
#ifndef TAXD_STORE_ACCOUNTS_H
#define TAXD_STORE_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"


typedef struct store_account {
    char uuid[STORE_UUID_LEN];
    char id[STORE_ID_MAX];
    char owner_id[STORE_ID_MAX];  /* the account owner's caller id */
    char filer_id[STORE_ID_MAX];  /* the filer's caller id */
    char name[DOMAIN_NAME_SIZE];                  /* "" = none */
    char cost_basis_method[DOMAIN_METHOD_SIZE]; /* a name of DOMAIN_METHOD_NAMES */
    int austria_tax_year;         /* 0 = none; set exactly when the method is AUSTRIA */
    int64_t created_at;
    int64_t updated_at;
} store_account_t;

/* Which record was missing when a call answers STORE_NOT_FOUND. */
typedef enum store_account_missing {
    STORE_ACCOUNT_MISSING_NONE = 0,
    STORE_ACCOUNT_MISSING_ACCOUNT, /* the account itself (update) */
    STORE_ACCOUNT_MISSING_OWNER,   /* account_owners has no such caller id in the tenant */
    STORE_ACCOUNT_MISSING_FILER,   /* filers has no such caller id in the tenant */
} store_account_missing_t;

/* True when method and year agree: a year exactly when the method is AUSTRIA
 * (the table's CHECK constraint, stated once for C). */
bool store_account_method_valid(const char *method, int austria_tax_year);

/* Inserts `account` (uuid, id, owner_id, filer_id, name, method, year and
 * created_at, which is also its updated_at) into the tenant. Checks, in this
 * order: STORE_CONFLICT when the id is taken; STORE_NOT_FOUND with *missing
 * OWNER, then FILER, when a referenced caller id does not exist in the
 * tenant. Nothing is written unless STORE_OK. */
store_status_t store_account_create(store_conn_t *conn, const char *tenant_id,
                                    const store_account_t *account,
                                    store_account_missing_t *missing);

/* The account with caller id `id`, or STORE_NOT_FOUND. */
store_status_t store_account_get(store_conn_t *conn, const char *tenant_id, const char *id,
                                 store_account_t *out);

/* Accounts of the tenant ordered by caller id, starting after `after_id`
 * (NULL or "" from the start), at most `limit`; only those of the owner with
 * caller id `owner_id` when it is not NULL (an unknown owner has none).
 * each(account, ctx) is called while the statement steps (it must not use
 * this connection); a non-zero return stops the walk. *more tells whether
 * rows follow the last one delivered. */
store_status_t store_account_list(store_conn_t *conn, const char *tenant_id, const char *owner_id,
                                  const char *after_id, size_t limit,
                                  int (*each)(const store_account_t *account, void *ctx),
                                  void *ctx, bool *more);

/* Decides an update from the stored record: starts with *next equal to
 * *current, changes owner_id, filer_id, name, cost_basis_method and
 * austria_tax_year as the caller wants (other fields are ignored), and
 * returns false to refuse the update. It runs inside the write transaction,
 * so it must be quick and must not touch the database. */
typedef bool (*store_account_merge_fn)(const store_account_t *current, store_account_t *next,
                                       void *ctx);

/* Read, merge and write in one transaction, so concurrent updates of one
 * account cannot interleave. Order: STORE_NOT_FOUND with *missing ACCOUNT;
 * STORE_CONFLICT when merge refused (nothing written; *out holds the stored
 * record); STORE_NOT_FOUND with *missing OWNER, then FILER. A merge that
 * changes nothing writes nothing and keeps updated_at; otherwise updated_at
 * becomes `now`. On STORE_OK *out is the record as stored. A merged record
 * that breaks store_account_method_valid is a caller bug: STORE_ERROR. */
store_status_t store_account_update(store_conn_t *conn, const char *tenant_id, const char *id,
                                    store_account_merge_fn merge, void *ctx, int64_t now,
                                    store_account_t *out, store_account_missing_t *missing);

/* The service uuid and cost basis method of the account with caller id `id`
 * (for the work that references accounts, e.g. transactions), or
 * STORE_NOT_FOUND. */
store_status_t store_account_uuid(store_conn_t *conn, const char *tenant_id, const char *id,
                                  char uuid[STORE_UUID_LEN],
                                  char method[DOMAIN_METHOD_SIZE]);

#endif
