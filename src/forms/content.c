/* forms/content: see content.h.
 *
 * Design. The accumulator keeps one row per (asset, bucket), kept in asset
 * order as rows arrive, so rendering is a walk with no sorting and the
 * output order never depends on the order reliefs were fed. Buckets: short
 * and long term (pieces with both a cost basis and proceeds), pieces
 * without cost basis (transfers in with unknown cost, shortfalls) and pieces
 * with a basis but no proceeds (disposed of with no USD value known): the
 * last two cannot have a gain computed, so they are listed apart rather than
 * counted as zero, which would misstate the gain. Sums are exact (dec_add);
 * the first arithmetic failure is kept and reported by every later add. */
#include "forms/content.h"
#include "core/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUCKET_SHORT, BUCKET_LONG, BUCKET_NO_BASIS, BUCKET_NO_PROCEEDS, BUCKET_COUNT };

typedef struct gl_row {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    int bucket;
    dec_t quantity, proceeds, cost;
} gl_row_t;

typedef struct tx_total {
    int64_t count;
    int64_t unvalued; /* transactions of the type without a known USD value */
    dec_t usd;
} tx_total_t;


struct forms_content {
    forms_type_t type;
    int year;
    int64_t from_ms, to_ms;
    gl_row_t *rows;
    size_t row_count, row_cap;
    tx_total_t by_type[DOMAIN_TX_TYPE_COUNT];
    dec_status_t failure;
};

static const char *const TYPE_NAMES[FORMS_TYPE_COUNT] = {
    "1099_DA", "1099_B", "1099_DIV", "1099_INT", "1099_K", "1099_MISC",
    "1099_NEC", "1099_R", "1042_S", "5498", "DAC7", "RMD_STATEMENT",
    "GAIN_LOSS_SUMMARY", "GAIN_LOSS_SUMMARY_PDF", "TRANSACTION_SUMMARY",
    "TRANSACTION_SUMMARY_PDF"};

const char *forms_type_name(forms_type_t type)
{
    return (unsigned)type < FORMS_TYPE_COUNT ? TYPE_NAMES[type] : NULL;
}

bool forms_type_parse(const char *name, forms_type_t *out)
{
    for (int i = 0; i < FORMS_TYPE_COUNT; i++)
        if (strcmp(TYPE_NAMES[i], name) == 0) {
            *out = (forms_type_t)i;
            return true;
        }
    return false;
}

const char *forms_type_list(void)
{
    return "1099_DA, 1099_B, 1099_DIV, 1099_INT, 1099_K, 1099_MISC, 1099_NEC, 1099_R, "
           "1042_S, 5498, DAC7, RMD_STATEMENT, GAIN_LOSS_SUMMARY, GAIN_LOSS_SUMMARY_PDF, "
           "TRANSACTION_SUMMARY, TRANSACTION_SUMMARY_PDF";
}

static int64_t year_start_ms(int year)
{
    struct tm tm = {.tm_year = year - 1900, .tm_mon = 0, .tm_mday = 1};
    return (int64_t)timegm(&tm) * 1000;
}

void forms_year_bounds(int year, int64_t *from_ms, int64_t *to_ms)
{
    *from_ms = year_start_ms(year);
    *to_ms = year_start_ms(year + 1);
}

forms_content_t *forms_content_new(forms_type_t type, int year)
{
    forms_content_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->type = type;
    c->year = year;
    forms_year_bounds(year, &c->from_ms, &c->to_ms);
    return c;
}

void forms_content_free(forms_content_t *content)
{
    if (content == NULL)
        return;
    free(content->rows);
    free(content);
}

/* ---- accumulating ------------------------------------------------------ */

static void add_into(forms_content_t *c, dec_t *sum, dec_t value)
{
    dec_status_t st = dec_add(*sum, value, sum);
    if (st != DEC_OK && c->failure == DEC_OK)
        c->failure = st;
}

static bool in_year(const forms_content_t *c, int64_t ms)
{
    return ms >= c->from_ms && ms < c->to_ms;
}

/* The row of (asset, bucket), inserted in asset order when new; NULL when
 * out of memory. */
static gl_row_t *row_of(forms_content_t *c, const char *asset, int bucket)
{
    size_t at = 0;
    for (; at < c->row_count; at++) {
        int cmp = strcmp(c->rows[at].asset, asset);
        if (cmp == 0 && c->rows[at].bucket == bucket)
            return &c->rows[at];
        if (cmp > 0)
            break;
    }
    gl_row_t *grown = grow_array(c->rows, &c->row_cap, c->row_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return NULL;
    c->rows = grown;
    memmove(&c->rows[at + 1], &c->rows[at], (c->row_count - at) * sizeof *c->rows);
    c->row_count++;
    gl_row_t *row = &c->rows[at];
    memset(row, 0, sizeof *row);
    snprintf(row->asset, sizeof row->asset, "%s", asset);
    row->bucket = bucket;
    return row;
}

static int bucket_of(const inv_relief_t *r)
{
    if (!r->has_basis)
        return BUCKET_NO_BASIS;
    if (!r->has_proceeds)
        return BUCKET_NO_PROCEEDS;
    return r->term == INV_LONG_TERM ? BUCKET_LONG : BUCKET_SHORT;
}

dec_status_t forms_content_add_relief(forms_content_t *c, const inv_relief_t *r)
{
    if (c->failure != DEC_OK || r->kind != INV_RELIEF_DISPOSAL || !in_year(c, r->datetime_ms))
        return c->failure;
    if (strlen(r->asset) >= DOMAIN_ASSET_CODE_SIZE)
        return c->failure = DEC_RANGE;
    gl_row_t *row = row_of(c, r->asset, bucket_of(r));
    if (row == NULL)
        return c->failure = DEC_RANGE;
    add_into(c, &row->quantity, r->quantity);
    if (r->has_proceeds)
        add_into(c, &row->proceeds, r->proceeds);
    if (r->has_basis)
        add_into(c, &row->cost, r->cost);
    return c->failure;
}

/* The sum of the lines' USD values; false when a line has none (or none
 * are given: a side with no lines has no value). */
static bool side_value(forms_content_t *c, const inv_line_t *lines, size_t n, dec_t *out)
{
    *out = dec_zero();
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        dec_t v;
        dec_status_t st;
        if (!inv_line_value(&lines[i], &v, &st))
            return false;
        if (st != DEC_OK && c->failure == DEC_OK)
            c->failure = st;
        add_into(c, out, v);
    }
    return true;
}

static bool tx_value(forms_content_t *c, const inv_tx_t *tx, dec_t *out)
{
    switch (tx->type) {
    case DOMAIN_TX_DEPOSIT:
    case DOMAIN_TX_INCOME:
        return side_value(c, tx->received, tx->received_count, out);
    case DOMAIN_TX_WITHDRAW:
    case DOMAIN_TX_EXPENSE:
        return side_value(c, tx->sent, tx->sent_count, out);
    case DOMAIN_TX_TRADE:
        return side_value(c, tx->sent, tx->sent_count, out) ||
               side_value(c, tx->received, tx->received_count, out);
    }
    return false;
}

dec_status_t forms_content_add_tx(forms_content_t *c, const inv_tx_t *tx)
{
    if (c->failure != DEC_OK || !in_year(c, tx->datetime_ms))
        return c->failure;
    if ((unsigned)tx->type >= DOMAIN_TX_TYPE_COUNT)
        return c->failure = DEC_RANGE;
    tx_total_t *t = &c->by_type[tx->type];
    t->count++;
    dec_t value;
    if (tx_value(c, tx, &value))
        add_into(c, &t->usd, value);
    else
        t->unvalued++;
    return c->failure;
}

/* ---- rendering --------------------------------------------------------- */

static json_t *dec_json(dec_t value)
{
    char text[DEC_TEXT_MAX];
    dec_format(value, text);
    return json_string(text);
}

/* gain_loss = proceeds - cost; the sums were checked, a difference of two
 * values below 10^20 can still leave the range, so it is checked too. */
static json_t *gain_json(dec_t proceeds, dec_t cost, bool *bad)
{
    dec_t gain;
    if (dec_sub(proceeds, cost, &gain) != DEC_OK) {
        *bad = true;
        return json_null();
    }
    return dec_json(gain);
}

static json_t *amounts_json(dec_t proceeds, dec_t cost, bool *bad)
{
    return json_pack("{s:o, s:o, s:o}", "proceeds", dec_json(proceeds), "cost_basis",
                     dec_json(cost), "gain_loss", gain_json(proceeds, cost, bad));
}

/* One term: its assets and their totals; adds the totals into *proceeds and
 * *cost (the form's overall total). */
static json_t *term_json(const forms_content_t *c, int bucket, dec_t *all_proceeds,
                         dec_t *all_cost, bool *bad)
{
    json_t *assets = json_array();
    dec_t proceeds = dec_zero(), cost = dec_zero();
    for (size_t i = 0; i < c->row_count && assets != NULL; i++) {
        const gl_row_t *r = &c->rows[i];
        if (r->bucket != bucket)
            continue;
        *bad = *bad || dec_add(proceeds, r->proceeds, &proceeds) != DEC_OK ||
               dec_add(cost, r->cost, &cost) != DEC_OK;
        json_t *item = json_pack("{s:s, s:o, s:o, s:o, s:o}", "asset_code", r->asset,
                                 "quantity", dec_json(r->quantity), "proceeds",
                                 dec_json(r->proceeds), "cost_basis", dec_json(r->cost),
                                 "gain_loss", gain_json(r->proceeds, r->cost, bad));
        if (item == NULL || json_array_append_new(assets, item) != 0)
            *bad = true;
    }
    *bad = *bad || dec_add(*all_proceeds, proceeds, all_proceeds) != DEC_OK ||
           dec_add(*all_cost, cost, all_cost) != DEC_OK;
    json_t *out = amounts_json(proceeds, cost, bad);
    if (out == NULL || assets == NULL || json_object_set_new(out, "assets", assets) != 0) {
        *bad = true;
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The pieces of a bucket whose gain cannot be computed: asset, quantity and
 * the one amount that is known (`amount` names it). */
static json_t *unresolved_json(const forms_content_t *c, int bucket, const char *amount,
                               bool *bad)
{
    json_t *items = json_array();
    for (size_t i = 0; i < c->row_count && items != NULL; i++) {
        const gl_row_t *r = &c->rows[i];
        if (r->bucket != bucket)
            continue;
        dec_t known = bucket == BUCKET_NO_BASIS ? r->proceeds : r->cost;
        json_t *item = json_pack("{s:s, s:o, s:o}", "asset_code", r->asset, "quantity",
                                 dec_json(r->quantity), amount, dec_json(known));
        if (item == NULL || json_array_append_new(items, item) != 0)
            *bad = true;
    }
    if (items == NULL)
        *bad = true;
    return items;
}

static json_t *gain_loss_json(const forms_content_t *c)
{
    bool bad = false;
    dec_t proceeds = dec_zero(), cost = dec_zero();
    json_t *out = json_pack(
        "{s:s, s:o*, s:o*}", "currency", DOMAIN_REPORTING_CURRENCY, "short_term",
        term_json(c, BUCKET_SHORT, &proceeds, &cost, &bad), "long_term",
        term_json(c, BUCKET_LONG, &proceeds, &cost, &bad));
    if (out == NULL)
        return NULL;
    json_object_set_new(out, "total", amounts_json(proceeds, cost, &bad));
    json_object_set_new(out, "without_cost_basis",
                        unresolved_json(c, BUCKET_NO_BASIS, "proceeds", &bad));
    json_object_set_new(out, "without_proceeds",
                        unresolved_json(c, BUCKET_NO_PROCEEDS, "cost_basis", &bad));
    if (bad || json_object_size(out) != 6) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* {"type"?, "count", "usd_value", "count_without_usd_value"}; type NULL for the total. */
static json_t *tx_total_json(const char *type, const tx_total_t *t)
{
    json_t *out = type != NULL ? json_pack("{s:s}", "type", type) : json_object();
    if (out == NULL ||
        json_object_set_new(out, "count", json_integer((json_int_t)t->count)) != 0 ||
        json_object_set_new(out, "usd_value", dec_json(t->usd)) != 0 ||
        json_object_set_new(out, "count_without_usd_value",
                            json_integer((json_int_t)t->unvalued)) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *transaction_summary_json(const forms_content_t *c)
{
    json_t *types = json_array();
    tx_total_t total = {0};
    bool bad = types == NULL;
    for (int i = 0; i < DOMAIN_TX_TYPE_COUNT && !bad; i++) {
        const tx_total_t *t = &c->by_type[i];
        total.count += t->count;
        total.unvalued += t->unvalued;
        bad = dec_add(total.usd, t->usd, &total.usd) != DEC_OK ||
              json_array_append_new(types, tx_total_json(domain_tx_type_name((domain_tx_type_t)i), t)) != 0;
    }
    json_t *out = bad ? NULL
                      : json_pack("{s:s, s:o, s:o*}", "currency", DOMAIN_REPORTING_CURRENCY, "transaction_types",
                                  types, "total", tx_total_json(NULL, &total));
    if (out == NULL && !bad)
        return NULL; /* json_pack stole types */
    if (bad)
        json_decref(types);
    return out;
}

json_t *forms_content_render(const forms_content_t *c)
{
    if (c->failure != DEC_OK)
        return NULL;
    if (c->type == FORMS_GAIN_LOSS_SUMMARY)
        return gain_loss_json(c);
    if (c->type == FORMS_TRANSACTION_SUMMARY)
        return transaction_summary_json(c);
    return json_pack("{s:s}", "note",
                     "taxd records this form and its status; the document body of this form "
                     "type is produced outside taxd");
}
