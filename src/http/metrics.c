/* metrics: request counters and latency histograms per route template, and
 * rate-limit rejections per layer, rendered as Prometheus text.
 *
 * Design. Every series is a preallocated relaxed atomic counter: a request
 * costs three atomic adds (status, latency bucket, latency sum) and no lock,
 * whichever thread serves it. Counters are indexed by the route's position in
 * the router table (one extra slot for "unmatched"), never by the raw path, so
 * the number of series is fixed at start and a client cannot inflate it. A
 * route x 500-status array of 64-bit counters is 4 KB per route: less than a
 * hash map of live statuses would cost in code, and lookups are one index.
 *
 * Histogram. Buckets are stored non-cumulatively (one increment per request)
 * and made cumulative when rendered; _count is the +Inf bucket as rendered,
 * so a scrape always satisfies count == +Inf even while requests race with
 * it. Latency is kept in integer microseconds; bucket bounds are microsecond
 * integers whose "le" labels are written as fixed strings, and the sum is
 * formatted "S.UUUUUU" from the integer, so no floating point is involved.
 *
 * Rendering takes relaxed loads one counter at a time: a scrape is not a
 * snapshot across series, which Prometheus does not require.
 *
 * Out-of-range input is a caller bug, handled without crashing: a status
 * outside 100..599 is not counted, a route index past the table counts as
 * unmatched, and a negative latency counts as zero.
 */
#include "http/metrics.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dbuf.h"

#define METRICS_STATUS_MIN 100
#define METRICS_STATUS_COUNT 500
#define METRICS_BUCKETS 14 /* 13 finite bounds and +Inf */

static const int64_t metrics_bucket_us[METRICS_BUCKETS - 1] = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
    10000000,
};

static const char *const metrics_bucket_le[METRICS_BUCKETS] = {
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf",
};

static const char *const metrics_layer_names[METRICS_LIMIT_LAYERS] = {
    "tenant",
    "endpoint",
    "node",
};

typedef struct metrics_route {
    _Atomic uint64_t status[METRICS_STATUS_COUNT];
    _Atomic uint64_t buckets[METRICS_BUCKETS]; /* non-cumulative */
    _Atomic uint64_t sum_us;
} metrics_route_t;

struct metrics {
    const char **labels;     /* route_count + 1 pointers, the last "unmatched"; owned array */
    size_t route_count;      /* matched routes; routes[route_count] is unmatched */
    metrics_route_t *routes; /* route_count + 1 */
    _Atomic uint64_t rejections[METRICS_LIMIT_LAYERS];
};

metrics_t *metrics_new(const char *const *route_labels, size_t route_count)
{
    if (route_count >= SIZE_MAX / sizeof(metrics_route_t) - 1)
        return NULL;
    metrics_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->labels = calloc(route_count + 1, sizeof *m->labels);
    m->routes = calloc(route_count + 1, sizeof *m->routes);
    if (m->labels == NULL || m->routes == NULL) {
        metrics_free(m);
        return NULL;
    }
    for (size_t i = 0; i < route_count; i++)
        m->labels[i] = route_labels[i];
    m->labels[route_count] = "unmatched";
    m->route_count = route_count;
    for (size_t i = 0; i < METRICS_LIMIT_LAYERS; i++)
        atomic_init(&m->rejections[i], 0);
    return m;
}

void metrics_free(metrics_t *m)
{
    if (m == NULL)
        return;
    free(m->labels);
    free(m->routes);
    free(m);
}

static size_t metrics_bucket_of(int64_t latency_us)
{
    size_t i = 0;
    while (i < METRICS_BUCKETS - 1 && latency_us > metrics_bucket_us[i])
        i++;
    return i;
}

void metrics_observe_request(metrics_t *m, size_t route_index, int status, int64_t latency_us)
{
    if (status < METRICS_STATUS_MIN || status >= METRICS_STATUS_MIN + METRICS_STATUS_COUNT)
        return;
    if (route_index >= m->route_count)
        route_index = m->route_count;
    if (latency_us < 0)
        latency_us = 0;
    metrics_route_t *r = &m->routes[route_index];
    atomic_fetch_add_explicit(&r->status[status - METRICS_STATUS_MIN], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->buckets[metrics_bucket_of(latency_us)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&r->sum_us, (uint64_t)latency_us, memory_order_relaxed);
}

void metrics_count_limit_reject(metrics_t *m, metrics_limit_layer_t layer)
{
    if ((unsigned)layer >= METRICS_LIMIT_LAYERS)
        return;
    atomic_fetch_add_explicit(&m->rejections[layer], 1, memory_order_relaxed);
}

/* ---- rendering ---- */

/* Writes a label value escaped as the exposition format requires. */
static void metrics_buf_label(dbuf_t *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            dbuf_puts(b, "\\\\");
        else if (*s == '"')
            dbuf_puts(b, "\\\"");
        else if (*s == '\n')
            dbuf_puts(b, "\\n");
        else
            dbuf_put(b, s, 1);
    }
}

/* Writes `name{route="<label>"` (without the closing brace). */
static void metrics_buf_route_series(dbuf_t *b, const char *name, const char *label)
{
    dbuf_puts(b, name);
    dbuf_puts(b, "{route=\"");
    metrics_buf_label(b, label);
    dbuf_puts(b, "\"");
}

static void metrics_render_requests(metrics_t *m, dbuf_t *b)
{
    dbuf_puts(b, "# HELP taxd_http_requests_total HTTP requests by route template and "
                 "status.\n# TYPE taxd_http_requests_total counter\n");
    for (size_t i = 0; i <= m->route_count; i++) {
        for (int s = 0; s < METRICS_STATUS_COUNT; s++) {
            uint64_t n = atomic_load_explicit(&m->routes[i].status[s], memory_order_relaxed);
            if (n == 0)
                continue;
            metrics_buf_route_series(b, "taxd_http_requests_total", m->labels[i]);
            dbuf_printf(b, ",status=\"%d\"} %" PRIu64 "\n", s + METRICS_STATUS_MIN, n);
        }
    }
}

static void metrics_render_route_histogram(metrics_t *m, size_t i, dbuf_t *b)
{
    const metrics_route_t *r = &m->routes[i];
    uint64_t cumulative[METRICS_BUCKETS];
    uint64_t total = 0;
    for (size_t k = 0; k < METRICS_BUCKETS; k++) {
        total += atomic_load_explicit(&r->buckets[k], memory_order_relaxed);
        cumulative[k] = total;
    }
    if (total == 0)
        return;
    for (size_t k = 0; k < METRICS_BUCKETS; k++) {
        metrics_buf_route_series(b, "taxd_http_request_duration_seconds_bucket", m->labels[i]);
        dbuf_printf(b, ",le=\"%s\"} %" PRIu64 "\n", metrics_bucket_le[k], cumulative[k]);
    }
    uint64_t sum_us = atomic_load_explicit(&r->sum_us, memory_order_relaxed);
    metrics_buf_route_series(b, "taxd_http_request_duration_seconds_sum", m->labels[i]);
    dbuf_printf(b, "} %" PRIu64 ".%06" PRIu64 "\n", sum_us / 1000000, sum_us % 1000000);
    metrics_buf_route_series(b, "taxd_http_request_duration_seconds_count", m->labels[i]);
    dbuf_printf(b, "} %" PRIu64 "\n", total);
}

static void metrics_render_latency(metrics_t *m, dbuf_t *b)
{
    dbuf_puts(b, "# HELP taxd_http_request_duration_seconds HTTP request latency by "
                 "route template.\n# TYPE taxd_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i <= m->route_count; i++)
        metrics_render_route_histogram(m, i, b);
}

static void metrics_render_rejections(metrics_t *m, dbuf_t *b)
{
    dbuf_puts(b, "# HELP taxd_ratelimit_rejections_total Requests refused by rate "
                 "limiting, by layer.\n# TYPE taxd_ratelimit_rejections_total counter\n");
    for (size_t k = 0; k < METRICS_LIMIT_LAYERS; k++) {
        uint64_t n = atomic_load_explicit(&m->rejections[k], memory_order_relaxed);
        dbuf_printf(b, "taxd_ratelimit_rejections_total{layer=\"%s\"} %" PRIu64 "\n",
                    metrics_layer_names[k], n);
    }
}

char *metrics_render(metrics_t *m)
{
    dbuf_t b;
    dbuf_init(&b, 4096);
    metrics_render_requests(m, &b);
    metrics_render_latency(m, &b);
    metrics_render_rejections(m, &b);
    return dbuf_finish(&b, NULL);
}
