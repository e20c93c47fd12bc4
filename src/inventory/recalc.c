/* recalc: see recalc.h for the design. Here: an attempt reads the account's
 * mark, rebuilds the engine's state at the watermark from the stored ledger
 * and loads the transactions from there on, all in one snapshot; runs the
 * engine outside it; and saves the tail, which the store refuses when a
 * write came in meanwhile. Results are formatted into one arena of decimal
 * strings, so the rows handed to the store borrow their text from a single
 * allocation freed after the save. */
#include "inventory/recalc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/grow.h"
#include "store/dispositions.h"
#include "store/provided_lots.h"

/* The account's method; an unknown name (none is stored: the table's CHECK
 * refuses it) counts as the default. */
static domain_method_t method_of(const char *name)
{
    domain_method_t method = DOMAIN_METHOD_DEFAULT;
    domain_method_parse(name, &method);
    return method;
}

/* A customer-provided lot of a deposit, keyed by the deposit's caller id. */
typedef struct provided {
    char *tx_id;
    size_t order;        /* as read: (transaction, asset, idx) */
    inv_provided_lot_t lot;
} provided_t;

typedef struct loader {
    inv_engine_t *engine;
    inv_line_t *lines;
    size_t cap;
    size_t added;
    bool failed;
    provided_t *provided;          /* sorted by (tx_id, order) once read */
    size_t provided_count, provided_cap;
    inv_provided_lot_t *lots;      /* provided[i].lot, in the same order */
} loader_t;

static bool convert_line(const store_tx_line_t *in, inv_line_t *out)
{
    memset(out, 0, sizeof *out);
    if (!buf_copy(out->asset, sizeof out->asset, in->asset) ||
        dec_parse(in->amount, strlen(in->amount), &out->amount) != DEC_OK)
        return false;
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
    if (strlen(id) >= sizeof out->id || !domain_tx_type_parse(type, &out->type))
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

static int take_provided(const char *tx_id, const char *asset, const char *quantity,
                         const char *cost_basis, int64_t acquired_at, void *ctx)
{
    loader_t *l = ctx;
    provided_t *grown =
        grow_array(l->provided, &l->provided_cap, l->provided_count + 1, sizeof *grown, 8);
    if (grown == NULL)
        return l->failed = true;
    l->provided = grown;
    provided_t *p = &l->provided[l->provided_count];
    *p = (provided_t){.order = l->provided_count, .lot = {.acquired_ms = acquired_at}};
    if (!buf_copy(p->lot.asset, sizeof p->lot.asset, asset) ||
        dec_parse(quantity, strlen(quantity), &p->lot.quantity) != DEC_OK ||
        dec_parse(cost_basis, strlen(cost_basis), &p->lot.cost) != DEC_OK ||
        (p->tx_id = strdup(tx_id)) == NULL)
        return l->failed = true;
    l->provided_count++;
    return 0;
}

static int compare_provided(const void *pa, const void *pb)
{
    const provided_t *a = pa, *b = pb;
    int c = strcmp(a->tx_id, b->tx_id);
    if (c != 0)
        return c;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The provided lots of the account's deposits from from_ms on, by deposit id. */
static store_status_t read_provided(store_conn_t *conn, const char *account_uuid,
                                    int64_t from_ms, loader_t *l)
{
    store_status_t st =
        store_provided_lots_of_account(conn, account_uuid, from_ms, take_provided, l);
    if (st != STORE_OK || l->failed || l->provided_count == 0)
        return st != STORE_OK ? st : l->failed ? STORE_ERROR : STORE_OK;
    qsort(l->provided, l->provided_count, sizeof *l->provided, compare_provided);
    l->lots = malloc(l->provided_count * sizeof *l->lots);
    if (l->lots == NULL)
        return STORE_ERROR;
    for (size_t i = 0; i < l->provided_count; i++)
        l->lots[i] = l->provided[i].lot;
    return STORE_OK;
}

/* Points a deposit at its provided lots (a run of the sorted array). */
static void attach_provided(const loader_t *l, inv_tx_t *tx)
{
    size_t lo = 0, hi = l->provided_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->provided[mid].tx_id, tx->id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < l->provided_count && strcmp(l->provided[end].tx_id, tx->id) == 0)
        end++;
    if (end > lo) {
        tx->provided = l->lots + lo;
        tx->provided_count = end - lo;
    }
}

static void loader_free(loader_t *l)
{
    for (size_t i = 0; i < l->provided_count; i++)
        free(l->provided[i].tx_id);
    free(l->provided);
    free(l->lots);
    free(l->lines);
    *l = (loader_t){0};
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
    if (!inventory_tx_from_store(id, datetime_ms, type, lines, count, l->lines, &tx))
        return l->failed = true;
    if (tx.type == DOMAIN_TX_DEPOSIT)
        attach_provided(l, &tx);
    if (inv_engine_add(l->engine, &tx) != 0)
        return l->failed = true;
    l->added++;
    return 0;
}

/* ---- the state at the watermark, from the stored ledger ---------------- */

/* A lot acquired before the watermark that holds something there. */
typedef struct seed_lot {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    char *tx_id;
    int64_t seq, acquired_ms, entered_ms;
    inv_lot_origin_t origin;
    bool has_basis;
    dec_t quantity, cost;              /* at the watermark */
    dec_t orig_quantity, orig_cost;
    dec_t stored_quantity, stored_cost;  /* as stored after the last save */
} seed_lot_t;

typedef struct seed_asset {
    char asset[DOMAIN_ASSET_CODE_SIZE];
    int64_t since, next_seq;
    dec_t pool_quantity, pool_cost;    /* after the last save, then at the watermark */
} seed_asset_t;

/* One attempt: its inputs (read in one snapshot), engine and outcome. */
typedef struct job {
    store_conn_t *conn;
    const char *account_uuid;
    bool force_full;        /* the ledger failed to seed a run: recompute in full */
    store_inv_mark_t mark;
    domain_method_t method;
    int64_t from_ms;        /* INT64_MIN: a full run */
    int64_t relief_base;
    seed_asset_t *assets;
    size_t asset_count, asset_cap;
    seed_lot_t *lots;
    size_t lot_count, lot_cap;
    bool untrusted;         /* a stored row does not fit: seed nothing */
    inv_method_change_t *schedule; /* the account's disposition method records */
    size_t schedule_count, schedule_cap;
    bool bad_schedule;
    inv_engine_t *engine;
    loader_t loader;
    recalc_result_t result;
    bool stale;             /* the save was refused: a write came in */
} job_t;

static void job_clear_seeds(job_t *j)
{
    for (size_t i = 0; i < j->lot_count; i++)
        free(j->lots[i].tx_id);
    free(j->lots);
    free(j->assets);
    j->lots = NULL;
    j->assets = NULL;
    j->lot_count = j->lot_cap = j->asset_count = j->asset_cap = 0;
}

static void job_free(job_t *j)
{
    job_clear_seeds(j);
    inv_engine_free(j->engine);
    loader_free(&j->loader);
    j->engine = NULL;
}

/* job_free and the schedule: what a job holds at its end. */
static void job_end(job_t *j)
{
    job_free(j);
    free(j->schedule);
    j->schedule = NULL;
    j->schedule_count = j->schedule_cap = 0;
}

static int take_change(int64_t effective_ms, const char *method, void *ctx)
{
    job_t *j = ctx;
    inv_method_change_t change = {.effective_ms = effective_ms};
    if (!domain_method_parse(method, &change.method))
        return j->bad_schedule = true;
    inv_method_change_t *grown =
        grow_array(j->schedule, &j->schedule_cap, j->schedule_count + 1, sizeof *grown, 4);
    if (grown == NULL)
        return j->bad_schedule = true;
    j->schedule = grown;
    j->schedule[j->schedule_count++] = change;
    return 0;
}

/* The account's disposition method records (none under AUSTRIA: its pool
 * is one rule over the whole history). */
static store_status_t read_schedule(job_t *j)
{
    j->schedule_count = 0;
    j->bad_schedule = false;
    if (j->method == DOMAIN_METHOD_AUSTRIA)
        return STORE_OK;
    store_status_t st = store_dispositions_schedule(j->conn, j->account_uuid, take_change, j);
    return st == STORE_OK && j->bad_schedule ? STORE_ERROR : st;
}

static bool parse(const char *text, dec_t *out)
{
    return text != NULL && dec_parse(text, strlen(text), out) == DEC_OK;
}

static seed_asset_t *seed_asset_of(job_t *j, const char *asset)
{
    for (size_t i = 0; i < j->asset_count; i++)
        if (strcmp(j->assets[i].asset, asset) == 0)
            return &j->assets[i];
    return NULL;
}

/* The lot (asset, seq): the rows come sorted by (asset, seq), bytewise. */
static seed_lot_t *seed_lot_of(job_t *j, const char *asset, int64_t seq)
{
    size_t lo = 0, hi = j->lot_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(j->lots[mid].asset, asset);
        if (c == 0)
            c = j->lots[mid].seq < seq ? -1 : j->lots[mid].seq > seq;
        if (c == 0)
            return &j->lots[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int take_asset(const store_inv_asset_t *row, void *ctx)
{
    job_t *j = ctx;
    if (j->asset_count == j->asset_cap) {
        size_t cap = j->asset_cap * 2 + 8;
        seed_asset_t *grown = realloc(j->assets, cap * sizeof *grown);
        if (grown == NULL)
            return j->untrusted = true;
        j->assets = grown;
        j->asset_cap = cap;
    }
    seed_asset_t *a = &j->assets[j->asset_count];
    *a = (seed_asset_t){.since = row->since, .next_seq = row->next_lot_seq};
    if (!buf_copy(a->asset, sizeof a->asset, row->asset) || !parse(row->quantity_with_basis, &a->pool_quantity) ||
        !parse(row->total_cost, &a->pool_cost))
        return j->untrusted = true;
    j->asset_count++;
    return 0;
}

static int take_open_lot(const store_inv_lot_t *row, void *ctx)
{
    job_t *j = ctx;
    if (j->lot_count == j->lot_cap) {
        size_t cap = j->lot_cap * 2 + 64;
        seed_lot_t *grown = realloc(j->lots, cap * sizeof *grown);
        if (grown == NULL)
            return j->untrusted = true;
        j->lots = grown;
        j->lot_cap = cap;
    }
    seed_lot_t *l = &j->lots[j->lot_count];
    *l = (seed_lot_t){.seq = row->seq, .acquired_ms = row->acquired_at,
                      .entered_ms = row->entered_at, .has_basis = row->cost != NULL};
    bool ok = inv_lot_origin_parse(row->origin, &l->origin) &&
              buf_copy(l->asset, sizeof l->asset, row->asset) && parse(row->quantity, &l->quantity) &&
              parse(row->orig_quantity, &l->orig_quantity) &&
              (row->orig_cost != NULL) == l->has_basis &&
              (!l->has_basis || (parse(row->cost, &l->cost) &&
                                 parse(row->orig_cost, &l->orig_cost)));
    if (!ok || (l->tx_id = strdup(row->transaction_id)) == NULL)
        return j->untrusted = true;
    l->stored_quantity = l->quantity;
    l->stored_cost = l->cost;
    j->lot_count++;
    return 0;
}

/* A relief dated at or after the watermark: what it took goes back to its
 * lot (when acquired before) and, with basis, to the AUSTRIA pool. */
static int give_back(const store_inv_relief_t *row, void *ctx)
{
    job_t *j = ctx;
    dec_t q, cost = dec_zero();
    bool basis = row->cost != NULL;
    if (!parse(row->quantity, &q) || (basis && !parse(row->cost, &cost)))
        return j->untrusted = true;
    seed_asset_t *a = seed_asset_of(j, row->asset);
    /* a lot entered before the watermark has a seq below the asset's next */
    if (row->lot_transaction_id != NULL && a != NULL && row->lot_seq < a->next_seq) {
        seed_lot_t *l = row->lot_seq < 0 ? NULL : seed_lot_of(j, row->asset, row->lot_seq);
        if (l == NULL || l->has_basis != basis || dec_add(l->quantity, q, &l->quantity) != DEC_OK)
            return j->untrusted = true;
        if (basis && j->method != DOMAIN_METHOD_AUSTRIA && dec_add(l->cost, cost, &l->cost) != DEC_OK)
            return j->untrusted = true;
    }
    if (j->method == DOMAIN_METHOD_AUSTRIA && basis && a != NULL &&
        (dec_add(a->pool_quantity, q, &a->pool_quantity) != DEC_OK ||
         dec_add(a->pool_cost, cost, &a->pool_cost) != DEC_OK))
        return j->untrusted = true;
    return 0;
}

/* AUSTRIA: a lot entered at or after the watermark leaves the pool. */
static int take_back(const store_inv_lot_t *row, void *ctx)
{
    job_t *j = ctx;
    seed_asset_t *a = seed_asset_of(j, row->asset);
    dec_t q, cost;
    if (row->orig_quantity == NULL)
        return j->untrusted = true;
    if (a == NULL || row->orig_cost == NULL)
        return 0;
    if (!parse(row->orig_quantity, &q) || !parse(row->orig_cost, &cost) ||
        dec_sub(a->pool_quantity, q, &a->pool_quantity) != DEC_OK ||
        dec_sub(a->pool_cost, cost, &a->pool_cost) != DEC_OK)
        return j->untrusted = true;
    return 0;
}

/* Reads the stored state at from_ms; sets untrusted when it cannot seed. */
static store_status_t read_seeds(job_t *j)
{
    store_status_t st = store_inv_assets_before(j->conn, j->account_uuid, j->from_ms, take_asset, j);
    if (st == STORE_OK && !j->untrusted)
        st = store_inv_lots_open_at(j->conn, j->account_uuid, j->from_ms, take_open_lot, j);
    if (st == STORE_OK && !j->untrusted)
        st = store_inv_reliefs_between(j->conn, j->account_uuid, j->from_ms, INT64_MAX,
                                       give_back, j);
    if (st == STORE_OK && !j->untrusted && j->method == DOMAIN_METHOD_AUSTRIA)
        st = store_inv_lots_from(j->conn, j->account_uuid, j->from_ms, take_back, j);
    if (st == STORE_OK && !j->untrusted)
        st = store_inv_relief_base(j->conn, j->account_uuid, j->from_ms, &j->relief_base);
    return st;
}

/* The seeds into the engine; false when the engine refuses one. */
static bool plant_seeds(job_t *j)
{
    if (inv_engine_start_at(j->engine, j->from_ms) != 0)
        return false;
    for (size_t i = 0; i < j->asset_count; i++) {
        const seed_asset_t *a = &j->assets[i];
        inv_seed_asset_t seed = {.asset = a->asset, .since_ms = a->since,
                                 .next_seq = (size_t)a->next_seq,
                                 .pool_quantity = a->pool_quantity, .pool_cost = a->pool_cost};
        if (a->next_seq < 0 || inv_engine_seed_asset(j->engine, &seed) != 0)
            return false;
    }
    for (size_t i = 0; i < j->lot_count; i++) {
        const seed_lot_t *l = &j->lots[i];
        inv_lot_t lot = {.tx_id = l->tx_id, .acquired_ms = l->acquired_ms,
                         .entered_ms = l->entered_ms, .origin = l->origin, .seq = (size_t)l->seq,
                         .quantity = l->quantity, .has_basis = l->has_basis, .cost = l->cost,
                         .orig_quantity = l->orig_quantity, .orig_cost = l->orig_cost};
        if (l->seq < 0 || inv_engine_seed_lot(j->engine, l->asset, &lot) != 0)
            return false;
    }
    return true;
}

/* Makes the engine, seeded at from_ms, and loads the transactions from
 * there; false when the seeds do not fit (the caller starts over in full). */
static store_status_t load_engine(job_t *j, bool *seeded)
{
    *seeded = true;
    j->engine = inv_engine_new(j->method);
    j->loader = (loader_t){.engine = j->engine};
    if (j->engine == NULL ||
        (j->schedule_count > 0 &&
         inv_engine_set_schedule(j->engine, j->schedule, j->schedule_count) != 0))
        return STORE_ERROR;
    if (j->from_ms != INT64_MIN && !plant_seeds(j)) {
        *seeded = false;
        return STORE_OK;
    }
    store_status_t st = read_provided(j->conn, j->account_uuid, j->from_ms, &j->loader);
    if (st == STORE_OK)
        st = store_tx_each_of_account_from(j->conn, j->account_uuid, j->from_ms, load_tx,
                                           &j->loader);
    if (st == STORE_OK && j->loader.failed)
        st = STORE_ERROR;
    return st;
}

/* Everything an attempt reads, in the caller's snapshot (store_read, or the
 * write transaction of a locked attempt). */
static store_status_t load(store_conn_t *conn, const void *arg)
{
    job_t *j = (job_t *)arg;
    j->conn = conn; /* a locked attempt may run on another pooled connection */
    store_status_t st = store_inv_mark(conn, j->account_uuid, &j->mark);
    if (st != STORE_OK || !j->mark.dirty)
        return st;
    j->method = method_of(j->mark.method);
    bool trusted = !j->force_full && strcmp(j->mark.basis, j->mark.method) == 0;
    j->from_ms = trusted ? j->mark.dirty_from : INT64_MIN;
    j->relief_base = 0;
    if ((st = read_schedule(j)) != STORE_OK)
        return st;
    if (j->from_ms != INT64_MIN && (st = read_seeds(j)) != STORE_OK)
        return st;
    bool seeded = false;
    if (!j->untrusted && (st = load_engine(j, &seeded)) != STORE_OK)
        return st;
    if (j->untrusted || !seeded) { /* the ledger cannot seed a run: from the first transaction */
        job_free(j);
        j->untrusted = false;
        j->from_ms = INT64_MIN;
        j->relief_base = 0;
        st = load_engine(j, &seeded);
    }
    return st;
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

static bool rows_alloc(rows_t *r, const inv_engine_t *e)
{
    size_t summaries = inv_summary_count(e), lots = 0, reliefs = inv_relief_count(e);
    for (size_t i = 0; i < summaries; i++)
        lots += inv_summary(e, i)->ledger_count;
    r->summaries = calloc(summaries + 1, sizeof *r->summaries);
    r->lots = calloc(lots + 1, sizeof *r->lots);
    r->reliefs = calloc(reliefs + 1, sizeof *r->reliefs);
    r->text_cap = summaries * 4 + lots * 4 + reliefs * 4 + 1;
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

/* A lot entered before the watermark is written only when its holding
 * changed; the ones entered from it on are all written (they were deleted). */
static bool lot_unchanged(job_t *j, const char *asset, const inv_lot_t *lot)
{
    if (lot->entered_ms >= j->from_ms)
        return false;
    const seed_lot_t *s = seed_lot_of(j, asset, (int64_t)lot->seq);
    return s != NULL && dec_cmp(s->stored_quantity, lot->quantity) == 0 &&
           (!lot->has_basis || dec_cmp(s->stored_cost, lot->cost) == 0);
}

static void rows_fill_lots(rows_t *r, job_t *j, const inv_summary_t *s)
{
    for (size_t k = 0; k < s->ledger_count; k++) {
        const inv_lot_t *lot = &s->ledger[k];
        if (lot_unchanged(j, s->asset, lot))
            continue;
        r->lots[r->lot_count++] = (store_inv_lot_t){
            .asset = s->asset, .seq = (int64_t)lot->seq, .transaction_id = lot->tx_id,
            .acquired_at = lot->acquired_ms, .quantity = fmt(r, lot->quantity),
            .cost = lot->has_basis ? fmt(r, lot->cost) : NULL,
            .orig_quantity = fmt(r, lot->orig_quantity),
            .orig_cost = lot->has_basis ? fmt(r, lot->orig_cost) : NULL,
            .origin = inv_lot_origin_name(lot->origin), .entered_at = lot->entered_ms};
    }
}

static void rows_fill(rows_t *r, job_t *j)
{
    const inv_engine_t *e = j->engine;
    for (size_t i = 0; i < inv_summary_count(e); i++) {
        const inv_summary_t *s = inv_summary(e, i);
        r->summaries[r->summary_count++] = (store_inv_summary_t){
            .asset = s->asset, .since = s->since_ms,
            .total_quantity = fmt(r, s->total_quantity), .total_cost = fmt(r, s->total_cost),
            .quantity_with_basis = fmt(r, s->quantity_with_basis),
            .average_unit_cost = s->has_average ? fmt(r, s->average_unit_cost) : NULL};
        rows_fill_lots(r, j, s);
    }
    for (size_t i = 0; i < inv_relief_count(e); i++) {
        const inv_relief_t *x = inv_relief(e, i);
        bool shortfall = x->lot_tx_id == NULL;
        r->reliefs[r->relief_count++] = (store_inv_relief_t){
            .seq = j->relief_base + (int64_t)i, .transaction_id = x->tx_id, .asset = x->asset,
            .kind = inv_relief_kind_name(x->kind), .datetime = x->datetime_ms,
            .lot_transaction_id = x->lot_tx_id, .acquired_at = x->acquired_ms,
            .quantity = fmt(r, x->quantity), .cost = x->has_basis ? fmt(r, x->cost) : NULL,
            .proceeds = x->has_proceeds ? fmt(r, x->proceeds) : NULL,
            .term = shortfall ? NULL : inv_term_name(x->term),
            .lot_seq = shortfall ? -1 : (int64_t)x->lot_seq,
            .method = domain_method_name(x->method),
            .lot_origin = shortfall ? NULL : inv_lot_origin_name(x->lot_origin),
            .transaction_costs = x->has_costs ? fmt(r, x->transaction_costs) : NULL};
    }
}

/* ---- an attempt ------------------------------------------------------- */

/* Runs the loaded engine; false (with the outcome in j->result) when there
 * is nothing to save. */
static bool compute(job_t *j)
{
    const char *failed_tx = NULL;
    j->result.arithmetic = inv_engine_run(j->engine, &failed_tx);
    if (j->result.arithmetic != DEC_OK && failed_tx != NULL)
        snprintf(j->result.failed_tx, sizeof j->result.failed_tx, "%s", failed_tx);
    return j->result.arithmetic == DEC_OK;
}

/* Saves the computed rows, in the caller's write transaction when in_tx. */
static store_status_t save(job_t *j, bool in_tx)
{
    rows_t rows = {0};
    store_status_t st = STORE_ERROR;
    if (rows_alloc(&rows, j->engine)) {
        rows_fill(&rows, j);
        store_inv_save_t save = {
            .account_uuid = j->account_uuid, .version = j->mark.version, .from_ms = j->from_ms,
            .basis = j->mark.method, .summaries = rows.summaries,
            .summary_count = rows.summary_count, .lots = rows.lots, .lot_count = rows.lot_count,
            .reliefs = rows.reliefs, .relief_count = rows.relief_count};
        st = in_tx ? store_inv_save_in_tx(j->conn, &save, &j->stale)
                   : store_inv_save(j->conn, &save, &j->stale);
    }
    rows_free(&rows);
    return st;
}

/* A locked attempt: read, compute and save inside one write transaction, so
 * no write can come in between (the last resort against a busy account). */
static store_status_t locked_attempt(store_conn_t *conn, const void *arg)
{
    job_t *j = (job_t *)arg;
    store_status_t st = load(conn, j);
    if (st != STORE_OK || !j->mark.dirty || !compute(j))
        return st;
    return save(j, true);
}

/* One attempt; sets j->stale when a write came in before its save. */
static store_status_t attempt(job_t *j, bool locked)
{
    if (locked)
        return store_write(j->conn, locked_attempt, j);
    store_status_t st = store_read(j->conn, load, j);
    if (st != STORE_OK || !j->mark.dirty || !compute(j))
        return st;
    return save(j, false);
}

void recalc_describe_failure(const recalc_result_t *r, char *out, size_t cap)
{
    if (r->arithmetic == DEC_DIV_ZERO)
        snprintf(out, cap, "a division by zero at transaction '%s'", r->failed_tx);
    else
        snprintf(out, cap, "a total at transaction '%s' exceeds the supported range",
                 r->failed_tx);
}

enum { OPTIMISTIC_ATTEMPTS = 3 };

recalc_result_t inventory_refresh(store_conn_t *conn, const store_inv_account_t *account)
{
    recalc_result_t result = {.store = STORE_OK, .arithmetic = DEC_OK};
    if (!account->dirty)
        return result;
    bool force_full = false;
    for (int n = 0; n <= OPTIMISTIC_ATTEMPTS; n++) {
        job_t j = {.conn = conn, .account_uuid = account->uuid, .force_full = force_full,
                   .result = {.store = STORE_OK, .arithmetic = DEC_OK}};
        j.result.store = attempt(&j, n == OPTIMISTIC_ATTEMPTS);
        bool resumed = j.from_ms != INT64_MIN && j.mark.dirty;
        result = j.result;
        job_end(&j);
        if (j.stale && n < OPTIMISTIC_ATTEMPTS)
            continue; /* a write came in: read again */
        if (result.store != STORE_OK && !j.stale && resumed && !force_full) {
            force_full = true; /* a resumed save failed: the ledger may be at fault */
            n--;
            continue;
        }
        return result;
    }
    return result;
}

/* ---- the bulk run ------------------------------------------------------- */

/* Reading and computing overlap writing: READERS reader threads (each on a
 * pooled connection of its own) take the dirty accounts in turn from one
 * walk in key order, and for each read its inputs in one snapshot and
 * compute it, as an optimistic attempt does; the caller's thread saves what
 * they hand over, `batch` accounts per write transaction. A save checks
 * inventory_version like any optimistic save: an account written since it
 * was read (or whose read failed) is read, computed and saved again inside
 * the batch, as a locked attempt. At most QUEUE_CAP computed accounts wait
 * for the writer, so memory stays that of a few accounts whatever their
 * number. One reader: on the v9 layout reading an account's transactions
 * costs twice what saving its results does, yet two readers measured no
 * faster on two cores shared with other work (and each maps the file). */
enum { DEFAULT_BATCH = 500, QUEUE_CAP = 16, READ_PAGE = 256, READERS = 1 };

typedef struct ready {
    char uuid[STORE_UUID_LEN];
    job_t job;                     /* read and computed by the reader */
} ready_t;

typedef struct bulk {
    store_t *store;
    const char *tenant_id;
    size_t batch;
    /* the queue from the reader to the writer */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    ready_t *queue[QUEUE_CAP];
    size_t head, count;
    bool reader_done;              /* nothing more will be queued */
    int readers_running;
    /* the walk the readers share (under lock) */
    char (*walk)[STORE_UUID_LEN];  /* a page of dirty accounts */
    size_t walk_count, walk_next;
    bool walk_done;                /* the last page was listed (or listing failed) */
    bool stop;                     /* the writer is done or gave up: the others stop */
    size_t commits;                /* batches committed, for the checkpointer */
    store_status_t reader_status;
    recalc_all_result_t reader_spent; /* the readers' times (read after the joins) */
    /* the writer's batch */
    bool exhausted;                /* the reader is done and the queue empty */
    char (*page)[STORE_UUID_LEN];  /* this batch's accounts */
    size_t page_count;
    recalc_all_result_t done;      /* committed */
    recalc_all_result_t pending;   /* this batch */
} bulk_t;

static void ready_free(ready_t *r)
{
    if (r != NULL)
        job_end(&r->job);
    free(r);
}

/* Queues r; false (r not taken) when the writer stopped. */
static bool bulk_push(bulk_t *b, ready_t *r)
{
    pthread_mutex_lock(&b->lock);
    while (b->count == QUEUE_CAP && !b->stop)
        pthread_cond_wait(&b->changed, &b->lock);
    bool taken = !b->stop;
    if (taken) {
        b->queue[(b->head + b->count++) % QUEUE_CAP] = r;
        pthread_cond_broadcast(&b->changed);
    }
    pthread_mutex_unlock(&b->lock);
    return taken;
}

/* The next computed account; NULL once the reader is done and none is left. */
static ready_t *bulk_pop(bulk_t *b)
{
    pthread_mutex_lock(&b->lock);
    while (b->count == 0 && !b->reader_done)
        pthread_cond_wait(&b->changed, &b->lock);
    ready_t *r = NULL;
    if (b->count > 0) {
        r = b->queue[b->head];
        b->head = (b->head + 1) % QUEUE_CAP;
        b->count--;
        pthread_cond_broadcast(&b->changed);
    }
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int take_uuid(const char *uuid, void *ctx)
{
    bulk_t *b = ctx;
    if (strlen(uuid) >= STORE_UUID_LEN)
        return 1;
    strcpy(b->walk[b->walk_count++], uuid);
    return 0;
}

/* The next account of the walk into uuid (listing the next page on conn
 * when this one is used up); false at its end or on a failure (*st). */
static bool walk_next(bulk_t *b, store_conn_t *conn, char uuid[STORE_UUID_LEN],
                      store_status_t *st)
{
    pthread_mutex_lock(&b->lock);
    if (b->walk_next == b->walk_count && !b->walk_done && !b->stop) {
        char cursor[STORE_UUID_LEN] = "";
        if (b->walk_count > 0)
            strcpy(cursor, b->walk[b->walk_count - 1]);
        b->walk_count = b->walk_next = 0;
        *st = store_inv_dirty_page(conn, b->tenant_id, cursor, READ_PAGE, take_uuid, b);
        b->walk_done = *st != STORE_OK || b->walk_count < READ_PAGE;
    }
    bool more = b->walk_next < b->walk_count && !b->stop;
    if (more)
        strcpy(uuid, b->walk[b->walk_next++]);
    pthread_mutex_unlock(&b->lock);
    return more;
}

/* Reads and computes one account on the reader's connection. */
static ready_t *read_one(store_conn_t *conn, const char *uuid, recalc_all_result_t *spent)
{
    ready_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    strcpy(r->uuid, uuid);
    r->job = (job_t){.conn = conn, .account_uuid = r->uuid,
                     .result = {.store = STORE_OK, .arithmetic = DEC_OK}};
    int64_t t0 = clock_monotonic_us();
    r->job.result.store = store_read(conn, load, &r->job);
    int64_t t1 = clock_monotonic_us();
    if (r->job.result.store == STORE_OK && r->job.mark.dirty)
        compute(&r->job);
    spent->read_us += t1 - t0;
    spent->compute_us += clock_monotonic_us() - t1;
    return r;
}

static void *reader_main(void *arg)
{
    bulk_t *b = arg;
    store_status_t st = STORE_ERROR;
    recalc_all_result_t spent = {.store = STORE_OK};
    store_conn_t *conn = store_acquire(b->store);
    if (conn != NULL) {
        st = STORE_OK;
        store_tune_bulk(conn); /* best effort */
        char uuid[STORE_UUID_LEN];
        while (st == STORE_OK && walk_next(b, conn, uuid, &st)) {
            ready_t *r = read_one(conn, uuid, &spent);
            if (r == NULL)
                st = STORE_ERROR;
            else if (!bulk_push(b, r)) {
                ready_free(r);
                break;
            }
        }
        store_release(b->store, conn);
    }
    pthread_mutex_lock(&b->lock);
    b->reader_spent.read_us += spent.read_us;
    b->reader_spent.compute_us += spent.compute_us;
    if (st != STORE_OK) {
        b->reader_status = st;
        b->walk_done = true; /* the other readers finish what they hold */
    }
    b->reader_done = --b->readers_running == 0;
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* The checkpointer: after each commit, a passive checkpoint on a connection
 * of its own, so the writer's commits find the WAL already copied (its
 * autocheckpoint then has little to do) and the copying overlaps the next
 * batch instead of delaying it. */
static void *checkpointer_main(void *arg)
{
    bulk_t *b = arg;
    store_conn_t *conn = store_acquire(b->store);
    size_t seen = 0;
    pthread_mutex_lock(&b->lock);
    while (conn != NULL && !b->stop) {
        if (b->commits == seen) {
            pthread_cond_wait(&b->changed, &b->lock);
            continue;
        }
        seen = b->commits;
        pthread_mutex_unlock(&b->lock);
        store_checkpoint(conn); /* best effort: the writer's autocheckpoint remains */
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    if (conn != NULL)
        store_release(b->store, conn);
    return NULL;
}

static void count_run(recalc_all_result_t *into, const job_t *j)
{
    if (!j->mark.dirty)
        return; /* clean by now: nothing was computed */
    if (j->result.arithmetic != DEC_OK)
        into->failed++;
    else {
        into->accounts++;
        into->transactions += j->loader.added;
    }
}

/* Saves what the reader computed, or, when a write came in since it read
 * the account (or its read failed), reads, computes and saves it again
 * here, inside the batch's write transaction. */
static store_status_t save_ready(store_conn_t *conn, bulk_t *b, ready_t *r)
{
    job_t *j = &r->job;
    if (j->result.store == STORE_OK && (!j->mark.dirty || j->result.arithmetic != DEC_OK)) {
        count_run(&b->pending, j);
        return STORE_OK;
    }
    if (j->result.store == STORE_OK) {
        j->conn = conn;
        store_status_t st = save(j, true);
        if (st == STORE_OK)
            count_run(&b->pending, j);
        if (!j->stale)
            return st;
    }
    job_t again = {.conn = conn, .account_uuid = r->uuid,
                   .result = {.store = STORE_OK, .arithmetic = DEC_OK}};
    store_status_t st = locked_attempt(conn, &again);
    if (st == STORE_OK)
        count_run(&b->pending, &again);
    job_end(&again);
    return st;
}

/* One batch inside its write transaction. */
static store_status_t bulk_batch(store_conn_t *conn, const void *arg)
{
    bulk_t *b = (bulk_t *)arg;
    b->page_count = 0;
    b->pending = (recalc_all_result_t){.store = STORE_OK};
    store_status_t st = STORE_OK;
    while (st == STORE_OK && b->page_count < b->batch) {
        ready_t *r = bulk_pop(b);
        if (r == NULL) {
            b->exhausted = true;
            break;
        }
        strcpy(b->page[b->page_count++], r->uuid);
        int64_t t0 = clock_monotonic_us();
        st = save_ready(conn, b, r);
        b->done.save_us += clock_monotonic_us() - t0;
        ready_free(r);
    }
    return st;
}

/* A batch that failed was rolled back whole: its accounts one by one
 * through the lazy path (which starts over in full when a resumed save
 * fails). */
static store_status_t bulk_retry_page(store_conn_t *conn, bulk_t *b)
{
    for (size_t i = 0; i < b->page_count; i++) {
        store_inv_account_t account = {.dirty = true};
        strcpy(account.uuid, b->page[i]);
        recalc_result_t r = inventory_refresh(conn, &account);
        if (r.store != STORE_OK)
            return r.store;
        if (r.arithmetic != DEC_OK)
            b->done.failed++;
        else
            b->done.accounts++;
    }
    return STORE_OK;
}

recalc_all_result_t inventory_recalc_all(store_t *store, store_conn_t *conn, const char *tenant_id,
                                         size_t batch, void (*between)(size_t done, void *ctx),
                                         void *ctx)
{
    bulk_t b = {.store = store, .tenant_id = tenant_id, .batch = batch ? batch : DEFAULT_BATCH,
                .done = {.store = STORE_OK}, .reader_status = STORE_OK};
    b.page = calloc(b.batch, sizeof *b.page);
    b.walk = calloc(READ_PAGE, sizeof *b.walk);
    pthread_t readers[READERS], checkpointer;
    if (b.page == NULL || b.walk == NULL || pthread_mutex_init(&b.lock, NULL) != 0) {
        free(b.page);
        free(b.walk);
        b.done.store = STORE_ERROR;
        return b.done;
    }
    pthread_cond_init(&b.changed, NULL);
    int started = 0;
    pthread_mutex_lock(&b.lock);
    for (int i = 0; i < READERS; i++)
        if (pthread_create(&readers[started], NULL, reader_main, &b) == 0)
            b.readers_running = ++started;
    b.reader_done = started == 0;
    pthread_mutex_unlock(&b.lock);
    bool checkpointing = pthread_create(&checkpointer, NULL, checkpointer_main, &b) == 0;
    if (started == 0)
        b.done.store = STORE_ERROR;
    while (b.done.store == STORE_OK && !b.exhausted) {
        store_status_t st = store_write(conn, bulk_batch, &b);
        if (st != STORE_OK) {
            b.done.store = bulk_retry_page(conn, &b);
            continue;
        }
        b.done.accounts += b.pending.accounts;
        b.done.transactions += b.pending.transactions;
        b.done.failed += b.pending.failed;
        pthread_mutex_lock(&b.lock);
        b.commits++;
        pthread_cond_broadcast(&b.changed);
        pthread_mutex_unlock(&b.lock);
        if (between != NULL)
            between(b.done.accounts + b.done.failed, ctx);
    }
    pthread_mutex_lock(&b.lock);
    b.stop = true;
    pthread_cond_broadcast(&b.changed);
    pthread_mutex_unlock(&b.lock);
    for (int i = 0; i < started; i++)
        pthread_join(readers[i], NULL);
    if (checkpointing)
        pthread_join(checkpointer, NULL);
    while (b.count > 0) { /* left when the writer gave up */
        ready_free(b.queue[b.head]);
        b.head = (b.head + 1) % QUEUE_CAP;
        b.count--;
    }
    if (b.done.store == STORE_OK)
        b.done.store = b.reader_status;
    b.done.read_us = b.reader_spent.read_us;
    b.done.compute_us = b.reader_spent.compute_us;
    pthread_cond_destroy(&b.changed);
    pthread_mutex_destroy(&b.lock);
    free(b.page);
    free(b.walk);
    return b.done;
}
