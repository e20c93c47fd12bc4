/* Unit tests of the operator-settings snapshot over a real store: a
 * revocation and rate-limit rules become visible after a refresh, and the
 * global default applies where nothing was set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/settings.h"

#include "scratch_store.h"

#define TENANT "00000000-0000-4000-8000-000000000001"

typedef struct fixture {
    char dir[64];
    store_t *store;
    store_conn_t *conn;
} fixture_t;

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    char path[160];
    fx->store = scratch_store_open(fx->dir, sizeof fx->dir, path, sizeof path, "t.db");
    assert_non_null(fx->store);
    fx->conn = store_acquire(fx->store);
    store_tenant_t t = {.id = TENANT, .name = "t", .created_at = 1};
    store_credential_t cred = {.client_id = "cl_a", .tenant_id = TENANT, .created_at = 1};
    store_tenant_seed_t seed = {"00000000-0000-4000-8000-0000000000f1",
                                "00000000-0000-4000-8000-0000000000f2"};
    assert_int_equal(store_tenant_create(fx->conn, &t, &seed, &cred), STORE_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    store_release(fx->store, fx->conn);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static void test_revocation_after_refresh(void **state)
{
    fixture_t *fx = *state;
    settings_t *s = settings_new((ratelimit_rule_t){100, 1000});
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    assert_false(settings_is_revoked(s, "cl_a"));
    assert_int_equal(store_credential_revoke(fx->conn, "cl_a", 5), STORE_OK);
    assert_false(settings_is_revoked(s, "cl_a")); /* not before the refresh */
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    assert_true(settings_is_revoked(s, "cl_a"));
    assert_false(settings_is_revoked(s, "cl_b"));
    settings_free(s);
}

static void test_rules_after_refresh(void **state)
{
    fixture_t *fx = *state;
    settings_t *s = settings_new((ratelimit_rule_t){100, 1000});
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    ratelimit_rule_t r = settings_tenant_rule(s, TENANT);
    assert_int_equal(r.rate, 100);
    assert_int_equal(r.burst, 1000);
    assert_false(settings_route_rule(s, TENANT, "GET /v1/filers", &r));

    store_rate_limit_t tenant_default = {.tenant_id = TENANT, .route = "", .rate = 5, .burst = 7};
    store_rate_limit_t all_route = {.tenant_id = "", .route = "GET /v1/filers", .rate = 2,
                                    .burst = 3};
    assert_int_equal(store_rate_limit_set(fx->conn, &tenant_default), STORE_OK);
    assert_int_equal(store_rate_limit_set(fx->conn, &all_route), STORE_OK);
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    r = settings_tenant_rule(s, TENANT);
    assert_int_equal(r.rate, 5);
    assert_int_equal(r.burst, 7);
    assert_int_equal(settings_tenant_rule(s, "another").rate, 100);
    assert_true(settings_route_rule(s, "another", "GET /v1/filers", &r)); /* every tenant */
    assert_int_equal(r.burst, 3);
    settings_free(s);
}

/* A built-in endpoint rule applies to every tenant until the operator sets
 * one for the route: for every tenant (replaces it), or for one (outranks
 * it for that tenant only). */
static void test_route_default_and_operator_override(void **state)
{
    fixture_t *fx = *state;
    const char *route = "POST /v1/reports/inventory-summary";
    settings_t *s = settings_new((ratelimit_rule_t){100, 1000});
    assert_int_equal(settings_set_route_default(s, route, (ratelimit_rule_t){1, 10}), 0);
    assert_int_equal(settings_set_route_default(s, "", (ratelimit_rule_t){1, 10}), -1);
    ratelimit_rule_t r = {0, 0};
    assert_true(settings_route_rule(s, TENANT, route, &r)); /* before any refresh */
    assert_int_equal(r.burst, 10);
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    assert_true(settings_route_rule(s, TENANT, route, &r));
    assert_int_equal(r.rate, 1);
    assert_int_equal(r.burst, 10);
    assert_false(settings_route_rule(s, TENANT, "GET /v1/filers", &r));

    store_rate_limit_t all = {.tenant_id = "", .rate = 5, .burst = 40};
    snprintf(all.route, sizeof all.route, "%s", route);
    assert_int_equal(store_rate_limit_set(fx->conn, &all), STORE_OK);
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    assert_true(settings_route_rule(s, "another", route, &r));
    assert_int_equal(r.burst, 40);
    store_rate_limit_t one = {.tenant_id = TENANT, .rate = 2, .burst = 30};
    snprintf(one.route, sizeof one.route, "%s", route);
    assert_int_equal(store_rate_limit_set(fx->conn, &one), STORE_OK);
    assert_int_equal(settings_refresh(s, fx->conn), STORE_OK);
    assert_true(settings_route_rule(s, TENANT, route, &r));
    assert_int_equal(r.burst, 30);
    assert_true(settings_route_rule(s, "another", route, &r));
    assert_int_equal(r.burst, 40);
    settings_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_default_and_operator_override, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_revocation_after_refresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rules_after_refresh, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
