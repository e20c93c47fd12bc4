/* store/forms.c: see forms.h.
 *
 * Every read joins the account for its caller id, which the event
 * (alternate_account_id) and the operator's output need, so a form is always
 * read whole in one statement. Status changes are guarded in SQL
 * (WHERE status = 'Generated') as well as decided in forms/state.c: a row
 * that moved since the caller read it changes nothing and reports
 * STORE_NOT_FOUND rather than overwriting a Filed form. */
#include "store/forms.h"

#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

#define FORM_COLUMNS                                                                        \
    "f.id, f.tenant_id, f.account_uuid, a.id, f.form_type, f.tax_year, f.status, f.content," \
    " f.created_at, f.generated_at, coalesce(f.filed_at, 0), coalesce(f.deleted_at, 0),"    \
    " f.updated_at, coalesce(f.source_version, -1), f.correction_needed"

static const store_sql_t Q_FORM_GET = {"form_get", "SELECT " FORM_COLUMNS
    " FROM tax_forms f JOIN accounts a ON a.uuid = f.account_uuid WHERE f.id = ?1", NULL};
static const store_sql_t Q_FORM_LIVE = {"form_live", "SELECT " FORM_COLUMNS
    " FROM tax_forms f JOIN accounts a ON a.uuid = f.account_uuid"
    " WHERE f.account_uuid = ?1 AND f.tax_year = ?2 AND f.form_type = ?3"
    " AND f.status <> 'Deleted'", NULL};
static const store_sql_t Q_FORM_LIST_LIVE = {"form_list_live", "SELECT " FORM_COLUMNS
    " FROM tax_forms f JOIN accounts a ON a.uuid = f.account_uuid"
    " WHERE f.account_uuid = ?1 AND f.tax_year = ?2 AND f.status <> 'Deleted'"
    " ORDER BY f.form_type", NULL};
static const store_sql_t Q_FORM_INSERT = {"form_insert",
    "INSERT INTO tax_forms (id, tenant_id, account_uuid, form_type, tax_year, status, content,"
    " created_at, generated_at, updated_at, source_version) VALUES (?1, ?2, ?3, ?4, ?5,"
    " 'Generated', ?6, ?7, ?7, ?7, nullif(?8, CAST(-1 AS BIGINT)))", NULL};
static const store_sql_t Q_FORM_REFRESH = {"form_refresh",
    "UPDATE tax_forms SET content = ?2, generated_at = ?3, updated_at = ?3,"
    " source_version = nullif(?4, CAST(-1 AS BIGINT)) WHERE id = ?1 AND status = 'Generated'", NULL};
/* Forms due for regeneration (issue 16): Generated, of a type computed
 * from gains, whose account's inventory_version moved since the content
 * was computed, generated at or before ?1 (now less the minimum interval).
 * Oldest generation first, so no form waits behind a busy account. */
static const store_sql_t Q_FORM_STALE = {"form_stale",
    "SELECT f.id, f.tenant_id, a.id, f.form_type, f.tax_year, f.generated_at"
    " FROM tax_forms f JOIN accounts a ON a.uuid = f.account_uuid"
    " WHERE f.status = 'Generated' AND f.form_type IN ('1099_DA', 'GAIN_LOSS_SUMMARY')"
    " AND f.generated_at <= ?1 AND f.source_version IS NOT NULL"
    " AND f.source_version <> a.inventory_version ORDER BY f.generated_at LIMIT ?2", NULL};
/* A Filed form whose account changed since its content was computed needs
 * a corrected form: flagged, never rewritten. */
static const store_sql_t Q_FORM_FLAG_CORRECTIONS = {"form_flag_corrections",
    "UPDATE tax_forms SET correction_needed = 1 WHERE status = 'Filed'"
    " AND correction_needed = 0 AND source_version IS NOT NULL"
    " AND source_version <> (SELECT inventory_version FROM accounts a"
    " WHERE a.uuid = tax_forms.account_uuid)", NULL};
static const store_sql_t Q_FORM_FILE = {"form_file",
    "UPDATE tax_forms SET status = 'Filed', filed_at = ?2, updated_at = ?2"
    " WHERE id = ?1 AND status = 'Generated'", NULL};
static const store_sql_t Q_FORM_DELETE = {"form_delete",
    "UPDATE tax_forms SET status = 'Deleted', deleted_at = ?2, updated_at = ?2"
    " WHERE id = ?1 AND status = 'Generated'", NULL};

void store_form_clear(store_form_t *form)
{
    free(form->content);
    memset(form, 0, sizeof *form);
}

/* Decodes the current row of a FORM_COLUMNS statement; out->content is
 * malloc'd. False for a row that does not fit (or no memory). */
static bool form_row(db_stmt_t *stmt, store_form_t *out)
{
    memset(out, 0, sizeof *out);
    const char *content = db_column_text(stmt, 7);
    bool ok = column_copy(stmt, 0, out->id, sizeof out->id) &&
              column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) &&
              column_copy(stmt, 2, out->account_uuid, sizeof out->account_uuid) &&
              column_copy(stmt, 3, out->account_id, sizeof out->account_id) &&
              column_copy(stmt, 4, out->form_type, sizeof out->form_type) &&
              column_copy(stmt, 6, out->status, sizeof out->status) && content != NULL;
    if (!ok)
        return false;
    out->tax_year = (int)db_column_int(stmt, 5);
    out->created_at = db_column_int(stmt, 8);
    out->generated_at = db_column_int(stmt, 9);
    out->filed_at = db_column_int(stmt, 10);
    out->deleted_at = db_column_int(stmt, 11);
    out->updated_at = db_column_int(stmt, 12);
    out->source_version = db_column_int(stmt, 13);
    out->correction_needed = (int)db_column_int(stmt, 14) != 0;
    out->content = strdup((const char *)content);
    return out->content != NULL;
}

/* Steps a bound statement expected to return at most one form. */
static store_status_t form_one(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                               store_form_t *out)
{
    int rc = db_step(stmt);
    store_status_t st = STORE_OK;
    if (rc == DB_ROW) {
        if (!form_row(stmt, out)) {
            store_form_clear(out);
            st = store_bad_row(q);
        }
    } else {
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, q, rc);
    }
    stmt_done(stmt);
    return st;
}

store_status_t store_form_get_in_tx(store_conn_t *conn, const char *form_id, store_form_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FORM_GET, form_id, &stmt);
    if (st != STORE_OK)
        return st;
    return form_one(conn, &Q_FORM_GET, stmt, out);
}

store_status_t store_form_get(store_conn_t *conn, const char *form_id, store_form_t *out)
{
    store_status_t st = conn_enter(conn);
    return st != STORE_OK ? st : store_form_get_in_tx(conn, form_id, out);
}

store_status_t store_form_live_in_tx(store_conn_t *conn, const char *account_uuid,
                                     const char *form_type, int tax_year, store_form_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FORM_LIVE, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, tax_year) || !bind_text(stmt, 3, form_type))
        return conn_bind_failed(conn, &Q_FORM_LIVE, stmt);
    return form_one(conn, &Q_FORM_LIVE, stmt, out);
}

store_status_t store_form_insert_in_tx(store_conn_t *conn, const store_form_t *f)
{
    if (!text_fits(f->id, sizeof f->id) || !text_fits(f->form_type, sizeof f->form_type) ||
        f->content == NULL)
        return store_bad_argument("form_insert");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FORM_INSERT, f->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, f->tenant_id) && bind_text(stmt, 3, f->account_uuid) &&
                 bind_text(stmt, 4, f->form_type) && bind_int(stmt, 5, f->tax_year) &&
                 bind_text(stmt, 6, f->content) && bind_int(stmt, 7, f->created_at) &&
                 bind_int(stmt, 8, f->source_version);
    return run_bound(conn, &Q_FORM_INSERT, stmt, bound);
}

/* Runs a one-row update keyed by form id; STORE_NOT_FOUND when no row
 * matched (the form is no longer Generated). */
static store_status_t form_update(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                                  bool bound)
{
    store_status_t st = run_bound(conn, q, stmt, bound);
    if (st == STORE_OK && conn_changes(conn) != 1)
        return STORE_NOT_FOUND;
    return st;
}

store_status_t store_form_refresh_in_tx(store_conn_t *conn, const char *form_id,
                                        const char *content, int64_t source_version,
                                        int64_t now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FORM_REFRESH, form_id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, content) && bind_int(stmt, 3, now) &&
                 bind_int(stmt, 4, source_version);
    return form_update(conn, &Q_FORM_REFRESH, stmt, bound);
}

store_status_t store_form_move_in_tx(store_conn_t *conn, const char *form_id,
                                     const char *to_status, int64_t now)
{
    const store_sql_t *q = strcmp(to_status, "Filed") == 0     ? &Q_FORM_FILE
                           : strcmp(to_status, "Deleted") == 0 ? &Q_FORM_DELETE
                                                                : NULL;
    if (q == NULL)
        return store_bad_argument("form_move");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, q, form_id, &stmt);
    if (st != STORE_OK)
        return st;
    return form_update(conn, q, stmt, bind_int(stmt, 2, now));
}

store_status_t store_form_list_live(store_conn_t *conn, const char *account_uuid, int tax_year,
                                    int (*each)(const store_form_t *form, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_FORM_LIST_LIVE, account_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, tax_year))
        return conn_bind_failed(conn, &Q_FORM_LIST_LIVE, stmt);
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW) {
        store_form_t form;
        if (!form_row(stmt, &form)) {
            store_form_clear(&form);
            stmt_done(stmt);
            return store_bad_row(&Q_FORM_LIST_LIVE);
        }
        int stop = each(&form, ctx);
        store_form_clear(&form);
        if (stop)
            break;
    }
    st = rc == DB_ROW || rc == DB_DONE ? STORE_OK : conn_fail(conn, &Q_FORM_LIST_LIVE, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_form_stale(store_conn_t *conn, int64_t generated_before, size_t limit,
                                store_form_stale_t *out, size_t *count)
{
    *count = 0;
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_FORM_STALE, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 1, generated_before) || !bind_int(stmt, 2, (int64_t)limit))
        return conn_bind_failed(conn, &Q_FORM_STALE, stmt);
    int rc = DB_DONE;
    while (*count < limit && (rc = db_step(stmt)) == DB_ROW) {
        store_form_stale_t *f = &out[*count];
        if (!column_copy(stmt, 0, f->id, sizeof f->id) ||
            !column_copy(stmt, 1, f->tenant_id, sizeof f->tenant_id) ||
            !column_copy(stmt, 2, f->account_id, sizeof f->account_id) ||
            !column_copy(stmt, 3, f->form_type, sizeof f->form_type)) {
            stmt_done(stmt);
            return store_bad_row(&Q_FORM_STALE);
        }
        f->tax_year = (int)db_column_int(stmt, 4);
        f->generated_at = db_column_int(stmt, 5);
        (*count)++;
    }
    st = *count == limit || rc == DB_DONE ? STORE_OK : conn_fail(conn, &Q_FORM_STALE, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t flag_body(store_conn_t *conn, const void *arg)
{
    size_t *flagged = (size_t *)arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare(conn, &Q_FORM_FLAG_CORRECTIONS, &stmt);
    if (st == STORE_OK)
        st = conn_run(conn, &Q_FORM_FLAG_CORRECTIONS, stmt);
    if (st == STORE_OK)
        *flagged = (size_t)conn_changes(conn);
    return st;
}

store_status_t store_form_flag_corrections(store_conn_t *conn, size_t *flagged)
{
    *flagged = 0;
    return conn_write(conn, flag_body, flagged);
}
