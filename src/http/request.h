/* request: one HTTP exchange as the application sees it. The server fills
 * the request side (method, raw target, decoded route parameters, body) and
 * hands the request to the application's dispatch callback (http/server.h);
 * the application may record a verified token's claims on it, and answers
 * through the reply_* functions, which are the only way a response is made.
 * All memory hangs off the request's arena and is released when the response
 * has been sent; nothing here knows the database or the handlers. */
#ifndef TAXD_HTTP_REQUEST_H
#define TAXD_HTTP_REQUEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/ids.h"
#include "http/router.h"
#include "http/token.h"
#include "http/workpool.h"

struct http_server;
struct MHD_Connection;

#define REQUEST_MAX_HEADERS 8

/* A body produced piece by piece while it is sent (a report download), so
 * that its size never has to fit in memory. read(cls, pos, buf, max) fills
 * buf with up to max bytes starting at byte pos of the body and returns how
 * many, REPLY_STREAM_END once everything was sent, or REPLY_STREAM_ERROR to
 * abort (the connection is closed: the client sees a truncated body). read
 * runs on a server thread after the handler returned, once per piece, so
 * cls must hold everything it needs, including its own database connection:
 * never the request's, which is given back when the handler's answer is
 * queued. free_cls(cls) runs exactly once, when the response is done with
 * (sent, aborted, or never started). */
#define REPLY_STREAM_END ((ssize_t)-1)
#define REPLY_STREAM_ERROR ((ssize_t)-2)
#define REPLY_STREAM_SIZE_UNKNOWN UINT64_MAX

typedef ssize_t (*reply_stream_read_fn)(void *cls, uint64_t pos, char *buf, size_t max);

typedef struct reply_stream {
    reply_stream_read_fn read;
    void *cls;
    void (*free_cls)(void *cls);
    uint64_t size;                   /* content-length, or REPLY_STREAM_SIZE_UNKNOWN */
} reply_stream_t;

typedef struct request {
    struct http_server *server;      /* the server that received it */
    arena_t *arena;
    struct MHD_Connection *connection;
    char id[40];                     /* x-request-id: "<instance>-<sequence>" */
    int64_t start_us;                /* monotonic */
    int64_t deadline_ms;             /* monotonic; the 504 bound */

    const char *method;
    const char *target;              /* raw, as received: path and query */
    char client_address[48];         /* the peer's address in text ("" when unknown) */
    size_t path_len;
    const char *query;               /* raw, after '?' ("" when none) */
    router_status_t route_status;
    router_match_t match;
    const char *allowed;             /* Allow header of a 405 */
    bool cors_path;                  /* a route of this path has ROUTE_CORS */
    bool preflight;                  /* a CORS preflight the server answered itself */

    char *body;                      /* NUL-terminated for convenience; malloc'd, freed by the server */
    size_t body_len;
    size_t body_expected;            /* the announced Content-Length (0 when none) */
    size_t body_limit;
    bool body_too_large;
    size_t body_cap;
    size_t discarded;                /* bytes of an oversized body thrown away */
    bool started;                    /* the first access-handler call happened */
    bool counted_in_flight;
    bool counted_in_class;           /* counted toward its class's shedding bound */
    workpool_class_t flight_class;
    bool holds_large_slot;           /* counted among the large bodies at once */
    bool large_refused;              /* no large-body slot was free: 429 at the end */
    bool close_after;                /* answer with Connection: close */
    bool queued;                     /* handed to the work pool, connection suspended */
    _Atomic bool answered;           /* the work pool's handler is done */
    struct server_conn *conn;        /* the server's state of the connection */
    workpool_job_t job;              /* the work pool's link */

    /* Set by the application when a token verified; the access log names
     * the tenant of an authenticated request. */
    bool authenticated;
    token_claims_t claims;
    /* The application's own state for the time of its dispatch callback;
     * the transport never reads it. */
    void *app;

    /* the response */
    int status;
    const char *content_type;
    char *out;                       /* malloc'd, handed to libmicrohttpd */
    size_t out_len;
    size_t header_count;
    const char *header_names[REQUEST_MAX_HEADERS];
    const char *header_values[REQUEST_MAX_HEADERS];
    char header_numbers[REQUEST_MAX_HEADERS][24]; /* the values of reply_header_u64 */
    const char *logged_body;         /* an error's body, kept for the access log */
    reply_stream_t stream;           /* a streamed body (reply_stream); read == NULL otherwise */
} request_t;

/* A request header by name (case-insensitive), or NULL. */
const char *request_header(const request_t *req, const char *name);
/* The client's address as text ("127.0.0.1", "::1"): the peer of the
 * connection, or, behind a trusted proxy, the address it forwarded. Never
 * NULL; "" when unknown. */
const char *request_client_address(const request_t *req);
/* A decoded route parameter by template name ("filerId"). */
const char *request_param(const request_t *req, const char *name);
/* A decoded query parameter (arena-owned) or NULL when absent; *malformed is
 * set when the query string cannot be decoded. */
const char *request_query(request_t *req, const char *name, bool *malformed);
/* Parses the JSON body (see v_parse_body; v_parse_body_text on a route
 * flagged ROUTE_TEXT_JSON, so text/plain is JSON there); on failure answers
 * 400 itself and returns NULL. With allow_empty, an empty body (whatever its
 * Content-Type, or none) is no body: NULL and no answer. The value is
 * released with the arena. */
json_t *request_json(request_t *req, bool allow_empty);

/* Answers status with body (stolen; serialized compactly). */
void reply_json(request_t *req, int status, json_t *body);
/* Answers {"data": data} (data stolen). */
void reply_data(request_t *req, int status, json_t *data);
/* Answers an error body built by src/http/errors.c (stolen). */
void reply_error_body(request_t *req, int status, json_t *body);
/* The standard envelope {"error":..., "message":...}. */
void reply_error(request_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 400 with validation issues (stolen). */
void reply_invalid(request_t *req, const char *message, json_t *issues);
/* 500 in the standard envelope, "The request could not be completed": a
 * failure the client can do nothing about. Logs nothing: the store logged
 * its own failures, request_log_failure says what else failed. */
void reply_internal_error(request_t *req);
/* Logs at error level, with the request id, that `what` failed: a fixed
 * phrase ("uuid generation"), never client data, a TIN or a secret. */
void request_log_failure(const request_t *req, const char *what);
/* Answers a non-JSON body (text stolen, malloc'd). */
void reply_text(request_t *req, int status, const char *content_type, char *text, size_t len);
/* Answers status with a streamed body (see reply_stream_t); the request
 * owns cls from here on, whatever happens. */
void reply_stream(request_t *req, int status, const char *content_type, uint64_t size,
                  reply_stream_read_fn read, void *cls, void (*free_cls)(void *cls));
/* 204 without body. */
void reply_empty(request_t *req, int status);
/* Adds a response header; both strings must live as long as the request.
 * Past REQUEST_MAX_HEADERS headers the rest are dropped. */
void reply_header(request_t *req, const char *name, const char *value);
/* Adds a response header whose value is value in decimal, kept in the
 * request itself (no allocation); name must live as long as the request. */
void reply_header_u64(request_t *req, const char *name, uint64_t value);

#endif
