/* store/pg_session: a bare libpq session to a taxd URL, for the store's
 * tools that speak libpq themselves (store/copy.c's COPY), opened with the
 * same defaults and session settings as the pool's connections (pg.c).
 * Internal to src/store/. */
#ifndef TAXD_STORE_PG_SESSION_H
#define TAXD_STORE_PG_SESSION_H

#include "store/schema_pg.h" /* PGconn */

/* Connects to url. Returns the session (the caller PQfinish()es it), or
 * NULL with *err a malloc'd message naming host, port and database and the
 * server's reason, never the URL's password. */
PGconn *store_pg_session_open(const char *url, char **err);

/* "host:port/dbname" of url (never its password) into out. */
void store_pg_describe(const char *url, char *out, size_t cap);

/* Removes url's password, as written, from msg (in place). */
void store_pg_scrub(char *msg, const char *url);

#endif
