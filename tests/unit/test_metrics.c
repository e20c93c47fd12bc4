/* Unit tests for src/http/metrics.c: the exact Prometheus text, cumulative
 * buckets, the integer-formatted sum, label escaping, and lock-free counting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http/metrics.h"

static const char *const labels[] = {"GET /v1/filers", "GET /v1/filers/{filerId}"};

#define HELP_REQUESTS                                                                         \
    "# HELP taxd_http_requests_total HTTP requests by route template and status.\n"           \
    "# TYPE taxd_http_requests_total counter\n"
#define HELP_LATENCY                                                                          \
    "# HELP taxd_http_request_duration_seconds HTTP request latency by route template.\n"     \
    "# TYPE taxd_http_request_duration_seconds histogram\n"
#define HELP_REJECTIONS                                                                       \
    "# HELP taxd_ratelimit_rejections_total Requests refused by rate limiting, by layer.\n"   \
    "# TYPE taxd_ratelimit_rejections_total counter\n"

static void test_render_empty(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(labels, 2);
    assert_non_null(m);
    char *text = metrics_render(m);
    assert_non_null(text);
    assert_string_equal(text, HELP_REQUESTS HELP_LATENCY HELP_REJECTIONS
                        "taxd_ratelimit_rejections_total{layer=\"tenant\"} 0\n"
                        "taxd_ratelimit_rejections_total{layer=\"endpoint\"} 0\n"
                        "taxd_ratelimit_rejections_total{layer=\"node\"} 0\n");
    free(text);
    metrics_free(m);
}

#define BUCKET(route, le, n)                                                                  \
    "taxd_http_request_duration_seconds_bucket{route=\"" route "\",le=\"" le "\"} " #n "\n"

static void test_render_exact(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(labels, 2);
    assert_non_null(m);
    metrics_observe_request(m, 0, 200, 500);
    metrics_observe_request(m, 0, 200, 1000);   /* on a bound: le is inclusive */
    metrics_observe_request(m, 0, 404, 2600);
    metrics_observe_request(m, 0, 599, 100000); /* highest status */
    metrics_observe_request(m, SIZE_MAX, 404, 12000000);
    metrics_observe_request(m, SIZE_MAX, 100, 10000000);
    metrics_count_limit_reject(m, METRICS_LIMIT_TENANT);
    metrics_count_limit_reject(m, METRICS_LIMIT_TENANT);
    metrics_count_limit_reject(m, METRICS_LIMIT_NODE);
    char *text = metrics_render(m);
    assert_non_null(text);
    assert_string_equal(
        text,
        HELP_REQUESTS
        "taxd_http_requests_total{route=\"GET /v1/filers\",status=\"200\"} 2\n"
        "taxd_http_requests_total{route=\"GET /v1/filers\",status=\"404\"} 1\n"
        "taxd_http_requests_total{route=\"GET /v1/filers\",status=\"599\"} 1\n"
        "taxd_http_requests_total{route=\"unmatched\",status=\"100\"} 1\n"
        "taxd_http_requests_total{route=\"unmatched\",status=\"404\"} 1\n"
        HELP_LATENCY
        BUCKET("GET /v1/filers", "0.001", 2)
        BUCKET("GET /v1/filers", "0.0025", 2)
        BUCKET("GET /v1/filers", "0.005", 3)
        BUCKET("GET /v1/filers", "0.01", 3)
        BUCKET("GET /v1/filers", "0.025", 3)
        BUCKET("GET /v1/filers", "0.05", 3)
        BUCKET("GET /v1/filers", "0.1", 4)
        BUCKET("GET /v1/filers", "0.25", 4)
        BUCKET("GET /v1/filers", "0.5", 4)
        BUCKET("GET /v1/filers", "1", 4)
        BUCKET("GET /v1/filers", "2.5", 4)
        BUCKET("GET /v1/filers", "5", 4)
        BUCKET("GET /v1/filers", "10", 4)
        BUCKET("GET /v1/filers", "+Inf", 4)
        "taxd_http_request_duration_seconds_sum{route=\"GET /v1/filers\"} 0.104100\n"
        "taxd_http_request_duration_seconds_count{route=\"GET /v1/filers\"} 4\n"
        BUCKET("unmatched", "0.001", 0)
        BUCKET("unmatched", "0.0025", 0)
        BUCKET("unmatched", "0.005", 0)
        BUCKET("unmatched", "0.01", 0)
        BUCKET("unmatched", "0.025", 0)
        BUCKET("unmatched", "0.05", 0)
        BUCKET("unmatched", "0.1", 0)
        BUCKET("unmatched", "0.25", 0)
        BUCKET("unmatched", "0.5", 0)
        BUCKET("unmatched", "1", 0)
        BUCKET("unmatched", "2.5", 0)
        BUCKET("unmatched", "5", 0)
        BUCKET("unmatched", "10", 1)
        BUCKET("unmatched", "+Inf", 2)
        "taxd_http_request_duration_seconds_sum{route=\"unmatched\"} 22.000000\n"
        "taxd_http_request_duration_seconds_count{route=\"unmatched\"} 2\n"
        HELP_REJECTIONS
        "taxd_ratelimit_rejections_total{layer=\"tenant\"} 2\n"
        "taxd_ratelimit_rejections_total{layer=\"endpoint\"} 0\n"
        "taxd_ratelimit_rejections_total{layer=\"node\"} 1\n");
    free(text);
    metrics_free(m);
}

static void test_sum_formatting(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(labels, 2);
    metrics_observe_request(m, 1, 200, 7);
    metrics_observe_request(m, 1, 200, 1234567);
    char *text = metrics_render(m);
    assert_non_null(strstr(text, "taxd_http_request_duration_seconds_sum{route=\"GET "
                                 "/v1/filers/{filerId}\"} 1.234574\n"));
    assert_null(strstr(text, "route=\"GET /v1/filers\""));
    free(text);
    metrics_free(m);
}

static void test_out_of_range_input(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(labels, 2);
    metrics_observe_request(m, 0, 99, 10);
    metrics_observe_request(m, 0, 600, 10);
    metrics_observe_request(m, 0, -1, 10);
    metrics_observe_request(m, 7, 503, 10);  /* past the table: unmatched */
    metrics_observe_request(m, 0, 201, -50); /* negative latency: zero */
    metrics_count_limit_reject(m, METRICS_LIMIT_LAYERS);
    char *text = metrics_render(m);
    assert_non_null(strstr(text, "taxd_http_requests_total{route=\"unmatched\",status=\"503\"} 1\n"));
    assert_non_null(
        strstr(text, "taxd_http_requests_total{route=\"GET /v1/filers\",status=\"201\"} 1\n"));
    assert_null(strstr(text, "status=\"99\""));
    assert_null(strstr(text, "status=\"600\""));
    assert_non_null(strstr(text, BUCKET("GET /v1/filers", "0.001", 1)));
    assert_non_null(
        strstr(text, "taxd_http_request_duration_seconds_sum{route=\"GET /v1/filers\"} 0.000000\n"));
    assert_non_null(
        strstr(text, "taxd_http_request_duration_seconds_count{route=\"GET /v1/filers\"} 1\n"));
    assert_non_null(strstr(text, "taxd_ratelimit_rejections_total{layer=\"node\"} 0\n"));
    free(text);
    metrics_free(m);
}

static void test_label_escaping(void **state)
{
    (void)state;
    const char *odd[] = {"GET /a\"b\\c\nd"};
    metrics_t *m = metrics_new(odd, 1);
    metrics_observe_request(m, 0, 201, 1);
    char *text = metrics_render(m);
    assert_non_null(
        strstr(text, "taxd_http_requests_total{route=\"GET /a\\\"b\\\\c\\nd\",status=\"201\"} 1\n"));
    assert_non_null(strstr(
        text, "taxd_http_request_duration_seconds_count{route=\"GET /a\\\"b\\\\c\\nd\"} 1\n"));
    assert_null(strstr(text, "c\nd"));
    free(text);
    metrics_free(m);
}

static void test_no_routes(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(NULL, 0);
    assert_non_null(m);
    metrics_observe_request(m, 0, 404, 1);
    char *text = metrics_render(m);
    assert_non_null(strstr(text, "taxd_http_requests_total{route=\"unmatched\",status=\"404\"} 1\n"));
    free(text);
    metrics_free(m);
    metrics_free(NULL);
}

static void *observe_many(void *p)
{
    metrics_t *m = p;
    for (int i = 0; i < 10000; i++) {
        metrics_observe_request(m, 1, 200, 3000);
        metrics_count_limit_reject(m, METRICS_LIMIT_ENDPOINT);
    }
    return NULL;
}

static void test_concurrent_counting(void **state)
{
    (void)state;
    metrics_t *m = metrics_new(labels, 2);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, observe_many, m), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    char *text = metrics_render(m);
    assert_non_null(strstr(
        text, "taxd_http_requests_total{route=\"GET /v1/filers/{filerId}\",status=\"200\"} 40000\n"));
    assert_non_null(strstr(
        text, "taxd_http_request_duration_seconds_sum{route=\"GET /v1/filers/{filerId}\"} 120.000000\n"));
    assert_non_null(strstr(text, "taxd_ratelimit_rejections_total{layer=\"endpoint\"} 40000\n"));
    free(text);
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_empty),
        cmocka_unit_test(test_render_exact),
        cmocka_unit_test(test_sum_formatting),
        cmocka_unit_test(test_out_of_range_input),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_no_routes),
        cmocka_unit_test(test_concurrent_counting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
