/* Unit tests for src/http/errors.c: every error body shape of spec § Errors,
 * compared whole against the expected JSON text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/errors.h"

/* Fails with both texts shown when body is not exactly the expected JSON. */
static void assert_body(json_t *body, const char *expected_text)
{
    json_error_t error;
    json_t *expected = json_loads(expected_text, JSON_REJECT_DUPLICATES, &error);
    if (expected == NULL)
        fail_msg("bad expected JSON %s: %s", expected_text, error.text);
    assert_non_null(body);
    if (!json_equal(body, expected)) {
        char *got = json_dumps(body, JSON_SORT_KEYS);
        print_error("expected %s\n     got %s\n", expected_text, got);
        free(got);
        fail();
    }
    json_decref(expected);
    json_decref(body);
}

/* spec: "error (string naming the status)" — one name per status we answer. */
static void test_status_names(void **state)
{
    (void)state;
    static const struct {
        int status;
        const char *name;
    } NAMES[] = {
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {409, "Conflict"},
        {413, "Payload Too Large"},
        {415, "Unsupported Media Type"},
        {429, "Too Many Requests"},
        {500, "Internal Server Error"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {418, "Error"},
        {200, "Error"},
        {0, "Error"},
    };
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        assert_string_equal(error_status_name(NAMES[i].status), NAMES[i].name);
}

/* spec: standard envelope with `error` and `message`. */
static void test_standard_envelope(void **state)
{
    (void)state;
    assert_body(error_body(404, "Account owner abc could not be found"),
                "{\"error\":\"Not Found\",\"message\":\"Account owner abc could not be found\"}");
    assert_body(error_body(401, "Invalid token"),
                "{\"error\":\"Unauthorized\",\"message\":\"Invalid token\"}");
    assert_body(error_body(500, "Internal Server Error"),
                "{\"error\":\"Internal Server Error\",\"message\":\"Internal Server Error\"}");
    assert_body(error_body(418, "odd"), "{\"error\":\"Error\",\"message\":\"odd\"}");
}

static void test_null_message_uses_status_name(void **state)
{
    (void)state;
    assert_body(error_body(409, NULL), "{\"error\":\"Conflict\",\"message\":\"Conflict\"}");
}

static void test_bodyf_formats(void **state)
{
    (void)state;
    assert_body(error_bodyf(409, "Account owner with id '%s' already exists", "ao-1"),
                "{\"error\":\"Conflict\",\"message\":\"Account owner with id 'ao-1' already "
                "exists\"}");
}

static void test_bodyf_long_message_not_truncated(void **state)
{
    (void)state;
    char long_id[2001];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    char expected[2100];
    snprintf(expected, sizeof expected, "{\"error\":\"Not Found\",\"message\":\"id %s\"}", long_id);
    assert_body(error_bodyf(404, "id %s", long_id), expected);
}

/* spec: "504 with message Endpoint request timed out", whatever the caller says. */
static void test_504_ignores_message(void **state)
{
    (void)state;
    assert_body(error_body(504, "database busy for 3012 ms"),
                "{\"message\":\"Endpoint request timed out\"}");
    assert_body(error_bodyf(504, "lock %d", 7), "{\"message\":\"Endpoint request timed out\"}");
}

static void test_validation_shape(void **state)
{
    (void)state;
    json_t *issues = json_loads("[{\"code\":\"invalid_type\",\"expected\":\"string\","
                                "\"path\":[\"id\"],\"message\":\"Invalid input: expected "
                                "string, received number\"}]",
                                0, NULL);
    assert_non_null(issues);
    assert_body(error_body_validation("Validation failed", issues),
                "{\"error\":\"Bad Request\",\"message\":\"Validation failed\",\"issues\":"
                "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"id\"],"
                "\"message\":\"Invalid input: expected string, received number\"}]}");
}

static void test_validation_null_issues_gives_empty_array(void **state)
{
    (void)state;
    assert_body(error_body_validation("Validation failed", NULL),
                "{\"error\":\"Bad Request\",\"message\":\"Validation failed\",\"issues\":[]}");
}

/* spec: gateway deny is a single field `Message` with a capital M. */
static void test_gateway_deny(void **state)
{
    (void)state;
    assert_body(error_body_gateway_deny(),
                "{\"Message\":\"User is not authorized to access this resource\"}");
}

/* spec: tenant mismatch is error Forbidden, message Forbidden. */
static void test_forbidden(void **state)
{
    (void)state;
    assert_body(error_body_forbidden(), "{\"error\":\"Forbidden\",\"message\":\"Forbidden\"}");
    assert_body(error_body_forbidden_reason("expired"),
                "{\"error\":\"Forbidden\",\"message\":\"Forbidden\",\"reason\":\"expired\"}");
}

/* spec § Errors 5: the three 429 bodies. */
static void test_rate_limit_tenant(void **state)
{
    (void)state;
    assert_body(error_body_rate_limited(ERROR_LIMIT_TENANT, 7),
                "{\"error\":\"rate_limit_exceeded\",\"message\":\"Rate limit exceeded. Retry in "
                "7 seconds.\"}");
}

/* One wording only: "1 seconds", never "1 second". */
static void test_rate_limit_tenant_always_plural(void **state)
{
    (void)state;
    assert_body(error_body_rate_limited(ERROR_LIMIT_TENANT, 1),
                "{\"error\":\"rate_limit_exceeded\",\"message\":\"Rate limit exceeded. Retry in "
                "1 seconds.\"}");
}

static void test_rate_limit_endpoint(void **state)
{
    (void)state;
    assert_body(error_body_rate_limited(ERROR_LIMIT_ENDPOINT, 7),
                "{\"error\":\"rate_limit_exceeded\",\"message\":\"Too many requests.\"}");
}

static void test_rate_limit_node(void **state)
{
    (void)state;
    assert_body(error_body_rate_limited(ERROR_LIMIT_NODE, 7),
                "{\"error\":\"Too Many Requests\",\"message\":\"Too Many Requests\"}");
}

/* spec: transactions shape, errBody mirrors data. */
static void test_transactions_shape(void **state)
{
    (void)state;
    json_t *data = json_loads("[{\"code\":\"invalid_type\",\"message\":\"Invalid input: "
                              "expected string, received undefined\",\"path\":[\"asset_id\"]}]",
                              0, NULL);
    assert_non_null(data);
    assert_body(error_body_transactions("Validation failed", "ValidationError", data),
                "{\"status\":\"error\",\"message\":\"Validation failed\","
                "\"data\":[{\"code\":\"invalid_type\",\"message\":\"Invalid input: expected "
                "string, received undefined\",\"path\":[\"asset_id\"]}],"
                "\"error\":{\"errorType\":\"ValidationError\",\"errBody\":[{\"code\":"
                "\"invalid_type\",\"message\":\"Invalid input: expected string, received "
                "undefined\",\"path\":[\"asset_id\"]}],\"errorMessage\":\"Validation failed\"}}");
}

static void test_transactions_null_data(void **state)
{
    (void)state;
    assert_body(error_body_transactions("Unique constraint failed", "UniqueError", NULL),
                "{\"status\":\"error\",\"message\":\"Unique constraint failed\",\"data\":[],"
                "\"error\":{\"errorType\":\"UniqueError\",\"errBody\":[],"
                "\"errorMessage\":\"Unique constraint failed\"}}");
}

/* errBody is its own copy: editing data afterwards leaves errBody alone. */
static void test_transactions_errbody_independent(void **state)
{
    (void)state;
    json_t *body = error_body_transactions("m", "T", json_array());
    assert_non_null(body);
    json_array_append_new(json_object_get(body, "data"), json_integer(1));
    assert_body(body, "{\"status\":\"error\",\"message\":\"m\",\"data\":[1],"
                      "\"error\":{\"errorType\":\"T\",\"errBody\":[],\"errorMessage\":\"m\"}}");
}

static void test_lookup_shape(void **state)
{
    (void)state;
    assert_body(error_body_lookup("Transaction with external id 'x-1' not found for tenant t1"),
                "{\"status\":\"error\",\"message\":\"Transaction with external id 'x-1' not "
                "found for tenant t1\"}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_standard_envelope),
        cmocka_unit_test(test_null_message_uses_status_name),
        cmocka_unit_test(test_bodyf_formats),
        cmocka_unit_test(test_bodyf_long_message_not_truncated),
        cmocka_unit_test(test_504_ignores_message),
        cmocka_unit_test(test_validation_shape),
        cmocka_unit_test(test_validation_null_issues_gives_empty_array),
        cmocka_unit_test(test_gateway_deny),
        cmocka_unit_test(test_forbidden),
        cmocka_unit_test(test_rate_limit_tenant),
        cmocka_unit_test(test_rate_limit_tenant_always_plural),
        cmocka_unit_test(test_rate_limit_endpoint),
        cmocka_unit_test(test_rate_limit_node),
        cmocka_unit_test(test_transactions_shape),
        cmocka_unit_test(test_transactions_null_data),
        cmocka_unit_test(test_transactions_errbody_independent),
        cmocka_unit_test(test_lookup_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
