/* store/taxdocs: see taxdocs.h.
 *
 * A submission's derived state lives in columns (not as a JSON blob of the
 * answered object) so that a TIN result updates exactly the fields it
 * changes and the answered shape is built in one place, taxdocs/model.c.
 * The document type and the object are stored as the text the caller gives.
 * Fields that do not belong to a type are NULL in the table and "" / 0 in
 * the struct (nullif on the way in, coalesce on the way out). "Current" is
 * an upserted row per (owner, object): the latest submission wins even when
 * two share a millisecond.
 *
 * Since schema v15 a row also says which model its sealed document is in
 * (model: "" from the caller writes 'native', the model of every row from
 * before), where it came from, its questionnaire, a W-9's TIN type and a
 * DPS's VAT note (NULL <-> ""), and tax_documentation_files records the
 * documents made of a submission, by reference only. */
#include "store/taxdocs.h"

#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

#define TAXDOC_COLUMNS                                                                      \
    "d.id, d.owner_uuid, d.document_type, d.data_collection_status, d.needs_resubmission,"  \
    " coalesce(d.tax_documentation_status, ''), coalesce(d.issues, ''),"                     \
    " coalesce(d.tin_status, ''), coalesce(d.tin_validated_at, 0),"                          \
    " coalesce(d.expiration_date, ''), coalesce(d.treaty_claim_status, ''),"                 \
    " coalesce(d.vat_status, ''), coalesce(d.vat_validated_at, 0), d.created_at,"           \
    " d.model, coalesce(d.source, ''), coalesce(d.questionnaire, ''),"                      \
    " coalesce(d.tin_type, ''), coalesce(d.vat_note, '')"
#define TAXDOC_NCOLS 19

static const store_sql_t Q_TAXDOC_INSERT = {"taxdoc_insert",
    "INSERT INTO tax_documents (id, tenant_id, owner_uuid, document_type, document_sealed,"
    " tin_sealed, data_collection_status, needs_resubmission, tax_documentation_status, issues,"
    " tin_status, tin_validated_at, expiration_date, treaty_claim_status, vat_status,"
    " vat_validated_at, created_at, model, source, questionnaire, tin_type, vat_note)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, nullif(?9, ''),"
    " nullif(?10, ''), nullif(?11, ''), nullif(?12, CAST(0 AS BIGINT)), nullif(?13, ''), nullif(?14, ''),"
    " nullif(?15, ''), nullif(?16, CAST(0 AS BIGINT)), ?17, coalesce(nullif(?18, ''), 'native'),"
    " nullif(?19, ''), nullif(?20, ''), nullif(?21, ''), nullif(?22, ''))", NULL};
static const store_sql_t Q_TAXDOC_MAKE_CURRENT = {"taxdoc_make_current",
    "INSERT INTO tax_documentation_current (owner_uuid, object, document_id) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (owner_uuid, object) DO UPDATE SET document_id = excluded.document_id", NULL};
static const store_sql_t Q_TAXDOC_CURRENT = {"taxdoc_current",
    "SELECT " TAXDOC_COLUMNS " FROM tax_documentation_current c"
    " JOIN tax_documents d ON d.id = c.document_id"
    " WHERE c.owner_uuid = ?1 AND d.tenant_id = ?2", NULL};
static const store_sql_t Q_TAXDOC_GET = {"taxdoc_get",
    "SELECT " TAXDOC_COLUMNS ", EXISTS (SELECT 1 FROM tax_documentation_current c"
    " WHERE c.document_id = d.id), o.id FROM tax_documents d"
    " JOIN account_owners o ON o.uuid = d.owner_uuid WHERE d.id = ?1 AND d.tenant_id = ?2", NULL};
static const store_sql_t Q_TAXDOC_SEALED = {"taxdoc_sealed",
    "SELECT " TAXDOC_COLUMNS ", d.document_sealed, d.tin_sealed FROM tax_documents d"
    " WHERE d.id = ?1 AND d.tenant_id = ?2", NULL};
/* Inserts nothing unless the submission is the tenant's and the owner's:
 * one statement, so no other write can come between the check and the row. */
static const store_sql_t Q_TAXDOC_FILE_INSERT = {"taxdoc_file_insert",
    "INSERT INTO tax_documentation_files (id, tenant_id, owner_uuid, document_id, created_at)"
    " SELECT CAST(?1 AS TEXT), d.tenant_id, d.owner_uuid, d.id, CAST(?5 AS BIGINT)"
    " FROM tax_documents d"
    " WHERE d.id = ?4 AND d.tenant_id = ?2 AND d.owner_uuid = ?3", NULL};
static const store_sql_t Q_TAXDOC_FILE_GET = {"taxdoc_file_get",
    "SELECT id, tenant_id, owner_uuid, document_id, created_at FROM tax_documentation_files"
    " WHERE id = ?1", NULL};
static const store_sql_t Q_TAXDOC_TIN_RESULT = {"taxdoc_tin_result",
    "UPDATE tax_documents SET tin_status = ?3, tin_validated_at = ?4, issues = ?5,"
    " needs_resubmission = ?6, tax_documentation_status = ?7"
    " WHERE id = ?1 AND tenant_id = ?2 AND document_type = 'W-9'", NULL};

/* ---- writes */

static bool taxdoc_bind(db_stmt_t *stmt, const store_taxdoc_new_t *n)
{
    const store_taxdoc_t *d = n->doc;
    return bind_text(stmt, 2, n->tenant_id) && bind_text(stmt, 3, d->owner_uuid) &&
           bind_text(stmt, 4, d->document_type) &&
           bind_blob_or_null(stmt, 5, n->document_sealed, n->document_sealed_len) &&
           bind_blob_or_null(stmt, 6, n->tin_sealed, n->tin_sealed_len) &&
           bind_text(stmt, 7, d->data_collection_status) &&
           bind_int(stmt, 8, d->needs_resubmission) &&
           bind_text(stmt, 9, d->tax_documentation_status) && bind_text(stmt, 10, d->issues) &&
           bind_text(stmt, 11, d->tin_status) && bind_int(stmt, 12, d->tin_validated_at) &&
           bind_text(stmt, 13, d->expiration_date) &&
           bind_text(stmt, 14, d->treaty_claim_status) && bind_text(stmt, 15, d->vat_status) &&
           bind_int(stmt, 16, d->vat_validated_at) && bind_int(stmt, 17, d->created_at) &&
           bind_text(stmt, 18, d->model) && bind_text(stmt, 19, d->source) &&
           bind_text(stmt, 20, d->questionnaire) && bind_text(stmt, 21, d->tin_type) &&
           bind_text(stmt, 22, d->vat_note);
}

/* The v15 words are caller-filled fixed buffers: each must hold a string. */
static bool taxdoc_words_fit(const store_taxdoc_t *d)
{
    return text_fits(d->model, sizeof d->model) && text_fits(d->source, sizeof d->source) &&
           text_fits(d->questionnaire, sizeof d->questionnaire) &&
           text_fits(d->tin_type, sizeof d->tin_type) && text_fits(d->vat_note, sizeof d->vat_note);
}

store_status_t store_taxdoc_insert_in_tx(store_conn_t *conn, const store_taxdoc_new_t *n)
{
    const store_taxdoc_t *d = n->doc;
    if (!text_fits(d->id, sizeof d->id) || !text_fits(d->owner_uuid, sizeof d->owner_uuid) ||
        !taxdoc_words_fit(d) || n->object == NULL || n->document_sealed == NULL || n->document_sealed_len == 0)
        return store_bad_argument("taxdoc_insert");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAXDOC_INSERT, d->id, &stmt);
    if (st != STORE_OK)
        return st;
    if ((st = run_bound(conn, &Q_TAXDOC_INSERT, stmt, taxdoc_bind(stmt, n))) != STORE_OK)
        return st;
    st = conn_prepare_key(conn, &Q_TAXDOC_MAKE_CURRENT, d->owner_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, n->object) && bind_text(stmt, 3, d->id);
    return run_bound(conn, &Q_TAXDOC_MAKE_CURRENT, stmt, bound);
}

store_status_t store_taxdoc_set_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                                 const store_taxdoc_t *doc)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAXDOC_TIN_RESULT, doc->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, tenant_id) && bind_text(stmt, 3, doc->tin_status) &&
                 bind_int(stmt, 4, doc->tin_validated_at) && bind_text(stmt, 5, doc->issues) &&
                 bind_int(stmt, 6, doc->needs_resubmission) &&
                 bind_text(stmt, 7, doc->tax_documentation_status);
    if ((st = run_bound(conn, &Q_TAXDOC_TIN_RESULT, stmt, bound)) != STORE_OK)
        return st;
    return conn_changes(conn) == 1 ? STORE_OK : STORE_NOT_FOUND;
}

/* ---- reads */

static store_status_t taxdoc_from_row(const store_sql_t *q, db_stmt_t *stmt,
                                      store_taxdoc_t *out)
{
    memset(out, 0, sizeof *out);
    if (!column_copy(stmt, 0, out->id, sizeof out->id) ||
        !column_copy(stmt, 1, out->owner_uuid, sizeof out->owner_uuid) ||
        !column_copy(stmt, 2, out->document_type, sizeof out->document_type) ||
        !column_copy(stmt, 3, out->data_collection_status, sizeof out->data_collection_status) ||
        !column_copy(stmt, 5, out->tax_documentation_status,
                     sizeof out->tax_documentation_status) ||
        !column_copy(stmt, 6, out->issues, sizeof out->issues) ||
        !column_copy(stmt, 7, out->tin_status, sizeof out->tin_status) ||
        !column_copy(stmt, 9, out->expiration_date, sizeof out->expiration_date) ||
        !column_copy(stmt, 10, out->treaty_claim_status, sizeof out->treaty_claim_status) ||
        !column_copy(stmt, 11, out->vat_status, sizeof out->vat_status) ||
        !column_copy(stmt, 14, out->model, sizeof out->model) ||
        !column_copy(stmt, 15, out->source, sizeof out->source) ||
        !column_copy(stmt, 16, out->questionnaire, sizeof out->questionnaire) ||
        !column_copy(stmt, 17, out->tin_type, sizeof out->tin_type) ||
        !column_copy(stmt, 18, out->vat_note, sizeof out->vat_note))
        return store_bad_row(q);
    out->needs_resubmission = db_column_int(stmt, 4) != 0;
    out->tin_validated_at = db_column_int(stmt, 8);
    out->vat_validated_at = db_column_int(stmt, 12);
    out->created_at = db_column_int(stmt, 13);
    return STORE_OK;
}

store_status_t store_taxdoc_current_in_tx(store_conn_t *conn, const char *tenant_id,
                                          const char *owner_uuid,
                                          store_taxdoc_t out[STORE_TAXDOC_CURRENT_MAX],
                                          size_t *count)
{
    *count = 0;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAXDOC_CURRENT, owner_uuid, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, tenant_id))
        return conn_bind_failed(conn, &Q_TAXDOC_CURRENT, stmt);
    int rc;
    while (st == STORE_OK && (rc = db_step(stmt)) == DB_ROW) {
        if (*count == STORE_TAXDOC_CURRENT_MAX)
            st = store_bad_row(&Q_TAXDOC_CURRENT);
        else if ((st = taxdoc_from_row(&Q_TAXDOC_CURRENT, stmt, &out[*count])) == STORE_OK)
            (*count)++;
    }
    if (st == STORE_OK && rc != DB_DONE)
        st = conn_fail(conn, &Q_TAXDOC_CURRENT, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_taxdoc_current(store_conn_t *conn, const char *tenant_id,
                                    const char *owner_uuid,
                                    store_taxdoc_t out[STORE_TAXDOC_CURRENT_MAX],
                                    size_t *count)
{
    *count = 0;
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    return store_taxdoc_current_in_tx(conn, tenant_id, owner_uuid, out, count);
}

store_status_t store_taxdoc_get_in_tx(store_conn_t *conn, const char *tenant_id, const char *id,
                                      store_taxdoc_t *out, bool *is_current,
                                      char owner_id[STORE_ID_MAX])
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAXDOC_GET, id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, tenant_id))
        return conn_bind_failed(conn, &Q_TAXDOC_GET, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        st = taxdoc_from_row(&Q_TAXDOC_GET, stmt, out);
        *is_current = db_column_int(stmt, TAXDOC_NCOLS) != 0;
        if (st == STORE_OK && !column_copy(stmt, TAXDOC_NCOLS + 1, owner_id, STORE_ID_MAX))
            st = store_bad_row(&Q_TAXDOC_GET);
    } else if (rc == DB_DONE) {
        st = STORE_NOT_FOUND;
    } else {
        st = conn_fail(conn, &Q_TAXDOC_GET, rc);
    }
    stmt_done(stmt);
    return st;
}

/* A malloc'd copy of a BLOB column into *out, *len (NULL and 0 for SQL
 * NULL); false when memory ran out. */
static bool taxdoc_blob_dup(db_stmt_t *stmt, int col, uint8_t **out, size_t *len)
{
    size_t n = 0;
    const void *data = db_column_blob(stmt, col, &n);
    *out = NULL;
    *len = 0;
    if (data == NULL || n == 0)
        return true;
    if ((*out = malloc(n)) == NULL)
        return false;
    memcpy(*out, data, n);
    *len = n;
    return true;
}

/* The sealed row's decoder (conn_read_row): the columns, then both blobs. */
typedef struct taxdoc_sealed_out {
    store_taxdoc_t *row;
    uint8_t **doc, **tin;
    size_t *doc_len, *tin_len;
} taxdoc_sealed_out_t;

static store_status_t taxdoc_sealed_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    taxdoc_sealed_out_t *o = record;
    store_status_t st = taxdoc_from_row(q, stmt, o->row);
    if (st != STORE_OK)
        return st;
    if (!taxdoc_blob_dup(stmt, TAXDOC_NCOLS, o->doc, o->doc_len) ||
        !taxdoc_blob_dup(stmt, TAXDOC_NCOLS + 1, o->tin, o->tin_len)) {
        free(*o->doc);
        *o->doc = NULL;
        *o->doc_len = 0;
        return STORE_ERROR;
    }
    if (*o->doc == NULL) { /* NOT NULL in the table: a foreign row */
        free(*o->tin);
        *o->tin = NULL;
        *o->tin_len = 0;
        return store_bad_row(q);
    }
    return STORE_OK;
}

store_status_t store_taxdoc_sealed(store_conn_t *conn, const char *tenant_id, const char *id,
                                   store_taxdoc_t *out, uint8_t **doc, size_t *doc_len,
                                   uint8_t **tin, size_t *tin_len)
{
    *doc = *tin = NULL;
    *doc_len = *tin_len = 0;
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    db_stmt_t *stmt;
    if ((st = conn_prepare_key(conn, &Q_TAXDOC_SEALED, id, &stmt)) != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, tenant_id))
        return conn_bind_failed(conn, &Q_TAXDOC_SEALED, stmt);
    taxdoc_sealed_out_t o = {out, doc, tin, doc_len, tin_len};
    return conn_read_row(conn, &Q_TAXDOC_SEALED, stmt, taxdoc_sealed_from_row, &o);
}

/* ---- documents made of a submission */

store_status_t store_taxdoc_file_insert_in_tx(store_conn_t *conn, const store_taxdoc_file_t *f)
{
    if (!text_fits(f->id, sizeof f->id) || !text_fits(f->tenant_id, sizeof f->tenant_id) ||
        !text_fits(f->owner_uuid, sizeof f->owner_uuid) ||
        !text_fits(f->document_id, sizeof f->document_id))
        return store_bad_argument("taxdoc_file_insert");
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_TAXDOC_FILE_INSERT, f->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, f->tenant_id) && bind_text(stmt, 3, f->owner_uuid) &&
                 bind_text(stmt, 4, f->document_id) && bind_int(stmt, 5, f->created_at);
    if ((st = run_bound(conn, &Q_TAXDOC_FILE_INSERT, stmt, bound)) != STORE_OK)
        return st;
    return conn_changes(conn) == 1 ? STORE_OK : STORE_NOT_FOUND;
}

static store_status_t taxdoc_file_from_row(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    store_taxdoc_file_t *out = record;
    memset(out, 0, sizeof *out);
    if (!column_copy(stmt, 0, out->id, sizeof out->id) ||
        !column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) ||
        !column_copy(stmt, 2, out->owner_uuid, sizeof out->owner_uuid) ||
        !column_copy(stmt, 3, out->document_id, sizeof out->document_id))
        return store_bad_row(q);
    out->created_at = db_column_int(stmt, 4);
    return STORE_OK;
}

store_status_t store_taxdoc_file_get(store_conn_t *conn, const char *id, store_taxdoc_file_t *out)
{
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    db_stmt_t *stmt;
    if ((st = conn_prepare_key(conn, &Q_TAXDOC_FILE_GET, id, &stmt)) != STORE_OK)
        return st;
    return conn_read_row(conn, &Q_TAXDOC_FILE_GET, stmt, taxdoc_file_from_row, out);
}
