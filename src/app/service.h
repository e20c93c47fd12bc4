/* service: the configured service context of app/, the composition root
 * (no globals). It owns the store, the keys, the router and its route labels,
 * the rate limiter, the token cache, the metrics and the operator-settings
 * snapshot, and runs the background refresher that keeps that snapshot
 * current. The HTTP server, the API and the engines never see it: each is
 * handed a narrow view of it (service_api_context, ...). `taxd serve`,
 * `taxd worker` and `taxd admin` each build one. */
#ifndef TAXD_APP_SERVICE_H
#define TAXD_APP_SERVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/context.h"
#include "app/settings.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/crypto.h"
#include "http/metrics.h"
#include "http/ratelimit.h"
#include "http/router.h"
#include "http/token.h"
#include "http/tokencache.h"
#include "store/store.h"

typedef struct service {
    taxd_config_t cfg;
    taxd_clock_t clock;
    store_t *store;
    token_signer_t *signer;
    tokencache_t *tokens;             /* tokens that verified */
    authfail_t *auth_failures;        /* the token endpoint's failed secrets */
    crypto_hmac_key_t *secret_hasher; /* keyed hash of client secrets */
    uint8_t tin_key[CRYPTO_AEAD_KEY_LEN]; /* seals TINs at rest (core/tin.h) */
    crypto_hmac_key_t *links_key;     /* signs report download links (reports/links.h) */
    router_t *router;
    ratelimit_t *limiter;
    metrics_t *metrics;
    settings_t *settings;
    const char **route_labels;   /* "METHOD /template" per route index, owned */
    size_t route_count;

    char key_base[4200];         /* key files are named from it (core/keys.h keys_path) */
    char instance_id[16];        /* random per process: prefix of request ids, lease owners */
    _Atomic bool stopping;       /* background threads exit */
    pthread_t refresher;
    bool refresher_running;
    struct workers *workers;     /* background engines of this process; NULL if none */
    struct webhook_engine *webhooks; /* the webhook dispatcher (with the engines); NULL if none */
} service_t;

/* Opens the database (migrations), loads or creates the key files beside it
 * and builds the router, its route labels, the limiter and the metrics.
 * Returns 0, or -1 with *err malloc'd (the caller frees it) saying what
 * failed; svc is then closed already. */
int service_open(service_t *svc, const taxd_config_t *cfg, char **err);
/* Starts the settings refresher (call after service_open, before serving). */
int service_start(service_t *svc, char **err);
/* Stops background threads and releases everything service_open made. */
void service_close(service_t *svc);
/* True when this process leases its rate limits from the database's shared
 * buckets (PostgreSQL, or --rate-limits shared) rather than limiting alone. */
bool service_shares_limits(const service_t *svc);

/* HMAC-SHA256 of a client secret under the server's secret-hashing key. */
int service_hash_secret(const service_t *svc, const char *secret, uint8_t out[32]);

/* Wakes this process's engines (new work was committed); no-op without them. */
void service_wake_workers(service_t *svc);

/* Fills *api with the API's view of the service: pointers into svc (valid
 * until service_close) and the settings and wake functions over it. Call it
 * once the engines run (or will not run), since it takes svc->webhooks. */
void service_api_context(service_t *svc, api_context_t *api);

#endif
