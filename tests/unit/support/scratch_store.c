/* scratch_store: see scratch_store.h. */
#include "scratch_store.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

store_t *scratch_store_open(char *dir, size_t dir_cap, char *path, size_t path_cap,
                            const char *relpath)
{
    if (snprintf(dir, dir_cap, "/tmp/taxd-test-XXXXXX") >= (int)dir_cap || mkdtemp(dir) == NULL) {
        fprintf(stderr, "scratch_store: cannot make a directory\n");
        return NULL;
    }
    if (snprintf(path, path_cap, "%s/%s", dir, relpath) >= (int)path_cap) {
        fprintf(stderr, "scratch_store: path too long\n");
        return NULL;
    }
    char *err = NULL;
    store_t *store = store_open(path, &err);
    if (store == NULL)
        fprintf(stderr, "store_open: %s\n", err != NULL ? err : "?");
    free(err);
    return store;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void scratch_store_close(store_t *store, const char *dir)
{
    store_close(store);
    if (dir[0] != '\0')
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

scratch_fixture_t *scratch_fixture_open(void)
{
    scratch_fixture_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return NULL;
    fx->store = SCRATCH_STORE_OPEN(fx, "taxd.db");
    if (fx->store != NULL && (fx->conn = store_acquire(fx->store)) != NULL &&
        sqlite3_open_v2(fx->path, &fx->raw, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(fx->raw, 5000);
        return fx;
    }
    fprintf(stderr, "scratch_fixture: cannot open the store or its raw handle\n");
    scratch_fixture_close(fx);
    return NULL;
}

void scratch_fixture_close(scratch_fixture_t *fx)
{
    if (fx == NULL)
        return;
    sqlite3_close(fx->raw);
    if (fx->conn != NULL)
        store_release(fx->store, fx->conn);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
}
