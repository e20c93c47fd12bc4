/* Unit tests of the small core modules the lead wrote: arena (alignment,
 * large blocks, cleanups in reverse order), config (defaults, environment,
 * flags and their precedence, malformed values), ids, and the clock's
 * RFC 3339 formatting and test offset. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/grow.h"
#include "core/ids.h"
#include "core/utf8.h"

static int order[4];
static int order_len;

static void record(void *arg)
{
    order[order_len++] = *(int *)arg;
}

static void test_arena(void **state)
{
    (void)state;
    arena_t *a = arena_new(1024);
    assert_non_null(a);
    for (int i = 1; i < 100; i++) {
        void *p = arena_alloc(a, (size_t)i * 7);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 0xab, (size_t)i * 7); /* ASan catches an overlap or overrun */
    }
    char *big = arena_alloc(a, 1 << 20); /* larger than a block: its own block */
    assert_non_null(big);
    memset(big, 1, 1 << 20);
    assert_string_equal(arena_strndup(a, "abcdef", 3), "abc");
    assert_string_equal(arena_sprintf(a, "%s-%d", "x", 42), "x-42");
    static int one = 1, two = 2, three = 3;
    order_len = 0;
    assert_int_equal(arena_defer(a, record, &one), 0);
    assert_int_equal(arena_defer(a, record, &two), 0);
    assert_int_equal(arena_defer(a, record, &three), 0);
    arena_free(a);
    assert_int_equal(order_len, 3);
    assert_int_equal(order[0], 3); /* last registered runs first */
    assert_int_equal(order[2], 1);
}

static void clear_env(void)
{
    unsetenv("TAXD_LISTEN");
    unsetenv("TAXD_DB");
    unsetenv("TAXD_THREADS");
    unsetenv("TAXD_TEST_HOOKS");
    unsetenv("TAXD_BASE_URL");
    unsetenv("TAXD_CORS_ORIGIN");
    unsetenv("TAXD_PDF_FONT");
}

static void test_config_defaults(void **state)
{
    (void)state;
    clear_env();
    taxd_config_t cfg;
    char err[256];
    assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
    assert_string_equal(cfg.listen_host, "127.0.0.1");
    assert_int_equal(cfg.listen_port, 8080);
    assert_string_equal(cfg.db_path, "./var/taxd.db");
    assert_string_equal(cfg.base_url, "");
    assert_int_equal(cfg.max_body, 1024 * 1024);
    assert_int_equal(cfg.request_timeout_ms, 29000);
    /* Handlers block on the database: more threads than cores; slow or greedy
     * clients are bounded by the idle timeout and the per-address limit. */
    assert_int_equal(cfg.threads, 16);
    assert_int_equal(cfg.connection_timeout_s, 60);
    assert_int_equal(cfg.per_ip_connection_limit, 512);
    assert_int_equal(cfg.connection_limit, 16384);
    assert_int_equal(cfg.header_timeout_ms, 10000);
    assert_int_equal(cfg.max_large_bodies, 2);
    assert_int_equal(cfg.max_in_flight, 512);
    assert_int_equal(cfg.default_rate, 100);
    assert_int_equal(cfg.default_burst, 1000);
    assert_false(cfg.test_hooks);
    assert_int_equal(cfg.cors_origin_count, 0); /* no origin is allowed unless named */
    assert_string_equal(cfg.pdf_font, "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
}

static void test_config_precedence(void **state)
{
    (void)state;
    clear_env();
    setenv("TAXD_LISTEN", "0.0.0.0:9000", 1);
    setenv("TAXD_THREADS", "4", 1);
    setenv("TAXD_TEST_HOOKS", "1", 1);
    taxd_config_t cfg;
    char err[256];
    assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
    assert_string_equal(cfg.listen_host, "0.0.0.0");
    assert_int_equal(cfg.listen_port, 9000);
    assert_int_equal(cfg.threads, 4);
    assert_true(cfg.test_hooks);
    char *argv[] = {"--listen", "[::1]:0", "--threads=8", "--db", "/tmp/x.db",
                    "--base-url", "https://tax.example.com"};
    assert_int_equal(config_parse_serve_args(&cfg, 7, argv, err, sizeof err), 0);
    assert_string_equal(cfg.listen_host, "::1"); /* flags beat the environment */
    assert_int_equal(cfg.listen_port, 0);
    assert_int_equal(cfg.threads, 8);
    assert_string_equal(cfg.db_path, "/tmp/x.db");
    assert_string_equal(cfg.base_url, "https://tax.example.com");
    clear_env();
}

static void test_config_refuses_malformed(void **state)
{
    (void)state;
    clear_env();
    taxd_config_t cfg;
    char err[256];
    setenv("TAXD_THREADS", "many", 1);
    assert_int_equal(config_load_env(&cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "TAXD_THREADS"));
    clear_env();
    assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
    char *bad_port[] = {"--listen", "127.0.0.1:70000"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, bad_port, err, sizeof err), -1);
    char *bad_url[] = {"--base-url", "ftp://x"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, bad_url, err, sizeof err), -1);
    char *no_host[] = {"--base-url", "https:///"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, no_host, err, sizeof err), -1);
    char *slash[] = {"--base-url", "https://tax.example.com/api//"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, slash, err, sizeof err), 0);
    assert_string_equal(cfg.base_url, "https://tax.example.com/api"); /* links add "/v1/..." */
    char *unknown[] = {"--frobnicate"};
    assert_int_equal(config_parse_serve_args(&cfg, 1, unknown, err, sizeof err), -1);
    assert_non_null(strstr(err, "--frobnicate"));
    char *missing[] = {"--db"};
    assert_int_equal(config_parse_serve_args(&cfg, 1, missing, err, sizeof err), -1);
    char *zero[] = {"--threads", "0"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, zero, err, sizeof err), -1);
}

/* --cors-origin: repeatable, TAXD_CORS_ORIGIN a comma list; flags replace
 * the environment's list; a repeated origin is kept once. */
static void test_config_cors_origins(void **state)
{
    (void)state;
    clear_env();
    setenv("TAXD_CORS_ORIGIN", "https://app.example.com, http://localhost:3000,http://[::1]:8080",
           1);
    taxd_config_t cfg;
    char err[256];
    assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
    assert_int_equal(cfg.cors_origin_count, 3);
    assert_string_equal(cfg.cors_origins[0], "https://app.example.com");
    assert_string_equal(cfg.cors_origins[1], "http://localhost:3000");
    assert_string_equal(cfg.cors_origins[2], "http://[::1]:8080");
    char *argv[] = {"--cors-origin", "https://a.example", "--cors-origin=http://127.0.0.1:5173",
                    "--cors-origin", "https://a.example"};
    assert_int_equal(config_parse_serve_args(&cfg, 5, argv, err, sizeof err), 0);
    assert_int_equal(cfg.cors_origin_count, 2);
    assert_string_equal(cfg.cors_origins[0], "https://a.example");
    assert_string_equal(cfg.cors_origins[1], "http://127.0.0.1:5173");
    char *font[] = {"--pdf-font", "/opt/fonts/x.ttf"};
    assert_int_equal(config_parse_serve_args(&cfg, 2, font, err, sizeof err), 0);
    assert_string_equal(cfg.pdf_font, "/opt/fonts/x.ttf");
    clear_env();
}

/* An origin must be exactly what a browser sends as Origin, or it could
 * never match: each malformed one fails start with a message naming the
 * flag, the value and the reason. */
static void test_config_cors_origin_refused(void **state)
{
    (void)state;
    static const char *const BAD[][2] = {
        {"*", "wildcard"},
        {"https://*.example.com", "wildcard"},
        {"app.example.com", "http:// or https://"},
        {"ftp://app.example.com", "http:// or https://"},
        {"https://", "http:// or https://"},
        {"https://app.example.com/", "trailing slash"},
        {"https://app.example.com/path", "no path"},
        {"https://app.example.com?x", "no path"},
        {"https://App.Example.com", "lower case"},
        {"HTTPS://app.example.com", "http:// or https://"},
        {"https://user@app.example.com", "only letters"},
        {"https://app.example.com:", "port"},
        {"https://app.example.com:0", "port"},
        {"https://app.example.com:08080", "port"},
        {"https://app.example.com:65536", "port"},
        {"https://app.example.com:8x", "port"},
        {"https://app.example.com:443", "default port"},
        {"http://app.example.com:80", "default port"},
        {"https://:8080", "host is missing"},
        {"http://[::1", "closing bracket"},
        {"http://[::G]", "IPv6"},
        {"https://a.example,,https://b.example", "empty"},
        {"null", "http:// or https://"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        clear_env();
        taxd_config_t cfg;
        char err[256];
        assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
        char *argv[] = {"--cors-origin", (char *)BAD[i][0]};
        print_message("origin %s\n", BAD[i][0]);
        assert_int_equal(config_parse_serve_args(&cfg, 2, argv, err, sizeof err), -1);
        assert_non_null(strstr(err, "--cors-origin (TAXD_CORS_ORIGIN)"));
        assert_non_null(strstr(err, BAD[i][1]));
        setenv("TAXD_CORS_ORIGIN", BAD[i][0], 1);
        assert_int_equal(config_load_env(&cfg, err, sizeof err), -1);
        assert_non_null(strstr(err, BAD[i][1]));
    }
    clear_env();
    /* At most CONFIG_MAX_CORS_ORIGINS distinct origins. */
    taxd_config_t cfg;
    char err[256];
    assert_int_equal(config_load_env(&cfg, err, sizeof err), 0);
    char origins[CONFIG_MAX_CORS_ORIGINS + 1][32];
    char *argv[2 * (CONFIG_MAX_CORS_ORIGINS + 1)];
    for (int i = 0; i <= CONFIG_MAX_CORS_ORIGINS; i++) {
        snprintf(origins[i], sizeof origins[i], "https://a%d.example", i);
        argv[2 * i] = "--cors-origin";
        argv[2 * i + 1] = origins[i];
    }
    assert_int_equal(config_parse_serve_args(&cfg, 2 * CONFIG_MAX_CORS_ORIGINS, argv, err,
                                             sizeof err), 0);
    assert_int_equal(cfg.cors_origin_count, CONFIG_MAX_CORS_ORIGINS);
    cfg.cors_origin_count = 0;
    assert_int_equal(config_parse_serve_args(&cfg, 2 * (CONFIG_MAX_CORS_ORIGINS + 1), argv, err,
                                             sizeof err), -1);
    assert_non_null(strstr(err, "too many origins"));
}

static void test_ids(void **state)
{
    (void)state;
    char a[IDS_UUID_LEN], b[IDS_UUID_LEN];
    assert_int_equal(ids_uuid_v4(a), 0);
    assert_int_equal(ids_uuid_v4(b), 0);
    assert_true(ids_is_uuid_v4(a));
    assert_string_not_equal(a, b);
    assert_int_equal(a[14], '4');
    assert_false(ids_is_uuid_v4("00000000-0000-1000-8000-000000000000")); /* version 1 */
    assert_false(ids_is_uuid_v4("00000000-0000-4000-c000-000000000000")); /* variant */
    assert_false(ids_is_uuid_v4("not-a-uuid"));
    assert_false(ids_is_uuid_v4(NULL));
    char token[64];
    assert_int_equal(ids_random_token("cl_", 16, token, sizeof token), 0);
    assert_int_equal(strncmp(token, "cl_", 3), 0);
    assert_int_equal(strlen(token), 3 + 22);
    assert_int_equal(ids_random_token("cl_", 16, token, 10), -1);
}

static void test_clock(void **state)
{
    (void)state;
    char out[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00.000Z");
    clock_format_rfc3339(1709210096789, out); /* a leap day */
    assert_string_equal(out, "2024-02-29T12:34:56.789Z");
    clock_format_rfc3339(-1, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999Z");
    taxd_clock_t c = {0};
    int64_t before = clock_now_ms(&c);
    clock_set_offset_ms(&c, 86400000);
    int64_t after = clock_now_ms(&c);
    assert_true(after - before >= 86400000 && after - before < 86400000 + 5000);
    int64_t ms = 0;
    assert_int_equal(clock_parse_rfc3339("2024-02-29T12:34:56.789Z", &ms), 0);
    assert_int_equal(ms, 1709210096789);
    assert_int_equal(clock_parse_rfc3339("2024-02-29T14:34:56.789123+02:00", &ms), 0);
    assert_int_equal(ms, 1709210096789); /* the zone applied, microseconds dropped */
    assert_int_equal(clock_parse_rfc3339("1970-01-01T00:00:00-00:30", &ms), 0);
    assert_int_equal(ms, 1800000);
    const char *bad[] = {"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
                         "2024-01-01T00:00:00", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00.Z",
                         "2024-01-01T00:00:00+2:00", "2024-01-01T00:00:00Zjunk", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(clock_parse_rfc3339(bad[i], &ms), -1);
    int64_t m1 = clock_monotonic_ms();
    assert_true(clock_monotonic_ms() >= m1);
}

static void test_utf8_sanitize(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(utf8_sanitize("caf\xc3\xa9", out, sizeof out), 5);
    assert_string_equal(out, "caf\xc3\xa9");
    utf8_sanitize("a\xff" "b", out, sizeof out); /* a stray byte becomes U+FFFD */
    assert_string_equal(out, "a\xef\xbf\xbd" "b");
    utf8_sanitize("\xc0\xaf", out, sizeof out); /* overlong '/' */
    assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd");
    utf8_sanitize("\xed\xa0\x80", out, sizeof out); /* a surrogate */
    assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    utf8_sanitize("abcdefghijklmnopqrstuvwxyz", out, sizeof out); /* too long: "..." */
    assert_string_equal(out, "abcdefghijkl...");
    utf8_sanitize("abcdefghijk\xc3\xa9zzzz", out, sizeof out); /* never cut é in two */
    assert_string_equal(out, "abcdefghijk...");
    utf8_sanitize("exactly15chars!", out, sizeof out); /* fits exactly: no "..." */
    assert_string_equal(out, "exactly15chars!");
}

/* grow_array: starts at `first`, doubles until the need fits, leaves a
 * large enough array alone, and refuses a byte count that would overflow
 * without touching the array or its capacity. */
static void test_grow_array(void **state)
{
    (void)state;
    size_t cap = 0;
    int *items = grow_array(NULL, &cap, 1, sizeof *items, 4);
    assert_non_null(items);
    assert_int_equal(cap, 4);
    items[3] = 7;
    assert_ptr_equal(grow_array(items, &cap, 4, sizeof *items, 4), items);
    assert_int_equal(cap, 4);
    items = grow_array(items, &cap, 9, sizeof *items, 4);
    assert_non_null(items);
    assert_int_equal(cap, 16);
    assert_int_equal(items[3], 7);
    size_t before = cap;
    assert_null(grow_array(items, &cap, SIZE_MAX / 2, sizeof *items, 4));
    assert_int_equal(cap, before);
    assert_int_equal(items[3], 7); /* still the caller's */
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_grow_array),
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_precedence),
        cmocka_unit_test(test_config_refuses_malformed),
        cmocka_unit_test(test_config_cors_origins),
        cmocka_unit_test(test_config_cors_origin_refused),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_utf8_sanitize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
