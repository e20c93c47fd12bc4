/* transfer_lots: the customer-provided lots of a deposit (scope `inventory`):
 *
 *   POST   /v1/transfer-lots/transactions/{transactionId}   set, per asset named (200, the lots)
 *   DELETE /v1/transfer-lots/transactions/{transactionId}   clear them all (204)
 *   GET    /v1/transfer-lots/transactions/{transactionId}   on a deposit (a withdraw: inventory.c)
 *
 * A deposit brings units whose basis taxd cannot know; the customer may
 * tell it (quantity, cost basis in USD, original acquisition datetime), and
 * the inventory then relieves those lots like any other (origin
 * 'provided'). The body replaces the lots of each asset it names and keeps
 * the others. Rules, each a 400 naming the field: a well-formed lot
 * (asset code, quantity > 0, cost_basis >= 0, decimals within the amounts'
 * limit, an RFC 3339 acquired_at), at most 100 lots; then, against the
 * stored deposit inside the store's write transaction: the transaction is a
 * deposit, it received each asset named (USD, the reporting currency, has
 * no lots), the lots of an asset add up exactly to what it received of it,
 * and no lot is dated after it.
 *
 * The GET on a deposit reads the stored lots; it does not need the
 * computed inventory, so it does not refresh it. 203 with a warning
 * missing_cost_basis per received asset (other than USD) without lots. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/jsonval.h"
#include "store/provided_lots.h"

#define LOTS_MAX 100

static const v_field LOT_FIELDS[] = {
    {"asset_code", V_STRING, .required = true, .min_len = 1},
    {"quantity", V_DECIMAL, .required = true},
    {"cost_basis", V_DECIMAL, .required = true},
    {"acquired_at", V_DATETIME, .required = true},
    {.name = NULL}};
static const v_schema LOT_SCHEMA = {LOT_FIELDS};
static const v_field LOT_ITEM = {"lot", V_OBJECT, .object = &LOT_SCHEMA};
static const v_field BODY_FIELDS[] = {
    {"lots", V_ARRAY, .required = true, .min_items = 1, .max_items = LOTS_MAX, .items = &LOT_ITEM},
    {.name = NULL}};
static const v_schema BODY_SCHEMA = {BODY_FIELDS};

#define RANGE_PROBLEM                                                                             \
    "outside the supported range (at most " DOMAIN_TEXT(DOMAIN_AMOUNT_INT_DIGITS)                 \
    " integer digits)"

static void add_issue(json_t *issues, size_t i, const char *field, const char *message)
{
    json_t *path = i == SIZE_MAX ? json_pack("[s]", "lots")
                                 : json_pack("[s,i,s]", "lots", (json_int_t)i, field);
    json_array_append_new(issues, v_issue("custom", path, message, NULL));
    json_decref(path);
}

static bool is_reporting_currency(const char *asset)
{
    return strcmp(asset, DOMAIN_REPORTING_CURRENCY) == 0;
}

/* ---- the body --------------------------------------------------------- */

/* A decimal of lot i: exact, within the amounts' limit, > 0 (quantity) or
 * >= 0 (cost_basis); its canonical text into out. */
static void check_decimal(json_t *issues, const json_t *lot, size_t i, const char *field,
                          bool positive, char out[DEC_TEXT_MAX])
{
    const char *text = json_string_value(json_object_get(lot, field));
    dec_t d;
    dec_status_t st = dec_parse(text, strlen(text), &d);
    bool in_range = st == DEC_OK ? dec_fits_int_digits(d, DOMAIN_AMOUNT_INT_DIGITS)
                                 : st != DEC_RANGE;
    const char *problem = !in_range         ? RANGE_PROBLEM
                          : st != DEC_OK    ? dec_status_message(st)
                          : dec_is_negative(d) ? "must not be negative"
                          : positive && dec_is_zero(d) ? "must be greater than zero"
                                                       : NULL;
    if (problem == NULL) {
        dec_format(d, out);
        return;
    }
    char message[160];
    snprintf(message, sizeof message, "Invalid %s: %s", field, problem);
    add_issue(issues, i, field, message);
}

/* The lot at i of a validated body into *out; issues for what is wrong. */
static void lot_of(json_t *issues, const json_t *lot, size_t i, store_provided_lot_t *out)
{
    const char *code = json_string_value(json_object_get(lot, "asset_code"));
    if (!domain_asset_code_valid(code))
        add_issue(issues, i, "asset_code",
                  "Invalid asset code: 1 to " DOMAIN_TEXT(DOMAIN_ASSET_CODE_MAX)
                  " of A-Z a-z 0-9 . _ -");
    else if (is_reporting_currency(code))
        add_issue(issues, i, "asset_code",
                  DOMAIN_REPORTING_CURRENCY " is the reporting currency: it has no lots");
    else
        buf_copy(out->asset, sizeof out->asset, code);
    check_decimal(issues, lot, i, "quantity", true, out->quantity);
    check_decimal(issues, lot, i, "cost_basis", false, out->cost_basis);
    const char *at = json_string_value(json_object_get(lot, "acquired_at"));
    if (clock_parse_rfc3339(at, &out->acquired_at) != 0)
        add_issue(issues, i, "acquired_at",
                  "Invalid datetime: outside 0001-01-01 to 9999-12-31 UTC");
}

/* ---- the rules against the stored deposit ------------------------------ */

typedef struct set_ctx {
    const store_provided_lot_t *lots;
    size_t n;
    json_t *issues;
    bool not_deposit;
    char type[DOMAIN_TX_TYPE_SIZE];
    bool bad; /* a stored amount does not parse */
} set_ctx_t;

/* Sum of the amounts of `asset` in the deposit's received lines. */
static bool received_of(const store_deposit_t *dep, const char *asset, dec_t *sum)
{
    *sum = dec_zero();
    for (size_t i = 0; i < dep->received_count; i++) {
        dec_t d;
        if (strcmp(dep->received[i].asset, asset) != 0)
            continue;
        if (dec_parse(dep->received[i].amount, strlen(dep->received[i].amount), &d) != DEC_OK ||
            dec_add(*sum, d, sum) != DEC_OK)
            return false;
    }
    return true;
}

/* The lots of the asset of lots[first] add up to what the deposit received. */
static void check_asset_total(set_ctx_t *c, const store_deposit_t *dep, size_t first)
{
    const char *asset = c->lots[first].asset;
    dec_t received, total = dec_zero(), q;
    if (!received_of(dep, asset, &received)) {
        c->bad = true;
        return;
    }
    char message[DEC_TEXT_MAX * 2 + 160], have[DEC_TEXT_MAX], want[DEC_TEXT_MAX];
    if (dec_is_zero(received)) {
        snprintf(message, sizeof message, "The deposit did not receive %s", asset);
        add_issue(c->issues, first, "asset_code", message);
        return;
    }
    for (size_t i = first; i < c->n; i++)
        if (strcmp(c->lots[i].asset, asset) == 0 &&
            (dec_parse(c->lots[i].quantity, strlen(c->lots[i].quantity), &q) != DEC_OK ||
             dec_add(total, q, &total) != DEC_OK)) {
            c->bad = true; /* canonical decimals within 20 integer digits, at most 100 */
            return;
        }
    if (dec_cmp(total, received) == 0)
        return;
    dec_format(total, have);
    dec_format(received, want);
    snprintf(message, sizeof message,
             "The %s lots add up to %s, but the deposit received %s %s", asset, have, want, asset);
    add_issue(c->issues, first, "quantity", message);
}

/* store_deposit_check_fn: runs inside the store's write transaction. */
static bool check_deposit(const store_deposit_t *dep, void *arg)
{
    set_ctx_t *c = arg;
    if (strcmp(dep->type, domain_tx_type_name(DOMAIN_TX_DEPOSIT)) != 0) {
        c->not_deposit = true;
        buf_copy(c->type, sizeof c->type, dep->type);
        return false;
    }
    for (size_t i = 0; i < c->n && !c->bad; i++) {
        bool first = true;
        for (size_t j = 0; j < i; j++)
            first = first && strcmp(c->lots[j].asset, c->lots[i].asset) != 0;
        if (first)
            check_asset_total(c, dep, i);
        if (c->lots[i].acquired_at > dep->datetime_ms) {
            char when[CLOCK_RFC3339_LEN], message[96];
            clock_format_rfc3339(dep->datetime_ms, when);
            snprintf(message, sizeof message, "After the deposit's datetime (%s)", when);
            add_issue(c->issues, i, "acquired_at", message);
        }
    }
    return !c->bad && json_array_size(c->issues) == 0;
}

/* "a trade", "an income": the article for the 400 message. */
static const char *article(const char *type)
{
    return type[0] != '\0' && strchr("aeiou", type[0]) != NULL ? "an" : "a";
}

/* ---- GET on a deposit (also the POST's answer) ------------------------- */

typedef struct get_ctx {
    json_t *lots;
    json_t *received; /* asset codes the deposit received (a set), USD left out */
    char account_id[STORE_ID_MAX];
    bool bad;
} get_ctx_t;

static void collect_deposit(const store_deposit_t *dep, void *arg)
{
    get_ctx_t *c = arg;
    buf_copy(c->account_id, sizeof c->account_id, dep->account_id);
    for (size_t i = 0; i < dep->received_count; i++)
        if (!is_reporting_currency(dep->received[i].asset))
            json_object_set_new(c->received, dep->received[i].asset, json_true());
}

static int collect_lot(const store_provided_lot_t *lot, void *arg)
{
    get_ctx_t *c = arg;
    json_t *item = json_pack("{s:s, s:o, s:s, s:s, s:b}", "asset_code", lot->asset,
                             "acquired_at", jsonval_time(lot->acquired_at), "quantity",
                             lot->quantity, "cost_basis", lot->cost_basis, "customer_provided",
                             1);
    json_object_del(c->received, lot->asset); /* this asset has lots: no warning */
    if (item == NULL || json_array_append_new(c->lots, item) != 0)
        return c->bad = true;
    return 0;
}

/* One missing_cost_basis warning per received asset without lots. */
static json_t *warnings_of(const get_ctx_t *c)
{
    json_t *warnings = json_array();
    const char *asset;
    json_t *unused;
    json_object_foreach(c->received, asset, unused) {
        char message[160];
        snprintf(message, sizeof message,
                 "The deposit received %s without cost basis: provide its lots to give it one",
                 asset);
        json_array_append_new(warnings, json_pack("{s:s, s:s}", "code", "missing_cost_basis",
                                                  "message", message));
    }
    return warnings;
}

/* Answers the deposit's lots: 200, or 203 with warnings when with_warnings
 * and some received asset has none. */
static void reply_deposit_lots(request_t *req, store_conn_t *db, const char *tx_id,
                               bool with_warnings)
{
    get_ctx_t c = {.lots = json_array(), .received = json_object()};
    store_status_t st = STORE_OK;
    if (c.lots != NULL && c.received != NULL)
        st = store_provided_lots_get(db, req->claims.tenant_id, tx_id, collect_deposit,
                                     collect_lot, &c);
    else
        c.bad = true;
    json_t *warnings = st == STORE_OK && !c.bad ? warnings_of(&c) : NULL;
    json_decref(c.received);
    json_t *body = warnings != NULL
                       ? json_pack("{s:{s:s, s:s, s:o}}", "data", "transaction_id", tx_id,
                                   "account_id", c.account_id, "lots", c.lots)
                       : NULL;
    bool warned = with_warnings && json_array_size(warnings) > 0;
    if (body != NULL && warned)
        json_object_set(body, "warnings", warnings);
    json_decref(warnings);
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Transaction with id '%s' not found", tx_id);
    else if (body == NULL)
        api_fail(req, st, "transfer lots of a deposit: memory ran out");
    else
        reply_json(req, warned ? 203 : 200, body); /* spec: 203 when lots come with warnings */
    if (body == NULL && warnings == NULL)
        json_decref(c.lots);
}

void api_transfer_lots_deposit(request_t *req, store_conn_t *db, const char *tx_id)
{
    reply_deposit_lots(req, db, tx_id, true);
}

/* ---- POST and DELETE --------------------------------------------------- */

static void reply_set_outcome(request_t *req, store_status_t st, const set_ctx_t *c,
                              const char *tx_id)
{
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Transaction with id '%s' not found", tx_id);
    else if (st == STORE_CONFLICT && c->not_deposit)
        reply_error(req, 400, "Transaction '%s' is %s %s, not a transfer in", tx_id,
                    article(c->type), c->type);
    else if (st == STORE_CONFLICT && !c->bad)
        reply_invalid(req, "Invalid transfer lots", json_incref(c->issues));
    else if (st == STORE_CONFLICT)
        api_internal_error(req, "transfer lots: a stored amount does not parse");
    else
        reply_store_failure(req, st);
}

void api_transfer_lots_set(request_t *req)
{
    const char *tx_id = request_param(req, "transactionId");
    json_t *body = api_read_body(req, &BODY_SCHEMA, "transfer lots");
    if (body == NULL)
        return;
    const json_t *items = json_object_get(body, "lots");
    size_t n = json_array_size(items);
    store_provided_lot_t lots[LOTS_MAX];
    memset(lots, 0, sizeof lots);
    json_t *issues = json_array();
    for (size_t i = 0; i < n; i++)
        lot_of(issues, json_array_get(items, i), i, &lots[i]);
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid transfer lots", issues);
        return;
    }
    store_conn_t *db = api_db(req);
    if (db == NULL) {
        json_decref(issues);
        return;
    }
    set_ctx_t c = {.lots = lots, .n = n, .issues = issues};
    store_status_t st =
        store_provided_lots_set(db, req->claims.tenant_id, tx_id, lots, n, check_deposit, &c);
    if (st == STORE_OK)
        reply_deposit_lots(req, db, tx_id, false);
    else
        reply_set_outcome(req, st, &c, tx_id);
    json_decref(issues);
}

/* Clearing needs only a deposit: the check refuses anything else. */
static bool check_is_deposit(const store_deposit_t *dep, void *arg)
{
    set_ctx_t *c = arg;
    if (strcmp(dep->type, domain_tx_type_name(DOMAIN_TX_DEPOSIT)) == 0)
        return true;
    c->not_deposit = true;
    buf_copy(c->type, sizeof c->type, dep->type);
    return false;
}

void api_transfer_lots_clear(request_t *req)
{
    const char *tx_id = request_param(req, "transactionId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    set_ctx_t c = {0};
    store_status_t st =
        store_provided_lots_set(db, req->claims.tenant_id, tx_id, NULL, 0, check_is_deposit, &c);
    if (st == STORE_OK)
        reply_empty(req, 204);
    else
        reply_set_outcome(req, st, &c, tx_id);
}
