/* inventory: what the inventory engine computed for an account, read through
 * four routes (scope `inventory`):
 *
 *   GET /v1/inventory/summaries?account_id=          per asset: quantity, cost, average
 *   GET /v1/inventory?account_id=&asset_code=        one asset's summary and its lots
 *   GET /v1/transfer-lots/transactions/{id}          the lots a withdraw relieved (a
 *                                                    deposit's provided lots: transfer_lots.c)
 *   GET /v1/withholding/austria?account_id=&tax_year=  Austrian gains and withholding
 *
 * Freshness. Writes only lower the account's dirty watermark; every handler
 * here calls inventory_refresh before it reads, so an answer reflects every
 * write acknowledged before the request (recalc.h). The refresh and the read
 * are two steps: a write that lands between them is not in this answer, but
 * it was not acknowledged when the read began, and the next read has it.
 *
 * Values. The store keeps the engine's decimals as canonical text; they are
 * parsed and formatted again on the way out (dec_format), so a row that is
 * not a decimal fails the request with 500 instead of reaching a client.
 * A lot's unit_cost is cost / quantity with the engine's one rounding rule
 * (half to even at 18 fractional digits, dec_div).
 *
 * Transfer lots. The route names a transaction, not an account: the store
 * finds its type and account (store/lots.h), the account is refreshed, and
 * only its reliefs of kind `transfer` are answered (a fee paid in the sent
 * asset is a disposal, not a transfer). 203 instead of 200 when the answer
 * carries warnings: a piece relieved beyond the holding (no acquisition, no
 * basis) or a relieved lot without cost basis.
 *
 * Withholding. The year's reliefs of kind `disposal` (a `carry`, the
 * Austrian crypto-to-crypto swap, realises nothing); consecutive pieces of
 * one transaction and asset are answered as one disposal, because under the
 * moving average the lot a quantity left from does not change its cost.
 * Pieces without proceeds or without basis form their own rows with a null
 * gain and stay out of the totals: a gain that cannot be computed is shown,
 * never guessed. The withholding is 27.5% of a positive net, rounded half to
 * even to the cent in one step from the exact net (round_cents below), so no
 * intermediate rounding can move a cent. docs/decisions.md has the sources.
 *
 * Order of checks: 400 (query), 404 (account or transaction), 409 / 400 for
 * the rules of the route, then the refresh (409 "Inventory cannot be
 * computed: <reason>" when the account's inventory cannot be computed,
 * 500/504 when the store fails).
 *
 * Not computable is a 409, not a 5xx: it is a state of the account's data
 * (a retry gets the same answer until a write changes it), not a failure of
 * the service, and clients retry 5xx. Within the input limits it cannot
 * happen (docs/decisions.md, Amounts and the range of totals). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/grow.h"
#include "core/jsonval.h"
#include "inventory/engine.h"
#include "api/inventory_account.h"
#include "store/dispositions.h"
#include "store/inventory.h"
#include "store/lots.h"

#define YEAR_MIN 1900
#define YEAR_MAX 2200
#define WITHHOLDING_RATE "0.275"

/* ---- decimals out ------------------------------------------------------ */

/* The canonical string of a stored decimal, null for NULL; sets *bad (and
 * returns NULL) when the text is not a decimal. */
static json_t *dec_json(const char *text, bool *bad)
{
    if (text == NULL)
        return json_null();
    dec_t d;
    char out[DEC_TEXT_MAX];
    if (dec_parse(text, strlen(text), &d) != DEC_OK) {
        *bad = true;
        return NULL;
    }
    dec_format(d, out);
    return json_string(out);
}

static json_t *dec_value_json(dec_t d)
{
    char out[DEC_TEXT_MAX];
    dec_format(d, out);
    return json_string(out);
}

/* Answers {"data": data} (stolen); 500 when building it ran out of memory. */
static void reply_built(request_t *req, int status, json_t *data)
{
    if (data == NULL)
        api_internal_error(req, "out of memory building an inventory answer");
    else
        reply_data(req, status, data);
}

/* ---- GET /v1/inventory/summaries ------------------------------------- */

static json_t *summary_json(const store_inv_summary_t *s, bool *bad)
{
    json_t *out = json_pack("{s:s, s:o, s:o, s:o, s:o}", "asset_code", s->asset,
                            "total_quantity", dec_json(s->total_quantity, bad), "total_cost",
                            dec_json(s->total_cost, bad), "average_unit_cost",
                            dec_json(s->average_unit_cost, bad),
                            "total_quantity_with_cost_basis",
                            dec_json(s->quantity_with_basis, bad));
    if (out == NULL)
        *bad = true;
    return out;
}

typedef struct summaries_ctx {
    json_t *items;
    const char *only; /* one asset, or NULL for all */
    json_t *found;    /* with only: its summary */
    bool bad;
} summaries_ctx_t;

static int collect_summary(const store_inv_summary_t *row, void *arg)
{
    summaries_ctx_t *c = arg;
    if (c->only != NULL && strcmp(row->asset, c->only) != 0)
        return 0;
    json_t *s = summary_json(row, &c->bad);
    if (c->bad)
        return 1;
    if (c->only != NULL) {
        c->found = s;
        return 1;
    }
    return json_array_append_new(c->items, s) == 0 ? 0 : (c->bad = true);
}

void api_inventory_summaries(request_t *req)
{
    bool malformed = false;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    if (!api_query_ok(req, malformed, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!api_inventory_open_account(req, account_id, &db, &account))
        return;
    summaries_ctx_t c = {.items = json_array()};
    store_status_t st = store_inv_summaries(db, account.uuid, collect_summary, &c);
    if (st != STORE_OK || c.bad || c.items == NULL) {
        json_decref(c.items);
        api_fail(req, st, "inventory summaries: a stored value does not parse, or memory ran out");
        return;
    }
    reply_built(req, 200,
                json_pack("{s:s, s:o}", "account_id", account.id, "summaries", c.items));
}

/* ---- GET /v1/inventory ------------------------------------------------- */

/* The lots are answered in the order the method in force now would relieve
 * them (issue 16; before, acquisition order): each lot's JSON beside what
 * inv_lot_compare needs, sorted once the store's walk is done. */
typedef struct ordered_lot {
    inv_lot_t key;
    json_t *json;
} ordered_lot_t;

typedef struct lots_ctx {
    json_t *lots;
    ordered_lot_t *order; /* malloc'd */
    size_t count, cap;
    bool bad;
    dec_status_t arithmetic;
    char failed_tx[STORE_ID_MAX];
} lots_ctx_t;

/* qsort_r's comparison: the method comes as the context. */
static int compare_lots(const void *a, const void *b, void *method)
{
    const ordered_lot_t *x = a, *y = b;
    return inv_lot_compare(*(const domain_method_t *)method, &x->key, &y->key);
}

/* What inv_lot_compare reads of a stored lot; false when a value does not parse. */
static bool lot_key(const store_inv_lot_t *row, inv_lot_t *key)
{
    const char *q = row->orig_quantity != NULL ? row->orig_quantity : row->quantity;
    const char *c = row->orig_quantity != NULL ? row->orig_cost : row->cost;
    memset(key, 0, sizeof *key);
    key->acquired_ms = row->acquired_at;
    key->seq = row->seq >= 0 ? (size_t)row->seq : 0;
    key->has_basis = c != NULL;
    key->orig_cost = dec_zero();
    return dec_parse(q, strlen(q), &key->orig_quantity) == DEC_OK &&
           (c == NULL || dec_parse(c, strlen(c), &key->orig_cost) == DEC_OK);
}

/* cost / quantity, rounded as the engine rounds; null without basis. */
static json_t *unit_cost_json(lots_ctx_t *c, const store_inv_lot_t *row)
{
    if (row->cost == NULL)
        return json_null();
    dec_t cost, quantity, unit;
    if (dec_parse(row->cost, strlen(row->cost), &cost) != DEC_OK ||
        dec_parse(row->quantity, strlen(row->quantity), &quantity) != DEC_OK) {
        c->bad = true;
        return NULL;
    }
    dec_status_t st = dec_div(cost, quantity, &unit);
    if (st != DEC_OK) { /* past the decimals' range: only a row beyond the input limits */
        c->arithmetic = st;
        snprintf(c->failed_tx, sizeof c->failed_tx, "%s", row->transaction_id);
        return NULL;
    }
    return dec_value_json(unit);
}

static int collect_lot(const store_inv_lot_t *row, void *arg)
{
    lots_ctx_t *c = arg;
    json_t *unit = unit_cost_json(c, row);
    if (unit == NULL) {
        c->bad = c->bad || c->arithmetic == DEC_OK; /* out of memory */
        return 1;
    }
    json_t *lot = json_pack("{s:s, s:o, s:o, s:o, s:o}", "transaction_id", row->transaction_id,
                            "acquired_at", jsonval_time(row->acquired_at), "quantity",
                            dec_json(row->quantity, &c->bad), "cost_basis",
                            dec_json(row->cost, &c->bad), "unit_cost", unit);
    ordered_lot_t *grown = grow_array(c->order, &c->cap, c->count + 1, sizeof *grown, 16);
    if (grown != NULL)
        c->order = grown;
    if (lot == NULL || c->bad || grown == NULL || !lot_key(row, &c->order[c->count].key)) {
        json_decref(lot);
        return c->bad = true;
    }
    c->order[c->count++].json = lot;
    return 0;
}

/* The method in force now for the account: its latest disposition method
 * record in force, else its own method. */
static bool method_now(request_t *req, store_conn_t *db, const store_inv_account_t *account,
                       domain_method_t *out)
{
    char name[DOMAIN_METHOD_SIZE];
    store_status_t st = store_disposition_in_force(db, account->uuid, api_now_ms(req), name);
    if (st == STORE_NOT_FOUND) {
        memcpy(name, account->method, sizeof name);
        st = STORE_OK;
    }
    if (st != STORE_OK) {
        reply_store_failure(req, st);
        return false;
    }
    *out = DOMAIN_METHOD_DEFAULT;
    domain_method_parse(name, out);
    return true;
}

/* Sorts the collected lots and moves them into c->lots; false when memory ran out. */
static bool order_lots(lots_ctx_t *c, domain_method_t method)
{
    if (c->count > 1)
        qsort_r(c->order, c->count, sizeof *c->order, compare_lots, &method);
    bool ok = true;
    for (size_t i = 0; i < c->count; i++) {
        ok = ok && json_array_append(c->lots, c->order[i].json) == 0;
        json_decref(c->order[i].json);
    }
    c->count = 0;
    return ok;
}

/* The asset's summary (NULL after answering 404 or a failure). */
static json_t *one_summary(request_t *req, store_conn_t *db, const store_inv_account_t *account,
                           const char *asset)
{
    summaries_ctx_t c = {.only = asset};
    store_status_t st = store_inv_summaries(db, account->uuid, collect_summary, &c);
    if (st != STORE_OK || c.bad) {
        json_decref(c.found);
        api_fail(req, st, "inventory summary: a stored value does not parse, or memory ran out");
        return NULL;
    }
    if (c.found == NULL)
        reply_error(req, 404, "No inventory of asset '%s' in account '%s'", asset, account->id);
    return c.found;
}

void api_inventory_lots(request_t *req)
{
    bool malformed = false;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    const char *asset = api_query_text(req, "asset_code", issues, &malformed);
    if (!api_query_ok(req, malformed, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!api_inventory_open_account(req, account_id, &db, &account))
        return;
    json_t *summary = one_summary(req, db, &account, asset);
    if (summary == NULL)
        return;
    domain_method_t method;
    if (!method_now(req, db, &account, &method)) {
        json_decref(summary);
        return;
    }
    lots_ctx_t c = {.lots = json_array(), .arithmetic = DEC_OK};
    store_status_t st = store_inv_lots(db, account.uuid, asset, collect_lot, &c);
    if (st == STORE_OK && !c.bad && c.arithmetic == DEC_OK && !order_lots(&c, method))
        c.bad = true;
    for (size_t i = 0; i < c.count; i++) /* left by a walk that stopped */
        json_decref(c.order[i].json);
    free(c.order);
    if (st == STORE_OK && c.arithmetic != DEC_OK) {
        api_inventory_reply_range(req, c.failed_tx);
    } else if (st != STORE_OK || c.bad || c.lots == NULL) {
        api_fail(req, st, "inventory lots: a stored value does not parse, or memory ran out");
    } else {
        reply_built(req, 200, json_pack("{s:s, s:s, s:O, s:O}", "account_id", account.id,
                                        "asset_code", asset, "summary", summary, "lots",
                                        c.lots));
    }
    json_decref(summary);
    json_decref(c.lots);
}

/* ---- GET /v1/transfer-lots/transactions/{transactionId} --------------- */

typedef struct transfer_ctx {
    json_t *lots;
    json_t *warnings;
    json_t *unbased; /* asset codes already warned about missing basis (a set) */
    bool bad;
} transfer_ctx_t;

static void warn(transfer_ctx_t *c, const char *code, const char *message)
{
    json_t *w = json_pack("{s:s, s:s}", "code", code, "message", message);
    if (w == NULL || json_array_append_new(c->warnings, w) != 0)
        c->bad = true;
}

/* One warning per shortfall piece (with its quantity), one per asset whose
 * relieved lots include some without basis. */
static void warn_about(transfer_ctx_t *c, const store_inv_relief_t *row)
{
    char message[256];
    if (row->lot_transaction_id == NULL) {
        snprintf(message, sizeof message,
                 "The account held less %s than the transaction sent: %s %s were relieved "
                 "without an acquisition and without cost basis",
                 row->asset, row->quantity, row->asset);
        warn(c, "insufficient_holdings", message);
    } else if (row->cost == NULL && json_object_get(c->unbased, row->asset) == NULL) {
        json_object_set_new(c->unbased, row->asset, json_true());
        snprintf(message, sizeof message,
                 "Some relieved %s lots have no cost basis (acquired without a known USD "
                 "value, for example by a deposit)",
                 row->asset);
        warn(c, "missing_cost_basis", message);
    }
}

static int collect_transfer(const store_inv_relief_t *row, void *arg)
{
    transfer_ctx_t *c = arg;
    if (strcmp(row->kind, inv_relief_kind_name(INV_RELIEF_TRANSFER)) != 0)
        return 0;
    bool shortfall = row->lot_transaction_id == NULL;
    json_t *lot = json_pack("{s:s, s:o, s:o, s:o, s:o}", "asset_code", row->asset,
                            "acquired_at", shortfall ? json_null() : jsonval_time(row->acquired_at),
                            "acquisition_transaction_id",
                            api_string_or_null(row->lot_transaction_id), "quantity",
                            dec_json(row->quantity, &c->bad), "cost_basis",
                            dec_json(row->cost, &c->bad));
    if (lot == NULL || c->bad || json_array_append_new(c->lots, lot) != 0)
        return c->bad = true;
    warn_about(c, row);
    return c->bad;
}

/* "a trade", "an income": the article for the 400 message. */
static const char *article(const char *type)
{
    return type[0] != '\0' && strchr("aeiou", type[0]) != NULL ? "an" : "a";
}

/* The transaction's account, after checking that it is a transfer out;
 * answers 404 / 400 / failures itself, and a deposit's lots
 * (api/transfer_lots.c). */
static bool transfer_account(request_t *req, store_conn_t *db, const char *tx_id,
                             store_inv_account_t *account)
{
    store_lots_tx_t tx;
    store_status_t st = store_lots_tx_account(db, req->claims.tenant_id, tx_id, &tx);
    if (st == STORE_OK && strcmp(tx.type, domain_tx_type_name(DOMAIN_TX_DEPOSIT)) == 0) {
        api_transfer_lots_deposit(req, db, tx_id); /* its customer-provided lots */
        return false;
    }
    if (st == STORE_OK && strcmp(tx.type, domain_tx_type_name(DOMAIN_TX_WITHDRAW)) != 0) {
        reply_error(req, 400, "Transaction '%s' is %s %s, not a transfer out", tx_id,
                    article(tx.type), tx.type);
        return false;
    }
    if (st == STORE_OK)
        st = store_inv_account(db, req->claims.tenant_id, tx.account_id, account);
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Transaction with id '%s' not found", tx_id);
    else if (st != STORE_OK)
        reply_store_failure(req, st);
    return st == STORE_OK;
}

void api_transfer_lots(request_t *req)
{
    const char *tx_id = request_param(req, "transactionId");
    store_conn_t *db = api_db(req);
    store_inv_account_t account;
    if (db == NULL || !transfer_account(req, db, tx_id, &account) ||
        !api_inventory_refresh(req, db, &account))
        return;
    transfer_ctx_t c = {.lots = json_array(), .warnings = json_array(), .unbased = json_object()};
    store_status_t st = STORE_OK;
    if (c.lots != NULL && c.warnings != NULL && c.unbased != NULL)
        st = store_inv_reliefs_of(db, account.uuid, tx_id, collect_transfer, &c);
    else
        c.bad = true; /* out of memory */
    json_decref(c.unbased);
    if (st != STORE_OK || c.bad) {
        json_decref(c.lots);
        json_decref(c.warnings);
        api_fail(req, st, "transfer lots: a stored value does not parse, or memory ran out");
        return;
    }
    bool warned = json_array_size(c.warnings) > 0;
    json_t *body = json_pack("{s:{s:s, s:s, s:o}}", "data", "transaction_id", tx_id, "account_id",
                             account.id, "lots", c.lots);
    if (body != NULL && warned)
        json_object_set_new(body, "warnings", c.warnings);
    else
        json_decref(c.warnings);
    if (body == NULL) {
        api_internal_error(req, "out of memory building the transfer lots");
        return;
    }
    /* spec § Statuses that are not errors: 203 when lots come with warnings */
    reply_json(req, warned ? 203 : 200, body);
}

/* ---- GET /v1/withholding/austria --------------------------------------- */

/* A run of consecutive disposal pieces of one transaction and asset with the
 * same completeness (proceeds known, basis known). */
typedef struct disposal_group {
    bool open;
    char tx_id[STORE_ID_MAX];
    char asset[DOMAIN_ASSET_CODE_SIZE];
    int64_t datetime;
    bool has_proceeds, has_cost;
    dec_t quantity, proceeds, cost;
} disposal_group_t;

typedef struct withholding_ctx {
    json_t *disposals;
    disposal_group_t group;
    dec_t gains, losses; /* losses as a non-negative amount */
    bool bad;
    dec_status_t arithmetic;
    char failed_tx[STORE_ID_MAX];
} withholding_ctx_t;

static bool arith(withholding_ctx_t *c, dec_status_t st, const char *tx_id)
{
    if (st == DEC_OK)
        return true;
    if (c->arithmetic == DEC_OK) {
        c->arithmetic = st;
        snprintf(c->failed_tx, sizeof c->failed_tx, "%s", tx_id);
    }
    return false;
}

static json_t *opt_dec(bool has, dec_t d)
{
    return has ? dec_value_json(d) : json_null();
}

/* Ends the open group: one disposal row, and its gain into the totals. */
static void flush_group(withholding_ctx_t *c)
{
    disposal_group_t *g = &c->group;
    if (!g->open)
        return;
    g->open = false;
    bool complete = g->has_proceeds && g->has_cost;
    dec_t gain = dec_zero();
    if (complete && arith(c, dec_sub(g->proceeds, g->cost, &gain), g->tx_id)) {
        dec_t *total = dec_is_negative(gain) ? &c->losses : &c->gains;
        arith(c, dec_add(*total, dec_abs(gain), total), g->tx_id);
    }
    json_t *row = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "transaction_id", g->tx_id,
                            "asset_code", g->asset, "datetime", jsonval_time(g->datetime),
                            "quantity", dec_value_json(g->quantity), "proceeds",
                            opt_dec(g->has_proceeds, g->proceeds), "cost_basis",
                            opt_dec(g->has_cost, g->cost), "gain", opt_dec(complete, gain));
    if (row == NULL || json_array_append_new(c->disposals, row) != 0)
        c->bad = true;
}

static bool same_group(const disposal_group_t *g, const store_inv_relief_t *row)
{
    return g->open && strcmp(g->tx_id, row->transaction_id) == 0 &&
           strcmp(g->asset, row->asset) == 0 && g->has_proceeds == (row->proceeds != NULL) &&
           g->has_cost == (row->cost != NULL);
}

static bool fits(const char *text, size_t cap)
{
    return strnlen(text, cap) < cap;
}

static bool start_group(withholding_ctx_t *c, const store_inv_relief_t *row)
{
    disposal_group_t *g = &c->group;
    if (!fits(row->transaction_id, sizeof g->tx_id) ||
        !fits(row->asset, sizeof g->asset))
        return false;
    *g = (disposal_group_t){.open = true, .datetime = row->datetime,
                            .has_proceeds = row->proceeds != NULL, .has_cost = row->cost != NULL};
    strcpy(g->tx_id, row->transaction_id);
    strcpy(g->asset, row->asset);
    return true;
}

/* Adds text (NULL: skipped) to *sum; false when it is not a decimal. */
static bool add_text(withholding_ctx_t *c, const char *text, dec_t *sum, const char *tx_id)
{
    dec_t d;
    if (text == NULL)
        return true;
    if (dec_parse(text, strlen(text), &d) != DEC_OK)
        return false;
    arith(c, dec_add(*sum, d, sum), tx_id);
    return true;
}

static int collect_disposal(const store_inv_relief_t *row, void *arg)
{
    withholding_ctx_t *c = arg;
    if (strcmp(row->kind, inv_relief_kind_name(INV_RELIEF_DISPOSAL)) != 0)
        return 0;
    if (!same_group(&c->group, row)) {
        flush_group(c);
        if (!start_group(c, row))
            return c->bad = true;
    }
    disposal_group_t *g = &c->group;
    if (!add_text(c, row->quantity, &g->quantity, g->tx_id) ||
        !add_text(c, row->proceeds, &g->proceeds, g->tx_id) ||
        !add_text(c, row->cost, &g->cost, g->tx_id))
        return c->bad = true;
    return c->bad || c->arithmetic != DEC_OK;
}

/* 27.5% of a positive net, rounded half to even to the cent, in one step
 * from the exact net: cents = net x 27.5 = units x 11 / (4 x 10^17), where
 * units counts 10^-18 (core/decimal.h). dec_mul_div divides the exact
 * product of two unit counts by a third with one rounding, so with 11 units
 * (0.000000000000000011) and 4 x 10^17 units (0.4) it yields the cents as a
 * count of units; multiplying by 10^16 (exact) makes them cents again. Any
 * net the decimals can hold has a withholding, and no intermediate rounding
 * can move a cent. */
static dec_t withholding_of(dec_t net)
{
    static const char ELEVEN_UNITS[] = "0.000000000000000011", DIVISOR[] = "0.4",
                      CENT_UNITS[] = "10000000000000000";
    dec_t eleven, divisor, cent_units, cents, out = dec_zero();
    if (dec_cmp(net, dec_zero()) <= 0 ||
        dec_parse(ELEVEN_UNITS, sizeof ELEVEN_UNITS - 1, &eleven) != DEC_OK ||
        dec_parse(DIVISOR, sizeof DIVISOR - 1, &divisor) != DEC_OK ||
        dec_parse(CENT_UNITS, sizeof CENT_UNITS - 1, &cent_units) != DEC_OK ||
        dec_mul_div(net, eleven, divisor, &cents) != DEC_OK ||
        dec_mul(cents, cent_units, &out) != DEC_OK)
        return out; /* net <= 0; the constants parse and the results shrink */
    return out;
}

/* [Jan 1 of year, Jan 1 of year + 1) in ms, UTC; false only if the clock
 * module refused a year the query check let through. */
static bool year_range(int year, int64_t *from, int64_t *to)
{
    char text[32];
    snprintf(text, sizeof text, "%04d-01-01T00:00:00Z", year);
    if (clock_parse_rfc3339(text, from) != 0)
        return false;
    snprintf(text, sizeof text, "%04d-01-01T00:00:00Z", year + 1);
    return clock_parse_rfc3339(text, to) == 0;
}

/* 409 unless the account uses AUSTRIA with this tax year. */
static bool austrian_year_matches(request_t *req, const store_inv_account_t *account, int year)
{
    if (strcmp(account->method, domain_method_name(DOMAIN_METHOD_AUSTRIA)) != 0) {
        reply_error(req, 409, "Account '%s' does not use the Austria method", account->id);
        return false;
    }
    if (account->austria_tax_year != year) {
        reply_error(req, 409, "Tax year %d does not match the account's Austrian tax year %lld",
                    year, (long long)account->austria_tax_year);
        return false;
    }
    return true;
}

static json_t *withholding_json(const store_inv_account_t *account, int year,
                                withholding_ctx_t *c, dec_t net)
{
    return json_pack("{s:s, s:i, s:o, s:o, s:o, s:s, s:o, s:O}", "account_id", account->id,
                     "tax_year", year, "gains", dec_value_json(c->gains), "losses",
                     dec_value_json(c->losses), "net", dec_value_json(net), "withholding_rate",
                     WITHHOLDING_RATE, "withholding", dec_value_json(withholding_of(net)),
                     "disposals", c->disposals);
}

void api_withholding_austria(request_t *req)
{
    bool malformed = false;
    int year = 0;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    bool bad_year = false;
    const char *year_text = request_query(req, "tax_year", &bad_year);
    if (!bad_year && !malformed)
        api_query_year(year_text, "tax_year", YEAR_MIN, YEAR_MAX, issues, &year);
    if (!api_query_ok(req, malformed || bad_year, issues))
        return;
    store_conn_t *db = api_db(req);
    store_inv_account_t account;
    if (db == NULL || !api_inventory_find_account(req, db, account_id, &account) ||
        !austrian_year_matches(req, &account, year) || !api_inventory_refresh(req, db, &account))
        return;
    int64_t from, to;
    withholding_ctx_t c = {.disposals = json_array(), .gains = dec_zero(),
                           .losses = dec_zero(), .arithmetic = DEC_OK};
    store_status_t st = STORE_OK;
    if (c.disposals != NULL && year_range(year, &from, &to))
        st = store_inv_reliefs_between(db, account.uuid, from, to, collect_disposal, &c);
    else
        c.bad = true; /* out of memory (the year is in range: it has an RFC 3339 form) */
    if (st == STORE_OK && !c.bad && c.arithmetic == DEC_OK)
        flush_group(&c);
    dec_t net = dec_zero();
    if (st == STORE_OK && !c.bad && c.arithmetic == DEC_OK)
        arith(&c, dec_sub(c.gains, c.losses, &net), c.group.tx_id);
    if (st == STORE_OK && c.arithmetic != DEC_OK) {
        api_inventory_reply_range(req, c.failed_tx);
    } else if (st != STORE_OK || c.bad) {
        api_fail(req, st, "withholding: a stored relief does not parse, or memory ran out");
    } else {
        reply_built(req, 200, withholding_json(&account, year, &c, net));
    }
    json_decref(c.disposals);
}
