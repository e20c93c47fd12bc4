/* test_store_assets: store/assets.c against a real database file in a mkdtemp
 * directory, a fresh one per test. Two tenants are made with
 * store_tenant_create (which gives each its USD). Rows the store API cannot
 * write yet (an account owner, an account, a transaction and its
 * transaction_assets row, to make an asset "referenced") are seeded with a
 * raw sqlite3 connection until the transactions work exists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/assets.h"
#include "store/internal.h"
#include "store/store.h"

#include "scratch_store.h"

#define TENANT_A "00000000-0000-4000-8000-00000000000a"
#define TENANT_B "00000000-0000-4000-8000-00000000000b"
#define USD_A "00000000-0000-4000-8000-0000000000a2"
#define USD_B "00000000-0000-4000-8000-0000000000b2"
#define FILER_A "00000000-0000-4000-8000-0000000000a1"
#define T0 1700000000000

typedef struct fixture {
    char dir[64];
    char path[128];
    store_t *store;
    store_conn_t *conn;
} fixture_t;

/* ---- helpers */

static void make_tenant(store_conn_t *conn, const char *id, const char *filer, const char *usd)
{
    store_tenant_t t;
    memset(&t, 0, sizeof t);
    snprintf(t.id, sizeof t.id, "%s", id);
    snprintf(t.name, sizeof t.name, "tenant %s", id + 34);
    t.created_at = T0;
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid, "%s", filer);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid, "%s", usd);
    assert_int_equal(store_tenant_create(conn, &t, &seed, NULL), STORE_OK);
}

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    fx->store = SCRATCH_STORE_OPEN(fx, "t.db");
    assert_non_null(fx->store);
    fx->conn = store_acquire(fx->store);
    assert_non_null(fx->conn);
    make_tenant(fx->conn, TENANT_A, FILER_A, USD_A);
    make_tenant(fx->conn, TENANT_B, "00000000-0000-4000-8000-0000000000b1", USD_B);
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

/* An asset with uuid ...-0000000n0000 (n distinct per call site). */
static store_asset_t asset(unsigned n, const char *code, const char *name, int decimals)
{
    store_asset_t a;
    memset(&a, 0, sizeof a);
    snprintf(a.uuid, sizeof a.uuid, "00000000-0000-4000-8000-%012u", n);
    snprintf(a.code, sizeof a.code, "%s", code);
    snprintf(a.name, sizeof a.name, "%s", name);
    snprintf(a.type, sizeof a.type, "crypto");
    a.decimals = decimals;
    a.created_at = T0 + n;
    return a;
}

static void create_ok(fixture_t *fx, const char *tenant, store_asset_t a)
{
    store_asset_outcome_t outcome = (store_asset_outcome_t)-1;
    assert_int_equal(store_assets_create_batch(fx->conn, tenant, &a, 1, &outcome), STORE_OK);
    assert_int_equal(outcome, STORE_ASSET_CREATED);
}

typedef struct codes {
    char text[512];
    size_t count;
    int stop_after; /* each() returns 1 after this many; 0 = never */
} codes_t;

static int collect_code(const store_asset_t *a, void *ctx)
{
    codes_t *c = ctx;
    size_t used = strlen(c->text);
    snprintf(c->text + used, sizeof c->text - used, "%s%s", used > 0 ? "," : "", a->code);
    c->count++;
    return c->stop_after != 0 && c->count == (size_t)c->stop_after ? 1 : 0;
}

/* The tenant's codes in list order, joined by commas. */
static void assert_codes(fixture_t *fx, const char *tenant, const char *expected)
{
    codes_t c = {.text = ""};
    bool more = true;
    assert_int_equal(store_asset_list(fx->conn, tenant, NULL, 100, collect_code, &c, &more),
                     STORE_OK);
    assert_false(more);
    assert_string_equal(c.text, expected);
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fprintf(stderr, "raw sql failed: %s\n", err != NULL ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    assert_int_equal(rc, SQLITE_OK);
}

/* An owner, an account on the default filer, a transaction naming the
 * asset, and the asset's count of referencing transactions (what the
 * refusal reads). Foreign keys are on, so the rows are as real ones would be. */
static void seed_reference(fixture_t *fx, const char *asset_uuid)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "PRAGMA foreign_keys = ON;"
             "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
             " created_at, updated_at) VALUES ('00000000-0000-4000-8000-0000000000c1', '%s',"
             " 'owner-1', 'Owner', 'individual', 1, 1);"
             "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid,"
             " cost_basis_method, created_at, updated_at) VALUES"
             " ('00000000-0000-4000-8000-0000000000c2', '%s', 'account-1',"
             " '00000000-0000-4000-8000-0000000000c1', '%s', 'FIFO', 1, 1);"
             "INSERT INTO transactions (tenant, account, datetime, type, id, lines, created_at,"
             " updated_at, uuid, body) VALUES ((SELECT rowid FROM tenants WHERE id = '%s'),"
             " (SELECT seq FROM accounts WHERE uuid = '00000000-0000-4000-8000-0000000000c2'),"
             " 1, 'trade', 'tx-1', '', 1, 1, randomblob(16), '{}');"
             "UPDATE assets SET tx_refs = tx_refs + 1 WHERE uuid = '%s';",
             TENANT_A, TENANT_A, FILER_A, TENANT_A, asset_uuid);
    raw_exec(fx->path, sql);
}

/* ---- tests */

static void test_usd_exists_for_every_tenant(void **state)
{
    fixture_t *fx = *state;
    store_asset_t got;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "USD", &got), STORE_OK);
    assert_string_equal(got.uuid, USD_A);
    assert_string_equal(got.code, "USD");
    assert_string_equal(got.name, "US Dollar");
    assert_string_equal(got.type, "fiat");
    assert_int_equal(got.decimals, 2);
    assert_int_equal(got.created_at, T0);
    assert_int_equal(store_asset_get(fx->conn, TENANT_B, "USD", &got), STORE_OK);
    assert_string_equal(got.uuid, USD_B);
    assert_codes(fx, TENANT_A, "USD");
    assert_codes(fx, TENANT_B, "USD");
}

static void test_code_rule(void **state)
{
    (void)state;
    const char *good[] = {"BTC", "a", "x.y_z-9", "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"};
    const char *bad[] = {"", "B TC", "BTC/USD", "\xc3\xa9", "a+b", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
                         "x\ty"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(domain_asset_code_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(domain_asset_code_valid(bad[i]));
    assert_false(domain_asset_code_valid(NULL));
}

static void test_batch_outcomes_element_by_element(void **state)
{
    fixture_t *fx = *state;
    create_ok(fx, TENANT_A, asset(1, "ETH", "Ether", 18));
    store_asset_t batch[] = {
        asset(10, "BTC", "Bitcoin", 8),
        asset(11, "ETH", "Another", 8),     /* code of an existing asset */
        asset(12, "XETH", "Ether", 8),      /* name of an existing asset */
        asset(13, "BTC", "Bitcoin 2", 8),   /* code of an earlier element */
        asset(14, "WBTC", "Bitcoin", 8),    /* name of an earlier element */
        asset(15, "ETH", "Bitcoin", 8),     /* both: the code is reported */
        asset(16, "DOGE", "Dogecoin", STORE_ASSET_NO_DECIMALS),
    };
    size_t n = sizeof batch / sizeof *batch;
    store_asset_outcome_t outcomes[sizeof batch / sizeof *batch];
    memset(outcomes, 0xff, sizeof outcomes);
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, batch, n, outcomes), STORE_OK);
    const store_asset_outcome_t expected[] = {
        STORE_ASSET_CREATED,       STORE_ASSET_CONFLICT_CODE, STORE_ASSET_CONFLICT_NAME,
        STORE_ASSET_CONFLICT_CODE, STORE_ASSET_CONFLICT_NAME, STORE_ASSET_CONFLICT_CODE,
        STORE_ASSET_CREATED,
    };
    for (size_t i = 0; i < n; i++)
        assert_int_equal(outcomes[i], expected[i]);
    assert_codes(fx, TENANT_A, "BTC,DOGE,ETH,USD");

    store_asset_t got;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "BTC", &got), STORE_OK);
    assert_string_equal(got.name, "Bitcoin"); /* the first element won */
    assert_string_equal(got.uuid, batch[0].uuid);
    assert_int_equal(got.decimals, 8);
    assert_int_equal(got.created_at, T0 + 10);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "DOGE", &got), STORE_OK);
    assert_int_equal(got.decimals, STORE_ASSET_NO_DECIMALS);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "ETH", &got), STORE_OK);
    assert_string_equal(got.name, "Ether"); /* untouched by the conflicting elements */
    assert_codes(fx, TENANT_B, "USD");
}

/* A failure (not a conflict) anywhere in the batch leaves nothing behind:
 * the batch is one transaction. Two elements with the same uuid make the
 * second INSERT fail after the first succeeded. */
static void test_batch_failure_rolls_back_everything(void **state)
{
    fixture_t *fx = *state;
    store_asset_t batch[] = {asset(20, "AAA", "A", 0), asset(21, "BBB", "B", 0)};
    memcpy(batch[1].uuid, batch[0].uuid, sizeof batch[1].uuid);
    store_asset_outcome_t outcomes[2];
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, batch, 2, outcomes),
                     STORE_ERROR);
    assert_codes(fx, TENANT_A, "USD");
}

static void test_batch_refuses_what_a_row_could_not_hold(void **state)
{
    fixture_t *fx = *state;
    store_asset_outcome_t outcome;
    store_asset_t bad_code = asset(30, "B TC", "x", 0);
    store_asset_t bad_decimals = asset(31, "OK", "y", 37);
    store_asset_t no_name = asset(32, "OK2", "", 0);
    store_asset_t good = asset(33, "GOOD", "Good", 0);
    store_asset_t pair[] = {good, bad_code};
    store_asset_outcome_t outcomes[2];
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, &bad_code, 1, &outcome),
                     STORE_ERROR);
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, &bad_decimals, 1, &outcome),
                     STORE_ERROR);
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, &no_name, 1, &outcome),
                     STORE_ERROR);
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, pair, 2, outcomes),
                     STORE_ERROR);
    assert_codes(fx, TENANT_A, "USD");
    assert_int_equal(store_assets_create_batch(fx->conn, TENANT_A, NULL, 0, NULL), STORE_OK);
}

static void test_decimals_bounds_round_trip(void **state)
{
    fixture_t *fx = *state;
    create_ok(fx, TENANT_A, asset(40, "ZERO", "Zero", 0));
    create_ok(fx, TENANT_A, asset(41, "MAX", "Max", 36));
    store_asset_t got;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "ZERO", &got), STORE_OK);
    assert_int_equal(got.decimals, 0);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "MAX", &got), STORE_OK);
    assert_int_equal(got.decimals, 36);
}

static void test_get_by_uuid_or_code(void **state)
{
    fixture_t *fx = *state;
    store_asset_t btc = asset(50, "BTC", "Bitcoin", 8);
    snprintf(btc.uuid, sizeof btc.uuid, "0a1b2c3d-0000-4000-8000-00000000abcd");
    create_ok(fx, TENANT_A, btc);
    store_asset_t got;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, btc.uuid, &got), STORE_OK);
    assert_string_equal(got.code, "BTC");
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "0A1B2C3D-0000-4000-8000-00000000ABCD",
                                     &got),
                     STORE_OK);
    assert_string_equal(got.code, "BTC");
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "BTC", &got), STORE_OK);
    assert_string_equal(got.uuid, btc.uuid);
    /* codes match exactly */
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "btc", &got), STORE_NOT_FOUND);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "BTC ", &got), STORE_NOT_FOUND);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "", &got), STORE_NOT_FOUND);
    /* tenants are isolated, by uuid and by code */
    assert_int_equal(store_asset_get(fx->conn, TENANT_B, btc.uuid, &got), STORE_NOT_FOUND);
    assert_int_equal(store_asset_get(fx->conn, TENANT_B, "BTC", &got), STORE_NOT_FOUND);
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, USD_B, &got), STORE_NOT_FOUND);
}

static void test_codes_are_per_tenant(void **state)
{
    fixture_t *fx = *state;
    create_ok(fx, TENANT_A, asset(60, "BTC", "Bitcoin", 8));
    create_ok(fx, TENANT_B, asset(61, "BTC", "Bitcoin", 8));
    store_asset_t a, b;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "BTC", &a), STORE_OK);
    assert_int_equal(store_asset_get(fx->conn, TENANT_B, "BTC", &b), STORE_OK);
    assert_string_not_equal(a.uuid, b.uuid);
    /* "btc" is another code than "BTC" (exact match) */
    create_ok(fx, TENANT_A, asset(62, "btc", "bitcoin lower", 8));
    assert_codes(fx, TENANT_A, "BTC,USD,btc");
}

static void test_list_pages_by_code(void **state)
{
    fixture_t *fx = *state;
    const char *codes[] = {"E", "B", "D", "A", "C"};
    for (unsigned i = 0; i < 5; i++)
        create_ok(fx, TENANT_A, asset(70 + i, codes[i], codes[i], 0));
    codes_t c = {.text = ""};
    bool more = false;
    assert_int_equal(store_asset_list(fx->conn, TENANT_A, "", 2, collect_code, &c, &more),
                     STORE_OK);
    assert_string_equal(c.text, "A,B");
    assert_true(more);
    c = (codes_t){.text = ""};
    assert_int_equal(store_asset_list(fx->conn, TENANT_A, "B", 2, collect_code, &c, &more),
                     STORE_OK);
    assert_string_equal(c.text, "C,D");
    assert_true(more);
    c = (codes_t){.text = ""};
    assert_int_equal(store_asset_list(fx->conn, TENANT_A, "D", 2, collect_code, &c, &more),
                     STORE_OK);
    assert_string_equal(c.text, "E,USD");
    assert_false(more);
    /* stopped by the callback: "more" still tells about the rows after */
    c = (codes_t){.text = "", .stop_after = 1};
    assert_int_equal(store_asset_list(fx->conn, TENANT_A, NULL, 10, collect_code, &c, &more),
                     STORE_OK);
    assert_string_equal(c.text, "A");
    assert_true(more);
}

static void test_delete(void **state)
{
    fixture_t *fx = *state;
    store_asset_t btc = asset(80, "BTC", "Bitcoin", 8);
    create_ok(fx, TENANT_A, btc);
    create_ok(fx, TENANT_A, asset(81, "ETH", "Ether", 18));
    store_asset_refusal_t refusal = (store_asset_refusal_t)-1;
    store_asset_t out;
    /* another tenant cannot delete it, by uuid or by code */
    assert_int_equal(store_asset_delete(fx->conn, TENANT_B, btc.uuid, &refusal, &out),
                     STORE_NOT_FOUND);
    assert_int_equal(store_asset_delete(fx->conn, TENANT_B, "BTC", &refusal, &out),
                     STORE_NOT_FOUND);
    /* by uuid */
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, btc.uuid, &refusal, &out), STORE_OK);
    assert_int_equal(refusal, STORE_ASSET_REFUSED_NONE);
    assert_string_equal(out.code, "BTC");
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "BTC", &out), STORE_NOT_FOUND);
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, btc.uuid, &refusal, &out),
                     STORE_NOT_FOUND);
    /* by code, with NULL outputs */
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, "ETH", NULL, NULL), STORE_OK);
    assert_codes(fx, TENANT_A, "USD");
}

static void test_delete_refuses_usd(void **state)
{
    fixture_t *fx = *state;
    store_asset_refusal_t refusal = STORE_ASSET_REFUSED_NONE;
    store_asset_t out;
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, "USD", &refusal, &out),
                     STORE_CONFLICT);
    assert_int_equal(refusal, STORE_ASSET_REFUSED_REPORTING);
    assert_string_equal(out.code, "USD");
    refusal = STORE_ASSET_REFUSED_NONE;
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, USD_A, &refusal, &out),
                     STORE_CONFLICT);
    assert_int_equal(refusal, STORE_ASSET_REFUSED_REPORTING);
    assert_codes(fx, TENANT_A, "USD");
}

static void test_delete_refuses_referenced(void **state)
{
    fixture_t *fx = *state;
    store_asset_t btc = asset(90, "BTC", "Bitcoin", 8);
    create_ok(fx, TENANT_A, btc);
    create_ok(fx, TENANT_A, asset(91, "ETH", "Ether", 18));
    seed_reference(fx, btc.uuid);
    store_asset_refusal_t refusal = STORE_ASSET_REFUSED_NONE;
    store_asset_t out;
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, "BTC", &refusal, &out),
                     STORE_CONFLICT);
    assert_int_equal(refusal, STORE_ASSET_REFUSED_REFERENCED);
    assert_string_equal(out.code, "BTC");
    /* an asset nothing references still goes */
    assert_int_equal(store_asset_delete(fx->conn, TENANT_A, "ETH", &refusal, &out), STORE_OK);
    assert_int_equal(refusal, STORE_ASSET_REFUSED_NONE);
    assert_codes(fx, TENANT_A, "BTC,USD");
}

static void test_ensure(void **state)
{
    fixture_t *fx = *state;
    char uuid[STORE_UUID_LEN];
    const char *new_uuid = "00000000-0000-4000-8000-0000000000e1";
    /* existing: its uuid, nothing created, its type kept */
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "USD", "crypto", uuid, T0 + 5,
                                        new_uuid),
                     STORE_OK);
    assert_string_equal(uuid, USD_A);
    assert_codes(fx, TENANT_A, "USD");
    /* missing: created with name = code */
    memset(uuid, 0, sizeof uuid);
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "SOL", "crypto", uuid, T0 + 5,
                                        new_uuid),
                     STORE_OK);
    assert_string_equal(uuid, new_uuid);
    store_asset_t got;
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "SOL", &got), STORE_OK);
    assert_string_equal(got.uuid, new_uuid);
    assert_string_equal(got.name, "SOL");
    assert_string_equal(got.type, "crypto");
    assert_int_equal(got.decimals, STORE_ASSET_NO_DECIMALS);
    assert_int_equal(got.created_at, T0 + 5);
    /* a second call finds it */
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "SOL", "crypto", uuid, T0 + 6,
                                        "00000000-0000-4000-8000-0000000000e2"),
                     STORE_OK);
    assert_string_equal(uuid, new_uuid);
    /* another asset is named like the code: the new one's name carries its uuid */
    create_ok(fx, TENANT_A, asset(100, "RIPPLE", "XRP", 6));
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "XRP", "nft", uuid, T0,
                                        "00000000-0000-4000-8000-0000000000e3"),
                     STORE_OK);
    assert_string_equal(uuid, "00000000-0000-4000-8000-0000000000e3");
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "XRP", &got), STORE_OK);
    assert_string_equal(got.name, "XRP (00000000-0000-4000-8000-0000000000e3)");
    assert_string_equal(got.type, "nft");
    assert_int_equal(store_asset_get(fx->conn, TENANT_A, "RIPPLE", &got), STORE_OK);
    assert_string_equal(got.name, "XRP");
    /* a taken uuid is the only conflict */
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "NEW", "crypto", uuid, T0,
                                        "00000000-0000-4000-8000-0000000000e3"),
                     STORE_CONFLICT);
    /* invalid codes never reach the table */
    assert_int_equal(store_asset_ensure(fx->conn, TENANT_A, "B TC", "crypto", uuid, T0,
                                        "00000000-0000-4000-8000-0000000000e4"),
                     STORE_ERROR);
    assert_codes(fx, TENANT_A, "RIPPLE,SOL,USD,XRP");
}

/* The in-transaction variant commits or rolls back with its caller's body. */
typedef struct ensure_call {
    const char *code;
    const char *new_uuid;
    store_status_t then; /* what the body returns after a successful ensure */
} ensure_call_t;

static store_status_t ensure_then(store_conn_t *conn, const void *arg)
{
    const ensure_call_t *c = arg;
    char uuid[STORE_UUID_LEN];
    store_status_t status =
        store_asset_ensure_in_tx(conn, TENANT_A, c->code, "crypto", uuid, T0, c->new_uuid);
    if (status != STORE_OK)
        return status;
    return strcmp(uuid, c->new_uuid) == 0 ? c->then : STORE_ERROR;
}

static void test_ensure_in_tx_follows_the_caller(void **state)
{
    fixture_t *fx = *state;
    ensure_call_t rolled = {"ADA", "00000000-0000-4000-8000-0000000000f1", STORE_ERROR};
    assert_int_equal(conn_write(fx->conn, ensure_then, &rolled), STORE_ERROR);
    assert_codes(fx, TENANT_A, "USD");
    ensure_call_t kept = {"ADA", "00000000-0000-4000-8000-0000000000f2", STORE_OK};
    assert_int_equal(conn_write(fx->conn, ensure_then, &kept), STORE_OK);
    assert_codes(fx, TENANT_A, "ADA,USD");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_usd_exists_for_every_tenant),
        cmocka_unit_test(test_code_rule),
        T(test_batch_outcomes_element_by_element),
        T(test_batch_failure_rolls_back_everything),
        T(test_batch_refuses_what_a_row_could_not_hold),
        T(test_decimals_bounds_round_trip),
        T(test_get_by_uuid_or_code),
        T(test_codes_are_per_tenant),
        T(test_list_pages_by_code),
        T(test_delete),
        T(test_delete_refuses_usd),
        T(test_delete_refuses_referenced),
        T(test_ensure),
        T(test_ensure_in_tx_follows_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
