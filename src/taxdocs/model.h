/* taxdocs/model: tax documentation as a pure module (no SQL, no HTTP, no
 * clock: "now" is an argument). It knows the five document types, checks a
 * submission against its type's schema (hard rules: a 400), assesses an
 * accepted one (soft problems become `issues` that make it need a
 * resubmission), derives the dated fields (W-8 and DPS expiration, VAT
 * status) and builds the state objects that GET .../tax-documentation and
 * the ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS event both answer.
 *
 * Every allowed value is listed in docs/decisions.md § Tax documentation. */
#ifndef TAXD_TAXDOCS_MODEL_H
#define TAXD_TAXDOCS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef enum taxdocs_type {
    TAXDOCS_W9,
    TAXDOCS_W8BEN,
    TAXDOCS_W8BENE,
    TAXDOCS_DPS,
    TAXDOCS_SELF_CERT,
} taxdocs_type_t;
#define TAXDOCS_TYPE_COUNT 5

/* The three objects of an owner's state; one submission of each is current. */
typedef enum taxdocs_object {
    TAXDOCS_OBJ_W_FORM, /* w_form_questionnaire: the latest W-9 or W-8 */
    TAXDOCS_OBJ_DPS,    /* dps_questionnaire */
    TAXDOCS_OBJ_SELF,   /* self_certification */
} taxdocs_object_t;
#define TAXDOCS_OBJECT_COUNT 3

#define TAXDOCS_STATUS_MAX 33   /* status texts; an opaque TIN status is cut to 32 bytes */
#define TAXDOCS_ISSUES_MAX 8192 /* the issues array as compact JSON (bounded by the schemas) */
#define TAXDOCS_DATE_LEN 11     /* YYYY-MM-DD plus the NUL */

/* What one submission contributes to the owner's state. Fields that do not
 * belong to its type are "" / 0 and are never answered. */
typedef struct taxdocs_state {
    taxdocs_type_t type;
    char data_collection_status[TAXDOCS_STATUS_MAX]; /* COMPLETE | INCOMPLETE */
    bool needs_resubmission;
    char tax_documentation_status[TAXDOCS_STATUS_MAX]; /* VALID | INVALID */
    char issues[TAXDOCS_ISSUES_MAX];                   /* JSON array, "[]" when none */
    char tin_status[TAXDOCS_STATUS_MAX];               /* W-9: PENDING, then the result */
    int64_t tin_validated_at;                          /* W-9: ms; 0 until validated */
    char expiration_date[TAXDOCS_DATE_LEN];            /* W-8 and DPS */
    char treaty_claim_status[TAXDOCS_STATUS_MAX];      /* W-8: NOT_CLAIMED | VALID | INVALID */
    char vat_status[TAXDOCS_STATUS_MAX];               /* DPS: NOT_PROVIDED | VALID | INVALID */
    int64_t vat_validated_at;                          /* DPS: ms; 0 when not validated */
} taxdocs_state_t;

/* Names on the wire: "W-9", "W-8BEN", "W-8BEN-E", "DPS", "SELF_CERTIFICATION". */
const char *taxdocs_type_name(taxdocs_type_t type);
bool taxdocs_type_parse(const char *name, taxdocs_type_t *out);
taxdocs_object_t taxdocs_object_of(taxdocs_type_t type);
/* "w_form_questionnaire", "dps_questionnaire", "self_certification". */
const char *taxdocs_object_name(taxdocs_object_t object);
bool taxdocs_object_parse(const char *name, taxdocs_object_t *out);

/* The message of a country code that has the shape of one (two capital
 * letters) but is not an assigned ISO 3166-1 alpha-2 code. */
#define TAXDOCS_COUNTRY_NOT_ISO "Invalid country code: not an ISO 3166-1 alpha-2 country"

/* A date of birth is at most this many years back (by year difference,
 * UTC), as in Taxbit's client. There is deliberately no minimum age: the
 * client never applies one (docs/decisions.md). */
#define TAXDOCS_BIRTH_YEARS_MAX 120

/* The 120-year rule on object's `key` (a YYYY-MM-DD date): appends one
 * "custom" issue on [key] ("<key> cannot be more than 120 years ago") and
 * returns 1 when the year difference to now (UTC) is over
 * TAXDOCS_BIRTH_YEARS_MAX; returns 0 and leaves absent or malformed values
 * to the schema. Call it after v_check_birth_date found nothing, so a date
 * gets one issue. Owners' birth_date uses it too: one rule for every date
 * of birth (it belongs beside v_check_birth_date in core/validate.c). */
size_t taxdocs_check_birth_years(const json_t *object, const char *key, int64_t now,
                                 json_t *issues);

/* Checks a submission body (any JSON value) against the schema of its
 * document_type and the rules a schema cannot state (dates not in the
 * future or more than 120 years back, a W-9 TIN of nine digits, ISO
 * country codes, treaty rates). Appends
 * issues in the validation shape (core/validate.h) to `issues` and returns
 * how many; *type is set when document_type itself is valid. No issue
 * message quotes a submitted value. */
size_t taxdocs_check(const json_t *body, int64_t now, json_t *issues, taxdocs_type_t *type);

/* Derives the state of a submission that passed taxdocs_check at `now`.
 * Returns 0, or -1 when memory ran out or the issues do not fit. */
int taxdocs_assess(taxdocs_type_t type, const json_t *body, int64_t now, taxdocs_state_t *out);

/* A W-9's TIN result (PENDING, VALID, INVALID_FORMAT, MISMATCH, or any other
 * string, kept opaque): sets tin_status and tin_validated_at; INVALID_FORMAT
 * and MISMATCH add an issue (TIN_INVALID_FORMAT, TIN_MISMATCH) created at
 * validated_at, so the W-9 needs resubmission; the latest result replaces
 * an earlier result's issue. Returns 0, or -1 when st is
 * not a W-9 or the issues do not fit. */
int taxdocs_apply_tin_result(taxdocs_state_t *st, const char *status, int64_t validated_at);

/* One state object as answered (new reference, NULL on failure): the fields
 * of its object in the spec's order, W-9-only and W-8-only fields only for
 * their forms, tin_validation_date and vat_validation_date only once set. */
json_t *taxdocs_object_json(const taxdocs_state_t *st);

/* The owner's state: {"account_owner_id": owner_uuid, then each object on
 * file}. objects[i] is the current submission of taxdocs_object_t i, or
 * NULL when none is on file (the key is then absent). New reference, or
 * NULL on failure. Used by both the GET and the status event. */
json_t *taxdocs_status_json(const char *owner_uuid,
                            const taxdocs_state_t *const objects[TAXDOCS_OBJECT_COUNT]);

/* The end of the third calendar year after signed_on (YYYY-MM-DD): signed
 * 2024-05-10 expires 2027-12-31. false when signed_on is not a date. */
bool taxdocs_expiration_date(const char *signed_on, char out[TAXDOCS_DATE_LEN]);

/* Whether vat (an EU VAT number with its country prefix, e.g. DE123456789;
 * spaces, dots and dashes ignored) has the structure of its country. */
bool taxdocs_vat_number_valid(const char *vat);

#endif
