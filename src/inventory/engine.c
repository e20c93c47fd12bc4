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
    int64_t entered_ms;
    inv_lot_origin_t origin;
    dec_t quantity;
    bool has_basis;
    dec_t cost;
    dec_t unit_cost; /* HIFO and LOFO order; fixed at acquisition */
    size_t seq;
    dec_t orig_quantity, orig_cost;
} lot_t;

/* A binary heap of lot indexes in one method's order; lots relieved out
 * stay until they reach the top (lazy deletion). */
typedef struct lot_heap {
    size_t *idx;
    size_t len, cap;
} lot_heap_t;

typedef struct asset_state {
    char code[DOMAIN_ASSET_CODE_SIZE];
    lot_t *lots;
    size_t lot_count, lot_cap;
    size_t head;          /* FIFO / AUSTRIA in array order: first lot that may hold quantity */
    bool in_order;        /* the array is in (acquired_ms, seq) order */
    int64_t max_acquired_ms;
    lot_heap_t heaps[DOMAIN_METHOD_COUNT]; /* per method used (FIFO: once out of order) */
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
    size_t schedule_pos;           /* changes in force so far (processing is chronological) */
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

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil): integer arithmetic, no time zone, no struct tm. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* The UTC date of an instant (days_from_civil's inverse). */
static void civil_from_ms(int64_t ms, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = (ms >= 0 ? ms : ms - 86399999) / 86400000 + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

inv_term_t inv_holding_term(int64_t acquired_ms, int64_t disposed_ms)
{
    int64_t y;
    unsigned m, d;
    civil_from_ms(acquired_ms, &y, &m, &d);
    if (m == 2 && d == 29) /* no Feb 29 a year later: its anniversary is Feb 28 */
        d = 28;
    int64_t anniversary = days_from_civil(y + 1, m, d);
    int64_t disposed = (disposed_ms >= 0 ? disposed_ms : disposed_ms - 86399999) / 86400000;
    return disposed > anniversary ? INV_LONG_TERM : INV_SHORT_TERM;
}

/* Money's one rounding (dec_round_cents: half up); a failure is noted. */
static dec_t cents(inv_engine_t *e, dec_t a)
{
    dec_t r = dec_zero();
    dec_status_t st = dec_round_cents(a, &r);
    return noted(e, st, r);
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
        for (size_t m = 0; m < DOMAIN_METHOD_COUNT; m++)
            free(engine->assets[i].heaps[m].idx);
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
    if (engine->ran || engine->tx_count > 0 || engine->asset_count > 0 ||
        engine->method == DOMAIN_METHOD_AUSTRIA)
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

static bool provided_valid(const inv_provided_lot_t *lots, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (dec_cmp(lots[i].quantity, dec_zero()) <= 0 || dec_is_negative(lots[i].cost) ||
            lots[i].asset[0] == '\0')
            return false;
    return true;
}

int inv_engine_add(inv_engine_t *engine, const inv_tx_t *tx)
{
    if (engine->ran || tx->datetime_ms < engine->from_ms ||
        !lines_valid(tx->sent, tx->sent_count) ||
        !lines_valid(tx->received, tx->received_count) || !lines_valid(tx->fees, tx->fee_count) ||
        !provided_valid(tx->provided, tx->provided_count))
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
    a->in_order = true;
    a->max_acquired_ms = INT64_MIN;
    return a;
}

/* The methods whose order some relief may need: the engine's own and the
 * schedule's. AUSTRIA relieves quantities in FIFO order. */
static bool method_used(const inv_engine_t *e, domain_method_t m)
{
    domain_method_t own = e->method == DOMAIN_METHOD_AUSTRIA ? DOMAIN_METHOD_FIFO : e->method;
    if (own == m)
        return true;
    for (size_t i = 0; i < e->schedule_count; i++)
        if (e->schedule[i].method == m)
            return true;
    return false;
}

/* The method in force at a datetime. Processing is chronological, so a
 * cursor that only moves forward finds it. */
static domain_method_t method_at(inv_engine_t *e, int64_t when)
{
    while (e->schedule_pos < e->schedule_count && e->schedule[e->schedule_pos].effective_ms <= when)
        e->schedule_pos++;
    return e->schedule_pos == 0 ? e->method : e->schedule[e->schedule_pos - 1].method;
}

/* True when lot x must be relieved before lot y under method m. */
static bool before(domain_method_t m, const lot_t *x, const lot_t *y)
{
    return order_of(m, x->has_basis, x->unit_cost, x->acquired_ms, x->seq, y->has_basis,
                    y->unit_cost, y->acquired_ms, y->seq) < 0;
}

static void heap_swap(size_t *h, size_t i, size_t j)
{
    size_t t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_up(const asset_state_t *a, domain_method_t m, size_t i)
{
    const lot_heap_t *h = &a->heaps[m];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(m, &a->lots[h->idx[i]], &a->lots[h->idx[parent]]))
            return;
        heap_swap(h->idx, i, parent);
        i = parent;
    }
}

static void heap_down(const asset_state_t *a, domain_method_t m, size_t i)
{
    const lot_heap_t *h = &a->heaps[m];
    for (;;) {
        size_t best = i, l = 2 * i + 1, r = l + 1;
        if (l < h->len && before(m, &a->lots[h->idx[l]], &a->lots[h->idx[best]]))
            best = l;
        if (r < h->len && before(m, &a->lots[h->idx[r]], &a->lots[h->idx[best]]))
            best = r;
        if (best == i)
            return;
        heap_swap(h->idx, i, best);
        i = best;
    }
}

static int heap_push(asset_state_t *a, domain_method_t m, size_t index)
{
    lot_heap_t *h = &a->heaps[m];
    size_t *grown = grow_array(h->idx, &h->cap, h->len + 1, sizeof *grown, 16);
    if (grown == NULL)
        return -1;
    h->idx = grown;
    h->idx[h->len++] = index;
    heap_up(a, m, h->len - 1);
    return 0;
}

/* The first lot under m that still holds something; lots relieved out by
 * another method are dropped from the top here (lazy deletion). */
static lot_t *heap_top(asset_state_t *a, domain_method_t m)
{
    lot_heap_t *h = &a->heaps[m];
    while (h->len > 0) {
        lot_t *top = &a->lots[h->idx[0]];
        if (!dec_is_zero(top->quantity))
            return top;
        h->idx[0] = h->idx[--h->len];
        heap_down(a, m, 0);
    }
    return NULL;
}

/* FIFO leaves the array order when a lot enters with an acquisition date
 * before one already entered (a provided lot): from then on the asset's FIFO
 * order is a heap of the lots from the head on. */
static int leave_array_order(inv_engine_t *e, asset_state_t *a)
{
    a->in_order = false;
    if (!method_used(e, DOMAIN_METHOD_FIFO))
        return 0;
    for (size_t i = a->head; i < a->lot_count; i++)
        if (!dec_is_zero(a->lots[i].quantity) && heap_push(a, DOMAIN_METHOD_FIFO, i) != 0)
            return -1;
    return 0;
}

/* Appends a lot to the asset's array and to the heap of each method used. */
static int lot_append(inv_engine_t *e, asset_state_t *a, const lot_t *in)
{
    lot_t *lots = grow_array(a->lots, &a->lot_cap, a->lot_count + 1, sizeof *lots, 16);
    if (lots == NULL)
        return -1;
    a->lots = lots;
    size_t index = a->lot_count++;
    lot_t *lot = &a->lots[index];
    *lot = *in;
    lot->unit_cost = dec_zero();
    if (lot->has_basis &&
        (method_used(e, DOMAIN_METHOD_HIFO) || method_used(e, DOMAIN_METHOD_LOFO)))
        /* fixed at acquisition: from what the lot was acquired with */
        lot->unit_cost = share(e, lot->orig_cost, dec_from_int(1), lot->orig_quantity);
    if (a->in_order && lot->acquired_ms < a->max_acquired_ms && leave_array_order(e, a) != 0)
        return -1;
    if (lot->acquired_ms > a->max_acquired_ms)
        a->max_acquired_ms = lot->acquired_ms;
    static const domain_method_t HEAPED[] = {DOMAIN_METHOD_HIFO, DOMAIN_METHOD_LIFO,
                                             DOMAIN_METHOD_LOFO};
    for (size_t i = 0; i < sizeof HEAPED / sizeof HEAPED[0]; i++)
        if (method_used(e, HEAPED[i]) && heap_push(a, HEAPED[i], index) != 0)
            return -1;
    if (!a->in_order && method_used(e, DOMAIN_METHOD_FIFO) &&
        heap_push(a, DOMAIN_METHOD_FIFO, index) != 0)
        return -1;
    return 0;
}

typedef struct lot_in {
    inv_lot_origin_t origin;
    int64_t acquired_ms;
    dec_t quantity;
    bool has_basis;
    dec_t cost; /* rounded to cents here */
} lot_in_t;

static int acquire(inv_engine_t *e, const char *asset, const tx_rec_t *tx, const lot_in_t *in)
{
    asset_state_t *a = asset_find(e, asset, tx->datetime_ms);
    if (a == NULL)
        return -1;
    dec_t cost = in->has_basis ? cents(e, in->cost) : dec_zero();
    lot_t lot = {.tx_id = tx->id, .acquired_ms = in->acquired_ms, .entered_ms = tx->datetime_ms,
                 .origin = in->origin, .quantity = in->quantity, .has_basis = in->has_basis,
                 .cost = cost, .seq = a->next_seq++, .orig_quantity = in->quantity,
                 .orig_cost = cost};
    if (lot_append(e, a, &lot) != 0)
        return -1;
    if (in->has_basis && e->method == DOMAIN_METHOD_AUSTRIA) {
        a->pool_quantity = add(e, a->pool_quantity, in->quantity);
        a->pool_cost = add(e, a->pool_cost, cost);
    }
    return 0;
}

/* ---- relief ----------------------------------------------------------- */

typedef struct relief_ctx {
    const tx_rec_t *tx;
    const char *asset;
    inv_relief_kind_t kind;
    domain_method_t method; /* in force at the transaction */
    bool has_proceeds;
    dec_t proceeds;      /* of the whole relief, in cents */
    dec_t costs;         /* its transaction costs, in cents (disposals) */
    dec_t total;         /* quantity of the whole relief */
    dec_t proceeds_left; /* not yet given to a piece */
    dec_t costs_left;
    dec_t quantity_left;
    dec_t cost_relieved; /* sum of the pieces' cost with basis */
    bool new_lots_first; /* a fee in an asset the trade receives: its new lots first */
} relief_ctx_t;

/* A piece's share of a whole in cents; the last piece takes what is left,
 * so the shares add up exactly to the whole. */
static dec_t piece_share(inv_engine_t *e, const relief_ctx_t *c, dec_t whole, dec_t left,
                         dec_t quantity)
{
    if (dec_is_zero(c->quantity_left))
        return left;
    return cents(e, share(e, whole, quantity, c->total));
}

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
                      .has_basis = has_basis, .cost = has_basis ? cost : dec_zero(),
                      .method = c->method};
    if (lot != NULL) {
        r.lot_tx_id = lot->tx_id;
        r.acquired_ms = lot->acquired_ms;
        r.lot_seq = lot->seq;
        r.lot_origin = lot->origin;
        r.term = inv_holding_term(lot->acquired_ms, c->tx->datetime_ms);
    }
    if (c->kind == INV_RELIEF_DISPOSAL) {
        r.has_costs = true;
        r.transaction_costs = piece_share(e, c, c->costs, c->costs_left, quantity);
        c->costs_left = sub(e, c->costs_left, r.transaction_costs);
    }
    if (c->kind == INV_RELIEF_DISPOSAL && c->has_proceeds) {
        r.has_proceeds = true;
        r.proceeds = piece_share(e, c, c->proceeds, c->proceeds_left, quantity);
        c->proceeds_left = sub(e, c->proceeds_left, r.proceeds);
    }
    if (has_basis)
        c->cost_relieved = add(e, c->cost_relieved, r.cost);
    e->reliefs[e->relief_count++] = r;
    return 0;
}

/* Takes up to *need from one lot (US methods: the lot's own cost). A partial
 * relief takes its share of the held cost in cents, an emptying one all the
 * lot still holds, so a lot's reliefs add up exactly to its cost. */
static int take_from_lot(inv_engine_t *e, relief_ctx_t *c, lot_t *lot, dec_t *need)
{
    dec_t q = dec_cmp(lot->quantity, *need) <= 0 ? lot->quantity : *need;
    dec_t cost = dec_zero();
    if (lot->has_basis)
        cost = dec_cmp(q, lot->quantity) == 0 ? lot->cost
                                              : cents(e, share(e, lot->cost, q, lot->quantity));
    lot->quantity = sub(e, lot->quantity, q);
    lot->cost = sub(e, lot->cost, cost);
    *need = sub(e, *need, q);
    return record_piece(e, c, lot, q, lot->has_basis, cost);
}

/* AUSTRIA: quantities leave in FIFO order, cost at the pool's average, in
 * cents (an emptying relief takes the whole pool's cost). */
static int take_from_pool(inv_engine_t *e, relief_ctx_t *c, asset_state_t *a, lot_t *lot,
                          dec_t *need)
{
    dec_t q = dec_cmp(lot->quantity, *need) <= 0 ? lot->quantity : *need;
    dec_t cost = dec_zero();
    if (lot->has_basis) {
        cost = dec_cmp(q, a->pool_quantity) == 0
                   ? a->pool_cost
                   : cents(e, share(e, a->pool_cost, q, a->pool_quantity));
        a->pool_quantity = sub(e, a->pool_quantity, q);
        a->pool_cost = sub(e, a->pool_cost, cost);
    }
    lot->quantity = sub(e, lot->quantity, q);
    *need = sub(e, *need, q);
    return record_piece(e, c, lot, q, lot->has_basis, cost);
}

static lot_t *next_in_order(asset_state_t *a)
{
    while (a->head < a->lot_count) {
        lot_t *lot = &a->lots[a->head];
        if (!dec_is_zero(lot->quantity))
            return lot;
        a->head++;
    }
    return NULL;
}

/* The next lot the method relieves. FIFO (and AUSTRIA's quantities) walk
 * the array while it is in acquisition order: the fast path of ordinary
 * histories. */
static lot_t *next_lot(asset_state_t *a, domain_method_t m)
{
    if (m == DOMAIN_METHOD_AUSTRIA || m == DOMAIN_METHOD_FIFO)
        return a->in_order ? next_in_order(a) : heap_top(a, DOMAIN_METHOD_FIFO);
    return heap_top(a, m);
}

/* A fee taken out of what the trade receives relieves the lots this trade
 * just entered (the array's tail with the trade's id), in entry order. */
static int take_from_new_lots(inv_engine_t *e, relief_ctx_t *c, asset_state_t *a, dec_t *need)
{
    size_t first = a->lot_count;
    while (first > 0 && a->lots[first - 1].tx_id == c->tx->id)
        first--;
    for (size_t i = first; i < a->lot_count && !dec_is_zero(*need) && e->failure == DEC_OK; i++)
        if (!dec_is_zero(a->lots[i].quantity) && take_from_lot(e, c, &a->lots[i], need) != 0)
            return -1;
    return 0;
}

static int relieve(inv_engine_t *e, relief_ctx_t *c)
{
    asset_state_t *a = asset_find(e, c->asset, c->tx->datetime_ms);
    if (a == NULL)
        return -1;
    dec_t need = c->total;
    c->quantity_left = c->total;
    c->proceeds_left = c->proceeds;
    c->costs_left = c->costs;
    c->cost_relieved = dec_zero();
    if (c->new_lots_first && take_from_new_lots(e, c, a, &need) != 0)
        return -1;
    while (!dec_is_zero(need) && e->failure == DEC_OK) {
        lot_t *lot = next_lot(a, c->method);
        if (lot == NULL)
            break;
        int rc = c->method == DOMAIN_METHOD_AUSTRIA ? take_from_pool(e, c, a, lot, &need)
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

/* A relief context for one line of tx: method in force, nothing shared yet. */
static relief_ctx_t relief_of(inv_engine_t *e, const tx_rec_t *tx, const inv_line_t *line,
                              inv_relief_kind_t kind)
{
    relief_ctx_t c = {.tx = tx, .asset = line->asset, .kind = kind, .total = line->amount,
                      .method = method_at(e, tx->datetime_ms), .proceeds = dec_zero(),
                      .costs = dec_zero()};
    return c;
}

/* ---- per transaction type -------------------------------------------- */

/* Splits whole (in cents) across lines in proportion to their own values
 * when all are known, else to their amounts: each share in cents, the last
 * line taking the remainder. */
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
    dec_t s = cents(e, share(e, whole, part, total));
    *given = add(e, *given, s);
    return s;
}

static bool line_has_asset(const inv_line_t *lines, size_t n, const char *asset)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(lines[i].asset, asset) == 0)
            return true;
    return false;
}

/* Fee lines in a tracked asset are disposed of at their own value (without
 * transaction costs of their own). A trade under a US method disposes of
 * the fees in an asset it receives after its acquisition (FEES_RECEIVED:
 * from the lots it just entered) and of the others before its disposal. */
typedef enum fee_pass { FEES_ALL, FEES_NOT_RECEIVED, FEES_RECEIVED } fee_pass_t;

static int dispose_fee_assets(inv_engine_t *e, const tx_rec_t *tx, fee_pass_t pass)
{
    const inv_line_t *received = tx->lines + tx->sent_count;
    const inv_line_t *fees = received + tx->received_count;
    for (size_t i = 0; i < tx->fee_count; i++) {
        if (is_reporting(fees[i].asset))
            continue;
        bool in_received = e->method != DOMAIN_METHOD_AUSTRIA &&
                           line_has_asset(received, tx->received_count, fees[i].asset);
        if ((pass == FEES_RECEIVED && !in_received) || (pass == FEES_NOT_RECEIVED && in_received))
            continue;
        relief_ctx_t c = relief_of(e, tx, &fees[i], INV_RELIEF_DISPOSAL);
        c.new_lots_first = pass == FEES_RECEIVED;
        c.has_proceeds = line_value(e, &fees[i], &c.proceeds);
        c.proceeds = c.has_proceeds ? cents(e, c.proceeds) : dec_zero();
        if (relieve(e, &c) != 0)
            return -1;
    }
    return 0;
}

/* The provided lots of tx in asset, for the line's quantity; the rest of the
 * line (what they do not cover) enters without basis. */
static int acquire_deposit_line(inv_engine_t *e, const tx_rec_t *tx, const inv_line_t *line,
                                bool *provided_used)
{
    dec_t left = line->amount;
    for (size_t k = 0; k < tx->provided_count && !dec_is_zero(left); k++) {
        const inv_provided_lot_t *p = &tx->provided[k];
        if (provided_used[k] || strcmp(p->asset, line->asset) != 0)
            continue;
        provided_used[k] = true;
        bool whole = dec_cmp(p->quantity, left) <= 0;
        lot_in_t in = {.origin = INV_LOT_PROVIDED, .acquired_ms = p->acquired_ms,
                       .quantity = whole ? p->quantity : left, .has_basis = true,
                       .cost = whole ? p->cost : share(e, p->cost, left, p->quantity)};
        if (acquire(e, line->asset, tx, &in) != 0)
            return -1;
        left = sub(e, left, in.quantity);
    }
    if (dec_is_zero(left))
        return 0;
    lot_in_t rest = {.origin = INV_LOT_TRANSFER, .acquired_ms = tx->datetime_ms,
                     .quantity = left, .cost = dec_zero()};
    return acquire(e, line->asset, tx, &rest);
}

static int process_deposit_or_income(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *received = tx->lines + tx->sent_count;
    bool small[16] = {false}, *used = small;
    if (tx->provided_count > sizeof small / sizeof small[0]) {
        used = calloc(tx->provided_count, sizeof *used);
        if (used == NULL)
            return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < tx->received_count && rc == 0; i++) {
        if (is_reporting(received[i].asset))
            continue;
        if (tx->type == DOMAIN_TX_DEPOSIT) {
            rc = acquire_deposit_line(e, tx, &received[i], used);
            continue;
        }
        lot_in_t in = {.origin = INV_LOT_ACQUIRED, .acquired_ms = tx->datetime_ms,
                       .quantity = received[i].amount, .cost = dec_zero()};
        in.has_basis = line_value(e, &received[i], &in.cost);
        rc = acquire(e, received[i].asset, tx, &in);
    }
    if (used != small)
        free(used);
    if (rc != 0)
        return -1;
    return dispose_fee_assets(e, tx, FEES_ALL);
}

/* Withdraw (a transfer out) or expense (a disposal at the lines' value). */
static int process_outgoing(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *sent = tx->lines;
    for (size_t i = 0; i < tx->sent_count; i++) {
        if (is_reporting(sent[i].asset))
            continue;
        relief_ctx_t c = relief_of(e, tx, &sent[i],
                                   tx->type == DOMAIN_TX_WITHDRAW ? INV_RELIEF_TRANSFER
                                                                  : INV_RELIEF_DISPOSAL);
        if (tx->type == DOMAIN_TX_EXPENSE) {
            c.has_proceeds = line_value(e, &sent[i], &c.proceeds);
            c.proceeds = c.has_proceeds ? cents(e, c.proceeds) : dec_zero();
        }
        if (relieve(e, &c) != 0)
            return -1;
    }
    return dispose_fee_assets(e, tx, FEES_ALL);
}

typedef struct trade_values {
    dec_t fees;         /* the fee lines' USD values (an unknown one adds nothing) */
    bool has_given;     /* the USD value of what was given (sent) */
    dec_t given;
    bool has_got;       /* the USD value of what was received */
    dec_t got;
    size_t tracked_sent, tracked_received;
} trade_values_t;

static trade_values_t trade_values(inv_engine_t *e, const tx_rec_t *tx)
{
    const inv_line_t *sent = tx->lines, *received = tx->lines + tx->sent_count;
    trade_values_t v = {0};
    if (!lines_value(e, received + tx->received_count, tx->fee_count, &v.fees))
        v.fees = dec_zero(); /* a fee without a known value adds nothing */
    v.has_given = lines_value(e, sent, tx->sent_count, &v.given);
    v.has_got = lines_value(e, received, tx->received_count, &v.got);
    v.tracked_sent = tracked_count(sent, tx->sent_count);
    v.tracked_received = tracked_count(received, tx->received_count);
    return v;
}

/* The sent lines' disposals. Proceeds: the USD value received, else the sent
 * lines' own values; the transaction costs (all the fees) reduce them, for
 * a sale under every method and, under the US methods, for an exchange of
 * digital assets too (Treas. Reg. 1.1001-7(b)). */
static int trade_dispose(inv_engine_t *e, const tx_rec_t *tx, const trade_values_t *v,
                         bool carry, dec_t *carried_cost)
{
    const inv_line_t *sent = tx->lines;
    bool has_proceeds = v->has_got || v->has_given;
    dec_t proceeds = v->has_got ? v->got : v->given;
    bool costs_reduce = v->tracked_received == 0 || e->method != DOMAIN_METHOD_AUSTRIA;
    dec_t costs = costs_reduce ? cents(e, v->fees) : dec_zero();
    proceeds = cents(e, sub(e, proceeds, costs));
    dec_t given = dec_zero(), costs_given = dec_zero();
    *carried_cost = dec_zero();
    for (size_t i = 0; i < tx->sent_count; i++) {
        dec_t part = line_share(e, sent, tx->sent_count, i, proceeds, &given);
        dec_t costs_part = line_share(e, sent, tx->sent_count, i, costs, &costs_given);
        if (is_reporting(sent[i].asset))
            continue;
        relief_ctx_t c = relief_of(e, tx, &sent[i], carry ? INV_RELIEF_CARRY : INV_RELIEF_DISPOSAL);
        c.has_proceeds = has_proceeds && !carry;
        c.proceeds = part;
        c.costs = costs_part;
        if (relieve(e, &c) != 0)
            return -1;
        *carried_cost = add(e, *carried_cost, c.cost_relieved);
    }
    return 0;
}

/* The received lines' lots. Cost: under AUSTRIA (as before issue 16) and
 * for an acquisition for cash, the USD value given (else received) plus the
 * fees; for an exchange of digital assets under the US methods, the fair
 * market value received (else given) without the fees (Treas. Reg.
 * 1.1012-1(h)); a carry takes the relieved cost. */
static int trade_acquire(inv_engine_t *e, const tx_rec_t *tx, const trade_values_t *v,
                         bool carry, dec_t carried_cost)
{
    const inv_line_t *received = tx->lines + tx->sent_count;
    bool exchange = e->method != DOMAIN_METHOD_AUSTRIA && v->tracked_sent > 0;
    bool has_cost = carry || v->has_given || v->has_got;
    dec_t cost;
    if (carry)
        cost = add(e, carried_cost, v->fees);
    else if (exchange)
        cost = v->has_got ? v->got : v->given;
    else
        cost = add(e, v->has_given ? v->given : v->got, v->fees);
    cost = cents(e, cost);
    dec_t given = dec_zero();
    for (size_t i = 0; i < tx->received_count; i++) {
        dec_t part = line_share(e, received, tx->received_count, i, cost, &given);
        if (is_reporting(received[i].asset))
            continue;
        lot_in_t in = {.origin = INV_LOT_ACQUIRED, .acquired_ms = tx->datetime_ms,
                       .quantity = received[i].amount, .has_basis = has_cost, .cost = part};
        if (acquire(e, received[i].asset, tx, &in) != 0)
            return -1;
    }
    return 0;
}

static int process_trade(inv_engine_t *e, const tx_rec_t *tx)
{
    trade_values_t v = trade_values(e, tx);
    bool carry = e->method == DOMAIN_METHOD_AUSTRIA && v.tracked_sent == tx->sent_count &&
                 v.tracked_received == tx->received_count && v.tracked_sent > 0 &&
                 v.tracked_received > 0;
    dec_t carried = dec_zero();
    if (dispose_fee_assets(e, tx, FEES_NOT_RECEIVED) != 0 ||
        trade_dispose(e, tx, &v, carry, &carried) != 0 ||
        trade_acquire(e, tx, &v, carry, carried) != 0)
        return -1;
    return dispose_fee_assets(e, tx, FEES_RECEIVED);
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
    inv_lot_t out = {.tx_id = lot->tx_id, .acquired_ms = lot->acquired_ms,
                     .entered_ms = lot->entered_ms, .origin = lot->origin, .seq = lot->seq,
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
    lot_t lot = {.acquired_ms = in->acquired_ms, .entered_ms = in->entered_ms,
                 .origin = in->origin, .quantity = in->quantity,
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
