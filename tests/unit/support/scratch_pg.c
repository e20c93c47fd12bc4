/* scratch_pg: see scratch_pg.h. */
#include "scratch_pg.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/backend.h"

const char *scratch_pg_url(void)
{
    const char *url = getenv("TAXD_TEST_PG");
    return url != NULL && url[0] != '\0' ? url : NULL;
}

char *scratch_pg_url_with_db(const char *name)
{
    const char *url = scratch_pg_url();
    const char *host = strstr(url, "://") + 3;
    const char *slash = strchr(host, '/');
    const char *query = strchr(host, '?');
    size_t head = slash != NULL   ? (size_t)(slash - url)
                  : query != NULL ? (size_t)(query - url)
                                  : strlen(url);
    char *out = malloc(strlen(url) + strlen(name) + 2);
    sprintf(out, "%.*s/%s%s", (int)head, url, name, query != NULL ? query : "");
    return out;
}

void scratch_pg_admin(const char *sql)
{
    store_conn_t *conn = calloc(1, sizeof *conn);
    assert_non_null(conn);
    conn->be = &store_pg_backend;
    char *err = NULL;
    if (!store_pg_backend.connect(conn, scratch_pg_url(), &err))
        fail_msg("connect: %s", err != NULL ? err : "?");
    const store_sql_t q = {"admin", sql, NULL};
    int rc = 0;
    db_stmt_t *stmt = store_pg_backend.prepare(conn, &q, &rc);
    assert_non_null(stmt);
    assert_int_equal(store_pg_backend.step(stmt), DB_DONE);
    store_pg_backend.finalize(stmt);
    store_pg_backend.disconnect(conn);
    free(conn);
}

store_t *scratch_pg_store_open(const char *prefix, char *db, size_t cap)
{
    snprintf(db, cap, "%s_%d", prefix, (int)getpid());
    char sql[160];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    scratch_pg_admin(sql);
    char *url = scratch_pg_url_with_db(db);
    char *err = NULL;
    store_t *store = store_open(url, &err);
    free(url);
    if (store == NULL)
        fail_msg("store_open: %s", err != NULL ? err : "?");
    return store;
}

void scratch_pg_store_drop(store_t *store, const char *db)
{
    store_close(store);
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", db);
    scratch_pg_admin(sql);
}
