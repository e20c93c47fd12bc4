/* store/webhook_dispatch.h: the dispatcher's side of webhook deliveries:
 * the protocol by which any number of dispatchers, in any number of
 * processes, send every delivery at least once. Its other half is the
 * webhook engine (webhooks/engine.c); subscriptions, secrets and the outbox
 * that writes the deliveries are store/webhooks.h. This comment is the one
 * description of the protocol.
 *
 * The protocol, and why:
 *  - A delivery row is the unit of work: state pending / held / delivered /
 *    failed, its attempts, its retry window (opened by its first attempt)
 *    and next_attempt_at. The outbox writes it in the event's transaction.
 *  - Deliveries are never locked row by row: a dispatcher leases a whole
 *    subscription (lease_owner, lease_until, on the wall clock) in a claim
 *    round (store_wh_claim), which also renews its own leases and gives back
 *    those of subscriptions it has nothing for. One process thus sends a
 *    subscription's deliveries at a time, and the subscription's rate and
 *    concurrency bounds hold globally. A dispatcher that dies leaves leases
 *    that run out; another takes the subscriptions over.
 *  - Beginning an attempt writes nothing to its delivery row. The
 *    dispatcher passes the rowids it has begun and not recorded yet
 *    (store_wh_begin_t.exclude; a JSON array read with json_each) and they
 *    are left out of what is due, while the lease keeps other processes
 *    away. An attempt begun but never sent (deauthorized, lease lost, window
 *    closed, shutdown) thus needs no undoing: its delivery is still pending,
 *    held by a deauthorization, or failed by the next begin once its window
 *    has closed. A begin first checks that the subscription is still active,
 *    leased by the caller and unchanged (lost, stale).
 *  - The event is claimed (events.claimed_at) and read in the transaction
 *    that begins its first attempt, so an INVENTORY_UPDATE is never widened
 *    after its range was sent. (Creating a subscription closes the tenant's
 *    open events the same way: store/webhooks.c.)
 *  - An attempt's outcome writes its row, once: the attempts, the window
 *    the first attempt opened, the result. It applies only while the
 *    delivery still has the trace id and attempt count its attempt began
 *    with: an operator's replay or a reactivation meanwhile wins over a late
 *    answer, and a second outcome of the same attempt (sent by two processes
 *    after a lost lease) is ignored. It finds the row by the rowid its
 *    attempt began with. An outcome that deauthorizes the subscription holds
 *    its pending deliveries in the same transaction.
 *  - Batches: store_wh_step records a job's outcomes and begins its next
 *    attempts in one write transaction (the outcomes first, so that a
 *    deauthorization is in force before anything begins), so a commit's
 *    fsync is shared by every delivery of the job.
 *
 * At least once, and how many more: a crash before an outcome is committed,
 * or a lease lost while attempts ran, sends those deliveries again once the
 * lease runs out. The duplicates are at most the attempts in flight and the
 * outcomes not yet committed: one job's worth.
 *
 * Every output is written into caller-owned structs, except where a
 * function says it allocates. */
#ifndef TAXD_STORE_WEBHOOK_DISPATCH_H
#define TAXD_STORE_WEBHOOK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/webhooks.h"

/* ---- leases */

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

/* ---- beginning attempts */

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

/* ---- outcomes */

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

/* ---- metrics */

/* Metrics: pending deliveries per subscription and deauthorized
 * subscriptions. each(subscription_id, pending, ctx). */
store_status_t store_wh_backlog_each(store_conn_t *conn,
                                     int (*each)(const char *id, int64_t pending, void *ctx),
                                     void *ctx, int64_t *deauthorized);

#endif
