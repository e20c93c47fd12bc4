/* api/inventory_account: see inventory_account.h. */
#include "api/inventory_account.h"

#include <stdio.h>

#include "inventory/recalc.h"

/* 409 naming why the account's inventory cannot be computed. */
static void reply_not_computable(request_t *req, const recalc_result_t *r)
{
    char reason[STORE_ID_MAX + 96];
    recalc_describe_failure(r, reason, sizeof reason);
    reply_error(req, 409, "Inventory cannot be computed: %s", reason);
}

void api_inventory_reply_range(request_t *req, const char *transaction_id)
{
    recalc_result_t r = {.store = STORE_OK, .arithmetic = DEC_RANGE};
    snprintf(r.failed_tx, sizeof r.failed_tx, "%s", transaction_id);
    reply_not_computable(req, &r);
}

bool api_inventory_refresh(request_t *req, store_conn_t *db, const store_inv_account_t *account)
{
    recalc_result_t r = inventory_refresh(db, account);
    if (r.store != STORE_OK) {
        reply_store_failure(req, r.store);
        return false;
    }
    if (r.arithmetic != DEC_OK) {
        reply_not_computable(req, &r);
        return false;
    }
    return true;
}

bool api_inventory_find_account(request_t *req, store_conn_t *db, const char *account_id,
                                store_inv_account_t *account)
{
    store_status_t st = store_inv_account(db, req->claims.tenant_id, account_id, account);
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Account with id '%s' not found", account_id);
    else if (st != STORE_OK)
        reply_store_failure(req, st);
    return st == STORE_OK;
}

bool api_inventory_open_account(request_t *req, const char *account_id, store_conn_t **db,
                                store_inv_account_t *account)
{
    *db = api_db(req);
    return *db != NULL && api_inventory_find_account(req, *db, account_id, account) &&
           api_inventory_refresh(req, *db, account);
}
