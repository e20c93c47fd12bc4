/* recalc_lazy: the lazy path over every dirty account of a tenant, one
 * inventory_refresh per account, as the first reads after an import would
 * run it. It uses only interfaces that exist at the branch point of the
 * fast recalculation (2f8b27f), so bench/recalc_compare.sh links it with the
 * old objects and with the new ones alike.
 *
 *   recalc_lazy --db PATH --tenant TID
 *
 * Prints {"accounts":N,"seconds":S,"failures":F}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inventory/recalc.h"
#include "store/inventory.h"
#include "store/store.h"

typedef struct uuids {
    char (*v)[STORE_UUID_LEN];
    size_t n, cap;
} uuids_t;

static int take(const char *uuid, void *ctx)
{
    uuids_t *u = ctx;
    if (u->n == u->cap) {
        size_t cap = u->cap * 2 + 1024;
        void *grown = realloc(u->v, cap * sizeof *u->v);
        if (grown == NULL)
            return 1;
        u->v = grown;
        u->cap = cap;
    }
    snprintf(u->v[u->n++], STORE_UUID_LEN, "%s", uuid);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *db = NULL, *tenant = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--db") == 0)
            db = argv[i + 1];
        else if (strcmp(argv[i], "--tenant") == 0)
            tenant = argv[i + 1];
    }
    if (db == NULL || tenant == NULL) {
        fprintf(stderr, "usage: recalc_lazy --db PATH --tenant TID\n");
        return 2;
    }
    char *err = NULL;
    store_t *store = store_open(db, &err);
    if (store == NULL) {
        fprintf(stderr, "recalc_lazy: %s\n", err ? err : "cannot open");
        return 1;
    }
    store_conn_t *conn = store_acquire(store);
    uuids_t u = {0};
    double t0 = now_s();
    size_t failures = 0;
    if (conn == NULL || store_inv_dirty_accounts(conn, tenant, take, &u) != STORE_OK)
        failures++;
    for (size_t i = 0; conn != NULL && i < u.n; i++) {
        store_inv_account_t account = {.dirty = true};
        snprintf(account.uuid, sizeof account.uuid, "%s", u.v[i]);
        recalc_result_t r = inventory_refresh(conn, &account);
        if (r.store != STORE_OK)
            failures++;
    }
    printf("{\"accounts\":%zu,\"seconds\":%.3f,\"failures\":%zu}\n", u.n, now_s() - t0,
           failures);
    free(u.v);
    if (conn != NULL)
        store_release(store, conn);
    store_close(store);
    return failures ? 1 : 0;
}
