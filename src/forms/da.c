/* forms/da: see da.h.
 *
 * Records are kept in an array in the order their first piece arrived;
 * the pieces of one sale are consecutive, so a piece is matched against the
 * records of its own sale only (from `sale_start`), never the whole year. */
#include "forms/da.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/domain.h"
#include "core/grow.h"

enum { GROUP_COVERED_SHORT, GROUP_COVERED_LONG, GROUP_NONCOVERED, GROUP_NO_PROCEEDS };

typedef struct da_record {
    char transaction_id[DOMAIN_ID_MAX + 1];
    char asset[DOMAIN_ASSET_CODE_SIZE];
    int group;
    dec_t quantity, proceeds, cost;
    int64_t date_sold;
    int64_t acquired;         /* the first piece's acquisition (covered) */
    bool various;             /* covered pieces acquired on different dates */
    unsigned terms;           /* bits: 1 << gains_term_t seen */
    bool provided;
} da_record_t;

struct forms_da {
    int year;
    da_record_t *records;
    size_t count, cap;
    size_t sale_start;        /* the first record of the current sale */
};

forms_da_t *forms_da_new(int year)
{
    forms_da_t *da = calloc(1, sizeof *da);
    if (da != NULL)
        da->year = year;
    return da;
}

void forms_da_free(forms_da_t *da)
{
    if (da == NULL)
        return;
    free(da->records);
    free(da);
}

static int group_of(const gains_row_t *g)
{
    if (!g->has_proceeds)
        return GROUP_NO_PROCEEDS;
    if (!g->covered)
        return GROUP_NONCOVERED;
    return g->term == GAINS_TERM_LONG ? GROUP_COVERED_LONG : GROUP_COVERED_SHORT;
}

/* The UTC calendar date of ms, "YYYY-MM-DD". */
static void date_text(int64_t ms, char out[11])
{
    char full[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(ms, full);
    memcpy(out, full, 10);
    out[10] = '\0';
}

static bool same_day(int64_t a, int64_t b)
{
    char x[11], y[11];
    date_text(a, x);
    date_text(b, y);
    return strcmp(x, y) == 0;
}

/* The record of (the row's sale, asset, group), new when none; NULL when out
 * of memory or an id does not fit. */
static da_record_t *record_of(forms_da_t *da, const gains_row_t *g, int group)
{
    if (strlen(g->transaction_id) > DOMAIN_ID_MAX || strlen(g->asset_code) >= DOMAIN_ASSET_CODE_SIZE)
        return NULL;
    if (da->sale_start < da->count &&
        strcmp(da->records[da->sale_start].transaction_id, g->transaction_id) != 0)
        da->sale_start = da->count;
    for (size_t i = da->sale_start; i < da->count; i++) {
        da_record_t *r = &da->records[i];
        if (r->group == group && strcmp(r->asset, g->asset_code) == 0)
            return r;
    }
    da_record_t *grown = grow_array(da->records, &da->cap, da->count + 1, sizeof *grown, 64);
    if (grown == NULL)
        return NULL;
    da->records = grown;
    da_record_t *r = &da->records[da->count++];
    memset(r, 0, sizeof *r);
    snprintf(r->transaction_id, sizeof r->transaction_id, "%s", g->transaction_id);
    snprintf(r->asset, sizeof r->asset, "%s", g->asset_code);
    r->group = group;
    r->date_sold = g->disposed_at;
    r->acquired = g->acquired_at;
    return r;
}

gains_status_t forms_da_add(forms_da_t *da, const gains_row_t *g)
{
    if (!g->digital)
        return GAINS_OK; /* securities: a 1099-B, not this form */
    int group = group_of(g);
    da_record_t *r = record_of(da, g, group);
    if (r == NULL)
        return GAINS_RANGE;
    if (g->has_acquired_at && !same_day(r->acquired, g->acquired_at))
        r->various = true;
    r->terms |= 1u << g->term;
    r->provided = r->provided || g->customer_provided_acquisition;
    bool ok = dec_add(r->quantity, g->quantity, &r->quantity) == DEC_OK;
    if (ok && g->has_proceeds)
        ok = dec_add(r->proceeds, g->proceeds, &r->proceeds) == DEC_OK;
    if (ok && g->has_cost_basis)
        ok = dec_add(r->cost, g->cost_basis, &r->cost) == DEC_OK;
    return ok ? GAINS_OK : GAINS_RANGE;
}

/* ---- rendering --------------------------------------------------------- */

static json_t *dec_json(dec_t value)
{
    char text[DEC_TEXT_MAX];
    dec_format(value, text);
    return json_string(text);
}

static json_t *date_json(int64_t ms)
{
    char d[11];
    date_text(ms, d);
    return json_string(d);
}

/* The term of box 6: the group's for covered records; for noncovered ones
 * the pieces' common known term, or NULL. */
static const char *record_term(const da_record_t *r)
{
    if (r->group == GROUP_COVERED_SHORT)
        return "SHORT";
    if (r->group == GROUP_COVERED_LONG)
        return "LONG";
    if (r->terms == 1u << GAINS_TERM_SHORT)
        return "SHORT";
    if (r->terms == 1u << GAINS_TERM_LONG)
        return "LONG";
    return NULL;
}

static json_t *record_json(const da_record_t *r)
{
    bool covered = r->group != GROUP_NONCOVERED;
    json_t *out = json_pack("{s:s, s:s, s:o}", "transaction_id", r->transaction_id,
                            "description", r->asset, "quantity", dec_json(r->quantity));
    if (out == NULL)
        return NULL;
    bool ok = true;
    if (covered)
        ok = json_object_set_new(out, "date_acquired",
                                 r->various ? json_string("VARIOUS") : date_json(r->acquired)) == 0;
    ok = ok && json_object_set_new(out, "date_sold", date_json(r->date_sold)) == 0 &&
         json_object_set_new(out, "gross_proceeds", dec_json(r->proceeds)) == 0;
    if (ok && covered)
        ok = json_object_set_new(out, "cost_basis", dec_json(r->cost)) == 0;
    const char *term = record_term(r);
    if (ok && term != NULL)
        ok = json_object_set_new(out, "term", json_string(term)) == 0;
    ok = ok && json_object_set_new(out, "noncovered", json_boolean(!covered)) == 0 &&
         json_object_set_new(out, "customer_provided_acquisition", json_boolean(r->provided)) == 0;
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *missing_json(const da_record_t *r)
{
    return json_pack("{s:s, s:s, s:o, s:o}", "transaction_id", r->transaction_id, "asset_code",
                     r->asset, "quantity", dec_json(r->quantity), "date_sold",
                     date_json(r->date_sold));
}

json_t *forms_da_render(const forms_da_t *da)
{
    json_t *records = json_array(), *missing = json_array();
    dec_t proceeds = dec_zero(), cost = dec_zero();
    bool bad = records == NULL || missing == NULL;
    for (size_t i = 0; i < da->count && !bad; i++) {
        const da_record_t *r = &da->records[i];
        if (r->group == GROUP_NO_PROCEEDS) {
            bad = json_array_append_new(missing, missing_json(r)) != 0;
            continue;
        }
        bad = dec_add(proceeds, r->proceeds, &proceeds) != DEC_OK ||
              (r->group != GROUP_NONCOVERED && dec_add(cost, r->cost, &cost) != DEC_OK) ||
              json_array_append_new(records, record_json(r)) != 0;
    }
    json_t *totals = bad ? NULL
                         : json_pack("{s:I, s:o, s:o}", "records",
                                     (json_int_t)json_array_size(records), "gross_proceeds",
                                     dec_json(proceeds), "cost_basis", dec_json(cost));
    if (totals == NULL) {
        json_decref(records);
        json_decref(missing);
        return NULL;
    }
    return json_pack("{s:i, s:s, s:o, s:o, s:o}", "tax_year", da->year, "currency",
                     DOMAIN_REPORTING_CURRENCY, "records", records, "totals", totals,
                     "without_proceeds", missing);
}
