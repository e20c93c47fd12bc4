/* api/inventory_account: the opening every inventory-derived route shares
 * (inventory, transfer lots, Austrian withholding, gains): the account by the
 * caller's id within the token's tenant, refreshed (inventory/recalc.h) so
 * that the answer reflects every acknowledged write. Each function answers
 * the request itself when it returns false: 404 "Account with id '<id>' not
 * found" (another tenant's account is not found like any missing one), 409
 * "Inventory cannot be computed: <why>" (docs/decisions.md, Inventory reads,
 * Not computable), or the store's failure. */
#ifndef TAXD_API_INVENTORY_ACCOUNT_H
#define TAXD_API_INVENTORY_ACCOUNT_H

#include <stdbool.h>

#include "api/api.h"
#include "store/inventory.h"

/* The account by caller id; no refresh. */
bool api_inventory_find_account(request_t *req, store_conn_t *db, const char *account_id,
                                store_inv_account_t *account);

/* Recalculates the account when it is dirty. */
bool api_inventory_refresh(request_t *req, store_conn_t *db, const store_inv_account_t *account);

/* The request's connection and the account by caller id, refreshed. */
bool api_inventory_open_account(request_t *req, const char *account_id, store_conn_t **db,
                                store_inv_account_t *account);

/* The 409 for a figure past the decimals' range met while answering (a unit
 * cost, a sum of rows), naming the transaction it belongs to. */
void api_inventory_reply_range(request_t *req, const char *transaction_id);

#endif
