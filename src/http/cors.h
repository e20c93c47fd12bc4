/* cors: which CORS headers an answer on a ROUTE_CORS path carries (issue 19,
 * item 4), as a pure function of the allowed origins, the request's Origin
 * and whether the answer is a preflight. The server (http/server.c) adds
 * them where every answer passes, so no handler can forget them; nothing
 * here knows libmicrohttpd or a handler.
 *
 * The rules: an Origin equal, byte for byte, to an allowed origin gets
 * Access-Control-Allow-Origin naming it (never "*", never credentials: the
 * SDK sends no cookies); a preflight adds the path's methods, the request
 * headers the SDK needs and a max age; any other answer names the headers a
 * script may read. Another origin, or none, gets no Access-Control-* header.
 * Every answer on such a path says Vary: Origin, since it depends on it. */
#ifndef TAXD_HTTP_CORS_H
#define TAXD_HTTP_CORS_H

#include <stdbool.h>
#include <stddef.h>

#define CORS_ALLOW_HEADERS "Authorization, Content-Type"
#define CORS_MAX_AGE "600"
/* The response headers taxd sets that a browser script may need. */
#define CORS_EXPOSE_HEADERS "x-request-id, x-ratelimit-limit, x-ratelimit-remaining, Retry-After"
/* The most headers cors_headers writes. */
#define CORS_MAX_HEADERS 5

typedef struct cors_header {
    const char *name;
    const char *value;  /* points into the arguments or to static text */
} cors_header_t;

/* The allowed origin equal to origin (exact and case-sensitive), or NULL
 * (origin NULL, or no such origin). */
const char *cors_allowed_origin(const char *const *origins, size_t count, const char *origin);

/* Fills out (CORS_MAX_HEADERS entries) with the headers of an answer on a
 * ROUTE_CORS path and returns how many. allowed is cors_allowed_origin's
 * result; methods, for a preflight, the path's methods ("GET, POST"). The
 * values point into allowed, methods or static text: they live as long as
 * those do. */
size_t cors_headers(const char *allowed, bool preflight, const char *methods,
                    cors_header_t out[CORS_MAX_HEADERS]);

#endif
