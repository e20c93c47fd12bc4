/* store/webhooks.h: webhook subscriptions (the operator's), their sealed
 * signing secrets, and deliveries: one row per (event, subscription), written
 * in the same transaction as the event (the outbox), then driven by the
 * dispatcher through the protocol of store/webhook_dispatch.h. Here: the
 * operator's side and the outbox.
 *
 * The store never sees a clear secret or password: callers seal them
 * (webhooks/vault.h) and hand over the sealed bytes. Every output is written
 * into caller-owned structs, except where a function says it allocates. */
#ifndef TAXD_STORE_WEBHOOKS_H
#define TAXD_STORE_WEBHOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_WH_ID_MAX 64        /* subscription, delivery and trace ids */
#define STORE_WH_URL_MAX 2049
#define STORE_WH_EVENTS_MAX 512   /* "TYPE,TYPE,..." */
#define STORE_WH_ADDR_MAX 64      /* an IPv4 or IPv6 address */
#define STORE_WH_USER_MAX 257
#define STORE_WH_SEALED_MAX 400   /* a sealed secret or basic password */
#define STORE_WH_SECRETS_MAX 2    /* the signing secret and, during a rotation, the newer one */
#define STORE_WH_ERROR_MAX 512
#define STORE_WH_STATE_MAX 16

typedef struct store_subscription {
    char id[STORE_WH_ID_MAX];
    char tenant_id[STORE_UUID_LEN];
    char url[STORE_WH_URL_MAX];
    char events[STORE_WH_EVENTS_MAX];
    uint32_t rate_limit;       /* requests per second */
    uint32_t retry_attempts;   /* re-attempts after the first */
    uint32_t retry_window_s;   /* counted from the first attempt */
    uint32_t timeout_s;        /* of one attempt */
    char egress_address[STORE_WH_ADDR_MAX]; /* "" = the process default */
    bool basic;                /* false: source marker mode */
    char basic_user[STORE_WH_USER_MAX];
    uint8_t basic_password_sealed[STORE_WH_SEALED_MAX];
    size_t basic_password_sealed_len;
    bool deauthorized;
    int64_t deauthorized_at;   /* 0 while active */
    int64_t created_at, updated_at;
} store_subscription_t;

typedef struct store_wh_secret {
    int64_t seq;               /* higher is newer */
    uint8_t sealed[STORE_WH_SEALED_MAX];
    size_t sealed_len;
    int64_t created_at;
} store_wh_secret_t;

/* ---- the operator's side */

/* Inserts the subscription (state active) and its first secret. Closes the
 * tenant's open INVENTORY_UPDATE events (they stop being widened) so that
 * the next change opens an event this subscription receives.
 * STORE_CONFLICT when the id is taken, STORE_NOT_FOUND when the tenant does
 * not exist. */
store_status_t store_subscription_create(store_conn_t *conn, const store_subscription_t *sub,
                                         const store_wh_secret_t *first);
store_status_t store_subscription_get(store_conn_t *conn, const char *id,
                                      store_subscription_t *out);
/* Every subscription (tenant_id NULL) or a tenant's, in creation order; a
 * non-zero return from each stops the walk. */
store_status_t store_subscription_each(store_conn_t *conn, const char *tenant_id,
                                       int (*each)(const store_subscription_t *sub, void *ctx),
                                       void *ctx);
/* Writes url, events, rate_limit, retry_attempts, retry_window_s, timeout_s,
 * egress_address and updated_at of sub->id. STORE_NOT_FOUND when unknown. */
store_status_t store_subscription_update(store_conn_t *conn, const store_subscription_t *sub);
/* Deletes it with its secrets and deliveries. STORE_NOT_FOUND when unknown. */
store_status_t store_subscription_delete(store_conn_t *conn, const char *id);

/* Secrets, newest first (out holds STORE_WH_SECRETS_MAX). */
store_status_t store_subscription_secrets(store_conn_t *conn, const char *id,
                                          store_wh_secret_t *out, size_t *count);
/* Adds a newer secret. STORE_CONFLICT when two exist already. */
store_status_t store_subscription_secret_add(store_conn_t *conn, const char *id,
                                             const store_wh_secret_t *secret, int64_t now);
/* Removes the oldest secret. STORE_CONFLICT when it is the last one: signing
 * cannot be disabled. */
store_status_t store_subscription_secret_drop(store_conn_t *conn, const char *id, int64_t now);

/* Basic mode with user and sealed password (basic true), or back to the
 * source marker (basic false; user and password cleared). */
store_status_t store_subscription_set_auth(store_conn_t *conn, const char *id, bool basic,
                                           const char *user, const uint8_t *sealed,
                                           size_t sealed_len, int64_t now);
/* Back to active; every held delivery is pending again with a fresh retry
 * window (attempts start over; trace ids kept). *requeued counts them. */
store_status_t store_subscription_reactivate(store_conn_t *conn, const char *id, int64_t now,
                                             int64_t *requeued);

typedef struct store_wh_backlog {
    int64_t pending, held, delivered, failed;
} store_wh_backlog_t;
store_status_t store_subscription_backlog(store_conn_t *conn, const char *id,
                                          store_wh_backlog_t *out);

/* ---- deliveries as the operator sees them */

typedef struct store_delivery {
    char id[STORE_WH_ID_MAX];
    char event_id[STORE_UUID_LEN];
    char event_type[64];
    char trace_id[STORE_WH_ID_MAX];
    char state[STORE_WH_STATE_MAX];
    int64_t attempts;
    int64_t first_attempt_at, window_ends_at, next_attempt_at, last_attempt_at; /* 0 = none */
    int last_status;                    /* 0 = none */
    char last_error[STORE_WH_ERROR_MAX]; /* "" = none */
    int64_t created_at, delivered_at;
} store_delivery_t;

/* Deliveries of a subscription in creation order, optionally only those in
 * `state` (NULL: all) created at or after since_ms. */
store_status_t store_delivery_each(store_conn_t *conn, const char *subscription_id,
                                   const char *state, int64_t since_ms,
                                   int (*each)(const store_delivery_t *d, void *ctx), void *ctx);
/* Queues again, with a new trace id and a fresh window, the delivery of
 * event_id (any state), or every failed delivery created at or after
 * since_ms (event_id NULL). A deauthorized subscription's deliveries are
 * queued as held (sent on reactivation). *count: how many. */
store_status_t store_delivery_replay(store_conn_t *conn, const char *subscription_id,
                                     const char *event_id, int64_t since_ms, int64_t now,
                                     int64_t *count);

/* ---- the outbox: called inside a conn_write body right after a NEW event
 * row was inserted. One delivery per subscription of the tenant listing
 * event_type: pending for active subscriptions, held for deauthorized ones,
 * a fresh trace id each, due at now. */
store_status_t store_deliveries_fan_out_in_tx(store_conn_t *conn, const char *tenant_id,
                                              const char *event_id, const char *event_type,
                                              int64_t now);

#endif
