/* admin/inventory: see inventory.h. The flags are checked before anything
 * is read; the run itself is inventory_recalc_all (or inventory_refresh for
 * one account), so the operator's command and the lazy reads compute and
 * store the same rows. "seconds" is wall time on the monotonic clock. */
#include "admin/inventory.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "inventory/recalc.h"
#include "store/inventory.h"

static const char *const RECALC_FLAGS[] = {"--tenant", "--account", "--batch", NULL};
static const char *const RECALC_SWITCHES[] = {"--all", NULL};

/* Durations are printed as seconds for people reading the command's output;
 * they are measured in whole microseconds (no money is near them). */
static json_t *seconds_of(int64_t us)
{
    return json_real((double)us / 1e6);
}

static int print_result(const recalc_all_result_t *r, int64_t began_us)
{
    int code = admin_print_json(json_pack(
        "{s:I, s:I, s:I, s:o, s:{s:o, s:o, s:o}}", "accounts", (json_int_t)r->accounts,
        "transactions", (json_int_t)r->transactions, "failed", (json_int_t)r->failed, "seconds",
        seconds_of(clock_monotonic_us() - began_us), "busy_seconds", "read",
        seconds_of(r->read_us), "compute", seconds_of(r->compute_us), "save",
        seconds_of(r->save_us)));
    if (code == 0 && r->failed > 0)
        code = EXIT_REFUSED;
    return code;
}

static int recalc_one(store_conn_t *db, const char *tenant, const char *account_id)
{
    int64_t began = clock_monotonic_us();
    store_inv_account_t account;
    store_status_t st = store_inv_account(db, tenant, account_id, &account);
    if (st == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no account '%s' in tenant '%s'", account_id, tenant);
    if (st != STORE_OK)
        return admin_store_failed(st, "reading the account");
    recalc_result_t r = inventory_refresh(db, &account);
    if (r.store != STORE_OK)
        return admin_store_failed(r.store, "recalculation");
    recalc_all_result_t out = {.store = STORE_OK};
    if (r.arithmetic != DEC_OK)
        out.failed = 1;
    else
        out.accounts = account.dirty;
    return print_result(&out, began);
}

int admin_inventory_recalc(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    if (admin_check_flags(a, RECALC_FLAGS, RECALC_SWITCHES) != 0)
        return EXIT_USAGE;
    bool all = admin_switch(a, "--all", RECALC_SWITCHES);
    const char *tenant = admin_flag_in(a, "--tenant", RECALC_SWITCHES);
    const char *account = admin_flag_in(a, "--account", RECALC_SWITCHES);
    const char *batch_text = admin_flag_in(a, "--batch", RECALC_SWITCHES);
    if (all == (tenant != NULL) || (account != NULL && tenant == NULL))
        return admin_fail(EXIT_USAGE, "inventory recalc needs --all, --tenant ID, or --tenant ID"
                                      " --account ID");
    char *end = NULL;
    unsigned long batch = batch_text ? strtoul(batch_text, &end, 10) : 0;
    if (batch_text != NULL && (*end != '\0' || batch == 0 || batch > 100000))
        return admin_fail(EXIT_USAGE, "--batch must be an integer from 1 to 100000");
    if (account != NULL)
        return recalc_one(db, tenant, account);
    if (tenant != NULL) {
        store_tenant_t t;
        store_status_t st = store_tenant_get(db, tenant, &t);
        if (st == STORE_NOT_FOUND)
            return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
        if (st != STORE_OK)
            return admin_store_failed(st, "reading the tenant");
    }
    int64_t began = clock_monotonic_us();
    recalc_all_result_t r = inventory_recalc_all(ctx->store, db, tenant, batch, NULL, NULL);
    if (r.store != STORE_OK)
        return admin_store_failed(r.store, "recalculation");
    return print_result(&r, began);
}
