/* gateway: authentication, scopes and rate limits, then the handler. See
 * gateway.h.
 *
 * Authentication (spec § Authentication 3-4) has two distinct 401 messages:
 * the header's syntax is judged first ("Invalid authorization header"), then
 * the token itself ("Invalid token"). A revoked credential's tokens, and a
 * deleted tenant's, are refused from the operator's settings snapshot (after
 * the token cache, which remembers only signatures and claims), so
 * verification never waits for the database.
 *
 * Rate limits (spec § Limits): each authenticated request takes a token from
 * its tenant x method x route bucket and then, when the operator set one, from
 * the endpoint's own bucket; the x-ratelimit-* headers report the tighter of
 * the two. Keys are "<tenant>\n<METHOD /template>" for the tenant bucket and
 * "<tenant>\n<METHOD /template>\nendpoint" for an endpoint's own bucket: an
 * endpoint limit set "for every tenant" gives every tenant its own bucket
 * under that rule, because one tenant must never exhaust another's quota.
 *
 * Account-owner tokens (claim aoi, issue 19 item 1) reach only routes flagged
 * ROUTE_OWNER, and on a route with {accountOwnerId} only when that id resolves,
 * in the token's tenant, to the token's owner; anything else is the same 403
 * as a scope deny. The flag is judged with the scopes, before the limits; the
 * path's owner after them, since it needs the database. Their buckets carry
 * the owner: "<tenant>\n<owner uuid>\n<METHOD /template>" (same rule values),
 * so one browser cannot drain its tenant's quota. */
#include "api/gateway.h"

#include <string.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/clock.h"
#include "http/errors.h"
#include "store/owners.h"

/* ---- authentication --------------------------------------------------- */

/* A cached token is one that verified before; only its time rules can have
 * changed since (the clock moves, and the test clock can move back before an
 * nbf), so they are checked again on every hit, by the same rule as a miss. */
static bool verify_token(const api_context_t *ctx, const char *token, size_t len,
                         token_claims_t *claims)
{
    int64_t now = clock_now_ms(ctx->clock) / 1000;
    if (tokencache_get(ctx->tokens, token, len, claims))
        return token_check_times(claims, now) == TOKEN_OK;
    if (token_verify(ctx->signer, token, len, now, claims) != TOKEN_OK)
        return false;
    tokencache_put(ctx->tokens, token, len, claims);
    return true;
}

/* For a route that needs a token: checks the authorization header and the
 * token (signature, key, expiry, revocation) and fills req->claims. Returns
 * true to go on; on failure it has answered 401. A route that needs no token
 * passes untouched. */
static bool authenticate(const api_context_t *ctx, request_t *req)
{
    if (req->match.route->scopes == 0)
        return true;
    const char *token = NULL;
    size_t token_len = 0;
    if (!token_parse_bearer(request_header(req, "authorization"), &token, &token_len)) {
        reply_error(req, 401, "Invalid authorization header");
        return false;
    }
    if (!verify_token(ctx, token, token_len, &req->claims) ||
        ctx->settings.is_revoked(ctx->settings.cls, req->claims.client_id) ||
        ctx->settings.is_tenant_deleted(ctx->settings.cls, req->claims.tenant_id)) {
        reply_error(req, 401, "Invalid token");
        return false;
    }
    req->authenticated = true;
    return true;
}

/* True when the verified token's scopes cover the route (a credential without
 * scopes covers every route). */
static bool scope_allows(const request_t *req)
{
    unsigned granted = req->claims.scopes;
    return granted == 0 || (granted & req->match.route->scopes) != 0;
}

/* ---- account-owner tokens --------------------------------------------- */

static bool is_owner_token(const request_t *req)
{
    return req->claims.owner_uuid[0] != '\0';
}

/* True unless an owner token calls a route not flagged for owners, or a
 * tenant token calls a route whose owner only a token can name. */
static bool owner_flag_allows(const request_t *req)
{
    unsigned flags = req->match.route->flags;
    if (!is_owner_token(req))
        return (flags & ROUTE_OWNER_ONLY) == 0;
    return (flags & ROUTE_OWNER) != 0;
}

/* For an owner token on a route with {accountOwnerId}: true when the id
 * resolves in the tenant to the token's owner. An unknown id is not that
 * owner. False after answering (403 deny, or 5xx from the store). */
static bool owner_path_allows(request_t *req)
{
    const char *id = router_param(&req->match, "accountOwnerId");
    if (!is_owner_token(req) || id == NULL)
        return true;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return false;
    char uuid[STORE_UUID_LEN];
    store_status_t rc = store_owner_uuid(db, req->claims.tenant_id, id, uuid);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        reply_store_failure(req, rc);
        return false;
    }
    if (rc == STORE_OK && strcmp(uuid, req->claims.owner_uuid) == 0)
        return true;
    reply_error_body(req, 403, error_body_gateway_deny());
    return false;
}

/* ---- rate limits ------------------------------------------------------ */

static void record_headers(api_exchange_t *x, ratelimit_result_t r)
{
    x->limit_header = r.limit;
    x->remaining_header = r.remaining;
}

static bool refuse(request_t *req, ratelimit_result_t r, error_limit_kind_t kind,
                   metrics_limit_layer_t layer)
{
    char *seconds = arena_sprintf(req->arena, "%u", r.retry_after_s);
    if (seconds != NULL)
        reply_header(req, "Retry-After", seconds);
    metrics_count_limit_reject(api_ctx(req)->metrics, layer);
    reply_error_body(req, 429, error_body_rate_limited(kind, r.retry_after_s));
    return false;
}

typedef enum { ADMITTED, REFUSED_TENANT, REFUSED_ENDPOINT } verdict_t;

/* Takes from the tenant bucket and then, when one is configured, from the
 * endpoint's bucket; returns the refusing layer's result through *refused. */
static verdict_t take_tokens(request_t *req, ratelimit_result_t *refused)
{
    api_exchange_t *x = req->app;
    const api_context_t *ctx = x->ctx;
    const api_settings_t *settings = &ctx->settings;
    const char *tenant = req->claims.tenant_id;
    const char *label = ctx->route_labels[req->match.route->index];
    int64_t now = clock_monotonic_ms();
    char key[TOKEN_ID_MAX + IDS_UUID_LEN + 320];
    buf_t b = buf_over(key, sizeof key);
    buf_puts(&b, tenant);
    buf_putc(&b, '\n');
    if (is_owner_token(req)) {
        buf_puts(&b, req->claims.owner_uuid);
        buf_putc(&b, '\n');
    }
    buf_puts(&b, label);

    ratelimit_rule_t rule = settings->tenant_rule(settings->cls, tenant);
    ratelimit_result_t tenant_r = ratelimit_take(ctx->limiter, key, b.len, rule, now);
    record_headers(x, tenant_r);
    if (!tenant_r.allowed) {
        *refused = tenant_r;
        return REFUSED_TENANT;
    }
    if (!settings->route_rule(settings->cls, tenant, label, &rule))
        return ADMITTED;
    buf_puts(&b, "\nendpoint");
    ratelimit_result_t endpoint_r = ratelimit_take(ctx->limiter, key, b.len, rule, now);
    if (endpoint_r.remaining < tenant_r.remaining || !endpoint_r.allowed)
        record_headers(x, endpoint_r);
    if (!endpoint_r.allowed) {
        *refused = endpoint_r;
        return REFUSED_ENDPOINT;
    }
    return ADMITTED;
}

/* Returns true when the request may go on. On refusal it has answered 429
 * with the body of the layer that refused and Retry-After. */
static bool limits_admit(request_t *req)
{
    ratelimit_result_t refused;
    switch (take_tokens(req, &refused)) {
    case REFUSED_TENANT:
        return refuse(req, refused, ERROR_LIMIT_TENANT, METRICS_LIMIT_TENANT);
    case REFUSED_ENDPOINT:
        return refuse(req, refused, ERROR_LIMIT_ENDPOINT, METRICS_LIMIT_ENDPOINT);
    default:
        return true;
    }
}

/* ---- the phases ------------------------------------------------------- */

static void run_phases(api_context_t *ctx, request_t *req)
{
    if (!authenticate(ctx, req))
        return;
    if (req->authenticated && (!scope_allows(req) || !owner_flag_allows(req))) {
        /* Counted against its bucket so the headers that follow a verified
         * token stay truthful; the 403 wins over a 429. */
        ratelimit_result_t ignored;
        take_tokens(req, &ignored);
        reply_error_body(req, 403, error_body_gateway_deny());
        return;
    }
    if (req->authenticated && !limits_admit(req))
        return;
    if (req->authenticated && !owner_path_allows(req))
        return;
    api_handler_fn handler = (api_handler_fn)req->match.route->handler;
    handler(req);
}

void api_gateway_dispatch(void *user, request_t *req)
{
    api_exchange_t x = {.ctx = user};
    req->app = &x;
    run_phases(x.ctx, req);
    /* The handler is done with the database: the connection goes back to
     * the pool before the answer is sent (a streamed download's reader has
     * its own). */
    if (x.db != NULL)
        store_release(x.ctx->store, x.db);
    req->app = NULL;
    if (req->authenticated) {
        reply_header_u64(req, "x-ratelimit-limit", x.limit_header);
        reply_header_u64(req, "x-ratelimit-remaining", x.remaining_header);
    }
}

/* ---- what handlers reach through the gateway -------------------------- */

store_conn_t *api_request_db(request_t *req)
{
    api_exchange_t *x = req->app;
    if (x->db == NULL) {
        x->db = store_acquire(x->ctx->store);
        if (x->db != NULL)
            store_set_deadline(x->db, req->deadline_ms);
    }
    return x->db;
}

int64_t api_now_ms(const request_t *req)
{
    return clock_now_ms(api_ctx(req)->clock);
}

int64_t api_now_s(const request_t *req)
{
    return api_now_ms(req) / 1000;
}

void api_wake_engines(const request_t *req)
{
    const api_context_t *ctx = api_ctx(req);
    ctx->wake(ctx->wake_cls);
}
