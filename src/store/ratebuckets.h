/* store/ratebuckets: the shared token buckets behind the rate limits that
 * hold across nodes (table rate_buckets). Each node leases tokens from a
 * key's bucket in small chunks and spends them locally; a node never admits
 * a token the shared bucket did not issue, so all nodes together admit at
 * most burst + rate x t in any window t (plus what nodes hold when the
 * window opens). The design and its trade-off: docs/decisions.md, "Rate
 * limits across nodes". */
#ifndef TAXD_STORE_RATEBUCKETS_H
#define TAXD_STORE_RATEBUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_RATE_KEY_MAX 512 /* bytes of a key, with its NUL */

/* Takes `want` whole tokens from the bucket `key` under the rule (rate tokens
 * per second, >= 1; burst tokens, >= 1), refilled lazily to now_ms, all or
 * nothing, in ONE statement outside any transaction (atomic on both
 * backends: INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING). A new
 * key starts full. now_ms is the caller's service clock, the same for every
 * node; a time before the bucket's last refill adds nothing and does not move
 * it back, so a clock step backwards never mints tokens. want is clamped to
 * [1, burst].
 *
 * *granted receives want or 0; *level_milli (may be NULL) the bucket's level
 * after the take in thousandths of a token, or -1 when nothing was granted
 * (the statement then returns no row and the level is not read).
 * Returns STORE_OK (also when nothing was granted), STORE_UNAVAILABLE when the
 * server cannot be reached, STORE_TIMEOUT past the connection's deadline, or
 * STORE_ERROR. */
store_status_t store_rate_take(store_conn_t *conn, const char *key, uint32_t rate_per_s,
                               uint32_t burst, int64_t now_ms, uint32_t want, uint32_t *granted,
                               int64_t *level_milli);

#endif
