/* recalc: see recalc.h. Results are formatted into one arena of decimal
 * strings, so the rows handed to the store borrow their text from a single
 * allocation freed after the save. */
#include "inventory/recalc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static inv_method_t method_of(const char *name)
{
    if (strcmp(name, "HIFO") == 0)
        return INV_HIFO;
    if (strcmp(name, "AUSTRIA") == 0)
        return INV_AUSTRIA;
    return INV_FIFO;
}

static bool type_of(const char *name, inv_tx_type_t *type)
{
    static const struct {
        const char *name;
        inv_tx_type_t type;
    } TYPES[] = {{"deposit", INV_DEPOSIT}, {"income", INV_INCOME}, {"trade", INV_TRADE},
                 {"withdraw", INV_WITHDRAW}, {"expense", INV_EXPENSE}};
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strcmp(TYPES[i].name, name) == 0) {
            *type = TYPES[i].type;
            return true;
        }
    return false;
}

typedef struct loader {
    inv_engine_t *engine;
    inv_line_t *lines;
    size_t cap;
    bool failed;
} loader_t;

static bool convert_line(const store_tx_line_t *in, inv_line_t *out)
{
    memset(out, 0, sizeof *out);
    size_t code_len = strlen(in->asset);
    if (code_len >= sizeof out->asset ||
        dec_parse(in->amount, strlen(in->amount), &out->amount) != DEC_OK)
        return false;
    memcpy(out->asset, in->asset, code_len + 1);
    out->has_rate = in->has_rate;
    return !in->has_rate ||
           dec_parse(in->usd_rate, strlen(in->usd_rate), &out->usd_rate) == DEC_OK;
}

bool inventory_tx_from_store(const char *id, int64_t datetime_ms, const char *type,
                             const store_tx_line_t *lines, size_t count, inv_line_t *buf,
                             inv_tx_t *out)
{
    memset(out, 0, sizeof *out);
    out->datetime_ms = datetime_ms;
    if (strlen(id) >= sizeof out->id || !type_of(type, &out->type))
        return false;
    strcpy(out->id, id);
    size_t counts[3] = {0, 0, 0}, n = 0;
    for (store_line_kind_t kind = STORE_LINE_SENT; kind <= STORE_LINE_FEE; kind++)
        for (size_t i = 0; i < count; i++)
            if (lines[i].kind == kind) {
                if (!convert_line(&lines[i], &buf[n++]))
                    return false;
                counts[kind]++;
            }
    out->sent = buf;
    out->sent_count = counts[0];
    out->received = buf + counts[0];
    out->received_count = counts[1];
    out->fees = buf + counts[0] + counts[1];
    out->fee_count = counts[2];
    return true;
}

/* One stored transaction into the engine. */
static int load_tx(const char *id, int64_t datetime_ms, const char *type,
                   const store_tx_line_t *lines, size_t count, void *ctx)
{
    loader_t *l = ctx;
    if (count > l->cap) {
        inv_line_t *grown = realloc(l->lines, count * sizeof *grown);
        if (grown == NULL)
            return l->failed = true;
        l->lines = grown;
        l->cap = count;
    }
    inv_tx_t tx;
    if (!inventory_tx_from_store(id, datetime_ms, type, lines, count, l->lines, &tx) ||
        inv_engine_add(l->engine, &tx) != 0)
        return l->failed = true;
    return 0;
}

/* ---- results into rows ------------------------------------------------ */

typedef struct rows {
    store_inv_summary_t *summaries;
    store_inv_lot_t *lots;
    store_inv_relief_t *reliefs;
    size_t summary_count, lot_count, relief_count;
    char (*text)[DEC_TEXT_MAX]; /* every formatted decimal */
    size_t text_used, text_cap;
} rows_t;

static const char *fmt(rows_t *r, dec_t value)
{
    char *slot = r->text[r->text_used++];
    dec_format(value, slot);
    return slot;
}

static const char *kind_name(inv_relief_kind_t kind)
{
    return kind == INV_RELIEF_TRANSFER ? "transfer" : kind == INV_RELIEF_CARRY ? "carry"
                                                                               : "disposal";
}

static bool rows_alloc(rows_t *r, const inv_engine_t *e)
{
    size_t summaries = inv_summary_count(e), lots = 0, reliefs = inv_relief_count(e);
    for (size_t i = 0; i < summaries; i++)
        lots += inv_summary(e, i)->lot_count;
    r->summaries = calloc(summaries + 1, sizeof *r->summaries);
    r->lots = calloc(lots + 1, sizeof *r->lots);
    r->reliefs = calloc(reliefs + 1, sizeof *r->reliefs);
    r->text_cap = summaries * 4 + lots * 2 + reliefs * 3 + 1;
    r->text = calloc(r->text_cap, sizeof *r->text);
    return r->summaries && r->lots && r->reliefs && r->text;
}

static void rows_free(rows_t *r)
{
    free(r->summaries);
    free(r->lots);
    free(r->reliefs);
    free(r->text);
}

static void rows_fill(rows_t *r, const inv_engine_t *e)
{
    for (size_t i = 0; i < inv_summary_count(e); i++) {
        const inv_summary_t *s = inv_summary(e, i);
        r->summaries[r->summary_count++] = (store_inv_summary_t){
            .asset = s->asset, .total_quantity = fmt(r, s->total_quantity),
            .total_cost = fmt(r, s->total_cost),
            .quantity_with_basis = fmt(r, s->quantity_with_basis),
            .average_unit_cost = s->has_average ? fmt(r, s->average_unit_cost) : NULL};
        for (size_t k = 0; k < s->lot_count; k++) {
            const inv_lot_t *lot = &s->lots[k];
            r->lots[r->lot_count++] = (store_inv_lot_t){
                .asset = s->asset, .seq = (int64_t)k, .transaction_id = lot->tx_id,
                .acquired_at = lot->acquired_ms, .quantity = fmt(r, lot->quantity),
                .cost = lot->has_basis ? fmt(r, lot->cost) : NULL};
        }
    }
    for (size_t i = 0; i < inv_relief_count(e); i++) {
        const inv_relief_t *x = inv_relief(e, i);
        bool shortfall = x->lot_tx_id == NULL;
        r->reliefs[r->relief_count++] = (store_inv_relief_t){
            .seq = (int64_t)i, .transaction_id = x->tx_id, .asset = x->asset,
            .kind = kind_name(x->kind), .datetime = x->datetime_ms,
            .lot_transaction_id = x->lot_tx_id, .acquired_at = x->acquired_ms,
            .quantity = fmt(r, x->quantity), .cost = x->has_basis ? fmt(r, x->cost) : NULL,
            .proceeds = x->has_proceeds ? fmt(r, x->proceeds) : NULL,
            .term = shortfall ? NULL : x->term == INV_LONG_TERM ? "long" : "short"};
    }
}

recalc_result_t inventory_refresh(store_conn_t *conn, const store_inv_account_t *account)
{
    recalc_result_t result = {.store = STORE_OK, .arithmetic = DEC_OK};
    if (!account->dirty)
        return result;
    inv_engine_t *engine = inv_engine_new(method_of(account->method));
    loader_t loader = {.engine = engine};
    if (engine == NULL) {
        result.store = STORE_ERROR;
        return result;
    }
    result.store = store_tx_each_of_account(conn, account->uuid, load_tx, &loader);
    if (result.store == STORE_OK && loader.failed)
        result.store = STORE_ERROR;
    const char *failed_tx = NULL;
    if (result.store == STORE_OK)
        result.arithmetic = inv_engine_run(engine, &failed_tx);
    if (result.store == STORE_OK && result.arithmetic != DEC_OK && failed_tx != NULL)
        snprintf(result.failed_tx, sizeof result.failed_tx, "%s", failed_tx);
    if (result.store == STORE_OK && result.arithmetic == DEC_OK) {
        rows_t rows = {0};
        if (!rows_alloc(&rows, engine)) {
            result.store = STORE_ERROR;
        } else {
            rows_fill(&rows, engine);
            result.store = store_inv_save(conn, account->uuid, account->version, rows.summaries,
                                          rows.summary_count, rows.lots, rows.lot_count,
                                          rows.reliefs, rows.relief_count);
        }
        rows_free(&rows);
    }
    free(loader.lines);
    inv_engine_free(engine);
    return result;
}
