/* test_recalc: the recalculation from the dirty watermark (inventory/recalc.h)
 * against real store databases. Property: after any sequence of inserts,
 * edits (moving a transaction earlier or later, changing its lines) and
 * deletes at random positions, the inventory a resumed recalculation stores
 * is identical, row for row and byte for byte (summaries, the lot ledger in
 * order, reliefs with their seqs), to the one a recalculation from the first
 * transaction stores, for FIFO, HIFO and AUSTRIA, for LIFO and LOFO (a
 * disposition method record in force from the start) and for a schedule
 * FIFO -> LIFO -> LOFO -> HIFO whose changes fall among the transactions;
 * with customer-provided lots set on deposits (some dated before every other
 * lot, so FIFO leaves array order), which lower the watermark themselves.
 *
 * How. Two databases get the same writes. A is refreshed after every write
 * the normal way (resumed from its watermark); B has its ledger marked
 * unusable first (inventory_basis NULL), so its refresh starts from the first
 * transaction. Their inventory tables are then dumped and compared. Datetimes
 * are drawn from few days so that ties at the watermark are common; amounts
 * make withdrawals larger than the holding (shortfalls), fees in USD and in a
 * tracked asset, transfers out, and crypto-to-crypto trades (AUSTRIA carry).
 *
 * A trigger on A records the datetime of every relief row a save deletes:
 * none may be before the watermark, which proves the rows before it were
 * kept and that the resumed path (not a silent fallback) ran. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inventory/recalc.h"
#include "store/accounts.h"
#include "store/inventory.h"
#include "store/provided_lots.h"
#include "store/store.h"
#include "store/transactions.h"

#define TENANT "00000000-0000-4000-8000-00000000000a"
#define ACCOUNT_UUID "00000000-0000-4000-9000-000000000001"
#define T0 1704067200000LL /* 2024-01-01T00:00:00Z */
#define DAY_MS 86400000LL
#define MAX_TX 48
#define MAX_LINES 4
#define SEEDS 40 /* random runs per method */

/* ---- a deterministic generator ------------------------------------------ */

typedef struct rng {
    uint64_t state;
} rng_t;

static unsigned pick(rng_t *r, unsigned n)
{
    r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((r->state >> 33) % n);
}

/* ---- one database --------------------------------------------------------- */

typedef struct db {
    char path[160];
    store_t *store;
    store_conn_t *conn;
    sqlite3 *raw;
} db_t;

typedef struct fixture {
    char dir[64];
    db_t a, b; /* a: resumed; b: from the first transaction */
    unsigned uuid_counter;
} fixture_t;

static void exec_raw(sqlite3 *raw, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(raw, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err ? err : "?");
}

static void db_open(fixture_t *fx, db_t *d, const char *name, const char *method)
{
    snprintf(d->path, sizeof d->path, "%s/%s.db", fx->dir, name);
    char *err = NULL;
    d->store = store_open(d->path, &err);
    assert_non_null(d->store);
    d->conn = store_acquire(d->store);
    assert_non_null(d->conn);
    store_tenant_t t = {.id = TENANT, .name = "t", .created_at = T0};
    store_tenant_seed_t seed = {.default_filer_uuid = "00000000-0000-4000-8000-0000000f000a",
                                .usd_asset_uuid = "00000000-0000-4000-8000-0000000e000a"};
    assert_int_equal(store_tenant_create(d->conn, &t, &seed, NULL), STORE_OK);
    assert_int_equal(sqlite3_open_v2(d->path, &d->raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(d->raw, 5000);
    exec_raw(d->raw, "INSERT INTO account_owners (uuid, tenant_id, id, name,"
                     " account_owner_type, created_at, updated_at) VALUES"
                     " ('00000000-0000-4000-8000-000000000099', '" TENANT "',"
                     " 'owner', 'Owner', 'individual', 1, 1)");
    exec_raw(d->raw, "CREATE TABLE deleted_reliefs (datetime INTEGER);"
                     "CREATE TRIGGER log_relief_delete AFTER DELETE ON inventory_reliefs"
                     " BEGIN INSERT INTO deleted_reliefs VALUES (old.datetime); END;");
    store_account_t a = {.uuid = ACCOUNT_UUID, .id = "acct-1", .owner_id = "owner",
                         .filer_id = "default", .created_at = T0, .updated_at = T0};
    snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "%s", method);
    a.austria_tax_year = strcmp(method, "AUSTRIA") == 0 ? 2024 : 0;
    store_account_missing_t missing;
    assert_int_equal(store_account_create(d->conn, TENANT, &a, &missing), STORE_OK);
}

static void db_close(db_t *d)
{
    sqlite3_close(d->raw);
    store_release(d->store, d->conn);
    store_close(d->store);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static fixture_t *fixture_new(const char *method)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    /* tmpfs when there is one: thousands of fsync'd commits */
    struct stat st;
    snprintf(fx->dir, sizeof fx->dir, "%s/taxd-recalc-XXXXXX",
             stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
    assert_non_null(mkdtemp(fx->dir));
    db_open(fx, &fx->a, "a", method);
    db_open(fx, &fx->b, "b", method);
    return fx;
}

static void fixture_free(fixture_t *fx)
{
    db_close(&fx->a);
    db_close(&fx->b);
    nftw(fx->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
}

/* ---- transactions ------------------------------------------------------ */

typedef struct gen_tx {
    bool live;
    char id[16];
    int64_t datetime_ms;
    const char *type;
    store_tx_line_t lines[MAX_LINES];
    size_t line_count;
} gen_tx_t;

static const char *const AMOUNTS[] = {"0.1", "0.25", "1", "1.5", "2", "3.333333333333333333",
                                      "0.7", "5"};
static const char *const RATES[] = {"100", "2000.5", "33.33", "0.1", "45000"};
static const char *const CRYPTO[] = {"BTC", "ETH", "SOL"};

static void add_line(fixture_t *fx, rng_t *r, gen_tx_t *t, store_line_kind_t kind,
                     const char *asset, bool rate)
{
    store_tx_line_t *l = &t->lines[t->line_count++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->asset, sizeof l->asset, "%s", asset);
    snprintf(l->asset_type, sizeof l->asset_type, "%s",
             strcmp(asset, "USD") == 0 ? "fiat" : "crypto");
    snprintf(l->new_asset_uuid, sizeof l->new_asset_uuid, "00000000-0000-4000-8000-%012x",
             0x100000 + fx->uuid_counter++);
    snprintf(l->amount, sizeof l->amount, "%s", AMOUNTS[pick(r, 8)]);
    l->has_rate = rate && strcmp(asset, "USD") != 0;
    if (l->has_rate)
        snprintf(l->usd_rate, sizeof l->usd_rate, "%s", RATES[pick(r, 5)]);
}

static const char *crypto(rng_t *r)
{
    return CRYPTO[pick(r, 3)];
}

/* New random content (type, lines, datetime) for t. */
static void gen_content(fixture_t *fx, rng_t *r, gen_tx_t *t, int64_t latest)
{
    static const char *const TYPES[] = {"deposit", "income", "trade", "trade", "trade",
                                        "withdraw", "expense"};
    t->line_count = 0;
    t->type = TYPES[pick(r, 7)];
    /* mostly a few days (ties), sometimes past the end (an append), sometimes a year on */
    unsigned where = pick(r, 10);
    t->datetime_ms = where < 6   ? T0 + (int64_t)pick(r, 12) * DAY_MS
                     : where < 8 ? latest + (int64_t)pick(r, 2) * DAY_MS
                                 : T0 + (int64_t)(360 + pick(r, 20)) * DAY_MS;
    if (strcmp(t->type, "deposit") == 0) {
        add_line(fx, r, t, STORE_LINE_RECEIVED, crypto(r), false);
    } else if (strcmp(t->type, "income") == 0) {
        add_line(fx, r, t, STORE_LINE_RECEIVED, crypto(r), pick(r, 4) != 0);
    } else if (strcmp(t->type, "trade") == 0) {
        unsigned kind = pick(r, 3); /* buy, sell, swap */
        const char *x = crypto(r), *y = crypto(r);
        add_line(fx, r, t, STORE_LINE_SENT, kind == 0 ? "USD" : x, pick(r, 2) != 0);
        add_line(fx, r, t, STORE_LINE_RECEIVED, kind == 1 ? "USD" : kind == 2 ? y : x,
                 pick(r, 2) != 0);
        if (kind == 2 && pick(r, 4) == 0) /* two lines of one asset: two lots of one tx */
            add_line(fx, r, t, STORE_LINE_RECEIVED, y, pick(r, 2) != 0);
    } else {
        add_line(fx, r, t, STORE_LINE_SENT, crypto(r), strcmp(t->type, "expense") == 0);
    }
    if (pick(r, 3) == 0)
        add_line(fx, r, t, STORE_LINE_FEE, pick(r, 2) ? "USD" : crypto(r), true);
}

static void write_tx(fixture_t *fx, db_t *d, const gen_tx_t *t, unsigned serial)
{
    char body[1024], tx_uuid[40], event_uuid[40];
    int n = snprintf(body, sizeof body, "%s|%lld|%s", t->id, (long long)t->datetime_ms, t->type);
    for (size_t i = 0; i < t->line_count; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "|%d,%s,%s,%s", t->lines[i].kind,
                      t->lines[i].asset, t->lines[i].amount,
                      t->lines[i].has_rate ? t->lines[i].usd_rate : "-");
    snprintf(tx_uuid, sizeof tx_uuid, "00000000-0000-4000-a000-%012x", serial);
    snprintf(event_uuid, sizeof event_uuid, "00000000-0000-4000-b000-%012x",
             fx->uuid_counter++);
    store_tx_write_t w = {.tenant_id = TENANT, .id = t->id, .account_id = "acct-1",
                          .datetime_ms = t->datetime_ms, .type = t->type, .body = body,
                          .lines = t->lines, .line_count = t->line_count,
                          .new_uuid = tx_uuid, .event_uuid = event_uuid, .now = T0};
    store_tx_result_t result;
    assert_int_equal(store_tx_upsert(d->conn, &w, 0, &result), STORE_OK);
}

/* ---- refresh and compare ------------------------------------------------ */

static void refresh(db_t *d, bool *was_dirty, int64_t *from)
{
    store_inv_account_t account;
    assert_int_equal(store_inv_account(d->conn, TENANT, "acct-1", &account), STORE_OK);
    *was_dirty = account.dirty;
    *from = account.dirty_from;
    recalc_result_t r = inventory_refresh(d->conn, &account);
    assert_int_equal(r.store, STORE_OK);
    assert_int_equal(r.arithmetic, DEC_OK);
    assert_int_equal(store_inv_account(d->conn, TENANT, "acct-1", &account), STORE_OK);
    assert_false(account.dirty);
}

static void append_rows(sqlite3 *raw, const char *sql, char **out, size_t *len)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(raw, sql, -1, &stmt, NULL), SQLITE_OK);
    FILE *f = open_memstream(out, len);
    assert_non_null(f);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(stmt); i++) {
            const unsigned char *text = sqlite3_column_text(stmt, i);
            fprintf(f, "%s%s", i ? "," : "", text ? (const char *)text : "NULL");
        }
        fputc('\n', f);
    }
    fclose(f);
    sqlite3_finalize(stmt);
}

/* The account's whole stored inventory as text. */
static char *dump(db_t *d)
{
    static const char *const SQL[] = {
        "SELECT asset_code, total_quantity, total_cost, quantity_with_basis, average_unit_cost,"
        " since FROM inventory_summaries ORDER BY asset_code",
        "SELECT asset_code, seq, transaction_id, acquired_at, quantity, cost, orig_quantity,"
        " orig_cost, origin, entered_at FROM inventory_lots ORDER BY asset_code, seq",
        "SELECT seq, transaction_id, asset_code, kind, datetime, lot_transaction_id,"
        " acquired_at, quantity, cost, proceeds, term, lot_seq, method, lot_origin,"
        " transaction_costs FROM inventory_reliefs ORDER BY seq"};
    char *all = NULL;
    size_t all_len = 0;
    FILE *f = open_memstream(&all, &all_len);
    assert_non_null(f);
    for (size_t i = 0; i < 3; i++) {
        char *part = NULL;
        size_t len = 0;
        append_rows(d->raw, SQL[i], &part, &len);
        fprintf(f, "-- %zu\n%s", i, part);
        free(part);
    }
    fclose(f);
    return all;
}

static int64_t raw_int(sqlite3 *raw, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(raw, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return v;
}

/* After a write to both: A resumed, B from the first transaction, same rows. */
static void check_same(fixture_t *fx, int step)
{
    bool dirty;
    int64_t from;
    exec_raw(fx->a.raw, "DELETE FROM deleted_reliefs");
    refresh(&fx->a, &dirty, &from);
    if (dirty) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM deleted_reliefs WHERE datetime < %lld",
                 (long long)from);
        if (raw_int(fx->a.raw, sql) != 0)
            fail_msg("step %d: a relief before the watermark was rewritten", step);
    }
    exec_raw(fx->b.raw, "UPDATE accounts SET inventory_basis = NULL");
    refresh(&fx->b, &dirty, &from);
    char *a = dump(&fx->a), *b = dump(&fx->b);
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "step %d differs\n-- resumed:\n%s\n-- full:\n%s\n", step, a, b);
        fail_msg("step %d: resumed recalculation differs from the full one", step);
    }
    free(a);
    free(b);
}

static bool accept_deposit(const store_deposit_t *deposit, void *ctx)
{
    (void)deposit;
    (void)ctx;
    return true;
}

/* Sometimes customer-provided lots for a deposit just written: its whole
 * line (dated before everything, or within the history), or a part of it
 * (the rest enters without basis). */
static void maybe_provide(fixture_t *fx, rng_t *r, const gen_tx_t *t)
{
    if (strcmp(t->type, "deposit") != 0 || pick(r, 2) == 0)
        return;
    store_provided_lot_t lot = {.acquired_at = T0 - DAY_MS + (int64_t)pick(r, 6) * DAY_MS};
    snprintf(lot.asset, sizeof lot.asset, "%s", t->lines[0].asset);
    snprintf(lot.quantity, sizeof lot.quantity, "%s",
             pick(r, 3) == 0 && strcmp(t->lines[0].amount, "0.1") != 0 ? "0.1"
                                                                         : t->lines[0].amount);
    snprintf(lot.cost_basis, sizeof lot.cost_basis, "%s", pick(r, 2) ? "123.455" : "0.5");
    if (lot.acquired_at > t->datetime_ms)
        lot.acquired_at = t->datetime_ms;
    db_t *dbs[2] = {&fx->a, &fx->b};
    for (int i = 0; i < 2; i++)
        assert_int_equal(store_provided_lots_set(dbs[i]->conn, TENANT, t->id, &lot, 1,
                                                 accept_deposit, NULL),
                         STORE_OK);
}

/* Disposition method records "METHOD@day,..." (day from T0; -1: from the
 * start) in both databases. */
static void set_schedule(fixture_t *fx, const char *schedule)
{
    char copy[128];
    snprintf(copy, sizeof copy, "%s", schedule);
    int n = 0;
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save), n++) {
        char method[8];
        int day;
        assert_int_equal(sscanf(item, "%7[A-Z]@%d", method, &day), 2);
        int64_t at = day < 0 ? 0 : T0 + (int64_t)day * DAY_MS;
        char sql[400];
        snprintf(sql, sizeof sql,
                 "INSERT INTO disposition_methods (uuid, account, method, effective_from,"
                 " recorded_elsewhere, created_at, updated_at) VALUES"
                 " ('00000000-0000-4000-c000-%012d', (SELECT seq FROM accounts WHERE uuid = '"
                 ACCOUNT_UUID "'), '%s', %lld, 1, 0, 0)",
                 n, method, (long long)at);
        exec_raw(fx->a.raw, sql);
        exec_raw(fx->b.raw, sql);
    }
}

static int64_t provided_seen, methods_seen; /* the property's inputs did occur */

static void run_property_with(const char *method, const char *schedule, uint64_t seed, int steps)
{
    fixture_t *fx = fixture_new(method);
    if (schedule != NULL)
        set_schedule(fx, schedule);
    rng_t r = {seed};
    gen_tx_t txs[MAX_TX];
    memset(txs, 0, sizeof txs);
    int64_t latest = T0;
    unsigned serial = 0;
    for (int step = 0; step < steps; step++) {
        size_t i = pick(&r, MAX_TX);
        gen_tx_t *t = &txs[i];
        bool remove = t->live && pick(&r, 4) == 0;
        if (remove) {
            t->live = false;
            char event_uuid[40];
            snprintf(event_uuid, sizeof event_uuid, "00000000-0000-4000-b000-%012x",
                     fx->uuid_counter++);
            assert_int_equal(store_tx_delete(fx->a.conn, TENANT, t->id, event_uuid, T0), STORE_OK);
            assert_int_equal(store_tx_delete(fx->b.conn, TENANT, t->id, event_uuid, T0), STORE_OK);
        } else {
            snprintf(t->id, sizeof t->id, "t%02zu", i);
            gen_content(fx, &r, t, latest);
            t->live = true;
            if (t->datetime_ms > latest)
                latest = t->datetime_ms;
            serial++;
            write_tx(fx, &fx->a, t, serial);
            write_tx(fx, &fx->b, t, serial);
            maybe_provide(fx, &r, t);
        }
        /* sometimes several writes before a read: a wider dirty range */
        if (pick(&r, 3) != 0)
            check_same(fx, step);
    }
    check_same(fx, steps);
    provided_seen += raw_int(fx->a.raw, "SELECT count(*) FROM inventory_reliefs"
                                        " WHERE lot_origin = 'provided'");
    methods_seen += raw_int(fx->a.raw, "SELECT count(DISTINCT method) FROM inventory_reliefs");
    fixture_free(fx);
}

static void run_property(const char *method, uint64_t seed, int steps)
{
    run_property_with(method, NULL, seed, steps);
}

static void test_lifo(void **state)
{
    (void)state;
    for (uint64_t seed = 3001; seed <= 3000 + SEEDS; seed++)
        run_property_with("FIFO", "LIFO@-1", seed, 90);
}

static void test_lofo(void **state)
{
    (void)state;
    for (uint64_t seed = 4001; seed <= 4000 + SEEDS; seed++)
        run_property_with("HIFO", "LOFO@-1", seed, 90);
}

static void test_schedule(void **state)
{
    (void)state;
    for (uint64_t seed = 5001; seed <= 5000 + SEEDS; seed++)
        run_property_with("FIFO", "LIFO@4,LOFO@8,HIFO@365", seed, 90);
    assert_true(provided_seen > 0);
    assert_true(methods_seen > 2 * SEEDS); /* most runs relieve by several methods */
}

static void test_fifo(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= SEEDS; seed++)
        run_property("FIFO", seed, 90);
}

static void test_hifo(void **state)
{
    (void)state;
    for (uint64_t seed = 1001; seed <= 1000 + SEEDS; seed++)
        run_property("HIFO", seed, 90);
}

static void test_austria(void **state)
{
    (void)state;
    for (uint64_t seed = 2001; seed <= 2000 + SEEDS; seed++)
        run_property("AUSTRIA", seed, 90);
}

/* A write that lands between a recalculation's read and its save makes the
 * save refuse (nothing written, the watermark kept), and the next refresh
 * still gives the full run's rows. */
static void test_stale_save_refused(void **state)
{
    (void)state;
    fixture_t *fx = fixture_new("FIFO");
    rng_t r = {99};
    gen_tx_t t = {.live = true};
    snprintf(t.id, sizeof t.id, "t00");
    gen_content(fx, &r, &t, T0);
    write_tx(fx, &fx->a, &t, 1);
    store_inv_account_t account;
    assert_int_equal(store_inv_account(fx->a.conn, TENANT, "acct-1", &account), STORE_OK);
    store_inv_save_t save = {.account_uuid = ACCOUNT_UUID, .version = account.version - 1,
                             .from_ms = INT64_MIN, .basis = "FIFO"};
    bool stale = false;
    assert_int_equal(store_inv_save(fx->a.conn, &save, &stale), STORE_CONFLICT);
    assert_true(stale);
    assert_int_equal(store_inv_account(fx->a.conn, TENANT, "acct-1", &account), STORE_OK);
    assert_true(account.dirty);
    write_tx(fx, &fx->b, &t, 1);
    check_same(fx, 0);
    fixture_free(fx);
}

/* Rows that cannot seed a run (written before the ledger: no acquisition
 * values, no relieved-out lots) make the refresh start from the first
 * transaction, and the result is still the full run's. */
static void damaged_ledger(const char *damage)
{
    fixture_t *fx = fixture_new("FIFO");
    rng_t r = {7};
    gen_tx_t txs[MAX_TX];
    memset(txs, 0, sizeof txs);
    int64_t latest = T0;
    for (unsigned i = 0; i < 30; i++) {
        gen_tx_t *t = &txs[i];
        snprintf(t->id, sizeof t->id, "t%02u", i);
        gen_content(fx, &r, t, latest);
        if (t->datetime_ms > latest)
            latest = t->datetime_ms;
        write_tx(fx, &fx->a, t, i + 1);
        write_tx(fx, &fx->b, t, i + 1);
    }
    check_same(fx, 0);
    exec_raw(fx->a.raw, damage);
    gen_tx_t *t = &txs[30];
    snprintf(t->id, sizeof t->id, "t30");
    gen_content(fx, &r, t, latest);
    t->datetime_ms = T0 + 6 * DAY_MS; /* in the middle: earlier lots must be rebuilt */
    write_tx(fx, &fx->a, t, 31);
    write_tx(fx, &fx->b, t, 31);
    bool dirty;
    int64_t from;
    refresh(&fx->a, &dirty, &from);
    exec_raw(fx->b.raw, "UPDATE accounts SET inventory_basis = NULL");
    refresh(&fx->b, &dirty, &from);
    char *a = dump(&fx->a), *b = dump(&fx->b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    fixture_free(fx);
}

static void test_rows_without_acquisition_values(void **state)
{
    (void)state;
    damaged_ledger("UPDATE inventory_lots SET orig_quantity = NULL, orig_cost = NULL");
}

static void test_rows_without_relieved_lots(void **state)
{
    (void)state;
    damaged_ledger("DELETE FROM inventory_lots WHERE quantity = '0'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_hifo),
        cmocka_unit_test(test_austria),
        cmocka_unit_test(test_lifo),
        cmocka_unit_test(test_lofo),
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_stale_save_refused),
        cmocka_unit_test(test_rows_without_acquisition_values),
        cmocka_unit_test(test_rows_without_relieved_lots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
