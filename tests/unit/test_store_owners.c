/* test_store_owners: the account-owner store (src/store/owners.c) against
 * real database files in a mkdtemp directory, one fresh database per test.
 * A raw sqlite3 connection checks what is on disk where the store API would
 * hide it (NULL versus "", the sealed bytes). The store sees only sealed
 * TINs, so the tests use arbitrary bytes for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/owners.h"
#include "store/store.h"

#include "scratch_store.h"

typedef struct fixture {
    char dir[64];
    char path[160];
    store_t *store;
    store_conn_t *conn;
    char tenant_a[STORE_UUID_LEN];
    char tenant_b[STORE_UUID_LEN];
} fixture_t;

/* ---- helpers */


static void fake_uuid(unsigned n, char out[STORE_UUID_LEN])
{
    snprintf(out, STORE_UUID_LEN, "00000000-0000-4000-8000-%012u", n);
}

static void create_tenant(store_conn_t *conn, unsigned n, char id[STORE_UUID_LEN])
{
    store_tenant_t tenant;
    memset(&tenant, 0, sizeof tenant);
    fake_uuid(n, tenant.id);
    snprintf(tenant.name, sizeof tenant.name, "tenant %u", n);
    tenant.created_at = 1700000000000;
    store_tenant_seed_t seed;
    fake_uuid(n + 100000, seed.default_filer_uuid);
    fake_uuid(n + 200000, seed.usd_asset_uuid);
    assert_int_equal(store_tenant_create(conn, &tenant, &seed, NULL), STORE_OK);
    memcpy(id, tenant.id, STORE_UUID_LEN);
}

/* An owner with only the required fields (uuid n). */
static store_owner_t minimal_owner(unsigned n, const char *id)
{
    store_owner_t o;
    memset(&o, 0, sizeof o);
    fake_uuid(n, o.uuid);
    snprintf(o.id, sizeof o.id, "%s", id);
    snprintf(o.name, sizeof o.name, "Owner %s", id);
    snprintf(o.account_owner_type, sizeof o.account_owner_type, "entity");
    o.created_at = o.updated_at = 1700000001000 + n;
    return o;
}

/* Every field set, the sealed TIN included. */
static store_owner_t full_owner(unsigned n, const char *id)
{
    store_owner_t o = minimal_owner(n, id);
    snprintf(o.account_owner_type, sizeof o.account_owner_type, "individual");
    snprintf(o.tax_country_code, sizeof o.tax_country_code, "US");
    o.tin_sealed_len = 37;
    for (size_t i = 0; i < o.tin_sealed_len; i++)
        o.tin_sealed[i] = (uint8_t)(i * 11 + n); /* includes 0x00 bytes: a blob, not text */
    snprintf(o.tin_type, sizeof o.tin_type, "SSN");
    snprintf(o.birth_date, sizeof o.birth_date, "1980-02-29");
    snprintf(o.email, sizeof o.email, "a@example.com");
    snprintf(o.address_line1, sizeof o.address_line1, "1 Main St");
    snprintf(o.address_line2, sizeof o.address_line2, "Apt 2");
    snprintf(o.address_city, sizeof o.address_city, "Zürich");
    snprintf(o.address_state, sizeof o.address_state, "ZH");
    snprintf(o.address_postal_code, sizeof o.address_postal_code, "8001");
    snprintf(o.address_country_code, sizeof o.address_country_code, "CH");
    return o;
}

static void assert_owner_equal(const store_owner_t *a, const store_owner_t *b)
{
    assert_string_equal(a->uuid, b->uuid);
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->account_owner_type, b->account_owner_type);
    assert_string_equal(a->tax_country_code, b->tax_country_code);
    assert_int_equal(a->tin_sealed_len, b->tin_sealed_len);
    assert_memory_equal(a->tin_sealed, b->tin_sealed, a->tin_sealed_len);
    assert_string_equal(a->tin_type, b->tin_type);
    assert_string_equal(a->birth_date, b->birth_date);
    assert_string_equal(a->email, b->email);
    assert_string_equal(a->address_line1, b->address_line1);
    assert_string_equal(a->address_line2, b->address_line2);
    assert_string_equal(a->address_city, b->address_city);
    assert_string_equal(a->address_state, b->address_state);
    assert_string_equal(a->address_postal_code, b->address_postal_code);
    assert_string_equal(a->address_country_code, b->address_country_code);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->updated_at, b->updated_at);
}

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* An integer from one row of sql with ?1 bound to key. */
static int64_t raw_int(const char *path, const char *sql, const char *key)
{
    sqlite3 *db = raw_open(path);
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

typedef struct collected {
    char ids[16][STORE_ID_MAX];
    size_t count;
    size_t stop_after; /* 0 = never stop */
} collected_t;

static int collect(const store_owner_t *owner, void *ctx)
{
    collected_t *c = ctx;
    assert_true(c->count < 16);
    snprintf(c->ids[c->count], STORE_ID_MAX, "%s", owner->id);
    c->count++;
    return c->stop_after != 0 && c->count == c->stop_after;
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
    *state = fx;
    if (fx->conn == NULL)
        return -1;
    create_tenant(fx->conn, 1, fx->tenant_a);
    create_tenant(fx->conn, 2, fx->tenant_b);
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

/* ---- tests */

/* Every field comes back as written, the sealed TIN byte for byte. */
static void test_create_get_round_trip(void **state)
{
    fixture_t *fx = *state;
    store_owner_t full = full_owner(10, "full");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &full), STORE_OK);
    store_owner_t got;
    memset(&got, 0x5a, sizeof got); /* every field must be written */
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "full", &got), STORE_OK);
    assert_owner_equal(&got, &full);
    assert_int_equal(raw_int(fx->path,
                             "SELECT length(tin_sealed) FROM account_owners WHERE id = ?1", "full"),
                     37);
}

/* Absent optional values are NULL on disk and "" (or length 0) in C. */
static void test_optional_fields_absent(void **state)
{
    fixture_t *fx = *state;
    store_owner_t min = minimal_owner(11, "min");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &min), STORE_OK);
    store_owner_t got;
    memset(&got, 0x5a, sizeof got);
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "min", &got), STORE_OK);
    assert_owner_equal(&got, &min);
    assert_int_equal(got.tin_sealed_len, 0);
    assert_int_equal(raw_int(fx->path,
                             "SELECT (tax_country_code IS NULL) + (tin_sealed IS NULL) +"
                             " (tin_type IS NULL) + (birth_date IS NULL) + (email IS NULL) +"
                             " (address_line1 IS NULL) + (address_line2 IS NULL) +"
                             " (address_city IS NULL) + (address_state IS NULL) +"
                             " (address_postal_code IS NULL) + (address_country_code IS NULL)"
                             " FROM account_owners WHERE id = ?1",
                             "min"),
                     11);
}

/* A taken (tenant, id) is a conflict that leaves the first record alone; the
 * same id in another tenant is a different record. */
static void test_conflict_within_tenant_only(void **state)
{
    fixture_t *fx = *state;
    store_owner_t first = full_owner(20, "same");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &first), STORE_OK);
    store_owner_t again = minimal_owner(21, "same");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &again), STORE_CONFLICT);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "same", &got), STORE_OK);
    assert_owner_equal(&got, &first);

    assert_int_equal(store_owner_create(fx->conn, fx->tenant_b, &again), STORE_OK);
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_b, "same", &got), STORE_OK);
    assert_owner_equal(&got, &again);
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "same", &got), STORE_OK);
    assert_string_equal(got.uuid, first.uuid);

    /* A uuid already used is a conflict too. */
    store_owner_t uuid_taken = minimal_owner(20, "other");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &uuid_taken), STORE_CONFLICT);
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "other", &got), STORE_NOT_FOUND);
}

static void test_unknown_tenant_and_owner(void **state)
{
    fixture_t *fx = *state;
    char nobody[STORE_UUID_LEN];
    fake_uuid(999, nobody);
    store_owner_t o = minimal_owner(30, "x");
    assert_int_equal(store_owner_create(fx->conn, nobody, &o), STORE_NOT_FOUND);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "x", &got), STORE_NOT_FOUND);
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);
    /* Another tenant's owner is not found by its caller id. */
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_b, "x", &got), STORE_NOT_FOUND);
}

/* Caller-id order (bytewise), one tenant only, pages by after_id. */
static void test_list_pages(void **state)
{
    fixture_t *fx = *state;
    const char *ids[] = {"c", "a", "é", "b", "B"};
    for (unsigned i = 0; i < 5; i++) {
        store_owner_t o = minimal_owner(40 + i, ids[i]);
        assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);
    }
    store_owner_t foreign = minimal_owner(49, "a0");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_b, &foreign), STORE_OK);

    collected_t p1 = {0};
    bool more = false;
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, NULL, 2, collect, &p1, &more),
                     STORE_OK);
    assert_int_equal(p1.count, 2);
    assert_string_equal(p1.ids[0], "B");
    assert_string_equal(p1.ids[1], "a");
    assert_true(more);

    collected_t p2 = {0};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, "a", 2, collect, &p2, &more),
                     STORE_OK);
    assert_int_equal(p2.count, 2);
    assert_string_equal(p2.ids[0], "b");
    assert_string_equal(p2.ids[1], "c");
    assert_true(more);

    collected_t p3 = {0};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, "c", 2, collect, &p3, &more),
                     STORE_OK);
    assert_int_equal(p3.count, 1);
    assert_string_equal(p3.ids[0], "é");
    assert_false(more);

    /* Exactly a page's worth left: no "more". */
    collected_t exact = {0};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, "b", 2, collect, &exact, &more),
                     STORE_OK);
    assert_int_equal(exact.count, 2);
    assert_false(more);

    /* Stopped by the callback: more still tells whether rows follow. */
    collected_t stop = {.stop_after = 1};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, "", 10, collect, &stop, &more),
                     STORE_OK);
    assert_int_equal(stop.count, 1);
    assert_true(more);

    collected_t other = {0};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_b, "", 10, collect, &other, NULL),
                     STORE_OK);
    assert_int_equal(other.count, 1);
    assert_string_equal(other.ids[0], "a0");
}

/* A whole-record replace by uuid within the tenant: cleared fields become
 * NULL, id and created_at stay, updated_at moves. */
static void test_update_replaces(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = full_owner(50, "u");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);

    store_owner_t changed = minimal_owner(50, "u");
    snprintf(changed.name, sizeof changed.name, "Renamed");
    changed.tin_sealed_len = 29;
    memset(changed.tin_sealed, 0xab, changed.tin_sealed_len);
    snprintf(changed.tin_type, sizeof changed.tin_type, "EIN");
    changed.created_at = 1; /* ignored: created_at never changes */
    changed.updated_at = o.updated_at + 5000;
    assert_int_equal(store_owner_update(fx->conn, fx->tenant_a, &changed), STORE_OK);

    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "u", &got), STORE_OK);
    changed.created_at = o.created_at;
    assert_owner_equal(&got, &changed);
    assert_int_equal(raw_int(fx->path,
                             "SELECT (email IS NULL) + (address_line1 IS NULL) +"
                             " (birth_date IS NULL) FROM account_owners WHERE id = ?1",
                             "u"),
                     3);

    /* Removing the TIN stores NULL. */
    changed.tin_sealed_len = 0;
    assert_int_equal(store_owner_update(fx->conn, fx->tenant_a, &changed), STORE_OK);
    assert_int_equal(
        raw_int(fx->path, "SELECT tin_sealed IS NULL FROM account_owners WHERE id = ?1", "u"), 1);
}

static void test_update_not_found_across_tenants(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = full_owner(60, "mine");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);
    store_owner_t hijack = minimal_owner(60, "mine");
    snprintf(hijack.name, sizeof hijack.name, "Hijacked");
    assert_int_equal(store_owner_update(fx->conn, fx->tenant_b, &hijack), STORE_NOT_FOUND);
    store_owner_t unknown = minimal_owner(61, "nobody");
    assert_int_equal(store_owner_update(fx->conn, fx->tenant_a, &unknown), STORE_NOT_FOUND);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "mine", &got), STORE_OK);
    assert_owner_equal(&got, &o);
}

/* The lookups other records use to reference an owner. */
static void test_uuid_and_id_lookups(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = minimal_owner(70, "ref/o%1 é");
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);
    char uuid[STORE_UUID_LEN] = "";
    assert_int_equal(store_owner_uuid(fx->conn, fx->tenant_a, "ref/o%1 é", uuid), STORE_OK);
    assert_string_equal(uuid, o.uuid);
    assert_int_equal(store_owner_uuid(fx->conn, fx->tenant_b, "ref/o%1 é", uuid),
                     STORE_NOT_FOUND);
    assert_int_equal(store_owner_uuid(fx->conn, fx->tenant_a, "ref", uuid), STORE_NOT_FOUND);

    char id[STORE_ID_MAX] = "";
    assert_int_equal(store_owner_id_of(fx->conn, o.uuid, id), STORE_OK);
    assert_string_equal(id, "ref/o%1 é");
    char missing[STORE_UUID_LEN];
    fake_uuid(71, missing);
    assert_int_equal(store_owner_id_of(fx->conn, missing, id), STORE_NOT_FOUND);
}

/* The longest id (256 bytes) and the longest texts fit. */
static void test_largest_values(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = full_owner(80, "");
    memset(o.id, 'i', STORE_ID_MAX - 1);
    o.id[STORE_ID_MAX - 1] = '\0';
    memset(o.name, 'n', sizeof o.name - 1);
    o.name[sizeof o.name - 1] = '\0';
    memset(o.email, 'e', sizeof o.email - 1);
    o.email[sizeof o.email - 1] = '\0';
    o.tin_sealed_len = STORE_TIN_SEALED_MAX;
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_OK);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, o.id, &got), STORE_OK);
    assert_owner_equal(&got, &o);
}

/* Fields that do not hold a terminated string, or a sealed TIN longer than
 * the array, are refused before any SQL. */
static void test_bad_arguments(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = minimal_owner(90, "bad");
    memset(o.name, 'x', sizeof o.name); /* no NUL */
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_ERROR);
    o = minimal_owner(90, "bad");
    o.tin_sealed_len = STORE_TIN_SEALED_MAX + 1;
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_ERROR);
    assert_int_equal(store_owner_update(fx->conn, fx->tenant_a, &o), STORE_ERROR);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "bad", &got), STORE_NOT_FOUND);
}

/* An injected I/O fault fails every call, and nothing is written. */
static void test_fault(void **state)
{
    fixture_t *fx = *state;
    store_owner_t o = minimal_owner(95, "f");
    store_set_fault(fx->store, true);
    assert_int_equal(store_owner_create(fx->conn, fx->tenant_a, &o), STORE_ERROR);
    store_owner_t got;
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "f", &got), STORE_ERROR);
    char uuid[STORE_UUID_LEN];
    assert_int_equal(store_owner_uuid(fx->conn, fx->tenant_a, "f", uuid), STORE_ERROR);
    collected_t c = {0};
    assert_int_equal(store_owner_list(fx->conn, fx->tenant_a, NULL, 5, collect, &c, NULL),
                     STORE_ERROR);
    store_set_fault(fx->store, false);
    assert_int_equal(store_owner_get(fx->conn, fx->tenant_a, "f", &got), STORE_NOT_FOUND);
}

#define FIXTURE_TEST(name) cmocka_unit_test_setup_teardown(name, fixture_setup, fixture_teardown)

int main(void)
{
    const char *filter = getenv("TEST_FILTER");
    if (filter != NULL)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_create_get_round_trip),
        FIXTURE_TEST(test_optional_fields_absent),
        FIXTURE_TEST(test_conflict_within_tenant_only),
        FIXTURE_TEST(test_unknown_tenant_and_owner),
        FIXTURE_TEST(test_list_pages),
        FIXTURE_TEST(test_update_replaces),
        FIXTURE_TEST(test_update_not_found_across_tenants),
        FIXTURE_TEST(test_uuid_and_id_lookups),
        FIXTURE_TEST(test_largest_values),
        FIXTURE_TEST(test_bad_arguments),
        FIXTURE_TEST(test_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
