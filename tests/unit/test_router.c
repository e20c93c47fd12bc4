/* Unit tests for src/http/router.c: raw-segment matching, one decode per
 * parameter, 404 versus 405 with the Allow list, and literal-beats-param. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "http/router.h"

/* A bump allocator standing in for the request arena. */
typedef struct test_arena {
    char buf[512];
    size_t used;
    size_t calls;
} test_arena_t;

static void *test_arena_alloc(void *ctx, size_t n)
{
    test_arena_t *a = ctx;
    a->calls++;
    if (n > sizeof a->buf - a->used)
        return NULL;
    void *p = a->buf + a->used;
    a->used += n;
    return p;
}

static void *test_alloc_fail(void *ctx, size_t n)
{
    (void)ctx;
    (void)n;
    return NULL;
}

static int h_list, h_create, h_get, h_delete, h_ext, h_txn, h_lots, h_pair;

static const route_t test_routes[] = {
    {.method = "GET", .path = "/v1/filers", .handler = &h_list},
    {.method = "POST", .path = "/v1/filers", .scopes = 2, .max_body = 4096, .handler = &h_create},
    {.method = "GET", .path = "/v1/filers/{filerId}", .handler = &h_get},
    {.method = "DELETE", .path = "/v1/filers/{filerId}", .handler = &h_delete},
    {.method = "GET", .path = "/v1/transactions/{id}", .handler = &h_txn},
    {.method = "POST", .path = "/v1/transactions/external-id", .handler = &h_ext},
    {.method = "GET", .path = "/v1/transfer-lots/transactions/{transactionId}", .handler = &h_lots},
    {.method = "GET", .path = "/v1/pairs/{a}/x/{b}", .handler = &h_pair},
};
#define TEST_ROUTE_COUNT (sizeof test_routes / sizeof test_routes[0])

typedef struct test_ctx {
    router_t *router;
    test_arena_t arena;
    router_match_t match;
    char allowed[64];
} test_ctx_t;

static int setup(void **state)
{
    static test_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.router = router_new(test_routes, TEST_ROUTE_COUNT);
    if (ctx.router == NULL)
        return -1;
    *state = &ctx;
    return 0;
}

static int teardown(void **state)
{
    test_ctx_t *ctx = *state;
    router_free(ctx->router);
    return 0;
}

static router_status_t do_match(test_ctx_t *ctx, const char *method, const char *path)
{
    return router_match(ctx->router, method, path, strlen(path), test_arena_alloc, &ctx->arena,
                        &ctx->match, ctx->allowed, sizeof ctx->allowed);
}

/* router_path_flags: the flags of every template matching the path, any
 * method; what the server's CORS preflight is decided on. */
static void test_path_flags(void **state)
{
    (void)state;
    static const route_t routes[] = {
        {.method = "GET", .path = "/v1/sdk", .flags = ROUTE_CORS},
        {.method = "POST", .path = "/v1/sdk", .flags = ROUTE_CORS | ROUTE_TEXT_JSON},
        {.method = "GET", .path = "/v1/sdk/{id}", .flags = ROUTE_CORS},
        {.method = "GET", .path = "/v1/plain", .flags = ROUTE_INLINE},
        {.method = "GET", .path = "/v1/plain/{id}"},
    };
    router_t *r = router_new(routes, sizeof routes / sizeof routes[0]);
    assert_non_null(r);
    assert_int_equal(router_path_flags(r, "/v1/sdk", 7), ROUTE_CORS | ROUTE_TEXT_JSON);
    assert_int_equal(router_path_flags(r, "/v1/sdk/x%2Fy", 13), ROUTE_CORS);
    assert_int_equal(router_path_flags(r, "/v1/plain", 9), ROUTE_INLINE);
    assert_int_equal(router_path_flags(r, "/v1/plain/7", 11), 0);
    assert_int_equal(router_path_flags(r, "/v1/sdk/", 8), 0);      /* empty segment */
    assert_int_equal(router_path_flags(r, "/v1/sdk/a/b", 11), 0);  /* no template */
    assert_int_equal(router_path_flags(r, "/v1/sdkXXX", 7), ROUTE_CORS | ROUTE_TEXT_JSON);
    assert_int_equal(router_path_flags(r, "", 0), 0);
    router_free(r);
}

static void test_table_is_copied(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(router_route_count(ctx->router), TEST_ROUTE_COUNT);
    const route_t *r = router_route(ctx->router, 1);
    assert_non_null(r);
    assert_int_equal(r->index, 1);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->path, "/v1/filers");
    assert_int_equal(r->scopes, 2);
    assert_int_equal(r->max_body, 4096);
    assert_ptr_equal(r->handler, &h_create);
    assert_ptr_not_equal(r->path, test_routes[1].path);
    assert_null(router_route(ctx->router, TEST_ROUTE_COUNT));
}

static void test_literal_match(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/filers"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_list);
    assert_int_equal(ctx->match.param_count, 0);
    assert_int_equal(do_match(ctx, "POST", "/v1/filers"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_create);
    assert_int_equal(ctx->match.route->index, 1);
    assert_int_equal(ctx->arena.calls, 0);
}

static void test_param_match(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/f-123"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_get);
    assert_int_equal(ctx->match.param_count, 1);
    assert_int_equal(ctx->match.param_name_lens[0], 7);
    assert_memory_equal(ctx->match.param_names[0], "filerId", 7);
    assert_string_equal(ctx->match.params[0], "f-123");
    assert_string_equal(router_param(&ctx->match, "filerId"), "f-123");
    assert_null(router_param(&ctx->match, "filer"));
    assert_null(router_param(&ctx->match, "filerIdx"));
    assert_int_equal(ctx->arena.calls, 1);
}

static void test_two_params(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/pairs/p%2Fq/x/r+s"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_pair);
    assert_int_equal(ctx->match.param_count, 2);
    assert_string_equal(router_param(&ctx->match, "a"), "p/q");
    assert_string_equal(router_param(&ctx->match, "b"), "r+s");
    assert_int_equal(do_match(ctx, "GET", "/v1/pairs/p/y/r"), ROUTER_NOT_FOUND);
}

static void check_param(test_ctx_t *ctx, const char *path, const char *want)
{
    assert_int_equal(do_match(ctx, "GET", path), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_lots);
    assert_string_equal(router_param(&ctx->match, "transactionId"), want);
}

static void test_param_decoding(void **state)
{
    test_ctx_t *ctx = *state;
    check_param(ctx, "/v1/transfer-lots/transactions/a%2Fb", "a/b");
    check_param(ctx, "/v1/transfer-lots/transactions/100%25", "100%");
    check_param(ctx, "/v1/transfer-lots/transactions/1%2B1", "1+1");
    check_param(ctx, "/v1/transfer-lots/transactions/1+1", "1+1");
    check_param(ctx, "/v1/transfer-lots/transactions/a%20b", "a b");
    check_param(ctx, "/v1/transfer-lots/transactions/caf%C3%A9", "caf\xc3\xa9");
    /* Decoded once: "%252F" is the three characters "%2F", not "/". */
    check_param(ctx, "/v1/transfer-lots/transactions/%252F", "%2F");
}

static void test_literal_segments_compare_raw(void **state)
{
    test_ctx_t *ctx = *state;
    /* "%66ilers" decodes to "filers", but literals are compared raw. */
    assert_int_equal(do_match(ctx, "GET", "/v1/%66ilers"), ROUTER_NOT_FOUND);
    /* An encoded slash does not split a segment. */
    assert_int_equal(do_match(ctx, "GET", "/v1%2Ffilers"), ROUTER_NOT_FOUND);
}

static void test_not_found(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/nothing"), ROUTER_NOT_FOUND);
    assert_string_equal(ctx->allowed, "");
    assert_null(ctx->match.route);
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/a/b"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "/"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", ""), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "v1/filers"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s"),
                     ROUTER_NOT_FOUND);
}

static void test_trailing_slash_and_empty_segment(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "/v1//filers"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "//v1/filers"), ROUTER_NOT_FOUND);
    /* An empty segment never fills a parameter. */
    assert_int_equal(do_match(ctx, "GET", "/v1/pairs//x/b"), ROUTER_NOT_FOUND);
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/f1/"), ROUTER_NOT_FOUND);
    assert_int_equal(ctx->arena.calls, 0);
}

static void test_method_not_allowed(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "DELETE", "/v1/filers"), ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(ctx->allowed, "GET, POST");
    assert_null(ctx->match.route);
    assert_int_equal(do_match(ctx, "POST", "/v1/filers/f1"), ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(ctx->allowed, "GET, DELETE");
    /* Methods are case-sensitive. */
    assert_int_equal(do_match(ctx, "get", "/v1/filers"), ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(ctx->allowed, "GET, POST");
}

static void test_allowed_truncates_at_whole_methods(void **state)
{
    test_ctx_t *ctx = *state;
    char small[8];
    memset(small, 'x', sizeof small);
    const char *path = "/v1/filers";
    assert_int_equal(router_match(ctx->router, "PUT", path, strlen(path), test_arena_alloc,
                                  &ctx->arena, &ctx->match, small, sizeof small),
                     ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(small, "GET"); /* "GET, POST" needs 10 bytes */
    assert_int_equal(router_match(ctx->router, "PUT", path, strlen(path), test_arena_alloc,
                                  &ctx->arena, &ctx->match, NULL, 0),
                     ROUTER_METHOD_NOT_ALLOWED);
}

static void test_literal_beats_param(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "POST", "/v1/transactions/external-id"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_ext);
    assert_int_equal(ctx->match.param_count, 0);
    /* No literal GET route: the param route takes "external-id" as an id. */
    assert_int_equal(do_match(ctx, "GET", "/v1/transactions/external-id"), ROUTER_OK);
    assert_ptr_equal(ctx->match.route->handler, &h_txn);
    assert_string_equal(router_param(&ctx->match, "id"), "external-id");
    assert_int_equal(do_match(ctx, "POST", "/v1/transactions/t-1"), ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(ctx->allowed, "GET");
    assert_int_equal(do_match(ctx, "PUT", "/v1/transactions/external-id"),
                     ROUTER_METHOD_NOT_ALLOWED);
    assert_string_equal(ctx->allowed, "GET, POST");
}

static void test_literal_beats_param_whatever_the_order(void **state)
{
    (void)state;
    static int a, b, c;
    const route_t routes[] = {
        {.method = "GET", .path = "/x/{p}/{q}", .handler = &a},
        {.method = "GET", .path = "/x/{p}/lit", .handler = &b},
        {.method = "GET", .path = "/x/lit/{q}", .handler = &c},
    };
    router_t *r = router_new(routes, 3);
    assert_non_null(r);
    test_arena_t arena = {.used = 0};
    router_match_t m;
    const char *path = "/x/lit/lit";
    assert_int_equal(router_match(r, "GET", path, strlen(path), test_arena_alloc, &arena, &m,
                                  NULL, 0),
                     ROUTER_OK);
    assert_ptr_equal(m.route->handler, &c); /* the first differing segment decides */
    path = "/x/other/lit";
    assert_int_equal(router_match(r, "GET", path, strlen(path), test_arena_alloc, &arena, &m,
                                  NULL, 0),
                     ROUTER_OK);
    assert_ptr_equal(m.route->handler, &b);
    path = "/x/other/thing";
    assert_int_equal(router_match(r, "GET", path, strlen(path), test_arena_alloc, &arena, &m,
                                  NULL, 0),
                     ROUTER_OK);
    assert_ptr_equal(m.route->handler, &a);
    router_free(r);
}

static void test_bad_encoding(void **state)
{
    test_ctx_t *ctx = *state;
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/%zz"), ROUTER_BAD_PATH);
    assert_null(ctx->match.route);
    assert_int_equal(ctx->match.param_count, 0);
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/a%00b"), ROUTER_BAD_PATH);
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/%4"), ROUTER_BAD_PATH);
    assert_int_equal(do_match(ctx, "GET", "/v1/filers/%"), ROUTER_BAD_PATH);
}

static void test_alloc_failure(void **state)
{
    test_ctx_t *ctx = *state;
    const char *path = "/v1/filers/f1";
    assert_int_equal(router_match(ctx->router, "GET", path, strlen(path), test_alloc_fail, NULL,
                                  &ctx->match, NULL, 0),
                     ROUTER_NO_MEMORY);
    assert_null(ctx->match.route);
}

static void test_path_length_is_respected(void **state)
{
    test_ctx_t *ctx = *state;
    const char *target = "/v1/filers/f1?x=1";
    assert_int_equal(router_match(ctx->router, "GET", target, 13, test_arena_alloc, &ctx->arena,
                                  &ctx->match, NULL, 0),
                     ROUTER_OK);
    assert_string_equal(router_param(&ctx->match, "filerId"), "f1");
}

static void test_too_many_params_refused(void **state)
{
    (void)state;
    const route_t four[] = {{.method = "GET", .path = "/{a}/{b}/{c}/{d}"}};
    const route_t five[] = {{.method = "GET", .path = "/{a}/{b}/{c}/{d}/{e}"}};
    router_t *r = router_new(four, 1);
    assert_non_null(r);
    router_free(r);
    assert_null(router_new(five, 1));
}

static void test_malformed_templates_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "",      "v1/x",  "/v1/x/", "/v1//x", "/v1/{}", "/v1/{a", "/v1/a}",
        "/v1/{a}{b}", "/v1/x{a}", "/v1/%2F", "/{a}/{a}", "/",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        route_t r = {.method = "GET", .path = bad[i]};
        router_t *router = router_new(&r, 1);
        if (router != NULL)
            fail_msg("template \"%s\" was accepted", bad[i]);
    }
    route_t no_method = {.method = "", .path = "/v1/x"};
    assert_null(router_new(&no_method, 1));
    route_t null_path = {.method = "GET", .path = NULL};
    assert_null(router_new(&null_path, 1));
}

static void test_ambiguous_routes_refused(void **state)
{
    (void)state;
    const route_t dup[] = {
        {.method = "GET", .path = "/v1/x/{a}"},
        {.method = "GET", .path = "/v1/x/{b}"},
    };
    assert_null(router_new(dup, 2));
    const route_t ok[] = {
        {.method = "GET", .path = "/v1/x/{a}"},
        {.method = "PUT", .path = "/v1/x/{b}"},
    };
    router_t *r = router_new(ok, 2);
    assert_non_null(r);
    router_free(r);
}

static void test_empty_table(void **state)
{
    (void)state;
    router_t *r = router_new(NULL, 0);
    assert_non_null(r);
    assert_int_equal(router_route_count(r), 0);
    router_match_t m;
    assert_int_equal(router_match(r, "GET", "/a", 2, test_alloc_fail, NULL, &m, NULL, 0),
                     ROUTER_NOT_FOUND);
    router_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table_is_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literal_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_param_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_param_decoding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literal_segments_compare_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trailing_slash_and_empty_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_method_not_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allowed_truncates_at_whole_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literal_beats_param, setup, teardown),
        cmocka_unit_test(test_literal_beats_param_whatever_the_order),
        cmocka_unit_test_setup_teardown(test_bad_encoding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_length_is_respected, setup, teardown),
        cmocka_unit_test(test_too_many_params_refused),
        cmocka_unit_test(test_malformed_templates_refused),
        cmocka_unit_test(test_ambiguous_routes_refused),
        cmocka_unit_test(test_empty_table),
        cmocka_unit_test(test_path_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
