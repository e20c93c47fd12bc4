/* tax_documentation_data: Taxbit's server-side tax documentation routes
 * (issue 19). Being built: every handler answers 501 until its part lands. */
#include "api/api.h"

static void not_yet(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_tdd_submit_w9(request_t *req) { not_yet(req); }
void api_tdd_submit_w8ben(request_t *req) { not_yet(req); }
void api_tdd_submit_w8bene(request_t *req) { not_yet(req); }
void api_tdd_submit_self_certification(request_t *req) { not_yet(req); }
void api_tdd_data_get(request_t *req) { not_yet(req); }
void api_tdd_status_get(request_t *req) { not_yet(req); }
void api_tdd_document_create(request_t *req) { not_yet(req); }
void api_tdd_document_get(request_t *req) { not_yet(req); }
