/* ratelimit: token buckets in integer milli-tokens, and the limits policy.
 *
 * Arithmetic. A bucket holds milli-tokens in an int64. A rule of `rate` tokens
 * per second adds exactly `rate` milli-tokens per elapsed millisecond, so the
 * refill is one integer multiply with no rounding drift, and nothing needs a
 * timer: buckets refill lazily when they are next taken from. The multiply is
 * done only when it cannot overflow (an elapsed time long enough to fill the
 * bucket just fills it). Time going backwards adds nothing, and the bucket
 * keeps the latest time it has seen so a later forward step is not counted
 * twice.
 *
 * Table. 64 shards, picked by the top bits of a 64-bit FNV-1a hash of the key,
 * each with its own mutex, a fixed pool of capacity/64 buckets, a chained hash
 * index and an LRU list (all by 32-bit index, so a shard is three arrays and
 * no per-bucket nodes). Only the key copy is allocated per bucket. The shard
 * count bounds contention: a take holds one shard lock for a hash lookup and a
 * few integer operations. FNV is unkeyed; keys are tenant ids from verified
 * tokens and route templates, not attacker-chosen strings, so hash flooding is
 * not a concern worth a keyed hash here.
 *
 * Eviction. When a shard is full, a new key first sweeps the shard and evicts
 * every bucket that has refilled completely: forgetting a full bucket changes
 * nothing, since a new bucket starts full. One sweep frees all such slots at
 * once, so its O(shard size) cost is shared by the keys that then fit. Only if
 * no bucket is full is the least recently used one evicted, which forgives
 * that key's debt: the price of bounded memory, paid by the idlest key.
 *
 * Failure. Should copying a new key fail for lack of memory, the request is
 * allowed as if by a fresh bucket and nothing is stored: refusing traffic
 * because the limiter itself is short of memory would turn a memory squeeze
 * into an outage.
 *
 * Leasing (a refill source, ratelimit.h). A bucket then holds only leased
 * tokens, and its level is what this node may still spend of what the shared
 * bucket issued to it: the node never admits a token the source did not
 * grant, which is what bounds all nodes together (docs/decisions.md, "Rate
 * limits across nodes"). The ask runs with no lock held; its bucket is
 * marked `asking` meanwhile (other takes of the key wait on the shard's
 * condition variable for the answer) and found again by key afterwards, since it may
 * have been evicted (its lease then serves only the request that asked). A
 * bucket in degraded mode (the last ask failed) refills from time like a
 * local one, from the level it had (at least one chunk), so an outage gives
 * each node a chunk and the rule's rate, but not a fresh burst, each second;
 * leaving degraded mode drops what it minted.
 *
 * Policy. An immutable snapshot: entries are added while it is built, then it
 * is only read, so lookups take no lock. Entries live in an open-addressing
 * table keyed by (tenant, route), where "" stands for "all tenants" and for
 * "no route" (the tenant default). Adding the same pair twice replaces the
 * rule; adding ("", "") sets the global default.
 */
#include "http/ratelimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#define RATELIMIT_SHARDS 64
#define RATELIMIT_SHARD_BITS 6
#define RATELIMIT_NIL UINT32_MAX
#define RATELIMIT_MILLI 1000
#define RATELIMIT_ASK_WAITS 5 /* x 100 ms: the longest a take waits for another's ask */

typedef struct ratelimit_bucket {
    char *key; /* owned; NULL when the slot is free */
    size_t key_len;
    uint64_t hash;
    int64_t tokens;  /* milli-tokens */
    int64_t last_ms; /* latest time seen */
    ratelimit_rule_t rule;
    int64_t shared_milli;   /* leasing: the shared level last seen */
    int64_t next_ask_ms;    /* leasing: no ask before (after a refused one) */
    int64_t degraded_until; /* leasing: local refill until (the source failed) */
    bool asking;            /* leasing: an ask for this key is in flight */
    uint32_t chain_next; /* hash chain, or free list when the slot is free */
    uint32_t lru_prev;   /* towards the most recently used */
    uint32_t lru_next;   /* towards the least recently used */
} ratelimit_bucket_t;

typedef struct ratelimit_shard {
    _Alignas(64) pthread_mutex_t lock;
    pthread_cond_t asked; /* leasing: an ask of this shard ended */
    ratelimit_bucket_t *slots; /* cap */
    uint32_t *heads;           /* head_mask + 1 chain heads */
    uint32_t head_mask;
    uint32_t cap;
    uint32_t used;
    uint32_t free_head;
    uint32_t lru_head; /* most recently used */
    uint32_t lru_tail; /* least recently used */
} ratelimit_shard_t;

struct ratelimit {
    ratelimit_shard_t shards[RATELIMIT_SHARDS];
    ratelimit_source_fn source; /* NULL: local buckets */
    void *source_cls;
};

static uint64_t ratelimit_hash(const char *key, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static ratelimit_rule_t ratelimit_rule_sane(ratelimit_rule_t rule)
{
    /* The header requires >= 1; a zero would divide by zero or never refill. */
    if (rule.rate == 0)
        rule.rate = 1;
    if (rule.burst == 0)
        rule.burst = 1;
    return rule;
}

static int64_t ratelimit_capacity_milli(ratelimit_rule_t rule)
{
    return (int64_t)rule.burst * RATELIMIT_MILLI;
}

/* The bucket's milli-tokens at now_ms, without changing it. */
static int64_t ratelimit_tokens_at(const ratelimit_bucket_t *b, int64_t now_ms)
{
    int64_t full = ratelimit_capacity_milli(b->rule);
    if (b->tokens >= full)
        return full;
    if (now_ms <= b->last_ms)
        return b->tokens;
    int64_t elapsed;
    if (__builtin_sub_overflow(now_ms, b->last_ms, &elapsed))
        return full;
    int64_t rate = b->rule.rate;
    int64_t need = full - b->tokens;
    if (elapsed >= (need + rate - 1) / rate)
        return full;
    return b->tokens + elapsed * rate; /* < need + rate: cannot overflow */
}

static void ratelimit_refill(ratelimit_bucket_t *b, int64_t now_ms)
{
    b->tokens = ratelimit_tokens_at(b, now_ms);
    if (now_ms > b->last_ms)
        b->last_ms = now_ms;
}

/* ---- shard internals; every function below expects the shard lock held ---- */

static uint32_t ratelimit_shard_find(const ratelimit_shard_t *s, const char *key, size_t len,
                                     uint64_t hash)
{
    uint32_t i = s->heads[hash & s->head_mask];
    while (i != RATELIMIT_NIL) {
        const ratelimit_bucket_t *b = &s->slots[i];
        if (b->hash == hash && b->key_len == len && memcmp(b->key, key, len) == 0)
            return i;
        i = b->chain_next;
    }
    return RATELIMIT_NIL;
}

static void ratelimit_lru_unlink(ratelimit_shard_t *s, uint32_t i)
{
    ratelimit_bucket_t *b = &s->slots[i];
    if (b->lru_prev != RATELIMIT_NIL)
        s->slots[b->lru_prev].lru_next = b->lru_next;
    else
        s->lru_head = b->lru_next;
    if (b->lru_next != RATELIMIT_NIL)
        s->slots[b->lru_next].lru_prev = b->lru_prev;
    else
        s->lru_tail = b->lru_prev;
}

static void ratelimit_lru_push_front(ratelimit_shard_t *s, uint32_t i)
{
    ratelimit_bucket_t *b = &s->slots[i];
    b->lru_prev = RATELIMIT_NIL;
    b->lru_next = s->lru_head;
    if (s->lru_head != RATELIMIT_NIL)
        s->slots[s->lru_head].lru_prev = i;
    s->lru_head = i;
    if (s->lru_tail == RATELIMIT_NIL)
        s->lru_tail = i;
}

static void ratelimit_chain_unlink(ratelimit_shard_t *s, uint32_t i)
{
    uint32_t *link = &s->heads[s->slots[i].hash & s->head_mask];
    while (*link != i)
        link = &s->slots[*link].chain_next;
    *link = s->slots[i].chain_next;
}

static void ratelimit_shard_evict(ratelimit_shard_t *s, uint32_t i)
{
    ratelimit_chain_unlink(s, i);
    ratelimit_lru_unlink(s, i);
    ratelimit_bucket_t *b = &s->slots[i];
    free(b->key);
    b->key = NULL;
    b->chain_next = s->free_head;
    s->free_head = i;
    s->used--;
}

/* Frees at least one slot in a full shard (see the eviction note above). */
static void ratelimit_shard_make_room(ratelimit_shard_t *s, int64_t now_ms)
{
    if (s->used < s->cap)
        return;
    uint32_t i = s->lru_tail;
    while (i != RATELIMIT_NIL) {
        uint32_t prev = s->slots[i].lru_prev;
        const ratelimit_bucket_t *b = &s->slots[i];
        if (ratelimit_tokens_at(b, now_ms) == ratelimit_capacity_milli(b->rule))
            ratelimit_shard_evict(s, i);
        i = prev;
    }
    if (s->used == s->cap)
        ratelimit_shard_evict(s, s->lru_tail);
}

/* Creates a full bucket for a new key, or returns NIL when out of memory. */
static uint32_t ratelimit_shard_insert(ratelimit_shard_t *s, const char *key, size_t len,
                                       uint64_t hash, ratelimit_rule_t rule, int64_t now_ms,
                                       int64_t tokens)
{
    char *copy = malloc(len ? len : 1);
    if (copy == NULL)
        return RATELIMIT_NIL;
    memcpy(copy, key, len);
    ratelimit_shard_make_room(s, now_ms);
    uint32_t i = s->free_head;
    ratelimit_bucket_t *b = &s->slots[i];
    s->free_head = b->chain_next;
    *b = (ratelimit_bucket_t){
        .key = copy,
        .key_len = len,
        .hash = hash,
        .tokens = tokens,
        .last_ms = now_ms,
        .rule = rule,
        .chain_next = s->heads[hash & s->head_mask],
    };
    s->heads[hash & s->head_mask] = i;
    ratelimit_lru_push_front(s, i);
    s->used++;
    return i;
}

static void ratelimit_bucket_apply_rule(ratelimit_bucket_t *b, ratelimit_rule_t rule)
{
    if (b->rule.rate == rule.rate && b->rule.burst == rule.burst)
        return;
    int64_t full = ratelimit_capacity_milli(rule);
    if (b->tokens > full)
        b->tokens = full;
    b->rule = rule;
}

static ratelimit_result_t ratelimit_bucket_take(ratelimit_bucket_t *b)
{
    ratelimit_result_t r = {.limit = b->rule.burst};
    if (b->tokens >= RATELIMIT_MILLI) {
        b->tokens -= RATELIMIT_MILLI;
        r.allowed = true;
    }
    /* Leasing: what this node holds and what the shared bucket had left. */
    int64_t left = (b->tokens + (r.allowed ? b->shared_milli : 0)) / RATELIMIT_MILLI;
    r.remaining = (uint32_t)(left < b->rule.burst ? left : b->rule.burst);
    if (!r.allowed) {
        /* Whole seconds until one token: ceil(need / rate ms / 1000). */
        int64_t per_second = (int64_t)b->rule.rate * RATELIMIT_MILLI;
        int64_t need = RATELIMIT_MILLI - b->tokens;
        int64_t secs = (need + per_second - 1) / per_second;
        r.retry_after_s = secs < 1 ? 1 : (uint32_t)secs;
    }
    return r;
}

/* ---- public table ---- */

static int ratelimit_shard_init(ratelimit_shard_t *s, uint32_t cap)
{
    uint32_t heads = 1;
    while (heads < cap * 2u)
        heads <<= 1;
    s->slots = calloc(cap, sizeof *s->slots);
    s->heads = malloc(heads * sizeof *s->heads);
    if (s->slots == NULL || s->heads == NULL)
        return -1;
    memset(s->heads, 0xff, heads * sizeof *s->heads); /* all RATELIMIT_NIL */
    s->head_mask = heads - 1;
    s->cap = cap;
    s->used = 0;
    for (uint32_t i = 0; i < cap; i++)
        s->slots[i].chain_next = i + 1 < cap ? i + 1 : RATELIMIT_NIL;
    s->free_head = 0;
    s->lru_head = RATELIMIT_NIL;
    s->lru_tail = RATELIMIT_NIL;
    return 0;
}

ratelimit_t *ratelimit_new(size_t capacity)
{
    if (capacity < RATELIMIT_SHARDS || capacity / RATELIMIT_SHARDS > UINT32_MAX / 4)
        return NULL;
    /* Shards are cache-line aligned so two locks never share a line;
     * sizeof *rl is then a multiple of 64, as aligned_alloc requires. */
    ratelimit_t *rl = aligned_alloc(_Alignof(ratelimit_t), sizeof *rl);
    if (rl == NULL)
        return NULL;
    memset(rl, 0, sizeof *rl);
    /* Every mutex exists before anything can fail, so ratelimit_free may
     * destroy them all; it copes with shards whose arrays are still NULL. */
    for (size_t i = 0; i < RATELIMIT_SHARDS; i++) {
        pthread_mutex_init(&rl->shards[i].lock, NULL);
        pthread_cond_init(&rl->shards[i].asked, NULL);
    }
    uint32_t per_shard = (uint32_t)(capacity / RATELIMIT_SHARDS);
    for (size_t i = 0; i < RATELIMIT_SHARDS; i++) {
        if (ratelimit_shard_init(&rl->shards[i], per_shard) != 0) {
            ratelimit_free(rl);
            return NULL;
        }
    }
    return rl;
}

void ratelimit_free(ratelimit_t *rl)
{
    if (rl == NULL)
        return;
    for (size_t i = 0; i < RATELIMIT_SHARDS; i++) {
        ratelimit_shard_t *s = &rl->shards[i];
        for (uint32_t k = 0; s->slots != NULL && k < s->cap; k++)
            free(s->slots[k].key);
        free(s->slots);
        free(s->heads);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->asked);
    }
    free(rl);
}

/* ---- leasing (see the note at the top) ---- */

uint32_t ratelimit_lease_size(ratelimit_rule_t rule)
{
    rule = ratelimit_rule_sane(rule);
    return rule.burst / 50 > 1 ? rule.burst / 50 : 1;
}

void ratelimit_set_source(ratelimit_t *rl, ratelimit_source_fn fn, void *cls)
{
    rl->source = fn;
    rl->source_cls = cls;
}

static ratelimit_result_t ratelimit_refused(ratelimit_rule_t rule, int64_t wait_ms)
{
    int64_t secs = (wait_ms + 999) / 1000;
    return (ratelimit_result_t){.limit = rule.burst,
                                .retry_after_s = secs < 1 ? 1 : (uint32_t)secs};
}

/* The milliseconds the shared bucket needs to refill one chunk: no ask
 * before that can succeed after a refused one. */
static int64_t ratelimit_chunk_ms(ratelimit_rule_t rule)
{
    int64_t milli = (int64_t)ratelimit_lease_size(rule) * RATELIMIT_MILLI;
    return (milli + rule.rate - 1) / rule.rate;
}

/* Applies the source's answer to the bucket that asked. */
static void ratelimit_apply_lease(ratelimit_bucket_t *b, int rc, const ratelimit_lease_t *lease,
                                  int64_t now_ms)
{
    b->asking = false;
    if (rc != 0) {
        /* Fail open: a chunk now, then the rule's rate (see the top). */
        int64_t chunk = (int64_t)ratelimit_lease_size(b->rule) * RATELIMIT_MILLI;
        if (b->tokens < chunk)
            b->tokens = chunk;
        b->degraded_until = now_ms + RATELIMIT_DEGRADED_MS;
        b->last_ms = now_ms;
        return;
    }
    b->shared_milli = lease->shared_milli > 0 ? lease->shared_milli : 0;
    if (lease->granted == 0) {
        b->next_ask_ms = now_ms + ratelimit_chunk_ms(b->rule);
        return;
    }
    b->tokens += (int64_t)lease->granted * RATELIMIT_MILLI;
    b->next_ask_ms = 0;
}

/* Asks the source with the shard lock released, then takes again. Called
 * and returns with s->lock held. */
static ratelimit_result_t ratelimit_ask(ratelimit_t *rl, ratelimit_shard_t *s, uint32_t i,
                                        const char *key, size_t key_len, uint64_t hash,
                                        ratelimit_rule_t rule, int64_t now_ms)
{
    s->slots[i].asking = true;
    pthread_mutex_unlock(&s->lock);
    ratelimit_lease_t lease = {0};
    uint32_t want = ratelimit_lease_size(rule);
    int rc = rl->source(rl->source_cls, key, key_len, rule, want, &lease);
    if (rc == 0 && lease.granted > want)
        lease.granted = want; /* a source never gives more than asked */
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->asked);
    i = ratelimit_shard_find(s, key, key_len, hash);
    if (i != RATELIMIT_NIL) {
        ratelimit_bucket_t *b = &s->slots[i];
        ratelimit_apply_lease(b, rc, &lease, now_ms);
        if (b->degraded_until > now_ms)
            ratelimit_refill(b, now_ms);
        if (b->tokens >= RATELIMIT_MILLI)
            return ratelimit_bucket_take(b);
        return ratelimit_refused(rule, b->degraded_until > now_ms ? 1000 : ratelimit_chunk_ms(rule));
    }
    /* Evicted meanwhile: the lease serves this request only; a failed ask
     * fails open. */
    if (rc != 0 || lease.granted > 0)
        return (ratelimit_result_t){.allowed = true, .limit = rule.burst};
    return ratelimit_refused(rule, ratelimit_chunk_ms(rule));
}

/* A take with a refill source. Called and returns with s->lock held. */
static ratelimit_result_t ratelimit_take_leased(ratelimit_t *rl, ratelimit_shard_t *s,
                                                const char *key, size_t key_len, uint64_t hash,
                                                ratelimit_rule_t rule, int64_t now_ms)
{
    uint32_t i = ratelimit_shard_find(s, key, key_len, hash);
    /* Another take of this key is asking: wait for its answer (bounded)
     * rather than refuse a request the lease may well cover, or ask twice. */
    for (int waits = 0; i != RATELIMIT_NIL && s->slots[i].asking && waits < RATELIMIT_ASK_WAITS;
         waits++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->asked, &s->lock, &until);
        i = ratelimit_shard_find(s, key, key_len, hash);
    }
    if (i == RATELIMIT_NIL) {
        i = ratelimit_shard_insert(s, key, key_len, hash, rule, now_ms, 0);
        if (i == RATELIMIT_NIL) /* no memory: allowed, as for a local bucket */
            return (ratelimit_result_t){.allowed = true, .limit = rule.burst};
    } else {
        ratelimit_lru_unlink(s, i);
        ratelimit_lru_push_front(s, i);
    }
    ratelimit_bucket_t *b = &s->slots[i];
    ratelimit_bucket_apply_rule(b, rule);
    if (b->degraded_until != 0) {
        if (now_ms < b->degraded_until) {
            ratelimit_refill(b, now_ms);
            return ratelimit_bucket_take(b);
        }
        b->degraded_until = 0; /* the source is asked again: drop what was minted locally */
        b->tokens = 0;
    }
    if (now_ms > b->last_ms)
        b->last_ms = now_ms;
    if (b->tokens >= RATELIMIT_MILLI)
        return ratelimit_bucket_take(b);
    if (b->asking) /* still asking after RATELIMIT_ASK_WAITS: the source hangs */
        return ratelimit_refused(rule, 1);
    if (now_ms < b->next_ask_ms)
        return ratelimit_refused(rule, b->next_ask_ms - now_ms);
    return ratelimit_ask(rl, s, i, key, key_len, hash, rule, now_ms);
}

ratelimit_result_t ratelimit_take(ratelimit_t *rl, const char *key, size_t key_len,
                                  ratelimit_rule_t rule, int64_t now_ms)
{
    rule = ratelimit_rule_sane(rule);
    uint64_t hash = ratelimit_hash(key, key_len);
    ratelimit_shard_t *s = &rl->shards[hash >> (64 - RATELIMIT_SHARD_BITS)];
    pthread_mutex_lock(&s->lock);
    if (rl->source != NULL) {
        ratelimit_result_t leased = ratelimit_take_leased(rl, s, key, key_len, hash, rule, now_ms);
        pthread_mutex_unlock(&s->lock);
        return leased;
    }
    uint32_t i = ratelimit_shard_find(s, key, key_len, hash);
    if (i == RATELIMIT_NIL) {
        i = ratelimit_shard_insert(s, key, key_len, hash, rule, now_ms,
                                   ratelimit_capacity_milli(rule));
    } else {
        ratelimit_refill(&s->slots[i], now_ms);
        ratelimit_bucket_apply_rule(&s->slots[i], rule);
        ratelimit_lru_unlink(s, i);
        ratelimit_lru_push_front(s, i);
    }
    ratelimit_result_t r;
    if (i != RATELIMIT_NIL) {
        r = ratelimit_bucket_take(&s->slots[i]);
    } else {
        r = (ratelimit_result_t){.allowed = true, .limit = rule.burst, .remaining = rule.burst - 1};
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

size_t ratelimit_size(ratelimit_t *rl)
{
    size_t n = 0;
    for (size_t i = 0; i < RATELIMIT_SHARDS; i++) {
        ratelimit_shard_t *s = &rl->shards[i];
        pthread_mutex_lock(&s->lock);
        n += s->used;
        pthread_mutex_unlock(&s->lock);
    }
    return n;
}

/* ---- policy ---- */

typedef struct ratelimit_policy_entry {
    char *tenant; /* owned; "" = all tenants */
    char *route;  /* owned; "" = the tenant default */
    ratelimit_rule_t rule;
} ratelimit_policy_entry_t;

struct ratelimit_policy {
    ratelimit_rule_t global_default;
    ratelimit_policy_entry_t *entries; /* count of cap */
    size_t count;
    size_t cap;
    uint32_t *index; /* index_mask + 1 slots of entry numbers, NIL when empty */
    size_t index_mask;
};

static const char *ratelimit_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static uint64_t ratelimit_policy_hash(const char *tenant, const char *route)
{
    /* The NUL between the two keeps ("ab", "c") apart from ("a", "bc"). */
    uint64_t h = ratelimit_hash(tenant, strlen(tenant) + 1);
    for (const char *p = route; *p != '\0'; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot holding (tenant, route), or the empty slot where it would go. */
static size_t ratelimit_policy_slot(const ratelimit_policy_t *p, const char *tenant,
                                    const char *route)
{
    size_t i = ratelimit_policy_hash(tenant, route) & p->index_mask;
    for (;;) {
        uint32_t e = p->index[i];
        if (e == RATELIMIT_NIL)
            return i;
        const ratelimit_policy_entry_t *en = &p->entries[e];
        if (strcmp(en->tenant, tenant) == 0 && strcmp(en->route, route) == 0)
            return i;
        i = (i + 1) & p->index_mask;
    }
}

static const ratelimit_policy_entry_t *ratelimit_policy_find(const ratelimit_policy_t *p,
                                                             const char *tenant,
                                                             const char *route)
{
    if (p->count == 0)
        return NULL;
    uint32_t e = p->index[ratelimit_policy_slot(p, tenant, route)];
    return e == RATELIMIT_NIL ? NULL : &p->entries[e];
}

/* Doubles the entry array and rebuilds the index at most half full. */
static int ratelimit_policy_grow(ratelimit_policy_t *p)
{
    size_t cap = p->cap ? p->cap * 2 : 8;
    if (cap > UINT32_MAX / 4)
        return -1;
    ratelimit_policy_entry_t *entries = realloc(p->entries, cap * sizeof *entries);
    if (entries == NULL)
        return -1;
    p->entries = entries;
    uint32_t *index = malloc(cap * 2 * sizeof *index);
    if (index == NULL)
        return -1;
    memset(index, 0xff, cap * 2 * sizeof *index);
    free(p->index);
    p->index = index;
    p->index_mask = cap * 2 - 1;
    p->cap = cap;
    for (size_t k = 0; k < p->count; k++) {
        const ratelimit_policy_entry_t *en = &p->entries[k];
        p->index[ratelimit_policy_slot(p, en->tenant, en->route)] = (uint32_t)k;
    }
    return 0;
}

ratelimit_policy_t *ratelimit_policy_new(ratelimit_rule_t global_default)
{
    ratelimit_policy_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->global_default = ratelimit_rule_sane(global_default);
    return p;
}

static char *ratelimit_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL)
        memcpy(copy, s, n);
    return copy;
}

int ratelimit_policy_add(ratelimit_policy_t *p, const char *tenant_id, const char *route_key,
                         ratelimit_rule_t rule)
{
    const char *tenant = ratelimit_or_empty(tenant_id);
    const char *route = ratelimit_or_empty(route_key);
    rule = ratelimit_rule_sane(rule);
    if (tenant[0] == '\0' && route[0] == '\0') {
        p->global_default = rule;
        return 0;
    }
    if (p->count > 0) {
        uint32_t e = p->index[ratelimit_policy_slot(p, tenant, route)];
        if (e != RATELIMIT_NIL) {
            p->entries[e].rule = rule;
            return 0;
        }
    }
    if (p->count == p->cap && ratelimit_policy_grow(p) != 0)
        return -1;
    ratelimit_policy_entry_t en = {.tenant = ratelimit_strdup(tenant),
                                   .route = ratelimit_strdup(route),
                                   .rule = rule};
    if (en.tenant == NULL || en.route == NULL) {
        free(en.tenant);
        free(en.route);
        return -1;
    }
    p->entries[p->count] = en;
    p->index[ratelimit_policy_slot(p, tenant, route)] = (uint32_t)p->count;
    p->count++;
    return 0;
}

void ratelimit_policy_free(ratelimit_policy_t *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->entries[i].tenant);
        free(p->entries[i].route);
    }
    free(p->entries);
    free(p->index);
    free(p);
}

ratelimit_rule_t ratelimit_policy_tenant_rule(const ratelimit_policy_t *p, const char *tenant_id)
{
    const char *tenant = ratelimit_or_empty(tenant_id);
    if (tenant[0] == '\0')
        return p->global_default;
    const ratelimit_policy_entry_t *en = ratelimit_policy_find(p, tenant, "");
    return en != NULL ? en->rule : p->global_default;
}

bool ratelimit_policy_route_rule(const ratelimit_policy_t *p, const char *tenant_id,
                                 const char *route_key, ratelimit_rule_t *rule)
{
    const char *tenant = ratelimit_or_empty(tenant_id);
    const char *route = ratelimit_or_empty(route_key);
    if (route[0] == '\0')
        return false;
    const ratelimit_policy_entry_t *en = NULL;
    if (tenant[0] != '\0')
        en = ratelimit_policy_find(p, tenant, route);
    if (en == NULL)
        en = ratelimit_policy_find(p, "", route);
    if (en == NULL)
        return false;
    *rule = en->rule;
    return true;
}
