/* store/reports.c: see reports.h.
 *
 * Design and trade-offs:
 *  - The file lives in the database, in report_chunks rows of up to 256 KiB,
 *    so every process sharing the database can serve it, it is deleted with
 *    its report (ON DELETE CASCADE), and a crash never leaves a file behind
 *    without its row. The price is that the file's bytes go through the WAL
 *    once; at the sizes reports have (tens of MB) that is cheap.
 *  - Fencing is in SQL: each write of a worker checks `claimed_by = claim
 *    AND status = 'processing'` in the statement (or in a check at the start
 *    of its transaction), so the check and the write are atomic.
 *  - The snapshot read is one deferred transaction on a connection of its
 *    own (store_report_read): BEGIN, the counts, the skipped ids and every
 *    row, COMMIT. WAL readers do not block the writer, so the chunks can be
 *    written on another connection while the rows are still being read.
 *  - A report's requested ids live in report_ids, a row written once at the
 *    trigger and never updated, apart from the reports row that every
 *    claim, renewal and completion rewrites (SQLite rewrites a whole row,
 *    overflow pages included). Statements read them with json_each over a
 *    subquery, so the runner never holds them in memory; the status GET
 *    reads them in one column.
 *  - The skipped ids are a bitmap over the requested positions, computed in
 *    the snapshot read (the first position of each id that is no account)
 *    and stored at completion: 1 bit per requested id instead of a copy.
 *  - The trigger's limit of reports pending or processing per tenant is
 *    counted inside the insert's write transaction (reports_active), so
 *    concurrent triggers, in this process or another, cannot both pass it.
 *  - Ids lists are read with json_each, never as a huge IN (...) (GUIDE.md
 *    section 7); the rows come out in index order
 *    (accounts' (tenant_id, id), then the summaries' primary key), so SQLite
 *    sorts nothing and holds nothing whatever the report's size. */
#include "store/reports.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "store/gains.h"
#include "store/internal.h"
#include "store/listen.h"

#define REPORT_COLUMNS_BASE                                                                     \
    "SELECT id, tenant_id, status, format, created_at, expires_at, expired_leases,"            \
    " coalesce(row_count, 0), coalesce(size_bytes, 0), coalesce(error_code, ''),"             \
    " coalesce(error_message, ''), coalesce(test_directive, ''), kind, coalesce(tax_year, 0)"

static const store_sql_t Q_ACTIVE = {
    "report_active", "SELECT count(*) FROM reports WHERE tenant_id = ?1"
                     " AND status IN ('pending', 'processing')", NULL};
static const store_sql_t Q_CREATE = {
    "report_create", "INSERT INTO reports (id, tenant_id, status, format,"
                     " created_at, expires_at, test_directive, kind, tax_year)"
                     " VALUES (?1, ?2, 'pending', ?3, ?4, ?5, nullif(?6, ''), ?7, nullif(?8, CAST(0 AS BIGINT)))", NULL};
static const store_sql_t Q_CREATE_IDS = {
    "report_create_ids", "INSERT INTO report_ids (report_id, requested) VALUES (?1, ?2)", NULL};
static const store_sql_t Q_GET = {
    "report_get", REPORT_COLUMNS_BASE ", EXISTS (SELECT 1 FROM report_ids i"
                  " WHERE i.report_id = reports.id),"
                  " CASE WHEN (?2 & 2) <> 0 THEN metadata END, CASE WHEN (?2 & 2) <> 0 THEN skipped END"
                  " FROM reports WHERE id = ?1", NULL};
static const store_sql_t Q_REQUESTED_ROW = {
    "report_requested_row", "SELECT requested FROM report_ids WHERE report_id = ?1", NULL};
static const store_sql_t Q_EXHAUSTED_CHUNKS = {
    "report_exhausted_chunks",
    "DELETE FROM report_chunks WHERE report_id IN (SELECT id FROM reports"
    " WHERE status = 'processing' AND lease_until <= ?1 AND expired_leases + 1 >= ?2)", NULL};
static const store_sql_t Q_EXHAUSTED = {
    "report_exhausted",
    "UPDATE reports SET status = 'failed', error_code = 'lease_expired',"
    " error_message = 'Processing was interrupted ' || (expired_leases + 1) || ' times"
    " (the worker stopped before finishing); the report was abandoned',"
    " expired_leases = expired_leases + 1, claimed_by = NULL, lease_until = NULL,"
    " finished_at = ?3"
    " WHERE status = 'processing' AND lease_until <= ?1 AND expired_leases + 1 >= ?2", NULL};
/* The same condition as Q_PICK, read without the write lock: an idle
 * worker's poll costs a read, never a write transaction. */
static const store_sql_t Q_ANY_WORK = {
    "report_any_work", "SELECT 1 FROM reports WHERE status = 'pending'"
                       " OR (status = 'processing' AND lease_until <= ?1) LIMIT 1", NULL};
static const store_sql_t Q_PICK = {
    "report_pick", "SELECT id FROM reports WHERE status = 'pending'"
                   " OR (status = 'processing' AND lease_until <= ?1)"
                   " ORDER BY created_at, id LIMIT 1",
    /* PostgreSQL: the claim runs at READ COMMITTED (conn_write_claim); the
     * row is locked until the claim commits, and another claimer skips it
     * and takes the next report instead of waiting and taking this one
     * again. A locked row is re-read as it now is: a report claimed and
     * committed meanwhile no longer matches. */
    "SELECT id FROM reports WHERE status = 'pending'"
    " OR (status = 'processing' AND lease_until <= $1)"
    " ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED"};
/* SET expressions read the row as it was: an expired lease is counted. */
static const store_sql_t Q_TAKE = {
    "report_take", "UPDATE reports SET expired_leases = expired_leases + (status = 'processing'),"
                   " status = 'processing', claimed_by = ?2, lease_until = ?3,"
                   " started_at = coalesce(started_at, ?4) WHERE id = ?1",
    /* PostgreSQL: a boolean adds as ::int */
    "UPDATE reports SET expired_leases = expired_leases + (status = 'processing')::int,"
    " status = 'processing', claimed_by = $2, lease_until = $3,"
    " started_at = coalesce(started_at, $4) WHERE id = $1"};
static const store_sql_t Q_OWNED = {
    "report_owned", "SELECT 1 FROM reports WHERE id = ?1 AND claimed_by = ?2"
                    " AND status = 'processing'", NULL};
static const store_sql_t Q_RENEW = {
    "report_renew", "UPDATE reports SET lease_until = ?3 WHERE id = ?1 AND claimed_by = ?2"
                    " AND status = 'processing'", NULL};
static const store_sql_t Q_RELEASE = {
    "report_release", "UPDATE reports SET status = 'pending', claimed_by = NULL,"
                      " lease_until = NULL WHERE id = ?1 AND claimed_by = ?2"
                      " AND status = 'processing'", NULL};
static const store_sql_t Q_FAIL = {
    "report_fail", "UPDATE reports SET status = 'failed', error_code = ?3, error_message = ?4,"
                   " finished_at = ?5, claimed_by = NULL, lease_until = NULL"
                   " WHERE id = ?1 AND claimed_by = ?2 AND status = 'processing'", NULL};
static const store_sql_t Q_CHUNKS_DELETE = {
    "report_chunks_delete", "DELETE FROM report_chunks WHERE report_id = ?1", NULL};
static const store_sql_t Q_CHUNK_PUT = {
    "report_chunk_put", "INSERT INTO report_chunks (report_id, seq, data) VALUES (?1, ?2, ?3)", NULL};
static const store_sql_t Q_COMPLETE = {
    "report_complete", "UPDATE reports SET status = 'completed', metadata = ?3, row_count = ?4,"
                       " size_bytes = ?5, finished_at = ?6, skipped = ?7, claimed_by = NULL,"
                       " lease_until = NULL WHERE id = ?1 AND claimed_by = ?2"
                       " AND status = 'processing'", NULL};
static const store_sql_t Q_CHUNK_GET = {
    "report_chunk_get", "SELECT data FROM report_chunks WHERE report_id = ?1 AND seq = ?2", NULL};
static const store_sql_t Q_PURGE = {
    "report_purge", "DELETE FROM reports WHERE id IN (SELECT id FROM reports"
                    " WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)", NULL};

#define DIRTY_COLUMNS                                                                          \
    "SELECT uuid, id, cost_basis_method, coalesce(austria_tax_year, 0),"                       \
    " coalesce(dirty_from, 0), inventory_version FROM accounts"                                \
    " WHERE tenant_id = ?1 AND dirty_from IS NOT NULL AND uuid > ?2"
static const store_sql_t Q_DIRTY_ALL = {
    "report_dirty_all", DIRTY_COLUMNS " ORDER BY uuid LIMIT ?3", NULL};
/* A scoped report's requested ids, for json_each: the subquery is constant,
 * evaluated once per statement. */
#define REQUESTED(param) "(SELECT requested FROM report_ids WHERE report_id = " param ")"
/* PostgreSQL's json_each of an array: its elements as text (value), and
 * positions (key) numbered from 0 as SQLite's are. */
#define PG_EACH(param)                                                                          \
    "json_array_elements_text((SELECT requested FROM report_ids WHERE report_id = " param      \
    ")::json) WITH ORDINALITY AS j(value, n)"
static const store_sql_t Q_DIRTY_IDS = {
    "report_dirty_ids", DIRTY_COLUMNS " AND id IN (SELECT value FROM json_each("
                        REQUESTED("?4") ")) ORDER BY uuid LIMIT ?3",
    DIRTY_COLUMNS " AND id IN (SELECT value FROM " PG_EACH("?4") ") ORDER BY uuid LIMIT ?3"};

/* PostgreSQL: one snapshot for the whole read (the counts, the skipped ids
 * and every row agree however many writes commit meanwhile), as SQLite's
 * deferred read transaction on WAL gives. */
static const store_sql_t Q_READ_BEGIN = {"report_read_begin", "BEGIN",
                                         "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"};
static const store_sql_t Q_READ_END = {"report_read_commit", "COMMIT", NULL};
static const store_sql_t Q_READ_ROLLBACK = {"report_read_rollback", "ROLLBACK", NULL};
static const store_sql_t Q_COUNT_ALL = {
    "report_count_all", "SELECT count(*) FROM accounts WHERE tenant_id = ?1", NULL};
static const store_sql_t Q_COUNT_IDS = {
    "report_count_ids", "SELECT count(*) FROM accounts WHERE tenant_id = ?1"
                        " AND id IN (SELECT value FROM json_each(" REQUESTED("?2") "))",
    "SELECT count(*) FROM accounts WHERE tenant_id = $1"
    " AND id IN (SELECT value FROM " PG_EACH("$2") ")"};
static const store_sql_t Q_REQUESTED = {
    "report_requested", "SELECT json_array_length(requested) FROM report_ids"
                        " WHERE report_id = ?1",
    "SELECT json_array_length(requested::json) FROM report_ids WHERE report_id = $1"};
/* The first position of each requested id that is no account. */
static const store_sql_t Q_SKIPPED = {
    "report_skipped", "SELECT min(j.key) FROM json_each(" REQUESTED("?2") ") j WHERE NOT EXISTS"
                      " (SELECT 1 FROM accounts a WHERE a.tenant_id = ?1 AND a.id = j.value)"
                      " GROUP BY j.value ORDER BY 1",
    "SELECT min(j.n) - 1 FROM " PG_EACH("$2") " WHERE NOT EXISTS"
    " (SELECT 1 FROM accounts a WHERE a.tenant_id = $1 AND a.id = j.value)"
    " GROUP BY j.value ORDER BY 1"};
#define ROW_COLUMNS                                                                            \
    "SELECT a.id, s.asset_code, coalesce(x.type, ''), s.total_quantity, s.total_cost,"         \
    " s.average_unit_cost, s.quantity_with_basis FROM accounts a"                              \
    " JOIN inventory_summaries s ON s.account = a.seq"                                         \
    " LEFT JOIN assets x ON x.tenant_id = a.tenant_id AND x.code = s.asset_code"               \
    " WHERE a.tenant_id = ?1 AND s.total_quantity <> '0'"
static const store_sql_t Q_ROWS_ALL = {
    "report_rows_all", ROW_COLUMNS " ORDER BY a.id, s.asset_code", NULL};
static const store_sql_t Q_ROWS_IDS = {
    "report_rows_ids", ROW_COLUMNS " AND a.id IN (SELECT value FROM json_each("
                       REQUESTED("?2") "))"
                                   " ORDER BY a.id, s.asset_code",
    ROW_COLUMNS " AND a.id IN (SELECT value FROM " PG_EACH("?2") ") ORDER BY a.id, s.asset_code"};

/* The gains report's accounts, in caller-id order (the accounts' (tenant_id,
 * id) index); each account's rows are then read by store_gains_each. */
static const store_sql_t Q_GAIN_ACCOUNTS_ALL = {
    "report_gain_accounts_all", "SELECT uuid, id FROM accounts WHERE tenant_id = ?1 ORDER BY id", NULL};
static const store_sql_t Q_GAIN_ACCOUNTS_IDS = {
    "report_gain_accounts_ids", "SELECT uuid, id FROM accounts WHERE tenant_id = ?1"
                                " AND id IN (SELECT value FROM json_each(" REQUESTED("?2") "))"
                                " ORDER BY id",
    "SELECT uuid, id FROM accounts WHERE tenant_id = $1"
    " AND id IN (SELECT value FROM " PG_EACH("$2") ") ORDER BY id"};

/* ---- small helpers ---------------------------------------------------- */

static const char *col(db_stmt_t *stmt, int i)
{
    return db_column_text(stmt, i);
}

/* A malloc'd copy of a nullable TEXT column; false when memory ran out. */
static bool column_dup(db_stmt_t *stmt, int i, char **out)
{
    *out = NULL;
    const char *text = col(stmt, i);
    if (text == NULL)
        return true;
    *out = strdup(text);
    return *out != NULL;
}

/* Runs q bound with (id, claim) plus what bind adds; *changed: rows changed. */
static store_status_t run_claimed(store_conn_t *conn, const store_sql_t *q, const char *id,
                                  const char *claim, int *changed)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, q, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, claim))
        return conn_bind_failed(conn, q, stmt);
    st = conn_run(conn, q, stmt);
    *changed = conn_changes(conn);
    return st;
}

/* STORE_OK while the claim holds, STORE_NOT_FOUND once it was lost. */
static store_status_t check_owned(store_conn_t *conn, const char *id, const char *claim)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_OWNED, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, claim))
        return conn_bind_failed(conn, &Q_OWNED, stmt);
    int rc = db_step(stmt);
    st = rc == DB_ROW ? STORE_OK : rc == DB_DONE ? STORE_NOT_FOUND
                                                         : conn_fail(conn, &Q_OWNED, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t delete_chunks(store_conn_t *conn, const char *id)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHUNKS_DELETE, id, &stmt);
    return st == STORE_OK ? conn_run(conn, &Q_CHUNKS_DELETE, stmt) : st;
}

static store_status_t insert_chunk(store_conn_t *conn, const char *id, int64_t seq,
                                   const void *data, size_t len)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CHUNK_PUT, id, &stmt);
    if (st != STORE_OK)
        return st;
    /* A zero-length blob must still be a BLOB, not NULL. */
    if (!bind_int(stmt, 2, seq) || !bind_blob(stmt, 3, data, len))
        return conn_bind_failed(conn, &Q_CHUNK_PUT, stmt);
    return conn_run(conn, &Q_CHUNK_PUT, stmt);
}

/* ---- reading a report ------------------------------------------------- */

void store_report_clear(store_report_t *report)
{
    free(report->metadata);
    free(report->skipped);
    report->metadata = NULL;
    report->skipped = NULL;
    report->skipped_len = 0;
}

/* A malloc'd copy of a nullable BLOB column; false when memory ran out. */
static bool column_blob_dup(db_stmt_t *stmt, int i, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    const void *data = db_column_blob(stmt, i, NULL);
    size_t n = (size_t)db_column_bytes(stmt, i);
    if (data == NULL || n == 0)
        return true; /* NULL: none */
    *out = malloc(n);
    if (*out == NULL)
        return false;
    memcpy(*out, data, n);
    *len = n;
    return true;
}

static store_status_t decode_report(db_stmt_t *stmt, store_report_t *out)
{
    memset(out, 0, sizeof *out);
    out->created_at = db_column_int(stmt, 4);
    out->expires_at = db_column_int(stmt, 5);
    out->expired_leases = db_column_int(stmt, 6);
    out->row_count = db_column_int(stmt, 7);
    out->size_bytes = db_column_int(stmt, 8);
    bool ok = column_copy(stmt, 0, out->id, sizeof out->id) &&
              column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) &&
              column_copy(stmt, 2, out->status, sizeof out->status) &&
              column_copy(stmt, 3, out->format, sizeof out->format) &&
              column_copy(stmt, 9, out->error_code, sizeof out->error_code) &&
              column_copy(stmt, 10, out->error_message, sizeof out->error_message) &&
              column_copy(stmt, 11, out->test_directive, sizeof out->test_directive) &&
              column_copy(stmt, 12, out->kind, sizeof out->kind);
    if (!ok)
        return store_bad_row(&Q_GET);
    out->tax_year = (int)db_column_int(stmt, 13);
    out->scoped = (int)db_column_int(stmt, 14) != 0;
    if (!column_dup(stmt, 15, &out->metadata) ||
        !column_blob_dup(stmt, 16, &out->skipped, &out->skipped_len)) {
        store_report_clear(out);
        return STORE_ERROR;
    }
    return STORE_OK;
}

/* Steps a statement that selects one report row (Q_GET's columns). */
static store_status_t get_row(store_conn_t *conn, const char *id, unsigned texts,
                              store_report_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_GET, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, (int64_t)texts))
        return conn_bind_failed(conn, &Q_GET, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = decode_report(stmt, out);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_GET, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_report_get(store_conn_t *conn, const char *id, unsigned texts,
                                store_report_t *out)
{
    store_status_t st = conn_enter(conn);
    return st == STORE_OK ? get_row(conn, id, texts, out) : st;
}

typedef struct create_args {
    const store_report_t *report;
    const char *account_ids;
    size_t ids_len;
    unsigned max_active;
    bool *admitted;
} create_args_t;

/* The tenant's reports pending or processing, inside the write transaction. */
static store_status_t count_active(store_conn_t *conn, const char *tenant_id, int64_t *active)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_ACTIVE, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        *active = db_column_int(stmt, 0);
    else
        st = conn_fail(conn, &Q_ACTIVE, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t insert_ids(store_conn_t *conn, const char *id, const char *account_ids,
                                 size_t ids_len)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_CREATE_IDS, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text_len(stmt, 2, account_ids, ids_len))
        return conn_bind_failed(conn, &Q_CREATE_IDS, stmt);
    return conn_run(conn, &Q_CREATE_IDS, stmt);
}

static store_status_t create_body(store_conn_t *conn, const void *arg)
{
    const create_args_t *a = arg;
    const store_report_t *r = a->report;
    int64_t active = 0;
    store_status_t st = count_active(conn, r->tenant_id, &active);
    *a->admitted = st == STORE_OK && active < (int64_t)a->max_active;
    if (st != STORE_OK || !*a->admitted)
        return st;
    db_stmt_t *stmt;
    st = conn_prepare_key(conn, &Q_CREATE, r->id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, r->tenant_id) || !bind_text(stmt, 3, r->format) ||
        !bind_int(stmt, 4, r->created_at) || !bind_int(stmt, 5, r->expires_at) ||
        !bind_text(stmt, 6, r->test_directive) ||
        !bind_text(stmt, 7, r->kind[0] != '\0' ? r->kind : STORE_REPORT_KIND_INVENTORY) ||
        !bind_int(stmt, 8, r->tax_year))
        return conn_bind_failed(conn, &Q_CREATE, stmt);
    st = conn_run(conn, &Q_CREATE, stmt);
    if (st == STORE_OK && a->account_ids != NULL)
        st = insert_ids(conn, r->id, a->account_ids, a->ids_len);
    if (st == STORE_OK) /* every node's report runners look at once */
        st = store_notify_in_tx(conn, STORE_CHANNEL_REPORTS);
    return st;
}

store_status_t store_report_create(store_conn_t *conn, const store_report_t *report,
                                   const char *account_ids, size_t ids_len,
                                   unsigned max_active, bool *admitted)
{
    *admitted = false;
    if (!text_fits(report->id, sizeof report->id) ||
        !text_fits(report->test_directive, sizeof report->test_directive))
        return store_bad_argument("report_create");
    create_args_t a = {report, account_ids, ids_len, max_active, admitted};
    store_status_t st = conn_write(conn, create_body, &a);
    if (st != STORE_OK)
        *admitted = false; /* rolled back */
    return st;
}

store_status_t store_report_requested(store_conn_t *conn, const char *id, char **text,
                                      size_t *len)
{
    *text = NULL;
    *len = 0;
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_REQUESTED_ROW, id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc != DB_ROW) {
        stmt_done(stmt);
        return rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_REQUESTED_ROW, rc);
    }
    size_t n = 0;
    const char *requested = db_column_blob(stmt, 0, &n);
    char *buf = requested != NULL ? malloc(n + 1) : NULL;
    if (buf != NULL) {
        memcpy(buf, requested, n);
        buf[n] = '\0';
    }
    stmt_done(stmt);
    if (buf == NULL)
        return STORE_ERROR;
    *text = buf;
    *len = n;
    return STORE_OK;
}

/* ---- claiming --------------------------------------------------------- */

typedef struct claim_args {
    const store_report_lease_t *lease;
    store_report_t *out;
} claim_args_t;

static store_status_t fail_exhausted(store_conn_t *conn, const store_report_lease_t *lease)
{
    const store_sql_t *qs[] = {&Q_EXHAUSTED_CHUNKS, &Q_EXHAUSTED};
    for (size_t i = 0; i < 2; i++) {
        db_stmt_t *stmt;
        store_status_t st = conn_prepare(conn, qs[i], &stmt);
        if (st != STORE_OK)
            return st;
        if (!bind_int(stmt, 1, lease->now_ms) || !bind_int(stmt, 2, lease->max_leases) ||
            (i == 1 && !bind_int(stmt, 3, lease->service_now_ms)))
            return conn_bind_failed(conn, qs[i], stmt);
        st = conn_run(conn, qs[i], stmt);
        if (st != STORE_OK)
            return st;
    }
    return STORE_OK;
}

static store_status_t pick(store_conn_t *conn, int64_t now_ms, char id[STORE_UUID_LEN])
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_PICK, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, now_ms))
        return conn_bind_failed(conn, &Q_PICK, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = column_copy(stmt, 0, id, STORE_UUID_LEN) ? STORE_OK : store_bad_row(&Q_PICK);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_PICK, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t take(store_conn_t *conn, const store_report_lease_t *lease, const char *id)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAKE, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, lease->claim) ||
        !bind_int(stmt, 3, lease->now_ms + lease->lease_ms) ||
        !bind_int(stmt, 4, lease->service_now_ms))
        return conn_bind_failed(conn, &Q_TAKE, stmt);
    return conn_run(conn, &Q_TAKE, stmt);
}

static store_status_t claim_body(store_conn_t *conn, const void *arg)
{
    const claim_args_t *a = arg;
    char id[STORE_UUID_LEN];
    store_status_t st = fail_exhausted(conn, a->lease);
    if (st == STORE_OK)
        st = pick(conn, a->lease->now_ms, id);
    if (st == STORE_NOT_FOUND)
        return STORE_OK; /* commit the failures; nothing to claim */
    if (st == STORE_OK)
        st = take(conn, a->lease, id);
    if (st == STORE_OK)
        st = get_row(conn, id, 0, a->out);
    return st;
}

static store_status_t any_work(store_conn_t *conn, int64_t now_ms)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_ANY_WORK, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, now_ms))
        return conn_bind_failed(conn, &Q_ANY_WORK, stmt);
    int rc = db_step(stmt);
    st = rc == DB_ROW ? STORE_OK : rc == DB_DONE ? STORE_NOT_FOUND
                                                         : conn_fail(conn, &Q_ANY_WORK, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_report_claim(store_conn_t *conn, const store_report_lease_t *lease,
                                  store_report_t *out)
{
    memset(out, 0, sizeof *out);
    store_status_t st = any_work(conn, lease->now_ms);
    if (st != STORE_OK)
        return st;
    claim_args_t args = {lease, out};
    st = conn_write_claim(conn, claim_body, &args);
    if (st != STORE_OK) {
        store_report_clear(out);
        return st;
    }
    return out->id[0] != '\0' ? STORE_OK : STORE_NOT_FOUND;
}

/* ---- the claimed report's writes -------------------------------------- */

typedef struct fenced_args {
    const char *id, *claim;
    const char *code, *message;
    int64_t at;
    int64_t seq;
    const void *data;
    size_t len;
    const store_report_done_t *done;
} fenced_args_t;

static store_status_t renew_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_RENEW, a->id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, a->claim) || !bind_int(stmt, 3, a->at))
        return conn_bind_failed(conn, &Q_RENEW, stmt);
    st = conn_run(conn, &Q_RENEW, stmt);
    if (st == STORE_OK && conn_changes(conn) != 1)
        return STORE_NOT_FOUND;
    return st;
}

store_status_t store_report_renew(store_conn_t *conn, const char *id, const char *claim,
                                  int64_t lease_until)
{
    fenced_args_t a = {.id = id, .claim = claim, .at = lease_until};
    return conn_write(conn, renew_body, &a);
}

static store_status_t release_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    int changed = 0;
    store_status_t st = run_claimed(conn, &Q_RELEASE, a->id, a->claim, &changed);
    return st == STORE_OK && changed != 1 ? STORE_NOT_FOUND : st;
}

store_status_t store_report_release(store_conn_t *conn, const char *id, const char *claim)
{
    fenced_args_t a = {.id = id, .claim = claim};
    return conn_write(conn, release_body, &a);
}

static store_status_t fail_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FAIL, a->id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, a->claim) || !bind_text(stmt, 3, a->code) ||
        !bind_text(stmt, 4, a->message) || !bind_int(stmt, 5, a->at))
        return conn_bind_failed(conn, &Q_FAIL, stmt);
    st = conn_run(conn, &Q_FAIL, stmt);
    if (st == STORE_OK && conn_changes(conn) != 1)
        return STORE_NOT_FOUND;
    return st == STORE_OK ? delete_chunks(conn, a->id) : st;
}

store_status_t store_report_fail(store_conn_t *conn, const char *id, const char *claim,
                                 const char *code, const char *message, int64_t now_ms)
{
    fenced_args_t a = {.id = id, .claim = claim, .code = code, .message = message, .at = now_ms};
    return conn_write(conn, fail_body, &a);
}

static store_status_t reset_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    store_status_t st = check_owned(conn, a->id, a->claim);
    return st == STORE_OK ? delete_chunks(conn, a->id) : st;
}

store_status_t store_report_reset_chunks(store_conn_t *conn, const char *id, const char *claim)
{
    fenced_args_t a = {.id = id, .claim = claim};
    return conn_write(conn, reset_body, &a);
}

static store_status_t put_chunk_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    store_status_t st = renew_body(conn, a); /* also proves the claim holds */
    return st == STORE_OK ? insert_chunk(conn, a->id, a->seq, a->data, a->len) : st;
}

store_status_t store_report_put_chunk(store_conn_t *conn, const char *id, const char *claim,
                                      int64_t seq, const void *data, size_t len,
                                      int64_t lease_until)
{
    fenced_args_t a = {.id = id, .claim = claim, .at = lease_until, .seq = seq, .data = data,
                       .len = len};
    return conn_write(conn, put_chunk_body, &a);
}

static store_status_t complete_body(store_conn_t *conn, const void *arg)
{
    const fenced_args_t *a = arg;
    const store_report_done_t *d = a->done;
    store_status_t st = check_owned(conn, a->id, a->claim);
    if (st == STORE_OK && d->last_chunk != NULL)
        st = insert_chunk(conn, a->id, d->last_seq, d->last_chunk, d->last_len);
    db_stmt_t *stmt;
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_COMPLETE, a->id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, a->claim) || !bind_text(stmt, 3, d->metadata) ||
        !bind_int(stmt, 4, d->row_count) || !bind_int(stmt, 5, d->size_bytes) ||
        !bind_int(stmt, 6, d->finished_at) ||
        !bind_blob_or_null(stmt, 7, d->skipped, d->skipped_len))
        return conn_bind_failed(conn, &Q_COMPLETE, stmt);
    return conn_run(conn, &Q_COMPLETE, stmt);
}

store_status_t store_report_complete(store_conn_t *conn, const char *id, const char *claim,
                                     const store_report_done_t *done)
{
    fenced_args_t a = {.id = id, .claim = claim, .done = done};
    return conn_write(conn, complete_body, &a);
}

/* ---- dirty accounts --------------------------------------------------- */

static bool decode_dirty(db_stmt_t *stmt, store_inv_account_t *out)
{
    memset(out, 0, sizeof *out);
    out->austria_tax_year = db_column_int(stmt, 3);
    out->dirty = true;
    out->dirty_from = db_column_int(stmt, 4);
    out->version = db_column_int(stmt, 5);
    return column_copy(stmt, 0, out->uuid, sizeof out->uuid) &&
           column_copy(stmt, 1, out->id, sizeof out->id) &&
           column_copy(stmt, 2, out->method, sizeof out->method);
}

store_status_t store_report_dirty_accounts(store_conn_t *conn, const char *tenant_id,
                                           const char *scoped_report, const char *after_uuid,
                                           store_inv_account_t *out, size_t cap, size_t *count)
{
    *count = 0;
    const store_sql_t *q = scoped_report != NULL ? &Q_DIRTY_IDS : &Q_DIRTY_ALL;
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, q, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, after_uuid) || !bind_int(stmt, 3, (int64_t)cap) ||
        (scoped_report != NULL && !bind_text(stmt, 4, scoped_report)))
        return conn_bind_failed(conn, q, stmt);
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW && *count < cap) {
        if (!decode_dirty(stmt, &out[*count])) {
            st = store_bad_row(q);
            break;
        }
        (*count)++;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

/* ---- the snapshot read ------------------------------------------------ */

/* Binds (tenant, ids?) to q. */
static store_status_t prepare_scoped(store_conn_t *conn, const store_sql_t *q,
                                     const char *tenant_id, const char *scoped_report,
                                     db_stmt_t **stmt)
{
    store_status_t st = conn_prepare_key(conn, q, tenant_id, stmt);
    if (st != STORE_OK)
        return st;
    if (scoped_report != NULL && !bind_text(*stmt, 2, scoped_report))
        return conn_bind_failed(conn, q, *stmt);
    return STORE_OK;
}

static store_status_t count_requested(store_conn_t *conn, const char *scoped_report,
                                      int64_t *requested)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_REQUESTED, scoped_report, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        *requested = db_column_int(stmt, 0);
    else /* no row: the report was deleted meanwhile */
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_REQUESTED, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t count_included(store_conn_t *conn, const char *tenant_id,
                                     const char *scoped_report, int64_t *included)
{
    const store_sql_t *q = scoped_report != NULL ? &Q_COUNT_IDS : &Q_COUNT_ALL;
    db_stmt_t *stmt;
    store_status_t st = prepare_scoped(conn, q, tenant_id, scoped_report, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        *included = db_column_int(stmt, 0);
    else
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

/* Steps q, handing each row to row(stmt, reader); stops on a non-zero
 * return (sets *stopped). */
static store_status_t walk(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                           int (*row)(db_stmt_t *stmt, store_report_reader_t *r),
                           store_report_reader_t *reader, bool *stopped)
{
    store_status_t st = STORE_OK;
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW) {
        int r = row(stmt, reader);
        if (r < 0) {
            st = store_bad_row(q);
            break;
        }
        if (r > 0) {
            *stopped = true;
            break;
        }
    }
    if (st == STORE_OK && !*stopped && rc != DB_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

static int skipped_row(db_stmt_t *stmt, store_report_reader_t *r)
{
    if (db_column_is_null(stmt, 0))
        return -1;
    return r->skipped(db_column_int(stmt, 0), r->ctx) != 0 ? 1 : 0;
}

static int report_row(db_stmt_t *stmt, store_report_reader_t *r)
{
    store_report_row_t row = {
        .account_id = col(stmt, 0), .asset_code = col(stmt, 1), .asset_type = col(stmt, 2),
        .total_quantity = col(stmt, 3), .total_cost = col(stmt, 4),
        .average_unit_cost = col(stmt, 5), .quantity_with_basis = col(stmt, 6)};
    if (row.account_id == NULL || row.asset_code == NULL || row.asset_type == NULL ||
        row.total_quantity == NULL || row.total_cost == NULL || row.quantity_with_basis == NULL)
        return -1;
    return r->row(&row, r->ctx) != 0 ? 1 : 0;
}

/* The counts and the skipped positions, common to both kinds. */
static store_status_t read_head(store_conn_t *conn, const char *tenant_id,
                                const char *scoped_report, store_report_reader_t *reader,
                                bool *stopped)
{
    db_stmt_t *stmt;
    store_status_t st = count_included(conn, tenant_id, scoped_report, &reader->included);
    if (st == STORE_OK && scoped_report != NULL)
        st = count_requested(conn, scoped_report, &reader->requested);
    if (st == STORE_OK && scoped_report != NULL) {
        st = prepare_scoped(conn, &Q_SKIPPED, tenant_id, scoped_report, &stmt);
        if (st == STORE_OK)
            st = walk(conn, &Q_SKIPPED, stmt, skipped_row, reader, stopped);
    }
    return st;
}

/* One account's gains rows, handed to reader->gain with its caller id. */
typedef struct gain_walk {
    store_report_reader_t *reader;
    const char *account_id;
    bool stopped;
} gain_walk_t;

static int gain_row(const store_gain_t *row, void *ctx)
{
    gain_walk_t *g = ctx;
    if (g->reader->gain(g->account_id, row, g->reader->ctx) != 0)
        g->stopped = true;
    return g->stopped ? 1 : 0;
}

static int gain_account(db_stmt_t *stmt, store_report_reader_t *r)
{
    gain_walk_t g = {.reader = r, .account_id = col(stmt, 1)};
    const char *uuid = col(stmt, 0);
    if (uuid == NULL || g.account_id == NULL)
        return -1;
    r->status = store_gains_each(r->conn, uuid, r->from_ms, r->to_ms, NULL, gain_row, &g);
    return r->status != STORE_OK || g.stopped ? 1 : 0;
}

static store_status_t read_all(store_conn_t *conn, const char *tenant_id,
                               const char *scoped_report, store_report_reader_t *reader)
{
    bool stopped = false;
    db_stmt_t *stmt;
    store_status_t st = read_head(conn, tenant_id, scoped_report, reader, &stopped);
    if (st != STORE_OK || stopped)
        return st;
    const store_sql_t *q;
    int (*row)(db_stmt_t *, store_report_reader_t *) = report_row;
    if (reader->gain != NULL) {
        q = scoped_report != NULL ? &Q_GAIN_ACCOUNTS_IDS : &Q_GAIN_ACCOUNTS_ALL;
        row = gain_account;
        reader->conn = conn;
        reader->status = STORE_OK;
    } else {
        q = scoped_report != NULL ? &Q_ROWS_IDS : &Q_ROWS_ALL;
    }
    st = prepare_scoped(conn, q, tenant_id, scoped_report, &stmt);
    if (st == STORE_OK)
        st = walk(conn, q, stmt, row, reader, &stopped);
    return st == STORE_OK && reader->gain != NULL ? reader->status : st;
}

store_status_t store_report_read(store_conn_t *conn, const char *tenant_id,
                                 const char *scoped_report, store_report_reader_t *reader)
{
    reader->included = 0;
    reader->requested = 0;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_exec(conn, &Q_READ_BEGIN);
    if (st != STORE_OK)
        return st;
    st = read_all(conn, tenant_id, scoped_report, reader);
    if (st == STORE_OK)
        st = conn_exec(conn, &Q_READ_END);
    if (conn_in_transaction(conn)) /* a failure left it open */
        conn_exec(conn, &Q_READ_ROLLBACK);
    return st;
}

/* ---- downloads and the janitor ---------------------------------------- */

store_status_t store_report_chunk(store_conn_t *conn, const char *id, int64_t seq, void *buf,
                                  size_t cap, size_t *len)
{
    *len = 0;
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_CHUNK_GET, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, seq))
        return conn_bind_failed(conn, &Q_CHUNK_GET, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        size_t n = (size_t)db_column_bytes(stmt, 0);
        const void *data = db_column_blob(stmt, 0, NULL);
        if (n > cap || (n > 0 && data == NULL)) {
            st = store_bad_row(&Q_CHUNK_GET);
        } else {
            if (n > 0)
                memcpy(buf, data, n);
            *len = n;
        }
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_CHUNK_GET, rc);
    }
    stmt_done(stmt);
    return st;
}

typedef struct purge_args {
    int64_t now_ms;
    size_t limit;
    size_t *deleted;
} purge_args_t;

static store_status_t purge_body(store_conn_t *conn, const void *arg)
{
    const purge_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_PURGE, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, a->now_ms) || !bind_int(stmt, 2, (int64_t)a->limit))
        return conn_bind_failed(conn, &Q_PURGE, stmt);
    st = conn_run(conn, &Q_PURGE, stmt);
    if (st == STORE_OK)
        *a->deleted = (size_t)conn_changes(conn);
    return st;
}

store_status_t store_report_purge(store_conn_t *conn, int64_t now_ms, size_t limit,
                                  size_t *deleted)
{
    *deleted = 0;
    purge_args_t a = {now_ms, limit, deleted};
    return conn_write(conn, purge_body, &a);
}
