/* metrics: request counters by route template and status, a latency histogram
 * per route, and rate-limit rejections by layer, rendered as Prometheus text.
 * Updates are lock-free atomics, safe from every server thread. */
#ifndef TAXD_HTTP_METRICS_H
#define TAXD_HTTP_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef enum metrics_limit_layer {
    METRICS_LIMIT_TENANT = 0,   /* the tenant x route bucket */
    METRICS_LIMIT_ENDPOINT,     /* an endpoint's own limit */
    METRICS_LIMIT_NODE,         /* load shedding */
    METRICS_LIMIT_LAYERS
} metrics_limit_layer_t;

typedef struct metrics metrics_t;

/* route_labels[i] labels route index i (e.g. "GET /v1/filers/{filerId}");
 * the strings must outlive the metrics. Requests that matched no route are
 * counted under the label "unmatched". NULL on allocation failure. */
metrics_t *metrics_new(const char *const *route_labels, size_t route_count);
void metrics_free(metrics_t *m);

/* route_index SIZE_MAX: unmatched. status 100..599. */
void metrics_observe_request(metrics_t *m, size_t route_index, int status, int64_t latency_us);
void metrics_count_limit_reject(metrics_t *m, metrics_limit_layer_t layer);

/* Renders every series as Prometheus text exposition (version 0.0.4):
 *   taxd_http_requests_total{route="...",status="200"} N
 *   taxd_http_request_duration_seconds_bucket{route="...",le="0.005"} N ... _sum, _count
 *   taxd_ratelimit_rejections_total{layer="tenant|endpoint|node"} N
 * Only non-zero request series are written. Returns a malloc'd string. */
char *metrics_render(metrics_t *m);

#endif
