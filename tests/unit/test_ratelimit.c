/* Unit tests for src/http/ratelimit.c: the token bucket's exact integer
 * arithmetic, bounded memory with eviction that forgets only what does not
 * matter first, thread safety, and the policy lookups. Time is always passed in,
 * never read, so nothing here sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "http/ratelimit.h"

static ratelimit_result_t take(ratelimit_t *rl, const char *key, uint32_t rate, uint32_t burst,
                               int64_t now_ms)
{
    ratelimit_rule_t rule = {.rate = rate, .burst = burst};
    return ratelimit_take(rl, key, strlen(key), rule, now_ms);
}

static void test_new_refuses_small_capacity(void **state)
{
    (void)state;
    assert_null(ratelimit_new(0));
    assert_null(ratelimit_new(63));
    ratelimit_t *rl = ratelimit_new(64);
    assert_non_null(rl);
    assert_int_equal(ratelimit_size(rl), 0);
    ratelimit_free(rl);
    ratelimit_free(NULL);
}

static void test_burst_then_refusal(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(1024);
    assert_non_null(rl);
    for (uint32_t i = 0; i < 5; i++) {
        ratelimit_result_t r = take(rl, "t1|GET /v1/x", 1, 5, 1000);
        assert_true(r.allowed);
        assert_int_equal(r.limit, 5);
        assert_int_equal(r.remaining, 4 - i);
        assert_int_equal(r.retry_after_s, 0);
    }
    ratelimit_result_t r = take(rl, "t1|GET /v1/x", 1, 5, 1000);
    assert_false(r.allowed);
    assert_int_equal(r.limit, 5);
    assert_int_equal(r.remaining, 0);
    assert_int_equal(r.retry_after_s, 1);
    /* Another key has its own bucket. */
    r = take(rl, "t2|GET /v1/x", 1, 5, 1000);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 4);
    assert_int_equal(ratelimit_size(rl), 2);
    ratelimit_free(rl);
}

static void test_keys_are_compared_by_bytes_and_length(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    ratelimit_rule_t rule = {.rate = 1, .burst = 1};
    assert_true(ratelimit_take(rl, "ab", 2, rule, 0).allowed);
    assert_false(ratelimit_take(rl, "ab", 2, rule, 0).allowed);
    assert_false(ratelimit_take(rl, "abc", 2, rule, 0).allowed); /* the same 2 bytes */
    assert_true(ratelimit_take(rl, "a", 1, rule, 0).allowed);
    assert_true(ratelimit_take(rl, "a\0b", 3, rule, 0).allowed);
    assert_int_equal(ratelimit_size(rl), 3);
    ratelimit_free(rl);
}

static void test_refill_after_elapsed_time(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    for (int i = 0; i < 10; i++)
        assert_true(take(rl, "k", 10, 10, 0).allowed);
    ratelimit_result_t r = take(rl, "k", 10, 10, 99);
    assert_false(r.allowed); /* 990 milli-tokens: not yet one */
    r = take(rl, "k", 10, 10, 100);
    assert_true(r.allowed); /* exactly one token after 100 ms at 10/s */
    assert_int_equal(r.remaining, 0);
    r = take(rl, "k", 10, 10, 100);
    assert_false(r.allowed);
    /* 350 ms later: 3.5 tokens; take one, 2 whole left. */
    r = take(rl, "k", 10, 10, 450);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 2);
    /* Refill is capped at the burst. */
    r = take(rl, "k", 10, 10, 1000000);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 9);
    ratelimit_free(rl);
}

static void test_refill_huge_elapsed_does_not_overflow(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    assert_true(take(rl, "k", UINT32_MAX, 2, INT64_MIN).allowed);
    ratelimit_result_t r = take(rl, "k", UINT32_MAX, 2, INT64_MAX);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 1);
    ratelimit_free(rl);
}

static void test_time_going_backwards_adds_nothing(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    assert_true(take(rl, "k", 10, 1, 1000).allowed);
    assert_false(take(rl, "k", 10, 1, 500).allowed);
    /* Counted from 1000, not 500: 100 ms is exactly one token, not six. */
    assert_false(take(rl, "k", 10, 1, 1099).allowed);
    ratelimit_result_t r = take(rl, "k", 10, 1, 1100);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 0);
    ratelimit_free(rl);
}

static void test_retry_after(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    assert_true(take(rl, "k", 1, 1, 0).allowed);
    ratelimit_result_t r = take(rl, "k", 1, 1, 0);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_s, 1); /* 1000 milli-tokens at 1/ms */
    r = take(rl, "k", 1, 1, 500);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_s, 1); /* 500 ms still rounds up to 1 s */
    r = take(rl, "k", 1, 1, 999);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_s, 1);
    r = take(rl, "k", 1, 1, 1000);
    assert_true(r.allowed);
    assert_int_equal(r.retry_after_s, 0);
    ratelimit_free(rl);
}

static void test_rule_change_clamps_to_new_burst(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    ratelimit_result_t r = take(rl, "k", 1, 10, 0);
    assert_int_equal(r.remaining, 9);
    r = take(rl, "k", 1, 5, 0); /* 9 tokens clamped to 5, then one taken */
    assert_true(r.allowed);
    assert_int_equal(r.limit, 5);
    assert_int_equal(r.remaining, 4);
    r = take(rl, "k", 1, 20, 0); /* a larger burst keeps the tokens */
    assert_true(r.allowed);
    assert_int_equal(r.limit, 20);
    assert_int_equal(r.remaining, 3);
    /* Time already passed is refilled at the rule then in force (100 ms at
     * 1/s: 0.1 token), and the new rate applies from then on (100 ms at 20/s:
     * 2 tokens). */
    r = take(rl, "k", 20, 20, 100);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 2); /* 3.1 - 1 */
    r = take(rl, "k", 20, 20, 200);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 3); /* 2.1 + 2 - 1 */
    ratelimit_free(rl);
}

static void test_zero_rule_treated_as_one(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(64);
    ratelimit_result_t r = take(rl, "k", 0, 0, 0);
    assert_true(r.allowed);
    assert_int_equal(r.limit, 1);
    r = take(rl, "k", 0, 0, 0);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_s, 1);
    ratelimit_free(rl);
}

static void test_eviction_bounds_size(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(1024);
    char key[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(key, sizeof key, "tenant-%d|GET /v1/x", i);
        /* Every other key at a frozen time (nothing refills: LRU eviction), the
         * others later (everything has refilled: sweep eviction). */
        int64_t now = i < 50000 ? 0 : (int64_t)i * 1000;
        ratelimit_result_t r = take(rl, key, 1, 2, now);
        assert_true(r.allowed);
        assert_int_equal(r.remaining, 1);
        if (i % 1000 == 0)
            assert_true(ratelimit_size(rl) <= 1024);
        /* 64 shards of 16, each of which has received far more than 16 keys
         * and, with time frozen, could only evict one bucket per new key. */
        if (i == 49999)
            assert_int_equal(ratelimit_size(rl), 1024);
    }
    /* With time moving, a sweep empties a shard of its refilled buckets at
     * once, so fewer are held; every shard still holds its latest key. */
    size_t size = ratelimit_size(rl);
    assert_true(size <= 1024);
    assert_true(size >= 64);
    ratelimit_free(rl);
}

/* Finds n keys that land in the same shard as base, by watching evictions in a
 * table of one bucket per shard: a drained key that comes back full was evicted
 * by the key taken just before it. */
static void find_same_shard_keys(const char *base, char out[][32], int n)
{
    ratelimit_t *rl = ratelimit_new(64);
    assert_true(take(rl, base, 1, 1, 0).allowed);
    int found = 0;
    for (int j = 0; found < n && j < 100000; j++) {
        char key[32];
        snprintf(key, sizeof key, "probe-%d", j);
        take(rl, key, 1, 1, 0);
        if (take(rl, base, 1, 1, 0).allowed)
            snprintf(out[found++], 32, "%s", key);
    }
    assert_int_equal(found, n);
    ratelimit_free(rl);
}

static void test_eviction_prefers_full_buckets_then_lru(void **state)
{
    (void)state;
    char keys[2][32];
    find_same_shard_keys("slow", keys, 2);
    const char *fast = keys[0];
    const char *fresh = keys[1];
    ratelimit_t *rl = ratelimit_new(128); /* 2 buckets per shard */
    assert_true(take(rl, "slow", 1, 1, 0).allowed);   /* drained for 1 s */
    assert_true(take(rl, fast, 1000, 1, 1).allowed);  /* full again at 2 ms */
    assert_true(take(rl, fresh, 1, 1, 10).allowed);   /* shard full: evicts */
    assert_int_equal(ratelimit_size(rl), 2);
    /* "slow" was least recently used, but "fast" had refilled: it went. */
    ratelimit_result_t r = take(rl, "slow", 1, 1, 10);
    assert_false(r.allowed);
    /* Now nothing is full: the least recently used ("fresh") goes. */
    assert_true(take(rl, fast, 1, 1, 20).allowed);
    assert_int_equal(ratelimit_size(rl), 2);
    assert_false(take(rl, "slow", 1, 1, 20).allowed);
    ratelimit_free(rl);
}

static void test_evicted_full_bucket_behaves_as_full(void **state)
{
    (void)state;
    char keys[1][32];
    find_same_shard_keys("tenant-a", keys, 1);
    ratelimit_t *rl = ratelimit_new(64); /* one bucket per shard */
    for (int i = 0; i < 3; i++)
        assert_true(take(rl, "tenant-a", 10, 5, 0).allowed);
    assert_true(take(rl, keys[0], 10, 5, 1000).allowed); /* evicts the refilled bucket */
    assert_int_equal(ratelimit_size(rl), 1);
    ratelimit_result_t r = take(rl, "tenant-a", 10, 5, 1000);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 4); /* what a never-evicted bucket would say */

    ratelimit_t *control = ratelimit_new(64);
    for (int i = 0; i < 3; i++)
        take(control, "tenant-a", 10, 5, 0);
    ratelimit_result_t c = take(control, "tenant-a", 10, 5, 1000);
    assert_int_equal(c.remaining, r.remaining);
    assert_int_equal(c.allowed, r.allowed);
    ratelimit_free(control);
    ratelimit_free(rl);
}

typedef struct thread_arg {
    ratelimit_t *rl;
    int allowed;
} thread_arg_t;

static void *take_many(void *p)
{
    thread_arg_t *a = p;
    ratelimit_rule_t rule = {.rate = 1, .burst = 1000};
    for (int i = 0; i < 10000; i++) {
        if (ratelimit_take(a->rl, "shared", 6, rule, 42).allowed)
            a->allowed++;
    }
    return NULL;
}

static void test_concurrent_takes_allow_exactly_burst(void **state)
{
    (void)state;
    ratelimit_t *rl = ratelimit_new(1024);
    pthread_t threads[4];
    thread_arg_t args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg_t){.rl = rl, .allowed = 0};
        assert_int_equal(pthread_create(&threads[i], NULL, take_many, &args[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        total += args[i].allowed;
    }
    assert_int_equal(total, 1000);
    assert_int_equal(ratelimit_size(rl), 1);
    ratelimit_free(rl);
}

static void assert_rule(ratelimit_rule_t r, uint32_t rate, uint32_t burst)
{
    assert_int_equal(r.rate, rate);
    assert_int_equal(r.burst, burst);
}

static void test_policy_tenant_rules(void **state)
{
    (void)state;
    ratelimit_policy_t *p = ratelimit_policy_new((ratelimit_rule_t){100, 1000});
    assert_non_null(p);
    assert_rule(ratelimit_policy_tenant_rule(p, "t1"), 100, 1000);
    assert_int_equal(ratelimit_policy_add(p, "t1", NULL, (ratelimit_rule_t){5, 50}), 0);
    assert_int_equal(ratelimit_policy_add(p, "t2", "", (ratelimit_rule_t){7, 70}), 0);
    assert_rule(ratelimit_policy_tenant_rule(p, "t1"), 5, 50);
    assert_rule(ratelimit_policy_tenant_rule(p, "t2"), 7, 70);
    assert_rule(ratelimit_policy_tenant_rule(p, "t3"), 100, 1000);
    assert_rule(ratelimit_policy_tenant_rule(p, NULL), 100, 1000);
    assert_rule(ratelimit_policy_tenant_rule(p, ""), 100, 1000);
    /* A later add for the same tenant replaces the rule. */
    assert_int_equal(ratelimit_policy_add(p, "t1", NULL, (ratelimit_rule_t){6, 60}), 0);
    assert_rule(ratelimit_policy_tenant_rule(p, "t1"), 6, 60);
    /* A route rule is not a tenant default. */
    assert_int_equal(ratelimit_policy_add(p, "t4", "GET /v1/x", (ratelimit_rule_t){1, 1}), 0);
    assert_rule(ratelimit_policy_tenant_rule(p, "t4"), 100, 1000);
    /* (all tenants, no route) is the global default. */
    assert_int_equal(ratelimit_policy_add(p, NULL, NULL, (ratelimit_rule_t){9, 90}), 0);
    assert_rule(ratelimit_policy_tenant_rule(p, "t3"), 9, 90);
    assert_rule(ratelimit_policy_tenant_rule(p, "t1"), 6, 60);
    ratelimit_policy_free(p);
}

static void test_policy_route_rules(void **state)
{
    (void)state;
    ratelimit_policy_t *p = ratelimit_policy_new((ratelimit_rule_t){100, 1000});
    const char *report = "POST /v1/reports/inventory-summary";
    const char *filer = "GET /v1/filers/{filerId}";
    assert_int_equal(ratelimit_policy_add(p, NULL, report, (ratelimit_rule_t){1, 10}), 0);
    assert_int_equal(ratelimit_policy_add(p, "big", report, (ratelimit_rule_t){5, 50}), 0);
    assert_int_equal(ratelimit_policy_add(p, "solo", filer, (ratelimit_rule_t){2, 20}), 0);
    ratelimit_rule_t r = {0, 0};
    assert_true(ratelimit_policy_route_rule(p, "big", report, &r));
    assert_rule(r, 5, 50); /* the tenant's own rule */
    assert_true(ratelimit_policy_route_rule(p, "small", report, &r));
    assert_rule(r, 1, 10); /* the all-tenants rule */
    assert_true(ratelimit_policy_route_rule(p, NULL, report, &r));
    assert_rule(r, 1, 10);
    assert_true(ratelimit_policy_route_rule(p, "solo", filer, &r));
    assert_rule(r, 2, 20);
    r = (ratelimit_rule_t){3, 3};
    assert_false(ratelimit_policy_route_rule(p, "other", filer, &r));
    assert_rule(r, 3, 3); /* untouched when there is none */
    assert_false(ratelimit_policy_route_rule(p, "big", "GET /v1/nothing", &r));
    assert_false(ratelimit_policy_route_rule(p, "big", NULL, &r));
    assert_false(ratelimit_policy_route_rule(p, "big", "", &r));
    /* Pairs are kept apart: ("ab","c") is not ("a","bc"). */
    assert_int_equal(ratelimit_policy_add(p, "ab", "c", (ratelimit_rule_t){11, 11}), 0);
    assert_false(ratelimit_policy_route_rule(p, "a", "bc", &r));
    ratelimit_policy_free(p);
}

static void test_policy_many_entries(void **state)
{
    (void)state;
    ratelimit_policy_t *p = ratelimit_policy_new((ratelimit_rule_t){100, 1000});
    char tenant[32];
    for (uint32_t i = 1; i <= 5000; i++) {
        snprintf(tenant, sizeof tenant, "tenant-%u", i);
        assert_int_equal(ratelimit_policy_add(p, tenant, NULL, (ratelimit_rule_t){i, i * 2}), 0);
        assert_int_equal(ratelimit_policy_add(p, tenant, "GET /x", (ratelimit_rule_t){i, i}), 0);
    }
    for (uint32_t i = 1; i <= 5000; i++) {
        snprintf(tenant, sizeof tenant, "tenant-%u", i);
        assert_rule(ratelimit_policy_tenant_rule(p, tenant), i, i * 2);
        ratelimit_rule_t r;
        assert_true(ratelimit_policy_route_rule(p, tenant, "GET /x", &r));
        assert_rule(r, i, i);
    }
    assert_rule(ratelimit_policy_tenant_rule(p, "tenant-0"), 100, 1000);
    ratelimit_policy_free(p);
}

/* ---- leasing: a fake shared bucket stands in for the database ---- */

typedef struct fake_source {
    pthread_mutex_t lock;
    int64_t level, at; /* milli-tokens; ms */
    bool started, failing;
    int asks;
    int64_t issued;    /* tokens granted in all */
    int64_t now_ms;    /* the shared clock */
} fake_source_t;

static int fake_take(void *cls, const char *key, size_t key_len, ratelimit_rule_t rule,
                     uint32_t want, ratelimit_lease_t *lease)
{
    (void)key;
    (void)key_len;
    fake_source_t *f = cls;
    pthread_mutex_lock(&f->lock);
    f->asks++;
    int rc = -1;
    if (!f->failing) {
        int64_t full = (int64_t)rule.burst * 1000;
        if (!f->started) {
            f->level = full;
            f->at = f->now_ms;
            f->started = true;
        }
        if (f->now_ms > f->at) {
            f->level += (f->now_ms - f->at) * rule.rate;
            f->at = f->now_ms;
        }
        if (f->level > full)
            f->level = full;
        lease->granted = f->level >= (int64_t)want * 1000 ? want : 0;
        f->level -= (int64_t)lease->granted * 1000;
        f->issued += lease->granted;
        lease->shared_milli = f->level;
        rc = 0;
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

static ratelimit_t *leased_node(fake_source_t *f)
{
    ratelimit_t *rl = ratelimit_new(1024);
    assert_non_null(rl);
    ratelimit_set_source(rl, fake_take, f);
    return rl;
}

/* Rule: a node asks the shared bucket once per chunk (burst / 50 tokens), and
 * x-ratelimit-remaining counts what it holds and what the shared bucket had
 * left, as a single node without leasing would. */
static void test_lease_asks_once_per_chunk(void **state)
{
    (void)state;
    fake_source_t f = {.lock = PTHREAD_MUTEX_INITIALIZER};
    ratelimit_t *rl = leased_node(&f);
    assert_int_equal(ratelimit_lease_size((ratelimit_rule_t){100, 1000}), 20);
    ratelimit_result_t r = take(rl, "k", 100, 1000, 0);
    assert_true(r.allowed);
    assert_int_equal(r.remaining, 999);
    assert_int_equal(take(rl, "k", 100, 1000, 0).remaining, 998);
    for (int i = 2; i < 100; i++)
        assert_true(take(rl, "k", 100, 1000, 0).allowed);
    assert_int_equal(f.asks, 5);
    assert_int_equal(f.issued, 100);
    ratelimit_free(rl);
}

/* Rule: three nodes on one shared bucket admit together no more than it
 * issued, burst + rate x t, however hard each is hammered, and nearly that
 * (each loses at most the chunk it holds at the end). */
static void test_lease_three_nodes_stay_within_one_budget(void **state)
{
    (void)state;
    fake_source_t f = {.lock = PTHREAD_MUTEX_INITIALIZER};
    ratelimit_t *nodes[3] = {leased_node(&f), leased_node(&f), leased_node(&f)};
    int64_t admitted = 0;
    for (int64_t ms = 0; ms < 10000; ms++) {
        f.now_ms = ms;
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < 4; k++)
                admitted += take(nodes[n], "tenant\nGET /v1/accounts", 100, 1000, ms).allowed;
    }
    int64_t budget = 1000 + 100 * 10;
    assert_true(admitted <= f.issued);
    assert_true(admitted <= budget);
    assert_true(admitted >= budget - 3 * 20 - 100); /* lost chunks; the last refills */
    for (int n = 0; n < 3; n++)
        ratelimit_free(nodes[n]);
}

/* Rule: after a refused ask, a node does not ask again before the shared
 * bucket can have refilled one chunk (chunk / rate), so a flood of refused
 * requests does not become a flood of database calls. */
static void test_lease_refused_ask_not_repeated_before_a_chunk_refills(void **state)
{
    (void)state;
    fake_source_t f = {.lock = PTHREAD_MUTEX_INITIALIZER};
    ratelimit_t *rl = leased_node(&f);
    for (int i = 0; i < 5; i++)
        assert_true(take(rl, "k", 1, 5, 0).allowed);
    int asks = f.asks;
    ratelimit_result_t r = take(rl, "k", 1, 5, 0);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_s, 1);
    assert_int_equal(f.asks, asks + 1);
    for (int i = 0; i < 50; i++)
        assert_false(take(rl, "k", 1, 5, 999).allowed);
    assert_int_equal(f.asks, asks + 1);
    f.now_ms = 1000;
    assert_true(take(rl, "k", 1, 5, 1000).allowed);
    assert_int_equal(f.asks, asks + 2);
    ratelimit_free(rl);
}

/* Rule: when the source fails (the database is unreachable) the limiter
 * fails open, to a local bucket at the rule's rate with one chunk to start,
 * for RATELIMIT_DEGRADED_MS; then it asks again, and what it minted locally
 * is dropped. */
static void test_lease_failure_fails_open_at_the_rule_rate(void **state)
{
    (void)state;
    fake_source_t f = {.lock = PTHREAD_MUTEX_INITIALIZER, .failing = true};
    ratelimit_t *rl = leased_node(&f);
    int allowed = 0;
    for (int i = 0; i < 100; i++)
        allowed += take(rl, "k", 10, 500, 0).allowed; /* chunk 10 */
    assert_int_equal(allowed, 10);
    assert_int_equal(f.asks, 1);
    assert_int_equal(take(rl, "k", 10, 500, 99).allowed, false);
    assert_int_equal(take(rl, "k", 10, 500, 100).allowed, true); /* 10/s locally */
    assert_int_equal(f.asks, 1);
    f.failing = false;
    f.now_ms = RATELIMIT_DEGRADED_MS;
    assert_true(take(rl, "k", 10, 500, RATELIMIT_DEGRADED_MS).allowed);
    assert_int_equal(f.asks, 2);
    assert_int_equal(f.issued, 10);
    ratelimit_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_small_capacity),
        cmocka_unit_test(test_burst_then_refusal),
        cmocka_unit_test(test_keys_are_compared_by_bytes_and_length),
        cmocka_unit_test(test_refill_after_elapsed_time),
        cmocka_unit_test(test_refill_huge_elapsed_does_not_overflow),
        cmocka_unit_test(test_time_going_backwards_adds_nothing),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_rule_change_clamps_to_new_burst),
        cmocka_unit_test(test_zero_rule_treated_as_one),
        cmocka_unit_test(test_eviction_bounds_size),
        cmocka_unit_test(test_eviction_prefers_full_buckets_then_lru),
        cmocka_unit_test(test_evicted_full_bucket_behaves_as_full),
        cmocka_unit_test(test_concurrent_takes_allow_exactly_burst),
        cmocka_unit_test(test_policy_tenant_rules),
        cmocka_unit_test(test_policy_route_rules),
        cmocka_unit_test(test_policy_many_entries),
        cmocka_unit_test(test_lease_asks_once_per_chunk),
        cmocka_unit_test(test_lease_three_nodes_stay_within_one_budget),
        cmocka_unit_test(test_lease_refused_ask_not_repeated_before_a_chunk_refills),
        cmocka_unit_test(test_lease_failure_fails_open_at_the_rule_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
