/* store/keyprints.c: see keyprints.h. The insert and the read run in one
 * write transaction, so two nodes starting together with different keys
 * cannot both record theirs: the second reads the first's and is refused. */
#include "store/keyprints.h"

#include <string.h>

#include "store/internal.h"

static const store_sql_t Q_RECORD = {"keyprint_record",
    "INSERT INTO key_fingerprints (name, fingerprint, created_at) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (name) DO NOTHING", NULL};
static const store_sql_t Q_READ = {"keyprint_read",
    "SELECT fingerprint FROM key_fingerprints WHERE name = ?1", NULL};

typedef struct check_args {
    const char *name;
    const char *fingerprint;
    int64_t now;
    bool *same;
} check_args_t;

static store_status_t read_print(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    char *out = record;
    return column_copy(stmt, 0, out, STORE_KEYPRINT_MAX) ? STORE_OK : store_bad_row(q);
}

static store_status_t check_tx(store_conn_t *conn, const void *arg)
{
    const check_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_RECORD, a->name, &stmt);
    if (st != STORE_OK)
        return st;
    st = run_bound(conn, &Q_RECORD, stmt,
                   bind_text(stmt, 2, a->fingerprint) && bind_int(stmt, 3, a->now));
    if (st != STORE_OK)
        return st;
    char recorded[STORE_KEYPRINT_MAX];
    if ((st = conn_prepare_key(conn, &Q_READ, a->name, &stmt)) != STORE_OK)
        return st;
    if ((st = conn_read_row(conn, &Q_READ, stmt, read_print, recorded)) != STORE_OK)
        return st;
    *a->same = strcmp(recorded, a->fingerprint) == 0;
    return STORE_OK;
}

store_status_t store_keyprint_check(store_conn_t *conn, const char *name, const char *fingerprint,
                                    int64_t now, bool *same)
{
    *same = false;
    if (!text_fits(fingerprint, STORE_KEYPRINT_MAX))
        return store_bad_argument("keyprint_check");
    check_args_t a = {name, fingerprint, now, same};
    return conn_write(conn, check_tx, &a);
}
