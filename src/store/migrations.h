/* store/migrations: the database schema as an ordered list of SQL scripts.
 * Internal to src/store/: the rest of taxd never sees SQLite. Script N (from 1)
 * takes a database from user_version N-1 to N; scripts are never edited once
 * released, only appended. */
#ifndef TAXD_STORE_MIGRATIONS_H
#define TAXD_STORE_MIGRATIONS_H

#include <sqlite3.h>
#include <stdbool.h>

/* The schema version this build writes (the number of scripts). */
int store_migrations_latest(void);

/* Script `version` (1 to latest), or NULL: for tests that build a database
 * as an older release left it. */
const char *store_migrations_script(int version);

/* Applies the scripts newer than the database's user_version, all inside one
 * BEGIN IMMEDIATE transaction that also reads user_version, so concurrent
 * openers serialize and each script runs once. db must be outside any
 * transaction and should have a busy handler installed. Returns false with
 * *err set to a malloc'd message (the caller frees) on failure, including a
 * database newer than this build. */
bool store_migrations_apply(sqlite3 *db, bool fail_on_purpose, char **err);

#endif
