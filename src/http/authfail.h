/* authfail: counts failed client secrets per (client id, client address)
 * in fixed windows, so the token endpoint can refuse a guesser without
 * letting anyone lock a known client out from elsewhere: the key is the
 * pair, so failures from one address never throttle the same client id
 * from another.
 *
 * A pair that failed `limit` times within `window_ms` of its first failure
 * is throttled until that window ends; while throttled every attempt is
 * refused, a correct secret included (else the throttle would tell a guesser
 * which guess was right). A success before the limit forgets the pair.
 *
 * Memory is fixed at creation: a set-associative table of 64-bit keyed
 * hashes (a random key per process, so nobody can aim collisions at a set).
 * A full set gives up, in order, a pair whose window ended, the pair with
 * the fewest failures, the oldest: cycling client ids or addresses evicts
 * the pairs that matter least, never grows the table. Thread-safe. */
#ifndef TAXD_HTTP_AUTHFAIL_H
#define TAXD_HTTP_AUTHFAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct authfail authfail_t;

/* capacity: pairs held at most (rounded up to a multiple of the set size,
 * >= 64); limit failures (>= 1) within window_ms (>= 1000) throttle a pair.
 * NULL on a bad argument or without memory or a random source. */
authfail_t *authfail_new(size_t capacity, uint32_t limit, int64_t window_ms);
void authfail_free(authfail_t *af);

/* 0 when the pair may try now; else the whole seconds (>= 1) until its
 * window ends, for Retry-After. Either string may be empty. */
uint32_t authfail_check(authfail_t *af, const char *client_id, const char *address,
                        int64_t now_ms);
/* Records a failed secret (unknown client id, wrong secret, revoked). */
void authfail_record(authfail_t *af, const char *client_id, const char *address, int64_t now_ms);
/* Forgets the pair after a success. */
void authfail_forget(authfail_t *af, const char *client_id, const char *address);

#endif
