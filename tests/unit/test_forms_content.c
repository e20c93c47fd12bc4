/* Unit tests of the tax forms' content against a hand-worked year, run
 * through the real inventory engine (FIFO): a buy with a fee, a partial sale
 * within a year, a sale spanning a lot held more than a year and one held
 * less, a loss, a transfer out (realises nothing), a disposal without cost
 * basis, and the UTC year boundary on both sides.
 *
 * The year 2024, worked by hand:
 *   b1  2023-03-01 buy 2 BTC for 20000 USD + 10 fee     lot1 2 BTC cost 20010
 *   b2  2024-02-01 buy 1 BTC for 30000 USD              lot2 1 BTC cost 30000
 *   s1  2024-02-15 sell 1 BTC for 25000, fee 5          1 of lot1: cost 10005, proceeds
 *                                                       24995, short (not a year)
 *   s2  2024-06-01 sell 1.5 BTC for 30000               lot1's last 1: cost 10005,
 *                                                       proceeds 20000, LONG (after
 *                                                       2024-03-01); 0.5 of lot2: cost
 *                                                       15000, proceeds 10000, short (a loss)
 *   e1  2024-03-01 buy 10 ETH for 5000; e2 2024-04-01 sell them for 4000   short, -1000
 *   d1  2024-01-10 deposit 1 SOL (no basis); d2 2024-05-01 sell it for 100 USD
 *   i1  2024-07-01 income 0.1 ETH at 3000               USD value 300
 *   w1  2024-08-01 withdraw 0.2 BTC at 60000            transfer: nothing realised
 *   x1  2024-12-31T23:59:59.999Z expense 0.1 BTC at 50000   0.1 of lot2: cost 3000,
 *                                                       proceeds 5000, short (in 2024)
 *   y1  2025-01-01T00:00:00Z sell 0.1 BTC for 7000      outside 2024
 *
 * Short: BTC proceeds 24995+10000+5000 = 39995, cost 10005+15000+3000 = 28005,
 * gain 11990; ETH 4000 / 5000 / -1000. Long: BTC 20000 / 10005 / 9995.
 * Total 63995 / 43010 / 20985. Without basis: SOL 1, proceeds 100.
 * Transactions of 2024 (b1 and y1 are outside): trades b2 s1 s2 e1 e2 d2, six,
 * valued by the side sent, else received: 30000 + 25000 + 30000 + 5000 + 4000
 * + 100 = 94100; d1 has no USD value; i1 300, w1 12000, x1 5000. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forms/content.h"
#include "gains/gains.h"

/* A relief of the engine as the store keeps it (store/gains.h), classified
 * by gains/gains.h and fed to the content: the path forms/forms.c takes. */
static dec_status_t add_relief(forms_content_t *c, const inv_relief_t *r)
{
    if (r->kind != INV_RELIEF_DISPOSAL)
        return DEC_OK; /* only disposals are gains rows */
    char q[DEC_TEXT_MAX], p[DEC_TEXT_MAX], cost[DEC_TEXT_MAX];
    dec_format(r->quantity, q);
    dec_format(r->proceeds, p);
    dec_format(r->cost, cost);
    bool shortfall = r->lot_tx_id == NULL && !r->has_basis;
    store_gain_t row = {.transaction_id = r->tx_id, .asset_code = r->asset,
                        .asset_type = "crypto", .datetime = r->datetime_ms, .quantity = q,
                        .proceeds = r->has_proceeds ? p : NULL,
                        .cost = r->has_basis ? cost : NULL, .transaction_costs = "0",
                        .term = shortfall ? NULL : r->term == INV_LONG_TERM ? "long" : "short",
                        .has_acquired_at = !shortfall, .acquired_at = r->acquired_ms,
                        .lot_transaction_id = r->lot_tx_id,
                        .lot_origin = shortfall ? NULL : "acquired", .method = "FIFO"};
    gains_row_t g;
    if (gains_classify(&row, &g) != GAINS_OK)
        return DEC_RANGE;
    return forms_content_add_gain(c, &g);
}

static dec_t D(const char *s)
{
    dec_t d;
    assert_int_equal(dec_parse(s, strlen(s), &d), DEC_OK);
    return d;
}

static int64_t AT(const char *rfc3339)
{
    int64_t ms;
    assert_int_equal(clock_parse_rfc3339(rfc3339, &ms), 0);
    return ms;
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
    inv_line_t sent[2], received[2], fees[2];
} txb_t;

static txb_t txs[16];
static size_t tx_count;

static txb_t *T(const char *id, const char *at, domain_tx_type_t type)
{
    txb_t *b = &txs[tx_count++];
    memset(b, 0, sizeof *b);
    snprintf(b->tx.id, sizeof b->tx.id, "%s", id);
    b->tx.datetime_ms = AT(at);
    b->tx.type = type;
    b->tx.sent = b->sent;
    b->tx.received = b->received;
    b->tx.fees = b->fees;
    return b;
}

static void sent(txb_t *b, inv_line_t l) { b->sent[b->tx.sent_count++] = l; }
static void got(txb_t *b, inv_line_t l) { b->received[b->tx.received_count++] = l; }
static void fee(txb_t *b, inv_line_t l) { b->fees[b->tx.fee_count++] = l; }

static void trade(const char *id, const char *at, inv_line_t give, inv_line_t take,
                  const char *usd_fee)
{
    txb_t *b = T(id, at, DOMAIN_TX_TRADE);
    sent(b, give);
    got(b, take);
    if (usd_fee != NULL)
        fee(b, L("USD", usd_fee, NULL));
}

static void the_year(void)
{
    tx_count = 0;
    trade("b1", "2023-03-01T00:00:00Z", L("USD", "20000", NULL), L("BTC", "2", NULL), "10");
    trade("b2", "2024-02-01T00:00:00Z", L("USD", "30000", NULL), L("BTC", "1", NULL), NULL);
    trade("s1", "2024-02-15T00:00:00Z", L("BTC", "1", NULL), L("USD", "25000", NULL), "5");
    trade("s2", "2024-06-01T00:00:00Z", L("BTC", "1.5", NULL), L("USD", "30000", NULL), NULL);
    trade("e1", "2024-03-01T00:00:00Z", L("USD", "5000", NULL), L("ETH", "10", NULL), NULL);
    trade("e2", "2024-04-01T00:00:00Z", L("ETH", "10", NULL), L("USD", "4000", NULL), NULL);
    got(T("d1", "2024-01-10T00:00:00Z", DOMAIN_TX_DEPOSIT), L("SOL", "1", NULL));
    trade("d2", "2024-05-01T00:00:00Z", L("SOL", "1", NULL), L("USD", "100", NULL), NULL);
    got(T("i1", "2024-07-01T00:00:00Z", DOMAIN_TX_INCOME), L("ETH", "0.1", "3000"));
    sent(T("w1", "2024-08-01T00:00:00Z", DOMAIN_TX_WITHDRAW), L("BTC", "0.2", "60000"));
    sent(T("x1", "2024-12-31T23:59:59.999Z", DOMAIN_TX_EXPENSE), L("BTC", "0.1", "50000"));
    trade("y1", "2025-01-01T00:00:00Z", L("BTC", "0.1", NULL), L("USD", "7000", NULL), NULL);
}

/* The content of `type` for 2024 from the year above, through the engine. */
static json_t *render(forms_type_t type)
{
    the_year();
    inv_engine_t *e = inv_engine_new(DOMAIN_METHOD_FIFO);
    assert_non_null(e);
    forms_content_t *c = forms_content_new(type, 2024);
    assert_non_null(c);
    for (size_t i = 0; i < tx_count; i++) {
        assert_int_equal(inv_engine_add(e, &txs[i].tx), 0);
        assert_int_equal(forms_content_add_tx(c, &txs[i].tx), DEC_OK);
    }
    const char *failed = NULL;
    assert_int_equal(inv_engine_run(e, &failed), DEC_OK);
    for (size_t i = 0; i < inv_relief_count(e); i++)
        assert_int_equal(add_relief(c, inv_relief(e, i)), DEC_OK);
    json_t *doc = forms_content_render(c);
    assert_non_null(doc);
    forms_content_free(c);
    inv_engine_free(e);
    return doc;
}

/* The compact JSON of doc at a dotted path ("short_term.assets.0"). */
static char *at(json_t *doc, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = doc;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
    assert_non_null(v);
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
}

static void expect(json_t *doc, const char *path, const char *json)
{
    char *got_text = at(doc, path);
    assert_string_equal(got_text, json);
    free(got_text);
}

static void test_gain_loss_by_term(void **state)
{
    (void)state;
    json_t *doc = render(FORMS_GAIN_LOSS_SUMMARY);
    expect(doc, "short_term.assets",
           "[{\"asset_code\":\"BTC\",\"quantity\":\"1.6\",\"proceeds\":\"39995\","
           "\"cost_basis\":\"28005\",\"gain_loss\":\"11990\"},"
           "{\"asset_code\":\"ETH\",\"quantity\":\"10\",\"proceeds\":\"4000\","
           "\"cost_basis\":\"5000\",\"gain_loss\":\"-1000\"}]");
    expect(doc, "short_term.gain_loss", "\"10990\"");
    expect(doc, "short_term.proceeds", "\"43995\"");
    expect(doc, "long_term.assets",
           "[{\"asset_code\":\"BTC\",\"quantity\":\"1\",\"proceeds\":\"20000\","
           "\"cost_basis\":\"10005\",\"gain_loss\":\"9995\"}]");
    expect(doc, "total",
           "{\"proceeds\":\"63995\",\"cost_basis\":\"43010\",\"gain_loss\":\"20985\"}");
    /* SOL came in without basis: counted, never summed as a zero cost */
    expect(doc, "rows_without_cost_basis", "1");
    expect(doc, "rows_without_proceeds", "0");
    expect(doc, "currency", "\"USD\"");
    /* 2024 is before 1099-DA reporting: every crypto row is in box C or F
     * (C: s1, s2 from lot2, e2, d2, x1; F: s2 from lot1) */
    expect(doc, "form_8949_boxes",
           "[{\"box\":\"C\",\"rows\":5,\"proceeds\":\"43995\",\"cost_basis\":\"33005\","
           "\"gain_loss\":\"10990\"},{\"box\":\"F\",\"rows\":1,\"proceeds\":\"20000\","
           "\"cost_basis\":\"10005\",\"gain_loss\":\"9995\"}]");
    json_decref(doc);
}

static void test_transaction_summary(void **state)
{
    (void)state;
    json_t *doc = render(FORMS_TRANSACTION_SUMMARY);
    expect(doc, "transaction_types",
           "[{\"type\":\"deposit\",\"count\":1,\"usd_value\":\"0\",\"count_without_usd_value\":1},"
           "{\"type\":\"income\",\"count\":1,\"usd_value\":\"300\",\"count_without_usd_value\":0},"
           "{\"type\":\"trade\",\"count\":6,\"usd_value\":\"94100\",\"count_without_usd_value\":0},"
           "{\"type\":\"withdraw\",\"count\":1,\"usd_value\":\"12000\","
           "\"count_without_usd_value\":0},"
           "{\"type\":\"expense\",\"count\":1,\"usd_value\":\"5000\","
           "\"count_without_usd_value\":0}]");
    expect(doc, "total", "{\"count\":10,\"usd_value\":\"111400\",\"count_without_usd_value\":1}");
    json_decref(doc);
}

/* A disposal with a basis but no USD value received: listed apart, not
 * counted as a zero-proceeds loss. */
static void test_disposal_without_proceeds(void **state)
{
    (void)state;
    forms_content_t *c = forms_content_new(FORMS_GAIN_LOSS_SUMMARY, 2024);
    inv_relief_t r = {.kind = INV_RELIEF_DISPOSAL, .asset = "ETH",
                      .datetime_ms = AT("2024-05-05T00:00:00Z"), .quantity = D("2"),
                      .has_basis = true, .cost = D("10.5")};
    assert_int_equal(add_relief(c, &r), DEC_OK);
    r.kind = INV_RELIEF_CARRY; /* realises nothing */
    assert_int_equal(add_relief(c, &r), DEC_OK);
    json_t *doc = forms_content_render(c);
    expect(doc, "rows_without_proceeds", "1");
    expect(doc, "short_term.assets", "[]");
    expect(doc, "total", "{\"proceeds\":\"0\",\"cost_basis\":\"0\",\"gain_loss\":\"0\"}");
    json_decref(doc);
    forms_content_free(c);
}

/* A sum beyond the decimals' range is reported, never wrapped. */
static void test_overflow_reported(void **state)
{
    (void)state;
    forms_content_t *c = forms_content_new(FORMS_GAIN_LOSS_SUMMARY, 2024);
    inv_relief_t r = {.kind = INV_RELIEF_DISPOSAL, .asset = "BTC",
                      .datetime_ms = AT("2024-05-05T00:00:00Z"),
                      .quantity = D("1"), .has_basis = true, .cost = D("1"),
                      .has_proceeds = true};
    /* 96 nines: the decimals' limit, past what any admitted history reaches */
    char nines[DEC_MAX_INT_DIGITS + 1];
    memset(nines, '9', DEC_MAX_INT_DIGITS);
    nines[DEC_MAX_INT_DIGITS] = '\0';
    r.proceeds = D(nines);
    assert_int_equal(add_relief(c, &r), DEC_OK);
    assert_int_equal(add_relief(c, &r), DEC_RANGE);
    assert_null(forms_content_render(c));
    forms_content_free(c);
}

static void test_types_and_year_bounds(void **state)
{
    (void)state;
    forms_type_t t;
    assert_true(forms_type_parse("1099_DA", &t));
    assert_int_equal(t, FORMS_1099_DA);
    assert_true(forms_type_parse("TRANSACTION_SUMMARY_PDF", &t));
    assert_string_equal(forms_type_name(t), "TRANSACTION_SUMMARY_PDF");
    assert_false(forms_type_parse("1099-DA", &t));
    assert_false(forms_type_parse("gain_loss_summary", &t));
    int64_t from, to;
    forms_year_bounds(2024, &from, &to);
    assert_true(from == AT("2024-01-01T00:00:00Z"));
    assert_true(to == AT("2025-01-01T00:00:00Z"));
    forms_content_t *c = forms_content_new(FORMS_1099_B, 2024);
    json_t *doc = forms_content_render(c);
    assert_non_null(json_object_get(doc, "note"));
    json_decref(doc);
    forms_content_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gain_loss_by_term),
        cmocka_unit_test(test_transaction_summary),
        cmocka_unit_test(test_disposal_without_proceeds),
        cmocka_unit_test(test_overflow_reported),
        cmocka_unit_test(test_types_and_year_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
