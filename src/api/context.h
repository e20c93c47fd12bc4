/* context: everything the API's gateway and handlers use besides the request
 * itself: the store, the clock, the keys, the gateway's caches and limits, and
 * the ways back to the engines. app/ (the composition root) builds it and
 * hands it to the HTTP server as the dispatch callback's user pointer, so that
 * nothing in api/ reaches back into app/.
 *
 * app/ owns every object pointed to here, and all of them outlive the server;
 * the context is read-only once the server runs (the objects themselves are
 * thread-safe where they change: clock, caches, buckets, metrics). A handler
 * reaches it with api_ctx(req) (api/gateway.h). */
#ifndef TAXD_API_CONTEXT_H
#define TAXD_API_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "http/authfail.h"
#include "http/metrics.h"
#include "http/ratelimit.h"
#include "http/token.h"
#include "http/tokencache.h"
#include "store/store.h"

struct webhook_engine;

/* The token endpoint's throttle of failed secrets (api/oauth.c): this many
 * failures of one client id from one address within the window refuse that
 * pair until the window ends. The table holds this many pairs at most
 * (32 bytes each). */
#define API_AUTH_FAILURE_LIMIT 5
#define API_AUTH_FAILURE_WINDOW_MS 60000
#define API_AUTH_FAILURE_PAIRS 65536

/* The operator's settings as the gateway reads them on every authenticated
 * request: revoked credentials, deleted tenants and rate-limit rules. app/ answers from a
 * snapshot that trails the database by under a second, so no lookup waits for
 * the database. Each function is thread-safe and gets cls back. */
typedef struct api_settings {
    void *cls;
    bool (*is_revoked)(void *cls, const char *client_id);
    /* The tenant's rule, else the global default. */
    ratelimit_rule_t (*tenant_rule)(void *cls, const char *tenant_id);
    /* An endpoint's own rule for route_key ("METHOD /template"), for this
     * tenant or for every tenant; false when there is none. */
    bool (*route_rule)(void *cls, const char *tenant_id, const char *route_key,
                       ratelimit_rule_t *rule);
    /* The tenant was deleted (`taxd admin tenant delete`): its tokens are void. */
    bool (*is_tenant_deleted)(void *cls, const char *tenant_id);
} api_settings_t;

typedef struct api_context {
    store_t *store;
    taxd_clock_t *clock;                  /* every "now"; POST /_test/clock moves it */
    bool test_hooks;                      /* the test-only routes and headers are on */
    const char *base_url;                 /* what clients reach this service at (links) */

    const token_signer_t *signer;         /* signs and verifies bearer tokens */
    const crypto_hmac_key_t *secret_hasher; /* keyed hash of client secrets */
    const uint8_t *tin_key;               /* CRYPTO_AEAD_KEY_LEN bytes: seals TINs at rest */
    const crypto_hmac_key_t *links_key;   /* signs report download links */
    unsigned report_max_active;           /* reports pending or processing per tenant */
    const char *pdf_font;                 /* TrueType font of tax-form PDFs; NULL: the default */

    tokencache_t *tokens;                 /* tokens that verified */
    authfail_t *auth_failures;            /* failed secrets by (client id, address) */
    ratelimit_t *limiter;                 /* the buckets */
    api_settings_t settings;
    const char *const *route_labels;      /* "METHOD /template" by route index */
    metrics_t *metrics;                   /* GET /metrics, rate-limit rejects */

    /* New work was committed: the engines of this process start at once
     * (they would find it at their next poll anyway). */
    void (*wake)(void *cls);
    void *wake_cls;
    struct webhook_engine *webhooks;      /* its metrics; NULL without the engines */
} api_context_t;

#endif
