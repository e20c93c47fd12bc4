/* webhooks/backoff: when a failed delivery is tried again.
 *
 * A delivery gets 1 + N attempts (N = the subscription's retry attempts), all
 * begun inside its retry window W, counted from the first attempt. The
 * retries are spread over the window rather than packed at its start, so
 * that an endpoint down for a while (a deploy, an outage) is retried later
 * in the hour it was given: retry i (1..N) is due at
 *     first + W x (2^i - 1) / 2^N
 * minus a random jitter of up to half the gap before it (W x 2^(i-1) / 2^N),
 * so the gaps double (exponential backoff), the last retry is due by
 * W x (1 - 2^-N), the schedule fits any window, even one of a few seconds,
 * and deliveries that failed together do not retry together. An attempt that
 * ended after its retry's due time is retried at once; none begins at or
 * after the end of the window. A 429's Retry-After delays the next attempt
 * and is honoured only when that attempt still fits in the window. */
#ifndef TAXD_WEBHOOKS_BACKOFF_H
#define TAXD_WEBHOOKS_BACKOFF_H

#include <stdint.h>

#define WEBHOOK_RETRIES_MAX 20 /* the largest N an operator may set */

/* Due time (ms) of the next attempt of a delivery that has made `made`
 * attempts (>= 1), the first at first_ms, now that the last one ended at
 * now_ms; at least now_ms + min_delay_ms (Retry-After). -1 when no attempt
 * may follow: all 1 + retries made, or the window would be closed. rnd is a
 * random value for the jitter. */
int64_t webhook_backoff_next(int64_t first_ms, int64_t window_ms, unsigned retries,
                             unsigned made, int64_t now_ms, int64_t min_delay_ms, uint64_t rnd);

#endif
