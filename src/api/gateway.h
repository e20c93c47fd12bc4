/* gateway: the API's phases of a routed request, in a fixed order after the
 * transport's (body limit, load shedding, 404/405): authentication (401),
 * scopes (403), rate limits (429, with x-ratelimit-* headers on every answer
 * to a verified token), then the route's handler. The HTTP server calls
 * api_gateway_dispatch for each routed request (http/server.h); it is the one
 * place that turns the route table's opaque handler back into a function.
 *
 * While the phases run, req->app points to the gateway's state for the
 * request, through which a handler reaches the context and the request's
 * database connection. Both are valid only until the handler returns: the
 * gateway gives the connection back then, before the answer is sent. */
#ifndef TAXD_API_GATEWAY_H
#define TAXD_API_GATEWAY_H

#include <stdint.h>

#include "api/context.h"
#include "http/request.h"
#include "store/store.h"

/* The handler of a route (route_t.handler): reads req, answers with exactly
 * one reply_*. */
typedef void (*api_handler_fn)(request_t *req);

/* The gateway's state for one request, on its stack for the time of one
 * dispatch. */
typedef struct api_exchange {
    api_context_t *ctx;
    store_conn_t *db;                 /* acquired on first use, released after the handler */
    uint32_t limit_header;            /* x-ratelimit-limit */
    uint32_t remaining_header;        /* x-ratelimit-remaining */
} api_exchange_t;

/* An http_dispatch_fn: user is the api_context_t. */
void api_gateway_dispatch(void *user, request_t *req);

/* The context of the request being dispatched. */
static inline api_context_t *api_ctx(const request_t *req)
{
    return ((const api_exchange_t *)req->app)->ctx;
}

/* The request's database connection (its deadline applied), opened on first
 * use and given back by the gateway when the handler returns; NULL when none
 * could be opened. */
store_conn_t *api_request_db(request_t *req);

/* Milliseconds and seconds since the epoch on the context's clock. */
int64_t api_now_ms(const request_t *req);
int64_t api_now_s(const request_t *req);

/* Wakes this process's engines: the request committed work for them. */
void api_wake_engines(const request_t *req);

#endif
