/* taxbit_sdk: the routes Taxbit's React SDK calls (issue 19). Being built:
 * every handler answers 501 until its part lands. */
#include "api/api.h"

static void not_yet(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_sdk_status_get(request_t *req) { not_yet(req); }
void api_sdk_submission_create(request_t *req) { not_yet(req); }
void api_sdk_submissions_get(request_t *req) { not_yet(req); }
void api_sdk_document_create(request_t *req) { not_yet(req); }
void api_sdk_document_get(request_t *req) { not_yet(req); }
void api_tax_documentation_download(request_t *req) { not_yet(req); }
