/* service: building and tearing down the service context, the settings
 * refresher thread, and the API's view of the service. See service.h. */
#include "app/service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/api.h"
#include "app/workers.h"
#include "store/keyprints.h"
#include "store/ratebuckets.h"
#include "webhooks/vault.h"
#include "webhooks/engine.h"
#include "core/clock.h"
#include "core/keys.h"
#include "core/log.h"

#define REFRESH_INTERVAL_MS 200 /* operator changes must apply within 1 s */
#define LIMITER_CAPACITY 65536
#define TOKEN_CACHE_SLOTS 4096 /* about 4 MiB */

static char *dup_message(const char *prefix, const char *detail)
{
    size_t n = strlen(prefix) + strlen(detail) + 3;
    char *m = malloc(n);
    if (m != NULL)
        snprintf(m, n, "%s: %s", prefix, detail);
    return m;
}

/* The key called name must be the one every node of this database holds:
 * the first node records a one-way fingerprint of it (HMAC of a fixed text
 * under the key: it reveals nothing of the key), and a node started with
 * another key file is refused before it seals or signs anything the others
 * could not read. */
static int check_keyprint(service_t *svc, const char *name, const uint8_t key[KEYS_KEY_LEN],
                          char **err)
{
    static const char LABEL[] = "taxd key fingerprint v1";
    uint8_t mac[CRYPTO_SHA256_LEN];
    char hex[STORE_KEYPRINT_MAX];
    if (crypto_hmac_sha256(key, KEYS_KEY_LEN, LABEL, sizeof LABEL - 1, mac) != 0) {
        *err = dup_message("keys", "cannot fingerprint a key");
        return -1;
    }
    crypto_hex_encode(mac, sizeof mac, hex);
    store_conn_t *conn = store_acquire(svc->store);
    bool same = false;
    store_status_t st = conn == NULL ? STORE_UNAVAILABLE
                                     : store_keyprint_check(conn, name, hex,
                                                            clock_now_ms(&svc->clock), &same);
    store_release(svc->store, conn);
    if (st != STORE_OK) {
        *err = dup_message("cannot check the key files against the database",
                           store_status_name(st));
        return -1;
    }
    if (!same) {
        char *path = keys_path(svc->key_base, name);
        char why[512];
        snprintf(why, sizeof why,
                 "%s is not the key the other nodes of this database use (its fingerprint"
                 " differs): give every node the same key files",
                 path != NULL ? path : name);
        free(path);
        *err = dup_message("refusing to start", why);
        return -1;
    }
    return 0;
}

static int check_keyprints(service_t *svc, const uint8_t secret[KEYS_KEY_LEN],
                           const uint8_t links[KEYS_KEY_LEN], char **err)
{
    uint8_t webhook[KEYS_KEY_LEN];
    if (webhook_vault_key_load(svc->key_base, webhook, err) != 0)
        return -1;
    int rc = check_keyprint(svc, "secret", secret, err) == 0 &&
                     check_keyprint(svc, "tin", svc->tin_key, err) == 0 &&
                     check_keyprint(svc, "links", links, err) == 0 &&
                     check_keyprint(svc, "webhook", webhook, err) == 0
                 ? 0
                 : -1;
    memset(webhook, 0, sizeof webhook);
    return rc;
}

static int open_keys(service_t *svc, char **err)
{
    char *ring_path = keys_path(svc->key_base, "token");
    char *secret_path = keys_path(svc->key_base, "secret");
    char *tin_path = keys_path(svc->key_base, "tin");
    char *links_path = keys_path(svc->key_base, "links");
    int rc = -1;
    keys_ring_t ring;
    uint8_t secret_key[KEYS_KEY_LEN], links_key[KEYS_KEY_LEN];
    if (ring_path == NULL || secret_path == NULL || tin_path == NULL || links_path == NULL) {
        *err = dup_message("keys", "out of memory");
        goto out;
    }
    if (keys_ring_load_or_create(ring_path, &ring, err) != 0)
        goto out;
    if (keys_load_or_create(secret_path, secret_key, err) != 0)
        goto out;
    if (keys_load_or_create(tin_path, svc->tin_key, err) != 0)
        goto out;
    if (keys_load_or_create(links_path, links_key, err) != 0)
        goto out;
    if (check_keyprints(svc, secret_key, links_key, err) != 0)
        goto out;
    svc->signer = token_signer_new(&ring);
    svc->secret_hasher = crypto_hmac_key_new(secret_key, sizeof secret_key);
    svc->links_key = crypto_hmac_key_new(links_key, sizeof links_key);
    if (svc->signer == NULL || svc->secret_hasher == NULL || svc->links_key == NULL) {
        *err = dup_message("keys", "cannot prepare signing keys");
        goto out;
    }
    rc = 0;
out:
    memset(&ring, 0, sizeof ring);
    memset(secret_key, 0, sizeof secret_key);
    memset(links_key, 0, sizeof links_key);
    free(ring_path);
    free(secret_path);
    free(tin_path);
    free(links_path);
    return rc;
}

/* Labels are "METHOD /template", one per route index: the keys of rate
 * limits and metrics and the route of the access log. Every route must have
 * one (the server and the gateway index them without a check), so a label
 * that cannot be made stops the start. service_close frees what was made. */
static int build_route_labels(service_t *svc, const route_t *routes, size_t count, char **err)
{
    const char **labels = calloc(count, sizeof *labels);
    if (labels == NULL) {
        *err = dup_message("route table", "out of memory for the route labels");
        return -1;
    }
    svc->route_labels = labels;
    svc->route_count = count;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(routes[i].method) + strlen(routes[i].path) + 2;
        char *label = malloc(n);
        if (label == NULL) {
            *err = dup_message("route table", "out of memory for a route label");
            return -1;
        }
        snprintf(label, n, "%s %s", routes[i].method, routes[i].path);
        labels[i] = label;
    }
    return 0;
}

/* ---- rate limits across nodes (docs/decisions.md, "Rate limits across nodes")
 *
 * The limiter (http/ratelimit.h) leases its tokens from the database's shared
 * buckets when several processes may serve one database: always on
 * PostgreSQL, on SQLite only when asked (--rate-limits shared: several
 * processes on one file). A single SQLite process keeps the local buckets. */

#define SHARED_BUCKET_WAIT_MS 250 /* a lease never holds a request longer */

bool service_shares_limits(const service_t *svc)
{
    if (strcmp(svc->cfg.rate_limits, "local") == 0)
        return false;
    return strcmp(svc->cfg.rate_limits, "shared") == 0 || store_is_pg(svc->store);
}

/* ratelimit_source_fn over store_rate_take. The time is the service clock
 * (wall time, the same on every node), not the request's monotonic one; the
 * key gets a prefix of its own so other users of rate_buckets never meet it. */
static int shared_bucket_take(void *cls, const char *key, size_t key_len, ratelimit_rule_t rule,
                              uint32_t want, ratelimit_lease_t *lease)
{
    service_t *svc = cls;
    char shared_key[STORE_RATE_KEY_MAX];
    int n = snprintf(shared_key, sizeof shared_key, "api\n%.*s", (int)key_len, key);
    if (n < 0 || (size_t)n >= sizeof shared_key)
        return -1;
    store_conn_t *conn = store_acquire(svc->store);
    if (conn == NULL)
        return -1;
    store_set_deadline(conn, clock_monotonic_ms() + SHARED_BUCKET_WAIT_MS);
    store_status_t st = store_rate_take(conn, shared_key, rule.rate, rule.burst,
                                        clock_now_ms(&svc->clock), want, &lease->granted,
                                        &lease->shared_milli);
    store_release(svc->store, conn);
    return st == STORE_OK ? 0 : -1;
}

static int build_http_parts(service_t *svc, char **err)
{
    size_t count = 0;
    const route_t *routes = api_routes(svc->cfg.test_hooks, &count);
    svc->router = router_new(routes, count);
    if (svc->router == NULL) {
        *err = dup_message("router", "invalid route table");
        return -1;
    }
    if (build_route_labels(svc, routes, count, err) != 0)
        return -1;
    svc->metrics = metrics_new(svc->route_labels, count);
    svc->limiter = ratelimit_new(LIMITER_CAPACITY);
    svc->tokens = tokencache_new(TOKEN_CACHE_SLOTS);
    svc->auth_failures = authfail_new(API_AUTH_FAILURE_PAIRS, API_AUTH_FAILURE_LIMIT,
                                      API_AUTH_FAILURE_WINDOW_MS);
    ratelimit_rule_t global = {svc->cfg.default_rate, svc->cfg.default_burst};
    svc->settings = settings_new(global);
    ratelimit_rule_t trigger = {svc->cfg.report_trigger_rate, svc->cfg.report_trigger_burst};
    if (svc->metrics == NULL || svc->limiter == NULL || svc->settings == NULL ||
        svc->tokens == NULL || svc->auth_failures == NULL ||
        settings_set_route_default(svc->settings, API_REPORTS_TRIGGER_ROUTE, trigger) != 0 ||
        settings_set_route_default(svc->settings, API_REPORTS_GAINS_TRIGGER_ROUTE, trigger) != 0) {
        *err = dup_message("service", "out of memory");
        return -1;
    }
    return 0;
}

int service_open(service_t *svc, const taxd_config_t *cfg, char **err)
{
    memset(svc, 0, sizeof *svc);
    svc->cfg = *cfg;
    *err = NULL;
    uint8_t instance[6];
    if (crypto_random_bytes(instance, sizeof instance) != 0) {
        *err = dup_message("service", "no random source");
        return -1;
    }
    crypto_hex_encode(instance, sizeof instance, svc->instance_id);
    char why[256];
    if (config_key_base(cfg, svc->key_base, sizeof svc->key_base, why, sizeof why) != 0) {
        *err = dup_message("keys", why);
        return -1;
    }
    if (cfg->key_dir[0] != '\0' && mkdir(cfg->key_dir, 0700) != 0 && errno != EEXIST) {
        *err = dup_message("cannot create the key directory", strerror(errno));
        return -1;
    }
    store_open_options_t options = {.fail_migration = cfg->test_hooks && cfg->test_fail_migration};
    svc->store = store_open_with(cfg->db_path, &options, err);
    if (svc->store == NULL)
        return -1;
    if (open_keys(svc, err) != 0 || build_http_parts(svc, err) != 0) {
        service_close(svc);
        return -1;
    }
    if (service_shares_limits(svc))
        ratelimit_set_source(svc->limiter, shared_bucket_take, svc);
    return 0;
}

static void refresh_once(service_t *svc)
{
    store_conn_t *conn = store_acquire(svc->store);
    if (conn == NULL)
        return;
    store_status_t rc = settings_refresh(svc->settings, conn);
    store_release(svc->store, conn);
    if (rc != STORE_OK)
        log_msg(LOG_WARN, "settings refresh failed: %s", store_status_name(rc));
}

static void *refresher_main(void *arg)
{
    service_t *svc = arg;
    while (!atomic_load(&svc->stopping)) {
        clock_sleep_ms(REFRESH_INTERVAL_MS);
        refresh_once(svc);
    }
    return NULL;
}

int service_start(service_t *svc, char **err)
{
    refresh_once(svc); /* the first snapshot before any request */
    if (pthread_create(&svc->refresher, NULL, refresher_main, svc) != 0) {
        *err = dup_message("service", "cannot start the settings refresher");
        return -1;
    }
    svc->refresher_running = true;
    return 0;
}

void service_close(service_t *svc)
{
    atomic_store(&svc->stopping, true);
    if (svc->refresher_running)
        pthread_join(svc->refresher, NULL);
    svc->refresher_running = false;
    webhook_engine_free(svc->webhooks); /* after workers_stop: its threads are gone */
    settings_free(svc->settings);
    ratelimit_free(svc->limiter);
    tokencache_free(svc->tokens);
    authfail_free(svc->auth_failures);
    metrics_free(svc->metrics);
    for (size_t i = 0; svc->route_labels != NULL && i < svc->route_count; i++)
        free((char *)svc->route_labels[i]);
    free(svc->route_labels);
    router_free(svc->router);
    crypto_hmac_key_free(svc->secret_hasher);
    crypto_hmac_key_free(svc->links_key);
    token_signer_free(svc->signer);
    if (svc->store != NULL)
        store_close(svc->store);
    memset(svc, 0, sizeof *svc);
}

int service_hash_secret(const service_t *svc, const char *secret, uint8_t out[32])
{
    return crypto_hmac_key_sign(svc->secret_hasher, secret, strlen(secret), out);
}

void service_wake_workers(service_t *svc)
{
    workers_wake(svc->workers);
    webhook_engine_wake(svc->webhooks);
}

/* ---- the API's view (api/context.h) ------------------------------------ */

static bool settings_revoked_cb(void *settings, const char *client_id)
{
    return settings_is_revoked(settings, client_id);
}

static bool settings_tenant_deleted_cb(void *settings, const char *tenant_id)
{
    return settings_is_tenant_deleted(settings, tenant_id);
}

static ratelimit_rule_t settings_tenant_rule_cb(void *settings, const char *tenant_id)
{
    return settings_tenant_rule(settings, tenant_id);
}

static bool settings_route_rule_cb(void *settings, const char *tenant_id, const char *route_key,
                                   ratelimit_rule_t *rule)
{
    return settings_route_rule(settings, tenant_id, route_key, rule);
}

static void wake_cb(void *svc)
{
    service_wake_workers(svc);
}

void service_api_context(service_t *svc, api_context_t *api)
{
    *api = (api_context_t){
        .store = svc->store,
        .clock = &svc->clock,
        .test_hooks = svc->cfg.test_hooks,
        .base_url = svc->cfg.base_url,
        .signer = svc->signer,
        .secret_hasher = svc->secret_hasher,
        .tin_key = svc->tin_key,
        .links_key = svc->links_key,
        .report_max_active = svc->cfg.report_max_active,
        .pdf_font = svc->cfg.pdf_font,
        .tokens = svc->tokens,
        .auth_failures = svc->auth_failures,
        .limiter = svc->limiter,
        .settings = {svc->settings, settings_revoked_cb, settings_tenant_rule_cb,
                     settings_route_rule_cb, settings_tenant_deleted_cb},
        .route_labels = svc->route_labels,
        .metrics = svc->metrics,
        .wake = wake_cb,
        .wake_cls = svc,
        .webhooks = svc->webhooks,
    };
}
