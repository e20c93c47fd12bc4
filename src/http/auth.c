/* auth: bearer tokens. Two distinct 401 messages exist (spec § Authentication
 * 3-4): the header's syntax is judged first ("Invalid authorization header"),
 * then the token itself ("Invalid token"). A revoked credential's tokens are
 * refused from the settings snapshot, which trails the database by under a
 * second, so verification never waits for the database. */
#include "http/auth.h"

#include <string.h>

#include "app/service.h"
#include "http/errors.h"

bool auth_authenticate(request_t *req)
{
    if (req->match.route->scopes == 0)
        return true;
    const char *token = NULL;
    size_t token_len = 0;
    if (!token_parse_bearer(request_header(req, "authorization"), &token, &token_len)) {
        reply_error(req, 401, "Invalid authorization header");
        return false;
    }
    service_t *svc = req->svc;
    token_status_t status =
        token_verify(svc->signer, token, token_len, service_now_s(svc), &req->claims);
    if (status != TOKEN_OK || settings_is_revoked(svc->settings, req->claims.client_id)) {
        reply_error(req, 401, "Invalid token");
        return false;
    }
    req->authenticated = true;
    return true;
}

bool auth_scope_allows(const request_t *req)
{
    unsigned granted = req->claims.scopes;
    return granted == 0 || (granted & req->match.route->scopes) != 0;
}
