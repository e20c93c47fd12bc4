/* test_store_filers: the filer writes of the store (store/filers.h) against a
 * real database file in a mkdtemp directory, fresh for each test. A raw
 * sqlite3 connection stands in for rows the filer API does not write
 * (accounts, a damaged TIN) and for looking at what is stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/filers.h"
#include "store/store.h"

#include "scratch_store.h"

#define TENANT_A "00000000-0000-4000-8000-00000000000a"
#define TENANT_B "00000000-0000-4000-8000-00000000000b"
#define DEFAULT_A "00000000-0000-4000-8000-0000000000da"
#define DEFAULT_B "00000000-0000-4000-8000-0000000000db"
#define FILER_1 "00000000-0000-4000-8000-000000000f01"
#define FILER_2 "00000000-0000-4000-8000-000000000f02"

typedef struct fixture {
    char dir[64];
    char path[128];
    store_t *store;
    store_conn_t *conn;
} fixture_t;

/* ---- helpers */


static void create_tenant(store_conn_t *conn, const char *id, const char *default_filer,
                          const char *usd)
{
    store_tenant_t tenant = {.created_at = 1000};
    snprintf(tenant.id, sizeof tenant.id, "%s", id);
    snprintf(tenant.name, sizeof tenant.name, "tenant");
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid, "%s", default_filer);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid, "%s", usd);
    assert_int_equal(store_tenant_create(conn, &tenant, &seed, NULL), STORE_OK);
}

/* A filer record as the API builds it; a TIN of `tin_len` recognisable bytes. */
static store_filer_t make_filer(const char *uuid, const char *id, const char *name,
                                size_t tin_len)
{
    store_filer_t f;
    memset(&f, 0, sizeof f);
    snprintf(f.uuid, sizeof f.uuid, "%s", uuid);
    snprintf(f.id, sizeof f.id, "%s", id);
    snprintf(f.name, sizeof f.name, "%s", name);
    for (size_t i = 0; i < tin_len; i++)
        f.tin_sealed[i] = (uint8_t)(0xA0 + i);
    f.tin_sealed_len = tin_len;
    f.created_at = 2000;
    f.updated_at = 2000;
    return f;
}

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fprintf(stderr, "raw_exec: %s\n", err != NULL ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    assert_int_equal(rc, SQLITE_OK);
}

static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

/* An account of TENANT_A referencing the filer `filer_uuid`. */
static void seed_account(const char *path, const char *filer_uuid)
{
    char sql[768];
    snprintf(sql, sizeof sql,
             "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
             " created_at, updated_at) VALUES ('00000000-0000-4000-8000-00000000a001', '%s',"
             " 'owner', 'O', 'individual', 1, 1);"
             "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid,"
             " cost_basis_method, created_at, updated_at) VALUES"
             " ('00000000-0000-4000-8000-00000000a002', '%s', 'acc',"
             " '00000000-0000-4000-8000-00000000a001', '%s', 'FIFO', 1, 1);",
             TENANT_A, TENANT_A, filer_uuid);
    raw_exec(path, sql);
}

static void assert_same_filer(const store_filer_t *got, const store_filer_t *want)
{
    assert_string_equal(got->uuid, want->uuid);
    assert_string_equal(got->id, want->id);
    assert_string_equal(got->name, want->name);
    assert_int_equal(got->is_default, want->is_default);
    assert_int_equal(got->tin_sealed_len, want->tin_sealed_len);
    assert_memory_equal(got->tin_sealed, want->tin_sealed, want->tin_sealed_len);
    assert_int_equal(got->created_at, want->created_at);
    assert_int_equal(got->updated_at, want->updated_at);
}

static int fixture_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->store = SCRATCH_STORE_OPEN(fx, "taxd.db");
    if (fx->store == NULL)
        return -1;
    fx->conn = store_acquire(fx->store);
    if (fx->conn == NULL)
        return -1;
    create_tenant(fx->conn, TENANT_A, DEFAULT_A, "00000000-0000-4000-8000-0000000000ea");
    create_tenant(fx->conn, TENANT_B, DEFAULT_B, "00000000-0000-4000-8000-0000000000eb");
    *state = fx;
    return 0;
}

static int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx->conn != NULL)
        store_release(fx->store, fx->conn);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

/* ---- create */

static void test_create_then_get(void **state)
{
    fixture_t *fx = *state;
    store_filer_t with_tin = make_filer(FILER_1, "f1", "Filer ünï 日本", 40);
    store_filer_t without = make_filer(FILER_2, "f2", "Plain", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &with_tin), STORE_OK);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &without), STORE_OK);

    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    assert_same_filer(&got, &with_tin);
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f2", &got), STORE_OK);
    assert_same_filer(&got, &without);
    /* No TIN is NULL in the column, not an empty blob. */
    assert_int_equal(raw_int(fx->path, "SELECT count(*) FROM filers WHERE id = 'f2'"
                                       " AND tin_sealed IS NULL"),
                     1);
    /* Scoped: tenant B does not see tenant A's filer. */
    assert_int_equal(store_filer_get(fx->conn, TENANT_B, "f1", &got), STORE_NOT_FOUND);
}

static void test_create_longest_values(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "", "", STORE_TIN_SEALED_MAX);
    memset(f.id, 'i', STORE_ID_MAX - 1);
    f.id[STORE_ID_MAX - 1] = '\0';
    for (size_t i = 0; i + 4 < sizeof f.name; i += 4)
        memcpy(f.name + i, "\xF0\x9F\x99\x82", 4); /* 256 four-byte characters */
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, f.id, &got), STORE_OK);
    assert_same_filer(&got, &f);
    assert_int_equal(strlen(got.name), 1024);
}

static void test_create_conflicts(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    /* Same caller id in the same tenant. */
    store_filer_t dup = make_filer(FILER_2, "f1", "Two", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &dup), STORE_CONFLICT);
    store_filer_t def = make_filer(FILER_2, "default", "Two", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &def), STORE_CONFLICT);
    /* Same service uuid anywhere. */
    store_filer_t same_uuid = make_filer(FILER_1, "other", "Two", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_B, &same_uuid), STORE_CONFLICT);
    /* The same caller id in another tenant is independent. */
    assert_int_equal(store_filer_create(fx->conn, TENANT_B, &dup), STORE_OK);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    assert_string_equal(got.name, "One");
    assert_int_equal(store_filer_get(fx->conn, TENANT_B, "f1", &got), STORE_OK);
    assert_string_equal(got.name, "Two");
}

static void test_create_refuses_bad_arguments(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    f.is_default = true; /* only a tenant's creation makes a default filer */
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_ERROR);
    f = make_filer(FILER_1, "f1", "One", 0);
    memset(f.id, 'x', sizeof f.id); /* unterminated */
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_ERROR);
    f = make_filer(FILER_1, "f1", "One", 0);
    f.tin_sealed_len = STORE_TIN_SEALED_MAX + 1;
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_ERROR);
    assert_int_equal(raw_int(fx->path, "SELECT count(*) FROM filers"), 2);
}

static void test_create_for_unknown_tenant_is_not_found(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, "00000000-0000-4000-8000-0000000000ff", &f),
                     STORE_NOT_FOUND);
}

/* ---- list */

typedef struct seen {
    int count;
    char ids[8][STORE_ID_MAX];
    size_t tin_lens[8];
} seen_t;

static int collect(const store_filer_t *filer, void *ctx)
{
    seen_t *seen = ctx;
    snprintf(seen->ids[seen->count], STORE_ID_MAX, "%s", filer->id);
    seen->tin_lens[seen->count++] = filer->tin_sealed_len;
    return 0;
}

static void test_list_carries_tins_and_is_scoped(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "a", "A", 33);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_t g = make_filer(FILER_2, "b", "B", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_B, &g), STORE_OK);
    seen_t seen = {0};
    bool more = true;
    assert_int_equal(store_filer_list(fx->conn, TENANT_A, NULL, 10, collect, &seen, &more),
                     STORE_OK);
    assert_int_equal(seen.count, 2);
    assert_string_equal(seen.ids[0], "a");
    assert_int_equal(seen.tin_lens[0], 33);
    assert_string_equal(seen.ids[1], "default");
    assert_int_equal(seen.tin_lens[1], 0);
    assert_false(more);
}

/* ---- update */

static void test_update_merges(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 30);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_t out;

    /* The name only: the TIN is kept. */
    store_filer_patch_t rename = {.name = "Renamed", .updated_at = 3000};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, FILER_1, &rename, &out), STORE_OK);
    store_filer_t want = f;
    snprintf(want.name, sizeof want.name, "Renamed");
    want.updated_at = 3000;
    assert_same_filer(&out, &want);

    /* A new TIN: the name is kept. */
    uint8_t sealed[50];
    memset(sealed, 0x5A, sizeof sealed);
    store_filer_patch_t set = {.tin = STORE_FILER_TIN_SET, .tin_sealed = sealed,
                               .tin_sealed_len = sizeof sealed, .updated_at = 4000};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, FILER_1, &set, &out), STORE_OK);
    memcpy(want.tin_sealed, sealed, sizeof sealed);
    want.tin_sealed_len = sizeof sealed;
    want.updated_at = 4000;
    assert_same_filer(&out, &want);

    /* Cleared. */
    store_filer_patch_t clear = {.tin = STORE_FILER_TIN_CLEAR, .updated_at = 5000};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, FILER_1, &clear, &out), STORE_OK);
    want.tin_sealed_len = 0;
    want.updated_at = 5000;
    assert_same_filer(&out, &want);

    /* What update answered is what is stored. */
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    assert_same_filer(&got, &want);
    assert_int_equal(raw_int(fx->path, "SELECT count(*) FROM filers WHERE id = 'f1'"
                                       " AND tin_sealed IS NULL"),
                     1);
}

static void test_update_is_scoped_by_tenant_and_uuid(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_patch_t rename = {.name = "Taken over", .updated_at = 3000};
    store_filer_t out;
    /* Another tenant cannot change it, even knowing its uuid. */
    assert_int_equal(store_filer_update(fx->conn, TENANT_B, FILER_1, &rename, &out),
                     STORE_NOT_FOUND);
    /* A uuid that is not (or no longer) the filer's. */
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, FILER_2, &rename, &out),
                     STORE_NOT_FOUND);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    assert_same_filer(&got, &f);
}

static void test_update_refuses_bad_patches(void **state)
{
    fixture_t *fx = *state;
    store_filer_t out;
    store_filer_patch_t no_bytes = {.tin = STORE_FILER_TIN_SET, .updated_at = 1};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, DEFAULT_A, &no_bytes, &out),
                     STORE_ERROR);
    uint8_t big[STORE_TIN_SEALED_MAX + 1] = {0};
    store_filer_patch_t too_big = {.tin = STORE_FILER_TIN_SET, .tin_sealed = big,
                                   .tin_sealed_len = sizeof big, .updated_at = 1};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, DEFAULT_A, &too_big, &out),
                     STORE_ERROR);
    store_filer_patch_t unknown = {.tin = (store_filer_tin_change_t)7, .updated_at = 1};
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, DEFAULT_A, &unknown, &out),
                     STORE_ERROR);
    assert_int_equal(
        raw_int(fx->path, "SELECT updated_at FROM filers WHERE uuid = '" DEFAULT_A "'"), 1000);
}

/* ---- delete */

static void test_delete(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_refusal_t refusal = STORE_FILER_HAS_ACCOUNTS;
    /* Another tenant's filer is not found and stays. */
    assert_int_equal(store_filer_delete(fx->conn, TENANT_B, "f1", &refusal), STORE_NOT_FOUND);
    assert_int_equal(refusal, STORE_FILER_DELETABLE);
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "f1", &refusal), STORE_OK);
    assert_int_equal(refusal, STORE_FILER_DELETABLE);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_NOT_FOUND);
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "f1", &refusal), STORE_NOT_FOUND);
    /* The id can be used again. */
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    /* refusal may be NULL. */
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "f1", NULL), STORE_OK);
}

static void test_delete_default_is_refused(void **state)
{
    fixture_t *fx = *state;
    store_filer_refusal_t refusal = STORE_FILER_DELETABLE;
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "default", &refusal), STORE_CONFLICT);
    assert_int_equal(refusal, STORE_FILER_IS_DEFAULT);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "default", &got), STORE_OK);
}

static void test_delete_with_accounts_is_refused(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    seed_account(fx->path, FILER_1);
    store_filer_refusal_t refusal = STORE_FILER_DELETABLE;
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "f1", &refusal), STORE_CONFLICT);
    assert_int_equal(refusal, STORE_FILER_HAS_ACCOUNTS);
    store_filer_t got;
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    /* The refusal rolled back cleanly: the connection writes again. */
    raw_exec(fx->path, "UPDATE accounts SET filer_uuid = '" DEFAULT_A "'");
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "f1", &refusal), STORE_OK);
    assert_int_equal(refusal, STORE_FILER_DELETABLE);
}

/* ---- failures */

static void test_damaged_tin_is_an_error(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
    store_filer_t got;
    raw_exec(fx->path, "UPDATE filers SET tin_sealed = zeroblob(129) WHERE id = 'f1'");
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_ERROR);
    raw_exec(fx->path, "UPDATE filers SET tin_sealed = zeroblob(0) WHERE id = 'f1'");
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_ERROR);
    raw_exec(fx->path, "UPDATE filers SET tin_sealed = zeroblob(128) WHERE id = 'f1'");
    assert_int_equal(store_filer_get(fx->conn, TENANT_A, "f1", &got), STORE_OK);
    assert_int_equal(got.tin_sealed_len, 128);
}

static void test_injected_fault_fails_every_write(void **state)
{
    fixture_t *fx = *state;
    store_filer_t f = make_filer(FILER_1, "f1", "One", 0);
    store_filer_t out;
    store_filer_patch_t rename = {.name = "x", .updated_at = 1};
    store_set_fault(fx->store, true);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_ERROR);
    assert_int_equal(store_filer_update(fx->conn, TENANT_A, DEFAULT_A, &rename, &out),
                     STORE_ERROR);
    assert_int_equal(store_filer_delete(fx->conn, TENANT_A, "default", NULL), STORE_ERROR);
    store_set_fault(fx->store, false);
    assert_int_equal(store_filer_create(fx->conn, TENANT_A, &f), STORE_OK);
}

#define FIXTURE_TEST(name) cmocka_unit_test_setup_teardown(name, fixture_setup, fixture_teardown)

int main(void)
{
    const char *filter = getenv("TEST_FILTER");
    if (filter != NULL)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_create_then_get),
        FIXTURE_TEST(test_create_longest_values),
        FIXTURE_TEST(test_create_conflicts),
        FIXTURE_TEST(test_create_refuses_bad_arguments),
        FIXTURE_TEST(test_create_for_unknown_tenant_is_not_found),
        FIXTURE_TEST(test_list_carries_tins_and_is_scoped),
        FIXTURE_TEST(test_update_merges),
        FIXTURE_TEST(test_update_is_scoped_by_tenant_and_uuid),
        FIXTURE_TEST(test_update_refuses_bad_patches),
        FIXTURE_TEST(test_delete),
        FIXTURE_TEST(test_delete_default_is_refused),
        FIXTURE_TEST(test_delete_with_accounts_is_refused),
        FIXTURE_TEST(test_damaged_tin_is_an_error),
        FIXTURE_TEST(test_injected_fault_fails_every_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
