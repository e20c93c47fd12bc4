/* test_store_accounts: the accounts store against a real database file in a
 * mkdtemp directory, fresh for each test. Two tenants are made through
 * store_tenant_create (each with its default filer "default"); account
 * owners and extra filers are seeded with a raw sqlite3 connection, standing
 * in for the other store files that own those tables, so these tests depend
 * only on the schema.
 *
 * What they prove: caller ids in and out (owner and filer resolved to uuids
 * and back), which reference was missing, 409 before 404, tenant scoping,
 * keyset pagination with the owner filter, and the read-merge-write update
 * (refusal writes nothing, no change keeps updated_at). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/accounts.h"
#include "store/store.h"

#include "scratch_store.h"

#define TENANT_A "00000000-0000-4000-8000-00000000000a"
#define TENANT_B "00000000-0000-4000-8000-00000000000b"
#define T0 1700000000000

typedef scratch_fixture_t fixture_t;

/* ---- fixture */

static void make_tenant(store_conn_t *conn, const char *id, char tag)
{
    store_tenant_t t = {.created_at = T0};
    snprintf(t.id, sizeof t.id, "%s", id);
    snprintf(t.name, sizeof t.name, "tenant %c", tag);
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid,
             "00000000-0000-4000-8000-0000000f000%c", tag);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid,
             "00000000-0000-4000-8000-0000000e000%c", tag);
    assert_int_equal(store_tenant_create(conn, &t, &seed, NULL), STORE_OK);
}

static int setup(void **state)
{
    fixture_t *fx = scratch_fixture_open();
    if (fx == NULL)
        return -1;
    make_tenant(fx->conn, TENANT_A, 'a');
    make_tenant(fx->conn, TENANT_B, 'b');
    *state = fx;
    return 0;
}


static int teardown(void **state)
{
    scratch_fixture_close(*state);
    return 0;
}

/* ---- seeding and building */

/* Inserts an owner or filer row; n makes its uuid unique. */
static void seed_row(fixture_t *fx, const char *table, const char *tenant, const char *id, int n)
{
    static const char OWNER_SQL[] =
        "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type, created_at,"
        " updated_at) VALUES (?1, ?2, ?3, 'Owner', 'individual', 1, 1)";
    static const char FILER_SQL[] =
        "INSERT INTO filers (uuid, tenant_id, id, name, is_default, created_at, updated_at)"
        " VALUES (?1, ?2, ?3, 'Filer', 0, 1, 1)";
    char uuid[STORE_UUID_LEN];
    snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", n);
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(fx->raw, strcmp(table, "owner") == 0 ? OWNER_SQL
                                                                              : FILER_SQL,
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(stmt, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, id, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
}

static store_account_t account(const char *id, const char *owner_id, int n)
{
    store_account_t a;
    memset(&a, 0, sizeof a);
    snprintf(a.uuid, sizeof a.uuid, "00000000-0000-4000-9000-%012d", n);
    snprintf(a.id, sizeof a.id, "%s", id);
    snprintf(a.owner_id, sizeof a.owner_id, "%s", owner_id);
    snprintf(a.filer_id, sizeof a.filer_id, "default");
    snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "FIFO");
    a.created_at = a.updated_at = T0 + n;
    return a;
}

static void assert_account_equal(const store_account_t *got, const store_account_t *want)
{
    assert_string_equal(got->uuid, want->uuid);
    assert_string_equal(got->id, want->id);
    assert_string_equal(got->owner_id, want->owner_id);
    assert_string_equal(got->filer_id, want->filer_id);
    assert_string_equal(got->name, want->name);
    assert_string_equal(got->cost_basis_method, want->cost_basis_method);
    assert_int_equal(got->austria_tax_year, want->austria_tax_year);
    assert_int_equal(got->created_at, want->created_at);
    assert_int_equal(got->updated_at, want->updated_at);
}

static void create_ok(fixture_t *fx, const char *tenant, const store_account_t *a)
{
    store_account_missing_t missing = STORE_ACCOUNT_MISSING_FILER;
    assert_int_equal(store_account_create(fx->conn, tenant, a, &missing), STORE_OK);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_NONE);
}

static int64_t raw_count(fixture_t *fx, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(fx->raw, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
}

/* ---- create and get */

static void test_create_get_round_trip(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    seed_row(fx, "filer", TENANT_A, "f/2", 2);
    store_account_t a = account("acc 1", "o1", 1);
    snprintf(a.filer_id, sizeof a.filer_id, "f/2");
    snprintf(a.name, sizeof a.name, "Savings \xc3\xa9");
    snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "AUSTRIA");
    a.austria_tax_year = 2024;
    create_ok(fx, TENANT_A, &a);

    store_account_t got;
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "acc 1", &got), STORE_OK);
    assert_account_equal(&got, &a);
    /* References are stored as uuids, absent values as NULL. */
    assert_int_equal(raw_count(fx, "SELECT count(*) FROM accounts WHERE owner_uuid ="
                                   " '00000000-0000-4000-8000-000000000001' AND filer_uuid ="
                                   " '00000000-0000-4000-8000-000000000002'"),
                     1);

    store_account_t plain = account("acc 2", "o1", 2);
    create_ok(fx, TENANT_A, &plain);
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "acc 2", &got), STORE_OK);
    assert_account_equal(&got, &plain);
    assert_int_equal(raw_count(fx, "SELECT count(*) FROM accounts WHERE id = 'acc 2'"
                                   " AND name IS NULL AND austria_tax_year IS NULL"),
                     1);
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "acc 3", &got), STORE_NOT_FOUND);
}

static void test_create_conflict_and_missing_references(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    store_account_t a = account("acc", "o1", 1);
    create_ok(fx, TENANT_A, &a);

    store_account_missing_t missing;
    store_account_t again = account("acc", "ghost", 2); /* taken id wins over a missing owner */
    assert_int_equal(store_account_create(fx->conn, TENANT_A, &again, &missing), STORE_CONFLICT);

    store_account_t b = account("b", "ghost", 3);
    snprintf(b.filer_id, sizeof b.filer_id, "no-filer");
    assert_int_equal(store_account_create(fx->conn, TENANT_A, &b, &missing), STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_OWNER);
    snprintf(b.owner_id, sizeof b.owner_id, "o1");
    assert_int_equal(store_account_create(fx->conn, TENANT_A, &b, &missing), STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_FILER);

    assert_int_equal(raw_count(fx, "SELECT count(*) FROM accounts"), 1);
    store_account_t got;
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "acc", &got), STORE_OK);
    assert_account_equal(&got, &a);
}

static void test_create_refuses_inconsistent_records(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    store_account_missing_t missing;
    store_account_t a = account("a", "o1", 1);
    a.austria_tax_year = 2024; /* FIFO with a year */
    assert_int_equal(store_account_create(fx->conn, TENANT_A, &a, &missing), STORE_ERROR);
    snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "LIFO");
    assert_int_equal(store_account_create(fx->conn, TENANT_A, &a, &missing), STORE_ERROR);
    assert_int_equal(raw_count(fx, "SELECT count(*) FROM accounts"), 0);

    assert_true(store_account_method_valid("AUSTRIA", 2024));
    assert_false(store_account_method_valid("AUSTRIA", 0));
    assert_true(store_account_method_valid("HIFO", 0));
    assert_false(store_account_method_valid("HIFO", 2024));
    assert_false(store_account_method_valid("fifo", 0));
}

static void test_tenants_are_separate(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    seed_row(fx, "filer", TENANT_A, "fa", 2);
    store_account_t a = account("shared", "o1", 1);
    create_ok(fx, TENANT_A, &a);

    store_account_t got;
    assert_int_equal(store_account_get(fx->conn, TENANT_B, "shared", &got), STORE_NOT_FOUND);
    char uuid[STORE_UUID_LEN], method[DOMAIN_METHOD_SIZE];
    assert_int_equal(store_account_uuid(fx->conn, TENANT_B, "shared", uuid, method),
                     STORE_NOT_FOUND);

    /* A's owner and filer do not exist for B. */
    store_account_missing_t missing;
    store_account_t b = account("shared", "o1", 3);
    assert_int_equal(store_account_create(fx->conn, TENANT_B, &b, &missing), STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_OWNER);
    seed_row(fx, "owner", TENANT_B, "o1", 4);
    snprintf(b.filer_id, sizeof b.filer_id, "fa");
    assert_int_equal(store_account_create(fx->conn, TENANT_B, &b, &missing), STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_FILER);

    /* The same caller ids are free in B, and B's default filer is its own. */
    snprintf(b.filer_id, sizeof b.filer_id, "default");
    create_ok(fx, TENANT_B, &b);
    assert_int_equal(raw_count(fx, "SELECT count(*) FROM accounts WHERE tenant_id = '" TENANT_B
                                   "' AND filer_uuid = '00000000-0000-4000-8000-0000000f000b'"),
                     1);
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "shared", &got), STORE_OK);
    assert_account_equal(&got, &a);
    assert_int_equal(store_account_get(fx->conn, TENANT_B, "shared", &got), STORE_OK);
    assert_account_equal(&got, &b);
}

static void test_account_uuid(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    store_account_t a = account("at", "o1", 7);
    snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "AUSTRIA");
    a.austria_tax_year = 2030;
    create_ok(fx, TENANT_A, &a);
    char uuid[STORE_UUID_LEN], method[DOMAIN_METHOD_SIZE];
    assert_int_equal(store_account_uuid(fx->conn, TENANT_A, "at", uuid, method), STORE_OK);
    assert_string_equal(uuid, a.uuid);
    assert_string_equal(method, "AUSTRIA");
    assert_int_equal(store_account_uuid(fx->conn, TENANT_A, "nope", uuid, method),
                     STORE_NOT_FOUND);
}

/* ---- list */

typedef struct collected {
    char ids[16][STORE_ID_MAX];
    size_t count;
    size_t stop_after; /* 0 = never stop */
} collected_t;

static int collect(const store_account_t *a, void *ctx)
{
    collected_t *c = ctx;
    snprintf(c->ids[c->count], sizeof c->ids[c->count], "%s", a->id);
    c->count++;
    return c->stop_after != 0 && c->count == c->stop_after;
}

static collected_t list(fixture_t *fx, const char *owner, const char *after, size_t limit,
                        bool *more)
{
    collected_t c = {.count = 0};
    assert_int_equal(
        store_account_list(fx->conn, TENANT_A, owner, after, limit, collect, &c, more), STORE_OK);
    return c;
}

static void test_list_pages_and_owner_filter(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    seed_row(fx, "owner", TENANT_A, "o2", 2);
    seed_row(fx, "owner", TENANT_B, "o1", 3);
    const char *ids[] = {"d", "B", "a", "c", "e"}; /* byte order: B a c d e */
    for (int i = 0; i < 5; i++) {
        store_account_t a = account(ids[i], i % 2 == 0 ? "o1" : "o2", 10 + i);
        create_ok(fx, TENANT_A, &a);
    }
    store_account_t other = account("0", "o1", 20);
    create_ok(fx, TENANT_B, &other);

    bool more = false;
    collected_t c = list(fx, NULL, NULL, 2, &more);
    assert_int_equal(c.count, 2);
    assert_string_equal(c.ids[0], "B");
    assert_string_equal(c.ids[1], "a");
    assert_true(more);
    c = list(fx, NULL, "a", 2, &more);
    assert_string_equal(c.ids[0], "c");
    assert_string_equal(c.ids[1], "d");
    assert_true(more);
    c = list(fx, NULL, "d", 2, &more);
    assert_int_equal(c.count, 1);
    assert_string_equal(c.ids[0], "e");
    assert_false(more);
    c = list(fx, NULL, "", 5, &more); /* exactly the limit: nothing follows */
    assert_int_equal(c.count, 5);
    assert_false(more);

    /* o1 has d, a, e; o2 has B, c. */
    c = list(fx, "o1", NULL, 2, &more);
    assert_int_equal(c.count, 2);
    assert_string_equal(c.ids[0], "a");
    assert_string_equal(c.ids[1], "d");
    assert_true(more);
    c = list(fx, "o1", "d", 2, &more);
    assert_int_equal(c.count, 1);
    assert_string_equal(c.ids[0], "e");
    assert_false(more);
    c = list(fx, "o2", NULL, 10, &more);
    assert_int_equal(c.count, 2);
    assert_string_equal(c.ids[0], "B");
    assert_string_equal(c.ids[1], "c");
    c = list(fx, "ghost", NULL, 10, &more);
    assert_int_equal(c.count, 0);
    assert_false(more);

    /* A callback that stops early: more still tells whether rows follow. */
    c = (collected_t){.stop_after = 2};
    assert_int_equal(store_account_list(fx->conn, TENANT_A, NULL, NULL, 10, collect, &c, &more),
                     STORE_OK);
    assert_int_equal(c.count, 2);
    assert_true(more);
}

/* ---- update */

typedef struct merge_args {
    const char *owner_id;  /* NULL: keep */
    const char *filer_id;  /* NULL: keep */
    const char *name;      /* NULL: keep */
    const char *method;    /* NULL: keep */
    int year;              /* -1: keep */
    bool refuse;
    int calls;
} merge_args_t;

static bool merge(const store_account_t *current, store_account_t *next, void *ctx)
{
    merge_args_t *m = ctx;
    m->calls++;
    assert_string_equal(current->id, next->id);
    if (m->refuse)
        return false;
    if (m->owner_id != NULL)
        snprintf(next->owner_id, sizeof next->owner_id, "%s", m->owner_id);
    if (m->filer_id != NULL)
        snprintf(next->filer_id, sizeof next->filer_id, "%s", m->filer_id);
    if (m->name != NULL)
        snprintf(next->name, sizeof next->name, "%s", m->name);
    if (m->method != NULL)
        snprintf(next->cost_basis_method, sizeof next->cost_basis_method, "%s", m->method);
    if (m->year >= 0)
        next->austria_tax_year = m->year;
    snprintf(next->id, sizeof next->id, "ignored"); /* the store keeps id and uuid */
    snprintf(next->uuid, sizeof next->uuid, "ignored");
    return true;
}

static void test_update_merges_in_one_transaction(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    seed_row(fx, "owner", TENANT_A, "o2", 2);
    seed_row(fx, "filer", TENANT_A, "f2", 3);
    store_account_t a = account("u", "o1", 1);
    snprintf(a.name, sizeof a.name, "Old");
    create_ok(fx, TENANT_A, &a);

    store_account_t out;
    store_account_missing_t missing = STORE_ACCOUNT_MISSING_OWNER;
    merge_args_t m = {.owner_id = "o2", .filer_id = "f2", .name = "", .method = "AUSTRIA",
                      .year = 2024};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &m, T0 + 500, &out,
                                          &missing),
                     STORE_OK);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_NONE);
    store_account_t want = a;
    snprintf(want.owner_id, sizeof want.owner_id, "o2");
    snprintf(want.filer_id, sizeof want.filer_id, "f2");
    want.name[0] = '\0';
    snprintf(want.cost_basis_method, sizeof want.cost_basis_method, "AUSTRIA");
    want.austria_tax_year = 2024;
    want.updated_at = T0 + 500;
    assert_account_equal(&out, &want);
    store_account_t got;
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "u", &got), STORE_OK);
    assert_account_equal(&got, &want);

    /* A merge that changes nothing writes nothing: updated_at stays. */
    merge_args_t same = {.year = -1};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &same, T0 + 900, &out,
                                          &missing),
                     STORE_OK);
    assert_account_equal(&out, &want);
    assert_int_equal(same.calls, 1);
}

static void test_update_refusal_and_missing(void **state)
{
    fixture_t *fx = *state;
    seed_row(fx, "owner", TENANT_A, "o1", 1);
    store_account_t a = account("u", "o1", 1);
    create_ok(fx, TENANT_A, &a);
    store_account_t out;
    store_account_missing_t missing;

    merge_args_t refuse = {.refuse = true, .year = -1};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &refuse, T0 + 5, &out,
                                          &missing),
                     STORE_CONFLICT);
    assert_account_equal(&out, &a); /* the stored record, for the caller's message */

    merge_args_t any = {.year = -1, .name = "x"};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "nope", merge, &any, T0 + 5, &out,
                                          &missing),
                     STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_ACCOUNT);
    assert_int_equal(any.calls, 0);
    assert_int_equal(store_account_update(fx->conn, TENANT_B, "u", merge, &any, T0 + 5, &out,
                                          &missing),
                     STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_ACCOUNT);

    merge_args_t ghost = {.owner_id = "ghost", .filer_id = "no-filer", .year = -1};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &ghost, T0 + 5, &out,
                                          &missing),
                     STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_OWNER);
    merge_args_t nofiler = {.filer_id = "no-filer", .year = -1};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &nofiler, T0 + 5, &out,
                                          &missing),
                     STORE_NOT_FOUND);
    assert_int_equal(missing, STORE_ACCOUNT_MISSING_FILER);

    /* A merged record breaking the AUSTRIA rule is a caller bug, never stored. */
    merge_args_t broken = {.method = "AUSTRIA", .year = 0};
    assert_int_equal(store_account_update(fx->conn, TENANT_A, "u", merge, &broken, T0 + 5, &out,
                                          &missing),
                     STORE_ERROR);

    store_account_t got;
    assert_int_equal(store_account_get(fx->conn, TENANT_A, "u", &got), STORE_OK);
    assert_account_equal(&got, &a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_get_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_conflict_and_missing_references, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_refuses_inconsistent_records, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tenants_are_separate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_account_uuid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages_and_owner_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_merges_in_one_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_refusal_and_missing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
