/* test_store_tx_batch: store_tx_upsert_batch (store/transactions.h) against a
 * real database file. Properties: each element gets the outcome a single
 * upsert would give, in order (created, updated, unchanged, no account,
 * moved), an element's NO_ACCOUNT or MOVED writes nothing for it and does not
 * stop the others; the results carry the stored uuid and times; the events
 * are those of the same writes one by one; a storage failure in the middle
 * of a batch rolls back every element before it. */
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
#include "store/transactions.h"

#include "scratch_store.h"

#define TENANT "00000000-0000-4000-8000-00000000000a"
#define T0 1704067200000LL /* 2024-01-01T00:00:00Z */

typedef struct elem {
    char id[16], account[16], body[64];
    char uuid[STORE_UUID_LEN], event[STORE_UUID_LEN];
    store_tx_line_t line;
} elem_t;

static unsigned counter;

static void next_uuid(char out[STORE_UUID_LEN])
{
    snprintf(out, STORE_UUID_LEN, "00000000-0000-4000-8000-%012x", 0x1000 + counter++);
}

static int setup(void **state)
{
    scratch_fixture_t *fx = scratch_fixture_open();
    assert_non_null(fx);
    store_tenant_t t = {.id = TENANT, .name = "t", .created_at = T0};
    store_tenant_seed_t seed = {.default_filer_uuid = "00000000-0000-4000-8000-0000000f000a",
                                .usd_asset_uuid = "00000000-0000-4000-8000-0000000e000a"};
    assert_int_equal(store_tenant_create(fx->conn, &t, &seed, NULL), STORE_OK);
    assert_int_equal(sqlite3_exec(fx->raw,
                                  "INSERT INTO account_owners (uuid, tenant_id, id, name,"
                                  " account_owner_type, created_at, updated_at) VALUES"
                                  " ('00000000-0000-4000-8000-000000000099', '" TENANT "',"
                                  " 'owner', 'Owner', 'individual', 1, 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    static const char *const ACCOUNTS[] = {"a1", "a2"};
    static const char *const UUIDS[] = {"00000000-0000-4000-9000-000000000001",
                                        "00000000-0000-4000-9000-000000000002"};
    for (int i = 0; i < 2; i++) {
        store_account_t a = {.id = "", .owner_id = "owner", .filer_id = "default",
                             .created_at = T0, .updated_at = T0};
        snprintf(a.uuid, sizeof a.uuid, "%s", UUIDS[i]);
        snprintf(a.id, sizeof a.id, "%s", ACCOUNTS[i]);
        snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "FIFO");
        store_account_missing_t missing;
        assert_int_equal(store_account_create(fx->conn, TENANT, &a, &missing), STORE_OK);
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    scratch_fixture_close(*state);
    return 0;
}

/* A deposit of amount BTC at T0 + day days. */
static store_tx_write_t make_write(elem_t *e, const char *id, const char *account,
                                   const char *amount, int day, int64_t now)
{
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    snprintf(e->account, sizeof e->account, "%s", account);
    snprintf(e->body, sizeof e->body, "{\"id\":\"%s\",\"amount\":\"%s\",\"day\":%d}", id, amount,
             day);
    next_uuid(e->uuid);
    next_uuid(e->event);
    e->line.kind = STORE_LINE_RECEIVED;
    snprintf(e->line.asset, sizeof e->line.asset, "BTC");
    snprintf(e->line.asset_type, sizeof e->line.asset_type, "crypto");
    next_uuid(e->line.new_asset_uuid);
    snprintf(e->line.amount, sizeof e->line.amount, "%s", amount);
    return (store_tx_write_t){.tenant_id = TENANT, .id = e->id, .account_id = e->account,
                              .datetime_ms = T0 + day * 86400000LL, .type = "deposit",
                              .body = e->body, .lines = &e->line, .line_count = 1,
                              .new_uuid = e->uuid, .event_uuid = e->event, .now = now};
}

static int64_t count(sqlite3 *raw, const char *sql)
{
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(raw, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
}

static void single(scratch_fixture_t *fx, elem_t *e, const char *id, const char *account,
                   const char *amount, int day, int64_t now)
{
    store_tx_write_t w = make_write(e, id, account, amount, day, now);
    store_tx_result_t result;
    assert_int_equal(store_tx_upsert(fx->conn, &w, 0, &result), STORE_OK);
    assert_int_equal(result.outcome, STORE_TX_CREATED);
}

static void test_outcomes_in_order(void **state)
{
    scratch_fixture_t *fx = *state;
    elem_t pre[3], e[6];
    single(fx, &pre[0], "upd", "a1", "1", 5, T0 + 1);
    single(fx, &pre[1], "same", "a1", "2", 6, T0 + 2);
    single(fx, &pre[2], "moved", "a1", "3", 7, T0 + 3);
    /* the events are claimed: the batch's a1 writes open one new event */
    assert_int_equal(sqlite3_exec(fx->raw, "UPDATE events SET claimed_at = 1", NULL, NULL, NULL),
                     SQLITE_OK);
    int64_t now = T0 + 100;
    store_tx_write_t w[6] = {
        make_write(&e[0], "new", "a1", "1", 3, now),
        make_write(&e[1], "upd", "a1", "9", 1, now),     /* earlier than before (day 5) */
        make_write(&e[2], "same", "a1", "2", 6, now),
        make_write(&e[3], "lost", "nobody", "1", 1, now),
        make_write(&e[4], "moved", "a2", "3", 7, now),
        make_write(&e[5], "new2", "a2", "4", 2, now),
    };
    store_tx_result_t r[6];
    assert_int_equal(store_tx_upsert_batch(fx->conn, w, 6, r), STORE_OK);
    store_tx_outcome_t want[6] = {STORE_TX_CREATED, STORE_TX_UPDATED, STORE_TX_UNCHANGED,
                                  STORE_TX_NO_ACCOUNT, STORE_TX_MOVED, STORE_TX_CREATED};
    for (int i = 0; i < 6; i++)
        assert_int_equal(r[i].outcome, want[i]);
    assert_string_equal(r[4].current_account, "a1");
    /* uuids and times as stored, without a read back by the caller */
    assert_string_equal(r[0].uuid, e[0].uuid);
    assert_true(r[0].created_at == now && r[0].updated_at == now);
    assert_string_equal(r[1].uuid, pre[0].uuid);
    assert_true(r[1].created_at == T0 + 1 && r[1].updated_at == now);
    assert_string_equal(r[2].uuid, pre[1].uuid);
    assert_true(r[2].created_at == T0 + 2 && r[2].updated_at == T0 + 2);
    for (int i = 0; i < 3; i++) {
        store_tx_t got;
        assert_int_equal(store_tx_get(fx->conn, TENANT, w[i].id, &got), STORE_OK);
        assert_string_equal(got.uuid, r[i].uuid);
        assert_true(got.created_at == r[i].created_at && got.updated_at == r[i].updated_at);
        assert_string_equal(got.body, w[i].body);
        free(got.body);
    }
    /* refused elements wrote nothing */
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM transactions WHERE id = 'lost'"), 0);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM transactions t JOIN accounts a"
                                    " ON a.seq = t.account WHERE t.id = 'moved'"
                                    " AND a.id = 'a1' AND t.body LIKE '%\"day\":7%'"),
                     1);
    /* events: a1 one new event covering new (day 3) and upd (days 1..5), a2 one for new2 */
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM events WHERE claimed_at IS NULL"), 2);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM events WHERE claimed_at IS NULL"
                                    " AND account_id = 'a1' AND from_ms = 1704067200000 + 86400000"
                                    " AND from_tx = 'upd' AND latest_ms = 1704067200000 + 5 * 86400000"
                                    " AND latest_tx = 'upd' AND has_ids = 1"),
                     1);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM events WHERE claimed_at IS NULL"
                                    " AND account_id = 'a2' AND from_tx = 'new2'"
                                    " AND latest_tx = 'new2'"),
                     1);
}

static void test_failure_rolls_back_the_whole_batch(void **state)
{
    scratch_fixture_t *fx = *state;
    elem_t e[3];
    int64_t before = count(fx->raw, "SELECT count(*) FROM events");
    store_tx_write_t w[3] = {
        make_write(&e[0], "ok1", "a1", "1", 1, T0),
        make_write(&e[1], "ok2", "a2", "1", 1, T0),
        make_write(&e[2], "broken", "a1", "1", 1, T0),
    };
    w[2].body = NULL; /* body is NOT NULL: the third element's INSERT fails */
    store_tx_result_t r[3];
    assert_int_not_equal(store_tx_upsert_batch(fx->conn, w, 3, r), STORE_OK);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM transactions"), 0);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM assets WHERE tx_refs > 0"), 0);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM events"), before);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM assets WHERE code = 'BTC'"), 0);
    /* and the connection still writes */
    assert_int_equal(store_tx_upsert_batch(fx->conn, w, 2, r), STORE_OK);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM transactions"), 2);
}

static void test_empty_batch_writes_nothing(void **state)
{
    scratch_fixture_t *fx = *state;
    assert_int_equal(store_tx_upsert_batch(fx->conn, NULL, 0, NULL), STORE_OK);
    assert_int_equal(count(fx->raw, "SELECT count(*) FROM transactions"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outcomes_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_rolls_back_the_whole_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_batch_writes_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
