/* admin/inventory: `taxd admin inventory recalc`, the operator's bulk
 * recalculation after an import or a backfill (inventory/recalc.h,
 * inventory_recalc_all): every dirty account (--all), those of one tenant
 * (--tenant ID), or one account (--tenant ID --account ID, the lazy path's
 * inventory_refresh). Prints {"accounts", "transactions", "failed",
 * "seconds"}; an account whose arithmetic fails is left dirty and counted
 * in "failed" (the command then exits non-zero after printing). */
#ifndef TAXD_ADMIN_INVENTORY_H
#define TAXD_ADMIN_INVENTORY_H

#include "admin/cli.h"

/* Returns the process exit status (0, EXIT_REFUSED, EXIT_USAGE). */
int admin_inventory_recalc(const admin_context_t *ctx, store_conn_t *db, const args_t *a);

#endif
