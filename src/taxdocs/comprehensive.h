/* taxdocs/comprehensive: Taxbit's COMPREHENSIVE tax-documentation model, the
 * body its React SDK submits (docs/taxbit-sdk.md § 1.3), as a pure module
 * (no SQL, no HTTP, no clock: "now" is an argument).
 *
 * taxd keeps one model of tax documentation (taxdocs/model.h): a COMPREHENSIVE
 * body is checked here with rules at least as strict as Taxbit's client
 * (§ 3), its form is derived as the SDK derives it (§ 2: W-9, W-8BEN,
 * W-8BEN-E, or DPS), and it is converted into the native document of that
 * form (§ 6.3), which then passes taxdocs_check and is assessed, stored and
 * announced like any other. The body itself is kept too (sealed), so the SDK
 * reads back exactly what it sent. The reverse conversion answers documents
 * that arrived on the native route in the SDK's shape. */
#ifndef TAXD_TAXDOCS_COMPREHENSIVE_H
#define TAXD_TAXDOCS_COMPREHENSIVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/domain.h"
#include "taxdocs/model.h"

#define TAXDOCS_QUESTIONNAIRE_MAX 8 /* "DPS", "W-FORM" */
#define TAXDOCS_TIN_TYPE_MAX 8      /* "SSN", "EIN", "ITIN", "ATIN" */
#define TAXDOCS_VAT_NOTE_MAX 16     /* "NOT_REQUIRED", "NON_EU" */

typedef struct taxdocs_comprehensive {
    taxdocs_type_t type;                          /* W9, W8BEN, W8BENE or DPS */
    char questionnaire[TAXDOCS_QUESTIONNAIRE_MAX]; /* "DPS" | "W-FORM" */
    char tin_type[TAXDOCS_TIN_TYPE_MAX];          /* W-9: the derived TIN type; else "" */
    char vat_note[TAXDOCS_VAT_NOTE_MAX];          /* DPS: "NOT_REQUIRED", "NON_EU" or "" */
    char signature[DOMAIN_NAME_SIZE];             /* W-FORM: the typed signature; else "" */
    json_t *native;  /* owned: the native document of `type`, passes taxdocs_check */
} taxdocs_comprehensive_t;

/* What taxdocs_comprehensive_check returns when the body passed every rule
 * but its conversion failed: memory ran out, or the native document did not
 * pass taxdocs_check (a bug in the conversion, never the client's fault).
 * The caller answers 500; `issues` was not touched. */
#define TAXDOCS_COMPREHENSIVE_FAILED ((size_t)-1)

/* Checks a COMPREHENSIVE body (any JSON value) at `now` (ms). Appends issues
 * in the validation shape (core/validate.h; paths are arrays of snake_case
 * keys and indexes such as ["account_holder", "tax_residences", 0, "tin"])
 * to `issues` and returns how many, or TAXDOCS_COMPREHENSIVE_FAILED (above).
 * When it returns 0, *out is filled and owns out->native (free it with
 * taxdocs_comprehensive_clear); otherwise *out holds nothing to free.
 * Unknown keys are ignored, as by the native schemas. No issue message
 * quotes a submitted value. */
size_t taxdocs_comprehensive_check(const json_t *body, int64_t now, json_t *issues,
                                   taxdocs_comprehensive_t *out);

void taxdocs_comprehensive_clear(taxdocs_comprehensive_t *c);

/* A native document of `type` (as stored, with its W-9 TIN put back) in the
 * COMPREHENSIVE model, for documents submitted on the native route. New
 * reference, or NULL when out of memory or the type has no COMPREHENSIVE
 * form (SELF_CERTIFICATION answers as a DPS questionnaire). */
json_t *taxdocs_comprehensive_from_native(taxdocs_type_t type, const json_t *native);

/* Replaces every TIN of a COMPREHENSIVE document in place (tin, ftin,
 * tax_residences[].tin, vatin, of account_holder and regarded_owner) by
 * asterisks but its last four characters ("*****6789"). */
void taxdocs_comprehensive_mask(json_t *doc);

#endif
