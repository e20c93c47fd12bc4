/* server: the HTTP transport of taxd on libmicrohttpd. It knows no handler
 * and no service: it receives a request, gives it an id, a deadline and an
 * arena, and runs the phases that need nothing but HTTP, in a fixed order as
 * nginx does: framing, load shedding and body limits while the request
 * arrives, the CORS preflight (http/cors.h), then the router (404/405).
 * A routed request is handed to the
 * application's dispatch callback, which answers it; the server then sends
 * the answer and writes the access log and the metrics.
 *
 * The serving model keeps moving bytes apart from work that can wait:
 *  - the acceptor (http/acceptor.h) owns the listening socket and holds a new
 *    connection until its first request's head arrived (10 s at most);
 *  - a few connection threads (libmicrohttpd's, io_threads) read heads and
 *    bodies and send answers, and never wait on anything but sockets;
 *  - handlers run on the work pool (http/workpool.h), reads and writes in
 *    separate queues; the connection is suspended meanwhile. A route flagged
 *    ROUTE_INLINE (health, metrics: nothing that can wait) runs on the
 *    connection thread instead, so it answers whatever the pool is doing;
 *  - deadlines the library does not keep are kept by a sweep: a connection
 *    waiting for the head of its next request is closed after
 *    header_timeout_ms, and a body that arrives slower than
 *    HTTP_MIN_BODY_RATE bytes a second after that grace is answered 408 and
 *    closed. */
#ifndef TAXD_HTTP_SERVER_H
#define TAXD_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/metrics.h"
#include "http/request.h"
#include "http/router.h"

/* A body over this many bytes takes one of the config's max_large_bodies
 * slots while it is received and handled. */
#define HTTP_LARGE_BODY (1024u * 1024u)
/* After the grace of header_timeout_ms, a body must have arrived at this
 * average rate (bytes per second) since its head. */
#define HTTP_MIN_BODY_RATE 1024u

/* Runs on a server thread for each request the router matched
 * (req->route_status == ROUTER_OK). It answers with exactly one reply_*;
 * a request left unanswered is answered 500. user is the config's. */
typedef void (*http_dispatch_fn)(void *user, request_t *req);

/* What the server must know. Everything pointed to belongs to the caller and
 * must outlive the server. */
typedef struct http_server_config {
    const char *listen_host;          /* name or numeric address */
    unsigned listen_port;             /* 0: the kernel picks one */
    unsigned threads;                 /* the work pool: well above the core count */
    unsigned io_threads;              /* connection threads (0: 2) */
    unsigned connection_limit;
    unsigned per_ip_connection_limit; /* an IPv6 client counts by its /64 */
    unsigned connection_timeout_s;    /* no byte moved this long: closed */
    int64_t header_timeout_ms;        /* a request's head, from its first byte */
    unsigned max_large_bodies;        /* bodies over HTTP_LARGE_BODY at once (429 beyond) */
    const char *trusted_proxies;      /* proxies.h list; "" or NULL: none */
    unsigned max_in_flight;           /* reads, and writes, each: beyond, 429 (load shedding) */
    int64_t request_timeout_ms;       /* each request's deadline (req->deadline_ms) */
    size_t max_body;                  /* body limit; a route's max_body may raise it */
    int64_t drain_ms;                 /* how long a stop waits for requests in progress */
    const char *instance_id;          /* prefix of every x-request-id */
    const router_t *router;
    const char *const *route_labels;  /* "METHOD /template" by route index: the access log */
    metrics_t *metrics;               /* requests by route and status, load-shedding rejects */
    /* When base_url is "" it is filled (base_url_cap bytes) with
     * "http://HOST:PORT" and the bound port before the first request. */
    char *base_url;
    size_t base_url_cap;
    /* Browser origins allowed on ROUTE_CORS paths (http/cors.h): exact
     * scheme://host[:port] strings; none when count is 0. */
    const char *const *cors_origins;
    size_t cors_origin_count;
    http_dispatch_fn dispatch;
    void *user;                       /* handed to every dispatch call */
} http_server_config_t;

typedef struct http_server http_server_t;

/* Binds the listen address and starts the threads (cfg is copied).
 * Returns the server, which http_server_stop frees, or NULL with *err
 * malloc'd (the caller frees it; it may stay NULL when memory ran out). */
http_server_t *http_server_start(const http_server_config_t *cfg, char **err);

/* The bound port (useful with port 0). */
unsigned http_server_port(const http_server_t *server);

/* Graceful stop: stop accepting, let requests in progress finish (at most
 * the config's drain_ms), answer them with Connection: close, then stop every
 * thread and free the server. */
void http_server_stop(http_server_t *server);

#endif
