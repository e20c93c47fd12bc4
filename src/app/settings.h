/* settings: what the operator configures in the database and every running
 * process must follow within a second — revoked credentials, deleted
 * tenants and rate-limit rules. A background refresher polls one counter (store_settings_version) a
 * few times a second and rebuilds an immutable snapshot only when it moved;
 * request threads read the current snapshot under a read lock, so a token is
 * verified without a database round trip yet revocation still bites. Some
 * endpoints have a built-in rule the operator's rules replace. */
#ifndef TAXD_APP_SETTINGS_H
#define TAXD_APP_SETTINGS_H

#include <stdbool.h>

#include "http/ratelimit.h"
#include "store/store.h"

typedef struct settings settings_t;

/* NULL on allocation failure. The empty snapshot revokes nothing and applies
 * global_default to every tenant. */
settings_t *settings_new(ratelimit_rule_t global_default);
void settings_free(settings_t *settings);

/* A built-in endpoint rule for route_key ("METHOD /template"), for every
 * tenant, each under its own bucket: it applies where the operator set no
 * rule for the route, and an operator's rule for the route (for all tenants
 * or for one) replaces it. Call before the server starts (at most 8).
 * Returns 0, or -1 (too many, a bad key, or no memory). */
int settings_set_route_default(settings_t *settings, const char *route_key,
                               ratelimit_rule_t rule);

/* Rebuilds the snapshot when the settings version changed (or on the first
 * call). Returns the store status; the old snapshot stays on failure. */
store_status_t settings_refresh(settings_t *settings, store_conn_t *conn);

bool settings_is_revoked(settings_t *settings, const char *client_id);
bool settings_is_tenant_deleted(settings_t *settings, const char *tenant_id);
ratelimit_rule_t settings_tenant_rule(settings_t *settings, const char *tenant_id);
bool settings_route_rule(settings_t *settings, const char *tenant_id, const char *route_key,
                         ratelimit_rule_t *rule);

#endif
