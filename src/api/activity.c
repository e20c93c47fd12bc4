/* activity: an account's transactions and its income (scope `transactions`:
 * both read the transactions as the caller sent them, not the computed
 * inventory; docs/decisions.md "Gains (issue 16)").
 *
 *   GET /v1/accounts/{accountId}/transactions[?start_date=&end_date=&type=]
 *       paged (limit, cursor) by datetime then id; each item is the record
 *       GET /v1/transactions/external-id/{id} answers.
 *   GET /v1/accounts/{accountId}/income?start_date=&end_date=
 *       the received lines of income transactions, by type (the subtype,
 *       "income" without one) and asset: quantity, usd_value (the lines with
 *       a USD rate, each amount x rate rounded half-up to the cent, as the
 *       inventory rounds a lot's cost), and apart the quantity and count of
 *       lines without a USD value. A line in USD is its own USD value.
 *
 * The cursor of the list is "<datetime ms>:<id>" (base64url, opaque). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/arena.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/grow.h"
#include "core/jsonval.h"
#include "store/activity.h"
#include "store/inventory.h"

/* The account of the path; false after answering 404 or a failure. */
static bool path_account(request_t *req, store_conn_t **db, store_inv_account_t *account)
{
    const char *account_id = request_param(req, "accountId");
    *db = api_db(req);
    if (*db == NULL)
        return false;
    store_status_t st = store_inv_account(*db, req->claims.tenant_id, account_id, account);
    return api_found(req, st, "Account", account_id);
}

/* ---- GET /v1/accounts/{accountId}/transactions ---------------------------- */

typedef struct tx_args {
    const char *account_uuid;
    const char *type;
    int64_t from_ms, to_ms;
} tx_args_t;

typedef struct tx_ctx {
    api_page_t *page;
    int64_t last_datetime;
    const char *last_id; /* arena copy */
} tx_ctx_t;

static json_t *record_json(const store_activity_tx_t *tx)
{
    json_t *doc = json_loads(tx->body, 0, NULL);
    if (doc == NULL)
        return NULL;
    json_object_set_new(doc, "uuid", json_string(tx->uuid));
    json_object_set_new(doc, "created_at", jsonval_time(tx->created_at));
    json_object_set_new(doc, "updated_at", jsonval_time(tx->updated_at));
    return doc;
}

static int add_tx(const store_activity_tx_t *tx, void *arg)
{
    tx_ctx_t *c = arg;
    c->last_datetime = tx->datetime;
    c->last_id = arena_strndup(c->page->req->arena, tx->id, strlen(tx->id));
    return api_page_add(c->page, record_json(tx));
}

/* "<ms>:<id>" into its parts; false when it is not one. */
static bool parse_key(const char *key, int64_t *datetime, const char **id)
{
    char *end;
    long long ms = strtoll(key, &end, 10);
    if (end == key || *end != ':' || end[1] == '\0')
        return false;
    *datetime = ms;
    *id = end + 1;
    return true;
}

static store_status_t fetch_txs(store_conn_t *db, api_page_t *page, const void *arg)
{
    const tx_args_t *a = arg;
    int64_t after_datetime = 0;
    const char *after_id = NULL;
    if (page->after[0] != '\0' && !parse_key(page->after, &after_datetime, &after_id)) {
        page->bad_cursor = true;
        return STORE_OK;
    }
    tx_ctx_t c = {.page = page};
    store_status_t st =
        store_activity_tx_page(db, a->account_uuid, a->from_ms, a->to_ms, a->type,
                               after_datetime, after_id, page->limit, add_tx, &c, &page->more);
    if (c.last_id != NULL)
        page->last_key = arena_sprintf(page->req->arena, "%lld:%s", (long long)c.last_datetime,
                                       c.last_id);
    return st;
}

void api_account_transactions(request_t *req)
{
    bool malformed = false;
    json_t *issues = json_array();
    tx_args_t a = {0};
    api_query_period(req, false, issues, &malformed, &a.from_ms, &a.to_ms);
    bool bad = false;
    a.type = request_query(req, "type", &bad);
    if (!bad && a.type != NULL && domain_name_index(DOMAIN_TX_TYPE_NAMES, a.type) < 0) {
        json_t *path = json_pack("[s]", "type");
        json_array_append_new(issues, v_issue("invalid_value", path,
                                              "Invalid option: expected a transaction type",
                                              NULL));
        json_decref(path);
    }
    if (!api_query_ok(req, malformed || bad, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!path_account(req, &db, &account))
        return;
    a.account_uuid = account.uuid;
    api_list(req, "id", fetch_txs, &a);
}

/* ---- GET /v1/accounts/{accountId}/income ---------------------------------- */

typedef struct income_group {
    char type[DOMAIN_ID_SIZE];
    char asset[DOMAIN_ASSET_CODE_SIZE];
    dec_t quantity, usd_value, quantity_without_usd_value;
    long long lines, lines_without_usd_value;
} income_group_t;

typedef struct income_ctx {
    income_group_t *groups;
    size_t count, cap;
    dec_t total;
    bool bad;     /* a stored value does not parse, or memory ran out */
    bool range;   /* a sum left the decimals' range */
} income_ctx_t;

static income_group_t *group_of(income_ctx_t *c, const char *type, const char *asset)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->groups[i].type, type) == 0 && strcmp(c->groups[i].asset, asset) == 0)
            return &c->groups[i];
    if (strlen(type) >= DOMAIN_ID_SIZE || strlen(asset) >= DOMAIN_ASSET_CODE_SIZE)
        return NULL;
    income_group_t *grown = grow_array(c->groups, &c->cap, c->count + 1, sizeof *grown, 8);
    if (grown == NULL)
        return NULL;
    c->groups = grown;
    income_group_t *g = &c->groups[c->count++];
    *g = (income_group_t){.quantity = dec_zero(), .usd_value = dec_zero(),
                          .quantity_without_usd_value = dec_zero()};
    snprintf(g->type, sizeof g->type, "%s", type);
    snprintf(g->asset, sizeof g->asset, "%s", asset);
    return g;
}

static int add_income(const store_income_line_t *line, void *arg)
{
    income_ctx_t *c = arg;
    const char *type = line->subtype != NULL ? line->subtype : "income";
    income_group_t *g = group_of(c, type, line->asset);
    dec_t amount, rate, value;
    if (g == NULL || dec_parse(line->amount, strlen(line->amount), &amount) != DEC_OK)
        return c->bad = true;
    g->lines++;
    bool usd = strcmp(line->asset, DOMAIN_REPORTING_CURRENCY) == 0;
    if (!usd && line->usd_rate == NULL) {
        g->lines_without_usd_value++;
        c->range = dec_add(g->quantity_without_usd_value, amount,
                           &g->quantity_without_usd_value) != DEC_OK;
        return c->range;
    }
    if (usd)
        value = amount;
    else if (dec_parse(line->usd_rate, strlen(line->usd_rate), &rate) != DEC_OK)
        return c->bad = true;
    else if (dec_mul(amount, rate, &value) != DEC_OK)
        return c->range = true;
    /* each line's value is money made once: rounded to the cent there */
    if (dec_round_cents(value, &value) != DEC_OK ||
        dec_add(g->quantity, amount, &g->quantity) != DEC_OK ||
        dec_add(g->usd_value, value, &g->usd_value) != DEC_OK ||
        dec_add(c->total, value, &c->total) != DEC_OK)
        return c->range = true;
    return 0;
}

static int by_type_then_asset(const void *a, const void *b)
{
    const income_group_t *x = a, *y = b;
    int t = strcmp(x->type, y->type);
    return t != 0 ? t : strcmp(x->asset, y->asset);
}

static json_t *dec_json(dec_t d)
{
    char out[DEC_TEXT_MAX];
    dec_format(d, out);
    return json_string(out);
}

static json_t *income_json(const store_inv_account_t *account, income_ctx_t *c)
{
    if (c->count > 1) /* groups is NULL while empty, and qsort must not see NULL */
        qsort(c->groups, c->count, sizeof *c->groups, by_type_then_asset);
    json_t *items = json_array();
    for (size_t i = 0; items != NULL && i < c->count; i++) {
        const income_group_t *g = &c->groups[i];
        json_t *item = json_pack(
            "{s:s, s:s, s:o, s:o, s:o, s:I, s:I}", "type", g->type, "asset_code", g->asset,
            "quantity", dec_json(g->quantity), "usd_value", dec_json(g->usd_value),
            "quantity_without_usd_value", dec_json(g->quantity_without_usd_value), "lines",
            (json_int_t)g->lines, "lines_without_usd_value", (json_int_t)g->lines_without_usd_value);
        if (item == NULL || json_array_append_new(items, item) != 0) {
            json_decref(items);
            return NULL;
        }
    }
    return json_pack("{s:s, s:o, s:o}", "account_id", account->id, "income", items,
                     "total_usd_value", dec_json(c->total));
}

void api_account_income(request_t *req)
{
    bool malformed = false;
    int64_t from = 0, to = 0;
    json_t *issues = json_array();
    api_query_period(req, true, issues, &malformed, &from, &to);
    if (!api_query_ok(req, malformed, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!path_account(req, &db, &account))
        return;
    income_ctx_t c = {.total = dec_zero()};
    store_status_t st = store_activity_income(db, account.uuid, from, to, add_income, &c);
    json_t *data = NULL;
    if (st == STORE_OK && c.range)
        reply_error(req, 409, "Income cannot be computed: a total left the supported range");
    else if (st != STORE_OK || c.bad)
        api_fail(req, st, "income: a stored line does not parse, or memory ran out");
    else if ((data = income_json(&account, &c)) == NULL)
        api_internal_error(req, "out of memory building the income");
    else
        reply_data(req, 200, data);
    free(c.groups);
}
