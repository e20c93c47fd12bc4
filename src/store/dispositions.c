/* store/dispositions.c: see dispositions.h.
 *
 * Records are keyed by the account's seq (what the recalculation reads by)
 * and found by their uuid within that account, so a record id of another
 * account, or of another tenant, is simply not found. The rules that need
 * stored rows run inside the write transaction (BEGIN IMMEDIATE through the
 * group commit): the account's method, the stored record's effective_from,
 * the other records' effective_from. The UNIQUE (account, effective_from)
 * key still guards the table, so a bug here cannot store two records with
 * one effective_from. */
#include "store/dispositions.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/domain.h"
#include "store/internal.h"

/* ?1 tenant, ?2 the caller's account id. */
static const store_sql_t Q_ACCOUNT = {
    "disp_account", "SELECT seq, uuid, cost_basis_method FROM accounts"
                    " WHERE tenant_id = ?1 AND id = ?2", NULL};
#define REC_COLUMNS "uuid, method, effective_from, recorded_elsewhere, created_at, updated_at"
/* ?1 account seq, ?2 record uuid. */
static const store_sql_t Q_REC_GET = {
    "disp_get", "SELECT " REC_COLUMNS " FROM disposition_methods WHERE account = ?1 AND uuid = ?2", NULL};
/* ?1 account seq, ?2 effective_from, ?3 a uuid that does not count (the record itself). */
static const store_sql_t Q_REC_TAKEN = {
    "disp_taken", "SELECT 1 FROM disposition_methods"
                  " WHERE account = ?1 AND effective_from = ?2 AND uuid <> ?3", NULL};
static const store_sql_t Q_REC_INSERT = {
    "disp_insert", "INSERT INTO disposition_methods (uuid, account, method, effective_from,"
                   " recorded_elsewhere, created_at, updated_at)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)", NULL};
static const store_sql_t Q_REC_UPDATE = {
    "disp_update", "UPDATE disposition_methods SET method = ?3, effective_from = ?4,"
                   " recorded_elsewhere = ?5, updated_at = ?6 WHERE account = ?1 AND uuid = ?2", NULL};
static const store_sql_t Q_REC_DELETE = {
    "disp_delete", "DELETE FROM disposition_methods WHERE account = ?1 AND uuid = ?2", NULL};
/* ?1 account seq, ?2 after, ?3 window. */
static const store_sql_t Q_REC_LIST = {
    "disp_list", "SELECT " REC_COLUMNS " FROM disposition_methods"
                 " WHERE account = ?1 AND effective_from > ?2 ORDER BY effective_from LIMIT ?3", NULL};
#define ACCOUNT_SEQ_OF_UUID "(SELECT seq FROM accounts WHERE uuid = ?1)"
static const store_sql_t Q_IN_FORCE = {
    "disp_in_force", "SELECT method FROM disposition_methods WHERE account = " ACCOUNT_SEQ_OF_UUID
                     " AND effective_from <= ?2 ORDER BY effective_from DESC LIMIT 1", NULL};
static const store_sql_t Q_SCHEDULE = {
    "disp_schedule", "SELECT effective_from, method FROM disposition_methods"
                     " WHERE account = " ACCOUNT_SEQ_OF_UUID " ORDER BY effective_from", NULL};
/* Transaction order is the ledger's: datetime, then seq (arrival). */
/* ---- the account ------------------------------------------------------ */

typedef struct disp_account {
    int64_t seq;
    char uuid[STORE_UUID_LEN];
    char method[DOMAIN_METHOD_SIZE];
} disp_account_t;

static store_status_t account_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    disp_account_t *a = record;
    a->seq = db_column_int(stmt, 0);
    if (!column_copy(stmt, 1, a->uuid, sizeof a->uuid) ||
        !column_copy(stmt, 2, a->method, sizeof a->method))
        return store_bad_row(q);
    return STORE_OK;
}

static store_status_t account_find(store_conn_t *conn, const char *tenant_id,
                                   const char *account_id, disp_account_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_ACCOUNT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, account_id))
        return conn_bind_failed(conn, &Q_ACCOUNT, stmt);
    return conn_read_row(conn, &Q_ACCOUNT, stmt, account_from_row, out);
}

/* NOT_FOUND with NO_ACCOUNT when the account is missing. */
static store_status_t account_or_refuse(store_conn_t *conn, const char *tenant_id,
                                        const char *account_id, disp_account_t *out,
                                        store_disposition_refusal_t *refusal)
{
    store_status_t st = account_find(conn, tenant_id, account_id, out);
    if (st == STORE_NOT_FOUND)
        *refusal = STORE_DISPOSITION_NO_ACCOUNT;
    return st;
}

static bool is_austria(const disp_account_t *a)
{
    return strcmp(a->method, domain_method_name(DOMAIN_METHOD_AUSTRIA)) == 0;
}

/* ---- records ---------------------------------------------------------- */

/* A row_decode_fn for REC_COLUMNS: record is a store_disposition_t whose
 * account_id the caller fills. */
static store_status_t rec_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_disposition_t *r = record;
    if (!column_copy(stmt, 0, r->uuid, sizeof r->uuid) ||
        !column_copy(stmt, 1, r->method, sizeof r->method))
        return store_bad_row(q);
    r->effective_from = db_column_int(stmt, 2);
    r->recorded_elsewhere = db_column_int(stmt, 3) != 0;
    r->created_at = db_column_int(stmt, 4);
    r->updated_at = db_column_int(stmt, 5);
    return STORE_OK;
}

static store_status_t rec_read(store_conn_t *conn, int64_t account_seq, const char *uuid,
                               store_disposition_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_REC_GET, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, account_seq) || !bind_text(stmt, 2, uuid))
        return conn_bind_failed(conn, &Q_REC_GET, stmt);
    return conn_read_row(conn, &Q_REC_GET, stmt, rec_from_row, out);
}

/* True in *taken when another record of the account starts at effective_from. */
static store_status_t rec_taken(store_conn_t *conn, int64_t account_seq, int64_t effective_from,
                                const char *except_uuid, bool *taken)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_REC_TAKEN, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, account_seq) || !bind_int(stmt, 2, effective_from) ||
        !bind_text(stmt, 3, except_uuid))
        return conn_bind_failed(conn, &Q_REC_TAKEN, stmt);
    st = conn_read_row(conn, &Q_REC_TAKEN, stmt, NULL, NULL);
    *taken = st == STORE_OK;
    return st == STORE_NOT_FOUND ? STORE_OK : st;
}

/* ---- create ----------------------------------------------------------- */

typedef struct create_args {
    const char *tenant_id;
    const store_disposition_t *rec;
    store_disposition_refusal_t *refusal;
} create_args_t;

static store_status_t rec_insert(store_conn_t *conn, int64_t account_seq,
                                 const store_disposition_t *r)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_REC_INSERT, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 1, r->uuid) && bind_int(stmt, 2, account_seq) &&
                 bind_text(stmt, 3, r->method) && bind_int(stmt, 4, r->effective_from) &&
                 bind_int(stmt, 5, r->recorded_elsewhere) && bind_int(stmt, 6, r->created_at);
    return run_bound(conn, &Q_REC_INSERT, stmt, bound);
}

static store_status_t create_tx(store_conn_t *conn, const void *arg)
{
    const create_args_t *a = arg;
    disp_account_t account;
    store_status_t st = account_or_refuse(conn, a->tenant_id, a->rec->account_id, &account,
                                          a->refusal);
    if (st != STORE_OK)
        return st;
    if (is_austria(&account)) {
        *a->refusal = STORE_DISPOSITION_AUSTRIA;
        return STORE_CONFLICT;
    }
    bool taken = false;
    st = rec_taken(conn, account.seq, a->rec->effective_from, a->rec->uuid, &taken);
    if (st == STORE_OK && taken) {
        *a->refusal = STORE_DISPOSITION_DUPLICATE;
        return STORE_CONFLICT;
    }
    if (st == STORE_OK)
        st = rec_insert(conn, account.seq, a->rec);
    if (st == STORE_OK)
        st = store_mark_dirty_in_tx(conn, account.uuid, a->rec->effective_from);
    return st;
}

store_status_t store_disposition_create(store_conn_t *conn, const char *tenant_id,
                                        const store_disposition_t *rec,
                                        store_disposition_refusal_t *refusal)
{
    *refusal = STORE_DISPOSITION_DONE;
    if (!text_fits(rec->uuid, sizeof rec->uuid) || !text_fits(rec->method, sizeof rec->method) ||
        !text_fits(rec->account_id, sizeof rec->account_id))
        return store_bad_argument("disposition_create");
    create_args_t args = {tenant_id, rec, refusal};
    return conn_write(conn, create_tx, &args);
}

/* ---- update and delete ------------------------------------------------ */

typedef struct change_args {
    const char *tenant_id, *account_id, *uuid;
    const store_disposition_patch_t *patch; /* NULL: delete */
    int64_t now;
    store_disposition_t *out;
    store_disposition_refusal_t *refusal;
} change_args_t;

static store_status_t refuse(store_disposition_refusal_t *refusal,
                             store_disposition_refusal_t why)
{
    *refusal = why;
    return why == STORE_DISPOSITION_NO_ACCOUNT || why == STORE_DISPOSITION_NO_RECORD
               ? STORE_NOT_FOUND
               : STORE_CONFLICT;
}

/* The account and the stored record, refusing one already in force. */
static store_status_t change_find(store_conn_t *conn, const change_args_t *a,
                                  disp_account_t *account, store_disposition_t *current)
{
    store_status_t st = account_or_refuse(conn, a->tenant_id, a->account_id, account, a->refusal);
    if (st != STORE_OK)
        return st;
    memset(current, 0, sizeof *current);
    st = rec_read(conn, account->seq, a->uuid, current);
    if (st == STORE_NOT_FOUND)
        return refuse(a->refusal, STORE_DISPOSITION_NO_RECORD);
    if (st != STORE_OK)
        return st;
    snprintf(current->account_id, sizeof current->account_id, "%s", a->account_id);
    if (current->effective_from <= a->now)
        return refuse(a->refusal, STORE_DISPOSITION_IN_FORCE);
    return STORE_OK;
}

static void apply_patch(const store_disposition_patch_t *p, store_disposition_t *next)
{
    if (p->has_method)
        memcpy(next->method, p->method, sizeof next->method);
    if (p->has_effective_from)
        next->effective_from = p->effective_from;
    if (p->has_recorded_elsewhere)
        next->recorded_elsewhere = p->recorded_elsewhere;
}

static bool rec_changed(const store_disposition_t *a, const store_disposition_t *b)
{
    return strcmp(a->method, b->method) != 0 || a->effective_from != b->effective_from ||
           a->recorded_elsewhere != b->recorded_elsewhere;
}

static store_status_t rec_write(store_conn_t *conn, int64_t account_seq,
                                const store_disposition_t *r)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_REC_UPDATE, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_int(stmt, 1, account_seq) && bind_text(stmt, 2, r->uuid) &&
                 bind_text(stmt, 3, r->method) && bind_int(stmt, 4, r->effective_from) &&
                 bind_int(stmt, 5, r->recorded_elsewhere) && bind_int(stmt, 6, r->updated_at);
    return run_bound(conn, &Q_REC_UPDATE, stmt, bound);
}

/* The merged record's rules, then its write and the watermark (the earlier
 * of the old and new effective_from: both places change what is relieved). */
static store_status_t update_found(store_conn_t *conn, const change_args_t *a,
                                   const disp_account_t *account,
                                   const store_disposition_t *current)
{
    store_disposition_t next = *current;
    apply_patch(a->patch, &next);
    if (next.effective_from < a->now && !next.recorded_elsewhere)
        return refuse(a->refusal, STORE_DISPOSITION_PAST);
    if (is_austria(account))
        return refuse(a->refusal, STORE_DISPOSITION_AUSTRIA);
    *a->out = *current;
    if (!rec_changed(current, &next))
        return STORE_OK;
    bool taken = false;
    store_status_t st = rec_taken(conn, account->seq, next.effective_from, next.uuid, &taken);
    if (st == STORE_OK && taken)
        return refuse(a->refusal, STORE_DISPOSITION_DUPLICATE);
    next.updated_at = a->now;
    if (st == STORE_OK)
        st = rec_write(conn, account->seq, &next);
    int64_t from = next.effective_from < current->effective_from ? next.effective_from
                                                                 : current->effective_from;
    if (st == STORE_OK)
        st = store_mark_dirty_in_tx(conn, account->uuid, from);
    if (st == STORE_OK)
        *a->out = next;
    return st;
}

static store_status_t delete_found(store_conn_t *conn, const disp_account_t *account,
                                   const store_disposition_t *current)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_REC_DELETE, &stmt);
    if (st != STORE_OK)
        return st;
    st = run_bound(conn, &Q_REC_DELETE, stmt,
                   bind_int(stmt, 1, account->seq) && bind_text(stmt, 2, current->uuid));
    if (st == STORE_OK)
        st = store_mark_dirty_in_tx(conn, account->uuid, current->effective_from);
    return st;
}

static store_status_t change_tx(store_conn_t *conn, const void *arg)
{
    const change_args_t *a = arg;
    disp_account_t account;
    store_disposition_t current;
    store_status_t st = change_find(conn, a, &account, &current);
    if (st != STORE_OK)
        return st;
    return a->patch != NULL ? update_found(conn, a, &account, &current)
                            : delete_found(conn, &account, &current);
}

store_status_t store_disposition_update(store_conn_t *conn, const char *tenant_id,
                                        const char *account_id, const char *record_uuid,
                                        const store_disposition_patch_t *patch, int64_t now,
                                        store_disposition_t *out,
                                        store_disposition_refusal_t *refusal)
{
    *refusal = STORE_DISPOSITION_DONE;
    if (patch == NULL || !text_fits(patch->method, sizeof patch->method))
        return store_bad_argument("disposition_update");
    change_args_t args = {tenant_id, account_id, record_uuid, patch, now, out, refusal};
    return conn_write(conn, change_tx, &args);
}

store_status_t store_disposition_delete(store_conn_t *conn, const char *tenant_id,
                                        const char *account_id, const char *record_uuid,
                                        int64_t now, store_disposition_refusal_t *refusal)
{
    *refusal = STORE_DISPOSITION_DONE;
    change_args_t args = {tenant_id, account_id, record_uuid, NULL, now, NULL, refusal};
    return conn_write(conn, change_tx, &args);
}

/* ---- reads ------------------------------------------------------------ */

store_status_t store_disposition_list(store_conn_t *conn, const char *tenant_id,
                                      const char *account_id, int64_t after_ms, size_t limit,
                                      int (*each)(const store_disposition_t *rec, void *ctx),
                                      void *ctx, bool *more)
{
    *more = false;
    disp_account_t account;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = account_find(conn, tenant_id, account_id, &account);
    if (st != STORE_OK)
        return st;
    db_stmt_t *stmt = NULL;
    st = conn_prepare(conn, &Q_REC_LIST, &stmt);
    int64_t window = limit < (size_t)INT64_MAX ? (int64_t)limit + 1 : INT64_MAX;
    if (st == STORE_OK && !(bind_int(stmt, 1, account.seq) && bind_int(stmt, 2, after_ms) &&
                            bind_int(stmt, 3, window)))
        st = conn_bind_failed(conn, &Q_REC_LIST, stmt);
    store_page_t page;
    page_start(&page, conn, &Q_REC_LIST, stmt, limit, st);
    store_disposition_t rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.account_id, sizeof rec.account_id, "%s", account_id);
    while (page_next(&page, rec_from_row, &rec))
        if (each(&rec, ctx) != 0)
            break;
    return page_close(&page, more);
}

store_status_t store_disposition_in_force(store_conn_t *conn, const char *account_uuid,
                                          int64_t at, char method[DOMAIN_METHOD_SIZE])
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_IN_FORCE, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, at))
        return conn_bind_failed(conn, &Q_IN_FORCE, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = column_copy(stmt, 0, method, DOMAIN_METHOD_SIZE) ? STORE_OK
                                                               : store_bad_row(&Q_IN_FORCE);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_IN_FORCE, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_dispositions_schedule(store_conn_t *conn, const char *account_uuid,
                                           int (*each)(int64_t effective_ms, const char *method,
                                                       void *ctx),
                                           void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_SCHEDULE, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = DB_DONE, stop = 0;
    while (!stop && (rc = db_step(stmt)) == DB_ROW) {
        const char *method = db_column_text(stmt, 1);
        if (method == NULL) {
            st = store_bad_row(&Q_SCHEDULE);
            break;
        }
        stop = each(db_column_int(stmt, 0), method, ctx);
    }
    if (st == STORE_OK && !stop && rc != DB_DONE)
        st = conn_fail(conn, &Q_SCHEDULE, rc);
    stmt_done(stmt);
    return st;
}
