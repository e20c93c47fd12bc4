/* Unit tests of the verified-token cache: only the exact token hits, a
 * colliding token replaces the older one, and too-long tokens never enter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "http/tokencache.h"

static token_claims_t claims_for(const char *tenant)
{
    token_claims_t c = {0};
    snprintf(c.tenant_id, sizeof c.tenant_id, "%s", tenant);
    snprintf(c.client_id, sizeof c.client_id, "cl_%s", tenant);
    c.issued_at = 100;
    c.expires_at = 200;
    return c;
}

static void test_exact_token_only(void **state)
{
    (void)state;
    tokencache_t *c = tokencache_new(64);
    token_claims_t in = claims_for("t1"), out;
    tokencache_put(c, "aaa.bbb.ccc", 11, &in);
    assert_true(tokencache_get(c, "aaa.bbb.ccc", 11, &out));
    assert_string_equal(out.tenant_id, "t1");
    assert_int_equal(out.expires_at, 200);
    assert_false(tokencache_get(c, "aaa.bbb.ccd", 11, &out));   /* one byte differs */
    assert_false(tokencache_get(c, "aaa.bbb.cc", 10, &out));    /* a prefix */
    assert_false(tokencache_get(c, "aaa.bbb.ccc!", 12, &out));  /* longer */
    assert_false(tokencache_get(c, "", 0, &out));
    tokencache_free(c);
}

static void test_bounded_and_replacing(void **state)
{
    (void)state;
    tokencache_t *c = tokencache_new(64);
    char token[32];
    token_claims_t in = claims_for("t"), out;
    for (int i = 0; i < 10000; i++) { /* far more tokens than slots */
        int n = snprintf(token, sizeof token, "tok-%d", i);
        tokencache_put(c, token, (size_t)n, &in);
    }
    int hits = 0;
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(token, sizeof token, "tok-%d", i);
        hits += tokencache_get(c, token, (size_t)n, &out);
    }
    assert_true(hits > 0 && hits <= 64); /* at most one token per slot */
    int n = snprintf(token, sizeof token, "tok-%d", 9999);
    assert_true(tokencache_get(c, token, (size_t)n, &out)); /* the newest stays */
    tokencache_free(c);
}

static void test_long_tokens_not_cached(void **state)
{
    (void)state;
    tokencache_t *c = tokencache_new(64);
    static char long_token[TOKENCACHE_MAX_TOKEN + 1];
    memset(long_token, 'x', sizeof long_token);
    token_claims_t in = claims_for("t"), out;
    tokencache_put(c, long_token, sizeof long_token, &in);
    assert_false(tokencache_get(c, long_token, sizeof long_token, &out));
    tokencache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_token_only),
        cmocka_unit_test(test_bounded_and_replacing),
        cmocka_unit_test(test_long_tokens_not_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
