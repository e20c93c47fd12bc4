/* test_store_ratebuckets: store_rate_take, the shared token bucket the rate
 * limits lease from (store/ratebuckets.h), on SQLite always and on
 * PostgreSQL too when TAXD_TEST_PG is set (tests/pg/cluster.sh env): the one
 * statement must mean the same on both. Each rule: a new key starts full,
 * all or nothing, lazy refill at the rule's rate, never above the burst, a
 * clock step backwards mints nothing, no overflow whatever the gap, and
 * concurrent takers never get more than the bucket issued. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/backend.h"
#include "store/internal.h"
#include "store/ratebuckets.h"
#include "store/store.h"

#include "scratch_pg.h"
#include "scratch_store.h"

typedef struct fixture {
    store_t *store;
    char dir[64];    /* SQLite: the temporary directory */
    char path[160];
    char pgdb[64];   /* PostgreSQL: the database made for the test */
} fixture_t;

static int setup_sqlite(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = scratch_store_open(fx->dir, sizeof fx->dir, fx->path, sizeof fx->path, "t.db");
    assert_non_null(fx->store);
    *state = fx;
    return 0;
}

static int setup_pg(void **state)
{
    if (scratch_pg_url() == NULL) {
        *state = NULL;
        return 0;
    }
    fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = scratch_pg_store_open("taxd_unit_rb", fx->pgdb, sizeof fx->pgdb);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx == NULL)
        return 0;
    if (fx->pgdb[0] != '\0')
        scratch_pg_store_drop(fx->store, fx->pgdb);
    else
        scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static store_t *need(void **state)
{
    fixture_t *fx = *state;
    if (fx == NULL)
        skip(); /* PostgreSQL without TAXD_TEST_PG */
    return fx->store;
}

/* One take; returns the tokens granted and the level seen (-1: refused). */
static uint32_t take(store_t *store, const char *key, uint32_t rate, uint32_t burst, int64_t now,
                     uint32_t want, int64_t *level)
{
    store_conn_t *conn = store_acquire(store);
    assert_non_null(conn);
    uint32_t granted = 99;
    int64_t seen = -2;
    assert_int_equal(store_rate_take(conn, key, rate, burst, now, want, &granted, &seen), STORE_OK);
    store_release(store, conn);
    if (level != NULL)
        *level = seen;
    assert_true(granted == 0 ? seen == -1 : seen >= 0);
    return granted;
}

/* A new key starts full; takes are all or nothing; what is left is exact. */
static void test_new_key_full_and_all_or_nothing(void **state)
{
    store_t *s = need(state);
    int64_t level;
    assert_int_equal(take(s, "k1", 1, 5, 1000, 3, &level), 3);
    assert_int_equal(level, 2000);
    assert_int_equal(take(s, "k1", 1, 5, 1000, 3, &level), 0); /* 2 left: not 3 */
    assert_int_equal(take(s, "k1", 1, 5, 1000, 2, &level), 2);
    assert_int_equal(level, 0);
    assert_int_equal(take(s, "k1", 1, 5, 1000, 1, NULL), 0);
    /* want is clamped to the burst: a want above it takes the whole bucket */
    assert_int_equal(take(s, "k2", 1, 5, 1000, 50, &level), 5);
    assert_int_equal(level, 0);
}

/* rate tokens per second, in thousandths per millisecond, never above burst. */
static void test_refill_at_rate_capped_by_burst(void **state)
{
    store_t *s = need(state);
    int64_t level;
    assert_int_equal(take(s, "r", 10, 20, 5000, 20, &level), 20);
    assert_int_equal(take(s, "r", 10, 20, 5099, 1, NULL), 0);  /* 0.99 token */
    assert_int_equal(take(s, "r", 10, 20, 5100, 1, &level), 1); /* 1.0 token */
    assert_int_equal(level, 0);
    assert_int_equal(take(s, "r", 10, 20, 5100 + 86400000, 1, &level), 1); /* a day idle */
    assert_int_equal(level, 19000);
}

/* A clock step backwards adds nothing and takes nothing away (a lagging
 * node still spends what is there), and the later forward step is not
 * counted twice: at only moves forward. */
static void test_clock_backwards_mints_nothing(void **state)
{
    store_t *s = need(state);
    int64_t level;
    assert_int_equal(take(s, "b", 1, 3, 100000, 2, NULL), 2);
    assert_int_equal(take(s, "b", 1, 3, 40000, 1, &level), 1); /* 60 s back: the 1 left */
    assert_int_equal(level, 0);
    assert_int_equal(take(s, "b", 1, 3, 40000, 1, NULL), 0);
    assert_int_equal(take(s, "b", 1, 3, 100999, 1, NULL), 0); /* < 1 token since 100000 */
    assert_int_equal(take(s, "b", 1, 3, 101000, 1, &level), 1);
    assert_int_equal(level, 0);
}

/* The largest rule over the longest gap: no BIGINT overflow, just full. */
static void test_no_overflow(void **state)
{
    store_t *s = need(state);
    int64_t level;
    assert_int_equal(take(s, "o", UINT32_MAX, UINT32_MAX, 0, UINT32_MAX, NULL), UINT32_MAX);
    assert_int_equal(take(s, "o", UINT32_MAX, UINT32_MAX, INT64_MAX / 4, 1, &level), 1);
    assert_int_equal(level, (int64_t)UINT32_MAX * 1000 - 1000);
    assert_int_equal(take(s, "o2", 1, UINT32_MAX, 0, UINT32_MAX, NULL), UINT32_MAX);
    assert_int_equal(take(s, "o2", 1, UINT32_MAX, INT64_MAX / 4, 1, &level), 1);
}

typedef struct racer {
    store_t *store;
    uint32_t granted;
} racer_t;

#define RACERS 4
#define RACE_TAKES 60

static void *race(void *arg)
{
    racer_t *r = arg;
    store_conn_t *conn = store_acquire(r->store);
    for (int i = 0; i < RACE_TAKES; i++) {
        uint32_t g = 0;
        if (store_rate_take(conn, "race", 1, 100, 7000, 2, &g, NULL) == STORE_OK)
            r->granted += g;
    }
    store_release(r->store, conn);
    return NULL;
}

/* Takers on their own connections at once: together they get exactly what
 * the bucket held (100), never more: the take is one atomic statement. */
static void test_concurrent_takers_never_exceed_the_bucket(void **state)
{
    store_t *s = need(state);
    racer_t racers[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        racers[i] = (racer_t){.store = s};
        pthread_create(&th[i], NULL, race, &racers[i]);
    }
    uint32_t total = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        total += racers[i].granted;
    }
    assert_int_equal(total, 100);
}

#define BOTH(fn) cmocka_unit_test_setup_teardown(fn, setup_sqlite, teardown), \
                 cmocka_unit_test_setup_teardown(fn, setup_pg, teardown)

int main(void)
{
    if (scratch_pg_url() == NULL)
        fprintf(stderr, "TAXD_TEST_PG is not set: the PostgreSQL runs are skipped\n");
    const struct CMUnitTest tests[] = {
        BOTH(test_new_key_full_and_all_or_nothing),
        BOTH(test_refill_at_rate_capped_by_burst),
        BOTH(test_clock_backwards_mints_nothing),
        BOTH(test_no_overflow),
        BOTH(test_concurrent_takers_never_exceed_the_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
