/* Unit tests for src/http/cors.c: exact origin matching and the headers of a
 * preflight, of an ordinary answer, and of an answer to an origin that is
 * not allowed (issue 19, item 4). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "http/cors.h"

static const char *const ORIGINS[] = {"https://app.example.com", "http://localhost:3000"};

/* The value of header name among h[0..n), or NULL. */
static const char *find(const cors_header_t *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

static void test_origin_match_is_exact(void **state)
{
    (void)state;
    assert_ptr_equal(cors_allowed_origin(ORIGINS, 2, "https://app.example.com"), ORIGINS[0]);
    assert_ptr_equal(cors_allowed_origin(ORIGINS, 2, "http://localhost:3000"), ORIGINS[1]);
    static const char *const OTHERS[] = {
        "https://App.example.com",  "HTTPS://app.example.com", "http://app.example.com",
        "https://app.example.com/", "https://app.example.com:443", "https://app.example.co",
        "https://app.example.comm", "http://localhost",        "http://localhost:30000",
        "null",                     "",                        "*",
    };
    for (size_t i = 0; i < sizeof OTHERS / sizeof OTHERS[0]; i++)
        assert_null(cors_allowed_origin(ORIGINS, 2, OTHERS[i]));
    assert_null(cors_allowed_origin(ORIGINS, 2, NULL));
    assert_null(cors_allowed_origin(ORIGINS, 0, "https://app.example.com"));
}

static void test_preflight_allowed(void **state)
{
    (void)state;
    cors_header_t h[CORS_MAX_HEADERS];
    size_t n = cors_headers(ORIGINS[0], true, "GET, POST", h);
    assert_int_equal(n, 5);
    assert_string_equal(find(h, n, "Vary"), "Origin");
    assert_string_equal(find(h, n, "Access-Control-Allow-Origin"), "https://app.example.com");
    assert_string_equal(find(h, n, "Access-Control-Allow-Methods"), "GET, POST");
    assert_string_equal(find(h, n, "Access-Control-Allow-Headers"), "Authorization, Content-Type");
    assert_string_equal(find(h, n, "Access-Control-Max-Age"), "600");
    assert_null(find(h, n, "Access-Control-Allow-Credentials"));
    assert_null(find(h, n, "Access-Control-Expose-Headers"));
}

static void test_answer_allowed(void **state)
{
    (void)state;
    cors_header_t h[CORS_MAX_HEADERS];
    size_t n = cors_headers(ORIGINS[1], false, "GET", h);
    assert_int_equal(n, 3);
    assert_string_equal(find(h, n, "Vary"), "Origin");
    assert_string_equal(find(h, n, "Access-Control-Allow-Origin"), "http://localhost:3000");
    assert_string_equal(find(h, n, "Access-Control-Expose-Headers"),
                        "x-request-id, x-ratelimit-limit, x-ratelimit-remaining, Retry-After");
    assert_null(find(h, n, "Access-Control-Allow-Methods"));
    assert_null(find(h, n, "Access-Control-Allow-Credentials"));
}

/* Another origin, or none: Vary only, on preflights and answers alike. */
static void test_not_allowed_gets_vary_only(void **state)
{
    (void)state;
    for (int preflight = 0; preflight <= 1; preflight++) {
        cors_header_t h[CORS_MAX_HEADERS];
        size_t n = cors_headers(NULL, preflight, "GET, POST", h);
        assert_int_equal(n, 1);
        assert_string_equal(h[0].name, "Vary");
        assert_string_equal(h[0].value, "Origin");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origin_match_is_exact),
        cmocka_unit_test(test_preflight_allowed),
        cmocka_unit_test(test_answer_allowed),
        cmocka_unit_test(test_not_allowed_gets_vary_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
