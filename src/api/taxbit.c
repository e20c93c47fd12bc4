/* taxbit: see taxbit.h.
 *
 * Answers that hold tax documentation carry Cache-Control: no-store (they
 * name a person; with ?unmask=true, their TINs). A document (PDF) is drawn
 * from the sealed submission when it is asked for and again at each
 * download, so no TIN is stored in clear and the POST can answer FINISHED at
 * once: the SDK polls without pause until it reads FINISHED (docs/taxbit-sdk.md
 * § 1.2), so there is no "pending" state to offer it. */
#include "api/taxbit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/arena.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "core/validate.h"
#include "reports/links.h"
#include "store/taxdocs.h"
#include "taxdocs/comprehensive.h"
#include "taxdocs/document.h"
#include "taxdocs/pdf.h"
#include "taxdocs/submit.h"
#include "taxdocs/taxbit_map.h"

#define OWNER "Account owner"
#define DOCUMENT "Document"
#define DOCUMENT_COLLECTION "/v1/tax-documentation/document"

static const char *owner_label(const taxbit_owner_t *o)
{
    return o->label[0] != '\0' ? o->label : o->uuid;
}

static bool is_owner_token(const request_t *req)
{
    return req->claims.owner_uuid[0] != '\0';
}

/* Answers body (stolen) as the route's set answers it. */
static void answer(request_t *req, int status, json_t *body, bool wrapped)
{
    if (body == NULL) {
        api_internal_error(req, "tax documentation: out of memory building the answer");
        return;
    }
    reply_header(req, "cache-control", "no-store");
    if (wrapped)
        reply_data(req, status, body);
    else
        reply_json(req, status, body);
}

/* The owner's current submissions into rows (arena-owned). */
static bool current_rows(request_t *req, store_conn_t *db, const taxbit_owner_t *o,
                         store_taxdoc_t **rows, size_t *count)
{
    *rows = arena_alloc(req->arena, sizeof **rows * STORE_TAXDOC_CURRENT_MAX);
    if (*rows == NULL) {
        api_internal_error(req, "tax documentation: out of memory");
        return false;
    }
    store_status_t rc = store_taxdoc_current(db, req->claims.tenant_id, o->uuid, *rows, count);
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return false;
    }
    return true;
}

/* A W-9 stored before schema v15 has no tin_type column; its sealed
 * document names it. Only a VALID result needs it (SSN vs EIN match). */
static bool fill_tin_types(request_t *req, store_conn_t *db, store_taxdoc_t *rows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        store_taxdoc_t *row = &rows[i];
        if (strcmp(row->document_type, "W-9") != 0 || row->tin_type[0] != '\0' ||
            strcmp(row->tin_status, "VALID") != 0)
            continue;
        taxdocs_document_t d;
        store_status_t rc =
            taxdocs_document_open(db, api_ctx(req)->tin_key, req->claims.tenant_id, row->id, &d);
        const char *type = rc == STORE_OK ? json_string_value(json_object_get(d.native, "tin_type"))
                                          : NULL;
        if (type != NULL)
            snprintf(row->tin_type, sizeof row->tin_type, "%s", type);
        taxdocs_document_close(&d);
        if (rc != STORE_OK) {
            reply_store_failure(req, rc);
            return false;
        }
    }
    return true;
}

void taxbit_reply_status(request_t *req, const taxbit_owner_t *o)
{
    store_conn_t *db = api_db(req);
    store_taxdoc_t *rows = NULL;
    size_t count = 0;
    if (db == NULL || !current_rows(req, db, o, &rows, &count) ||
        !fill_tin_types(req, db, rows, count))
        return;
    answer(req, 200, taxbit_status_json(rows, count), o->wrapped);
}

/* ---- submissions */

static void refuse_form(request_t *req, taxdocs_type_t derived, int form)
{
    char message[160];
    snprintf(message, sizeof message, "The answers describe a %s, not a %s",
             taxdocs_type_name(derived), taxdocs_type_name((taxdocs_type_t)form));
    json_t *path = json_pack("[s]", "account_holder");
    json_t *issues = json_array();
    json_array_append_new(issues, v_issue("custom", path, message, NULL));
    json_decref(path);
    reply_invalid(req, "Invalid tax documentation", issues);
}

static void answer_submitted(request_t *req, const char *id, const taxdocs_comprehensive_t *c,
                             int64_t now)
{
    json_t *data = json_pack("{s:s, s:s, s:s, s:o}", "tax_documentation_id", id, "document_type",
                             taxdocs_type_name(c->type), "questionnaire", c->questionnaire,
                             "created_at", jsonval_time(now));
    answer(req, 201, data, true); /* the SDK only needs a JSON body (§ 6.8) */
}

void taxbit_reply_submit(request_t *req, const taxbit_owner_t *o, int form, const char *source)
{
    json_t *body = request_json(req, false);
    if (body == NULL)
        return;
    int64_t now = api_now_ms(req);
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    size_t problems = taxdocs_comprehensive_check(body, now, issues, &c);
    if (problems == TAXDOCS_COMPREHENSIVE_FAILED) { /* a conversion taxd got wrong: not the client's */
        json_decref(issues);
        api_internal_error(req, "tax documentation: converting a COMPREHENSIVE submission");
        return;
    }
    if (problems > 0) {
        reply_invalid(req, "Invalid tax documentation", issues);
        return;
    }
    json_decref(issues);
    store_conn_t *db = NULL;
    if (form != TAXDOCS_TYPE_COUNT && (int)c.type != form)
        refuse_form(req, c.type, form);
    else
        db = api_db(req);
    char id[STORE_UUID_LEN];
    if (db != NULL) {
        taxdocs_submission_t s = {.tin_key = api_ctx(req)->tin_key,
                                  .tenant_id = req->claims.tenant_id,
                                  .owner_uuid = o->uuid,
                                  .type = c.type,
                                  .body = c.native,
                                  .now = now,
                                  .source = source,
                                  .comprehensive_body = body,
                                  .comprehensive = &c};
        if (api_found(req, taxdocs_submit(db, &s, id), OWNER, owner_label(o))) {
            api_wake_engines(req); /* the status event, and a W-9's TIN check */
            answer_submitted(req, id, &c, now);
        }
    }
    taxdocs_comprehensive_clear(&c);
}

/* ?questionnaire= and ?unmask= of a submissions GET; false after answering. */
static bool submissions_query(request_t *req, bool required, const char **questionnaire,
                              bool *unmask)
{
    bool malformed = false;
    *questionnaire = request_query(req, "questionnaire", &malformed);
    const char *u = request_query(req, "unmask", &malformed);
    json_t *issues = json_array();
    if (*questionnaire == NULL ? required
                               : strcmp(*questionnaire, "DPS") != 0 &&
                                     strcmp(*questionnaire, "W-FORM") != 0) {
        json_t *path = json_pack("[s]", "questionnaire");
        json_array_append_new(issues, v_issue("invalid_value", path,
                                              "Invalid option: expected one of \"DPS\"|\"W-FORM\"",
                                              NULL));
        json_decref(path);
    }
    if (u != NULL && strcmp(u, "true") != 0 && strcmp(u, "false") != 0) {
        json_t *path = json_pack("[s]", "unmask");
        json_array_append_new(issues, v_issue("invalid_type", path,
                                              "Invalid input: expected boolean", NULL));
        json_decref(path);
    }
    if (!api_query_ok(req, malformed, issues))
        return false;
    *unmask = u != NULL && strcmp(u, "true") == 0;
    if (*unmask && !is_owner_token(req)) {
        reply_error(req, 403, "unmask=true is answered only to the account owner's own token");
        return false;
    }
    return true;
}

static bool in_questionnaire(const store_taxdoc_t *row, const char *questionnaire)
{
    bool w_form = strcmp(row->document_type, "W-9") == 0 ||
                  strcmp(row->document_type, "W-8BEN") == 0 ||
                  strcmp(row->document_type, "W-8BEN-E") == 0;
    bool dps = strcmp(row->document_type, "DPS") == 0;
    if (questionnaire == NULL)
        return w_form || dps;
    return strcmp(questionnaire, "W-FORM") == 0 ? w_form : dps;
}

/* The submission as answered: Taxbit's model, masked unless unmask; the
 * server-side routes add its id and time. NULL after answering. */
static json_t *submission_json(request_t *req, store_conn_t *db, const store_taxdoc_t *row,
                               bool unmask, bool wrapped)
{
    taxdocs_document_t d;
    store_status_t rc =
        taxdocs_document_open(db, api_ctx(req)->tin_key, req->claims.tenant_id, row->id, &d);
    json_t *doc = rc == STORE_OK ? json_incref(d.comprehensive) : NULL;
    taxdocs_document_close(&d);
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return NULL;
    }
    if (!unmask)
        taxdocs_comprehensive_mask(doc);
    if (wrapped && (json_object_set_new(doc, "id", json_string(row->id)) != 0 ||
                    json_object_set_new(doc, "created_at", jsonval_time(row->created_at)) != 0)) {
        json_decref(doc);
        api_internal_error(req, "tax documentation: out of memory building the answer");
        return NULL;
    }
    return doc;
}

void taxbit_reply_submissions(request_t *req, const taxbit_owner_t *o, bool questionnaire_required)
{
    const char *questionnaire = NULL;
    bool unmask = false;
    if (!submissions_query(req, questionnaire_required, &questionnaire, &unmask))
        return;
    store_conn_t *db = api_db(req);
    store_taxdoc_t *rows = NULL;
    size_t count = 0;
    if (db == NULL || !current_rows(req, db, o, &rows, &count))
        return;
    json_t *data = json_array();
    for (size_t i = 0; data != NULL && i < count; i++) {
        if (!in_questionnaire(&rows[i], questionnaire))
            continue;
        json_t *doc = submission_json(req, db, &rows[i], unmask, o->wrapped);
        if (doc == NULL) {
            json_decref(data);
            return;
        }
        json_array_append_new(data, doc);
    }
    reply_header(req, "cache-control", "no-store");
    if (data == NULL)
        api_internal_error(req, "tax documentation: out of memory building the answer");
    else
        reply_data(req, 200, data); /* the SDK reads {"data": [...]} here too */
}

/* ---- documents (PDFs) */

/* The signature date as printed: an SDK's "2026-11-25T03:01:36.705Z" as
 * "2026-11-25 03:01:36 UTC"; a native date as it is. */
static const char *printed_date(request_t *req, const char *signed_at)
{
    if (signed_at == NULL || strlen(signed_at) < 20 || signed_at[10] != 'T' ||
        signed_at[strlen(signed_at) - 1] != 'Z')
        return signed_at;
    const char *text = arena_sprintf(req->arena, "%.10s %.8s UTC", signed_at, signed_at + 11);
    return text != NULL ? text : signed_at;
}

/* Draws the PDF of submission doc_id of tenant_id into *pdf (malloc'd);
 * *type_name receives its form's name. false after answering. */
static bool render(request_t *req, store_conn_t *db, const char *tenant_id, const char *doc_id,
                   uint8_t **pdf, size_t *len, const char **type_name)
{
    taxdocs_document_t d;
    store_status_t rc = taxdocs_document_open(db, api_ctx(req)->tin_key, tenant_id, doc_id, &d);
    if (rc != STORE_OK) {
        taxdocs_document_close(&d);
        reply_store_failure(req, rc);
        return false;
    }
    const json_t *dated = d.signature[0] != '\0' ? d.comprehensive : d.native;
    taxdocs_pdf_input_t in = {
        .type = d.type,
        .native = d.native,
        .signature = d.signature,
        .signed_at = printed_date(req, json_string_value(json_object_get(dated, "signature_date"))),
        .document_id = doc_id,
    };
    const char *font = api_ctx(req)->pdf_font ? api_ctx(req)->pdf_font : TAXDOCS_PDF_DEFAULT_FONT;
    int drawn = taxdocs_pdf_render(font, &in, pdf, len);
    *type_name = taxdocs_type_name(d.type);
    taxdocs_document_close(&d);
    if (drawn != 0) {
        api_internal_error(req, "tax documentation: drawing the PDF");
        return false;
    }
    return true;
}

static const store_taxdoc_t *current_w_form(const store_taxdoc_t *rows, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (in_questionnaire(&rows[i], "W-FORM"))
            return &rows[i];
    return NULL;
}

static store_status_t insert_file(store_conn_t *db, const void *arg)
{
    return store_taxdoc_file_insert_in_tx(db, arg);
}

void taxbit_reply_document_create(request_t *req, const taxbit_owner_t *o)
{
    if (req->body_len > 0 && request_json(req, true) == NULL)
        return; /* a body is not needed; a malformed one is still refused */
    store_conn_t *db = api_db(req);
    store_taxdoc_t *rows = NULL;
    size_t count = 0;
    if (db == NULL || !current_rows(req, db, o, &rows, &count))
        return;
    const store_taxdoc_t *w = current_w_form(rows, count);
    if (w == NULL) {
        reply_error(req, 404, "No W-9, W-8BEN or W-8BEN-E is on file for this account owner");
        return;
    }
    if (strcmp(w->data_collection_status, "COMPLETE") != 0) {
        reply_error(req, 409, "The %s on file is incomplete: submit it again first",
                    w->document_type);
        return;
    }
    uint8_t *pdf = NULL;
    size_t len = 0;
    const char *type_name = NULL;
    if (!render(req, db, req->claims.tenant_id, w->id, &pdf, &len, &type_name))
        return; /* drawn once now, so that FINISHED is true */
    free(pdf);
    store_taxdoc_file_t f = {.created_at = api_now_ms(req)};
    snprintf(f.tenant_id, sizeof f.tenant_id, "%s", req->claims.tenant_id);
    snprintf(f.owner_uuid, sizeof f.owner_uuid, "%s", o->uuid);
    snprintf(f.document_id, sizeof f.document_id, "%s", w->id);
    if (ids_uuid_v4(f.id) != 0) {
        api_internal_error(req, "uuid generation");
        return;
    }
    store_status_t rc = store_write(db, insert_file, &f);
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    answer(req, 201, json_pack("{s:s, s:s, s:s}", "id", f.id, "status", "FINISHED", "type",
                               type_name),
           o->wrapped);
}

void taxbit_reply_document_get(request_t *req, const taxbit_owner_t *o)
{
    const char *id = request_param(req, "documentId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_taxdoc_file_t f;
    store_status_t rc = store_taxdoc_file_get(db, id, &f);
    if (rc == STORE_OK && (strcmp(f.tenant_id, req->claims.tenant_id) != 0 ||
                           strcmp(f.owner_uuid, o->uuid) != 0))
        rc = STORE_NOT_FOUND; /* another owner's document is not found, alike */
    if (!api_found(req, rc, DOCUMENT, id))
        return;
    const api_context_t *ctx = api_ctx(req);
    char url[REPORT_LINK_MAX];
    int64_t expires_s = 0;
    if (report_link_make_at(ctx->links_key, ctx->base_url, DOCUMENT_COLLECTION, f.id,
                            api_now_s(req), url, sizeof url, &expires_s) != 0) {
        api_internal_error(req, "tax documentation: making a download link");
        return;
    }
    answer(req, 200, json_pack("{s:s, s:s, s:s, s:o}", "id", f.id, "status", "FINISHED", "url",
                               url, "url_expires_at", jsonval_time(expires_s * 1000)),
           o->wrapped);
}

/* GET /v1/tax-documentation/document/{documentId}/download: the link is the
 * credential (no token), verified before the database is touched. */
void api_tax_documentation_download(request_t *req)
{
    if (!api_link_ok(req, "documentId"))
        return;
    const char *id = request_param(req, "documentId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_taxdoc_file_t f;
    if (!api_found(req, store_taxdoc_file_get(db, id, &f), DOCUMENT, id))
        return;
    uint8_t *pdf = NULL;
    size_t len = 0;
    const char *type_name = NULL;
    if (!render(req, db, f.tenant_id, f.document_id, &pdf, &len, &type_name))
        return;
    char *disposition = arena_sprintf(req->arena, "attachment; filename=\"%s-%s.pdf\"",
                                      type_name, f.id);
    if (disposition != NULL)
        reply_header(req, "content-disposition", disposition);
    reply_header(req, "cache-control", "no-store");
    reply_text(req, 200, "application/pdf", (char *)pdf, len);
}
