/* gains: an account's realized gains, read through three routes (scope
 * `inventory`, docs/decisions.md "Gains (issue 16)"):
 *
 *   GET /v1/gains?account_id=&start_date=&end_date=[&asset_code=]   the rows, paged
 *   GET /v1/gains/breakdown?account_id=&tax_year=                  by term and 8949 box
 *   GET /v1/gains/summary?account_id=&start_date=&end_date=        the period's totals
 *
 * A row is one relieved piece of a disposal, as the inventory engine stored
 * it (store/gains.h); every rule of what it answers (covered, box, warnings,
 * gain_loss) is gains_classify's (gains/gains.h), so the API, the gains
 * report and the 1099-DA agree. Dates are inclusive UTC days. Freshness and
 * the 409 as in api/inventory.c: inventory_refresh runs before the read.
 *
 * Paging. The cursor is the last row's relief seq (the engine's processing
 * order, datetime order), so a page is a keyset read of the primary key and
 * the last page of 100,000 disposals costs what the first does. The seq
 * changes when a recalculation rewrites the ledger from a datetime on: a
 * cursor taken before a backdated write may then skip or repeat rows of the
 * rewritten tail, like any keyset over data that changed.
 *
 * Order of checks: 400 (query), 404 (account), 409 (not computable), then
 * the read; a unparsable stored row is a 500. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/arena.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/jsonval.h"
#include "api/inventory_account.h"
#include "gains/gains.h"
#include "store/gains.h"
#include "store/inventory.h"

/* ---- JSON of a row --------------------------------------------------- */

static json_t *dec_json(dec_t d)
{
    char out[DEC_TEXT_MAX];
    dec_format(d, out);
    return json_string(out);
}

static json_t *opt_dec(bool has, dec_t d)
{
    return has ? dec_json(d) : json_null();
}

static json_t *warnings_json(const gains_row_t *r)
{
    json_t *out = json_array();
    for (unsigned bit = 1; out != NULL && bit < (1u << GAINS_WARNING_COUNT); bit <<= 1) {
        if ((r->warnings & bit) == 0)
            continue;
        char message[384];
        gains_warning_message((gains_warning_t)bit, r, message, sizeof message);
        json_t *w = json_pack("{s:s, s:s}", "code", gains_warning_code((gains_warning_t)bit),
                              "message", message);
        if (w == NULL || json_array_append_new(out, w) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *row_json(const gains_row_t *r)
{
    const char *term = gains_term_name(r->term);
    char box[2] = {r->form_8949_box, '\0'};
    return json_pack(
        "{s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:b, s:o, s:o}",
        "transaction_id", r->transaction_id, "lot_transaction_id",
        api_string_or_null(r->lot_transaction_id), "asset_code", r->asset_code, "asset_type",
        api_string_or_null(r->asset_type), "quantity", dec_json(r->quantity), "acquired_at",
        r->has_acquired_at ? jsonval_time(r->acquired_at) : json_null(), "disposed_at",
        jsonval_time(r->disposed_at), "proceeds", opt_dec(r->has_proceeds, r->proceeds),
        "transaction_costs", opt_dec(r->has_transaction_costs, r->transaction_costs),
        "cost_basis", opt_dec(r->has_cost_basis, r->cost_basis), "gain_loss",
        opt_dec(r->has_gain_loss, r->gain_loss), "term",
        term != NULL ? json_string(term) : json_null(), "covered", r->covered,
        "form_8949_box", box[0] != '\0' ? json_string(box) : json_null(),
        "customer_provided_acquisition", r->customer_provided_acquisition, "method",
        api_string_or_null(r->method), "warnings", warnings_json(r));
}

/* ---- GET /v1/gains -------------------------------------------------------- */

typedef struct list_args {
    const char *account_uuid;
    const char *asset_code; /* NULL: every asset */
    int64_t from_ms, to_ms;
} list_args_t;

typedef struct list_ctx {
    api_page_t *page;
    int64_t last_seq;
    gains_status_t status;
    char failed_tx[STORE_ID_MAX];
} list_ctx_t;

static int add_row(const store_gain_t *row, void *arg)
{
    list_ctx_t *c = arg;
    gains_row_t r;
    c->status = gains_classify(row, &r);
    if (c->status != GAINS_OK) {
        snprintf(c->failed_tx, sizeof c->failed_tx, "%s", row->transaction_id);
        return 1;
    }
    c->last_seq = row->seq;
    return api_page_add(c->page, row_json(&r));
}

/* The cursor: a seq the previous page ended on, as decimal text. */
static bool parse_seq(const char *text, int64_t *seq)
{
    char *end;
    long long n = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || n < 0)
        return false;
    *seq = n;
    return true;
}

static store_status_t fetch_gains(store_conn_t *db, api_page_t *page, const void *arg)
{
    const list_args_t *a = arg;
    int64_t after = STORE_GAINS_START;
    if (page->after[0] != '\0' && !parse_seq(page->after, &after)) {
        page->bad_cursor = true;
        return STORE_OK;
    }
    list_ctx_t c = {.page = page, .last_seq = -1};
    store_status_t st = store_gains_page(db, a->account_uuid, a->from_ms, a->to_ms, a->asset_code,
                                         after, page->limit, add_row, &c, &page->more);
    if (st == STORE_OK && c.status != GAINS_OK) {
        /* api_list answers a failed item with 500; the summary routes
         * answer a range failure as 409 (it cannot happen within the input
         * limits: docs/decisions.md, Amounts and the range of totals) */
        request_log_failure(page->req, c.status == GAINS_RANGE
                                           ? "gains: a gain left the decimals' range"
                                           : "gains: a stored relief does not parse");
        page->failed = true;
    }
    if (c.last_seq >= 0)
        page->last_key = arena_sprintf(page->req->arena, "%lld", (long long)c.last_seq);
    return st;
}

void api_gains_list(request_t *req)
{
    bool malformed = false;
    json_t *issues = json_array();
    list_args_t a = {0};
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    api_query_period(req, true, issues, &malformed, &a.from_ms, &a.to_ms);
    bool bad = false;
    a.asset_code = request_query(req, "asset_code", &bad);
    if (!api_query_ok(req, malformed || bad, issues))
        return;
    if (a.asset_code != NULL && a.asset_code[0] == '\0')
        a.asset_code = NULL;
    store_conn_t *db;
    store_inv_account_t account;
    if (!api_inventory_open_account(req, account_id, &db, &account))
        return;
    a.account_uuid = account.uuid;
    api_list(req, "transaction_id", fetch_gains, &a);
}

/* ---- totals ------------------------------------------------------------ */

typedef struct totals_ctx {
    gains_breakdown_t b;
    gains_status_t status;
    char failed_tx[STORE_ID_MAX];
} totals_ctx_t;

static int add_to_totals(const store_gain_t *row, void *arg)
{
    totals_ctx_t *c = arg;
    gains_row_t r;
    c->status = gains_classify(row, &r);
    if (c->status == GAINS_OK)
        c->status = gains_breakdown_add(&c->b, &r);
    if (c->status == GAINS_OK)
        return 0;
    snprintf(c->failed_tx, sizeof c->failed_tx, "%s", row->transaction_id);
    return 1;
}

/* Sums the account's rows of [from, to); false after answering a failure. */
static bool sum_period(request_t *req, store_conn_t *db, const char *account_uuid,
                       int64_t from_ms, int64_t to_ms, totals_ctx_t *c)
{
    gains_breakdown_init(&c->b);
    c->status = GAINS_OK;
    store_status_t st = store_gains_each(db, account_uuid, from_ms, to_ms, NULL, add_to_totals, c);
    if (st != STORE_OK) {
        reply_store_failure(req, st);
        return false;
    }
    if (c->status == GAINS_RANGE) {
        api_inventory_reply_range(req, c->failed_tx);
        return false;
    }
    if (c->status != GAINS_OK) {
        api_internal_error(req, "gains totals: a stored relief does not parse");
        return false;
    }
    return true;
}

static json_t *line_json(const gains_totals_t *t)
{
    return json_pack("{s:o, s:o, s:o}", "proceeds", dec_json(t->proceeds), "cost_basis",
                     dec_json(t->cost_basis), "gain_loss", dec_json(t->gain_loss));
}

/* The counts every totals answer carries, added to out. */
static json_t *with_counts(json_t *out, const gains_breakdown_t *b)
{
    if (out == NULL)
        return NULL;
    json_object_set_new(out, "rows_without_cost_basis",
                        json_integer((json_int_t)b->rows_without_cost_basis));
    json_object_set_new(out, "rows_without_proceeds",
                        json_integer((json_int_t)b->rows_without_proceeds));
    json_object_set_new(out, "rows_without_term", json_integer((json_int_t)b->rows_without_term));
    return out;
}

static json_t *boxes_json(const gains_breakdown_t *b)
{
    json_t *out = json_object();
    for (int i = 0; out != NULL && i < GAINS_BOX_COUNT; i++) {
        if (b->box_seen[i] == 0)
            continue;
        char box[2] = {(char)('A' + i), '\0'};
        json_object_set_new(out, box, line_json(&b->box[i]));
    }
    return out;
}

static void reply_built(request_t *req, json_t *data)
{
    if (data == NULL)
        api_internal_error(req, "out of memory building a gains answer");
    else
        reply_data(req, 200, data);
}

/* ---- GET /v1/gains/breakdown ------------------------------------------ */

void api_gains_breakdown(request_t *req)
{
    bool malformed = false, bad_year = false;
    int year = 0;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    const char *year_text = request_query(req, "tax_year", &bad_year);
    int next_year = gains_year_of(api_now_ms(req)) + 1;
    if (!bad_year && !malformed)
        api_query_year(year_text, "tax_year", DOMAIN_QUERY_TAX_YEAR_MIN, next_year, issues,
                       &year);
    if (!api_query_ok(req, malformed || bad_year, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!api_inventory_open_account(req, account_id, &db, &account))
        return;
    int64_t from, to;
    gains_year_range(year, &from, &to);
    totals_ctx_t c;
    if (!sum_period(req, db, account.uuid, from, to, &c))
        return;
    reply_built(req, with_counts(json_pack("{s:s, s:i, s:o, s:o, s:o, s:o}", "account_id",
                                           account.id, "tax_year", year, "short_term",
                                           line_json(&c.b.short_term), "long_term",
                                           line_json(&c.b.long_term), "total",
                                           line_json(&c.b.total), "by_form_8949_box",
                                           boxes_json(&c.b)),
                                 &c.b));
}

/* ---- GET /v1/gains/summary ------------------------------------------------ */

void api_gains_summary(request_t *req)
{
    bool malformed = false;
    int64_t from = 0, to = 0;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    api_query_period(req, true, issues, &malformed, &from, &to);
    if (!api_query_ok(req, malformed, issues))
        return;
    store_conn_t *db;
    store_inv_account_t account;
    if (!api_inventory_open_account(req, account_id, &db, &account))
        return;
    totals_ctx_t c;
    if (!sum_period(req, db, account.uuid, from, to, &c))
        return;
    bool bad = false;
    const char *start = request_query(req, "start_date", &bad);
    const char *end = request_query(req, "end_date", &bad);
    reply_built(req, with_counts(json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "account_id",
                                           account.id, "start_date", start, "end_date", end,
                                           "proceeds", dec_json(c.b.total.proceeds),
                                           "cost_basis", dec_json(c.b.total.cost_basis),
                                           "gain_loss", dec_json(c.b.total.gain_loss)),
                                 &c.b));
}
