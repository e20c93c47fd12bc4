/* limits: applying the operator's policy to the buckets. See limits.h.
 *
 * Keys are "<tenant>\n<METHOD /template>" for the tenant bucket and
 * "<tenant>\n<METHOD /template>\nendpoint" for an endpoint's own bucket: an
 * endpoint limit set "for every tenant" gives every tenant its own bucket
 * under that rule, because one tenant must never exhaust another's quota. */
#include "http/limits.h"

#include <stdio.h>
#include <string.h>

#include "app/service.h"
#include "core/buf.h"
#include "core/clock.h"
#include "http/errors.h"

static const char *route_label(const request_t *req)
{
    return req->svc->route_labels[req->match.route->index];
}

static void record_headers(request_t *req, ratelimit_result_t r)
{
    req->limit_header = r.limit;
    req->remaining_header = r.remaining;
}

static bool refuse(request_t *req, ratelimit_result_t r, error_limit_kind_t kind,
                   metrics_limit_layer_t layer)
{
    char *seconds = arena_sprintf(req->arena, "%u", r.retry_after_s);
    if (seconds != NULL)
        reply_header(req, "Retry-After", seconds);
    metrics_count_limit_reject(req->svc->metrics, layer);
    reply_error_body(req, 429, error_body_rate_limited(kind, r.retry_after_s));
    return false;
}

/* Takes from the tenant bucket and then, when one is configured, from the
 * endpoint's bucket; returns the refusing layer's result through *refused. */
typedef enum { ADMITTED, REFUSED_TENANT, REFUSED_ENDPOINT } verdict_t;

static verdict_t take_tokens(request_t *req, ratelimit_result_t *refused)
{
    service_t *svc = req->svc;
    const char *tenant = req->claims.tenant_id;
    const char *label = route_label(req);
    int64_t now = clock_monotonic_ms();
    char key[TOKEN_ID_MAX + 320];
    buf_t b = buf_over(key, sizeof key);
    buf_puts(&b, tenant);
    buf_putc(&b, '\n');
    buf_puts(&b, label);

    ratelimit_rule_t rule = settings_tenant_rule(svc->settings, tenant);
    ratelimit_result_t tenant_r = ratelimit_take(svc->limiter, key, b.len, rule, now);
    record_headers(req, tenant_r);
    if (!tenant_r.allowed) {
        *refused = tenant_r;
        return REFUSED_TENANT;
    }
    if (!settings_route_rule(svc->settings, tenant, label, &rule))
        return ADMITTED;
    buf_puts(&b, "\nendpoint");
    ratelimit_result_t endpoint_r = ratelimit_take(svc->limiter, key, b.len, rule, now);
    if (endpoint_r.remaining < tenant_r.remaining || !endpoint_r.allowed)
        record_headers(req, endpoint_r);
    if (!endpoint_r.allowed) {
        *refused = endpoint_r;
        return REFUSED_ENDPOINT;
    }
    return ADMITTED;
}

bool limits_admit(request_t *req)
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

void limits_account(request_t *req)
{
    ratelimit_result_t ignored;
    take_tokens(req, &ignored);
}
