/* auth: the authentication phase of a request (spec § Authentication).
 * Runs after the router and before rate limits. */
#ifndef TAXD_HTTP_AUTH_H
#define TAXD_HTTP_AUTH_H

#include <stdbool.h>

#include "http/request.h"

/* For a route that needs a token: checks the authorization header and the
 * token (signature, key, expiry, revocation) and fills req->claims. Returns
 * true to go on; on failure it has answered 401 and returns false. A route
 * that needs no token passes untouched. Scopes are checked separately. */
bool auth_authenticate(request_t *req);

/* True when the verified token's scopes cover the route (a credential without
 * scopes covers every route). */
bool auth_scope_allows(const request_t *req);

#endif
