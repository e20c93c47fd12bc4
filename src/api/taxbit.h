/* taxbit: what Taxbit's two sets of tax-documentation routes share (issue 19).
 * The SDK's routes (api/taxbit_sdk.c) name the owner by an owner token and
 * answer unwrapped, as the SDK reads them; the server-side routes
 * (api/tax_documentation_data.c) name it in the path and answer in taxd's
 * {"data": ...} envelope. Both store into, and read from, the same
 * submissions as POST/GET .../tax-documentation. Private to api/. */
#ifndef TAXD_API_TAXBIT_H
#define TAXD_API_TAXBIT_H

#include <stdbool.h>

#include "http/request.h"
#include "taxdocs/model.h"

/* The owner a request is about. */
typedef struct taxbit_owner {
    const char *uuid;    /* the owner's uuid */
    const char *label;   /* what a 404 names: the caller's id, or "" for the token's owner */
    bool wrapped;        /* answer {"data": ...} (server-side) or unwrapped (SDK) */
} taxbit_owner_t;

/* GET status: Taxbit's status object (taxdocs/taxbit_map.h). */
void taxbit_reply_status(request_t *req, const taxbit_owner_t *o);

/* POST a COMPREHENSIVE submission. `form` restricts the derived form
 * (TAXDOCS_W9, TAXDOCS_W8BEN, TAXDOCS_W8BENE, TAXDOCS_DPS), or is
 * TAXDOCS_TYPE_COUNT for any (the SDK's route). */
void taxbit_reply_submit(request_t *req, const taxbit_owner_t *o, int form, const char *source);

/* GET the latest submission per questionnaire (?questionnaire=DPS|W-FORM,
 * required when `questionnaire_required`), masked unless ?unmask=true on an
 * owner token. */
void taxbit_reply_submissions(request_t *req, const taxbit_owner_t *o,
                              bool questionnaire_required);

/* POST document: makes the PDF of the owner's current W-form (201 FINISHED),
 * 404 when none is on file, 409 when it is INCOMPLETE. */
void taxbit_reply_document_create(request_t *req, const taxbit_owner_t *o);

/* GET document/{documentId}: FINISHED with a fresh signed download link. */
void taxbit_reply_document_get(request_t *req, const taxbit_owner_t *o);

#endif
