/* webhooks/bucket: the token bucket that bounds one subscription's delivery
 * rate as the receiver sees it. A bucket holds at most `burst` tokens and
 * refills `rate` per second; starting an attempt takes one. Starting from a
 * full bucket, any interval of length t holds at most burst + rate x t
 * starts, within the contract's bound of burst + rate x t + 1 requests.
 *
 * Integer arithmetic only: the level is kept in micro-tokens (1e-6 token), so
 * a refill of `rate` micro-tokens per microsecond is exact and never drifts.
 * Not thread-safe: a bucket belongs to the dispatcher thread that holds the
 * subscription's lease. */
#ifndef TAXD_WEBHOOKS_BUCKET_H
#define TAXD_WEBHOOKS_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct webhook_bucket {
    uint32_t rate;   /* tokens per second, >= 1 */
    uint32_t burst;  /* capacity in tokens, >= 1 */
    int64_t level;   /* micro-tokens */
    int64_t last_us; /* monotonic time of the last refill */
} webhook_bucket_t;

/* The burst taxd gives a subscription of `rate` requests per second: a tenth
 * of a second's worth, at least 1, so any one second sees at most 1.1 x rate
 * requests (plus one). */
uint32_t webhook_burst_of(uint32_t rate);

/* A full bucket. */
void webhook_bucket_init(webhook_bucket_t *b, uint32_t rate, uint32_t burst, int64_t now_us);
/* A changed rule keeps the tokens, clamped to the new burst. */
void webhook_bucket_set_rule(webhook_bucket_t *b, uint32_t rate, uint32_t burst, int64_t now_us);
/* Whole tokens available at now_us. */
uint32_t webhook_bucket_available(webhook_bucket_t *b, int64_t now_us);
/* Takes one token; false when none is available. */
bool webhook_bucket_take(webhook_bucket_t *b, int64_t now_us);
/* Microseconds until one token is available (0: now). */
int64_t webhook_bucket_wait_us(webhook_bucket_t *b, int64_t now_us);

#endif
