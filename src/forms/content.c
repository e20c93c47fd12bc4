/* forms/content: see content.h.
 *
 * Design. GAIN_LOSS_SUMMARY is the gains breakdown (gains/gains.h, the
 * accumulator GET /v1/gains/breakdown answers from): one for the whole year
 * and one per asset, kept in asset order as rows arrive, so rendering is a
 * walk with no sorting and the output never depends on the order rows were
 * fed. A row without proceeds or without a cost basis has no gain: it is
 * counted (rows_without_*), never summed as a zero, which would misstate
 * the gain. 1099_DA is forms/da.h. Sums are exact (dec_add); the first
 * arithmetic failure is kept and reported by every later add. */
#include "forms/content.h"
#include "core/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One asset of a GAIN_LOSS_SUMMARY: its own breakdown (the gains
 * accumulator) and the quantity summed into each term beside it. */
typedef struct gl_asset {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    gains_breakdown_t b;
    dec_t quantity_short, quantity_long;
} gl_asset_t;

typedef struct tx_total {
    int64_t count;
    int64_t unvalued; /* transactions of the type without a known USD value */
    dec_t usd;
} tx_total_t;


struct forms_content {
    forms_type_t type;
    int year;
    int64_t from_ms, to_ms;
    gains_breakdown_t all;           /* GAIN_LOSS_SUMMARY: every row */
    gl_asset_t *assets;              /* GAIN_LOSS_SUMMARY: by asset, in asset order */
    size_t asset_count, asset_cap;
    forms_da_t *da;                  /* 1099_DA */
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
    gains_breakdown_init(&c->all);
    if (type == FORMS_1099_DA && (c->da = forms_da_new(year)) == NULL) {
        free(c);
        return NULL;
    }
    return c;
}

void forms_content_free(forms_content_t *content)
{
    if (content == NULL)
        return;
    free(content->assets);
    forms_da_free(content->da);
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

/* The asset's accumulator, inserted in asset order when new; NULL when out
 * of memory. */
static gl_asset_t *asset_of(forms_content_t *c, const char *asset)
{
    size_t at = 0;
    for (; at < c->asset_count; at++) {
        int cmp = strcmp(c->assets[at].asset, asset);
        if (cmp == 0)
            return &c->assets[at];
        if (cmp > 0)
            break;
    }
    gl_asset_t *grown = grow_array(c->assets, &c->asset_cap, c->asset_count + 1, sizeof *grown, 8);
    if (grown == NULL)
        return NULL;
    c->assets = grown;
    memmove(&c->assets[at + 1], &c->assets[at], (c->asset_count - at) * sizeof *c->assets);
    c->asset_count++;
    gl_asset_t *a = &c->assets[at];
    memset(a, 0, sizeof *a);
    snprintf(a->asset, sizeof a->asset, "%s", asset);
    gains_breakdown_init(&a->b);
    return a;
}

static dec_status_t gains_failure(gains_status_t st)
{
    return st == GAINS_OK ? DEC_OK : DEC_RANGE;
}

static dec_status_t add_gain_loss(forms_content_t *c, const gains_row_t *g)
{
    if (strlen(g->asset_code) >= DOMAIN_ASSET_CODE_SIZE)
        return c->failure = DEC_RANGE;
    gl_asset_t *a = asset_of(c, g->asset_code);
    if (a == NULL)
        return c->failure = DEC_RANGE;
    gains_status_t st = gains_breakdown_add(&c->all, g);
    if (st == GAINS_OK)
        st = gains_breakdown_add(&a->b, g);
    if (st != GAINS_OK)
        return c->failure = gains_failure(st);
    /* the quantity of the rows the breakdown summed, in the term it used */
    if (g->has_gain_loss)
        add_into(c, g->term == GAINS_TERM_LONG ? &a->quantity_long : &a->quantity_short,
                 g->quantity);
    return c->failure;
}

dec_status_t forms_content_add_gain(forms_content_t *c, const gains_row_t *g)
{
    if (c->failure != DEC_OK || !in_year(c, g->disposed_at))
        return c->failure;
    if (c->type == FORMS_GAIN_LOSS_SUMMARY)
        return add_gain_loss(c, g);
    if (c->type == FORMS_1099_DA)
        return c->failure = gains_failure(forms_da_add(c->da, g));
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

/* {"proceeds", "cost_basis", "gain_loss"} of a line of totals. */
static json_t *amounts_json(const gains_totals_t *t)
{
    return json_pack("{s:o, s:o, s:o}", "proceeds", dec_json(t->proceeds), "cost_basis",
                     dec_json(t->cost_basis), "gain_loss", dec_json(t->gain_loss));
}

/* One term: its totals and its assets (those with rows summed in it). */
static json_t *term_json(const forms_content_t *c, bool long_term, bool *bad)
{
    json_t *assets = json_array();
    for (size_t i = 0; i < c->asset_count && assets != NULL; i++) {
        const gl_asset_t *a = &c->assets[i];
        const gains_totals_t *t = long_term ? &a->b.long_term : &a->b.short_term;
        if (t->rows == 0)
            continue;
        json_t *item = json_pack("{s:s, s:o, s:o, s:o, s:o}", "asset_code", a->asset, "quantity",
                                 dec_json(long_term ? a->quantity_long : a->quantity_short),
                                 "proceeds", dec_json(t->proceeds), "cost_basis",
                                 dec_json(t->cost_basis), "gain_loss", dec_json(t->gain_loss));
        if (item == NULL || json_array_append_new(assets, item) != 0)
            *bad = true;
    }
    json_t *out = amounts_json(long_term ? &c->all.long_term : &c->all.short_term);
    if (out == NULL || assets == NULL || json_object_set_new(out, "assets", assets) != 0) {
        *bad = true;
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The Form 8949 boxes that hold a row, in box order: box, rows (every row
 * boxed there) and the totals of those with proceeds and basis known. */
static json_t *boxes_json(const gains_breakdown_t *b, bool *bad)
{
    json_t *out = json_array();
    for (int i = 0; i < GAINS_BOX_COUNT && out != NULL; i++) {
        if (b->box_seen[i] == 0)
            continue;
        char box[2] = {(char)('A' + i), '\0'};
        const gains_totals_t *t = &b->box[i];
        json_t *item = json_pack("{s:s, s:I, s:o, s:o, s:o}", "box", box, "rows",
                                 (json_int_t)b->box_seen[i], "proceeds", dec_json(t->proceeds),
                                 "cost_basis", dec_json(t->cost_basis), "gain_loss",
                                 dec_json(t->gain_loss));
        if (item == NULL || json_array_append_new(out, item) != 0)
            *bad = true;
    }
    if (out == NULL)
        *bad = true;
    return out;
}

static json_t *gain_loss_json(const forms_content_t *c)
{
    bool bad = false;
    const gains_breakdown_t *b = &c->all;
    json_t *out = json_pack(
        "{s:s, s:o*, s:o*, s:o, s:o*, s:I, s:I, s:I}", "currency", DOMAIN_REPORTING_CURRENCY,
        "short_term", term_json(c, false, &bad), "long_term", term_json(c, true, &bad), "total",
        amounts_json(&b->total), "form_8949_boxes", boxes_json(b, &bad),
        "rows_without_cost_basis", (json_int_t)b->rows_without_cost_basis,
        "rows_without_proceeds", (json_int_t)b->rows_without_proceeds, "rows_without_term",
        (json_int_t)b->rows_without_term);
    if (out == NULL)
        return NULL;
    if (bad || json_object_size(out) != 8) {
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
    if (c->type == FORMS_1099_DA)
        return forms_da_render(c->da);
    if (c->type == FORMS_TRANSACTION_SUMMARY)
        return transaction_summary_json(c);
    return json_pack("{s:s}", "note",
                     "taxd records this form and its status; the document body of this form "
                     "type is produced outside taxd");
}
