/* test_gains: the read-side rules of realized gains (gains/gains.h) and the
 * stored gains rows (store/gains.h).
 *
 * Rules, each with a hand-worked row:
 *  - gain_loss = proceeds - cost_basis exactly, null when either is unknown;
 *  - covered: lot_origin 'acquired' and acquired on or after 2026-01-01T00:00Z
 *    (one millisecond before is noncovered; transfer and provided lots never);
 *  - the 8949 box for every case (G..L digital from 2025, A..F otherwise,
 *    C/F for fiat and pre-2025 digital assets, none under AUSTRIA, a
 *    shortfall boxed as short term);
 *  - the warnings (missing_proceeds, insufficient_holdings, missing_cost_basis);
 *  - the breakdown's lines are the exact sums of their rows;
 *  - the store: the period is [from, to) by datetime, the asset filter, the
 *    keyset pages cover every row once, and (item 8 of issue 16) the last
 *    page of 100,000 disposals costs about what the first does (figures
 *    printed; recorded in docs/benchmarks.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "core/clock.h"
#include "core/domain.h"
#include "gains/gains.h"
#include "scratch_store.h"
#include "store/accounts.h"
#include "store/gains.h"
#include "store/store.h"

#define TENANT "tenant-gains"
#define ACCOUNT_UUID "00000000-0000-4000-8000-00000000a001"

static int64_t at(const char *rfc3339)
{
    int64_t ms = 0;
    assert_int_equal(clock_parse_rfc3339(rfc3339, &ms), 0);
    return ms;
}

static void assert_dec(dec_t d, const char *expected)
{
    char text[DEC_TEXT_MAX];
    dec_format(d, text);
    assert_string_equal(text, expected);
}

/* A complete stored row: 1 BTC bought 2025-03-01 (covered origin, FIFO),
 * sold 2025-06-01 for 120.50 against a cost of 100.25. */
static store_gain_t base_row(void)
{
    return (store_gain_t){.seq = 7, .transaction_id = "sell-1", .asset_code = "BTC",
                          .asset_type = "crypto", .datetime = at("2025-06-01T12:00:00Z"),
                          .quantity = "1", .proceeds = "120.5", .cost = "100.25",
                          .transaction_costs = "0.75", .term = "short", .has_acquired_at = true,
                          .acquired_at = at("2025-03-01T09:00:00Z"),
                          .lot_transaction_id = "buy-1", .lot_origin = "acquired",
                          .method = "FIFO"};
}

static gains_row_t classify(const store_gain_t *in)
{
    gains_row_t out;
    assert_int_equal(gains_classify(in, &out), GAINS_OK);
    return out;
}

/* ---- classification ------------------------------------------------------ */

static void test_gain_loss_is_proceeds_minus_cost(void **state)
{
    (void)state;
    store_gain_t in = base_row();
    gains_row_t r = classify(&in);
    assert_true(r.has_gain_loss);
    assert_dec(r.gain_loss, "20.25"); /* 120.50 - 100.25 */
    assert_dec(r.transaction_costs, "0.75");
    in.proceeds = "10.01";
    in.cost = "10.02";
    r = classify(&in);
    assert_dec(r.gain_loss, "-0.01");
    in.cost = NULL;
    r = classify(&in);
    assert_false(r.has_gain_loss);
    in.cost = "1";
    in.proceeds = NULL;
    r = classify(&in);
    assert_false(r.has_gain_loss);
}

static void test_covered_from_2026(void **state)
{
    (void)state;
    store_gain_t in = base_row();
    in.datetime = at("2026-06-01T00:00:00Z");
    in.acquired_at = at("2026-01-01T00:00:00Z");
    assert_true(classify(&in).covered);
    in.acquired_at = at("2025-12-31T23:59:59.999Z");
    assert_false(classify(&in).covered);
    in.acquired_at = at("2026-01-01T00:00:00Z");
    in.lot_origin = "transfer";
    assert_false(classify(&in).covered);
    in.lot_origin = "provided";
    gains_row_t r = classify(&in);
    assert_false(r.covered);
    assert_true(r.customer_provided_acquisition);
    in.lot_origin = "acquired";
    assert_false(classify(&in).customer_provided_acquisition);
}

typedef struct box_case {
    const char *asset_type;
    const char *disposed;
    const char *acquired; /* NULL: a shortfall */
    const char *term;
    const char *origin;
    bool proceeds;
    const char *method;
    char box;
} box_case_t;

static void test_form_8949_boxes(void **state)
{
    (void)state;
    static const box_case_t CASES[] = {
        /* digital from 2025: covered G/J, noncovered H/K, no proceeds I/L */
        {"crypto", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "acquired", true, "FIFO", 'G'},
        {"crypto", "2027-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "long", "acquired", true, "FIFO", 'J'},
        {"crypto", "2025-06-01T00:00:00Z", "2025-02-01T00:00:00Z", "short", "acquired", true, "HIFO", 'H'},
        {"nft", "2025-06-01T00:00:00Z", "2023-02-01T00:00:00Z", "long", "acquired", true, "LIFO", 'K'},
        {"crypto", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "transfer", true, "FIFO", 'H'},
        {"crypto", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "acquired", false, "FIFO", 'I'},
        {"crypto", "2027-06-01T00:00:00Z", "2025-02-01T00:00:00Z", "long", "acquired", false, "LOFO", 'L'},
        /* a shortfall: boxed as short term */
        {"crypto", "2025-06-01T00:00:00Z", NULL, NULL, NULL, true, "FIFO", 'H'},
        /* digital before 2025, and fiat: no 1099 reports them */
        {"crypto", "2024-12-31T23:59:59Z", "2024-02-01T00:00:00Z", "short", "acquired", true, "FIFO", 'C'},
        {"crypto", "2024-06-01T00:00:00Z", "2022-02-01T00:00:00Z", "long", "acquired", true, "FIFO", 'F'},
        {"fiat", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "acquired", true, "FIFO", 'C'},
        {"fiat", "2027-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "long", "acquired", true, "FIFO", 'F'},
        /* securities: A/D covered, B/E noncovered, C/F without proceeds */
        {"security", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "acquired", true, "FIFO", 'A'},
        {"security", "2027-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "long", "acquired", true, "FIFO", 'D'},
        {"security", "2025-06-01T00:00:00Z", "2025-02-01T00:00:00Z", "short", "acquired", true, "FIFO", 'B'},
        {"security", "2025-06-01T00:00:00Z", "2020-02-01T00:00:00Z", "long", "acquired", true, "FIFO", 'E'},
        {"security", "2025-06-01T00:00:00Z", "2020-02-01T00:00:00Z", "long", "acquired", false, "FIFO", 'F'},
        /* AUSTRIA never feeds a US form */
        {"crypto", "2026-06-01T00:00:00Z", "2026-02-01T00:00:00Z", "short", "acquired", true, "AUSTRIA", '\0'},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const box_case_t *c = &CASES[i];
        store_gain_t in = base_row();
        in.asset_type = c->asset_type;
        in.datetime = at(c->disposed);
        in.has_acquired_at = c->acquired != NULL;
        in.acquired_at = c->acquired ? at(c->acquired) : 0;
        in.lot_transaction_id = c->acquired ? "buy-1" : NULL;
        in.cost = c->acquired ? "100" : NULL;
        in.term = c->term;
        in.lot_origin = c->origin;
        in.proceeds = c->proceeds ? "120" : NULL;
        in.method = c->method;
        gains_row_t r = classify(&in);
        if (r.form_8949_box != c->box)
            fail_msg("case %zu: box '%c', expected '%c'", i, r.form_8949_box ? r.form_8949_box : '-',
                     c->box ? c->box : '-');
    }
}

static void test_warnings(void **state)
{
    (void)state;
    store_gain_t in = base_row();
    assert_int_equal(classify(&in).warnings, 0);
    in.proceeds = NULL;
    assert_int_equal(classify(&in).warnings, GAINS_WARN_MISSING_PROCEEDS);
    in = base_row();
    in.cost = NULL; /* a lot without basis */
    assert_int_equal(classify(&in).warnings, GAINS_WARN_MISSING_COST_BASIS);
    in = base_row();
    in.cost = NULL;
    in.term = NULL;
    in.has_acquired_at = false;
    in.lot_transaction_id = NULL;
    in.lot_origin = NULL;
    gains_row_t r = classify(&in);
    assert_int_equal(r.warnings, GAINS_WARN_INSUFFICIENT_HOLDINGS);
    assert_int_equal(r.term, GAINS_TERM_NONE);
    assert_null(gains_term_name(r.term));
    assert_string_equal(gains_warning_code(GAINS_WARN_INSUFFICIENT_HOLDINGS),
                        "insufficient_holdings");
    char message[256];
    gains_warning_message(GAINS_WARN_INSUFFICIENT_HOLDINGS, &r, message, sizeof message);
    assert_non_null(strstr(message, "1 BTC"));
}

static void test_bad_rows_are_refused(void **state)
{
    (void)state;
    gains_row_t out;
    store_gain_t in = base_row();
    in.proceeds = "12,5";
    assert_int_equal(gains_classify(&in, &out), GAINS_BAD_ROW);
    in = base_row();
    in.term = "medium";
    assert_int_equal(gains_classify(&in, &out), GAINS_BAD_ROW);
}

static void test_years(void **state)
{
    (void)state;
    assert_int_equal(gains_year_of(at("2024-12-31T23:59:59.999Z")), 2024);
    assert_int_equal(gains_year_of(at("2025-01-01T00:00:00Z")), 2025);
    assert_int_equal(gains_year_of(at("1969-12-31T23:59:59.999Z")), 1969);
    int64_t from, to;
    gains_year_range(2026, &from, &to);
    assert_true(from == DOMAIN_COVERED_FROM_MS);
    assert_true(to == at("2027-01-01T00:00:00Z"));
    assert_true(gains_date_ms(2024, 2, 29) == at("2024-02-29T00:00:00Z"));
}

/* Totals are sums of rows: three complete rows, one without basis, one
 * without proceeds, one shortfall.
 *   short: 120.50 - 100.25 = 20.25 and 10.01 - 10.02 = -0.01 -> proceeds
 *          130.51, cost 110.27, gain 20.24 (box H: 2025, noncovered)
 *   long:  5 - 7.5 = -2.5 (box K)
 *   total: 135.51, 117.77, 17.74 */
static void test_breakdown_sums_rows(void **state)
{
    (void)state;
    gains_breakdown_t b;
    gains_breakdown_init(&b);
    store_gain_t rows[6];
    for (int i = 0; i < 6; i++)
        rows[i] = base_row();
    rows[1].proceeds = "10.01";
    rows[1].cost = "10.02";
    rows[2].proceeds = "5";
    rows[2].cost = "7.5";
    rows[2].term = "long";
    rows[2].acquired_at = at("2023-01-01T00:00:00Z");
    rows[3].cost = NULL;
    rows[4].proceeds = NULL;
    rows[5].cost = NULL;
    rows[5].term = NULL;
    rows[5].has_acquired_at = false;
    rows[5].lot_transaction_id = NULL;
    rows[5].lot_origin = NULL;
    for (int i = 0; i < 6; i++) {
        gains_row_t r = classify(&rows[i]);
        assert_int_equal(gains_breakdown_add(&b, &r), GAINS_OK);
    }
    assert_dec(b.short_term.proceeds, "130.51");
    assert_dec(b.short_term.cost_basis, "110.27");
    assert_dec(b.short_term.gain_loss, "20.24");
    assert_dec(b.long_term.gain_loss, "-2.5");
    assert_dec(b.total.proceeds, "135.51");
    assert_dec(b.total.cost_basis, "117.77");
    assert_dec(b.total.gain_loss, "17.74");
    assert_dec(b.box['H' - 'A'].gain_loss, "20.24");
    assert_dec(b.box['K' - 'A'].gain_loss, "-2.5");
    assert_true(b.box_seen['H' - 'A'] == 4); /* summed or not, the shortfall as short term */
    assert_true(b.box_seen['I' - 'A'] == 1); /* no proceeds: not on a 1099-DA */
    assert_true(b.rows == 6);
    assert_true(b.rows_without_cost_basis == 2);
    assert_true(b.rows_without_proceeds == 1);
    assert_true(b.rows_without_term == 1);
    assert_true(b.total.rows == 3);
}

/* ---- the store ------------------------------------------------------------ */

static void exec_raw(sqlite3 *raw, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(raw, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err ? err : "?");
}

/* A tenant, an account, BTC (crypto) and AAPL (security), and n disposal
 * reliefs (every fifth of AAPL, one transfer relief every tenth), one a
 * minute from 2025-01-01, written straight into inventory_reliefs. */
static scratch_fixture_t *seeded(int n)
{
    scratch_fixture_t *fx = scratch_fixture_open();
    assert_non_null(fx);
    store_tenant_t t = {.id = TENANT, .name = "t", .created_at = 1};
    store_tenant_seed_t seed = {.default_filer_uuid = "00000000-0000-4000-8000-0000000f000a",
                                .usd_asset_uuid = "00000000-0000-4000-8000-0000000e000a"};
    assert_int_equal(store_tenant_create(fx->conn, &t, &seed, NULL), STORE_OK);
    exec_raw(fx->raw, "INSERT INTO account_owners (uuid, tenant_id, id, name,"
                      " account_owner_type, created_at, updated_at) VALUES"
                      " ('00000000-0000-4000-8000-000000000099', '" TENANT "',"
                      " 'owner', 'Owner', 'individual', 1, 1);"
                      "INSERT INTO assets (uuid, tenant_id, code, name, type, created_at) VALUES"
                      " ('00000000-0000-4000-8000-0000000e0001', '" TENANT "', 'BTC', 'Bitcoin',"
                      "  'crypto', 1),"
                      " ('00000000-0000-4000-8000-0000000e0002', '" TENANT "', 'AAPL', 'Apple',"
                      "  'security', 1)");
    store_account_t a = {.uuid = ACCOUNT_UUID, .id = "acct-1", .owner_id = "owner",
                         .filer_id = "default", .cost_basis_method = "FIFO", .created_at = 1,
                         .updated_at = 1};
    store_account_missing_t missing;
    assert_int_equal(store_account_create(fx->conn, TENANT, &a, &missing), STORE_OK);
    char sql[1400];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < %d)"
             " INSERT INTO inventory_reliefs (account, seq, transaction_id, asset_code, kind,"
             " datetime, lot_transaction_id, acquired_at, quantity, cost, proceeds, term,"
             " lot_seq, method, lot_origin, transaction_costs)"
             " SELECT (SELECT seq FROM accounts WHERE uuid = '" ACCOUNT_UUID "'), n,"
             " 'tx-' || n, CASE WHEN n %% 5 = 4 THEN 'AAPL' ELSE 'BTC' END,"
             " CASE WHEN n %% 10 = 9 THEN 'transfer' ELSE 'disposal' END,"
             " %lld + n * 60000, 'buy-' || n, %lld, '0.5', '10.25', '12', 'short', n,"
             " 'FIFO', 'acquired', '0' FROM i",
             n, (long long)at("2025-01-01T00:00:00Z"), (long long)at("2024-12-01T00:00:00Z"));
    exec_raw(fx->raw, sql);
    return fx;
}

typedef struct collect {
    int64_t count;
    int64_t first_seq, last_seq;
    bool ordered;
    int btc, aapl;
} collect_t;

static int collect(const store_gain_t *row, void *arg)
{
    collect_t *c = arg;
    if (c->count == 0)
        c->first_seq = row->seq;
    else if (row->seq <= c->last_seq)
        c->ordered = false;
    c->last_seq = row->seq;
    c->count++;
    c->btc += strcmp(row->asset_code, "BTC") == 0 && strcmp(row->asset_type, "crypto") == 0;
    c->aapl += strcmp(row->asset_code, "AAPL") == 0 && strcmp(row->asset_type, "security") == 0;
    return 0;
}

static void test_store_period_and_pages(void **state)
{
    (void)state;
    scratch_fixture_t *fx = seeded(100);
    int64_t t0 = at("2025-01-01T00:00:00Z");
    /* [t0 + 10 min, t0 + 30 min): seqs 10..29, of which 19 and 29 are
     * transfers: 18 disposals. */
    collect_t c = {.ordered = true};
    assert_int_equal(store_gains_each(fx->conn, ACCOUNT_UUID, t0 + 600000, t0 + 1800000, NULL,
                                      collect, &c),
                     STORE_OK);
    assert_true(c.count == 18);
    assert_true(c.first_seq == 10 && c.last_seq == 28 && c.ordered);
    /* AAPL only: seqs 14, 24 (every n % 5 == 4 that is no transfer) */
    collect_t a = {.ordered = true};
    assert_int_equal(store_gains_each(fx->conn, ACCOUNT_UUID, t0 + 600000, t0 + 1800000, "AAPL",
                                      collect, &a),
                     STORE_OK);
    assert_true(a.count == 2 && a.aapl == 2);
    /* pages of 7 over everything: 90 disposals, each once, in order */
    int64_t after = STORE_GAINS_START;
    collect_t all = {.ordered = true};
    bool more = true;
    int pages = 0;
    while (more) {
        collect_t p = {.ordered = true};
        assert_int_equal(store_gains_page(fx->conn, ACCOUNT_UUID, t0, t0 + 100 * 60000, NULL,
                                          after, 7, collect, &p, &more),
                         STORE_OK);
        assert_true(p.count <= 7 && p.ordered);
        assert_true(p.count == 0 || p.first_seq > after);
        all.count += p.count;
        all.btc += p.btc;
        after = p.last_seq;
        pages++;
    }
    assert_true(all.count == 90 && all.btc == 80); /* AAPL: n % 10 == 4 */
    assert_int_equal(pages, 13); /* 12 full pages and 6 rows */
    /* an unknown account is an empty page */
    collect_t none = {.ordered = true};
    assert_int_equal(store_gains_page(fx->conn, "00000000-0000-4000-8000-00000000ffff", t0,
                                      t0 + 1, NULL, STORE_GAINS_START, 10, collect, &none, &more),
                     STORE_OK);
    assert_true(none.count == 0 && !more);
    scratch_fixture_close(fx);
}

/* Microseconds per call of one page of 100 after after_seq, best of reps. */
static double page_us(scratch_fixture_t *fx, int64_t from, int64_t to, int64_t after, int reps,
                      int64_t *count)
{
    double best = 1e18;
    for (int i = 0; i < reps; i++) {
        collect_t c = {.ordered = true};
        bool more;
        int64_t t = clock_monotonic_us();
        assert_int_equal(store_gains_page(fx->conn, ACCOUNT_UUID, from, to, NULL, after, 100,
                                          collect, &c, &more),
                         STORE_OK);
        double us = (double)(clock_monotonic_us() - t);
        best = us < best ? us : best;
        *count = c.count;
    }
    return best;
}

/* Issue 16 item 8: the last page of an account with 100,000 disposals
 * costs about what the first does (keyset on seq, range found through the
 * datetime index). The bound is loose (shared machines): a scan from the
 * start would be ~1000 times the first page, not 5. */
static void test_store_last_page_costs_the_first(void **state)
{
    (void)state;
    const int n = 111112; /* 100,000 disposals and 11,111 transfers */
    int64_t t_seed = clock_monotonic_us();
    scratch_fixture_t *fx = seeded(n);
    double seed_ms = (double)(clock_monotonic_us() - t_seed) / 1000.0;
    int64_t t0 = at("2025-01-01T00:00:00Z"), t1 = t0 + (int64_t)n * 60000;
    int64_t first_count = 0, last_count = 0;
    double first = page_us(fx, t0, t1, STORE_GAINS_START, 30, &first_count);
    double last = page_us(fx, t0, t1, n - 112, 30, &last_count);
    assert_true(first_count == 100 && last_count == 100);
    printf("gains pages of 100 over 100,000 disposals: first %.0f us, last %.0f us"
           " (ratio %.2f; seeding %.0f ms)\n", first, last, last / first, seed_ms);
    assert_true(last < 5 * first + 2000);
    scratch_fixture_close(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gain_loss_is_proceeds_minus_cost),
        cmocka_unit_test(test_covered_from_2026),
        cmocka_unit_test(test_form_8949_boxes),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_bad_rows_are_refused),
        cmocka_unit_test(test_years),
        cmocka_unit_test(test_breakdown_sums_rows),
        cmocka_unit_test(test_store_period_and_pages),
        cmocka_unit_test(test_store_last_page_costs_the_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
