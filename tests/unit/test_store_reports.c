/* test_store_reports: the report's read (store_report_read) against a real
 * database file. The tenant is made through store_tenant_create; its owner,
 * accounts and inventory summaries are seeded with a raw sqlite3 connection
 * standing in for the other store files (and for another process), so these
 * tests depend only on the schema.
 *
 * What they prove: the counts, the skipped ids and the rows of a report come
 * from one read snapshot (issue 5, "the rows are read in one read snapshot"):
 * a write committed by another connection while the read is under way, after
 * its first statement, is not seen by the later statements. And (issue 15,
 * "Report triggers are bounded"): the requested ids are stored once, as
 * given, and read back whole; skipped ids come out as their first positions
 * in that array; the count of reports pending or processing per tenant
 * refuses a trigger beyond max_active, in the insert's transaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/reports.h"
#include "store/store.h"

#include "scratch_store.h"

#define TENANT "00000000-0000-4000-8000-00000000000a"
#define FILER "00000000-0000-4000-8000-0000000f000a"
#define OWNER "00000000-0000-4000-8000-0000000d000a"
#define T0 1700000000000
#define ROWS_MAX 8

typedef scratch_fixture_t fixture_t;

/* What a read handed to its callbacks, and the write it makes midway. */
typedef struct seen {
    fixture_t *fx;
    const char *write_on_skip; /* SQL the raw connection commits at the first skipped id */
    int64_t skipped[ROWS_MAX];     /* positions in the requested array */
    size_t n_skipped;
    char rows[ROWS_MAX][64];   /* "account/asset/quantity" */
    size_t n_rows;
} seen_t;

/* ---- fixture */

static void raw_exec(fixture_t *fx, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(fx->raw, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err != NULL ? err : sqlite3_errstr(rc));
}

static int setup(void **state)
{
    fixture_t *fx = scratch_fixture_open();
    if (fx == NULL)
        return -1;
    store_tenant_t t = {.created_at = T0};
    snprintf(t.id, sizeof t.id, "%s", TENANT);
    snprintf(t.name, sizeof t.name, "tenant a");
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid, "%s", FILER);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid,
             "00000000-0000-4000-8000-0000000e000a");
    *state = fx;
    if (store_tenant_create(fx->conn, &t, &seed, NULL) != STORE_OK)
        return -1;
    raw_exec(fx, "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
                 " created_at, updated_at) VALUES ('" OWNER "', '" TENANT "', 'o1', 'Owner',"
                 " 'individual', 1, 1)");
    return 0;
}

static int teardown(void **state)
{
    scratch_fixture_close(*state);
    return 0;
}

/* SQL adding account `id` (uuid suffix n) with one summary of asset at qty. */
#define ACCOUNT_SQL(id, n, asset, qty)                                                        \
    "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, cost_basis_method,"  \
    " created_at, updated_at) VALUES ('00000000-0000-4000-8000-00000000010" n "', '" TENANT   \
    "', '" id "', '" OWNER "', '" FILER "', 'FIFO', 1, 1);"                                   \
    "INSERT INTO inventory_summaries (account, asset_code, total_quantity, total_cost,"       \
    " quantity_with_basis, average_unit_cost) VALUES ((SELECT seq FROM accounts WHERE uuid ="  \
    " '00000000-0000-4000-8000-00000000010" n "'), '" asset "', '" qty "', '10', '" qty        \
    "', NULL);"

/* ---- callbacks */

static int on_skipped(int64_t position, void *ctx)
{
    seen_t *s = ctx;
    if (s->n_skipped == 0 && s->write_on_skip != NULL)
        raw_exec(s->fx, s->write_on_skip); /* commits while the read is under way */
    if (s->n_skipped < ROWS_MAX)
        s->skipped[s->n_skipped++] = position;
    return 0;
}

/* A pending report of TENANT scoped by ids (NULL: every account), id
 * "00000000-0000-4000-8000-0000000c000<n>"; asserts it was admitted. */
static const char *make_report(fixture_t *fx, char n, const char *ids)
{
    static char id[STORE_UUID_LEN];
    store_report_t r = {.created_at = T0, .expires_at = T0 + 1000};
    snprintf(id, sizeof id, "00000000-0000-4000-8000-0000000c000%c", n);
    snprintf(r.id, sizeof r.id, "%s", id);
    snprintf(r.tenant_id, sizeof r.tenant_id, "%s", TENANT);
    snprintf(r.format, sizeof r.format, "csv");
    bool admitted = false;
    assert_int_equal(store_report_create(fx->conn, &r, ids, ids ? strlen(ids) : 0, 100,
                                         &admitted),
                     STORE_OK);
    assert_true(admitted);
    return id;
}

static int on_row(const store_report_row_t *row, void *ctx)
{
    seen_t *s = ctx;
    if (s->n_rows < ROWS_MAX)
        snprintf(s->rows[s->n_rows++], sizeof s->rows[0], "%s/%s/%s", row->account_id,
                 row->asset_code, row->total_quantity);
    return 0;
}

/* ---- tests */

/* Another connection commits, between the read's skipped ids and its rows,
 * a change to a row already counted, an account that was missing (with a
 * holding) and a new holding: the rows and counts are those of the snapshot
 * the read began with. Without the read transaction the rows would show
 * a1 at 9, a3 and a2's SOL. */
static void test_read_is_one_snapshot(void **state)
{
    fixture_t *fx = *state;
    raw_exec(fx, ACCOUNT_SQL("a1", "1", "BTC", "1") ACCOUNT_SQL("a2", "2", "ETH", "2"));
    seen_t s = {.fx = fx,
                .write_on_skip =
                    "BEGIN;"
                    "UPDATE inventory_summaries SET total_quantity = '9'"
                    " WHERE asset_code = 'BTC';" ACCOUNT_SQL("a3", "3", "DOGE", "3")
                    "INSERT INTO inventory_summaries (account, asset_code, total_quantity,"
                    " total_cost, quantity_with_basis) VALUES"
                    " ((SELECT seq FROM accounts WHERE uuid = '00000000-0000-4000-8000-000000000102'),"
                    " 'SOL', '5', '0', '0');"
                    "COMMIT;"};
    store_report_reader_t reader = {.skipped = on_skipped, .row = on_row, .ctx = &s};
    const char *report = make_report(fx, '1', "[\"a1\",\"a3\",\"a2\",\"a1\"]");
    assert_int_equal(store_report_read(fx->conn, TENANT, report, &reader), STORE_OK);
    assert_int_equal(reader.requested, 4);
    assert_int_equal(reader.included, 2);
    assert_int_equal(s.n_skipped, 1);
    assert_int_equal(s.skipped[0], 1); /* "a3" */
    assert_int_equal(s.n_rows, 2);
    assert_string_equal(s.rows[0], "a1/BTC/1");
    assert_string_equal(s.rows[1], "a2/ETH/2");

    /* the write did commit: the next read sees it */
    seen_t after = {.fx = fx};
    store_report_reader_t again = {.skipped = on_skipped, .row = on_row, .ctx = &after};
    report = make_report(fx, '2', "[\"a1\",\"a3\",\"a2\"]");
    assert_int_equal(store_report_read(fx->conn, TENANT, report, &again), STORE_OK);
    assert_int_equal(again.included, 3);
    assert_int_equal(after.n_skipped, 0);
    assert_int_equal(after.n_rows, 4);
    assert_string_equal(after.rows[0], "a1/BTC/9");
    assert_string_equal(after.rows[1], "a2/ETH/2");
    assert_string_equal(after.rows[2], "a2/SOL/5");
    assert_string_equal(after.rows[3], "a3/DOGE/3");
}

/* Rows are the holdings only (a summary at zero is no row), ordered by
 * account id then asset code, whatever order the ids were given in; every
 * account counts without account_ids. */
static void test_rows_held_in_order(void **state)
{
    fixture_t *fx = *state;
    raw_exec(fx, ACCOUNT_SQL("b", "1", "ETH", "2") ACCOUNT_SQL("a", "2", "BTC", "0")
                 ACCOUNT_SQL("c", "3", "BTC", "1")
                 "INSERT INTO inventory_summaries (account, asset_code, total_quantity,"
                 " total_cost, quantity_with_basis) VALUES"
                 " ((SELECT seq FROM accounts WHERE uuid = '00000000-0000-4000-8000-000000000101'),"
                 " 'BTC', '4', '0', '0');");
    seen_t s = {.fx = fx};
    store_report_reader_t reader = {.skipped = on_skipped, .row = on_row, .ctx = &s};
    assert_int_equal(store_report_read(fx->conn, TENANT, NULL, &reader), STORE_OK);
    assert_int_equal(reader.requested, 0);
    assert_int_equal(reader.included, 3);
    assert_int_equal(s.n_rows, 3);
    assert_string_equal(s.rows[0], "b/BTC/4");
    assert_string_equal(s.rows[1], "b/ETH/2");
    assert_string_equal(s.rows[2], "c/BTC/1");
}

/* The requested ids come back as stored, once; the skipped positions are
 * the first appearance of each id that is no account, in order. */
static void test_requested_stored_once_and_skipped_positions(void **state)
{
    fixture_t *fx = *state;
    raw_exec(fx, ACCOUNT_SQL("a1", "1", "BTC", "1"));
    const char *ids = "[\"m1\",\"a1\",\"m2\",\"m1\",\"q\\\"x\",\"m2\"]";
    const char *report = make_report(fx, '3', ids);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(store_report_requested(fx->conn, report, &text, &len), STORE_OK);
    assert_int_equal(len, strlen(ids));
    assert_string_equal(text, ids);
    free(text);
    seen_t s = {.fx = fx};
    store_report_reader_t reader = {.skipped = on_skipped, .row = on_row, .ctx = &s};
    assert_int_equal(store_report_read(fx->conn, TENANT, report, &reader), STORE_OK);
    assert_int_equal(reader.requested, 6);
    assert_int_equal(s.n_skipped, 3);
    assert_int_equal(s.skipped[0], 0);
    assert_int_equal(s.skipped[1], 2);
    assert_int_equal(s.skipped[2], 4);
    /* a report without ids has none */
    const char *all = make_report(fx, '4', NULL);
    assert_int_equal(store_report_requested(fx->conn, all, &text, &len), STORE_NOT_FOUND);
    assert_null(text);
}

/* max_active counts the tenant's reports pending or processing: at the
 * limit nothing is inserted and *admitted is false. */
static void test_max_active_refuses_in_the_transaction(void **state)
{
    fixture_t *fx = *state;
    make_report(fx, '5', NULL);
    make_report(fx, '6', "[\"x\"]");
    store_report_t r = {.created_at = T0, .expires_at = T0 + 1000};
    snprintf(r.id, sizeof r.id, "00000000-0000-4000-8000-0000000c0007");
    snprintf(r.tenant_id, sizeof r.tenant_id, "%s", TENANT);
    snprintf(r.format, sizeof r.format, "csv");
    bool admitted = true;
    assert_int_equal(store_report_create(fx->conn, &r, "[\"y\"]", 5, 2, &admitted), STORE_OK);
    assert_false(admitted);
    store_report_t got;
    assert_int_equal(store_report_get(fx->conn, r.id, 0, &got), STORE_NOT_FOUND);
    /* a finished report frees its place */
    raw_exec(fx, "UPDATE reports SET status = 'completed'"
                 " WHERE id = '00000000-0000-4000-8000-0000000c0005'");
    assert_int_equal(store_report_create(fx->conn, &r, "[\"y\"]", 5, 2, &admitted), STORE_OK);
    assert_true(admitted);
    assert_int_equal(store_report_get(fx->conn, r.id, 0, &got), STORE_OK);
    assert_true(got.scoped);
    store_report_clear(&got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_requested_stored_once_and_skipped_positions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_max_active_refuses_in_the_transaction, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_is_one_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rows_held_in_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
