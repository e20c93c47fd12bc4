/* test_store_pg: the PostgreSQL backend's own rules (store/pg.c), the ones
 * the API suite cannot see: ?N rewriting outside literals, bytea with a 0
 * byte, the deadline's cancel, lost sessions (inside and outside a
 * transaction) and the password kept out of a failed connect's message.
 *
 * It needs a server: TAXD_TEST_PG is the URL of a role that may create
 * temporary tables (tests/pg/cluster.sh prints one). Without it every test
 * is skipped, and says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "store/backend.h"
#include "store/internal.h"

#include "scratch_pg.h"


/* A bare backend connection (no pool, no schema): what pg.c alone promises. */
static store_conn_t *pg_open(void)
{
    store_conn_t *conn = calloc(1, sizeof *conn);
    assert_non_null(conn);
    conn->be = &store_pg_backend;
    char *err = NULL;
    if (!store_pg_backend.connect(conn, scratch_pg_url(), &err))
        fail_msg("connect: %s", err != NULL ? err : "?");
    return conn;
}

static void pg_close(store_conn_t *conn)
{
    for (size_t i = 0; i < STMT_CACHE_SLOTS; i++)
        if (conn->stmts[i].stmt != NULL)
            store_pg_backend.finalize(conn->stmts[i].stmt);
    store_pg_backend.disconnect(conn);
    free(conn);
}

static int setup(void **state)
{
    (void)state;
    if (scratch_pg_url() == NULL)
        print_message("TAXD_TEST_PG is not set: skipped (tests/pg/cluster.sh env)\n");
    return 0;
}

#define NEED_PG()                                                                              \
    do {                                                                                       \
        (void)state;                                                                           \
        if (scratch_pg_url() == NULL)                                                                  \
            skip();                                                                            \
    } while (0)

static db_stmt_t *prep(store_conn_t *conn, const store_sql_t *q)
{
    int rc = 0;
    db_stmt_t *stmt = store_pg_backend.prepare(conn, q, &rc);
    if (stmt == NULL)
        fail_msg("prepare %s: %d %s", q->name, rc, store_pg_backend.errmsg(conn));
    return stmt;
}

/* Runs a statement without parameters to its end; its last answer (or
 * the failure of its preparation). */
static int run(store_conn_t *conn, const store_sql_t *q)
{
    int rc = 0;
    db_stmt_t *stmt = store_pg_backend.prepare(conn, q, &rc);
    if (stmt == NULL)
        return rc;
    while ((rc = store_pg_backend.step(stmt)) == DB_ROW) {
    }
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    return rc;
}

static const char *text_of(db_stmt_t *stmt, int col)
{
    size_t len;
    return store_pg_backend.column_text(stmt, col, &len);
}

/* ?N becomes $N; a '?1' inside a literal, "?2" inside an identifier and a
 * ?3 inside a comment stay as written (and count as no parameter). */
static void test_rewrite_leaves_literals(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    static const store_sql_t q = {"rewrite",
                                  "SELECT '?1' AS lit, ?1 AS p, 'it''s ?2' AS esc, 1 AS \"?2\""
                                  " /* ?3 */ -- ?4\n",
                                  NULL};
    db_stmt_t *stmt = prep(conn, &q);
    assert_true(store_pg_backend.bind_text(stmt, 1, "x", 1));
    assert_false(store_pg_backend.bind_text(stmt, 2, "y", 1)); /* only ?1 is a parameter */
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_string_equal(text_of(stmt, 0), "?1");
    assert_string_equal(text_of(stmt, 1), "x");
    assert_string_equal(text_of(stmt, 2), "it's ?2");
    assert_int_equal(store_pg_backend.step(stmt), DB_DONE);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    /* a bare ? is numbered as SQLite numbers it: one past the largest so far */
    static const store_sql_t bare = {"bare", "SELECT ?2 || ? || ?1 || ? || '?'", NULL};
    stmt = prep(conn, &bare);
    for (int i = 1; i <= 4; i++)
        assert_true(store_pg_backend.bind_text(stmt, i, &"x1234"[i], 1));
    assert_false(store_pg_backend.bind_text(stmt, 5, "5", 1));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_string_equal(text_of(stmt, 0), "2314?");
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    /* a number the text skips is still bound by its callers (SQLite allows
     * it): declared and sent as NULL, whatever was bound */
    static const store_sql_t gap = {"gap", "SELECT ?1 || ?3", NULL};
    stmt = prep(conn, &gap);
    assert_true(store_pg_backend.bind_text(stmt, 1, "a", 1));
    assert_true(store_pg_backend.bind_blob(stmt, 2, "\xff\x00", 2));
    assert_true(store_pg_backend.bind_text(stmt, 3, "c", 1));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_string_equal(text_of(stmt, 0), "ac");
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    /* a twin runs instead of the SQLite text */
    static const store_sql_t twin = {"twin", "SELECT 'sqlite'", "SELECT $1 || '-pg' || ?"};
    stmt = prep(conn, &twin); /* a twin may reuse SQLite's "?" rows: $1, then ? is $2 */
    assert_true(store_pg_backend.bind_text(stmt, 1, "abcdef", 3)); /* a length short of the NUL */
    assert_true(store_pg_backend.bind_text(stmt, 2, "!", 1));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_string_equal(text_of(stmt, 0), "abc-pg!");
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    pg_close(conn);
}

/* Blobs go in binary and come back hex-decoded, a 0 byte included; ints,
 * NULLs, NUMERIC sums and booleans read as SQLite's would. */
static void test_values_round_trip(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    static const store_sql_t create = {"create",
                                       "CREATE TEMP TABLE rt (k BIGINT, b BYTEA, t TEXT)", NULL};
    assert_int_equal(run(conn, &create), DB_DONE);
    static const store_sql_t ins = {"ins", "INSERT INTO rt (k, b, t) VALUES (?1, ?2, ?3)", NULL};
    const uint8_t blob[] = {0x00, 0x01, 0xff, 0x00, 'a'};
    db_stmt_t *stmt = prep(conn, &ins);
    assert_true(store_pg_backend.bind_int(stmt, 1, INT64_MIN));
    assert_true(store_pg_backend.bind_blob(stmt, 2, blob, sizeof blob));
    assert_true(store_pg_backend.bind_null(stmt, 3));
    assert_int_equal(store_pg_backend.step(stmt), DB_DONE);
    store_pg_backend.reset(stmt);
    assert_true(store_pg_backend.bind_int(stmt, 1, 7));
    assert_true(store_pg_backend.bind_blob(stmt, 2, blob, 0)); /* an empty blob, not NULL */
    assert_true(store_pg_backend.bind_text(stmt, 3, "t", 1));
    assert_int_equal(store_pg_backend.step(stmt), DB_DONE);
    assert_int_equal(store_pg_backend.changes(conn), 1);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    static const store_sql_t sel = {"sel", "SELECT k, b, t FROM rt ORDER BY k", NULL};
    stmt = prep(conn, &sel);
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_true(store_pg_backend.column_int(stmt, 0) == INT64_MIN);
    size_t len = 0;
    const uint8_t *got = store_pg_backend.column_blob(stmt, 1, &len);
    assert_int_equal(len, sizeof blob);
    assert_memory_equal(got, blob, sizeof blob);
    assert_true(store_pg_backend.column_is_null(stmt, 2));
    assert_null(text_of(stmt, 2));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    got = store_pg_backend.column_blob(stmt, 1, &len);
    assert_non_null(got);
    assert_int_equal(len, 0);
    assert_int_equal(store_pg_backend.step(stmt), DB_DONE);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    static const store_sql_t upd = {"upd", "UPDATE rt SET t = 'u'", NULL};
    assert_int_equal(run(conn, &upd), DB_DONE);
    assert_int_equal(store_pg_backend.changes(conn), 2);

    static const store_sql_t sums = {"sums",
                                     "SELECT SUM(k), 1 > 0 FROM (VALUES (5), (6)) v(k)",
                                     "SELECT SUM(k), 1 > 0 FROM (VALUES (5::BIGINT), (6)) v(k)"};
    stmt = prep(conn, &sums);
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_int_equal(store_pg_backend.column_int(stmt, 0), 11); /* NUMERIC text */
    assert_int_equal(store_pg_backend.column_int(stmt, 1), 1);  /* boolean "t" */
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    pg_close(conn);
}

/* A statement still running at the deadline is cancelled on time and the
 * connection stays usable. */
static void test_deadline_cancels(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    static const store_sql_t q = {"sleep", "SELECT pg_sleep(10)", NULL};
    db_stmt_t *stmt = prep(conn, &q);
    int64_t began = clock_monotonic_ms();
    conn->deadline_ms = began + 200;
    assert_int_equal(store_pg_backend.step(stmt), DB_ERR_INTERRUPTED);
    int64_t took = clock_monotonic_ms() - began;
    assert_true(conn->timed_out);
    assert_false(conn->broken);
    assert_true(took < 3000);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    conn->deadline_ms = 0;
    conn->timed_out = false;
    static const store_sql_t one = {"one", "SELECT 1", NULL};
    assert_int_equal(run(conn, &one), DB_DONE);
    pg_close(conn);
}

static int64_t backend_pid(store_conn_t *conn)
{
    static const store_sql_t q = {"pid", "SELECT pg_backend_pid()", NULL};
    db_stmt_t *stmt = prep(conn, &q);
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    int64_t pid = store_pg_backend.column_int(stmt, 0);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    return pid;
}

static void terminate(int64_t pid)
{
    store_conn_t *killer = pg_open();
    static const store_sql_t q = {"kill", "SELECT pg_terminate_backend(?1::int)", NULL};
    db_stmt_t *stmt = prep(killer, &q);
    assert_true(store_pg_backend.bind_int(stmt, 1, pid));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_int_equal(store_pg_backend.column_int(stmt, 0), 1);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    pg_close(killer);
    clock_sleep_ms(100); /* the server closes the session asynchronously */
}

/* Terminated while idle outside a transaction: the next statement (one
 * prepared before, too) runs on a new session, as if nothing happened. */
static void test_lost_idle_reconnects(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    static const store_sql_t q = {"echo", "SELECT ?1::bigint + 1", NULL};
    db_stmt_t *stmt = prep(conn, &q);
    int64_t pid = backend_pid(conn);
    terminate(pid);
    assert_true(store_pg_backend.bind_int(stmt, 1, 41));
    assert_int_equal(store_pg_backend.step(stmt), DB_ROW);
    assert_int_equal(store_pg_backend.column_int(stmt, 0), 42);
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);
    assert_false(conn->broken);
    assert_true(backend_pid(conn) != pid);
    pg_close(conn);
}

/* Lost inside a transaction, or while a statement runs: unavailable, the
 * connection marked broken for the pool to drop, never reset behind the
 * caller's back; a new connection works. */
static void test_lost_in_transaction_is_unavailable(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    assert_int_equal(run(conn, store_pg_backend.begin_write), DB_DONE);
    assert_true(store_pg_backend.in_transaction(conn));
    terminate(backend_pid(conn));
    static const store_sql_t one = {"one", "SELECT 1", NULL};
    assert_int_equal(run(conn, &one), DB_ERR_UNAVAILABLE);
    assert_true(conn->broken);
    assert_int_equal(run(conn, &one), DB_ERR_UNAVAILABLE);
    pg_close(conn);

    conn = pg_open();
    static const store_sql_t self = {"self", "SELECT pg_terminate_backend(pg_backend_pid())", NULL};
    assert_int_equal(run(conn, &self), DB_ERR_UNAVAILABLE);
    assert_true(conn->broken);
    pg_close(conn);

    conn = pg_open();
    assert_int_equal(run(conn, &one), DB_DONE);
    pg_close(conn);
}

/* A unique violation maps to DB_ERR_UNIQUE and its message holds no key
 * value (DETAIL does: it is not kept); a data exception's quoted input is
 * cut off as well. */
static void test_errors_map_without_values(void **state)
{
    NEED_PG();
    store_conn_t *conn = pg_open();
    static const store_sql_t create = {"create", "CREATE TEMP TABLE u (k TEXT PRIMARY KEY)", NULL};
    assert_int_equal(run(conn, &create), DB_DONE);
    static const store_sql_t ins = {"ins", "INSERT INTO u (k) VALUES (?1)", NULL};
    db_stmt_t *stmt = prep(conn, &ins);
    int rc = DB_DONE;
    for (int i = 0; i < 2 && rc == DB_DONE; i++) {
        assert_true(store_pg_backend.bind_text(stmt, 1, "secret-key-value", 16));
        rc = store_pg_backend.step(stmt);
        store_pg_backend.reset(stmt);
    }
    assert_int_equal(rc, DB_ERR_UNIQUE);
    assert_non_null(strstr(store_pg_backend.errmsg(conn), "duplicate key"));
    assert_null(strstr(store_pg_backend.errmsg(conn), "secret-key-value"));
    store_pg_backend.finalize(stmt);

    static const store_sql_t cast = {"cast", "SELECT ?1::bigint", NULL};
    stmt = prep(conn, &cast);
    assert_true(store_pg_backend.bind_text(stmt, 1, "secret123abc", 12));
    assert_int_equal(store_pg_backend.step(stmt), DB_ERR_OTHER);
    assert_null(strstr(store_pg_backend.errmsg(conn), "secret123abc"));
    store_pg_backend.reset(stmt);
    store_pg_backend.finalize(stmt);

    static const store_sql_t serial = {"serial", "SELECT 1", "DO $$ BEGIN RAISE EXCEPTION"
                                       " USING ERRCODE = '40001'; END $$"};
    assert_int_equal(run(conn, &serial), DB_ERR_RETRY);
    pg_close(conn);
}

/* The URL with the password replaced (the first ":" after the user). */
static char *with_password(const char *url, const char *password)
{
    const char *scheme = strstr(url, "://");
    const char *at = strchr(url, '@');
    if (scheme == NULL || at == NULL)
        return NULL;
    const char *user = scheme + 3;
    size_t ulen = strcspn(user, ":@");
    char *out = malloc(strlen(url) + strlen(password) + 2);
    sprintf(out, "%.*s:%s%s", (int)(user + ulen - url), url, password, at);
    return out;
}

/* Wrong credentials: one line naming host, port and database and libpq's
 * reason, and the password given nowhere in it; a malformed URL likewise. */
static void test_connect_error_hides_password(void **state)
{
    NEED_PG();
    char *url = with_password(scratch_pg_url(), "Wr0ng-PassW0rd");
    if (url == NULL)
        skip(); /* the URL has no user info to put a password into */
    store_conn_t conn = {.be = &store_pg_backend};
    char *err = NULL;
    assert_false(store_pg_backend.connect(&conn, url, &err));
    assert_non_null(err);
    print_message("connect error: %s\n", err);
    assert_non_null(strstr(err, "cannot connect to PostgreSQL "));
    assert_non_null(strstr(err, "password authentication failed"));
    assert_null(strstr(err, "Wr0ng-PassW0rd"));
    assert_null(strchr(err, '\n'));
    free(err);
    free(url);

    err = NULL;
    const char *bad[] = {"postgresql://u:Sekr%zzet@127.0.0.1:1/db",
                         "postgresql://u@127.0.0.1:1/db?password=Qse%zzcret"};
    for (size_t i = 0; i < 2; i++) {
        assert_false(store_pg_backend.connect(&conn, bad[i], &err));
        assert_non_null(err);
        print_message("malformed: %s\n", err);
        assert_null(strstr(err, "Sekr"));
        assert_null(strstr(err, "Qse"));
        free(err);
        err = NULL;
    }
}

/* ---- through the store: the statuses callers see, and the pool's recovery */

typedef struct pg_store_fixture {
    char db[64];
    store_t *store;
} pg_store_fixture_t;

static int store_setup(void **state)
{
    if (scratch_pg_url() == NULL)
        return 0;
    pg_store_fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = scratch_pg_store_open("taxd_unit", fx->db, sizeof fx->db);
    *state = fx;
    return 0;
}

static int store_teardown(void **state)
{
    pg_store_fixture_t *fx = *state;
    if (fx == NULL)
        return 0;
    scratch_pg_store_drop(fx->store, fx->db);
    free(fx);
    return 0;
}

static const store_sql_t Q_SELF_TERMINATE = {"self_terminate",
                                             "SELECT pg_terminate_backend(pg_backend_pid())", NULL};
static const store_sql_t Q_SLEEP = {"sleep", "SELECT pg_sleep(10)", NULL};

static store_status_t run_one(store_conn_t *conn, const void *arg)
{
    const store_sql_t *q = arg;
    return conn_exec(conn, q);
}

/* The session lost inside a read: STORE_UNAVAILABLE; the pool drops that
 * connection and the next caller works. A statement past its deadline:
 * STORE_TIMEOUT, promptly, and the connection serves on. */
static void test_store_statuses_and_recovery(void **state)
{
    if (scratch_pg_url() == NULL)
        skip();
    pg_store_fixture_t *fx = *state;
    store_conn_t *conn = store_acquire(fx->store);
    assert_non_null(conn);
    assert_int_equal(store_ping(conn), STORE_OK);
    assert_int_equal(store_read(conn, run_one, &Q_SELF_TERMINATE), STORE_UNAVAILABLE);
    store_release(fx->store, conn);

    conn = store_acquire(fx->store);
    assert_non_null(conn);
    assert_int_equal(store_ping(conn), STORE_OK);
    int64_t began = clock_monotonic_ms();
    store_set_deadline(conn, began + 200);
    assert_int_equal(store_read(conn, run_one, &Q_SLEEP), STORE_TIMEOUT);
    assert_true(clock_monotonic_ms() - began < 3000);
    store_set_deadline(conn, 0);
    assert_int_equal(store_ping(conn), STORE_OK);
    store_release(fx->store, conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_rewrite_leaves_literals, setup),
        cmocka_unit_test_setup(test_values_round_trip, setup),
        cmocka_unit_test_setup(test_deadline_cancels, setup),
        cmocka_unit_test_setup(test_lost_idle_reconnects, setup),
        cmocka_unit_test_setup(test_lost_in_transaction_is_unavailable, setup),
        cmocka_unit_test_setup(test_errors_map_without_values, setup),
        cmocka_unit_test_setup(test_connect_error_hides_password, setup),
        cmocka_unit_test_setup_teardown(test_store_statuses_and_recovery, store_setup,
                                        store_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
