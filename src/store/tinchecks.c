/* store/tinchecks: see tinchecks.h.
 *
 * The queue is the table itself: an unfinished check has validated_at NULL
 * (the partial index tin_checks_pending keeps the claim's search short). A
 * claim is one UPDATE ... RETURNING that picks the oldest unfinished check
 * whose lease is absent or over, so two workers never hold the same check
 * and a dead worker's check comes back once its lease ends. Every later
 * write of the worker names its claim in the WHERE clause (fencing): a
 * worker that lost the check, or whose check was superseded, changes no row
 * and the caller rolls its transaction back, event included. */
#include "store/tinchecks.h"

#include <string.h>

#include "store/internal.h"
#include "store/listen.h"

static const char *const KIND_NAMES[] = {"rttm", "account_owner", "tax_documentation"};

#define CHECK_COLUMNS                                                                        \
    "id, tenant_id, kind, coalesce(subject_id, ''), coalesce(owner_uuid, ''), name,"         \
    " tin_sealed, tin_type, status, created_at, coalesce(validated_at, 0)"

static const store_sql_t Q_CHECK_ENQUEUE = {
    "tin_check_enqueue",
    "INSERT INTO tin_checks (id, tenant_id, kind, subject_id, owner_uuid, name, tin_sealed,"
    " tin_type, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'PENDING', ?9)", NULL};
static const store_sql_t Q_CHECK_SUPERSEDE = {
    "tin_check_supersede",
    "UPDATE tin_checks SET status = '" STORE_TIN_CHECK_STALE "', validated_at = ?4,"
    " claimed_by = NULL, lease_until = NULL"
    " WHERE tenant_id = ?1 AND kind = ?2 AND subject_id = ?3 AND validated_at IS NULL", NULL};
static const store_sql_t Q_CHECK_CLAIM = {
    "tin_check_claim",
    "UPDATE tin_checks SET claimed_by = ?1, lease_until = ?2 WHERE id = ("
    " SELECT id FROM tin_checks WHERE validated_at IS NULL"
    " AND (lease_until IS NULL OR lease_until <= ?3) ORDER BY created_at LIMIT 1)"
    " RETURNING " CHECK_COLUMNS,
    /* PostgreSQL (a claim runs at READ COMMITTED, conn_write_claim): the
     * subquery is evaluated once, so without a lock two claimers would pick
     * the same id and the second, after waiting for the first's row lock,
     * would take it again. SKIP LOCKED hands each claimer another row, and
     * the outer WHERE re-checks the lease on the row as it now is. */
    "UPDATE tin_checks SET claimed_by = $1, lease_until = $2 WHERE id = ("
    " SELECT id FROM tin_checks WHERE validated_at IS NULL"
    " AND (lease_until IS NULL OR lease_until <= $3) ORDER BY created_at LIMIT 1"
    " FOR UPDATE SKIP LOCKED)"
    " AND validated_at IS NULL AND (lease_until IS NULL OR lease_until <= $3)"
    " RETURNING " CHECK_COLUMNS};
static const store_sql_t Q_CHECK_ANY = {
    "tin_check_any", "SELECT 1 FROM tin_checks WHERE validated_at IS NULL"
                     " AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1", NULL};
static const store_sql_t Q_CHECK_FINISH = {
    "tin_check_finish",
    "UPDATE tin_checks SET status = ?3, validated_at = ?4, claimed_by = NULL,"
    " lease_until = NULL WHERE id = ?1 AND claimed_by = ?2 AND validated_at IS NULL", NULL};
static const store_sql_t Q_CHECK_OWNER_ID = {
    "tin_check_owner_id", "SELECT id FROM account_owners WHERE tenant_id = ?1 AND uuid = ?2", NULL};
static const store_sql_t Q_CHECK_GET = {
    "tin_check_get", "SELECT " CHECK_COLUMNS " FROM tin_checks WHERE tenant_id = ?1 AND id = ?2", NULL};

/* ---- queueing --------------------------------------------------------- */

store_status_t store_tin_check_supersede_in_tx(store_conn_t *conn, const char *tenant_id,
                                               store_tin_check_kind_t kind,
                                               const char *subject_id, int64_t now)
{
    if ((unsigned)kind > STORE_TIN_CHECK_TAX_DOCUMENTATION || subject_id == NULL)
        return store_bad_argument("tin_check_supersede");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_SUPERSEDE, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, KIND_NAMES[kind]) && bind_text(stmt, 3, subject_id) &&
                 bind_int(stmt, 4, now);
    return run_bound(conn, &Q_CHECK_SUPERSEDE, stmt, bound);
}

store_status_t store_tin_check_enqueue_in_tx(store_conn_t *conn, const store_tin_check_new_t *c)
{
    if ((unsigned)c->kind > STORE_TIN_CHECK_TAX_DOCUMENTATION ||
        c->tin_sealed_len > STORE_TIN_SEALED_MAX)
        return store_bad_argument("tin_check_enqueue");
    if (c->subject_id != NULL && c->subject_id[0] != '\0') {
        store_status_t st =
            store_tin_check_supersede_in_tx(conn, c->tenant_id, c->kind, c->subject_id, c->now);
        if (st != STORE_OK)
            return st;
    }
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_ENQUEUE, c->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, c->tenant_id) && bind_text(stmt, 3, KIND_NAMES[c->kind]) &&
                 bind_text_or_null(stmt, 4, c->subject_id) &&
                 bind_text_or_null(stmt, 5, c->owner_uuid) && bind_text(stmt, 6, c->name) &&
                 bind_blob(stmt, 7, c->tin_sealed, c->tin_sealed_len) &&
                 bind_text(stmt, 8, c->tin_type) && bind_int(stmt, 9, c->now);
    st = run_bound(conn, &Q_CHECK_ENQUEUE, stmt, bound);
    return st == STORE_OK ? store_notify_in_tx(conn, STORE_CHANNEL_TINCHECKS) : st;
}

/* ---- reading a row ---------------------------------------------------- */

static bool kind_from_text(const char *text, store_tin_check_kind_t *kind)
{
    for (unsigned i = 0; i < sizeof KIND_NAMES / sizeof KIND_NAMES[0]; i++) {
        if (strcmp(text, KIND_NAMES[i]) == 0) {
            *kind = (store_tin_check_kind_t)i;
            return true;
        }
    }
    return false;
}

static store_status_t check_from_row(const store_sql_t *q, db_stmt_t *stmt,
                                     store_tin_check_t *out)
{
    char kind[32];
    const void *sealed = db_column_blob(stmt, 6, NULL);
    size_t sealed_len = (size_t)db_column_bytes(stmt, 6);
    if (sealed == NULL || sealed_len > sizeof out->tin_sealed ||
        !column_copy(stmt, 0, out->id, sizeof out->id) ||
        !column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) ||
        !column_copy(stmt, 2, kind, sizeof kind) || !kind_from_text(kind, &out->kind) ||
        !column_copy(stmt, 3, out->subject_id, sizeof out->subject_id) ||
        !column_copy(stmt, 4, out->owner_uuid, sizeof out->owner_uuid) ||
        !column_copy(stmt, 5, out->name, sizeof out->name) ||
        !column_copy(stmt, 7, out->tin_type, sizeof out->tin_type) ||
        !column_copy(stmt, 8, out->status, sizeof out->status))
        return store_bad_row(q);
    memcpy(out->tin_sealed, sealed, sealed_len);
    out->tin_sealed_len = sealed_len;
    out->created_at = db_column_int(stmt, 9);
    out->validated_at = db_column_int(stmt, 10);
    return STORE_OK;
}

/* Steps a statement that returns at most one check to its end (RETURNING
 * rows must be stepped to DB_DONE, or the write lock stays held). */
static store_status_t one_check(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                                store_tin_check_t *out)
{
    int rc = db_step(stmt);
    store_status_t st;
    if (rc == DB_ROW) {
        st = check_from_row(q, stmt, out);
        rc = db_step(stmt);
        if (st == STORE_OK && rc != DB_DONE)
            st = rc == DB_ROW ? store_bad_row(q) : conn_fail(conn, q, rc);
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, q, rc);
    }
    stmt_done(stmt);
    return st;
}

/* ---- the engine's side ------------------------------------------------ */

typedef struct claim_args {
    const char *claim;
    int64_t lease_now, lease_until;
    store_tin_check_t *out;
} claim_args_t;

static store_status_t claim_tx(store_conn_t *conn, const void *arg)
{
    const claim_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_CLAIM, a->claim, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, a->lease_until) || !bind_int(stmt, 3, a->lease_now))
        return conn_bind_failed(conn, &Q_CHECK_CLAIM, stmt);
    return one_check(conn, &Q_CHECK_CLAIM, stmt, a->out);
}

/* A read first: an idle engine must not take the write lock every poll. */
static store_status_t any_work(store_conn_t *conn, int64_t lease_now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_CHECK_ANY, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, lease_now))
        return conn_bind_failed(conn, &Q_CHECK_ANY, stmt);
    int rc = db_step(stmt);
    st = rc == DB_ROW ? STORE_OK : rc == DB_DONE ? STORE_NOT_FOUND
                                                         : conn_fail(conn, &Q_CHECK_ANY, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_tin_check_claim(store_conn_t *conn, const char *claim, int64_t lease_now,
                                     int64_t lease_until, store_tin_check_t *out)
{
    store_status_t st = any_work(conn, lease_now);
    if (st != STORE_OK)
        return st;
    claim_args_t args = {claim, lease_now, lease_until, out};
    return conn_write_claim(conn, claim_tx, &args);
}

store_status_t store_tin_check_finish_in_tx(store_conn_t *conn, const char *id,
                                            const char *claim, const char *status,
                                            int64_t validated_at)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_FINISH, id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, claim) && bind_text(stmt, 3, status) &&
                 bind_int(stmt, 4, validated_at);
    st = run_bound(conn, &Q_CHECK_FINISH, stmt, bound);
    if (st == STORE_OK && conn_changes(conn) == 0)
        return STORE_NOT_FOUND;
    return st;
}

store_status_t store_tin_check_owner_id_in_tx(store_conn_t *conn, const char *tenant_id,
                                              const char *owner_uuid, char id[STORE_ID_MAX])
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHECK_OWNER_ID, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, owner_uuid))
        return conn_bind_failed(conn, &Q_CHECK_OWNER_ID, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = column_copy(stmt, 0, id, STORE_ID_MAX) ? STORE_OK : store_bad_row(&Q_CHECK_OWNER_ID);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_CHECK_OWNER_ID, rc);
    stmt_done(stmt);
    return st;
}

/* ---- the API's side --------------------------------------------------- */

store_status_t store_tin_check_get(store_conn_t *conn, const char *tenant_id, const char *id,
                                   store_tin_check_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_CHECK_GET, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, id))
        return conn_bind_failed(conn, &Q_CHECK_GET, stmt);
    return one_check(conn, &Q_CHECK_GET, stmt, out);
}
