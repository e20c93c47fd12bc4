/* webhooks/backoff: see backoff.h. 128-bit intermediates keep
 * W x (2^i - 1) exact for any window and N <= WEBHOOK_RETRIES_MAX. */
#include "webhooks/backoff.h"

int64_t webhook_backoff_next(int64_t first_ms, int64_t window_ms, unsigned retries,
                             unsigned made, int64_t now_ms, int64_t min_delay_ms, uint64_t rnd)
{
    if (made == 0 || made > retries || retries > WEBHOOK_RETRIES_MAX || window_ms <= 0)
        return -1;
    unsigned i = made; /* the retry to schedule, 1..retries */
    __int128 scale = (__int128)1 << retries;
    int64_t offset = (int64_t)(((__int128)window_ms * (((__int128)1 << i) - 1)) / scale);
    int64_t gap = (int64_t)(((__int128)window_ms << (i - 1)) / scale);
    int64_t jitter = (int64_t)(rnd % (uint64_t)(gap / 2 + 1));
    int64_t due = first_ms + offset - jitter;
    if (due < now_ms)
        due = now_ms;
    if (min_delay_ms > 0 && due < now_ms + min_delay_ms)
        due = now_ms + min_delay_ms;
    if (due >= first_ms + window_ms)
        return -1;
    return due;
}
