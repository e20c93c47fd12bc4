/* webhooks/bucket: see bucket.h. */
#include "webhooks/bucket.h"

#define MICRO 1000000LL

uint32_t webhook_burst_of(uint32_t rate)
{
    uint32_t burst = rate / 10;
    return burst > 0 ? burst : 1;
}

static int64_t capacity(const webhook_bucket_t *b)
{
    return (int64_t)b->burst * MICRO;
}

static void refill(webhook_bucket_t *b, int64_t now_us)
{
    int64_t elapsed = now_us - b->last_us;
    if (elapsed <= 0)
        return; /* the monotonic clock never goes back; a caller's stale time adds nothing */
    b->last_us = now_us;
    int64_t missing = capacity(b) - b->level;
    /* Clamp before multiplying: no overflow whatever the idle time. */
    if (elapsed >= missing / b->rate + 1) {
        b->level = capacity(b);
        return;
    }
    b->level += elapsed * (int64_t)b->rate;
    if (b->level > capacity(b))
        b->level = capacity(b);
}

void webhook_bucket_init(webhook_bucket_t *b, uint32_t rate, uint32_t burst, int64_t now_us)
{
    b->rate = rate > 0 ? rate : 1;
    b->burst = burst > 0 ? burst : 1;
    b->level = capacity(b);
    b->last_us = now_us;
}

void webhook_bucket_set_rule(webhook_bucket_t *b, uint32_t rate, uint32_t burst, int64_t now_us)
{
    refill(b, now_us);
    b->rate = rate > 0 ? rate : 1;
    b->burst = burst > 0 ? burst : 1;
    if (b->level > capacity(b))
        b->level = capacity(b);
}

uint32_t webhook_bucket_available(webhook_bucket_t *b, int64_t now_us)
{
    refill(b, now_us);
    return (uint32_t)(b->level / MICRO);
}

bool webhook_bucket_take(webhook_bucket_t *b, int64_t now_us)
{
    refill(b, now_us);
    if (b->level < MICRO)
        return false;
    b->level -= MICRO;
    return true;
}

int64_t webhook_bucket_wait_us(webhook_bucket_t *b, int64_t now_us)
{
    refill(b, now_us);
    if (b->level >= MICRO)
        return 0;
    return (MICRO - b->level + b->rate - 1) / b->rate;
}
