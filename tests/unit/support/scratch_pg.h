/* scratch_pg: a PostgreSQL database of a test's own, in the cluster whose
 * admin URL is TAXD_TEST_PG (tests/pg/cluster.sh env). Without it the
 * PostgreSQL cases of a test skip: scratch_pg_url() is NULL. */
#ifndef TAXD_TEST_SCRATCH_PG_H
#define TAXD_TEST_SCRATCH_PG_H

#include <stddef.h>

#include "store/store.h"

/* TAXD_TEST_PG, or NULL when unset or empty. */
const char *scratch_pg_url(void);
/* TAXD_TEST_PG with its database replaced by name (malloc'd; the caller frees). */
char *scratch_pg_url_with_db(const char *name);
/* Runs one statement without rows (CREATE / DROP DATABASE) as TAXD_TEST_PG's
 * role, on a bare backend connection; fails the test when it fails. */
void scratch_pg_admin(const char *sql);
/* Creates the database "<prefix>_<pid>" (its name into db[cap]) and opens it
 * as a store (the schema migrated); fails the test when it cannot. */
store_t *scratch_pg_store_open(const char *prefix, char *db, size_t cap);
/* Closes the store and drops its database. */
void scratch_pg_store_drop(store_t *store, const char *db);

#endif
