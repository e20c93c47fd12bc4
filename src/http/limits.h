/* limits: the rate-limit phase (spec § Limits), after authentication. Each
 * authenticated request takes a token from its tenant x method x route
 * bucket and then, when the operator set one, from the endpoint's own bucket;
 * the x-ratelimit-* headers report the tighter of the two. */
#ifndef TAXD_HTTP_LIMITS_H
#define TAXD_HTTP_LIMITS_H

#include <stdbool.h>

#include "http/request.h"

/* Returns true when the request may go on. On refusal it has answered 429
 * with the body of the layer that refused and Retry-After. Either way the
 * rate-limit header values are recorded on req. */
bool limits_admit(request_t *req);

/* Counts a request that is refused for another reason after its token was
 * verified (the scope deny): it takes its tokens and records the headers but
 * never answers. */
void limits_account(request_t *req);

#endif
