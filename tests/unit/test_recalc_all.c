/* test_recalc_all: the bulk recalculation (inventory_recalc_all, `taxd admin
 * inventory recalc`) against real store databases.
 *
 * Two databases get the same writes over ACCOUNTS accounts (FIFO, HIFO and
 * AUSTRIA in turn, random transactions as in test_recalc.c: ties, shortfalls,
 * fees, transfers, carry-overs). A is recalculated by inventory_recalc_all,
 * B account by account by the lazy path (inventory_refresh); their whole
 * inventory tables (every account, summaries, lot ledger and reliefs) and
 * watermarks are then compared as text. Rules checked:
 *  - a run leaves every account clean with rows identical to the lazy path's,
 *    from the first transaction and resumed from a watermark (a backfill);
 *  - a second run finds nothing to do and changes nothing (idempotent);
 *  - a write in the middle of a run: to an account already saved, it is
 *    left dirty (its rows are those of before the write); to an account not
 *    yet saved, possibly already read and computed by the reader thread, the
 *    run saves results that include it (the save of the stale computation is
 *    refused by inventory_version);
 *  - the tenant filter leaves other tenants' accounts dirty. */
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
#include "store/store.h"
#include "store/transactions.h"

#define TENANT "00000000-0000-4000-8000-00000000000a"
#define T0 1704067200000LL /* 2024-01-01T00:00:00Z */
#define DAY_MS 86400000LL
#define ACCOUNTS 12
#define MAX_LINES 4

typedef struct rng {
    uint64_t state;
} rng_t;

static unsigned pick(rng_t *r, unsigned n)
{
    r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((r->state >> 33) % n);
}

/* ---- two databases -------------------------------------------------------- */

typedef struct db {
    char path[160];
    store_t *store;
    store_conn_t *conn;
    sqlite3 *raw;
} db_t;

typedef struct fixture {
    char dir[64];
    db_t a, b; /* a: inventory_recalc_all; b: inventory_refresh per account */
    unsigned serial;
} fixture_t;

static const char *const METHODS[] = {"FIFO", "HIFO", "AUSTRIA"};

static void exec_raw(sqlite3 *raw, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(raw, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err ? err : "?");
}

static void account_uuid(int i, char out[STORE_UUID_LEN])
{
    snprintf(out, STORE_UUID_LEN, "00000000-0000-4000-9000-%012x", 0x100 + i);
}

static void db_open(fixture_t *fx, db_t *d, const char *name)
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
    for (int i = 0; i < ACCOUNTS; i++) {
        store_account_t a = {.owner_id = "owner", .filer_id = "default", .created_at = T0,
                             .updated_at = T0};
        account_uuid(i, a.uuid);
        snprintf(a.id, sizeof a.id, "acct-%d", i);
        snprintf(a.cost_basis_method, sizeof a.cost_basis_method, "%s", METHODS[i % 3]);
        a.austria_tax_year = i % 3 == 2 ? 2024 : 0;
        store_account_missing_t missing;
        assert_int_equal(store_account_create(d->conn, TENANT, &a, &missing), STORE_OK);
    }
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

static fixture_t *fixture_new(void)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    struct stat st;
    snprintf(fx->dir, sizeof fx->dir, "%s/taxd-recalc-all-XXXXXX",
             stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
    assert_non_null(mkdtemp(fx->dir));
    db_open(fx, &fx->a, "a");
    db_open(fx, &fx->b, "b");
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
             0x100000 + fx->serial++);
    snprintf(l->amount, sizeof l->amount, "%s", AMOUNTS[pick(r, 8)]);
    l->has_rate = rate && strcmp(asset, "USD") != 0;
    if (l->has_rate)
        snprintf(l->usd_rate, sizeof l->usd_rate, "%s", RATES[pick(r, 5)]);
}

static void gen_tx(fixture_t *fx, rng_t *r, gen_tx_t *t, int64_t from_day)
{
    static const char *const TYPES[] = {"deposit", "income", "trade", "trade", "trade",
                                        "withdraw", "expense"};
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "t%u", fx->serial++);
    t->type = TYPES[pick(r, 7)];
    t->datetime_ms = T0 + (from_day + (int64_t)pick(r, 400)) * DAY_MS + (int64_t)pick(r, 3);
    const char *x = CRYPTO[pick(r, 3)], *y = CRYPTO[pick(r, 3)];
    if (strcmp(t->type, "deposit") == 0 || strcmp(t->type, "income") == 0) {
        add_line(fx, r, t, STORE_LINE_RECEIVED, x, t->type[0] == 'i' && pick(r, 4) != 0);
    } else if (strcmp(t->type, "trade") == 0) {
        unsigned kind = pick(r, 3); /* buy, sell, swap */
        add_line(fx, r, t, STORE_LINE_SENT, kind == 0 ? "USD" : x, pick(r, 2) != 0);
        add_line(fx, r, t, STORE_LINE_RECEIVED, kind == 1 ? "USD" : kind == 2 ? y : x,
                 pick(r, 2) != 0);
    } else {
        add_line(fx, r, t, STORE_LINE_SENT, x, strcmp(t->type, "expense") == 0);
    }
    if (pick(r, 3) == 0)
        add_line(fx, r, t, STORE_LINE_FEE, pick(r, 2) ? "USD" : x, true);
}

static void write_tx(db_t *d, int account, const gen_tx_t *t, unsigned serial)
{
    char body[1024], tx_uuid[40], event_uuid[40], account_id[16];
    int n = snprintf(body, sizeof body, "%s|%lld|%s", t->id, (long long)t->datetime_ms, t->type);
    for (size_t i = 0; i < t->line_count; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "|%d,%s,%s", t->lines[i].kind,
                      t->lines[i].asset, t->lines[i].amount);
    snprintf(tx_uuid, sizeof tx_uuid, "00000000-0000-4000-a000-%012x", serial);
    snprintf(event_uuid, sizeof event_uuid, "00000000-0000-4000-b000-%012x", serial);
    snprintf(account_id, sizeof account_id, "acct-%d", account);
    store_tx_write_t w = {.tenant_id = TENANT, .id = t->id, .account_id = account_id,
                          .datetime_ms = t->datetime_ms, .type = t->type, .body = body,
                          .lines = t->lines, .line_count = t->line_count,
                          .new_uuid = tx_uuid, .event_uuid = event_uuid, .now = T0};
    store_tx_result_t result;
    assert_int_equal(store_tx_upsert(d->conn, &w, 0, &result), STORE_OK);
}

/* The same new transaction to the account in both databases. */
static void write_both(fixture_t *fx, rng_t *r, int account, int64_t from_day)
{
    gen_tx_t t;
    gen_tx(fx, r, &t, from_day);
    unsigned serial = fx->serial++;
    write_tx(&fx->a, account, &t, serial);
    write_tx(&fx->b, account, &t, serial);
}

/* `per_account` new transactions for every account, in both. */
static size_t load_both(fixture_t *fx, rng_t *r, int per_account, int64_t from_day)
{
    for (int k = 0; k < per_account; k++)
        for (int i = 0; i < ACCOUNTS; i++)
            write_both(fx, r, i, from_day);
    return (size_t)per_account * ACCOUNTS;
}

/* ---- checks --------------------------------------------------------------- */

static void refresh_all_lazily(db_t *d)
{
    for (int i = 0; i < ACCOUNTS; i++) {
        store_inv_account_t account = {.dirty = true};
        account_uuid(i, account.uuid);
        recalc_result_t r = inventory_refresh(d->conn, &account);
        assert_int_equal(r.store, STORE_OK);
        assert_int_equal(r.arithmetic, DEC_OK);
    }
}

static char *dump(db_t *d)
{
    static const char *const SQL[] = {
        "SELECT uuid, coalesce(dirty_from, 'clean'), coalesce(inventory_basis, '-')"
        " FROM accounts ORDER BY uuid",
        "SELECT * FROM inventory_summaries ORDER BY account, asset_code",
        "SELECT * FROM inventory_lots ORDER BY account, asset_code, seq",
        "SELECT * FROM inventory_reliefs ORDER BY account, seq"};
    char *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    assert_non_null(f);
    for (size_t q = 0; q < sizeof SQL / sizeof SQL[0]; q++) {
        sqlite3_stmt *stmt = NULL;
        assert_int_equal(sqlite3_prepare_v2(d->raw, SQL[q], -1, &stmt, NULL), SQLITE_OK);
        fprintf(f, "-- %zu\n", q);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(stmt); i++) {
                const unsigned char *text = sqlite3_column_text(stmt, i);
                fprintf(f, "%s%s", i ? "," : "", text ? (const char *)text : "NULL");
            }
            fputc('\n', f);
        }
        sqlite3_finalize(stmt);
    }
    fclose(f);
    return all;
}

static void assert_same(fixture_t *fx, const char *when)
{
    char *a = dump(&fx->a), *b = dump(&fx->b);
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "-- recalc --all:\n%s\n-- lazy:\n%s\n", a, b);
        fail_msg("%s: the bulk recalculation differs from the lazy one", when);
    }
    free(a);
    free(b);
}

static bool is_dirty(db_t *d, int account)
{
    store_inv_mark_t mark;
    char uuid[STORE_UUID_LEN];
    account_uuid(account, uuid);
    assert_int_equal(store_inv_mark(d->conn, uuid, &mark), STORE_OK);
    return mark.dirty;
}

static size_t dirty_count(db_t *d)
{
    size_t n = 0;
    for (int i = 0; i < ACCOUNTS; i++)
        n += is_dirty(d, i);
    return n;
}

static recalc_all_result_t run_all(db_t *d, size_t batch,
                                   void (*between)(size_t done, void *ctx), void *ctx)
{
    recalc_all_result_t r = inventory_recalc_all(d->store, d->conn, TENANT, batch, between, ctx);
    assert_int_equal(r.store, STORE_OK);
    assert_int_equal(r.failed, 0);
    return r;
}

/* ---- tests ------------------------------------------------------------------ */

/* An import, then a backfill (earlier transactions: runs resume from a
 * watermark in the middle), then nothing: same rows as the lazy path,
 * everything clean, and a second run is a no-op. */
static void test_import_backfill_idempotent(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        fixture_t *fx = fixture_new();
        rng_t r = {seed};
        size_t written = load_both(fx, &r, 14, 0);
        recalc_all_result_t res = run_all(&fx->a, 5, NULL, NULL);
        assert_int_equal(res.accounts, ACCOUNTS);
        assert_int_equal(res.transactions, written);
        assert_int_equal(dirty_count(&fx->a), 0);
        refresh_all_lazily(&fx->b);
        assert_same(fx, "import");

        load_both(fx, &r, 5, 200); /* the middle of the history */
        res = run_all(&fx->a, 0, NULL, NULL);
        assert_int_equal(res.accounts, ACCOUNTS);
        assert_int_equal(dirty_count(&fx->a), 0);
        refresh_all_lazily(&fx->b);
        assert_same(fx, "backfill");

        char *before = dump(&fx->a);
        res = run_all(&fx->a, 5, NULL, NULL);
        assert_int_equal(res.accounts, 0);
        assert_int_equal(res.transactions, 0);
        char *after = dump(&fx->a);
        assert_string_equal(before, after);
        free(before);
        free(after);
        fixture_free(fx);
    }
}

typedef struct midway {
    fixture_t *fx;
    rng_t *rng;
    int calls;
} midway_t;

/* After the first batch (accounts 0 and 1 saved): a write to account 0 and
 * one to the last account, which the reader has most likely read already. */
static void write_midway(size_t done, void *ctx)
{
    midway_t *m = ctx;
    if (m->calls++ != 0)
        return;
    assert_int_equal(done, 2);
    write_both(m->fx, m->rng, 0, 0);
    write_both(m->fx, m->rng, ACCOUNTS - 1, 0);
}

static void test_write_during_run(void **state)
{
    (void)state;
    for (uint64_t seed = 11; seed <= 13; seed++) {
        fixture_t *fx = fixture_new();
        rng_t r = {seed};
        load_both(fx, &r, 10, 0);
        midway_t m = {fx, &r, 0};
        recalc_all_result_t res = run_all(&fx->a, 2, write_midway, &m);
        assert_int_equal(res.accounts, ACCOUNTS);
        /* saved before the write: left dirty; saved after it: clean */
        assert_true(is_dirty(&fx->a, 0));
        assert_int_equal(dirty_count(&fx->a), 1);
        /* the last account's rows include the midway write: equal to a lazy
         * refresh of every account of B (which has the same writes), once
         * account 0 is brought up to date in A too */
        store_inv_account_t first = {.dirty = true};
        account_uuid(0, first.uuid);
        assert_int_equal(inventory_refresh(fx->a.conn, &first).store, STORE_OK);
        refresh_all_lazily(&fx->b);
        assert_same(fx, "write during the run");
        fixture_free(fx);
    }
}

static void test_other_tenant_untouched(void **state)
{
    (void)state;
    fixture_t *fx = fixture_new();
    rng_t r = {21};
    load_both(fx, &r, 3, 0);
    recalc_all_result_t res = inventory_recalc_all(
        fx->a.store, fx->a.conn, "00000000-0000-4000-8000-0000000000ff", 0, NULL, NULL);
    assert_int_equal(res.store, STORE_OK);
    assert_int_equal(res.accounts, 0);
    assert_int_equal(dirty_count(&fx->a), ACCOUNTS);
    res = inventory_recalc_all(fx->a.store, fx->a.conn, NULL, 0, NULL, NULL); /* every tenant */
    assert_int_equal(res.accounts, ACCOUNTS);
    assert_int_equal(dirty_count(&fx->a), 0);
    fixture_free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_backfill_idempotent),
        cmocka_unit_test(test_write_during_run),
        cmocka_unit_test(test_other_tenant_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
