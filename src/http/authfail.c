/* authfail: see authfail.h.
 *
 * Table. nsets sets of AUTHFAIL_WAYS slots, one mutex per set (a lookup
 * holds it for a few comparisons). A slot holds the pair's SipHash-2-4
 * under the process's random key, not the strings: 32 bytes a pair
 * whatever the length of the client id, and a collision (two pairs sharing
 * a counter) needs about 2^32 pairs alive at once, far more than the table
 * holds. Windows are measured on the time the caller passes (the service
 * clock, so tests can move it); a clock that went back ends the window. */
#include "http/authfail.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"

#define AUTHFAIL_WAYS 8

typedef struct slot {
    uint64_t hash;         /* 0: free */
    int64_t window_start;  /* the pair's first failure of this window */
    uint32_t failures;
} slot_t;

typedef struct set {
    pthread_mutex_t lock;
    slot_t slots[AUTHFAIL_WAYS];
} set_t;

struct authfail {
    uint64_t key[2];
    uint32_t limit;
    int64_t window_ms;
    size_t nsets;
    set_t *sets;
};

/* ---- SipHash-2-4 (Aumasson and Bernstein), the pair as its message */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

typedef struct sip {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;  /* bytes not yet in a word */
    size_t len;     /* bytes taken so far */
} sip_t;

static void sip_round(sip_t *s)
{
    s->v0 += s->v1; s->v1 = ROTL(s->v1, 13); s->v1 ^= s->v0; s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3; s->v3 = ROTL(s->v3, 16); s->v3 ^= s->v2;
    s->v0 += s->v3; s->v3 = ROTL(s->v3, 21); s->v3 ^= s->v0;
    s->v2 += s->v1; s->v1 = ROTL(s->v1, 17); s->v1 ^= s->v2; s->v2 = ROTL(s->v2, 32);
}

static void sip_word(sip_t *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

static void sip_init(sip_t *s, const uint64_t key[2])
{
    *s = (sip_t){.v0 = key[0] ^ 0x736f6d6570736575ULL, .v1 = key[1] ^ 0x646f72616e646f6dULL,
                 .v2 = key[0] ^ 0x6c7967656e657261ULL, .v3 = key[1] ^ 0x7465646279746573ULL};
}

static void sip_bytes(sip_t *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        s->tail |= (uint64_t)(unsigned char)p[i] << (8 * (s->len % 8));
        if (++s->len % 8 == 0) {
            sip_word(s, s->tail);
            s->tail = 0;
        }
    }
}

static uint64_t sip_final(sip_t *s)
{
    sip_word(s, s->tail | (uint64_t)(s->len & 0xff) << 56);
    s->v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* The pair's hash; the NUL between the two keeps ("ab","c") apart from
 * ("a","bc"). Never 0, which marks a free slot. */
static uint64_t pair_hash(const authfail_t *af, const char *client_id, const char *address)
{
    sip_t s;
    sip_init(&s, af->key);
    sip_bytes(&s, client_id, strlen(client_id) + 1);
    sip_bytes(&s, address, strlen(address));
    uint64_t h = sip_final(&s);
    return h != 0 ? h : 1;
}

/* ---- the table */

authfail_t *authfail_new(size_t capacity, uint32_t limit, int64_t window_ms)
{
    if (capacity < 64 || limit < 1 || window_ms < 1000)
        return NULL;
    authfail_t *af = calloc(1, sizeof *af);
    if (af == NULL)
        return NULL;
    af->limit = limit;
    af->window_ms = window_ms;
    af->nsets = (capacity + AUTHFAIL_WAYS - 1) / AUTHFAIL_WAYS;
    af->sets = calloc(af->nsets, sizeof *af->sets);
    if (af->sets == NULL || crypto_random_bytes(af->key, sizeof af->key) != 0) {
        free(af->sets);
        free(af);
        return NULL;
    }
    for (size_t i = 0; i < af->nsets; i++)
        pthread_mutex_init(&af->sets[i].lock, NULL);
    return af;
}

void authfail_free(authfail_t *af)
{
    if (af == NULL)
        return;
    for (size_t i = 0; i < af->nsets; i++)
        pthread_mutex_destroy(&af->sets[i].lock);
    free(af->sets);
    free(af);
}

static set_t *set_of(const authfail_t *af, uint64_t hash)
{
    return &af->sets[(hash >> 32) % af->nsets];
}

static bool window_over(const authfail_t *af, const slot_t *s, int64_t now_ms)
{
    return now_ms < s->window_start || now_ms - s->window_start >= af->window_ms;
}

static slot_t *find(set_t *set, uint64_t hash)
{
    for (int i = 0; i < AUTHFAIL_WAYS; i++)
        if (set->slots[i].hash == hash)
            return &set->slots[i];
    return NULL;
}

/* The slot a new pair takes: a free one, else one whose window ended, else
 * the fewest failures, the oldest among those. */
static slot_t *victim(const authfail_t *af, set_t *set, int64_t now_ms)
{
    slot_t *best = &set->slots[0];
    for (int i = 0; i < AUTHFAIL_WAYS; i++) {
        slot_t *s = &set->slots[i];
        if (s->hash == 0 || window_over(af, s, now_ms))
            return s;
        if (s->failures < best->failures ||
            (s->failures == best->failures && s->window_start < best->window_start))
            best = s;
    }
    return best;
}

uint32_t authfail_check(authfail_t *af, const char *client_id, const char *address,
                        int64_t now_ms)
{
    uint64_t hash = pair_hash(af, client_id, address);
    set_t *set = set_of(af, hash);
    uint32_t wait_s = 0;
    pthread_mutex_lock(&set->lock);
    slot_t *s = find(set, hash);
    if (s != NULL && s->failures >= af->limit && !window_over(af, s, now_ms)) {
        int64_t left = s->window_start + af->window_ms - now_ms;
        wait_s = (uint32_t)((left + 999) / 1000);
    }
    pthread_mutex_unlock(&set->lock);
    return wait_s;
}

void authfail_record(authfail_t *af, const char *client_id, const char *address, int64_t now_ms)
{
    uint64_t hash = pair_hash(af, client_id, address);
    set_t *set = set_of(af, hash);
    pthread_mutex_lock(&set->lock);
    slot_t *s = find(set, hash);
    if (s == NULL || window_over(af, s, now_ms)) {
        if (s == NULL)
            s = victim(af, set, now_ms);
        *s = (slot_t){.hash = hash, .window_start = now_ms, .failures = 0};
    }
    if (s->failures < UINT32_MAX)
        s->failures++;
    pthread_mutex_unlock(&set->lock);
}

void authfail_forget(authfail_t *af, const char *client_id, const char *address)
{
    uint64_t hash = pair_hash(af, client_id, address);
    set_t *set = set_of(af, hash);
    pthread_mutex_lock(&set->lock);
    slot_t *s = find(set, hash);
    if (s != NULL)
        *s = (slot_t){0};
    pthread_mutex_unlock(&set->lock);
}
