/* store/taxdocs: account owners' tax documentation. Every submission is
 * kept (its id is the tax_documentation_id); for each owner and object of
 * its state (the slot a document type fills, named by taxdocs/) one
 * submission is current, the latest. The store keeps rows: it knows the
 * columns, not the document types' rules, which taxdocs/ applies before
 * writing and after reading (taxdocs/record.h converts). The document as
 * submitted arrives sealed by the caller (it holds TINs), and a W-9's TIN
 * sealed on its own; the store never sees a clear TIN. Every function runs
 * inside a write transaction (store_write) except store_taxdoc_current. */
#ifndef TAXD_STORE_TAXDOCS_H
#define TAXD_STORE_TAXDOCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_TAXDOC_TYPE_MAX 24     /* document_type as on the wire: "W-8BEN-E", ... */
#define STORE_TAXDOC_STATUS_MAX 33   /* every status text */
#define STORE_TAXDOC_ISSUES_MAX 8192 /* the issues array as compact JSON */
#define STORE_TAXDOC_DATE_LEN 11     /* YYYY-MM-DD plus the NUL */
#define STORE_TAXDOC_CURRENT_MAX 3   /* objects of an owner's state: one current each */
#define STORE_TAXDOC_WORD_MAX 32     /* model, source, questionnaire, tin_type, vat_note */

/* One submission as stored. Text that does not belong to its document type
 * is "" and times that do not are 0 (NULL in the table). */
typedef struct store_taxdoc {
    char id[STORE_UUID_LEN];         /* the tax_documentation_id */
    char owner_uuid[STORE_UUID_LEN];
    char document_type[STORE_TAXDOC_TYPE_MAX];
    char data_collection_status[STORE_TAXDOC_STATUS_MAX];
    bool needs_resubmission;
    char tax_documentation_status[STORE_TAXDOC_STATUS_MAX];
    char issues[STORE_TAXDOC_ISSUES_MAX]; /* "" when none is stored */
    char tin_status[STORE_TAXDOC_STATUS_MAX];
    int64_t tin_validated_at;
    char expiration_date[STORE_TAXDOC_DATE_LEN];
    char treaty_claim_status[STORE_TAXDOC_STATUS_MAX];
    char vat_status[STORE_TAXDOC_STATUS_MAX];
    int64_t vat_validated_at;
    int64_t created_at;
    /* Since schema v15 (issue 19); rows written before have "" (NULL) and
     * model "native". */
    char model[STORE_TAXDOC_WORD_MAX];   /* which JSON document_sealed holds: native | comprehensive */
    char source[STORE_TAXDOC_WORD_MAX];  /* api | sdk | tax-documentation-data ("" before v15) */
    char questionnaire[STORE_TAXDOC_WORD_MAX]; /* DPS | W-FORM | "" (native self-certification) */
    char tin_type[STORE_TAXDOC_WORD_MAX];      /* W-9: SSN, EIN, ITIN, ATIN; "" before v15 */
    char vat_note[STORE_TAXDOC_WORD_MAX];      /* DPS: NOT_REQUIRED | NON_EU | "" */
} store_taxdoc_t;

typedef struct store_taxdoc_new {
    const char *tenant_id;
    const store_taxdoc_t *doc;
    const char *object;              /* the owner's object it becomes current for */
    const uint8_t *document_sealed;  /* the submitted document, sealed */
    size_t document_sealed_len;
    const uint8_t *tin_sealed;       /* W-9: its TIN (core/tin.h); else NULL */
    size_t tin_sealed_len;
} store_taxdoc_new_t;

/* Inserts the submission and makes it the owner's current one for its
 * object. STORE_NOT_FOUND when the owner or tenant does not exist. */
store_status_t store_taxdoc_insert_in_tx(store_conn_t *conn, const store_taxdoc_new_t *n);

/* The owner's current submissions, one per object on file, into
 * out[0 .. *count - 1] (in no particular order). An owner with nothing on
 * file is STORE_OK with *count 0. */
store_status_t store_taxdoc_current_in_tx(store_conn_t *conn, const char *tenant_id,
                                          const char *owner_uuid,
                                          store_taxdoc_t out[STORE_TAXDOC_CURRENT_MAX],
                                          size_t *count);
/* The same as a read outside any transaction (GET). */
store_status_t store_taxdoc_current(store_conn_t *conn, const char *tenant_id,
                                    const char *owner_uuid,
                                    store_taxdoc_t out[STORE_TAXDOC_CURRENT_MAX],
                                    size_t *count);

/* Submission id of the tenant into *out, whether it is its owner's current
 * one (*is_current) and the owner's caller id. STORE_NOT_FOUND when the
 * tenant has no such submission. */
store_status_t store_taxdoc_get_in_tx(store_conn_t *conn, const char *tenant_id, const char *id,
                                      store_taxdoc_t *out, bool *is_current,
                                      char owner_id[STORE_ID_MAX]);

/* Writes doc's TIN result and what follows from it (tin_status,
 * tin_validated_at, issues, needs_resubmission, tax_documentation_status)
 * on a W-9. STORE_NOT_FOUND when the tenant has no such W-9. */
store_status_t store_taxdoc_set_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                                 const store_taxdoc_t *doc);

/* Submission id of the tenant with its sealed document and sealed W-9 TIN
 * (*tin NULL and *tin_len 0 when it has none), outside any transaction.
 * *doc and *tin are malloc'd (caller frees). STORE_NOT_FOUND when the tenant
 * has no such submission. */
store_status_t store_taxdoc_sealed(store_conn_t *conn, const char *tenant_id, const char *id,
                                   store_taxdoc_t *out, uint8_t **doc, size_t *doc_len,
                                   uint8_t **tin, size_t *tin_len);

/* ---- documents (PDFs) made of a submission: tax_documentation_files.
 * A row records that a document was made; its bytes are drawn again from the
 * sealed submission at each download, so no TIN is stored in clear. */

typedef struct store_taxdoc_file {
    char id[STORE_UUID_LEN];
    char tenant_id[STORE_ID_MAX];
    char owner_uuid[STORE_UUID_LEN];
    char document_id[STORE_UUID_LEN];   /* the tax_documentation_id it shows */
    int64_t created_at;
} store_taxdoc_file_t;

/* Inserts a file row (f->id chosen by the caller). STORE_NOT_FOUND when the
 * tenant has no such submission or it is not the owner's. */
store_status_t store_taxdoc_file_insert_in_tx(store_conn_t *conn, const store_taxdoc_file_t *f);

/* The file row with this id, whatever its tenant (the download's signed link
 * carries no tenant), outside any transaction. STORE_NOT_FOUND when none. */
store_status_t store_taxdoc_file_get(store_conn_t *conn, const char *id, store_taxdoc_file_t *out);

#endif
