/* inventory engine: see engine.h for the rules; this file is how.
 *
 * Lots of an asset live in one array in acquisition order (processing is
 * chronological, so appending keeps that order). A relieved lot keeps its
 * slot with a smaller or zero quantity; summaries skip empty lots.
 *  - FIFO relieves from a head index that only moves forward;
 *  - HIFO keeps a binary heap of the lots with basis, ordered by unit cost
 *    (fixed when the lot is made: a partial relief takes cost in proportion),
 *    then acquisition time, then transaction id, then arrival in the array;
 *    lots without basis are relieved afterwards from their own head index;
 *  - AUSTRIA keeps a pool (quantity with basis, its cost) per asset and
 *    relieves quantities in FIFO order; a piece with basis takes the pool's
 *    average cost.
 * So a whole run costs O(N log N): the sort, plus a heap operation per lot.
 *
 * Seeding puts lots into the same arrays, in seq order, as acquisitions
 * would have (a relieved-out lot left out changes nothing: every cursor and
 * the heap skip empty lots, and HIFO's last tie-break compares seqs, whose
 * order is the same); AUSTRIA lots keep their acquisition cost in lot->cost
 * as acquire does, the pool carrying the held cost.
 *
 * Proceeds and costs shared by several pieces or lines are split in
 * proportion, with the last share taking the remainder, so shares always add
 * up exactly to the whole. */
#include "inventory/engine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/grow.h"


typedef struct tx_rec {
    char *id;
    int64_t datetime_ms;
    domain_tx_type_t type;
    inv_line_t *lines; /* sent, then received, then fees */
    size_t sent_count, received_count, fee_count;
    inv_provided_lot_t *provided;
    size_t provided_count;
} tx_rec_t;

typedef struct lot {
    const char *tx_id;
    int64_t acquired_ms;
    dec_t quantity;
    bool has_basis;
    dec_t cost;
    dec_t unit_cost; /* HIFO order; fixed at acquisition */
    size_t seq;
    dec_t orig_quantity, orig_cost;
} lot_t;

typedef struct asset_state {
    char code[DOMAIN_ASSET_CODE_SIZE];
    lot_t *lots;
    size_t lot_count, lot_cap;
    size_t head;          /* FIFO / AUSTRIA: first lot that may hold quantity */
    size_t nobasis_head;  /* HIFO: first lot without basis that may hold quantity */
    size_t *heap;         /* HIFO: indexes of lots with basis */
    size_t heap_len, heap_cap;
    dec_t pool_quantity;  /* AUSTRIA: quantity with basis */
    dec_t pool_cost;
    size_t next_seq;
    int64_t since_ms;     /* first touched */
    inv_lot_t *out_lots;  /* after the run: held lots, then the whole ledger */
    inv_summary_t summary;
} asset_state_t;

struct inv_engine {
    domain_method_t method;
    inv_method_change_t *schedule; /* sorted by effective_ms */
    size_t schedule_count;
    tx_rec_t *txs;
    size_t tx_count, tx_cap;
    asset_state_t *assets; /* sorted by code after the run */
    size_t asset_count, asset_cap;
    inv_relief_t *reliefs;
    size_t relief_count, relief_cap;
    bool shortfall;
    bool ran;
    int64_t from_ms;       /* no transaction before this (INT64_MIN: none) */
    arena_t *arena;        /* the added transactions' ids and lines */
    char **owned;          /* seeded lots' transaction ids */
    size_t owned_count, owned_cap;
    dec_status_t failure;  /* the first arithmetic failure */
    const char *failed_at; /* the transaction it happened in */
};

/* ---- small helpers ---------------------------------------------------- */

/* Arithmetic that records the first failure and then yields zero, so the
 * processing code reads straight and the run reports the failure once. */
static dec_t noted(inv_engine_t *e, dec_status_t st, dec_t r)
{
    if (st != DEC_OK && e->failure == DEC_OK)
        e->failure = st;
    return r;
}

static dec_t add(inv_engine_t *e, dec_t a, dec_t b)
{
    dec_t r = dec_zero();
    dec_status_t st = dec_add(a, b, &r);
    return noted(e, st, r);
}

static dec_t sub(inv_engine_t *e, dec_t a, dec_t b)
{
    dec_t r = dec_zero();
    dec_status_t st = dec_sub(a, b, &r);
    return noted(e, st, r);
}

/* a x part / whole; whole is never zero where this is called. */
static dec_t share(inv_engine_t *e, dec_t a, dec_t part, dec_t whole)
{
    dec_t r = dec_zero();
    dec_status_t st = dec_mul_div(a, part, whole, &r);
    return noted(e, st, r);
}

static bool is_reporting(const char *asset)
{
    return strcmp(asset, DOMAIN_REPORTING_CURRENCY) == 0;
}

static const char *const RELIEF_KIND_NAMES[] = {
    [INV_RELIEF_DISPOSAL] = "disposal", [INV_RELIEF_TRANSFER] = "transfer",
    [INV_RELIEF_CARRY] = "carry", [INV_RELIEF_CARRY + 1] = NULL};
static const char *const TERM_NAMES[] = {[INV_SHORT_TERM] = "short", [INV_LONG_TERM] = "long",
                                         [INV_LONG_TERM + 1] = NULL};

const char *inv_relief_kind_name(inv_relief_kind_t kind)
{
    return (unsigned)kind <= INV_RELIEF_CARRY ? RELIEF_KIND_NAMES[kind] : "";
}

bool inv_relief_kind_parse(const char *name, inv_relief_kind_t *out)
{
    int i = domain_name_index(RELIEF_KIND_NAMES, name);
    if (i >= 0)
        *out = (inv_relief_kind_t)i;
    return i >= 0;
}

const char *inv_term_name(inv_term_t term)
{
    return (unsigned)term <= INV_LONG_TERM ? TERM_NAMES[term] : "";
}

bool inv_term_parse(const char *name, inv_term_t *out)
{
    int i = domain_name_index(TERM_NAMES, name);
    if (i >= 0)
        *out = (inv_term_t)i;
    return i >= 0;
}

static const char *const ORIGIN_NAMES[] = {
    [INV_LOT_ACQUIRED] = "acquired", [INV_LOT_TRANSFER] = "transfer",
    [INV_LOT_PROVIDED] = "provided", [INV_LOT_PROVIDED + 1] = NULL};

const char *inv_lot_origin_name(inv_lot_origin_t origin)
{
    return (unsigned)origin <= INV_LOT_PROVIDED ? ORIGIN_NAMES[origin] : "";
}

bool inv_lot_origin_parse(const char *name, inv_lot_origin_t *out)
{
    int i = domain_name_index(ORIGIN_NAMES, name);
    if (i >= 0)
        *out = (inv_lot_origin_t)i;
    return i >= 0;
}

/* (acquired_ms, seq) ascending: FIFO's order and every method's last tie-break. */
static int by_date(int64_t a_ms, size_t a_seq, int64_t b_ms, size_t b_seq)
{
    if (a_ms != b_ms)
        return a_ms < b_ms ? -1 : 1;
    if (a_seq != b_seq)
        return a_seq < b_seq ? -1 : 1;
    return 0;
}

/* Unit cost at 18 digits (a derived value, not money); zero when the
 * quantity is zero or the quotient overflows (never for stored lots). */
static dec_t unit_cost_of(dec_t cost, dec_t quantity)
{
    dec_t r = dec_zero();
    if (!dec_is_zero(quantity) && dec_mul_div(cost, dec_from_int(1), quantity, &r) != DEC_OK)
        r = dec_zero();
    return r;
}

/* The method order of two lots given their unit costs (meaningful with basis). */
static int order_of(domain_method_t method, bool a_basis, dec_t a_unit, int64_t a_ms, size_t a_seq,
                    bool b_basis, dec_t b_unit, int64_t b_ms, size_t b_seq)
{
    switch (method) {
    case DOMAIN_METHOD_LIFO:
        return -by_date(a_ms, a_seq, b_ms, b_seq);
    case DOMAIN_METHOD_HIFO:
    case DOMAIN_METHOD_LOFO:
        if (a_basis != b_basis)
            return a_basis ? -1 : 1;
        if (a_basis) {
            int c = dec_cmp(a_unit, b_unit);
            if (c != 0)
                return method == DOMAIN_METHOD_HIFO ? -c : c;
        }
        return by_date(a_ms, a_seq, b_ms, b_seq);
    default: /* FIFO, AUSTRIA */
        return by_date(a_ms, a_seq, b_ms, b_seq);
    }
}

int inv_lot_compare(domain_method_t method, const inv_lot_t *a, const inv_lot_t *b)
{
    bool by_cost = method == DOMAIN_METHOD_HIFO || method == DOMAIN_METHOD_LOFO;
    dec_t ua = dec_zero(), ub = dec_zero();
    if (by_cost && a->has_basis && b->has_basis) {
        ua = unit_cost_of(a->orig_cost, a->orig_quantity);
        ub = unit_cost_of(b->orig_cost, b->orig_quantity);
    }
    return order_of(method, a->has_basis, ua, a->acquired_ms, a->seq, b->has_basis, ub,
                    b->acquired_ms, b->seq);
}

bool inv_line_value(const inv_line_t *line, dec_t *value, dec_status_t *st)
{
    *st = DEC_OK;
    if (is_reporting(line->asset)) {
        *value = line->amount;
        return true;
    }
    if (!line->has_rate)
        return false;
    *value = dec_zero();
    *st = dec_mul(line->amount, line->usd_rate, value);
    return true;
}

/* A line's USD value, when known. */
static bool line_value(inv_engine_t *e, const inv_line_t *line, dec_t *value)
{
    dec_status_t st;
    if (!inv_line_value(line, value, &st))
        return false;
    noted(e, st, *value);
    return true;
}

/* The sum of the lines' USD values, when every one is known. */
static bool lines_value(inv_engine_t *e, const inv_line_t *lines, size_t n, dec_t *total)
{
    *total = dec_zero();
    for (size_t i = 0; i < n; i++) {
        dec_t v;
        if (!line_value(e, &lines[i], &v))
            return false;
        *total = add(e, *total, v);
    }
    return true;
}

static size_t tracked_count(const inv_line_t *lines, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += !is_reporting(lines[i].asset);
    return count;
}

/* Long term when relieved after the first anniversary of the acquisition. */
static inv_term_t holding_term(int64_t acquired_ms, int64_t relieved_ms)
{
    time_t secs = (time_t)(acquired_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    tm.tm_year += 1;
    int64_t anniversary = (int64_t)timegm(&tm) * 1000 + acquired_ms % 1000;
    return relieved_ms > anniversary ? INV_LONG_TERM : INV_SHORT_TERM;
}

/* ---- engine life ------------------------------------------------------ */

inv_engine_t *inv_engine_new(domain_method_t method)
{
    inv_engine_t *e = calloc(1, sizeof *e);
    if (e != NULL) {
        e->method = method;
        e->from_ms = INT64_MIN;
        e->arena = arena_new(16384);
        if (e->arena == NULL) {
            free(e);
            return NULL;
        }
    }
    return e;
}

void inv_engine_free(inv_engine_t *engine)
{
    if (engine == NULL)
        return;
    arena_free(engine->arena);
    for (size_t i = 0; i < engine->asset_count; i++) {
        free(engine->assets[i].lots);
        free(engine->assets[i].heap);
        free(engine->assets[i].out_lots);
    }
    for (size_t i = 0; i < engine->owned_count; i++)
        free(engine->owned[i]);
    free(engine->owned);
    free(engine->schedule);
    free(engine->txs);
    free(engine->assets);
    free(engine->reliefs);
    free(engine);
}

int inv_engine_set_schedule(inv_engine_t *engine, const inv_method_change_t *changes, size_t n)
{
    if (engine->ran || engine->tx_count > 0 || engine->method == DOMAIN_METHOD_AUSTRIA)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (changes[i].method == DOMAIN_METHOD_AUSTRIA ||
            (unsigned)changes[i].method >= DOMAIN_METHOD_COUNT ||
            (i > 0 && changes[i].effective_ms <= changes[i - 1].effective_ms))
            return -1;
    inv_method_change_t *copy = NULL;
    if (n > 0) {
        copy = malloc(n * sizeof *copy);
        if (copy == NULL)
            return -1;
        memcpy(copy, changes, n * sizeof *copy);
    }
    free(engine->schedule);
    engine->schedule = copy;
    engine->schedule_count = n;
    return 0;
}

static bool lines_valid(const inv_line_t *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (dec_cmp(lines[i].amount, dec_zero()) <= 0 || lines[i].asset[0] == '\0')
            return false;
    return true;
}

int inv_engine_add(inv_engine_t *engine, const inv_tx_t *tx)
{
    if (engine->ran || tx->datetime_ms < engine->from_ms ||
        !lines_valid(tx->sent, tx->sent_count) ||
        !lines_valid(tx->received, tx->received_count) || !lines_valid(tx->fees, tx->fee_count))
        return -1;
    tx_rec_t *grown =
        grow_array(engine->txs, &engine->tx_cap, engine->tx_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return -1;
    engine->txs = grown;
    size_t n = tx->sent_count + tx->received_count + tx->fee_count;
    tx_rec_t rec = {.datetime_ms = tx->datetime_ms, .type = tx->type,
                    .sent_count = tx->sent_count, .received_count = tx->received_count,
                    .fee_count = tx->fee_count};
    /* one arena for every transaction: no allocation per transaction */
    rec.id = arena_strndup(engine->arena, tx->id, strlen(tx->id));
    rec.lines = arena_alloc(engine->arena, (n ? n : 1) * sizeof *rec.lines);
    if (rec.id == NULL || rec.lines == NULL)
        return -1;
    if (tx->sent_count)
        memcpy(rec.lines, tx->sent, tx->sent_count * sizeof *rec.lines);
    if (tx->received_count)
        memcpy(rec.lines + tx->sent_count, tx->received, tx->received_count * sizeof *rec.lines);
    if (tx->fee_count)
        memcpy(rec.lines + tx->sent_count + tx->received_count, tx->fees,
               tx->fee_count * sizeof *rec.lines);
    if (tx->provided_count > 0) {
        rec.provided = arena_alloc(engine->arena, tx->provided_count * sizeof *rec.provided);
        if (rec.provided == NULL)
            return -1;
        memcpy(rec.provided, tx->provided, tx->provided_count * sizeof *rec.provided);
        rec.provided_count = tx->provided_count;
    }
    engine->txs[engine->tx_count++] = rec;
    return 0;
}

/* ---- asset state ------------------------------------------------------ */

static asset_state_t *asset_lookup(inv_engine_t *e, const char *code)
{
    for (size_t i = 0; i < e->asset_count; i++)
        if (strcmp(e->assets[i].code, code) == 0)
            return &e->assets[i];
    return NULL;
}

/* The asset's state, made when `when` first touches it. */
static asset_state_t *asset_find(inv_engine_t *e, const char *code, int64_t when)
{
    asset_state_t *a = asset_lookup(e, code);
    if (a != NULL)
        return a;
    if (strlen(code) >= sizeof a->code)
        return NULL;
    asset_state_t *grown =
        grow_array(e->assets, &e->asset_cap, e->asset_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return NULL;
    e->assets = grown;
    a = &e->assets[e->asset_count++];
    memset(a, 0, sizeof *a);
    strcpy(a->code, code);
    a->since_ms = when;
    return a;
}

/* HIFO heap order: true when lot x must be relieved before lot y. */
static bool hifo_before(const lot_t *x, const lot_t *y)
{
    int c = dec_cmp(x->unit_cost, y->unit_cost);
    if (c != 0)
        return c > 0;
    if (x->acquired_ms != y->acquired_ms)
        return x->acquired_ms < y->acquired_ms;
    int id = strcmp(x->tx_id, y->tx_id);
    if (id != 0)
        return id < 0;
    return x->seq < y->seq;
}

static void heap_swap(size_t *h, size_t i, size_t j)
{
    size_t t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_up(asset_state_t *a, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!hifo_before(&a->lots[a->heap[i]], &a->lots[a->heap[parent]]))
            return;
        heap_swap(a->heap, i, parent);
        i = parent;
    }
}

static void heap_down(asset_state_t *a, size_t i)
{
    for (;;) {
        size_t best = i, l = 2 * i + 1, r = l + 1;
        if (l < a->heap_len && hifo_before(&a->lots[a->heap[l]], &a->lots[a->heap[best]]))
            best = l;
        if (r < a->heap_len && hifo_before(&a->lots[a->heap[r]], &a->lots[a->heap[best]]))
            best = r;
        if (best == i)
            return;
        heap_swap(a->heap, i, best);
        i = best;
    }
}

/* Appends a lot to the asset's array (and HIFO's heap). */
static int lot_append(inv_engine_t *e, asset_state_t *a, const lot_t *in)
{
    lot_t *lots = grow_array(a->lots, &a->lot_cap, a->lot_count + 1, sizeof *lots, 16);
    if (lots == NULL)
        return -1;
    a->lots = lots;
    size_t index = a->lot_count++;
    lot_t *lot = &a->lots[index];
    *lot = *in;
    if (lot->has_basis && e->method == DOMAIN_METHOD_HIFO) {
        /* fixed at acquisition: from what the lot was acquired with */
        lot->unit_cost = share(e, lot->orig_cost, dec_from_int(1), lot->orig_quantity);
        size_t *heap = grow_array(a->heap, &a->heap_cap, a->heap_len + 1, sizeof *heap, 16);
        if (heap == NULL)
            return -1;
        a->heap = heap;
        a->heap[a->heap_len++] = index;
        heap_up(a, a->heap_len - 1);
    }
    return 0;
}

static int acquire(inv_engine_t *e, const char *asset, const tx_rec_t *tx, dec_t quantity,
                   bool has_basis, dec_t cost)
{
    asset_state_t *a = asset_find(e, asset, tx->datetime_ms);
    if (a == NULL)
        return -1;
    lot_t lot = {.tx_id = tx->id, .acquired_ms = tx->datetime_ms, .quantity = quantity,
                 .has_basis = has_basis, .cost = has_basis ? cost : dec_zero(),
                 .seq = a->next_seq++, .orig_quantity = quantity,
                 .orig_cost = has_basis ? cost : dec_zero()};
    if (lot_append(e, a, &lot) != 0)
        return -1;
    if (has_basis && e->method == DOMAIN_METHOD_AUSTRIA) {
        a->pool_quantity = add(e, a->pool_quantity, quantity);
        a->pool_cost = add(e, a->pool_cost, cost);
    }
    return 0;
}

/* ---- relief ----------------------------------------------------------- */

typedef struct relief_ctx {
    const tx_rec_t *tx;
    const char *asset;
    inv_relief_kind_t kind;
    bool has_proceeds;
    dec_t proceeds;      /* of the whole relief */
    dec_t total;         /* quantity of the whole relief */
    dec_t proceeds_left; /* not yet given to a piece */
    dec_t quantity_left;
    dec_t cost_relieved; /* sum of the pieces' cost with basis */
} relief_ctx_t;

static int record_piece(inv_engine_t *e, relief_ctx_t *c, const lot_t *lot, dec_t quantity,
                        bool has_basis, dec_t cost)
{
    inv_relief_t *grown =
        grow_array(e->reliefs, &e->relief_cap, e->relief_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return -1;
    e->reliefs = grown;
    c->quantity_left = sub(e, c->quantity_left, quantity);
    inv_relief_t r = {.kind = c->kind, .tx_id = c->tx->id, .asset = c->asset,
                      .datetime_ms = c->tx->datetime_ms, .quantity = quantity,
                      .has_basis = has_basis, .cost = has_basis ? cost : dec_zero()};
    if (lot != NULL) {
        r.lot_tx_id = lot->tx_id;
        r.acquired_ms = lot->acquired_ms;
        r.lot_seq = lot->seq;
        r.term = holding_term(lot->acquired_ms, c->tx->datetime_ms);
    }
    if (c->kind == INV_RELIEF_DISPOSAL && c->has_proceeds) {
        r.has_proceeds = true;
        /* the last piece takes what is left, so the shares add up exactly */
        r.proceeds = dec_is_zero(c->quantity_left) ? c->proceeds_left
                                                   : share(e, c->proceeds, quantity, c->total);
        c->proceeds_left = sub(e, c->proceeds_left, r.proceeds);
    }
    if (has_basis)
        c->cost_relieved = add(e, c->cost_relieved, r.cost);
    e->reliefs[e->relief_count++] = r;
    return 0;
}

/* Takes up to *need from one lot (FIFO and HIFO: the lot's own cost). */
static int take_from_lot(inv_engine_t *e, relief_ctx_t *c, lot_t *lot, dec_t *need)
{
    dec_t q = dec_cmp(lot->quantity, *need) <= 0 ? lot->quantity : *need;
    dec_t cost = dec_zero();
    if (lot->has_basis)
        cost = dec_cmp(q, lot->quantity) == 0 ? lot->cost : share(e, lot->cost, q, lot->quantity);
    lot->quantity = sub(e, lot->quantity, q);
    lot->cost = sub(e, lot->cost, cost);
    *need = sub(e, *need, q);
    return record_piece(e, c, lot, q, lot->has_basis, cost);
}

/* AUSTRIA: quantities leave in FIFO order, cost at the pool's average. */
static int take_from_pool(inv_engine_t *e, relief_ctx_t *c, asset_state_t *a, lot_t *lot,
                          dec_t *need)
{
    dec_t q = dec_cmp(lot->quantity, *need) <= 0 ? lot->quantity : *need;
    dec_t cost = dec_zero();
    if (lot->has_basis) {
        cost = dec_cmp(q, a->pool_quantity) == 0 ? a->pool_cost
                                                 : share(e, a->pool_cost, q, a->pool_quantity);
        a->pool_quantity = sub(e, a->pool_quantity, q);
        a->pool_cost = sub(e, a->pool_cost, cost);
    }
    lot->quantity = sub(e, lot->quantity, q);
    *need = sub(e, *need, q);
    return record_piece(e, c, lot, q, lot->has_basis, cost);
}

static lot_t *next_in_order(asset_state_t *a, size_t *cursor, bool basis_only_skip)
{
    while (*cursor < a->lot_count) {
        lot_t *lot = &a->lots[*cursor];
        bool usable = !dec_is_zero(lot->quantity) && !(basis_only_skip && lot->has_basis);
        if (usable)
            return lot;
        (*cursor)++;
    }
    return NULL;
}

static lot_t *hifo_top(asset_state_t *a)
{
    while (a->heap_len > 0) {
        lot_t *top = &a->lots[a->heap[0]];
        if (!dec_is_zero(top->quantity))
            return top;
        a->heap[0] = a->heap[--a->heap_len];
        heap_down(a, 0);
    }
    return NULL;
}

static int relieve(inv_engine_t *e, relief_ctx_t *c)
{
    asset_state_t *a = asset_find(e, c->asset, c->tx->datetime_ms);
    if (a == NULL)
        return -1;
    dec_t need = c->total;
    c->quantity_left = c->total;
    c->proceeds_left = c->proceeds;
    c->cost_relieved = dec_zero();
    while (!dec_is_zero(need) && e->failure == DEC_OK) {
        lot_t *lot;
        int rc;
        if (e->method == DOMAIN_METHOD_HIFO) {
            lot = hifo_top(a);
            if (lot == NULL)
                lot = next_in_order(a, &a->nobasis_head, true);
        } else {
            lot = next_in_order(a, &a->head, false);
        }
        if (lot == NULL)
            break;
        rc = e->method == DOMAIN_METHOD_AUSTRIA ? take_from_pool(e, c, a, lot, &need)
                                      : take_from_lot(e, c, lot, &need);
        if (rc != 0)
            return -1;
    }
    if (!dec_is_zero(need) && e->failure == DEC_OK) {
        e->shortfall = true;
        return record_piece(e, c, NULL, need, false, dec_zero());
    }
    return 0;
}

/* ---- per transaction type -------------------------------------------- */

/* Splits whole across lines in proportion to their own values when all are
 * known, else to their amounts (the last line takes the remainder). */
static dec_t line_share(inv_engine_t *e, const inv_line_t *lines, size_t n, size_t i, dec_t whole,
                        dec_t *given)
{
    if (i + 1 == n)
        return sub(e, whole, *given);
    dec_t part = lines[i].amount, total = dec_zero(), v;
    bool by_value = lines_value(e, lines, n, &total);
    if (by_value && !dec_is_zero(total) && line_value(e, &lines[i], &v)) {
        part = v;
    } else {
        total = dec_zero();
        for (size_t k = 0; k < n; k++)
            total = add(e, total, lines[k].amount);
    }
    dec_t s = share(e, whole, part, total);
    *given = add(e, *given, s);
    return s;
}

/* Fee lines in a tracked asset are disposed of at their own value. */
static int dispose_fee_assets(inv_engine_t *e, const tx_rec_t *tx, const inv_line_t *fees,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (is_reporting(fees[i].asset))
            continue;
        relief_ctx_t c = {.tx = tx, .asset = fees[i].asset, .kind = INV_RELIEF_DISPOSAL,
                          .total = fees[i].amount};
        c.has_proceeds = line_value(e, &fees[i], &c.proceeds);
        if (relieve(e, &c) != 0)
            return -1;
    }
    return 0;
}

static int process_deposit_or_income(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *received = tx->lines + tx->sent_count;
    for (size_t i = 0; i < tx->received_count; i++) {
        if (is_reporting(received[i].asset))
            continue;
        dec_t value = dec_zero();
        bool known = tx->type == DOMAIN_TX_INCOME && line_value(e, &received[i], &value);
        if (acquire(e, received[i].asset, tx, received[i].amount, known, value) != 0)
            return -1;
    }
    return dispose_fee_assets(e, tx, tx->lines + tx->sent_count + tx->received_count,
                              tx->fee_count);
}

/* Withdraw (a transfer out) or expense (a disposal at the lines' value). */
static int process_outgoing(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *sent = tx->lines;
    for (size_t i = 0; i < tx->sent_count; i++) {
        if (is_reporting(sent[i].asset))
            continue;
        relief_ctx_t c = {.tx = tx, .asset = sent[i].asset, .total = sent[i].amount,
                          .kind = tx->type == DOMAIN_TX_WITHDRAW ? INV_RELIEF_TRANSFER
                                                           : INV_RELIEF_DISPOSAL};
        if (tx->type == DOMAIN_TX_EXPENSE)
            c.has_proceeds = line_value(e, &sent[i], &c.proceeds);
        if (relieve(e, &c) != 0)
            return -1;
    }
    return dispose_fee_assets(e, tx, tx->lines + tx->sent_count + tx->received_count,
                              tx->fee_count);
}

typedef struct trade_values {
    bool has_fees;
    dec_t fees;
    bool has_given;     /* the USD value of what was given (sent) */
    dec_t given;
    bool has_got;       /* the USD value of what was received */
    dec_t got;
} trade_values_t;

static trade_values_t trade_values(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *sent = tx->lines, *received = tx->lines + tx->sent_count;
    trade_values_t v = {0};
    v.has_fees = lines_value(e, tx->lines + tx->sent_count + tx->received_count, tx->fee_count,
                             &v.fees);
    if (!v.has_fees)
        v.fees = dec_zero(); /* a fee without a known value adds nothing */
    v.has_given = lines_value(e, sent, tx->sent_count, &v.given);
    v.has_got = lines_value(e, received, tx->received_count, &v.got);
    return v;
}

static int trade_dispose(inv_engine_t *e, const tx_rec_t *tx, const trade_values_t *v,
                         bool carry, dec_t *carried_cost)
{
    const inv_line_t *sent = tx->lines;
    size_t tracked_received = tracked_count(tx->lines + tx->sent_count, tx->received_count);
    bool has_proceeds = v->has_got || v->has_given;
    dec_t proceeds = v->has_got ? v->got : v->given;
    if (has_proceeds && tracked_received == 0) /* a sale: the fees reduce the proceeds */
        proceeds = sub(e, proceeds, v->fees);
    dec_t given = dec_zero();
    *carried_cost = dec_zero();
    for (size_t i = 0; i < tx->sent_count; i++) {
        dec_t part = line_share(e, sent, tx->sent_count, i, proceeds, &given);
        if (is_reporting(sent[i].asset))
            continue;
        relief_ctx_t c = {.tx = tx, .asset = sent[i].asset, .total = sent[i].amount,
                          .kind = carry ? INV_RELIEF_CARRY : INV_RELIEF_DISPOSAL,
                          .has_proceeds = has_proceeds && !carry, .proceeds = part};
        if (relieve(e, &c) != 0)
            return -1;
        *carried_cost = add(e, *carried_cost, c.cost_relieved);
    }
    return 0;
}

static int trade_acquire(inv_engine_t *e, const tx_rec_t *tx, const trade_values_t *v,
                         bool carry, dec_t carried_cost)
{
    const inv_line_t *received = tx->lines + tx->sent_count;
    bool has_cost = carry || v->has_given || v->has_got;
    dec_t cost = carry ? carried_cost : v->has_given ? v->given : v->got;
    cost = add(e, cost, v->fees);
    dec_t given = dec_zero();
    for (size_t i = 0; i < tx->received_count; i++) {
        dec_t part = line_share(e, received, tx->received_count, i, cost, &given);
        if (is_reporting(received[i].asset))
            continue;
        if (acquire(e, received[i].asset, tx, received[i].amount, has_cost, part) != 0)
            return -1;
    }
    return 0;
}

static int process_trade(inv_engine_t *e, const tx_rec_t *tx)
{
    trade_values_t v = trade_values(e, tx);
    size_t tracked_sent = tracked_count(tx->lines, tx->sent_count);
    size_t tracked_received = tracked_count(tx->lines + tx->sent_count, tx->received_count);
    bool carry = e->method == DOMAIN_METHOD_AUSTRIA && tracked_sent == tx->sent_count &&
                 tracked_received == tx->received_count && tracked_sent > 0 &&
                 tracked_received > 0;
    dec_t carried = dec_zero();
    if (dispose_fee_assets(e, tx, tx->lines + tx->sent_count + tx->received_count,
                           tx->fee_count) != 0 ||
        trade_dispose(e, tx, &v, carry, &carried) != 0)
        return -1;
    return trade_acquire(e, tx, &v, carry, carried);
}

/* ---- the run ---------------------------------------------------------- */

static int compare_tx(const void *pa, const void *pb)
{
    const tx_rec_t *a = pa, *b = pb;
    if (a->datetime_ms != b->datetime_ms)
        return a->datetime_ms < b->datetime_ms ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    return strcmp(a->id, b->id);
}

/* Sorts the transactions into processing order. The store hands them over in
 * datetime order already (store/transactions.h), so this is one pass that
 * checks the order plus a sort of each run of equal datetimes that is out of
 * order (types and ids at one instant); any other input is sorted whole. */
static void sort_txs(tx_rec_t *txs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (txs[i].datetime_ms < txs[i - 1].datetime_ms) {
            qsort(txs, n, sizeof *txs, compare_tx);
            return;
        }
    for (size_t start = 0, end; start < n; start = end) {
        bool sorted = true;
        for (end = start + 1; end < n && txs[end].datetime_ms == txs[start].datetime_ms; end++)
            sorted = sorted && compare_tx(&txs[end - 1], &txs[end]) < 0;
        if (!sorted)
            qsort(txs + start, end - start, sizeof *txs, compare_tx);
    }
}

static int compare_assets(const void *pa, const void *pb)
{
    return strcmp(((const asset_state_t *)pa)->code, ((const asset_state_t *)pb)->code);
}

/* A lot as the results show it: AUSTRIA lots hold their share of the pool. */
static inv_lot_t lot_out(inv_engine_t *e, const asset_state_t *a, const lot_t *lot)
{
    inv_lot_t out = {.tx_id = lot->tx_id, .acquired_ms = lot->acquired_ms, .seq = lot->seq,
                     .quantity = lot->quantity, .has_basis = lot->has_basis, .cost = lot->cost,
                     .orig_quantity = lot->orig_quantity, .orig_cost = lot->orig_cost};
    if (lot->has_basis && e->method == DOMAIN_METHOD_AUSTRIA)
        out.cost = dec_is_zero(lot->quantity)
                       ? dec_zero()
                       : share(e, a->pool_cost, lot->quantity, a->pool_quantity);
    return out;
}

static int summarise(inv_engine_t *e, asset_state_t *a)
{
    inv_summary_t *s = &a->summary;
    *s = (inv_summary_t){.asset = a->code, .since_ms = a->since_ms};
    size_t n = a->lot_count ? a->lot_count : 1;
    a->out_lots = malloc(2 * n * sizeof *a->out_lots);
    if (a->out_lots == NULL)
        return -1;
    inv_lot_t *ledger = a->out_lots + n;
    for (size_t i = 0; i < a->lot_count; i++) {
        const lot_t *lot = &a->lots[i];
        inv_lot_t out = lot_out(e, a, lot);
        ledger[i] = out;
        if (dec_is_zero(lot->quantity))
            continue;
        a->out_lots[s->lot_count++] = out;
        s->total_quantity = add(e, s->total_quantity, lot->quantity);
        if (lot->has_basis && e->method != DOMAIN_METHOD_AUSTRIA) {
            s->total_cost = add(e, s->total_cost, lot->cost);
            s->quantity_with_basis = add(e, s->quantity_with_basis, lot->quantity);
        }
        if (e->failure != DEC_OK) { /* the holding itself is out of range */
            e->failed_at = lot->tx_id;
            return 0;
        }
    }
    if (e->method == DOMAIN_METHOD_AUSTRIA) {
        s->total_cost = a->pool_cost;
        s->quantity_with_basis = a->pool_quantity;
    }
    s->lots = a->out_lots;
    s->ledger = ledger;
    s->ledger_count = a->lot_count;
    s->has_average = !dec_is_zero(s->quantity_with_basis);
    if (s->has_average)
        s->average_unit_cost = share(e, s->total_cost, dec_from_int(1), s->quantity_with_basis);
    return 0;
}

/* ---- seeding ---------------------------------------------------------- */

int inv_engine_start_at(inv_engine_t *engine, int64_t from_ms)
{
    if (engine->ran || engine->tx_count > 0)
        return -1;
    engine->from_ms = from_ms;
    return 0;
}

int inv_engine_seed_asset(inv_engine_t *engine, const inv_seed_asset_t *seed)
{
    if (engine->ran || engine->tx_count > 0 || asset_lookup(engine, seed->asset) != NULL)
        return -1;
    asset_state_t *a = asset_find(engine, seed->asset, seed->since_ms);
    if (a == NULL)
        return -1;
    a->next_seq = seed->next_seq;
    if (engine->method == DOMAIN_METHOD_AUSTRIA) {
        a->pool_quantity = seed->pool_quantity;
        a->pool_cost = seed->pool_cost;
    }
    return 0;
}

/* An engine-owned copy of a seeded lot's transaction id. */
static const char *own(inv_engine_t *e, const char *text)
{
    char **grown = grow_array(e->owned, &e->owned_cap, e->owned_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return NULL;
    e->owned = grown;
    char *copy = strdup(text);
    if (copy != NULL)
        e->owned[e->owned_count++] = copy;
    return copy;
}

int inv_engine_seed_lot(inv_engine_t *engine, const char *asset, const inv_lot_t *in)
{
    asset_state_t *a = asset_lookup(engine, asset);
    if (engine->ran || engine->tx_count > 0 || a == NULL || in->seq >= a->next_seq ||
        (a->lot_count > 0 && a->lots[a->lot_count - 1].seq >= in->seq) ||
        dec_cmp(in->quantity, dec_zero()) <= 0 || dec_cmp(in->orig_quantity, dec_zero()) <= 0)
        return -1;
    lot_t lot = {.acquired_ms = in->acquired_ms, .quantity = in->quantity,
                 .has_basis = in->has_basis, .seq = in->seq, .orig_quantity = in->orig_quantity,
                 .orig_cost = in->has_basis ? in->orig_cost : dec_zero()};
    /* AUSTRIA keeps the acquisition cost on the lot (the pool holds the rest) */
    if (in->has_basis)
        lot.cost = engine->method == DOMAIN_METHOD_AUSTRIA ? in->orig_cost : in->cost;
    lot.tx_id = own(engine, in->tx_id);
    if (lot.tx_id == NULL || lot_append(engine, a, &lot) != 0)
        return -1;
    return engine->failure == DEC_OK ? 0 : -1;
}

dec_status_t inv_engine_run(inv_engine_t *engine, const char **failed_tx)
{
    *failed_tx = NULL;
    if (engine->ran)
        return DEC_OK;
    engine->ran = true;
    sort_txs(engine->txs, engine->tx_count);
    for (size_t i = 0; i < engine->tx_count; i++) {
        const tx_rec_t *tx = &engine->txs[i];
        int rc;
        if (tx->type == DOMAIN_TX_TRADE)
            rc = process_trade(engine, tx);
        else if (tx->type == DOMAIN_TX_DEPOSIT || tx->type == DOMAIN_TX_INCOME)
            rc = process_deposit_or_income(engine, tx);
        else
            rc = process_outgoing(engine, tx);
        if (rc != 0 && engine->failure == DEC_OK)
            engine->failure = DEC_RANGE; /* out of memory: reported as a failed run */
        if (engine->failure != DEC_OK) {
            *failed_tx = tx->id;
            return engine->failure;
        }
    }
    if (engine->asset_count > 1)
        qsort(engine->assets, engine->asset_count, sizeof *engine->assets, compare_assets);
    for (size_t i = 0; i < engine->asset_count && engine->failure == DEC_OK; i++)
        if (summarise(engine, &engine->assets[i]) != 0 && engine->failure == DEC_OK)
            engine->failure = DEC_RANGE;
    *failed_tx = engine->failed_at;
    return engine->failure;
}

/* ---- results ---------------------------------------------------------- */

size_t inv_summary_count(const inv_engine_t *engine)
{
    return engine->asset_count;
}

const inv_summary_t *inv_summary(const inv_engine_t *engine, size_t index)
{
    return index < engine->asset_count ? &engine->assets[index].summary : NULL;
}

const inv_summary_t *inv_summary_of(const inv_engine_t *engine, const char *asset)
{
    for (size_t i = 0; i < engine->asset_count; i++)
        if (strcmp(engine->assets[i].code, asset) == 0)
            return &engine->assets[i].summary;
    return NULL;
}

size_t inv_relief_count(const inv_engine_t *engine)
{
    return engine->relief_count;
}

const inv_relief_t *inv_relief(const inv_engine_t *engine, size_t index)
{
    return index < engine->relief_count ? &engine->reliefs[index] : NULL;
}

bool inv_engine_had_shortfall(const inv_engine_t *engine)
{
    return engine->shortfall;
}
