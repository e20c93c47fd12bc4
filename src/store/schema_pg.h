/* store/schema_pg: the PostgreSQL schema, as one script that creates the
 * current schema (the same tables, columns, constraints and indexes as a
 * SQLite database after every script of store/migrations.c), and the
 * migration that applies it once however many nodes start together.
 * Internal to src/store/: only the PostgreSQL backend calls it. */
#ifndef TAXD_STORE_SCHEMA_PG_H
#define TAXD_STORE_SCHEMA_PG_H

#include <stdbool.h>
#include <stdint.h>

/* libpq's own declaration (libpq-fe.h), repeated so that this header does
 * not drag libpq's include path into every file that includes it. */
typedef struct pg_conn PGconn;

/* The key of the advisory lock (transaction-scoped) every taxd migration of a
 * PostgreSQL database takes ("taxd" and 1 in its bytes): two nodes
 * starting together queue on it, and the second finds the work done. */
#define STORE_PG_MIGRATE_LOCK_KEY INT64_C(0x7461786400000001)

/* The schema version the script creates: always store_migrations_latest(),
 * so a database moved from SQLite and one made on PostgreSQL by the same
 * build carry the same number. */
int store_pg_schema_version(void);

/* The script (static text, never freed): plain SQL statements separated by
 * semicolons, no transaction control of its own. It refuses to run (raises
 * "taxd schema already applied") on a database that has a schema_version
 * table, and its last statement records the version in schema_version, so
 * a script that runs to the end inside one transaction is the proof that
 * the whole schema exists. */
const char *store_pg_schema_script(void);

/* Brings the database `pg` is connected to up to this build's schema. The
 * contract, in this order, all in one READ COMMITTED transaction:
 *   1. SELECT pg_advisory_xact_lock(STORE_PG_MIGRATE_LOCK_KEY): concurrent
 *      migrators wait here; the lock ends with the transaction, so an error
 *      or a lost connection can never leave it held;
 *   2. read schema_version (the table may not exist: version 0);
 *   3. version newer than this build: refuse with "database schema version
 *      N is newer than this taxd (M)";
 *      version 0: run store_pg_schema_script();
 *      version 14 (the first a release shipped) or later but older than
 *      this build: run each upgrade from it to this build's version, in
 *      order, in this transaction (rows are kept: see schema_pg.c);
 *      version older than 14 but not 0: refuse;
 *   4. COMMIT (which releases the lock).
 * pg must be connected and outside any transaction; it is left outside one.
 * Returns true when the schema is current. On failure returns false with
 * *err a malloc'd message (the caller frees) naming the step and carrying
 * the server's message; it never contains the connection string or its
 * password. */
bool store_pg_migrate(PGconn *pg, char **err);

#endif
