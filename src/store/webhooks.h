/* store/webhooks.h: webhook subscriptions (the operator's), their sealed
 * signing secrets, and deliveries: one row per (event, subscription), written
 * in the same transaction as the event (the outbox), then driven by the
 * dispatcher (webhooks/engine.h) through leases on subscriptions.
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

/* ---- the dispatcher's side (webhooks/engine.c) */

/* One claim round, one write transaction: releases the leases of `idle`
 * subscriptions (nothing in flight here) that have no due delivery, then
 * takes or renews until lease_until the lease of every active subscription
 * whose lease is free, expired or owner's and that has a due delivery (its
 * own leases are renewed whatever is due). each(id, updated_at, ctx) is
 * called per leased subscription, after the transaction. *next_due: the
 * earliest next_attempt_at of a pending delivery of a subscription this
 * owner may take (0: none). */
typedef struct store_wh_claim {
    const char *owner;
    int64_t now;                /* the service clock: which deliveries are due */
    int64_t lease_now, lease_until; /* the wall clock: leases coordinate processes */
    const char *const *idle;
    size_t idle_count;
} store_wh_claim_t;
store_status_t store_wh_claim(store_conn_t *conn, const store_wh_claim_t *claim,
                              int (*each)(const char *id, int64_t updated_at, void *ctx),
                              void *ctx, int64_t *next_due);
/* Releases every lease of owner (shutdown). */
store_status_t store_wh_release_all(store_conn_t *conn, const char *owner);

/* An event row, as rendered into a delivery (webhooks/event.h). Strings are
 * malloc'd; store_wh_attempt_free frees them. */
typedef struct store_wh_event {
    char type[64];
    char *payload;              /* NULL for INVENTORY_UPDATE */
    char *account_uuid, *account_id, *from_tx, *latest_tx;
    int64_t from_ms, latest_ms;
    bool has_ids;
} store_wh_event_t;

/* A delivery whose attempt begins: its event claimed (events.claimed_at)
 * and read. The delivery row itself is not written until the attempt's
 * outcome is recorded: until then it stays pending, and the dispatcher
 * keeps it from being begun twice (store_wh_begin_t.exclude; across
 * processes, the subscription's lease). */
typedef struct store_wh_attempt {
    size_t request;             /* index of its store_wh_begin_t */
    char delivery_id[STORE_WH_ID_MAX];
    char event_id[STORE_UUID_LEN];
    char trace_id[STORE_WH_ID_MAX];
    int64_t rowid;              /* the delivery row's: store_wh_outcome_t.delivery_rowid */
    int64_t attempts;           /* including this one */
    int64_t first_attempt_at, window_ends_at; /* 0 before a first attempt */
    store_wh_event_t event;
} store_wh_attempt_t;

/* Per leased subscription: begin up to `max` due attempts, provided the
 * subscription is still active, leased by owner and unchanged since
 * updated_at, leaving out the deliveries in `exclude` (begun by this
 * dispatcher, outcome not recorded yet). Deliveries whose window has closed
 * are failed instead. */
typedef struct store_wh_begin {
    const char *subscription_id;
    int64_t updated_at;
    size_t max;
    const int64_t *exclude;     /* delivery rowids; not owned */
    size_t exclude_count;
    /* out */
    bool lost;                  /* no longer active or leased by owner: drop it */
    bool stale;                 /* changed since updated_at: reload, then retry */
    size_t begun;
    int64_t next_due;           /* the next pending due time: now after a full batch, 0 if none */
} store_wh_begin_t;

/* One write transaction over every request. *out (malloc'd, free with
 * store_wh_attempts_free) receives the attempts of all requests. */
store_status_t store_wh_begin_attempts(store_conn_t *conn, const char *owner, int64_t now,
                                       store_wh_begin_t *requests, size_t count,
                                       store_wh_attempt_t **out, size_t *out_count);
void store_wh_attempts_free(store_wh_attempt_t *attempts, size_t count);
/* Frees the strings of one attempt's event (the caller moved the attempt out
 * of its array) and zeroes it. */
void store_wh_event_free(store_wh_event_t *event);

typedef enum store_wh_result {
    STORE_WH_DELIVERED = 0,
    STORE_WH_RETRY,      /* pending again at next_attempt_at */
    STORE_WH_FAILED,     /* attempts or window exhausted */
    STORE_WH_HELD,       /* the subscription is deauthorized */
} store_wh_result_t;

/* The outcome of one attempt that was sent; it counts the attempt. It
 * applies only while the delivery still has trace_id and attempts - 1
 * attempts (an operator's replay meanwhile wins, and a second outcome of the
 * same attempt is ignored). deauthorize: this answer (401, 403, 407)
 * deauthorizes subscription_id and holds its pending deliveries. An attempt
 * begun but never sent has no outcome: its delivery is still pending. */
typedef struct store_wh_outcome {
    const char *subscription_id, *delivery_id, *trace_id;
    int64_t delivery_rowid;     /* store_wh_attempt_t.rowid, or 0: by delivery_id alone */
    int64_t attempts;           /* including this one */
    int64_t first_attempt_at, window_ends_at; /* the delivery's window */
    int64_t sent_at;            /* when this attempt was sent */
    store_wh_result_t result;
    int status;                 /* 0: no HTTP status */
    const char *error;          /* NULL: none */
    int64_t next_attempt_at;    /* STORE_WH_RETRY */
    int64_t at;                 /* when the attempt ended */
    bool deauthorize;
} store_wh_outcome_t;

/* One write transaction for all outcomes. */
store_status_t store_wh_record_outcomes(store_conn_t *conn, const store_wh_outcome_t *outcomes,
                                        size_t count);

/* A dispatcher step's one write transaction: records `outcomes`, then
 * begins attempts as store_wh_begin_attempts does (the outcomes first, so a
 * deauthorization is in force before anything begins). */
store_status_t store_wh_step(store_conn_t *conn, const store_wh_outcome_t *outcomes,
                             size_t outcome_count, const char *owner, int64_t now,
                             store_wh_begin_t *requests, size_t count, store_wh_attempt_t **out,
                             size_t *out_count);

/* Metrics: pending deliveries per subscription and deauthorized
 * subscriptions. each(subscription_id, pending, ctx). */
store_status_t store_wh_backlog_each(store_conn_t *conn,
                                     int (*each)(const char *id, int64_t pending, void *ctx),
                                     void *ctx, int64_t *deauthorized);

#endif
