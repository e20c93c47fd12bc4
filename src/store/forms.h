/* store/forms.h: tax forms (table tax_forms, migration v6). One live form
 * (not Deleted) per (account, form type, tax year), enforced by a partial
 * unique index; a Deleted form stays as history. The state machine itself is
 * src/forms/state.h: the *_in_tx functions here read and write rows inside
 * the caller's store_write, so the decision, the change and its
 * FORM_STATUS_UPDATE event commit together. Statuses are the spec's
 * spellings ("Generated", "Filed", "Deleted"); content is JSON text. */
#ifndef TAXD_STORE_FORMS_H
#define TAXD_STORE_FORMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_FORM_TYPE_MAX 32
#define STORE_FORM_STATUS_MAX 16

/* A form with its account's ids. content is malloc'd and owned by the
 * struct: release it with store_form_clear. */
typedef struct store_form {
    char id[STORE_UUID_LEN];
    char tenant_id[STORE_UUID_LEN];
    char account_uuid[STORE_UUID_LEN];
    char account_id[STORE_ID_MAX];      /* the account's caller id */
    char form_type[STORE_FORM_TYPE_MAX];
    int tax_year;
    char status[STORE_FORM_STATUS_MAX];
    char *content;
    int64_t created_at;
    int64_t generated_at;               /* the content's generation */
    int64_t filed_at;                   /* 0 unless Filed */
    int64_t deleted_at;                 /* 0 unless Deleted */
    int64_t updated_at;
    int64_t source_version;             /* the account's inventory_version the content was
                                           computed from; -1: none (not computed, or a
                                           form from before schema v13) */
    bool correction_needed;             /* Filed, and its account changed since */
} store_form_t;

/* Frees content and zeroes the struct. */
void store_form_clear(store_form_t *form);

/* The form with id form_id (any tenant: operator commands name a form by its
 * id alone). STORE_NOT_FOUND when none. out->content is the caller's. */
store_status_t store_form_get(store_conn_t *conn, const char *form_id, store_form_t *out);
store_status_t store_form_get_in_tx(store_conn_t *conn, const char *form_id, store_form_t *out);

/* The live form of (account_uuid, form_type, tax_year), or STORE_NOT_FOUND. */
store_status_t store_form_live_in_tx(store_conn_t *conn, const char *account_uuid,
                                     const char *form_type, int tax_year, store_form_t *out);

/* Inserts a Generated form (form->id, tenant_id, account_uuid, form_type,
 * tax_year, content, source_version, created_at = generated_at =
 * updated_at). STORE_CONFLICT
 * when a live form of the same key exists. */
store_status_t store_form_insert_in_tx(store_conn_t *conn, const store_form_t *form);

/* Replaces the content of a Generated form (generated_at = updated_at =
 * now) and its source_version (-1: none). STORE_NOT_FOUND when it is not
 * Generated. */
store_status_t store_form_refresh_in_tx(store_conn_t *conn, const char *form_id,
                                        const char *content, int64_t source_version,
                                        int64_t now);

/* Moves a Generated form to "Filed" or "Deleted" (stamping filed_at or
 * deleted_at and updated_at). STORE_NOT_FOUND when it is not Generated. */
store_status_t store_form_move_in_tx(store_conn_t *conn, const char *form_id,
                                     const char *to_status, int64_t now);

/* The retrievable forms (Generated and Filed) of an account for a tax year,
 * by form type: each(form, ctx) per form (the form and its content are
 * borrowed for the call); a non-zero return stops the walk. */
store_status_t store_form_list_live(store_conn_t *conn, const char *account_uuid, int tax_year,
                                    int (*each)(const store_form_t *form, void *ctx), void *ctx);

/* ---- regeneration (forms/regen.h) */

/* A Generated form whose account changed since its content was computed. */
typedef struct store_form_stale {
    char id[STORE_UUID_LEN];
    char tenant_id[STORE_UUID_LEN];
    char account_id[STORE_ID_MAX];      /* the account's caller id */
    char form_type[STORE_FORM_TYPE_MAX];
    int tax_year;
    int64_t generated_at;
} store_form_stale_t;

/* Up to `limit` Generated 1099_DA and GAIN_LOSS_SUMMARY forms whose
 * source_version differs from their account's inventory_version and whose
 * generated_at <= generated_before, oldest generation first, into out;
 * *count receives how many. */
store_status_t store_form_stale(store_conn_t *conn, int64_t generated_before, size_t limit,
                                store_form_stale_t *out, size_t *count);

/* Sets correction_needed on every Filed form whose account's
 * inventory_version moved past its source_version (one statement; the form
 * itself is not touched). *flagged receives how many were newly flagged. */
store_status_t store_form_flag_corrections(store_conn_t *conn, size_t *flagged);

#endif
