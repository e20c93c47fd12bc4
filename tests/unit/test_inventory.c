/* Unit tests of the inventory engine against hand-worked examples for each
 * method (the fee example, partial disposals, HIFO order and ties, moving
 * average across buys and sells, crypto-to-crypto under AUSTRIA, withdrawals
 * larger than the holding, deposits without basis, income at fair value,
 * holding terms, overflow), and a property: any permutation of the same
 * transactions gives the same inventory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/engine.h"

#define DAY_MS 86400000LL
#define T0 1704067200000LL /* 2024-01-01T00:00:00Z */

static dec_t D(const char *s)
{
    dec_t d;
    assert_int_equal(dec_parse(s, strlen(s), &d), DEC_OK);
    return d;
}

static const char *F(dec_t d)
{
    static char out[8][DEC_TEXT_MAX];
    static int i;
    i = (i + 1) % 8;
    dec_format(d, out[i]);
    return out[i];
}

static inv_line_t L(const char *asset, const char *amount, const char *rate)
{
    inv_line_t l = {.amount = D(amount), .has_rate = rate != NULL};
    snprintf(l.asset, sizeof l.asset, "%s", asset);
    if (rate != NULL)
        l.usd_rate = D(rate);
    return l;
}

typedef struct txb {
    inv_tx_t tx;
    inv_line_t sent[3], received[3], fees[3];
} txb_t;

static txb_t TX(const char *id, int64_t at, domain_tx_type_t type)
{
    txb_t b;
    memset(&b, 0, sizeof b);
    snprintf(b.tx.id, sizeof b.tx.id, "%s", id);
    b.tx.datetime_ms = at;
    b.tx.type = type;
    return b;
}

static void add_tx(inv_engine_t *e, txb_t *b)
{
    b->tx.sent = b->sent;
    b->tx.received = b->received;
    b->tx.fees = b->fees;
    assert_int_equal(inv_engine_add(e, &b->tx), 0);
}

/* buy `qty` of asset for `usd` dollars (plus a USD fee when fee != NULL) */
static void buy(inv_engine_t *e, const char *id, int64_t at, const char *asset, const char *qty,
                const char *usd, const char *fee)
{
    txb_t b = TX(id, at, DOMAIN_TX_TRADE);
    b.sent[b.tx.sent_count++] = L("USD", usd, NULL);
    b.received[b.tx.received_count++] = L(asset, qty, NULL);
    if (fee != NULL)
        b.fees[b.tx.fee_count++] = L("USD", fee, NULL);
    add_tx(e, &b);
}

static void sell(inv_engine_t *e, const char *id, int64_t at, const char *asset, const char *qty,
                 const char *usd)
{
    txb_t b = TX(id, at, DOMAIN_TX_TRADE);
    b.sent[b.tx.sent_count++] = L(asset, qty, NULL);
    b.received[b.tx.received_count++] = L("USD", usd, NULL);
    add_tx(e, &b);
}

static void run_ok(inv_engine_t *e)
{
    const char *failed = NULL;
    assert_int_equal(inv_engine_run(e, &failed), DEC_OK);
    assert_null(failed);
}

static void expect_summary(inv_engine_t *e, const char *asset, const char *qty, const char *cost,
                           const char *with_basis, const char *average)
{
    const inv_summary_t *s = inv_summary_of(e, asset);
    assert_non_null(s);
    assert_string_equal(F(s->total_quantity), qty);
    assert_string_equal(F(s->total_cost), cost);
    assert_string_equal(F(s->quantity_with_basis), with_basis);
    if (average == NULL) {
        assert_false(s->has_average);
    } else {
        assert_true(s->has_average);
        assert_string_equal(F(s->average_unit_cost), average);
    }
}

static void test_fiat_fee_adds_to_cost(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "t1", T0, "BTC", "1", "20000", "5");
    run_ok(e);
    expect_summary(e, "BTC", "1", "20005", "1", "20005");
    const inv_summary_t *s = inv_summary_of(e, "BTC");
    assert_int_equal(s->lot_count, 1);
    assert_string_equal(s->lots[0].tx_id, "t1");
    assert_string_equal(F(s->lots[0].cost), "20005");
    assert_null(inv_summary_of(e, "USD")); /* the reporting currency holds no lots */
    inv_engine_free(e);
}

static void test_fifo_partial_disposal(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    sell(e, "t3", T0 + 2 * DAY_MS, "BTC", "1.5", "45000"); /* added first: order is by time */
    buy(e, "t1", T0, "BTC", "1", "20000", "5");
    buy(e, "t2", T0 + DAY_MS, "BTC", "1", "30000", NULL);
    run_ok(e);
    expect_summary(e, "BTC", "0.5", "15000", "0.5", "30000");
    assert_int_equal(inv_relief_count(e), 2);
    const inv_relief_t *r0 = inv_relief(e, 0), *r1 = inv_relief(e, 1);
    assert_int_equal(r0->kind, INV_RELIEF_DISPOSAL);
    assert_string_equal(r0->lot_tx_id, "t1");
    assert_string_equal(F(r0->quantity), "1");
    assert_string_equal(F(r0->cost), "20005");
    assert_string_equal(F(r0->proceeds), "30000");
    assert_string_equal(r1->lot_tx_id, "t2");
    assert_string_equal(F(r1->quantity), "0.5");
    assert_string_equal(F(r1->cost), "15000");
    assert_string_equal(F(r1->proceeds), "15000"); /* the shares add up to 45000 */
    assert_int_equal(r0->term, INV_SHORT_TERM);
    assert_false(inv_engine_had_shortfall(e));
    inv_engine_free(e);
}

static void test_hifo_order_and_ties(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_HIFO);
    buy(e, "a", T0, "ETH", "1", "100", NULL);
    buy(e, "b", T0 + 1, "ETH", "1", "300", NULL);
    buy(e, "c", T0 + 2, "ETH", "1", "200", NULL);
    buy(e, "d", T0 + 3, "ETH", "1", "300", NULL); /* ties b on unit cost, acquired later */
    sell(e, "s", T0 + 10, "ETH", "2.5", "1000");
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 3);
    assert_string_equal(inv_relief(e, 0)->lot_tx_id, "b");
    assert_string_equal(inv_relief(e, 1)->lot_tx_id, "d");
    assert_string_equal(inv_relief(e, 2)->lot_tx_id, "c");
    assert_string_equal(F(inv_relief(e, 2)->quantity), "0.5");
    assert_string_equal(F(inv_relief(e, 2)->cost), "100");
    expect_summary(e, "ETH", "1.5", "200", "1.5", "133.333333333333333333");
    inv_engine_free(e);
}

static void test_hifo_lots_without_basis_last(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_HIFO);
    txb_t dep = TX("dep", T0, DOMAIN_TX_DEPOSIT);
    dep.received[dep.tx.received_count++] = L("SOL", "5", NULL);
    add_tx(e, &dep);
    buy(e, "b", T0 + 1, "SOL", "1", "10", NULL);
    sell(e, "s", T0 + 2, "SOL", "2", "40");
    run_ok(e);
    assert_string_equal(inv_relief(e, 0)->lot_tx_id, "b");
    assert_true(inv_relief(e, 0)->has_basis);
    assert_string_equal(inv_relief(e, 1)->lot_tx_id, "dep");
    assert_false(inv_relief(e, 1)->has_basis);
    expect_summary(e, "SOL", "4", "0", "0", NULL);
    inv_engine_free(e);
}

static void test_austria_moving_average(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_AUSTRIA);
    buy(e, "b1", T0, "BTC", "1", "100", NULL);
    buy(e, "b2", T0 + DAY_MS, "BTC", "1", "300", NULL);
    sell(e, "s1", T0 + 2 * DAY_MS, "BTC", "0.5", "150");
    buy(e, "b3", T0 + 3 * DAY_MS, "BTC", "0.5", "200", NULL);
    run_ok(e);
    const inv_relief_t *r = inv_relief(e, 0);
    assert_int_equal(inv_relief_count(e), 1);
    assert_string_equal(F(r->cost), "100"); /* 0.5 x average 200 */
    assert_string_equal(F(r->proceeds), "150");
    assert_string_equal(r->lot_tx_id, "b1"); /* quantities leave in FIFO order */
    expect_summary(e, "BTC", "2", "500", "2", "250");
    inv_engine_free(e);
}

static void test_austria_crypto_to_crypto_carries_cost(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_AUSTRIA);
    buy(e, "b1", T0, "BTC", "2", "500", NULL);
    txb_t t = TX("swap", T0 + DAY_MS, DOMAIN_TX_TRADE);
    t.sent[t.tx.sent_count++] = L("BTC", "1", "40000");
    t.received[t.tx.received_count++] = L("ETH", "10", "4000");
    add_tx(e, &t);
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 1);
    assert_int_equal(inv_relief(e, 0)->kind, INV_RELIEF_CARRY); /* nothing realised */
    assert_false(inv_relief(e, 0)->has_proceeds);
    expect_summary(e, "BTC", "1", "250", "1", "250");
    expect_summary(e, "ETH", "10", "250", "10", "25");
    inv_engine_free(e);

    /* The same swap under FIFO realises a gain at the value received. */
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "2", "500", NULL);
    add_tx(e, &t);
    run_ok(e);
    assert_int_equal(inv_relief(e, 0)->kind, INV_RELIEF_DISPOSAL);
    assert_string_equal(F(inv_relief(e, 0)->proceeds), "40000");
    assert_string_equal(F(inv_relief(e, 0)->cost), "250");
    expect_summary(e, "ETH", "10", "40000", "10", "4000");
    inv_engine_free(e);
}

static void test_withdrawal_larger_than_holding(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "100", NULL);
    txb_t w = TX("w1", T0 + DAY_MS, DOMAIN_TX_WITHDRAW);
    w.sent[w.tx.sent_count++] = L("BTC", "1.5", NULL);
    add_tx(e, &w);
    run_ok(e);
    assert_true(inv_engine_had_shortfall(e));
    assert_int_equal(inv_relief_count(e), 2);
    const inv_relief_t *held = inv_relief(e, 0), *missing = inv_relief(e, 1);
    assert_int_equal(held->kind, INV_RELIEF_TRANSFER);
    assert_string_equal(F(held->quantity), "1");
    assert_string_equal(F(held->cost), "100");
    assert_int_equal(held->acquired_ms, T0);
    assert_null(missing->lot_tx_id);
    assert_false(missing->has_basis);
    assert_string_equal(F(missing->quantity), "0.5");
    expect_summary(e, "BTC", "0", "0", "0", NULL);
    inv_engine_free(e);
}

static void test_deposit_and_income(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    txb_t d = TX("d", T0, DOMAIN_TX_DEPOSIT);
    d.received[d.tx.received_count++] = L("BTC", "1", "30000"); /* a rate is not a cost */
    add_tx(e, &d);
    txb_t i = TX("i", T0 + 1, DOMAIN_TX_INCOME);
    i.received[i.tx.received_count++] = L("BTC", "0.1", "31000");
    add_tx(e, &i);
    run_ok(e);
    expect_summary(e, "BTC", "1.1", "3100", "0.1", "31000");
    inv_engine_free(e);
}

static void test_holding_term(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "100", NULL);
    buy(e, "b2", T0 + 1, "BTC", "1", "100", NULL);
    sell(e, "s1", T0 + 366 * DAY_MS, "BTC", "1", "200");          /* 2024 is a leap year */
    sell(e, "s2", T0 + 366 * DAY_MS + 1, "BTC", "1", "200");      /* one year and 1 ms */
    run_ok(e);
    assert_int_equal(inv_relief(e, 0)->term, INV_SHORT_TERM); /* exactly one year: short */
    assert_int_equal(inv_relief(e, 1)->term, INV_SHORT_TERM);
    inv_engine_free(e);
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "100", NULL);
    sell(e, "s1", T0 + 366 * DAY_MS + 1, "BTC", "1", "200");
    run_ok(e);
    assert_int_equal(inv_relief(e, 0)->term, INV_LONG_TERM);
    inv_engine_free(e);
}

/* The figures (docs/decisions.md, Amounts and the range of totals):
 * totals and products of amounts and rates at the input limits (20 integer
 * digits each) are computed exactly; only values past those limits, which
 * the API refuses, can still leave the decimals' range, and the run then
 * names the transaction. */
static void test_overflow_reported(void **state)
{
    (void)state;
    const char *max = "99999999999999999999"; /* DOMAIN_AMOUNT_INT_DIGITS nines */
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    for (int i = 0; i < 2; i++) {
        txb_t in = TX(i ? "i2" : "i1", T0 + i, DOMAIN_TX_INCOME);
        in.received[in.tx.received_count++] = L("X", max, max);
        add_tx(e, &in);
    }
    run_ok(e);
    expect_summary(e, "X", "199999999999999999998", "19999999999999999999600000000000000000002",
                   "199999999999999999998", max);
    inv_engine_free(e);

    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    txb_t big = TX("big", T0, DOMAIN_TX_TRADE);
    big.sent[big.tx.sent_count++] = L("USD", "1", NULL);
    big.received[big.tx.received_count++] = L("Y", "10000000000", NULL);
    add_tx(e, &big);
    txb_t sold = TX("sold", T0 + 1, DOMAIN_TX_TRADE);
    sold.sent[sold.tx.sent_count++] = L("Y", "10000000000", "100000000000"); /* value 1e21 */
    sold.received[sold.tx.received_count++] = L("Z", "1", NULL);
    add_tx(e, &sold);
    run_ok(e);
    expect_summary(e, "Z", "1", "1000000000000000000000", "1", "1000000000000000000000");
    inv_engine_free(e);

    /* AUSTRIA carries a cost of ~10^40 into 10^-18 of another asset: the
     * average is ~10^58, the largest kind of figure the proof bounds */
    e = inv_engine_new(DOMAIN_METHOD_AUSTRIA);
    txb_t in = TX("in", T0, DOMAIN_TX_INCOME);
    in.received[in.tx.received_count++] = L("X", max, max);
    add_tx(e, &in);
    txb_t swap = TX("swap", T0 + 1, DOMAIN_TX_TRADE);
    swap.sent[swap.tx.sent_count++] = L("X", max, NULL);
    swap.received[swap.tx.received_count++] = L("Y", "0.000000000000000001", NULL);
    add_tx(e, &swap);
    run_ok(e);
    expect_summary(e, "Y", "0.000000000000000001", "9999999999999999999800000000000000000001",
                   "0.000000000000000001",
                   "9999999999999999999800000000000000000001000000000000000000");
    inv_engine_free(e);

    /* past the input limits (only a damaged row can hold such values): two
     * holdings of 96 nines cannot be summed */
    char nines[DEC_MAX_INT_DIGITS + 1];
    memset(nines, '9', DEC_MAX_INT_DIGITS);
    nines[DEC_MAX_INT_DIGITS] = '\0';
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    for (int i = 0; i < 2; i++) {
        txb_t dep = TX(i ? "d2" : "d1", T0 + i, DOMAIN_TX_DEPOSIT);
        dep.received[dep.tx.received_count++] = L("X", nines, NULL);
        add_tx(e, &dep);
    }
    const char *failed = NULL;
    assert_int_equal(inv_engine_run(e, &failed), DEC_RANGE);
    assert_string_equal(failed, "d2");
    inv_engine_free(e);

    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    txb_t zero = TX("z", T0, DOMAIN_TX_DEPOSIT);
    zero.received[zero.tx.received_count++] = L("BTC", "0", NULL);
    zero.tx.received = zero.received;
    assert_int_equal(inv_engine_add(e, &zero.tx), -1); /* amounts must be positive */
    inv_engine_free(e);
}

/* ---- the permutation property ----------------------------------------- */

static void describe(const inv_engine_t *e, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < inv_summary_count(e); i++) {
        const inv_summary_t *s = inv_summary(e, i);
        o += (size_t)snprintf(out + o, cap - o, "%s q=%s c=%s b=%s a=%s;", s->asset,
                              F(s->total_quantity), F(s->total_cost),
                              F(s->quantity_with_basis),
                              s->has_average ? F(s->average_unit_cost) : "-");
        for (size_t k = 0; k < s->lot_count; k++)
            o += (size_t)snprintf(out + o, cap - o, "[%s %s %s]", s->lots[k].tx_id,
                                  F(s->lots[k].quantity), F(s->lots[k].cost));
    }
    for (size_t i = 0; i < inv_relief_count(e); i++) {
        const inv_relief_t *r = inv_relief(e, i);
        o += (size_t)snprintf(out + o, cap - o, "{%s %s %s %s %s %s}", r->tx_id,
                              r->lot_tx_id ? r->lot_tx_id : "-", F(r->quantity), F(r->cost),
                              r->has_proceeds ? F(r->proceeds) : "-", r->asset);
    }
}

static void make_random(txb_t *txs, size_t n, unsigned *seed)
{
    const char *assets[] = {"BTC", "ETH", "SOL"};
    const char *qty[] = {"0.1", "0.25", "1", "2", "0.333", "5"};
    const char *price[] = {"10", "20.5", "100", "7", "1000.01"};
    for (size_t i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%03zu", i);
        /* several transactions share datetimes to exercise the tie-breaks */
        int64_t at = T0 + (int64_t)(rand_r(seed) % (n / 2 + 1)) * DAY_MS;
        int kind = rand_r(seed) % 5;
        const char *asset = assets[rand_r(seed) % 3];
        const char *q = qty[rand_r(seed) % 6], *p = price[rand_r(seed) % 5];
        domain_tx_type_t types[] = {DOMAIN_TX_DEPOSIT, DOMAIN_TX_INCOME, DOMAIN_TX_TRADE, DOMAIN_TX_WITHDRAW, DOMAIN_TX_EXPENSE};
        txs[i] = TX(id, at, types[kind]);
        txb_t *b = &txs[i];
        if (kind == 0 || kind == 1) {
            b->received[b->tx.received_count++] = L(asset, q, p);
        } else if (kind == 2 && rand_r(seed) % 2) {
            b->sent[b->tx.sent_count++] = L("USD", p, NULL);
            b->received[b->tx.received_count++] = L(asset, q, NULL);
            b->fees[b->tx.fee_count++] = L("USD", "1.5", NULL);
        } else if (kind == 2) {
            b->sent[b->tx.sent_count++] = L(asset, q, p);
            b->received[b->tx.received_count++] = L(assets[rand_r(seed) % 3], "1", p);
        } else {
            b->sent[b->tx.sent_count++] = L(asset, q, p);
        }
    }
}

static void test_permutations_give_identical_inventory(void **state)
{
    (void)state;
    enum { N = 60, PERMUTATIONS = 40, CASES = 25 };
    static char expected[1 << 16], actual[1 << 16];
    unsigned seed = 4242;
    for (int c = 0; c < CASES; c++) {
        txb_t txs[N];
        make_random(txs, N, &seed);
        for (domain_method_t m = DOMAIN_METHOD_FIFO; m <= DOMAIN_METHOD_AUSTRIA; m++) {
            for (int p = 0; p < PERMUTATIONS; p++) {
                txb_t shuffled[N];
                memcpy(shuffled, txs, sizeof shuffled);
                for (size_t i = N - 1; i > 0 && p > 0; i--) {
                    size_t j = (size_t)rand_r(&seed) % (i + 1);
                    txb_t t = shuffled[i];
                    shuffled[i] = shuffled[j];
                    shuffled[j] = t;
                }
                inv_engine_t *e = inv_engine_new(m);
                for (size_t i = 0; i < N; i++)
                    add_tx(e, &shuffled[i]);
                run_ok(e);
                describe(e, p == 0 ? expected : actual, sizeof expected);
                inv_engine_free(e);
                if (p > 0 && strcmp(expected, actual) != 0)
                    fail_msg("case %d method %d permutation %d differs", c, (int)m, p);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fiat_fee_adds_to_cost),
        cmocka_unit_test(test_fifo_partial_disposal),
        cmocka_unit_test(test_hifo_order_and_ties),
        cmocka_unit_test(test_hifo_lots_without_basis_last),
        cmocka_unit_test(test_austria_moving_average),
        cmocka_unit_test(test_austria_crypto_to_crypto_carries_cost),
        cmocka_unit_test(test_withdrawal_larger_than_holding),
        cmocka_unit_test(test_deposit_and_income),
        cmocka_unit_test(test_holding_term),
        cmocka_unit_test(test_overflow_reported),
        cmocka_unit_test(test_permutations_give_identical_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
