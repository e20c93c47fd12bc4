/* store/migrations: the schema, one script per version, applied in order.
 *
 * Design. PRAGMA user_version records how many scripts a database has run.
 * store_open may run in several processes at once against a new file (a
 * server and a worker started together), so the version is read inside the
 * same BEGIN IMMEDIATE transaction that applies the scripts: the first opener
 * takes the write lock and migrates, the others wait on the busy handler and
 * then find nothing left to do. DDL is transactional in SQLite, so a failed
 * script leaves the database at its previous version.
 *
 * Schema conventions (see GUIDE.md section 7):
 * - every table is STRICT, so a value of the wrong type is an error instead of
 *   being silently converted (decimals live in TEXT columns);
 * - WITHOUT ROWID where rows are found by their primary key and are small, so
 *   a lookup walks one b-tree instead of an index and then the table;
 * - tenants keeps its rowid because "creation order" is insertion order, which
 *   created_at cannot give when two tenants share a millisecond or the test
 *   clock moves backwards;
 * - times are INTEGER milliseconds since the epoch; NULL means "not yet" where
 *   the C struct uses 0.
 *
 * Trade-off: sqlite3_exec runs each script without caching statements. That
 * is fine: migrations run once per store_open, never on a request path. */
#include "store/migrations.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const MIGRATIONS[] = {
    /* v1: tenants, their credentials, operator rate limits, the settings
     * version, and filers (each tenant has exactly one default filer). */
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"

    "CREATE TABLE credentials ("
    "  client_id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),"
    "  scopes INTEGER NOT NULL CHECK (scopes >= 0),"
    "  created_at INTEGER NOT NULL,"
    "  revoked_at INTEGER,"
    "  last_used_at INTEGER"
    ") STRICT, WITHOUT ROWID;"
    /* Serves the foreign key check and per-tenant listings to come. */
    "CREATE INDEX credentials_tenant ON credentials (tenant_id);"
    /* Revocations are few; a partial index makes the revoked walk read only them. */
    "CREATE INDEX credentials_revoked ON credentials (client_id) WHERE revoked_at IS NOT NULL;"

    /* tenant_id '' applies a route's rule to every tenant; route '' is the
     * tenant's default bucket; both empty would mean nothing. Tenant existence
     * is checked in C because '' cannot reference tenants. */
    "CREATE TABLE rate_limits ("
    "  tenant_id TEXT NOT NULL,"
    "  route TEXT NOT NULL,"
    "  rate INTEGER NOT NULL CHECK (rate > 0),"
    "  burst INTEGER NOT NULL CHECK (burst > 0),"
    "  PRIMARY KEY (tenant_id, route),"
    "  CHECK (tenant_id <> '' OR route <> '')"
    ") STRICT, WITHOUT ROWID;"

    "CREATE TABLE settings ("
    "  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    "  version INTEGER NOT NULL"
    ") STRICT;"
    "INSERT INTO settings (singleton, version) VALUES (1, 0);"

    /* UNIQUE (tenant_id, id) also serves the foreign key and the ordered list. */
    "CREATE TABLE filers ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  id TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  is_default INTEGER NOT NULL CHECK (is_default IN (0, 1)),"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, id)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE UNIQUE INDEX filers_one_default ON filers (tenant_id) WHERE is_default = 1;",
};

#define MIGRATION_COUNT ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))

int store_migrations_latest(void)
{
    return MIGRATION_COUNT;
}

static void migrations_set_err(char **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void migrations_set_err(char **err, const char *fmt, ...)
{
    if (err == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0)
        *err = NULL;
    va_end(ap);
}

/* Runs sql; on failure sets *err naming the step. */
static bool migrations_exec(sqlite3 *db, const char *sql, const char *step, char **err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return true;
    migrations_set_err(err, "schema migration (%s): %s", step,
                       msg != NULL ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return false;
}

static bool migrations_read_version(sqlite3 *db, int *version, char **err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int(stmt, 0);
    else
        migrations_set_err(err, "schema migration (read user_version): %s", sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW;
}

/* Everything between BEGIN IMMEDIATE and COMMIT. */
static bool migrations_apply_locked(sqlite3 *db, char **err)
{
    int current = 0;
    if (!migrations_read_version(db, &current, err))
        return false;
    if (current > MIGRATION_COUNT) {
        migrations_set_err(err, "database schema version %d is newer than this taxd (%d)",
                           current, MIGRATION_COUNT);
        return false;
    }
    if (current == MIGRATION_COUNT)
        return true;
    for (int v = current; v < MIGRATION_COUNT; v++) {
        char step[32];
        snprintf(step, sizeof step, "version %d", v + 1);
        if (!migrations_exec(db, MIGRATIONS[v], step, err))
            return false;
    }
    /* PRAGMA takes no bound parameters; the value is our own integer. */
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", MIGRATION_COUNT);
    return migrations_exec(db, sql, "set user_version", err);
}

bool store_migrations_apply(sqlite3 *db, char **err)
{
    if (!migrations_exec(db, "BEGIN IMMEDIATE", "begin", err))
        return false;
    if (migrations_apply_locked(db, err) && migrations_exec(db, "COMMIT", "commit", err))
        return true;
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); /* the first error is the one reported */
    return false;
}
