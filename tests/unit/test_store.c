/* test_store: the SQLite store against real database files in a mkdtemp
 * directory. Each test gets a fresh database; a raw sqlite3 connection stands
 * in for "another process" where a test needs to seed rows the store API
 * cannot write yet (extra filers) or to hold a lock.
 *
 * Locking finding (see test_timeout_exclusive_lock_needs_no_other_connection):
 * in WAL mode every connection keeps a SHARED lock on the database file from
 * its first read until it closes, so "PRAGMA locking_mode=EXCLUSIVE; BEGIN
 * EXCLUSIVE" cannot be taken at all while a store connection is open; it
 * blocks only connections opened after it. An already-open WAL reader cannot
 * be made to wait through the busy handler by any lock: readers only wait on
 * the WAL write lock. So the deadline tests use (a) a writer holding BEGIN
 * IMMEDIATE, which blocks a store write on an already-open connection, and
 * (b) a long read, stopped by the progress handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "store/internal.h"
#include "store/migrations.h"
#include "store/store.h"

#include "scratch_store.h"

/* The seed of a test tenant: its default filer uuid, and a USD uuid derived
 * from it (the last digit group differs). */
static store_tenant_seed_t seed_of(const char *filer_uuid)
{
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid, "%s", filer_uuid);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid, "%.24sffff%.8s", filer_uuid,
             filer_uuid + 28);
    return seed;
}
#define SEED(filer_uuid) (&(store_tenant_seed_t[1]){seed_of(filer_uuid)}[0])

typedef struct fixture {
    char dir[64];
    char path[160];
    store_t *store;
    store_conn_t *conn;
} fixture_t;

/* ---- helpers */


static void fake_uuid(unsigned n, char out[STORE_UUID_LEN])
{
    snprintf(out, STORE_UUID_LEN, "00000000-0000-4000-8000-%012u", n);
}

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static int raw_exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return value;
}

static store_tenant_t make_tenant(unsigned n, const char *name, int64_t created_at)
{
    store_tenant_t tenant;
    memset(&tenant, 0, sizeof tenant);
    fake_uuid(n, tenant.id);
    snprintf(tenant.name, sizeof tenant.name, "%s", name);
    tenant.created_at = created_at;
    return tenant;
}

/* Creates tenant n with default filer uuid n + 100000. */
static store_tenant_t create_tenant(store_conn_t *conn, unsigned n, const char *name)
{
    store_tenant_t tenant = make_tenant(n, name, 1700000000000 + n);
    char filer_uuid[STORE_UUID_LEN];
    fake_uuid(n + 100000, filer_uuid);
    assert_int_equal(store_tenant_create(conn, &tenant, SEED(filer_uuid), NULL), STORE_OK);
    return tenant;
}

static store_credential_t make_credential(const char *client_id, const char *tenant_id)
{
    store_credential_t cred;
    memset(&cred, 0, sizeof cred);
    snprintf(cred.client_id, sizeof cred.client_id, "%s", client_id);
    snprintf(cred.tenant_id, sizeof cred.tenant_id, "%s", tenant_id);
    for (size_t i = 0; i < sizeof cred.secret_hash; i++)
        cred.secret_hash[i] = (uint8_t)(i * 7 + 1);
    cred.scopes = 0x5u;
    cred.created_at = 1700000000123;
    return cred;
}

static int64_t settings_version(store_conn_t *conn)
{
    int64_t version = -1;
    assert_int_equal(store_settings_version(conn, &version), STORE_OK);
    return version;
}

static int fixture_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->store = SCRATCH_STORE_OPEN(fx, "data/db/taxd.db");
    if (fx->store == NULL)
        return -1;
    fx->conn = store_acquire(fx->store);
    *state = fx;
    return fx->conn != NULL ? 0 : -1;
}

static int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx->conn != NULL)
        store_release(fx->store, fx->conn);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

/* ---- schema */

static void test_open_creates_schema(void **state)
{
    fixture_t *fx = *state;
    char dir[200];
    snprintf(dir, sizeof dir, "%s/data", fx->dir);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);

    sqlite3 *db = raw_open(fx->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), store_migrations_latest());
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_list"
                                 " WHERE schema = 'main' AND strict = 1 AND name IN ('tenants',"
                                 " 'credentials', 'rate_limits', 'settings', 'filers')"),
                     5);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_list"
                                 " WHERE schema = 'main' AND type = 'table' AND strict = 0"
                                 " AND name NOT LIKE 'sqlite_%'"),
                     0);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_journal_mode"
                                 " WHERE journal_mode = 'wal'"),
                     1);
    sqlite3_close(db);
    assert_int_equal(settings_version(fx->conn), 0);
    assert_int_equal(store_ping(fx->conn), STORE_OK);
}

/* Decimals are stored as text: no table of any migration has a column that
 * could hold a float (STRICT allows REAL and ANY; neither may appear). */
static void test_schema_has_no_float_columns(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *db = raw_open(fx->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_list AS t,"
                                 " pragma_table_info(t.name) AS c"
                                 " WHERE t.schema = 'main' AND t.type = 'table'"
                                 " AND t.name NOT LIKE 'sqlite_%'"
                                 " AND upper(c.type) IN ('REAL', 'ANY', 'FLOAT', 'DOUBLE', 'NUMERIC')"),
                     0);
    sqlite3_close(db);
}

/* Writing a delivery opens no temporary b-tree: v9 spelled its state CHECK
 * as comparisons, where `IN` of four constants made SQLite open one for
 * every row written (store/migrations.c). */
static void test_delivery_writes_open_no_temporary_btree(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *db = raw_open(fx->path);
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db, "EXPLAIN UPDATE deliveries SET state = ?1"
                                            " WHERE rowid = ?2", -1, &stmt, NULL),
                     SQLITE_OK);
    int ephemeral = 0, ops = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        ops++;
        ephemeral += strcmp((const char *)sqlite3_column_text(stmt, 1), "OpenEphemeral") == 0;
    }
    sqlite3_finalize(stmt);
    assert_true(ops > 0);
    assert_int_equal(ephemeral, 0);
    sqlite3_close(db);
}

/* A database left at v8 with deliveries is upgraded by v9 with every row,
 * its rowid (the dispatcher's handle) and its indexes kept. */
static void test_v9_keeps_deliveries(void **state)
{
    fixture_t *fx = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/v8.db", fx->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(raw_exec(db, "PRAGMA journal_mode = WAL"), SQLITE_OK);
    for (int v = 1; v <= 8; v++)
        assert_int_equal(raw_exec(db, store_migrations_script(v)), SQLITE_OK);
    assert_int_equal(
        raw_exec(db, "PRAGMA user_version = 8;"
                     "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'T', 1);"
                     "INSERT INTO events (id, tenant_id, type, created_at)"
                     " VALUES ('e1', 't1', 'INVENTORY_UPDATE', 1);"
                     "INSERT INTO subscriptions (id, tenant_id, url, events, rate_limit,"
                     " retry_attempts, retry_window_s, timeout_s, auth_mode, state, created_at,"
                     " updated_at) VALUES ('s1', 't1', 'https://x', 'INVENTORY_UPDATE', 1, 0, 1,"
                     " 1, 'source_marker', 'active', 1, 1);"
                     "INSERT INTO deliveries (rowid, id, subscription_id, event_id, trace_id,"
                     " state, attempts, next_attempt_at, created_at, last_status) VALUES"
                     " (7, 'd1', 's1', 'e1', 'tr1', 'failed', 3, 5, 1, 503),"
                     " (9, 'd2', 's1', 'e1', 'tr2', 'pending', 0, 6, 2, NULL);"),
        SQLITE_OK);
    sqlite3_close(db);

    char *err = NULL;
    store_t *store = store_open(path, &err);
    assert_non_null(store);
    assert_null(err);
    store_close(store);
    db = raw_open(path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), store_migrations_latest());
    assert_int_equal(raw_int(db, "SELECT count(*) FROM deliveries WHERE rowid = 7 AND id = 'd1'"
                                 " AND state = 'failed' AND attempts = 3 AND last_status = 503"),
                     1);
    assert_int_equal(raw_int(db, "SELECT rowid FROM deliveries INDEXED BY deliveries_due"
                                 " WHERE subscription_id = 's1' AND state = 'pending'"
                                 " AND next_attempt_at <= 6"),
                     9);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema"
                                 " WHERE tbl_name = 'deliveries' AND type = 'index'"),
                     6); /* the primary key's and the five of v8 */
    assert_int_not_equal(raw_exec(db, "UPDATE deliveries SET state = 'lost' WHERE rowid = 7"),
                         SQLITE_OK);
    assert_int_equal(raw_exec(db, "PRAGMA foreign_keys = ON"), SQLITE_OK);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    sqlite3_close(db);
}

/* A v9 database: tenant t1 with account a1 (owner o1, filer f1), assets BTC and
 * USD, and two transactions: x1 (sent USD, received BTC with a rate, fee
 * USD; its lines written out of order) and x2 (received BTC). */
static void make_v9_with_transactions(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(raw_exec(db, "PRAGMA journal_mode = WAL"), SQLITE_OK);
    for (int v = 1; v <= 9; v++)
        assert_int_equal(raw_exec(db, store_migrations_script(v)), SQLITE_OK);
    assert_int_equal(
        raw_exec(db,
                 "PRAGMA user_version = 9;"
                 "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'T', 1);"
                 "INSERT INTO filers (uuid, tenant_id, id, name, is_default, created_at,"
                 " updated_at) VALUES ('f1', 't1', 'default', 'F', 1, 1, 1);"
                 "INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
                 " created_at, updated_at) VALUES ('o1', 't1', 'owner', 'O', 'individual', 1, 1);"
                 "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid,"
                 " cost_basis_method, created_at, updated_at) VALUES"
                 " ('a1', 't1', 'acct', 'o1', 'f1', 'FIFO', 5, 5),"
                 " ('a0', 't1', 'first', 'o1', 'f1', 'FIFO', 2, 2);"
                 "INSERT INTO assets (uuid, tenant_id, code, name, type, created_at) VALUES"
                 " ('b1', 't1', 'BTC', 'Bitcoin', 'crypto', 1),"
                 " ('u1', 't1', 'USD', 'US Dollar', 'fiat', 1);"
                 "INSERT INTO transactions (uuid, tenant_id, id, account_uuid, datetime, type,"
                 " body, created_at, updated_at) VALUES"
                 " ('0000000a-0000-4000-8000-00000000000b', 't1', 'x2', 'a1', 20, 'deposit',"
                 " '{\"id\":\"x2\"}', 30, 31),"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 't1', 'x1', 'a1', 10, 'trade',"
                 " '{\"id\":\"x1\"}', 20, 21);"
                 "INSERT INTO transaction_lines (transaction_uuid, kind, idx, asset_code, amount,"
                 " usd_rate) VALUES"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 2, 0, 'USD', '1.25', NULL),"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 1, 0, 'BTC', '0.5', '40000'),"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 0, 0, 'USD', '20000', NULL),"
                 " ('0000000a-0000-4000-8000-00000000000b', 1, 0, 'BTC', '2', NULL);"
                 "INSERT INTO transaction_assets (transaction_uuid, asset_uuid) VALUES"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 'b1'),"
                 " ('ABCDEF01-2345-4678-89ab-cdef01234567', 'u1'),"
                 " ('0000000a-0000-4000-8000-00000000000b', 'b1');"),
        SQLITE_OK);
    sqlite3_close(db);
}

/* v10 carries every transaction over: in arrival order, with its uuid as
 * 16 bytes that read back as the same text, its lines encoded sent, then
 * received, then fees; accounts get seqs in creation order and assets the
 * count of transactions that name them. */
static void test_v10_keeps_transactions(void **state)
{
    fixture_t *fx = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/v9.db", fx->dir);
    make_v9_with_transactions(path);
    char *err = NULL;
    store_t *store = store_open(path, &err);
    assert_non_null(store);
    assert_null(err);
    store_close(store);
    sqlite3 *db = raw_open(path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), store_migrations_latest());
    assert_int_equal(raw_int(db, "SELECT seq FROM accounts WHERE uuid = 'a0'"), 1);
    assert_int_equal(raw_int(db, "SELECT seq FROM accounts WHERE uuid = 'a1'"), 2);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM transactions WHERE seq = 1 AND id = 'x1'"
                                 " AND account = 2 AND datetime = 10 AND type = 'trade'"
                                 " AND created_at = 20 AND updated_at = 21"
                                 " AND lines = 'sUSD 20000;rBTC 0.5@40000;fUSD 1.25'"
                                 " AND hex(uuid) = 'ABCDEF012345467889ABCDEF01234567'"
                                 " AND tenant = (SELECT rowid FROM tenants WHERE id = 't1')"),
                     1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM transactions WHERE seq = 2 AND id = 'x2'"
                                 " AND lines = 'rBTC 2'"),
                     1);
    assert_int_equal(raw_int(db, "SELECT tx_refs FROM assets WHERE code = 'BTC'"), 2);
    assert_int_equal(raw_int(db, "SELECT tx_refs FROM assets WHERE code = 'USD'"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name IN"
                                 " ('transaction_lines', 'transaction_assets')"),
                     0);
    /* an account made after the upgrade gets the next seq without naming it */
    assert_int_equal(raw_exec(db, "INSERT INTO accounts (uuid, tenant_id, id, owner_uuid,"
                                  " filer_uuid, cost_basis_method, created_at, updated_at)"
                                  " VALUES ('a2', 't1', 'new', 'o1', 'f1', 'FIFO', 9, 9)"),
                     SQLITE_OK);
    assert_int_equal(raw_int(db, "SELECT seq FROM accounts WHERE uuid = 'a2'"), 3);
    assert_int_equal(raw_exec(db, "PRAGMA foreign_keys = ON"), SQLITE_OK);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    sqlite3_close(db);
}

/* A transaction whose stored uuid is not one fails v10, which says so and
 * leaves the database as it was: at v9, with its rows. */
static void test_v10_failure_leaves_v9(void **state)
{
    fixture_t *fx = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/v9bad.db", fx->dir);
    make_v9_with_transactions(path);
    sqlite3 *db = raw_open(path);
    assert_int_equal(raw_exec(db, "UPDATE transactions SET uuid = 'not-a-uuid' WHERE id = 'x2'"),
                     SQLITE_OK);
    sqlite3_close(db);
    char *err = NULL;
    assert_null(store_open(path, &err));
    assert_non_null(err);
    assert_non_null(strstr(err, "version 10"));
    assert_non_null(strstr(err, "uuid"));
    free(err);
    db = raw_open(path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 9);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM transaction_lines"), 4);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM transactions WHERE account_uuid = 'a1'"), 2);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info('accounts')"
                                 " WHERE name = 'seq'"),
                     0);
    sqlite3_close(db);
}

/* Every connection, pooled or the group commit's writer, runs with an fsync
 * per commit (a 2xx survives power loss), foreign keys enforced and WAL. */
static void assert_connection_configured(sqlite3 *db)
{
    assert_int_equal(raw_int(db, "PRAGMA synchronous"), 2); /* FULL */
    assert_int_equal(raw_int(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_journal_mode"
                                 " WHERE journal_mode = 'wal'"),
                     1);
}

static void test_connections_are_configured(void **state)
{
    fixture_t *fx = *state;
    store_conn_t *second = store_acquire(fx->store);
    assert_non_null(second);
    store_conn_t *writer = conn_open_writer(fx->store);
    assert_non_null(writer);
    assert_connection_configured((sqlite3 *)fx->conn->native);
    assert_connection_configured((sqlite3 *)second->native);
    assert_connection_configured((sqlite3 *)writer->native);
    conn_close_writer(writer);
    store_release(fx->store, second);
}

static void test_reopen_keeps_data(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 1, "Kept");
    store_release(fx->store, fx->conn);
    fx->conn = NULL;
    store_close(fx->store);

    char *err = NULL;
    fx->store = store_open(fx->path, &err);
    assert_non_null(fx->store);
    assert_null(err);
    fx->conn = store_acquire(fx->store);
    assert_non_null(fx->conn);
    store_tenant_t got;
    assert_int_equal(store_tenant_get(fx->conn, tenant.id, &got), STORE_OK);
    assert_string_equal(got.name, "Kept");
}

/* Several processes open a new database at once: each must succeed, and the
 * schema must be applied exactly once (a second run of v1 would fail on
 * CREATE TABLE, so every child succeeding proves the user_version check). */
static void test_concurrent_open_of_new_database(void **state)
{
    fixture_t *fx = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/fresh/concurrent.db", fx->dir);
    enum { CHILDREN = 4 };
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] != 0)
            continue;
        close(gate[1]);
        char byte;
        ssize_t got = read(gate[0], &byte, 1); /* returns 0 when the parent opens the gate */
        (void)got;
        char *err = NULL;
        store_t *store = store_open(path, &err);
        if (store == NULL) {
            fprintf(stderr, "child store_open: %s\n", err != NULL ? err : "?");
            _exit(1);
        }
        store_conn_t *conn = store_acquire(store);
        store_tenant_t tenant = make_tenant(900 + (unsigned)i, "child", 1);
        char filer_uuid[STORE_UUID_LEN];
        fake_uuid(1900 + (unsigned)i, filer_uuid);
        int rc = conn != NULL && store_tenant_create(conn, &tenant, SEED(filer_uuid), NULL) == STORE_OK;
        store_release(store, conn);
        store_close(store);
        _exit(rc ? 0 : 2);
    }
    close(gate[0]);
    close(gate[1]);
    for (int i = 0; i < CHILDREN; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    sqlite3 *db = raw_open(path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), store_migrations_latest());
    assert_int_equal(raw_int(db, "SELECT count(*) FROM settings"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM tenants"), CHILDREN);
    sqlite3_close(db);
}

/* ---- tenants and the default filer */

typedef struct collected {
    int count;
    char ids[64][STORE_ID_MAX];
    int stop_after; /* 0 = never */
} collected_t;

static int collect_tenant(const store_tenant_t *tenant, void *ctx)
{
    collected_t *c = ctx;
    snprintf(c->ids[c->count++], STORE_ID_MAX, "%s", tenant->id);
    return c->stop_after != 0 && c->count >= c->stop_after;
}

static void test_tenant_create_get_each(void **state)
{
    fixture_t *fx = *state;
    /* Created out of id order: each walks in creation order. */
    store_tenant_t t3 = create_tenant(fx->conn, 3, "Three");
    store_tenant_t t1 = create_tenant(fx->conn, 1, "One");
    store_tenant_t t2 = create_tenant(fx->conn, 2, "Two");

    store_tenant_t got;
    assert_int_equal(store_tenant_get(fx->conn, t1.id, &got), STORE_OK);
    assert_string_equal(got.id, t1.id);
    assert_string_equal(got.name, "One");
    assert_int_equal(got.created_at, t1.created_at);
    assert_int_equal(store_tenant_get(fx->conn, "00000000-0000-4000-8000-999999999999", &got),
                     STORE_NOT_FOUND);

    collected_t c = {0};
    assert_int_equal(store_tenant_each(fx->conn, collect_tenant, &c), STORE_OK);
    assert_int_equal(c.count, 3);
    assert_string_equal(c.ids[0], t3.id);
    assert_string_equal(c.ids[1], t1.id);
    assert_string_equal(c.ids[2], t2.id);

    collected_t stop = {.stop_after = 2};
    assert_int_equal(store_tenant_each(fx->conn, collect_tenant, &stop), STORE_OK);
    assert_int_equal(stop.count, 2);

    /* A taken tenant id is a conflict, and nothing of it is written. */
    store_tenant_t dup = make_tenant(1, "Dup", 5);
    char filer_uuid[STORE_UUID_LEN];
    fake_uuid(555555, filer_uuid);
    assert_int_equal(store_tenant_create(fx->conn, &dup, SEED(filer_uuid), NULL), STORE_CONFLICT);
    assert_int_equal(store_tenant_get(fx->conn, t1.id, &got), STORE_OK);
    assert_string_equal(got.name, "One");
    /* A taken filer uuid rolls back the tenant as well. */
    store_tenant_t t9 = make_tenant(9, "Nine", 9);
    fake_uuid(100001, filer_uuid); /* t1's default filer */
    assert_int_equal(store_tenant_create(fx->conn, &t9, SEED(filer_uuid), NULL), STORE_CONFLICT);
    assert_int_equal(store_tenant_get(fx->conn, t9.id, &got), STORE_NOT_FOUND);
}

/* A tenant never exists half-made: with its first credential it is created
 * whole, and a conflict on the credential leaves no tenant behind. */
static void test_tenant_with_first_credential(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = make_tenant(21, "Whole", 21);
    char filer_uuid[STORE_UUID_LEN];
    fake_uuid(121, filer_uuid);
    store_credential_t first = make_credential("cl_first", tenant.id);
    assert_int_equal(store_tenant_create(fx->conn, &tenant, SEED(filer_uuid), &first), STORE_OK);
    store_credential_t got;
    assert_int_equal(store_credential_get(fx->conn, "cl_first", &got), STORE_OK);
    assert_string_equal(got.tenant_id, tenant.id);
    assert_int_equal(got.last_used_at, 0);

    store_tenant_t other = make_tenant(22, "Half", 22);
    fake_uuid(122, filer_uuid);
    store_credential_t taken = make_credential("cl_first", other.id);
    assert_int_equal(store_tenant_create(fx->conn, &other, SEED(filer_uuid), &taken), STORE_CONFLICT);
    store_tenant_t missing;
    assert_int_equal(store_tenant_get(fx->conn, other.id, &missing), STORE_NOT_FOUND);
    store_filer_t filer;
    assert_int_equal(store_filer_get(fx->conn, other.id, "default", &filer), STORE_NOT_FOUND);

    /* The credential's tenant must be the new tenant. */
    store_tenant_t third = make_tenant(23, "Third", 23);
    fake_uuid(123, filer_uuid);
    store_credential_t foreign = make_credential("cl_foreign", tenant.id);
    assert_int_equal(store_tenant_create(fx->conn, &third, SEED(filer_uuid), &foreign), STORE_ERROR);
}

/* Minting a token records its time on the credential. */
static void test_credential_touch(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 31, "Touch");
    store_credential_t cred = make_credential("cl_touch", tenant.id);
    assert_int_equal(store_credential_create(fx->conn, &cred), STORE_OK);
    assert_int_equal(store_credential_touch(fx->conn, "cl_touch", 1700000009999), STORE_OK);
    store_credential_t got;
    assert_int_equal(store_credential_get(fx->conn, "cl_touch", &got), STORE_OK);
    assert_int_equal(got.last_used_at, 1700000009999);
    assert_int_equal(store_credential_touch(fx->conn, "cl_nobody", 1), STORE_NOT_FOUND);
}

static void test_default_filer(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 7, "Seven");
    store_filer_t filer;
    assert_int_equal(store_filer_get(fx->conn, tenant.id, "default", &filer), STORE_OK);
    char expected_uuid[STORE_UUID_LEN];
    fake_uuid(100007, expected_uuid);
    assert_string_equal(filer.uuid, expected_uuid);
    assert_string_equal(filer.id, "default");
    assert_string_equal(filer.name, "Default filer");
    assert_true(filer.is_default);
    assert_int_equal(filer.created_at, tenant.created_at);
    assert_int_equal(filer.updated_at, tenant.created_at);
    assert_int_equal(store_filer_get(fx->conn, tenant.id, "other", &filer), STORE_NOT_FOUND);

    store_tenant_t other = create_tenant(fx->conn, 8, "Eight");
    assert_int_equal(store_filer_get(fx->conn, other.id, "default", &filer), STORE_OK);
    fake_uuid(100008, expected_uuid);
    assert_string_equal(filer.uuid, expected_uuid);
}

/* ---- credentials */

static int collect_client(const char *client_id, void *ctx)
{
    collected_t *c = ctx;
    snprintf(c->ids[c->count++], STORE_ID_MAX, "%s", client_id);
    return 0;
}

static void test_credentials(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 1, "One");
    store_credential_t cred = make_credential("client-a", tenant.id);
    assert_int_equal(store_credential_create(fx->conn, &cred), STORE_OK);

    store_credential_t got;
    memset(&got, 0xff, sizeof got);
    assert_int_equal(store_credential_get(fx->conn, "client-a", &got), STORE_OK);
    assert_string_equal(got.client_id, "client-a");
    assert_string_equal(got.tenant_id, tenant.id);
    assert_memory_equal(got.secret_hash, cred.secret_hash, sizeof cred.secret_hash);
    assert_int_equal(got.scopes, 0x5u);
    assert_int_equal(got.created_at, cred.created_at);
    assert_int_equal(got.revoked_at, 0);
    assert_int_equal(store_credential_get(fx->conn, "client-x", &got), STORE_NOT_FOUND);

    assert_int_equal(store_credential_create(fx->conn, &cred), STORE_CONFLICT);
    store_credential_t orphan = make_credential("client-b", "00000000-0000-4000-8000-999999999999");
    assert_int_equal(store_credential_create(fx->conn, &orphan), STORE_NOT_FOUND);
    assert_int_equal(store_credential_get(fx->conn, "client-b", &got), STORE_NOT_FOUND);

    store_credential_t cred_c = make_credential("client-c", tenant.id);
    cred_c.scopes = 0xffffffffu;
    assert_int_equal(store_credential_create(fx->conn, &cred_c), STORE_OK);
    assert_int_equal(store_credential_get(fx->conn, "client-c", &got), STORE_OK);
    assert_int_equal(got.scopes, 0xffffffffu);

    collected_t revoked = {0};
    assert_int_equal(store_revoked_each(fx->conn, collect_client, &revoked), STORE_OK);
    assert_int_equal(revoked.count, 0);

    int64_t v0 = settings_version(fx->conn);
    assert_int_equal(store_credential_revoke(fx->conn, "client-c", 1800000000000), STORE_OK);
    int64_t v1 = settings_version(fx->conn);
    assert_true(v1 > v0);
    assert_int_equal(store_credential_get(fx->conn, "client-c", &got), STORE_OK);
    assert_int_equal(got.revoked_at, 1800000000000);

    /* Revoking twice keeps the first time. */
    assert_int_equal(store_credential_revoke(fx->conn, "client-c", 1900000000000), STORE_OK);
    assert_int_equal(store_credential_get(fx->conn, "client-c", &got), STORE_OK);
    assert_int_equal(got.revoked_at, 1800000000000);
    assert_int_equal(store_credential_revoke(fx->conn, "client-x", 1), STORE_NOT_FOUND);

    assert_int_equal(store_credential_revoke(fx->conn, "client-a", 1800000000001), STORE_OK);
    assert_true(settings_version(fx->conn) > v1);
    assert_int_equal(store_revoked_each(fx->conn, collect_client, &revoked), STORE_OK);
    assert_int_equal(revoked.count, 2);
    assert_string_equal(revoked.ids[0], "client-a");
    assert_string_equal(revoked.ids[1], "client-c");
}

/* ---- rate limits and the settings version */

static int collect_limit(const store_rate_limit_t *limit, void *ctx)
{
    store_rate_limit_t *out = ctx;
    int i = 0;
    while (out[i].rate != 0)
        i++;
    out[i] = *limit;
    return 0;
}

static void test_rate_limits(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 1, "One");
    int64_t version = settings_version(fx->conn);

    store_rate_limit_t rule = {.rate = 10, .burst = 20};
    snprintf(rule.tenant_id, sizeof rule.tenant_id, "%s", tenant.id);
    assert_int_equal(store_rate_limit_set(fx->conn, &rule), STORE_OK); /* tenant default */
    assert_true(settings_version(fx->conn) > version);
    version = settings_version(fx->conn);

    store_rate_limit_t all = {.tenant_id = "", .route = "POST /v1/reports", .rate = 5, .burst = 5};
    assert_int_equal(store_rate_limit_set(fx->conn, &all), STORE_OK);
    assert_true(settings_version(fx->conn) > version);
    version = settings_version(fx->conn);

    rule.rate = 4000000000u; /* replace, with a value above INT32_MAX */
    rule.burst = 1;
    assert_int_equal(store_rate_limit_set(fx->conn, &rule), STORE_OK);
    assert_true(settings_version(fx->conn) > version);
    version = settings_version(fx->conn);

    store_rate_limit_t unknown = {.tenant_id = "00000000-0000-4000-8000-999999999999",
                                  .route = "",
                                  .rate = 1,
                                  .burst = 1};
    assert_int_equal(store_rate_limit_set(fx->conn, &unknown), STORE_NOT_FOUND);
    assert_int_equal(settings_version(fx->conn), version);

    store_rate_limit_t got[8];
    memset(got, 0, sizeof got);
    assert_int_equal(store_rate_limit_each(fx->conn, collect_limit, got), STORE_OK);
    assert_string_equal(got[0].tenant_id, ""); /* ordered by tenant, then route */
    assert_string_equal(got[0].route, "POST /v1/reports");
    assert_int_equal(got[0].rate, 5);
    assert_string_equal(got[1].tenant_id, tenant.id);
    assert_string_equal(got[1].route, "");
    assert_int_equal(got[1].rate, 4000000000u);
    assert_int_equal(got[1].burst, 1);
    assert_int_equal(got[2].rate, 0);
}

/* ---- filer pagination */

typedef struct filer_page {
    int count;
    char ids[16][STORE_ID_MAX];
    int stop_after;
} filer_page_t;

static int collect_filer(const store_filer_t *filer, void *ctx)
{
    filer_page_t *page = ctx;
    snprintf(page->ids[page->count++], STORE_ID_MAX, "%s", filer->id);
    return page->stop_after != 0 && page->count >= page->stop_after;
}

static void test_filer_list_pagination(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 1, "One");
    store_tenant_t other = create_tenant(fx->conn, 2, "Two");
    /* Seeded raw: the store API creates only default filers so far. */
    sqlite3 *db = raw_open(fx->path);
    char sql[512];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6)"
             " INSERT INTO filers (uuid, tenant_id, id, name, is_default, created_at, updated_at)"
             " SELECT printf('10000000-0000-4000-8000-%%012d', i), '%s',"
             " printf('f%%02d', i), 'Filer', 0, 1, 1 FROM n",
             tenant.id);
    assert_int_equal(raw_exec(db, sql), SQLITE_OK);
    snprintf(sql, sizeof sql,
             "INSERT INTO filers (uuid, tenant_id, id, name, is_default, created_at, updated_at)"
             " VALUES ('20000000-0000-4000-8000-000000000001', '%s', 'f00',"
             " 'Other', 0, 1, 1)",
             other.id);
    assert_int_equal(raw_exec(db, sql), SQLITE_OK);
    sqlite3_close(db);

    /* Ids in byte order: default, f01 .. f06. */
    filer_page_t page = {0};
    bool more = false;
    assert_int_equal(store_filer_list(fx->conn, tenant.id, NULL, 3, collect_filer, &page, &more),
                     STORE_OK);
    assert_int_equal(page.count, 3);
    assert_string_equal(page.ids[0], "default");
    assert_string_equal(page.ids[1], "f01");
    assert_string_equal(page.ids[2], "f02");
    assert_true(more);

    filer_page_t page2 = {0};
    assert_int_equal(store_filer_list(fx->conn, tenant.id, "f02", 3, collect_filer, &page2, &more),
                     STORE_OK);
    assert_int_equal(page2.count, 3);
    assert_string_equal(page2.ids[0], "f03");
    assert_string_equal(page2.ids[2], "f05");
    assert_true(more);

    filer_page_t page3 = {0};
    assert_int_equal(store_filer_list(fx->conn, tenant.id, "f05", 3, collect_filer, &page3, &more),
                     STORE_OK);
    assert_int_equal(page3.count, 1);
    assert_string_equal(page3.ids[0], "f06");
    assert_false(more);

    /* A page that ends exactly at the last row has nothing more. */
    filer_page_t exact = {0};
    assert_int_equal(store_filer_list(fx->conn, tenant.id, "f03", 3, collect_filer, &exact, &more),
                     STORE_OK);
    assert_int_equal(exact.count, 3);
    assert_false(more);

    filer_page_t empty = {0};
    more = true;
    assert_int_equal(store_filer_list(fx->conn, tenant.id, "f06", 3, collect_filer, &empty, &more),
                     STORE_OK);
    assert_int_equal(empty.count, 0);
    assert_false(more);

    /* Stopped by the callback: more still tells whether rows follow. */
    filer_page_t stopped = {.stop_after = 1};
    assert_int_equal(store_filer_list(fx->conn, tenant.id, "", 3, collect_filer, &stopped, &more),
                     STORE_OK);
    assert_int_equal(stopped.count, 1);
    assert_true(more);

    filer_page_t others = {0};
    assert_int_equal(store_filer_list(fx->conn, other.id, NULL, 10, collect_filer, &others, &more),
                     STORE_OK);
    assert_int_equal(others.count, 2);
    assert_string_equal(others.ids[0], "default");
    assert_string_equal(others.ids[1], "f00");
    assert_false(more);
}

/* ---- text round trips */

static void test_strings_round_trip(void **state)
{
    fixture_t *fx = *state;
    const char *odd = "O'Brien \"quoted\" 100% _x_ a/b\\c ünïcødé 日本語 🙂";
    store_tenant_t tenant = make_tenant(1, odd, 1);
    char filer_uuid[STORE_UUID_LEN];
    fake_uuid(2, filer_uuid);
    assert_int_equal(store_tenant_create(fx->conn, &tenant, SEED(filer_uuid), NULL), STORE_OK);
    store_tenant_t got;
    assert_int_equal(store_tenant_get(fx->conn, tenant.id, &got), STORE_OK);
    assert_string_equal(got.name, odd);

    /* '%' and '_' are not wildcards anywhere: a near miss is not found. */
    store_credential_t cred = make_credential("cl'i%ent/ü\"x", tenant.id);
    assert_int_equal(store_credential_create(fx->conn, &cred), STORE_OK);
    store_credential_t cred_got;
    assert_int_equal(store_credential_get(fx->conn, "cl'i%ent/ü\"x", &cred_got), STORE_OK);
    assert_string_equal(cred_got.client_id, "cl'i%ent/ü\"x");
    assert_int_equal(store_credential_get(fx->conn, "cl'i%", &cred_got), STORE_NOT_FOUND);
    assert_int_equal(store_credential_get(fx->conn, "cl'i_ent/ü\"x", &cred_got), STORE_NOT_FOUND);

    store_rate_limit_t rule = {.tenant_id = "", .rate = 1, .burst = 2};
    snprintf(rule.route, sizeof rule.route, "GET /v1/it's/%%2F/\"日本\"");
    assert_int_equal(store_rate_limit_set(fx->conn, &rule), STORE_OK);
    store_rate_limit_t limits[4];
    memset(limits, 0, sizeof limits);
    assert_int_equal(store_rate_limit_each(fx->conn, collect_limit, limits), STORE_OK);
    assert_string_equal(limits[0].route, "GET /v1/it's/%2F/\"日本\"");

    /* The longest name fits exactly; an unterminated one is refused. */
    store_tenant_t longest = make_tenant(3, "", 1);
    memset(longest.name, 'n', STORE_NAME_MAX - 1);
    longest.name[STORE_NAME_MAX - 2] = '\xe9'; /* bytes, not characters, are the limit */
    fake_uuid(4, filer_uuid);
    assert_int_equal(store_tenant_create(fx->conn, &longest, SEED(filer_uuid), NULL), STORE_OK);
    assert_int_equal(store_tenant_get(fx->conn, longest.id, &got), STORE_OK);
    assert_string_equal(got.name, longest.name);
    store_tenant_t unterminated = make_tenant(5, "", 1);
    memset(unterminated.name, 'n', sizeof unterminated.name);
    fake_uuid(6, filer_uuid);
    assert_int_equal(store_tenant_create(fx->conn, &unterminated, SEED(filer_uuid), NULL), STORE_ERROR);
}

/* ---- deadlines */

/* A writer holding the WAL write lock blocks a store write on a connection
 * that was open (and used) before the lock; reads go on, as WAL promises. */
static void test_timeout_write_locked(void **state)
{
    fixture_t *fx = *state;
    store_tenant_t tenant = create_tenant(fx->conn, 1, "One"); /* connection opened and used */
    store_rate_limit_t rule = {.route = "GET /v1/x", .rate = 1, .burst = 1};

    sqlite3 *locker = raw_open(fx->path);
    assert_int_equal(raw_exec(locker, "BEGIN IMMEDIATE; UPDATE settings SET version = version"),
                     SQLITE_OK);

    store_set_deadline(fx->conn, clock_monotonic_ms() + 200);
    int64_t started = clock_monotonic_ms();
    assert_int_equal(store_rate_limit_set(fx->conn, &rule), STORE_TIMEOUT);
    int64_t elapsed = clock_monotonic_ms() - started;
    assert_in_range(elapsed, 190, 1000);

    store_tenant_t got;
    store_set_deadline(fx->conn, clock_monotonic_ms() + 200);
    assert_int_equal(store_tenant_get(fx->conn, tenant.id, &got), STORE_OK);

    /* The failed write left no transaction behind, and works once the lock is gone. */
    assert_int_equal(raw_exec(locker, "ROLLBACK"), SQLITE_OK);
    sqlite3_close(locker);
    store_set_deadline(fx->conn, clock_monotonic_ms() + 2000);
    assert_int_equal(store_rate_limit_set(fx->conn, &rule), STORE_OK);
}

/* The brief's method: an EXCLUSIVE lock in WAL mode. It cannot even be taken
 * while a store connection is open (each WAL connection holds a SHARED lock on
 * the database file for its whole life); taken while none is open, it blocks
 * store_open, which has no deadline, for the default 5 s bound. */
static void test_timeout_exclusive_lock_needs_no_other_connection(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *locker = raw_open(fx->path);
    sqlite3_busy_timeout(locker, 50);
    assert_int_equal(raw_exec(locker, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;"
                                      " SELECT count(*) FROM tenants"),
                     SQLITE_BUSY);
    sqlite3_close(locker);

    store_release(fx->store, fx->conn);
    fx->conn = NULL;
    store_close(fx->store);
    fx->store = NULL;
    locker = raw_open(fx->path);
    assert_int_equal(raw_exec(locker, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;"
                                      " SELECT count(*) FROM tenants"),
                     SQLITE_OK);
    char *err = NULL;
    int64_t started = clock_monotonic_ms();
    store_t *blocked = store_open(fx->path, &err);
    int64_t elapsed = clock_monotonic_ms() - started;
    assert_null(blocked);
    assert_non_null(err);
    assert_non_null(strstr(err, "locked"));
    free(err);
    assert_in_range(elapsed, 4900, 7000);
    sqlite3_close(locker);

    fx->store = store_open(fx->path, &err);
    assert_non_null(fx->store);
    fx->conn = store_acquire(fx->store);
    assert_non_null(fx->conn);
}

typedef struct slow_walk {
    int rows;
} slow_walk_t;

static int slow_tenant(const store_tenant_t *tenant, void *ctx)
{
    (void)tenant;
    slow_walk_t *walk = ctx;
    walk->rows++;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000};
    nanosleep(&pause, NULL);
    return 0;
}

/* A statement still running at the deadline is interrupted. */
static void test_timeout_long_read(void **state)
{
    fixture_t *fx = *state;
    sqlite3 *db = raw_open(fx->path);
    assert_int_equal(raw_exec(db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1"
                                  " FROM n WHERE i < 5000) INSERT INTO tenants"
                                  " SELECT printf('t%05d', i), 'name', i FROM n"),
                     SQLITE_OK);
    sqlite3_close(db);

    slow_walk_t walk = {0};
    store_set_deadline(fx->conn, clock_monotonic_ms() + 100);
    int64_t started = clock_monotonic_ms();
    assert_int_equal(store_tenant_each(fx->conn, slow_tenant, &walk), STORE_TIMEOUT);
    assert_in_range(clock_monotonic_ms() - started, 95, 1000);
    assert_in_range(walk.rows, 1, 4999);

    /* A call made after its deadline does nothing; clearing it restores service. */
    store_tenant_t got;
    assert_int_equal(store_tenant_get(fx->conn, "t00001", &got), STORE_TIMEOUT);
    store_set_deadline(fx->conn, 0);
    assert_int_equal(store_tenant_get(fx->conn, "t00001", &got), STORE_OK);
}

/* ---- the pool */

enum { POOL_THREADS = 4 };

typedef struct pool_run {
    store_t *store;
    pthread_barrier_t all_acquired;
    store_conn_t *conns[POOL_THREADS];
    store_status_t ping[POOL_THREADS];
} pool_run_t;

typedef struct pool_arg {
    pool_run_t *run;
    int index;
} pool_arg_t;

static void *pool_worker(void *p)
{
    pool_arg_t *arg = p;
    store_conn_t *conn = store_acquire(arg->run->store);
    arg->run->conns[arg->index] = conn;
    arg->run->ping[arg->index] = conn != NULL ? store_ping(conn) : STORE_ERROR;
    /* Everyone holds a connection at once before anyone gives one back. */
    pthread_barrier_wait(&arg->run->all_acquired);
    store_release(arg->run->store, conn);
    return NULL;
}

static void test_pool_distinct_and_reused(void **state)
{
    fixture_t *fx = *state;
    pool_run_t run = {.store = fx->store};
    pthread_barrier_init(&run.all_acquired, NULL, POOL_THREADS);
    pthread_t threads[POOL_THREADS];
    pool_arg_t args[POOL_THREADS];
    for (int i = 0; i < POOL_THREADS; i++) {
        args[i] = (pool_arg_t){&run, i};
        assert_int_equal(pthread_create(&threads[i], NULL, pool_worker, &args[i]), 0);
    }
    for (int i = 0; i < POOL_THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&run.all_acquired);

    for (int i = 0; i < POOL_THREADS; i++) {
        assert_non_null(run.conns[i]);
        assert_int_equal(run.ping[i], STORE_OK);
        assert_ptr_not_equal(run.conns[i], fx->conn);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(run.conns[i], run.conns[j]);
    }

    /* Released connections come back instead of new ones. */
    store_conn_t *again[POOL_THREADS];
    for (int i = 0; i < POOL_THREADS; i++) {
        again[i] = store_acquire(fx->store);
        bool known = false;
        for (int j = 0; j < POOL_THREADS; j++)
            known = known || again[i] == run.conns[j];
        assert_true(known);
    }
    for (int i = 0; i < POOL_THREADS; i++)
        store_release(fx->store, again[i]);
    store_conn_t *one = store_acquire(fx->store);
    store_release(fx->store, one);
    assert_ptr_equal(store_acquire(fx->store), one);
    store_release(fx->store, one);
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(store_status_name(STORE_OK), "ok");
    assert_string_equal(store_status_name(STORE_NOT_FOUND), "not_found");
    assert_string_equal(store_status_name(STORE_CONFLICT), "conflict");
    assert_string_equal(store_status_name(STORE_TIMEOUT), "timeout");
    assert_string_equal(store_status_name(STORE_ERROR), "error");
}

static void test_open_fails_cleanly(void **state)
{
    fixture_t *fx = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/data/db/taxd.db/inside.db", fx->dir); /* parent is a file */
    char *err = NULL;
    assert_null(store_open(path, &err));
    assert_non_null(err);
    free(err);
}

#define FIXTURE_TEST(name) cmocka_unit_test_setup_teardown(name, fixture_setup, fixture_teardown)

int main(void)
{
    /* e.g. TEST_FILTER='test_timeout_*' to run a few tests in a loop */
    const char *filter = getenv("TEST_FILTER");
    if (filter != NULL)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_open_creates_schema),
        FIXTURE_TEST(test_schema_has_no_float_columns),
        FIXTURE_TEST(test_delivery_writes_open_no_temporary_btree),
        FIXTURE_TEST(test_v9_keeps_deliveries),
        FIXTURE_TEST(test_v10_keeps_transactions),
        FIXTURE_TEST(test_v10_failure_leaves_v9),
        FIXTURE_TEST(test_connections_are_configured),
        FIXTURE_TEST(test_reopen_keeps_data),
        FIXTURE_TEST(test_concurrent_open_of_new_database),
        FIXTURE_TEST(test_tenant_create_get_each),
        FIXTURE_TEST(test_tenant_with_first_credential),
        FIXTURE_TEST(test_credential_touch),
        FIXTURE_TEST(test_default_filer),
        FIXTURE_TEST(test_credentials),
        FIXTURE_TEST(test_rate_limits),
        FIXTURE_TEST(test_filer_list_pagination),
        FIXTURE_TEST(test_strings_round_trip),
        FIXTURE_TEST(test_timeout_write_locked),
        FIXTURE_TEST(test_timeout_exclusive_lock_needs_no_other_connection),
        FIXTURE_TEST(test_timeout_long_read),
        FIXTURE_TEST(test_pool_distinct_and_reused),
        FIXTURE_TEST(test_open_fails_cleanly),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
