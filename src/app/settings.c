/* settings: snapshot of operator configuration. See settings.h.
 *
 * The snapshot is replaced whole under a write lock held only for the pointer
 * swap; readers hold the read lock for one lookup. Revoked client ids and
 * deleted tenant ids are sorted arrays searched with bsearch: the lists are
 * short and read on every authenticated request. */
#include "app/settings.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct id_list {
    char **ids; /* sorted */
    size_t count;
} id_list_t;

typedef struct snapshot {
    int64_t version;
    id_list_t revoked;         /* client ids */
    id_list_t deleted_tenants; /* tenant ids */
    ratelimit_policy_t *policy;
} snapshot_t;

static void id_list_free(id_list_t *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->ids[i]);
    free(l->ids);
}

/* An each-callback of the store: appends id; 1 (stop) without memory. */
static int id_list_add(const char *id, void *ctx)
{
    id_list_t *l = ctx;
    char **grown = realloc(l->ids, (l->count + 1) * sizeof *grown);
    if (grown == NULL)
        return 1;
    l->ids = grown;
    l->ids[l->count] = strdup(id);
    if (l->ids[l->count] == NULL)
        return 1;
    l->count++;
    return 0;
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void id_list_sort(id_list_t *l)
{
    if (l->count > 1)
        qsort(l->ids, l->count, sizeof *l->ids, compare_ids);
}

static bool id_list_has(const id_list_t *l, const char *id)
{
    return l->count > 0 && bsearch(&id, l->ids, l->count, sizeof *l->ids, compare_ids) != NULL;
}

#define ROUTE_DEFAULTS_MAX 8

typedef struct route_default {
    char route[STORE_ROUTE_MAX];
    ratelimit_rule_t rule;
} route_default_t;

struct settings {
    pthread_rwlock_t lock;
    snapshot_t *current;
    ratelimit_rule_t global_default;
    route_default_t route_defaults[ROUTE_DEFAULTS_MAX]; /* set before the server starts */
    size_t route_default_count;
    bool loaded;
};

static void snapshot_free(snapshot_t *s)
{
    if (s == NULL)
        return;
    id_list_free(&s->revoked);
    id_list_free(&s->deleted_tenants);
    ratelimit_policy_free(s->policy);
    free(s);
}

/* A snapshot before the operator's rules: the global default and the
 * built-in endpoint defaults, which the operator's rules loaded after them
 * replace (same key) or outrank (a tenant's own rule). */
static snapshot_t *snapshot_empty(const settings_t *st)
{
    snapshot_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->policy = ratelimit_policy_new(st->global_default);
    for (size_t i = 0; s->policy != NULL && i < st->route_default_count; i++) {
        const route_default_t *d = &st->route_defaults[i];
        if (ratelimit_policy_add(s->policy, NULL, d->route, d->rule) != 0) {
            ratelimit_policy_free(s->policy);
            s->policy = NULL;
        }
    }
    if (s->policy == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

settings_t *settings_new(ratelimit_rule_t global_default)
{
    settings_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    st->global_default = global_default;
    st->current = snapshot_empty(st);
    if (st->current == NULL || pthread_rwlock_init(&st->lock, NULL) != 0) {
        snapshot_free(st->current);
        free(st);
        return NULL;
    }
    return st;
}

void settings_free(settings_t *settings)
{
    if (settings == NULL)
        return;
    snapshot_free(settings->current);
    pthread_rwlock_destroy(&settings->lock);
    free(settings);
}

int settings_set_route_default(settings_t *settings, const char *route_key,
                               ratelimit_rule_t rule)
{
    if (settings->route_default_count == ROUTE_DEFAULTS_MAX || route_key == NULL ||
        route_key[0] == '\0' || strlen(route_key) >= STORE_ROUTE_MAX)
        return -1;
    route_default_t *d = &settings->route_defaults[settings->route_default_count++];
    snprintf(d->route, sizeof d->route, "%s", route_key);
    d->rule = rule;
    snapshot_t *empty = snapshot_empty(settings);
    if (empty == NULL) {
        settings->route_default_count--;
        return -1;
    }
    /* Called before the server runs; the operator's rules come back with
     * the next refresh, which rebuilds the snapshot (loaded = false). */
    pthread_rwlock_wrlock(&settings->lock);
    snapshot_t *old = settings->current;
    settings->current = empty;
    settings->loaded = false;
    pthread_rwlock_unlock(&settings->lock);
    snapshot_free(old);
    return 0;
}

static int collect_limit(const store_rate_limit_t *limit, void *ctx)
{
    snapshot_t *s = ctx;
    ratelimit_rule_t rule = {limit->rate, limit->burst};
    return ratelimit_policy_add(s->policy, limit->tenant_id, limit->route, rule) == 0 ? 0 : 1;
}

static store_status_t snapshot_load(settings_t *st, store_conn_t *conn, int64_t version,
                                    snapshot_t **out)
{
    snapshot_t *s = snapshot_empty(st);
    if (s == NULL)
        return STORE_ERROR;
    s->version = version;
    store_status_t rc = store_revoked_each(conn, id_list_add, &s->revoked);
    if (rc == STORE_OK)
        rc = store_deleted_tenant_each(conn, id_list_add, &s->deleted_tenants);
    if (rc == STORE_OK)
        rc = store_rate_limit_each(conn, collect_limit, s);
    if (rc != STORE_OK) {
        snapshot_free(s);
        return rc;
    }
    id_list_sort(&s->revoked);
    id_list_sort(&s->deleted_tenants);
    *out = s;
    return STORE_OK;
}

store_status_t settings_refresh(settings_t *settings, store_conn_t *conn)
{
    int64_t version = 0;
    store_status_t rc = store_settings_version(conn, &version);
    if (rc != STORE_OK)
        return rc;
    if (settings->loaded && version == settings->current->version)
        return STORE_OK;

    snapshot_t *fresh = NULL;
    rc = snapshot_load(settings, conn, version, &fresh);
    if (rc != STORE_OK)
        return rc;
    pthread_rwlock_wrlock(&settings->lock);
    snapshot_t *old = settings->current;
    settings->current = fresh;
    settings->loaded = true;
    pthread_rwlock_unlock(&settings->lock);
    snapshot_free(old);
    return STORE_OK;
}

bool settings_is_revoked(settings_t *settings, const char *client_id)
{
    pthread_rwlock_rdlock(&settings->lock);
    bool found = id_list_has(&settings->current->revoked, client_id);
    pthread_rwlock_unlock(&settings->lock);
    return found;
}

bool settings_is_tenant_deleted(settings_t *settings, const char *tenant_id)
{
    pthread_rwlock_rdlock(&settings->lock);
    bool found = id_list_has(&settings->current->deleted_tenants, tenant_id);
    pthread_rwlock_unlock(&settings->lock);
    return found;
}

ratelimit_rule_t settings_tenant_rule(settings_t *settings, const char *tenant_id)
{
    pthread_rwlock_rdlock(&settings->lock);
    ratelimit_rule_t rule = ratelimit_policy_tenant_rule(settings->current->policy, tenant_id);
    pthread_rwlock_unlock(&settings->lock);
    return rule;
}

bool settings_route_rule(settings_t *settings, const char *tenant_id, const char *route_key,
                         ratelimit_rule_t *rule)
{
    pthread_rwlock_rdlock(&settings->lock);
    bool found = ratelimit_policy_route_rule(settings->current->policy, tenant_id, route_key, rule);
    pthread_rwlock_unlock(&settings->lock);
    return found;
}
