/* ratelimit: token buckets keyed by tenant x method x route template (and the
 * per-endpoint buckets), plus the policy saying which rule applies to a key.
 *
 * Buckets refill lazily from elapsed time in integer milli-tokens; there are
 * no timer threads. The table is sharded with one mutex per shard and has a
 * fixed capacity: a full shard first evicts buckets that have refilled
 * completely (forgetting a full bucket changes nothing), then the least
 * recently used one, so memory is bounded whatever the number of tenants. */
#ifndef TAXD_HTTP_RATELIMIT_H
#define TAXD_HTTP_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ratelimit_rule {
    uint32_t rate;  /* tokens per second, >= 1 */
    uint32_t burst; /* bucket size, >= 1 */
} ratelimit_rule_t;

typedef struct ratelimit_result {
    bool allowed;
    uint32_t limit;          /* the rule's burst: x-ratelimit-limit */
    uint32_t remaining;      /* whole tokens left after this request */
    uint32_t retry_after_s;  /* when refused: whole seconds until one token, >= 1 */
} ratelimit_result_t;

typedef struct ratelimit ratelimit_t;

/* capacity: most buckets held at once (>= 64). NULL on allocation failure. */
ratelimit_t *ratelimit_new(size_t capacity);
void ratelimit_free(ratelimit_t *rl);

/* Takes one token from the bucket `key` (key_len bytes) under `rule` at
 * monotonic time now_ms, creating a full bucket when the key is new. When the
 * rule of an existing bucket changed, the bucket keeps its tokens, clamped to
 * the new burst. Thread-safe. */
ratelimit_result_t ratelimit_take(ratelimit_t *rl, const char *key, size_t key_len,
                                  ratelimit_rule_t rule, int64_t now_ms);

/* ---- leasing: one limit shared by many nodes ----
 *
 * With a refill source, a bucket no longer refills from elapsed time: it
 * holds only tokens leased from the source (a shared bucket, e.g. in the
 * database, that app/ wires in; http/ knows nothing of it). When a bucket is
 * empty, the take that finds it so asks the source for a chunk of
 * ratelimit_lease_size(rule) tokens, outside the shard lock; takes of the same
 * key meanwhile wait for that answer (up to 500 ms) instead of asking too, so
 * one ask per key is in flight per process. A refused ask is not repeated before the
 * shared bucket can have refilled a chunk (chunk / rate). A failed ask (the
 * source unreachable) fails OPEN to a local bucket at the rule's rate (no
 * burst) for RATELIMIT_DEGRADED_MS, then asks again.
 *
 * The source is called with the key, the rule and the chunk wanted; it
 * answers 0 with lease->granted (0 or want) and lease->shared_milli (the
 * shared level left, in thousandths; for x-ratelimit-remaining), or -1 when
 * it could not ask. It may be called from any thread. */
#define RATELIMIT_DEGRADED_MS 1000

typedef struct ratelimit_lease {
    uint32_t granted;
    int64_t shared_milli;
} ratelimit_lease_t;

typedef int (*ratelimit_source_fn)(void *cls, const char *key, size_t key_len,
                                   ratelimit_rule_t rule, uint32_t want, ratelimit_lease_t *lease);

/* Sets the refill source (before the first take; fn NULL: local buckets). */
void ratelimit_set_source(ratelimit_t *rl, ratelimit_source_fn fn, void *cls);

/* The chunk leased at once under rule: max(1, burst / 50). */
uint32_t ratelimit_lease_size(ratelimit_rule_t rule);

/* Number of buckets held (for tests and metrics). */
size_t ratelimit_size(ratelimit_t *rl);

/* The policy: an immutable snapshot of the configured limits, built by the
 * settings refresher and swapped in whole. Lookups are read-only and thread-safe.
 *   - tenant default: the tenant's own rule if set, else the global default;
 *   - endpoint rule (an extra bucket, none by default): the tenant's own rule for
 *     the route if set, else the all-tenants rule for the route, else none.
 * route_key is "METHOD /template", e.g. "GET /v1/filers/{filerId}". */
typedef struct ratelimit_policy ratelimit_policy_t;
ratelimit_policy_t *ratelimit_policy_new(ratelimit_rule_t global_default);
/* tenant_id NULL or "" means all tenants (only meaningful with a route). Returns 0 or -1 (no memory). */
int ratelimit_policy_add(ratelimit_policy_t *p, const char *tenant_id, const char *route_key,
                         ratelimit_rule_t rule);
void ratelimit_policy_free(ratelimit_policy_t *p);
ratelimit_rule_t ratelimit_policy_tenant_rule(const ratelimit_policy_t *p, const char *tenant_id);
bool ratelimit_policy_route_rule(const ratelimit_policy_t *p, const char *tenant_id,
                                 const char *route_key, ratelimit_rule_t *rule);

#endif
