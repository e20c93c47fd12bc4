/* scratch_store: a store on a fresh database in a directory of its own, for
 * the unit tests that need a real SQLite file. The directory and everything
 * in it are removed by scratch_store_close. */
#ifndef TAXD_TESTS_SCRATCH_STORE_H
#define TAXD_TESTS_SCRATCH_STORE_H

#include <sqlite3.h>
#include <stddef.h>

#include "store/store.h"

/* Makes a new directory (/tmp/taxd-test-XXXXXX) into dir and opens a store
 * on dir/relpath (subdirectories are created), its full name into path.
 * Returns the store, or NULL after printing why on stderr. */
store_t *scratch_store_open(char *dir, size_t dir_cap, char *path, size_t path_cap,
                            const char *relpath);

/* Closes the store (every connection released first; NULL is allowed) and
 * removes dir with everything in it. */
void scratch_store_close(store_t *store, const char *dir);

/* The common call: a fixture with char arrays dir and path. */
#define SCRATCH_STORE_OPEN(fx, relpath)                                                       \
    scratch_store_open((fx)->dir, sizeof (fx)->dir, (fx)->path, sizeof (fx)->path, (relpath))

/* The usual fixture of a store test: a store on dir/taxd.db, one of its
 * connections, and a raw SQLite handle on the same file standing for
 * another process (it seeds rows and reads them back; busy timeout 5 s). */
typedef struct scratch_fixture {
    char dir[64], path[128];
    store_t *store;
    store_conn_t *conn;
    sqlite3 *raw;
} scratch_fixture_t;

/* A calloc'd fixture, or NULL after printing why (nothing is left behind). */
scratch_fixture_t *scratch_fixture_open(void);

/* Closes the raw handle, releases the connection, closes the store, removes
 * the directory and frees fx. NULL is a no-op. */
void scratch_fixture_close(scratch_fixture_t *fx);

#endif
