/* test_store_commit: group commit (src/store/commit.c) against a real
 * database. A raw connection holding BEGIN IMMEDIATE stands in for another
 * process: while it holds the lock, the first writer leads and waits in
 * SQLite's busy handler, and the writers that arrive meanwhile queue; when
 * it lets go, they run as one batch. Each write inserts one row into a
 * scratch table; the rows present afterwards are the writes that committed,
 * and a commit hook on the connection that runs them counts the commits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "store/internal.h"
#include "store/store.h"

#include "scratch_store.h"

static const store_sql_t Q_PUT = {"test_put", "INSERT INTO scratch (k) VALUES (?1)", NULL};

typedef struct fixture {
    char dir[64];
    char path[160];
    store_t *store;
    sqlite3 *other; /* "another process" */
    atomic_int commits;
} fixture_t;

typedef struct writer {
    fixture_t *fx;
    char key[32];
    bool fail;               /* inserts, then fails: must leave no trace */
    int64_t deadline_in_ms;  /* 0: none */
    store_status_t status;
    store_conn_t *ran_on;    /* the connection its body ran on */
    store_conn_t *own;
    pthread_t thread;
} writer_t;

static int count_commit(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return 0;
}

static store_status_t put_body(store_conn_t *conn, const void *arg)
{
    writer_t *w = (writer_t *)arg;
    w->ran_on = conn;
    sqlite3_commit_hook((sqlite3 *)conn->native, count_commit, &w->fx->commits);
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_PUT, w->key, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_PUT, stmt);
    return st == STORE_OK && w->fail ? STORE_CONFLICT : st;
}

static void *writer_main(void *arg)
{
    writer_t *w = arg;
    w->own = store_acquire(w->fx->store);
    if (w->deadline_in_ms > 0)
        store_set_deadline(w->own, clock_monotonic_ms() + w->deadline_in_ms);
    w->status = conn_write(w->own, put_body, w);
    store_release(w->fx->store, w->own);
    return NULL;
}

static void start(writer_t *w, fixture_t *fx, const char *key)
{
    w->fx = fx;
    snprintf(w->key, sizeof w->key, "%s", key);
    assert_int_equal(pthread_create(&w->thread, NULL, writer_main, w), 0);
}

static void settle(void)
{
    struct timespec ts = {0, 150 * 1000000L}; /* writers reach the queue */
    nanosleep(&ts, NULL);
}

static int64_t rows_with(fixture_t *fx, const char *key)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(fx->other, "SELECT count(*) FROM scratch WHERE k = ?1",
                                        -1, &stmt, NULL), SQLITE_OK);
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
}

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL || (fx->store = SCRATCH_STORE_OPEN(fx, "taxd.db")) == NULL)
        return -1;
    if (sqlite3_open(fx->path, &fx->other) != SQLITE_OK ||
        sqlite3_exec(fx->other, "CREATE TABLE scratch (k TEXT PRIMARY KEY) STRICT", NULL, NULL,
                     NULL) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(fx->other, 5000);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    sqlite3_close(fx->other);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static void hold_lock(fixture_t *fx)
{
    assert_int_equal(sqlite3_exec(fx->other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
}

static void let_go(fixture_t *fx)
{
    assert_int_equal(sqlite3_exec(fx->other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
}

/* Writers that queue behind a leader run in one batch on one connection;
 * every one of them is durable and answered OK. */
static void test_queued_writers_share_a_batch(void **state)
{
    fixture_t *fx = *state;
    enum { N = 8 };
    writer_t w[N];
    memset(w, 0, sizeof w);
    hold_lock(fx);
    start(&w[0], fx, "leader");
    settle();
    for (int i = 1; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        start(&w[i], fx, key);
    }
    settle();
    let_go(fx);
    for (int i = 0; i < N; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].status, STORE_OK);
        assert_int_equal(rows_with(fx, w[i].key), 1);
        assert_ptr_equal(w[i].ran_on, w[0].ran_on); /* the queue's writer connection */
        assert_ptr_not_equal(w[i].ran_on, w[i].own);
    }
    /* The leader's batch held only itself; the next head led the other seven. */
    assert_int_equal(atomic_load(&fx->commits), 2);
}

/* A write that fails inside a batch is undone to its savepoint; the writes
 * before and after it in the same batch commit. */
static void test_a_failing_write_leaves_its_batch_intact(void **state)
{
    fixture_t *fx = *state;
    writer_t w[5];
    memset(w, 0, sizeof w);
    hold_lock(fx);
    start(&w[0], fx, "leader");
    settle();
    const char *keys[] = {"before", "bad", "after", "bad2"};
    for (int i = 1; i < 5; i++) {
        w[i].fail = strncmp(keys[i - 1], "bad", 3) == 0;
        start(&w[i], fx, keys[i - 1]);
        settle(); /* arrival order is batch order */
    }
    let_go(fx);
    for (int i = 0; i < 5; i++)
        pthread_join(w[i].thread, NULL);
    assert_int_equal(w[1].status, STORE_OK);
    assert_int_equal(w[2].status, STORE_CONFLICT);
    assert_int_equal(w[3].status, STORE_OK);
    assert_int_equal(w[4].status, STORE_CONFLICT);
    assert_int_equal(atomic_load(&fx->commits), 2); /* the leader, then one batch of four */
    assert_int_equal(rows_with(fx, "before"), 1);
    assert_int_equal(rows_with(fx, "bad"), 0);
    assert_int_equal(rows_with(fx, "after"), 1);
    assert_int_equal(rows_with(fx, "bad2"), 0);
}

/* A queued write whose deadline passes is withdrawn at its deadline (not when
 * the leader gets the lock) and never runs. */
static void test_a_queued_write_times_out_on_its_own_deadline(void **state)
{
    fixture_t *fx = *state;
    writer_t leader = {0}, late = {.deadline_in_ms = 300};
    hold_lock(fx);
    start(&leader, fx, "leader");
    settle();
    int64_t began = clock_monotonic_ms();
    start(&late, fx, "late");
    pthread_join(late.thread, NULL);
    int64_t waited = clock_monotonic_ms() - began;
    assert_int_equal(late.status, STORE_TIMEOUT);
    assert_true(waited >= 290 && waited < 2000);
    let_go(fx);
    pthread_join(leader.thread, NULL);
    assert_int_equal(leader.status, STORE_OK);
    assert_int_equal(rows_with(fx, "late"), 0);
    assert_int_equal(rows_with(fx, "leader"), 1);
}

/* Many writers at once: every acknowledged write is there, nothing else. */
static void test_many_writers_lose_nothing(void **state)
{
    fixture_t *fx = *state;
    enum { N = 32 };
    writer_t w[N];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "m%d", i);
        w[i].fail = i % 5 == 0;
        start(&w[i], fx, key);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].status, w[i].fail ? STORE_CONFLICT : STORE_OK);
        assert_int_equal(rows_with(fx, w[i].key), w[i].fail ? 0 : 1);
    }
}

/* A write inside a write is a programming error, refused, not a deadlock. */
static store_status_t nested_body(store_conn_t *conn, const void *arg)
{
    (void)arg;
    return conn_write(conn, nested_body, NULL);
}

static void test_nested_write_is_refused(void **state)
{
    fixture_t *fx = *state;
    store_conn_t *conn = store_acquire(fx->store);
    assert_int_equal(conn_write(conn, nested_body, NULL), STORE_ERROR);
    store_release(fx->store, conn);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_queued_writers_share_a_batch),
        T(test_a_failing_write_leaves_its_batch_intact),
        T(test_a_queued_write_times_out_on_its_own_deadline),
        T(test_many_writers_lose_nothing),
        T(test_nested_write_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
