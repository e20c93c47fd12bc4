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
#include "app/service.h"

/* Each returns the process exit status (0, EXIT_REFUSED, EXIT_USAGE). */
int admin_subscription_create(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_show(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_list(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_update(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_delete(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_rotate_secret(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_drop_secret(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_set_basic(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_set_source_marker(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_reactivate(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_deliveries(service_t *svc, store_conn_t *db, const args_t *a);
int admin_subscription_replay(service_t *svc, store_conn_t *db, const args_t *a);

#endif
