/* tax_documentation_data: Taxbit's server-side tax-documentation routes
 * (issue 19), with a tenant token (or the owner's own owner token):
 *
 *   POST /v1/account-owners/{accountOwnerId}/tax-documentation-data/{w-9|w-8ben|w-8ben-e|self-certification}
 *   GET  /v1/account-owners/{accountOwnerId}/tax-documentation-data        latest per questionnaire
 *   GET  /v1/account-owners/{accountOwnerId}/tax-documentation-status      Taxbit's status
 *   POST /v1/account-owners/{accountOwnerId}/tax-documentation-data/document
 *   GET  /v1/account-owners/{accountOwnerId}/tax-documentation-data/document/{documentId}
 *
 * The body of a POST is Taxbit's COMPREHENSIVE model, as the SDK sends it;
 * the path's form must be the one its answers derive (self-certification is
 * the DPS questionnaire). Answers use taxd's {"data": ...} envelope. The
 * same submissions are read and written by .../tax-documentation. */
#include "api/api.h"
#include "api/taxbit.h"
#include "store/owners.h"

/* The path's owner, or false after answering 404 / 5xx. */
static bool path_owner(request_t *req, char uuid[STORE_UUID_LEN], taxbit_owner_t *o)
{
    const char *id = request_param(req, "accountOwnerId");
    store_conn_t *db = api_db(req);
    if (db == NULL ||
        !api_found(req, store_owner_uuid(db, req->claims.tenant_id, id, uuid), "Account owner",
                   id))
        return false;
    *o = (taxbit_owner_t){.uuid = uuid, .label = id, .wrapped = true};
    return true;
}

static void submit(request_t *req, int form)
{
    char uuid[STORE_UUID_LEN];
    taxbit_owner_t o;
    if (path_owner(req, uuid, &o))
        taxbit_reply_submit(req, &o, form, "tax-documentation-data");
}

void api_tdd_submit_w9(request_t *req) { submit(req, TAXDOCS_W9); }
void api_tdd_submit_w8ben(request_t *req) { submit(req, TAXDOCS_W8BEN); }
void api_tdd_submit_w8bene(request_t *req) { submit(req, TAXDOCS_W8BENE); }
void api_tdd_submit_self_certification(request_t *req) { submit(req, TAXDOCS_DPS); }

void api_tdd_data_get(request_t *req)
{
    char uuid[STORE_UUID_LEN];
    taxbit_owner_t o;
    if (path_owner(req, uuid, &o))
        taxbit_reply_submissions(req, &o, false);
}

void api_tdd_status_get(request_t *req)
{
    char uuid[STORE_UUID_LEN];
    taxbit_owner_t o;
    if (path_owner(req, uuid, &o))
        taxbit_reply_status(req, &o);
}

void api_tdd_document_create(request_t *req)
{
    char uuid[STORE_UUID_LEN];
    taxbit_owner_t o;
    if (path_owner(req, uuid, &o))
        taxbit_reply_document_create(req, &o);
}

void api_tdd_document_get(request_t *req)
{
    char uuid[STORE_UUID_LEN];
    taxbit_owner_t o;
    if (path_owner(req, uuid, &o))
        taxbit_reply_document_get(req, &o);
}
