/* tax_documentation: an account owner's tax documentation.
 *
 *   POST /v1/account-owners/{accountOwnerId}/tax-documentation   submit a document -> 201
 *   GET  /v1/account-owners/{accountOwnerId}/tax-documentation   the owner's current state
 *
 * The owner is looked up by the caller's id within the token's tenant, so
 * another tenant's owner is not found, with the same body as an unknown one.
 * The body is checked before the owner is looked up (taxdocs/model.h says
 * what is a 400 and what is only an issue), so a malformed body is a 400
 * whatever the owner. The W-9's TIN is never answered, logged or quoted in
 * an error: the model's messages name fields, never values. */
#include "api/api.h"
#include "core/clock.h"
#include "core/jsonval.h"
#include "store/owners.h"
#include "taxdocs/model.h"
#include "taxdocs/submit.h"

#define OWNER "Account owner" /* the record named by a 404 */

/* The owner's uuid, or false after answering 404 / 5xx. */
static bool owner_uuid_of(request_t *req, store_conn_t *db, const char *id,
                          char uuid[STORE_UUID_LEN])
{
    return api_found(req, store_owner_uuid(db, req->claims.tenant_id, id, uuid), OWNER, id);
}

void api_tax_documentation_submit(request_t *req)
{
    const char *id = request_param(req, "accountOwnerId");
    json_t *body = request_json(req, false);
    if (body == NULL)
        return;
    int64_t now = api_now_ms(req);
    json_t *issues = json_array();
    taxdocs_type_t type = TAXDOCS_W9;
    if (taxdocs_check(body, now, issues, &type) > 0) {
        reply_invalid(req, "Invalid tax documentation", issues);
        return;
    }
    json_decref(issues);
    store_conn_t *db = api_db(req);
    char owner_uuid[STORE_UUID_LEN];
    if (db == NULL || !owner_uuid_of(req, db, id, owner_uuid))
        return;
    taxdocs_submission_t s = {.tin_key = api_ctx(req)->tin_key,
                              .tenant_id = req->claims.tenant_id,
                              .owner_uuid = owner_uuid,
                              .type = type,
                              .body = body,
                              .now = now,
                              .source = "api"};
    char doc_id[STORE_UUID_LEN];
    if (!api_found(req, taxdocs_submit(db, &s, doc_id), OWNER, id))
        return;
    api_wake_engines(req); /* the status event, and a W-9's TIN check */
    json_t *data = json_pack("{s:s, s:s, s:s, s:o}", "tax_documentation_id", doc_id,
                             "account_owner_id", id, "document_type", taxdocs_type_name(type),
                             "created_at", jsonval_time(now));
    if (data == NULL) { /* saved; a 5xx says the outcome is unknown */
        api_internal_error(req, "tax documentation: out of memory building the answer");
        return;
    }
    reply_data(req, 201, data);
}

void api_tax_documentation_get(request_t *req)
{
    const char *id = request_param(req, "accountOwnerId");
    store_conn_t *db = api_db(req);
    char owner_uuid[STORE_UUID_LEN];
    if (db == NULL || !owner_uuid_of(req, db, id, owner_uuid))
        return;
    json_t *state = NULL;
    store_status_t rc = taxdocs_status_get(db, req->claims.tenant_id, owner_uuid, &state);
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_data(req, 200, state);
}
