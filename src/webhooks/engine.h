/* webhooks/engine: the webhook dispatcher, a background engine
 * (app/workers.h). Each dispatcher thread owns one libcurl multi handle and
 * the subscriptions it leases in the database; it begins due attempts,
 * signs and POSTs them over reused HTTPS/1.1 connections, and records each
 * outcome: delivered, retried later, failed (attempts or window exhausted),
 * or held (the endpoint answered 401, 403 or 407 and the subscription was
 * deauthorized). Design and trade-offs are at the top of engine.c.
 *
 * Threading: webhook_engine_step(e, i) is called by thread i only;
 * webhook_engine_wake may be called from any thread. */
#ifndef TAXD_WEBHOOKS_ENGINE_H
#define TAXD_WEBHOOKS_ENGINE_H

#include <stdint.h>

#include "core/clock.h"
#include "store/store.h"

typedef struct webhook_engine webhook_engine_t;

typedef struct webhook_engine_config {
    store_t *store;              /* borrowed; outlives the engine */
    const taxd_clock_t *clock;   /* borrowed; NULL: the real clock */
    const char *key_base;        /* the key file "webhook" is named from it (keys_path) */
    const char *ca_file;         /* NULL or "": the system's trust store */
    const char *egress_address;  /* NULL or "": any source address */
    const char *proxy;           /* NULL or "": none, whatever the environment says;
                                  * set only by tests (--webhook-test-proxy) */
    const char *instance_id;     /* names this process in lease owners */
    unsigned threads;            /* dispatchers (one thread each), >= 1 */
} webhook_engine_config_t;

/* libcurl's global initialisation: call once from main() before any thread
 * starts (and before any admin command that validates URLs), and the
 * cleanup once at exit. 0 or -1. */
int webhook_global_init(void);
void webhook_global_cleanup(void);

/* A new engine (loads or creates the webhook key file). NULL with *err
 * malloc'd on failure. */
webhook_engine_t *webhook_engine_new(const webhook_engine_config_t *cfg, char **err);

/* One step of dispatcher thread_index: records finished attempts, renews
 * leases, begins due attempts, and waits for network activity. Returns how
 * long the worker may sleep before the next step (0: go on at once). */
int64_t webhook_engine_step(webhook_engine_t *e, unsigned thread_index);

/* New deliveries were committed in this process: every dispatcher looks for
 * work at once, even while it waits on the network. Thread-safe; NULL is a
 * no-op. */
void webhook_engine_wake(webhook_engine_t *e);

/* Call after the dispatcher threads stopped: lets running attempts finish
 * (at most a couple of seconds), records their outcomes, releases the
 * leases and frees everything. NULL is a no-op. */
void webhook_engine_free(webhook_engine_t *e);

/* Prometheus text for the webhook series (malloc'd, the caller frees; NULL
 * on failure):
 *   taxd_webhook_deliveries_total{outcome="delivered|retry|failed|held"}
 *   taxd_webhook_attempt_duration_seconds_bucket{le=...}, _sum, _count
 *   taxd_webhook_backlog{subscription="..."}   pending deliveries
 *   taxd_webhook_deauthorized_subscriptions */
char *webhook_engine_metrics(webhook_engine_t *e);

#endif
