/* router: maps (method, raw path) to a route template such as
 * "/v1/reports/inventory-summary/{reportId}". Literal segments are compared
 * raw; a {param} segment matches any non-empty raw segment and is
 * percent-decoded once (so an id may hold '/', '%', '+', ' ' or non-ASCII).
 * The template, never the raw path, is what rate limits and metrics key on.
 * A router is built once at start and then only read: safe for many threads. */
#ifndef TAXD_HTTP_ROUTER_H
#define TAXD_HTTP_ROUTER_H

#include <stddef.h>

#define ROUTER_MAX_PARAMS 4

typedef struct route {
    const char *method;   /* "GET", "POST", ... */
    const char *path;     /* template, e.g. "/v1/filers/{filerId}" */
    unsigned scopes;      /* token scopes that may call it; 0 = no token needed */
    size_t max_body;      /* raises the server's body limit for this route; 0 = the default */
    void *handler;        /* opaque to http/: the dispatch callback casts it */
    size_t index;         /* position in the table, set by router_new */
    unsigned flags;       /* ROUTE_* */
} route_t;

/* The route's handler never waits (no database, no lock another thread may
 * hold): it runs on the connection thread, so it answers even when every
 * worker is busy (health checks). */
#define ROUTE_INLINE 1u
/* An account-owner token may call the route (issue 19, item 1); every other
 * route refuses one. When the template has {accountOwnerId}, it must name the
 * token's owner. */
#define ROUTE_OWNER 2u
/* Only an account-owner token may call the route: the owner comes from the
 * token, not the path (Taxbit's SDK routes); a tenant token gets the 403 deny. */
#define ROUTE_OWNER_ONLY 4u
/* Browsers of the --cors-origin origins may call the route: the server
 * answers its OPTIONS preflight itself (before routing's 405 and before any
 * token is read) and adds the CORS headers to every answer (issue 19). */
#define ROUTE_CORS 8u
/* A body sent as text/plain (charset UTF-8 or none) is read as JSON, and an
 * empty body with no content type is no body: what a browser's fetch sends
 * for a string body or no body without a Content-Type (Taxbit's SDK). */
#define ROUTE_TEXT_JSON 16u

typedef enum router_status {
    ROUTER_OK = 0,
    ROUTER_NOT_FOUND,          /* no template has this path */
    ROUTER_METHOD_NOT_ALLOWED, /* a template has the path, not with this method */
    ROUTER_BAD_PATH,           /* malformed percent-encoding or an encoded NUL */
    ROUTER_NO_MEMORY,          /* alloc returned NULL for a parameter */
} router_status_t;

typedef struct router_match {
    const route_t *route;
    size_t param_count;
    const char *param_names[ROUTER_MAX_PARAMS];  /* point into the template: "reportId" */
    size_t param_name_lens[ROUTER_MAX_PARAMS];
    char *params[ROUTER_MAX_PARAMS];             /* decoded values, from alloc */
} router_match_t;

typedef struct router router_t;

/* Copies the table (routes[i].index is set to i). Returns NULL when a template
 * is malformed or has more than ROUTER_MAX_PARAMS parameters. */
router_t *router_new(const route_t *routes, size_t count);
void router_free(router_t *router);

size_t router_route_count(const router_t *router);
const route_t *router_route(const router_t *router, size_t index);

/* Matches a raw path (no query string; path_len bytes). Decoded parameters are
 * allocated with alloc(alloc_ctx, n) and owned by whoever owns that allocator
 * (the request arena). On ROUTER_METHOD_NOT_ALLOWED, *allowed receives the
 * allowed methods joined by ", " (into a buffer of allowed_cap bytes), for the
 * Allow header. */
router_status_t router_match(const router_t *router, const char *method, const char *path,
                             size_t path_len, void *(*alloc)(void *ctx, size_t n),
                             void *alloc_ctx, router_match_t *match, char *allowed,
                             size_t allowed_cap);

/* The ROUTE_* flags of every route whose template matches the raw path,
 * whatever its method, joined with |; 0 when none matches. For what the
 * server decides per path rather than per route (the CORS preflight, an
 * OPTIONS that no route takes). */
unsigned router_path_flags(const router_t *router, const char *path, size_t path_len);

/* The value of a named parameter of a match, or NULL. */
const char *router_param(const router_match_t *match, const char *name);

#endif
