/* taxbit_sdk: the routes Taxbit's React SDK calls (issue 19), exactly as it
 * calls and reads them (docs/taxbit-sdk.md § 1.2):
 *
 *   GET  /v1/tax-documentation-status                  Taxbit's status, unwrapped
 *   POST /v1/tax-documentation/submissions             a COMPREHENSIVE submission -> 201
 *   GET  /v1/tax-documentation/submissions?questionnaire=DPS|W-FORM&unmask=true
 *   POST /v1/tax-documentation/document                the current W-form's PDF -> 201 FINISHED
 *   GET  /v1/tax-documentation/document/{documentId}   FINISHED and a signed url
 *
 * Only an account-owner token reaches them (the gateway refuses a tenant
 * token: ROUTE_OWNER_ONLY), and the owner is the token's. The work is in
 * api/taxbit.c, shared with the server-side routes. */
#include "api/api.h"
#include "api/taxbit.h"

static taxbit_owner_t token_owner(const request_t *req)
{
    return (taxbit_owner_t){.uuid = req->claims.owner_uuid, .label = "", .wrapped = false};
}

void api_sdk_status_get(request_t *req)
{
    taxbit_owner_t o = token_owner(req);
    taxbit_reply_status(req, &o);
}

void api_sdk_submission_create(request_t *req)
{
    taxbit_owner_t o = token_owner(req);
    taxbit_reply_submit(req, &o, TAXDOCS_TYPE_COUNT, "sdk");
}

void api_sdk_submissions_get(request_t *req)
{
    taxbit_owner_t o = token_owner(req);
    taxbit_reply_submissions(req, &o, true);
}

void api_sdk_document_create(request_t *req)
{
    taxbit_owner_t o = token_owner(req);
    taxbit_reply_document_create(req, &o);
}

void api_sdk_document_get(request_t *req)
{
    taxbit_owner_t o = token_owner(req);
    taxbit_reply_document_get(req, &o);
}
