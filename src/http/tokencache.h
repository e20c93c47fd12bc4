/* tokencache: remembers tokens that verified, so the hot path of a client
 * that reuses its token (for up to 24 hours) skips the HMAC and the JSON
 * parsing. Only successfully verified tokens enter; a hit still has its
 * expiry checked by the caller, and revocation is checked separately.
 *
 * Direct-mapped with a fixed number of slots, so memory is bounded; a
 * colliding token simply replaces the older one. Slots are chosen by a
 * non-secret hash and the whole token is compared in constant time. */
#ifndef TAXD_HTTP_TOKENCACHE_H
#define TAXD_HTTP_TOKENCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/token.h"

#define TOKENCACHE_MAX_TOKEN 1024 /* longer tokens are verified every time */

typedef struct tokencache tokencache_t;

/* slots: rounded up to a power of two. NULL on allocation failure. */
tokencache_t *tokencache_new(size_t slots);
void tokencache_free(tokencache_t *cache);

/* True and *claims filled when this exact token verified before. */
bool tokencache_get(tokencache_t *cache, const char *token, size_t len, token_claims_t *claims);
/* Remembers a token that just verified. */
void tokencache_put(tokencache_t *cache, const char *token, size_t len,
                    const token_claims_t *claims);

#endif
