/* api: the resource handlers, one file per resource group, and the route
 * table that maps each "METHOD /template" to its handler and token scopes.
 * Handlers speak HTTP and JSON through src/http/request.h and reach the
 * database only through src/store/. */
#ifndef TAXD_API_API_H
#define TAXD_API_API_H

#include <stdbool.h>
#include <stddef.h>

#include "http/request.h"
#include "http/router.h"

/* The route table. Test-only routes are included only when test_hooks is on.
 * The returned array is static and read-only. */
const route_t *api_routes(bool test_hooks, size_t *count);

/* src/api/oauth.c */
void api_oauth_token(request_t *req);
/* src/api/health.c */
void api_healthz(request_t *req);
void api_metrics(request_t *req);
/* src/api/filers.c */
void api_filers_get(request_t *req);
void api_filers_list(request_t *req);
/* src/api/testhooks.c (only routed with --test-hooks) */
void api_test_clock(request_t *req);
void api_test_pause(request_t *req);
void api_test_store_fault(request_t *req);

/* Shared by list handlers: parses ?limit= (1..100, default 25) and ?cursor=.
 * On invalid input answers 400 itself and returns false. */
bool api_page_params(request_t *req, size_t *limit, const char **cursor);

#endif
