/* Unit tests for src/client/error.c and the small helpers of client.c: one
 * taxd_error whatever the body's shape (spec § Errors: message read
 * case-insensitively, error possibly absent or not a string, issues or the
 * transactions data as details, bodies that are not JSON), the option checks
 * of taxd_client_new, taxd_escape and taxd_code_name. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static taxd_error answer(int status, const char *body)
{
    taxd_error err = {0};
    taxd_code rc = tc_error_from_answer(&err, status, body, body ? strlen(body) : 0, "req-1", -1);
    assert_int_equal(rc, TAXD_E_HTTP);
    assert_int_equal(err.code, TAXD_E_HTTP);
    assert_int_equal(err.status, status);
    return err;
}

static void test_standard_envelope(void **state)
{
    (void)state;
    taxd_error err = answer(404, "{\"error\":\"Not Found\",\"message\":\"No account owner o1\"}");
    assert_string_equal(err.error, "Not Found");
    assert_string_equal(err.message, "No account owner o1");
    assert_null(err.details);
    assert_string_equal(err.request_id, "req-1");
    assert_string_equal(err.body, "{\"error\":\"Not Found\",\"message\":\"No account owner o1\"}");
    assert_int_equal(err.retry_after_ms, -1);
    taxd_error_clear(&err);
}

static void test_message_is_read_case_insensitively(void **state)
{
    (void)state;
    const char *bodies[] = {"{\"Message\":\"m\"}", "{\"MESSAGE\":\"m\"}", "{\"mEsSaGe\":\"m\"}",
                            "{\"other\":1,\"message\":\"m\"}"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        taxd_error err = answer(403, bodies[i]);
        assert_string_equal(err.message, "m");
        assert_null(err.error); /* the gateway deny has no error */
        taxd_error_clear(&err);
    }
    /* a message that is not a string is no message */
    taxd_error err = answer(500, "{\"message\":5,\"Message\":\"second\"}");
    assert_string_equal(err.message, "second");
    taxd_error_clear(&err);
}

static void test_issues_become_details(void **state)
{
    (void)state;
    taxd_error err = answer(400, "{\"error\":\"Bad Request\",\"message\":\"Validation failed\","
                                 "\"issues\":[{\"code\":\"invalid_type\",\"path\":[\"id\"],"
                                 "\"message\":\"Expected string\"}]}");
    assert_string_equal(err.details,
                        "[{\"code\":\"invalid_type\",\"path\":[\"id\"],\"message\":\"Expected string\"}]");
    taxd_error_clear(&err);
}

static void test_transactions_shape(void **state)
{
    (void)state;
    taxd_error err = answer(400, "{\"status\":\"error\",\"message\":\"Invalid transaction\","
                                 "\"data\":[{\"code\":\"c\",\"message\":\"bad date\",\"path\":[\"datetime\"]}],"
                                 "\"error\":{\"errorType\":\"x\",\"errBody\":{},\"errorMessage\":\"y\"}}");
    assert_null(err.error); /* an object: absent */
    assert_string_equal(err.message, "Invalid transaction");
    assert_string_equal(err.details, "[{\"code\":\"c\",\"message\":\"bad date\",\"path\":[\"datetime\"]}]");
    taxd_error_clear(&err);
}

static void test_5xx_without_error_or_message(void **state)
{
    (void)state;
    taxd_error err = answer(504, "{\"message\":\"Endpoint request timed out\"}");
    assert_null(err.error);
    assert_string_equal(err.message, "Endpoint request timed out");
    taxd_error_clear(&err);
    err = answer(500, "{\"error\":\"Internal Server Error\"}");
    assert_string_equal(err.error, "Internal Server Error");
    assert_string_equal(err.message, "HTTP 500: {\"error\":\"Internal Server Error\"}");
    taxd_error_clear(&err);
    /* an empty message is no message (fuzz_client_answer): the caller
     * would print nothing */
    err = answer(502, "{\"Message\":\"\"}");
    assert_string_equal(err.message, "HTTP 502: {\"Message\":\"\"}");
    taxd_error_clear(&err);
    err = answer(502, "{\"message\":\"\",\"Message\":\"second\"}");
    assert_string_equal(err.message, "second");
    taxd_error_clear(&err);
}

static void test_bodies_that_are_not_json(void **state)
{
    (void)state;
    taxd_error err = answer(502, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n"
                                 "<body><center><h1>502 Bad Gateway</h1></center>\r\n"
                                 "<hr><center>nginx</center></body></html>\r\n");
    assert_string_equal(err.message, "HTTP 502: 502 Bad Gateway 502 Bad Gateway nginx");
    assert_null(err.error);
    assert_null(err.details);
    taxd_error_clear(&err);

    err = answer(502, "");
    assert_string_equal(err.message, "HTTP 502");
    taxd_error_clear(&err);
    err = answer(503, NULL);
    assert_string_equal(err.message, "HTTP 503");
    assert_null(err.body);
    taxd_error_clear(&err);

    /* control characters and bytes beyond ASCII never reach a terminal */
    err = answer(500, "oops\x1b[31m\x01\xff!");
    assert_string_equal(err.message, "HTTP 500: oops?[31m?" "?!");
    taxd_error_clear(&err);

    /* a JSON array, a truncated object: no crash, the excerpt */
    err = answer(500, "[1,2]");
    assert_string_equal(err.message, "HTTP 500: [1,2]");
    taxd_error_clear(&err);
    err = answer(500, "{\"message\":");
    assert_string_equal(err.message, "HTTP 500: {\"message\":");
    taxd_error_clear(&err);
}

static void test_a_long_body_is_cut(void **state)
{
    (void)state;
    char body[5000];
    memset(body, 'x', sizeof body - 1);
    body[sizeof body - 1] = '\0';
    taxd_error err = answer(500, body);
    assert_true(strlen(err.message) < 140);
    assert_true(strcmp(err.message + strlen(err.message) - 3, "...") == 0);
    assert_int_equal(strlen(err.body), sizeof body - 1); /* the raw body is kept whole */
    taxd_error_clear(&err);
}

static void test_body_need_not_be_nul_terminated(void **state)
{
    (void)state;
    const char raw[] = "{\"message\":\"ok\"}GARBAGE";
    taxd_error err = {0};
    tc_error_from_answer(&err, 500, raw, 16, NULL, 2000);
    assert_string_equal(err.message, "ok");
    assert_string_equal(err.body, "{\"message\":\"ok\"}");
    assert_null(err.request_id);
    assert_int_equal(err.retry_after_ms, 2000);
    taxd_error_clear(&err);
}

static void test_fail_replaces_and_keeps_attempts(void **state)
{
    (void)state;
    taxd_error err = answer(500, "{\"message\":\"first\"}");
    err.attempts = 4;
    assert_int_equal(tc_fail(&err, TAXD_E_TIMEOUT, "GET %s: no answer in time", "/x"), TAXD_E_TIMEOUT);
    assert_int_equal(err.code, TAXD_E_TIMEOUT);
    assert_int_equal(err.status, 0);
    assert_null(err.request_id);
    assert_null(err.body);
    assert_int_equal(err.attempts, 4);
    assert_string_equal(err.message, "GET /x: no answer in time");
    taxd_error_clear(&err);
    taxd_error_clear(&err); /* twice is harmless */
    assert_int_equal(tc_fail(NULL, TAXD_E_IO, "nobody listens"), TAXD_E_IO);
    taxd_response resp = {0};
    taxd_response_clear(&resp);
}

static void test_code_names_are_distinct(void **state)
{
    (void)state;
    for (int a = TAXD_OK; a <= TAXD_E_ABORTED; a++)
        for (int b = a + 1; b <= TAXD_E_ABORTED; b++)
            assert_string_not_equal(taxd_code_name((taxd_code)a), taxd_code_name((taxd_code)b));
    assert_string_equal(taxd_code_name(TAXD_E_HTTP), "HTTP error");
}

static void test_escape(void **state)
{
    (void)state;
    char *e = taxd_escape("a b/c?d&e=f%g~h.i_j-k\xc3\xa9");
    assert_string_equal(e, "a%20b%2Fc%3Fd%26e%3Df%25g~h.i_j-k%C3%A9");
    free(e);
    e = taxd_escape("");
    assert_string_equal(e, "");
    free(e);
    assert_null(taxd_escape(NULL));
}

static void expect_refused(const taxd_client_options *o, const char *words)
{
    taxd_error err = {0};
    taxd_client *c = taxd_client_new(o, &err);
    assert_null(c);
    assert_int_equal(err.code, TAXD_E_INVALID);
    assert_non_null(strstr(err.message, words));
    /* a refused option never echoes the secret */
    if (o->client_secret && *o->client_secret)
        assert_null(strstr(err.message, o->client_secret));
    taxd_error_clear(&err);
}

static void test_client_options_are_checked(void **state)
{
    (void)state;
    taxd_client_options o = {.base_url = "http://127.0.0.1:1", .client_id = "id",
                             .client_secret = "s3cr3t"};
    taxd_error err = {0};
    taxd_client *c = taxd_client_new(&o, &err);
    assert_non_null(c);
    assert_int_equal(c->max_attempts, 6);
    assert_int_equal(c->request_timeout_ms, 60000);
    assert_int_equal(c->connect_timeout_ms, 10000);
    assert_int_equal(c->max_retry_ms, 120000);
    assert_int_equal(c->backoff_base_ms, 250);
    assert_int_equal(c->backoff_max_ms, 30000);
    assert_int_equal(c->refresh_margin_s, 300);
    taxd_client_free(c);

    o.base_url = "https://example.com///";
    c = taxd_client_new(&o, &err);
    assert_non_null(c);
    assert_string_equal(c->base_url, "https://example.com"); /* paths are appended to it */
    taxd_client_free(c);

    o.base_url = NULL;
    expect_refused(&o, "required");
    o.base_url = "ftp://example.com";
    expect_refused(&o, "http://");
    o.base_url = "http://user:s3cr3t@example.com";
    expect_refused(&o, "user information");
    o.base_url = "http://example.com/v1";
    expect_refused(&o, "no path");
    o.base_url = "http://exa mple.com";
    expect_refused(&o, "space");
    o.base_url = "http://example.com";
    o.client_secret = NULL;
    expect_refused(&o, "together");
    o.client_secret = "";
    expect_refused(&o, "empty");
    o.client_secret = "zzz-secret";
    o.max_attempts = -1;
    expect_refused(&o, "negative");
    assert_null(taxd_client_new(NULL, NULL));
    taxd_client_free(NULL);
}

static void test_client_without_credentials_cannot_mint(void **state)
{
    (void)state;
    taxd_client_options o = {.base_url = "http://127.0.0.1:1"};
    taxd_error err = {0};
    taxd_client *c = taxd_client_new(&o, &err);
    assert_non_null(c);
    char *token = NULL;
    assert_int_equal(taxd_client_token(c, &token, &err), TAXD_E_INVALID);
    assert_null(token);
    taxd_error_clear(&err);
    taxd_client_free(c);
}

/* ---- the log never carries a secret */

static char logged[8192];

static void keep_log(void *userdata, char direction, const char *line)
{
    (void)userdata;
    size_t n = strlen(logged);
    snprintf(logged + n, sizeof logged - n, "%c %s\n", direction, line);
}

static void test_failed_mint_logs_no_secret(void **state)
{
    (void)state;
    /* nothing listens on port 1: the mint is tried and fails, logging each try */
    taxd_client_options o = {.base_url = "http://127.0.0.1:1", .client_id = "id",
                             .client_secret = "very-secret-value", .max_attempts = 2,
                             .backoff_base_ms = 1, .log = keep_log};
    taxd_error err = {0};
    taxd_client *c = taxd_client_new(&o, &err);
    char *token = NULL;
    logged[0] = '\0';
    assert_int_equal(taxd_client_token(c, &token, &err), TAXD_E_TRANSPORT);
    assert_non_null(strstr(logged, "> POST /v1/oauth/token"));
    assert_non_null(strstr(logged, "* retry 2/2"));
    assert_null(strstr(logged, "very-secret-value"));
    assert_null(strstr(err.message, "very-secret-value"));
    assert_int_equal(err.attempts, 2);
    taxd_error_clear(&err);
    taxd_client_free(c);
}

int main(void)
{
    taxd_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standard_envelope),
        cmocka_unit_test(test_message_is_read_case_insensitively),
        cmocka_unit_test(test_issues_become_details),
        cmocka_unit_test(test_transactions_shape),
        cmocka_unit_test(test_5xx_without_error_or_message),
        cmocka_unit_test(test_bodies_that_are_not_json),
        cmocka_unit_test(test_a_long_body_is_cut),
        cmocka_unit_test(test_body_need_not_be_nul_terminated),
        cmocka_unit_test(test_fail_replaces_and_keeps_attempts),
        cmocka_unit_test(test_code_names_are_distinct),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_client_options_are_checked),
        cmocka_unit_test(test_client_without_credentials_cannot_mint),
        cmocka_unit_test(test_failed_mint_logs_no_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
