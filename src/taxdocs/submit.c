/* taxdocs/submit: see submit.h.
 *
 * Sealing. A W-9's TIN is sealed twice with tin_seal: once for the
 * submission (associated data: tenant id + tax_documentation_id), kept with
 * it, and once for its TIN check (tenant id + the check's id), as the TIN
 * engine opens it. The rest of the document may hold TINs too (foreign TINs,
 * TINs per jurisdiction), so it is stored sealed as a whole (AES-256-GCM
 * under the same key, associated data "taxdoc:<tenant>:<id>"): every
 * submission is kept, none of it readable from the database file alone.
 *
 * Every accepted submission changes the owner's state (a new current
 * submission, issues created at its time), so every one emits a status
 * event, also when it repeats the previous one field for field. */
#include "taxdocs/submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/log.h"
#include "core/tin.h"
#include "store/events.h"
#include "store/taxdocs.h"
#include "store/tinchecks.h"
#include "taxdocs/record.h"

/* ---- the owner's state */

/* The current rows as the model's objects: objects[o] points into states
 * for each object o on file, NULL otherwise. false (logged) for a row this
 * build did not write: an unknown type, or two current for one object. */
static bool place_current(const store_taxdoc_t *rows, size_t count,
                          taxdocs_state_t states[TAXDOCS_OBJECT_COUNT],
                          const taxdocs_state_t *objects[TAXDOCS_OBJECT_COUNT])
{
    for (int i = 0; i < TAXDOCS_OBJECT_COUNT; i++)
        objects[i] = NULL;
    for (size_t i = 0; i < count; i++) {
        taxdocs_type_t type;
        if (!taxdocs_type_parse(rows[i].document_type, &type) ||
            objects[taxdocs_object_of(type)] != NULL) {
            log_event(LOG_ERROR, "tax documentation: a stored submission does not fit",
                      json_pack("{s:s}", "tax_documentation_id", rows[i].id));
            return false;
        }
        taxdocs_object_t o = taxdocs_object_of(type);
        taxdocs_record_to_state(&rows[i], &states[o]);
        objects[o] = &states[o];
    }
    return true;
}

typedef struct current {
    store_taxdoc_t rows[STORE_TAXDOC_CURRENT_MAX];
    taxdocs_state_t states[TAXDOCS_OBJECT_COUNT];
} current_t;

static store_status_t status_json_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const char *owner_uuid, bool in_tx, json_t **out)
{
    current_t *c = malloc(sizeof *c); /* ~50 KiB: kept off small thread stacks */
    if (c == NULL)
        return STORE_ERROR;
    size_t count = 0;
    store_status_t st = in_tx ? store_taxdoc_current_in_tx(conn, tenant_id, owner_uuid, c->rows,
                                                           &count)
                              : store_taxdoc_current(conn, tenant_id, owner_uuid, c->rows, &count);
    const taxdocs_state_t *objects[TAXDOCS_OBJECT_COUNT];
    if (st == STORE_OK && !place_current(c->rows, count, c->states, objects))
        st = STORE_ERROR;
    if (st == STORE_OK) {
        *out = taxdocs_status_json(owner_uuid, objects);
        if (*out == NULL)
            st = STORE_ERROR;
    }
    free(c);
    return st;
}

store_status_t taxdocs_status_get(store_conn_t *conn, const char *tenant_id,
                                  const char *owner_uuid, json_t **out)
{
    return status_json_in_tx(conn, tenant_id, owner_uuid, false, out);
}

store_status_t taxdocs_status_event_in_tx(store_conn_t *conn, const char *tenant_id,
                                          const char *owner_uuid, int64_t now)
{
    json_t *status = NULL;
    store_status_t st = status_json_in_tx(conn, tenant_id, owner_uuid, true, &status);
    if (st == STORE_OK)
        st = store_event_append_in_tx(conn, tenant_id, "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS",
                                      status, now);
    json_decref(status);
    return st;
}

/* ---- a submission */

typedef struct submit_tx {
    const taxdocs_submission_t *s;
    store_taxdoc_new_t row;
    store_tin_check_new_t check; /* W-9 only (check.id != NULL) */
} submit_tx_t;

static store_status_t submit_in_tx(store_conn_t *conn, const void *arg)
{
    const submit_tx_t *t = arg;
    store_status_t st = store_taxdoc_insert_in_tx(conn, &t->row);
    if (st == STORE_OK && t->check.id != NULL)
        st = store_tin_check_enqueue_in_tx(conn, &t->check);
    if (st == STORE_OK)
        st = taxdocs_status_event_in_tx(conn, t->s->tenant_id, t->s->owner_uuid, t->s->now);
    return st;
}

/* The document as kept: the body without the W-9's TIN (sealed apart),
 * compact JSON sealed under the TIN key. *sealed is malloc'd (caller frees). */
static int seal_document(const taxdocs_submission_t *s, const char *id, uint8_t **sealed,
                         size_t *sealed_len)
{
    json_t *copy = json_deep_copy(s->comprehensive_body ? s->comprehensive_body : s->body);
    if (copy == NULL)
        return -1;
    if (s->comprehensive_body == NULL && s->type == TAXDOCS_W9)
        json_object_del(copy, "tin");
    char *plain = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    char aad[96];
    snprintf(aad, sizeof aad, "taxdoc:%s:%s", s->tenant_id, id);
    size_t len = plain != NULL ? strlen(plain) : 0;
    *sealed = plain != NULL ? malloc(len + CRYPTO_AEAD_OVERHEAD) : NULL;
    int rc = -1;
    if (*sealed != NULL)
        rc = crypto_aead_seal(s->tin_key, aad, strlen(aad), plain, len, *sealed);
    if (plain != NULL) {
        explicit_bzero(plain, len);
        free(plain);
    }
    *sealed_len = len + CRYPTO_AEAD_OVERHEAD;
    return rc;
}

typedef struct w9_seals {
    uint8_t doc_tin[TIN_SEALED_MAX];
    size_t doc_tin_len;
    uint8_t check_tin[TIN_SEALED_MAX];
    size_t check_tin_len;
    char check_id[IDS_UUID_LEN];
} w9_seals_t;

/* Seals the W-9's TIN for the submission and for its check, and fills the
 * check. The clear TIN never leaves the body. */
static int prepare_w9(const taxdocs_submission_t *s, const char *id, w9_seals_t *w,
                      submit_tx_t *t)
{
    const char *tin = json_string_value(json_object_get(s->body, "tin"));
    if (tin == NULL || ids_uuid_v4(w->check_id) != 0 ||
        tin_seal(s->tin_key, s->tenant_id, id, tin, w->doc_tin, &w->doc_tin_len) != 0 ||
        tin_seal(s->tin_key, s->tenant_id, w->check_id, tin, w->check_tin, &w->check_tin_len) !=
            0)
        return -1;
    t->row.tin_sealed = w->doc_tin;
    t->row.tin_sealed_len = w->doc_tin_len;
    t->check = (store_tin_check_new_t){
        .id = w->check_id,
        .tenant_id = s->tenant_id,
        .kind = STORE_TIN_CHECK_TAX_DOCUMENTATION,
        .subject_id = id,
        .owner_uuid = s->owner_uuid,
        .name = json_string_value(json_object_get(s->body, "name")),
        .tin_sealed = w->check_tin,
        .tin_sealed_len = w->check_tin_len,
        .tin_type = json_string_value(json_object_get(s->body, "tin_type")),
        .now = s->now,
    };
    return t->check.name != NULL && t->check.tin_type != NULL ? 0 : -1;
}

/* The columns that say where a submission came from and which model its
 * sealed document holds (schema v15). */
static void describe_origin(const taxdocs_submission_t *s, store_taxdoc_t *row)
{
    const taxdocs_comprehensive_t *c = s->comprehensive;
    const char *native_tin_type = json_string_value(json_object_get(s->body, "tin_type"));
    snprintf(row->model, sizeof row->model, "%s", c != NULL ? "comprehensive" : "native");
    snprintf(row->source, sizeof row->source, "%s", s->source != NULL ? s->source : "api");
    snprintf(row->questionnaire, sizeof row->questionnaire, "%s", c != NULL ? c->questionnaire : "");
    snprintf(row->tin_type, sizeof row->tin_type, "%s",
             c != NULL ? c->tin_type : (s->type == TAXDOCS_W9 && native_tin_type ? native_tin_type : ""));
    snprintf(row->vat_note, sizeof row->vat_note, "%s", c != NULL ? c->vat_note : "");
}

/* A submission as the model assessed it and as the store keeps it. */
typedef struct assessed {
    taxdocs_state_t state;
    store_taxdoc_t row;
} assessed_t;

/* Assesses and seals into a / t; the caller writes them. */
static int prepare(const taxdocs_submission_t *s, assessed_t *a, w9_seals_t *w9,
                   submit_tx_t *t, uint8_t **sealed)
{
    store_taxdoc_t *row = &a->row;
    if (ids_uuid_v4(row->id) != 0 || taxdocs_assess(s->type, s->body, s->now, &a->state) != 0)
        return -1;
    taxdocs_record_from_state(&a->state, row);
    snprintf(row->owner_uuid, sizeof row->owner_uuid, "%s", s->owner_uuid);
    row->created_at = s->now;
    describe_origin(s, row);
    t->s = s;
    t->row.tenant_id = s->tenant_id;
    t->row.doc = row;
    t->row.object = taxdocs_record_object(&a->state);
    if (seal_document(s, row->id, sealed, &t->row.document_sealed_len) != 0)
        return -1;
    t->row.document_sealed = *sealed;
    return s->type == TAXDOCS_W9 ? prepare_w9(s, row->id, w9, t) : 0;
}

store_status_t taxdocs_submit(store_conn_t *conn, const taxdocs_submission_t *s,
                              char id[STORE_UUID_LEN])
{
    assessed_t *a = calloc(1, sizeof *a);
    w9_seals_t *w9 = calloc(1, sizeof *w9);
    submit_tx_t t = {0};
    uint8_t *sealed = NULL;
    store_status_t st = STORE_ERROR;
    if (a == NULL || w9 == NULL || prepare(s, a, w9, &t, &sealed) != 0)
        log_event(LOG_ERROR, "tax documentation: could not assess or seal a submission",
                  json_pack("{s:s}", "document_type", taxdocs_type_name(s->type)));
    else if ((st = store_write(conn, submit_in_tx, &t)) == STORE_OK)
        memcpy(id, a->row.id, STORE_UUID_LEN);
    free(sealed);
    free(w9);
    free(a);
    return st;
}
