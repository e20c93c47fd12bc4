/* auth: bearer tokens. Two distinct 401 messages exist (spec § Authentication
 * 3-4): the header's syntax is judged first ("Invalid authorization header"),
 * then the token itself ("Invalid token"). A revoked credential's tokens are
 * refused from the settings snapshot, which trails the database by under a
 * second, so verification never waits for the database. */
#include "http/auth.h"

#include <string.h>

#include "app/service.h"
#include "http/errors.h"

/* A cached token is one that verified before; only its expiry can have
 * changed since, so that is checked again on every hit. */
static bool verify_token(service_t *svc, const char *token, size_t len, token_claims_t *claims)
{
    int64_t now = service_now_s(svc);
    if (tokencache_get(svc->tokens, token, len, claims))
        return now < claims->expires_at && claims->issued_at <= now + TOKEN_CLOCK_SKEW_S;
    if (token_verify(svc->signer, token, len, now, claims) != TOKEN_OK)
        return false;
    tokencache_put(svc->tokens, token, len, claims);
    return true;
}

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
    if (!verify_token(svc, token, token_len, &req->claims) ||
        settings_is_revoked(svc->settings, req->claims.client_id)) {
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
