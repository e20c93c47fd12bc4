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

/* ---- issue 16: the engine's rules, hand-worked ------------------------ */

static int64_t ms_of(const char *iso) /* "YYYY-MM-DDTHH:MM" UTC */
{
    int y, mo, d, h, mi;
    assert_int_equal(sscanf(iso, "%d-%d-%dT%d:%d", &y, &mo, &d, &h, &mi), 5);
    /* days from civil (test-side, independent of the engine's) */
    int64_t days = 0;
    for (int yy = 1970; yy < y; yy++)
        days += (yy % 4 == 0 && (yy % 100 != 0 || yy % 400 == 0)) ? 366 : 365;
    static const int MDAYS[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (int m = 1; m < mo; m++)
        days += MDAYS[m - 1] + (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
    days += d - 1;
    return ((days * 24 + h) * 60 + mi) * 60000LL;
}

/* IRC 1222, Rev. Rul. 66-7: calendar dates, the day after acquisition
 * starts the period; Feb 29's anniversary is Feb 28. */
static void test_holding_term(void **state)
{
    (void)state;
    int64_t jan15 = ms_of("2024-01-15T09:00"), feb29 = ms_of("2024-02-29T12:00");
    assert_int_equal(inv_holding_term(jan15, ms_of("2025-01-15T10:00")), INV_SHORT_TERM);
    assert_int_equal(inv_holding_term(jan15, ms_of("2025-01-16T00:00")), INV_LONG_TERM);
    assert_int_equal(inv_holding_term(jan15, ms_of("2025-01-15T23:59")), INV_SHORT_TERM);
    assert_int_equal(inv_holding_term(feb29, ms_of("2025-03-01T08:00")), INV_LONG_TERM);
    assert_int_equal(inv_holding_term(feb29, ms_of("2025-02-28T23:00")), INV_SHORT_TERM);
    /* before 1970 too (floor division of negative instants) */
    int64_t eve1969 = -3600000; /* 1969-12-31T23:00Z */
    assert_int_equal(inv_holding_term(eve1969, ms_of("1970-12-31T23:59")), INV_SHORT_TERM);
    assert_int_equal(inv_holding_term(eve1969, ms_of("1971-01-01T00:00")), INV_LONG_TERM);
    /* and through the engine: the relief carries the term */
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", jan15, "BTC", "1", "100", NULL);
    buy(e, "b2", feb29, "BTC", "1", "100", NULL);
    sell(e, "s1", ms_of("2025-01-15T10:00"), "BTC", "0.5", "200");
    sell(e, "s2", ms_of("2025-03-01T08:00"), "BTC", "1.5", "600");
    run_ok(e);
    assert_int_equal(inv_relief(e, 0)->term, INV_SHORT_TERM);
    assert_int_equal(inv_relief(e, 1)->term, INV_LONG_TERM);  /* rest of b1 */
    assert_int_equal(inv_relief(e, 2)->term, INV_LONG_TERM);  /* b2, Feb 29 -> Mar 1 */
    inv_engine_free(e);
}

/* Treas. Reg. 1.1001-7(b), 1.1012-1(h): an exchange's costs all go to the
 * disposition; the lot received has its fair market value as basis; a fee
 * out of the received asset relieves what was just received. */
static void test_exchange_fees(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "20000", NULL);
    buy(e, "e0", T0, "ETH", "1", "500", NULL); /* an older ETH lot FIFO would take */
    txb_t x = TX("x1", T0 + DAY_MS, DOMAIN_TX_TRADE);
    x.sent[x.tx.sent_count++] = L("BTC", "0.5", "21000");
    x.received[x.tx.received_count++] = L("ETH", "10", "1100");
    x.fees[x.tx.fee_count++] = L("ETH", "0.01", "1100");   /* 11 USD */
    x.fees[x.tx.fee_count++] = L("USD", "2.5", NULL);
    add_tx(e, &x);
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 2);
    const inv_relief_t *btc = inv_relief(e, 0), *fee = inv_relief(e, 1);
    assert_string_equal(btc->asset, "BTC");
    /* proceeds = value received 11000 - costs (11 + 2.5) */
    assert_string_equal(F(btc->proceeds), "10986.5");
    assert_true(btc->has_costs);
    assert_string_equal(F(btc->transaction_costs), "13.5");
    assert_string_equal(F(btc->cost), "10000");
    assert_int_equal(btc->method, DOMAIN_METHOD_FIFO);
    assert_int_equal(btc->lot_origin, INV_LOT_ACQUIRED);
    /* the ETH fee: units of the lot just received, not e0 */
    assert_string_equal(fee->asset, "ETH");
    assert_string_equal(fee->lot_tx_id, "x1");
    assert_string_equal(F(fee->proceeds), "11");
    assert_string_equal(F(fee->cost), "11"); /* 11000 x 0.01 / 10: gain 0 */
    assert_string_equal(F(fee->transaction_costs), "0");
    /* the received lot: fair market value, no fees */
    expect_summary(e, "ETH", "10.99", "11489", "10.99", "1045.404913557779799818");
    inv_engine_free(e);

    /* A fee in the sent asset and one in a third asset: disposals by the method. */
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "20000", NULL);
    buy(e, "s0", T0, "SOL", "1", "10", NULL);
    txb_t y = TX("y1", T0 + DAY_MS, DOMAIN_TX_TRADE);
    y.sent[y.tx.sent_count++] = L("BTC", "0.5", "21000");
    y.received[y.tx.received_count++] = L("ETH", "10", "1100");
    y.fees[y.tx.fee_count++] = L("BTC", "0.001", "21000"); /* 21 USD */
    y.fees[y.tx.fee_count++] = L("SOL", "0.5", "30");      /* 15 USD */
    add_tx(e, &y);
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 3);
    assert_string_equal(inv_relief(e, 0)->asset, "BTC"); /* the fee, first */
    assert_string_equal(F(inv_relief(e, 0)->quantity), "0.001");
    assert_string_equal(F(inv_relief(e, 0)->proceeds), "21");
    assert_string_equal(F(inv_relief(e, 0)->cost), "20");
    assert_string_equal(inv_relief(e, 1)->asset, "SOL");
    assert_string_equal(F(inv_relief(e, 1)->proceeds), "15");
    assert_string_equal(F(inv_relief(e, 2)->proceeds), "10964"); /* 11000 - 36 */
    assert_string_equal(F(inv_relief(e, 2)->transaction_costs), "36");
    expect_summary(e, "ETH", "10", "11000", "10", "1100");
    inv_engine_free(e);

    /* A sale for cash: the fees reduce the proceeds and are its costs. */
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "20000", NULL);
    txb_t s = TX("s1", T0 + DAY_MS, DOMAIN_TX_TRADE);
    s.sent[s.tx.sent_count++] = L("BTC", "1", NULL);
    s.received[s.tx.received_count++] = L("USD", "25000", NULL);
    s.fees[s.tx.fee_count++] = L("USD", "10", NULL);
    add_tx(e, &s);
    run_ok(e);
    assert_string_equal(F(inv_relief(e, 0)->proceeds), "24990");
    assert_string_equal(F(inv_relief(e, 0)->transaction_costs), "10");
    inv_engine_free(e);
}

/* Cents, half up, once: a lot's cost, a disposal's proceeds, the pieces'
 * shares (the last takes the remainder), the reliefs of a lot. */
static void test_rounding_to_cents(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "a", T0, "X", "1", "10", NULL);
    buy(e, "b", T0 + 1, "X", "3", "10.005", NULL);     /* cost 10.01, half up */
    sell(e, "s1", T0 + 2, "X", "2", "100.005");        /* proceeds 100.01 */
    sell(e, "s2", T0 + 3, "X", "1", "2.225");          /* 2.23 (half even: 2.22) */
    sell(e, "s3", T0 + 4, "X", "1", "7");
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 4);
    /* s1: 1 of a, 1 of b */
    assert_string_equal(F(inv_relief(e, 0)->proceeds), "50.01"); /* 100.01 / 2 = 50.005 */
    assert_string_equal(F(inv_relief(e, 1)->proceeds), "50");    /* the remainder */
    assert_string_equal(F(inv_relief(e, 0)->cost), "10");
    assert_string_equal(F(inv_relief(e, 1)->cost), "3.34");      /* 10.01 / 3 = 3.3366.. */
    assert_string_equal(F(inv_relief(e, 2)->proceeds), "2.23");
    assert_string_equal(F(inv_relief(e, 2)->cost), "3.34");      /* 6.67 / 2 = 3.335: up */
    assert_string_equal(F(inv_relief(e, 3)->cost), "3.33");      /* what b still holds */
    expect_summary(e, "X", "0", "0", "0", NULL);                  /* 3.34+3.34+3.33 = 10.01 */
    inv_engine_free(e);

    /* income at fair value and a trade's value split across received lines */
    e = inv_engine_new(DOMAIN_METHOD_FIFO);
    txb_t i = TX("i", T0, DOMAIN_TX_INCOME);
    i.received[i.tx.received_count++] = L("ETH", "0.333", "3.333"); /* 1.109889 */
    add_tx(e, &i);
    txb_t t = TX("t", T0 + 1, DOMAIN_TX_TRADE);
    t.sent[t.tx.sent_count++] = L("USD", "10", NULL);
    t.received[t.tx.received_count++] = L("A", "1", NULL);
    t.received[t.tx.received_count++] = L("B", "1", NULL);
    t.received[t.tx.received_count++] = L("C", "1", NULL);
    add_tx(e, &t);
    run_ok(e);
    expect_summary(e, "ETH", "0.333", "1.11", "0.333", "3.333333333333333333");
    expect_summary(e, "A", "1", "3.33", "1", "3.33");
    expect_summary(e, "B", "1", "3.33", "1", "3.33");
    expect_summary(e, "C", "1", "3.34", "1", "3.34"); /* the remainder */
    inv_engine_free(e);

    /* AUSTRIA: the pool's relieved cost in cents, an emptying relief takes it all */
    e = inv_engine_new(DOMAIN_METHOD_AUSTRIA);
    buy(e, "a", T0, "X", "3", "10", NULL);
    sell(e, "s1", T0 + 1, "X", "1", "5");
    sell(e, "s2", T0 + 2, "X", "2", "5");
    run_ok(e);
    assert_string_equal(F(inv_relief(e, 0)->cost), "3.33");
    assert_string_equal(F(inv_relief(e, 1)->cost), "6.67");
    assert_int_equal(inv_relief(e, 0)->method, DOMAIN_METHOD_AUSTRIA);
    inv_engine_free(e);
}

/* FIFO -> LIFO -> HIFO on one asset; each relief by the method in force at
 * its datetime (a change effective at the sale's instant applies). */
static void test_method_schedule(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    inv_method_change_t changes[] = {{T0 + 10 * DAY_MS, DOMAIN_METHOD_LIFO},
                                     {T0 + 20 * DAY_MS, DOMAIN_METHOD_HIFO}};
    assert_int_equal(inv_engine_set_schedule(e, changes, 2), 0);
    buy(e, "b1", T0, "ETH", "1", "100", NULL);
    buy(e, "b2", T0 + DAY_MS, "ETH", "1", "300", NULL);
    buy(e, "b3", T0 + 2 * DAY_MS, "ETH", "1", "200", NULL);
    buy(e, "b4", T0 + 3 * DAY_MS, "ETH", "1", "250", NULL);
    sell(e, "s1", T0 + 5 * DAY_MS, "ETH", "1", "400");     /* FIFO: b1 */
    sell(e, "s2", T0 + 10 * DAY_MS, "ETH", "1", "400");    /* LIFO: b4 */
    sell(e, "s3", T0 + 25 * DAY_MS, "ETH", "1.5", "600");  /* HIFO: b2, then half of b3 */
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 4);
    assert_string_equal(inv_relief(e, 0)->lot_tx_id, "b1");
    assert_int_equal(inv_relief(e, 0)->method, DOMAIN_METHOD_FIFO);
    assert_string_equal(inv_relief(e, 1)->lot_tx_id, "b4");
    assert_int_equal(inv_relief(e, 1)->method, DOMAIN_METHOD_LIFO);
    assert_string_equal(inv_relief(e, 2)->lot_tx_id, "b2");
    assert_string_equal(inv_relief(e, 3)->lot_tx_id, "b3");
    assert_string_equal(F(inv_relief(e, 3)->cost), "100");
    assert_int_equal(inv_relief(e, 3)->method, DOMAIN_METHOD_HIFO);
    expect_summary(e, "ETH", "0.5", "100", "0.5", "200");
    inv_engine_free(e);

    e = inv_engine_new(DOMAIN_METHOD_FIFO); /* unsorted or AUSTRIA changes: refused */
    inv_method_change_t bad[] = {{T0 + 2, DOMAIN_METHOD_LIFO}, {T0 + 1, DOMAIN_METHOD_HIFO}};
    assert_int_equal(inv_engine_set_schedule(e, bad, 2), -1);
    bad[1] = (inv_method_change_t){T0 + 3, DOMAIN_METHOD_AUSTRIA};
    assert_int_equal(inv_engine_set_schedule(e, bad, 2), -1);
    inv_engine_free(e);
}

/* LOFO: lowest unit cost first, ties by date then seq, lots without basis
 * last in FIFO order; LIFO: latest first whatever the basis. */
static void test_lofo_and_lifo_order(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_LOFO);
    buy(e, "b1", T0, "SOL", "1", "100", NULL);
    txb_t dep = TX("dep", T0 + 1, DOMAIN_TX_DEPOSIT);
    dep.received[dep.tx.received_count++] = L("SOL", "1", NULL);
    add_tx(e, &dep);
    buy(e, "b3", T0 + 2, "SOL", "1", "100", NULL);
    buy(e, "b4", T0 + 3, "SOL", "1", "50", NULL);
    sell(e, "s", T0 + 4, "SOL", "3.5", "1000");
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 4);
    assert_string_equal(inv_relief(e, 0)->lot_tx_id, "b4");
    assert_string_equal(inv_relief(e, 1)->lot_tx_id, "b1");
    assert_string_equal(inv_relief(e, 2)->lot_tx_id, "b3");
    assert_string_equal(inv_relief(e, 3)->lot_tx_id, "dep");
    assert_int_equal(inv_relief(e, 3)->lot_origin, INV_LOT_TRANSFER);
    assert_int_equal(inv_relief(e, 3)->method, DOMAIN_METHOD_LOFO);
    inv_engine_free(e);

    e = inv_engine_new(DOMAIN_METHOD_LIFO);
    buy(e, "b1", T0, "SOL", "1", "100", NULL);
    add_tx(e, &dep);
    sell(e, "s", T0 + 4, "SOL", "1.5", "1000");
    run_ok(e);
    assert_string_equal(inv_relief(e, 0)->lot_tx_id, "dep");
    assert_false(inv_relief(e, 0)->has_basis);
    assert_string_equal(inv_relief(e, 1)->lot_tx_id, "b1");
    assert_string_equal(F(inv_relief(e, 1)->cost), "50");
    inv_engine_free(e);

    /* inv_lot_compare states the same orders */
    inv_lot_t cheap = {.acquired_ms = T0 + 5, .seq = 2, .has_basis = true,
                       .orig_cost = D("10"), .orig_quantity = D("1")};
    inv_lot_t dear = {.acquired_ms = T0, .seq = 0, .has_basis = true,
                      .orig_cost = D("30"), .orig_quantity = D("2")};
    inv_lot_t none = {.acquired_ms = T0 - 5, .seq = 1};
    assert_true(inv_lot_compare(DOMAIN_METHOD_FIFO, &none, &dear) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_LIFO, &cheap, &dear) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_HIFO, &dear, &cheap) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_HIFO, &cheap, &none) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_LOFO, &cheap, &dear) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_LOFO, &dear, &none) < 0);
    assert_true(inv_lot_compare(DOMAIN_METHOD_AUSTRIA, &dear, &cheap) < 0);
    assert_int_equal(inv_lot_compare(DOMAIN_METHOD_HIFO, &dear, &dear), 0);
}

/* A deposit's customer-provided lots: their own basis and acquisition date
 * (FIFO takes an early one first), the rest of the line without basis. */
static void test_provided_lots(void **state)
{
    (void)state;
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    buy(e, "b1", T0, "BTC", "1", "20000", NULL);
    txb_t d = TX("dep", T0 + 100 * DAY_MS, DOMAIN_TX_DEPOSIT);
    d.received[d.tx.received_count++] = L("BTC", "2", "60000");
    inv_provided_lot_t lots[2] = {{.quantity = D("1"), .cost = D("5000"),
                                   .acquired_ms = T0 - 400 * DAY_MS},
                                  {.quantity = D("0.5"), .cost = D("3000.005"),
                                   .acquired_ms = T0 + 50 * DAY_MS}};
    strcpy(lots[0].asset, "BTC");
    strcpy(lots[1].asset, "BTC");
    d.tx.provided = lots;
    d.tx.provided_count = 2;
    add_tx(e, &d);
    sell(e, "s1", T0 + 200 * DAY_MS, "BTC", "2", "120000");
    run_ok(e);
    assert_int_equal(inv_relief_count(e), 2);
    const inv_relief_t *p = inv_relief(e, 0), *b = inv_relief(e, 1);
    assert_string_equal(p->lot_tx_id, "dep");
    assert_int_equal(p->lot_origin, INV_LOT_PROVIDED);
    assert_int_equal(p->acquired_ms, T0 - 400 * DAY_MS);
    assert_int_equal(p->term, INV_LONG_TERM);
    assert_string_equal(F(p->cost), "5000");
    assert_string_equal(b->lot_tx_id, "b1");
    /* what is left: 0.5 provided (cost 3000.01) and 0.5 without basis */
    const inv_summary_t *s = inv_summary_of(e, "BTC");
    assert_int_equal(s->lot_count, 2);
    assert_int_equal(s->lots[0].origin, INV_LOT_PROVIDED);
    assert_int_equal(s->lots[0].entered_ms, T0 + 100 * DAY_MS);
    assert_string_equal(F(s->lots[0].cost), "3000.01");
    assert_int_equal(s->lots[1].origin, INV_LOT_TRANSFER);
    assert_false(s->lots[1].has_basis);
    expect_summary(e, "BTC", "1", "3000.01", "0.5", "6000.02");
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
        cmocka_unit_test(test_exchange_fees),
        cmocka_unit_test(test_rounding_to_cents),
        cmocka_unit_test(test_method_schedule),
        cmocka_unit_test(test_lofo_and_lifo_order),
        cmocka_unit_test(test_provided_lots),
        cmocka_unit_test(test_overflow_reported),
        cmocka_unit_test(test_permutations_give_identical_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
