/* tokencache: see tokencache.h. One mutex per stripe of slots keeps threads
 * from contending on one lock; a slot holds its own copy of the token. */
#include "http/tokencache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"

#define STRIPES 64

typedef struct slot {
    size_t len; /* 0: empty */
    token_claims_t claims;
    char token[TOKENCACHE_MAX_TOKEN];
} slot_t;

struct tokencache {
    size_t mask;
    slot_t *slots;
    pthread_mutex_t stripes[STRIPES];
};

tokencache_t *tokencache_new(size_t slots)
{
    size_t n = 64;
    while (n < slots)
        n *= 2;
    tokencache_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->slots = calloc(n, sizeof *c->slots);
    if (c->slots == NULL) {
        free(c);
        return NULL;
    }
    c->mask = n - 1;
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_init(&c->stripes[i], NULL);
    return c;
}

void tokencache_free(tokencache_t *cache)
{
    if (cache == NULL)
        return;
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&cache->stripes[i]);
    free(cache->slots);
    free(cache);
}

/* FNV-1a: the slot index need not be secret, only well spread. */
static size_t slot_of(const tokencache_t *c, const char *token, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)token[i];
        h *= 1099511628211ULL;
    }
    return (size_t)(h ^ (h >> 32)) & c->mask;
}

bool tokencache_get(tokencache_t *cache, const char *token, size_t len, token_claims_t *claims)
{
    if (len == 0 || len > TOKENCACHE_MAX_TOKEN)
        return false;
    size_t i = slot_of(cache, token, len);
    pthread_mutex_t *lock = &cache->stripes[i % STRIPES];
    pthread_mutex_lock(lock);
    const slot_t *s = &cache->slots[i];
    bool hit = crypto_equal(s->token, s->len, token, len);
    if (hit)
        *claims = s->claims;
    pthread_mutex_unlock(lock);
    return hit;
}

void tokencache_put(tokencache_t *cache, const char *token, size_t len,
                    const token_claims_t *claims)
{
    if (len == 0 || len > TOKENCACHE_MAX_TOKEN)
        return;
    size_t i = slot_of(cache, token, len);
    pthread_mutex_t *lock = &cache->stripes[i % STRIPES];
    pthread_mutex_lock(lock);
    slot_t *s = &cache->slots[i];
    memcpy(s->token, token, len);
    s->len = len;
    s->claims = *claims;
    pthread_mutex_unlock(lock);
}
