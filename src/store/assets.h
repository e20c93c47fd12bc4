/* store/assets.h: a tenant's assets (currencies, tokens, securities), unique
 * per tenant by code and by name, and the rules that keep them consistent:
 * a batch is created in one transaction with an outcome per element, an
 * asset a transaction references cannot be deleted, and the reporting
 * currency (DOMAIN_REPORTING_CURRENCY) never can.
 * Every struct here is filled by value; nothing returned needs freeing. */
#ifndef TAXD_STORE_ASSETS_H
#define TAXD_STORE_ASSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_ASSET_NO_DECIMALS (-1)

typedef struct store_asset {
    char uuid[STORE_UUID_LEN];
    char code[DOMAIN_ASSET_CODE_SIZE]; /* domain_asset_code_valid; stored as given */
    char name[DOMAIN_ASSET_NAME_SIZE];
    char type[DOMAIN_ASSET_TYPE_SIZE];
    int decimals;  /* 0..DOMAIN_ASSET_DECIMALS_MAX, or STORE_ASSET_NO_DECIMALS */
    int64_t created_at;
} store_asset_t;

/* What happened to one element of a batch. */
typedef enum store_asset_outcome {
    STORE_ASSET_CREATED = 0,
    STORE_ASSET_CONFLICT_CODE, /* the code is taken (checked first) */
    STORE_ASSET_CONFLICT_NAME, /* the name is taken */
} store_asset_outcome_t;

/* Creates assets[0..count) for the tenant in ONE transaction, element by
 * element in order: an element whose code or name is already taken (by an
 * earlier asset or an earlier element of the same batch) is skipped with its
 * outcome set, and does not undo the others. The caller fills uuid, code,
 * name, type, decimals and created_at of every element (codes must pass
 * domain_asset_code_valid). STORE_OK means every outcome is set and every
 * CREATED element is committed; any other status means nothing was written. */
store_status_t store_assets_create_batch(store_conn_t *conn, const char *tenant_id,
                                         const store_asset_t *assets, size_t count,
                                         store_asset_outcome_t *outcomes);

/* The tenant's asset whose uuid (any case) or, failing that, whose code is
 * `key`. STORE_NOT_FOUND when neither: another tenant's asset is not found. */
store_status_t store_asset_get(store_conn_t *conn, const char *tenant_id, const char *key,
                               store_asset_t *out);

/* Assets of a tenant ordered by code, starting after `after_code` (NULL or ""
 * from the start), at most `limit`; *more tells whether any follow. each()
 * returning non-zero stops the walk; it must not use this connection. */
store_status_t store_asset_list(store_conn_t *conn, const char *tenant_id,
                                const char *after_code, size_t limit,
                                int (*each)(const store_asset_t *asset, void *ctx), void *ctx,
                                bool *more);

/* Why a delete was refused. */
typedef enum store_asset_refusal {
    STORE_ASSET_REFUSED_NONE = 0,
    STORE_ASSET_REFUSED_REFERENCED, /* a transaction references it */
    STORE_ASSET_REFUSED_REPORTING,  /* it is the tenant's reporting currency */
} store_asset_refusal_t;

/* Deletes the tenant's asset addressed by `key` (as store_asset_get), in one
 * transaction with its checks. STORE_NOT_FOUND when none; STORE_CONFLICT with
 * *refusal set when it may not go. `out` (may be NULL) receives the asset
 * found, deleted or refused, so messages can name its code. */
store_status_t store_asset_delete(store_conn_t *conn, const char *tenant_id, const char *key,
                                  store_asset_refusal_t *refusal, store_asset_t *out);

/* The uuid of the tenant's asset with this exact code, creating it when
 * missing (uuid new_uuid, name = code, the given type, decimals null,
 * created_at now). When another asset is already named like the code, the
 * new one is named "<code> (<new_uuid>)" instead, so a transaction never
 * fails on a name. An existing asset is returned as it is, whatever its
 * type. STORE_CONFLICT only when new_uuid is taken; store_bad_argument
 * (STORE_ERROR) when the code is not valid (domain_asset_code_valid).
 * This one runs its own write transaction. */
store_status_t store_asset_ensure(store_conn_t *conn, const char *tenant_id, const char *code,
                                  const char *type, char uuid[STORE_UUID_LEN], int64_t now,
                                  const char *new_uuid);

/* The same, for store files whose write transaction is already open: call it
 * from inside a conn_write body (src/store/internal.h) so the asset and the
 * record that references it commit or roll back together. A failure leaves
 * the transaction open for the caller's body to return (and so roll back). */
store_status_t store_asset_ensure_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *code, const char *type,
                                        char uuid[STORE_UUID_LEN], int64_t now,
                                        const char *new_uuid);

/* Inside a write transaction: adds delta to the number of transactions that
 * name the asset `code` (what store_asset_delete's "referenced" refusal
 * reads). *found is false, and nothing is written, when the tenant has no
 * such asset. */
store_status_t store_asset_refs_add_in_tx(store_conn_t *conn, const char *tenant_id,
                                         const char *code, int delta, bool *found);

#endif
