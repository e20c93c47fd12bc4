/* admin/subscriptions: `taxd admin subscription ...`, the operator's webhook
 * subscriptions (spec § Webhook subscription: configured by the operator,
 * not self-serve). Each command about one subscription names it with
 * --subscription ID. Signing secrets are shown once, by create and
 * rotate-secret; basic passwords are read from a file, never taken on the
 * command line, and never printed. Nothing here sends a request: creating,
 * updating or reactivating a subscription sends no probe or test event. */
#ifndef TAXD_ADMIN_SUBSCRIPTIONS_H
#define TAXD_ADMIN_SUBSCRIPTIONS_H

#include "admin/cli.h"

/* Each returns the process exit status (0, EXIT_REFUSED, EXIT_USAGE). */
int admin_subscription_create(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_show(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_list(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_update(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_delete(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_rotate_secret(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_drop_secret(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_set_basic(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_set_source_marker(const admin_context_t *ctx, store_conn_t *db,
                                         const args_t *a);
int admin_subscription_reactivate(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_deliveries(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_subscription_replay(const admin_context_t *ctx, store_conn_t *db, const args_t *a);

#endif
