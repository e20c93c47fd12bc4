/* server: libmicrohttpd glue and the transport's phases. See server.h.
 *
 * libmicrohttpd calls the access handler several times per request: once with
 * the headers, then once per body chunk, then once more with no data. taxd
 * creates its request (arena, id, raw target) in the URI-log callback, which
 * sees the target before libmicrohttpd percent-decodes it, judges framing,
 * load shedding and body limits on the first call (a response queued then is
 * what the client receives), collects body chunks, and on the last call
 * answers an unrouted request itself, runs an inline route, or suspends the
 * connection and queues the request on the work pool. The worker answers and
 * resumes the connection; libmicrohttpd then calls the access handler once
 * more, which sends the answer. The completion callback writes the access log
 * and metrics and frees the arena, so nothing a request allocated can outlive
 * it. A streamed body (reply_stream, report downloads) is the one exception
 * by design: its reader owns its state and libmicrohttpd frees it when the
 * body is done.
 *
 * Each connection has a server_conn (libmicrohttpd's socket context) on a
 * list the sweep walks: its phase says what the connection waits for, and a
 * compare-and-swap on the phase decides between the sweep closing it and its
 * own thread moving on. The list lock is held while the sweep touches a
 * socket, and a connection leaves the list (libmicrohttpd's close
 * notification) before its socket is closed, so the sweep never touches a
 * descriptor that was reused. */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "http/acceptor.h"
#include "http/cors.h"
#include "http/errors.h"
#include "http/framing.h"
#include "http/proxies.h"
#include "http/url.h"
#include "http/workpool.h"

/* Past this many bytes of a refused body, stop reading and close: a client
 * streaming without end must not keep a connection thread busy forever. */
#define DISCARD_CAP (64u * 1024 * 1024)
#define REQUEST_ARENA_BLOCK 8192
/* Bytes libmicrohttpd asks a streamed body's reader for at a time. */
#define STREAM_BLOCK (64u * 1024)
/* The largest request head (request line and headers) taken. */
#define HEAD_MAX (32u * 1024)
#define SWEEP_TICK_MS 200
#define LISTEN_BACKLOG 4096

_Static_assert(REPLY_STREAM_END == MHD_CONTENT_READER_END_OF_STREAM &&
                   REPLY_STREAM_ERROR == MHD_CONTENT_READER_END_WITH_ERROR &&
                   REPLY_STREAM_SIZE_UNKNOWN == MHD_SIZE_UNKNOWN,
               "reply_stream_t speaks libmicrohttpd's reader protocol");

/* What a connection waits for. */
typedef enum conn_phase {
    CONN_AWAITING_HEAD, /* the next request's head: since_ms counts toward the head deadline */
    CONN_RECEIVING,     /* a body: since_ms is when its head arrived */
    CONN_WORKING,       /* nothing the client owes: a handler runs or the answer is sent */
    CONN_KILLED,        /* the sweep closed it: every later callback ends it */
} conn_phase_t;

typedef struct server_conn {
    int fd;
    struct sockaddr_storage addr;
    char peer[48];                   /* addr as text */
    _Atomic int phase;               /* conn_phase_t */
    _Atomic int64_t since_ms;
    _Atomic uint64_t body_bytes;     /* of the request being received */
    struct server_conn *prev, *next; /* the sweep's list */
} server_conn_t;

struct http_server {
    http_server_config_t cfg;
    struct MHD_Daemon *daemon;
    acceptor_t *acceptor;
    workpool_t *pool;
    proxies_t *trusted;
    _Atomic uint64_t request_seq;
    _Atomic unsigned in_flight;     /* requests between first byte and completion */
    _Atomic unsigned in_class[2];   /* of which reads / writes bound for the pool: shed beyond
                                     * max_in_flight each, so stuck writes never shed reads */
    _Atomic unsigned large_bodies;  /* bodies over HTTP_LARGE_BODY held now */
    _Atomic bool draining;          /* stopping: answer with Connection: close */
    unsigned port;
    pthread_mutex_t conns_lock;
    server_conn_t *conns;
};

/* ---- response emission ------------------------------------------------ */

/* The request's work ends when its answer is queued, before a byte of it is
 * sent: a client that sends its next request as soon as it reads this one
 * must never find it still counted as in flight. */
static void leave_flight(request_t *req)
{
    if (req->counted_in_flight) {
        atomic_fetch_sub(&req->server->in_flight, 1);
        req->counted_in_flight = false;
    }
    if (req->counted_in_class) {
        atomic_fetch_sub(&req->server->in_class[req->flight_class], 1);
        req->counted_in_class = false;
    }
}

static struct MHD_Response *build_response(request_t *req)
{
    struct MHD_Response *r;
    if (req->stream.read != NULL) {
        r = MHD_create_response_from_callback(req->stream.size, STREAM_BLOCK, req->stream.read,
                                              req->stream.cls, req->stream.free_cls);
        if (r != NULL)
            req->stream.free_cls = NULL; /* libmicrohttpd frees cls when it is done */
    } else if (req->out != NULL) {
        r = MHD_create_response_from_buffer(req->out_len, req->out, MHD_RESPMEM_MUST_FREE);
        if (r != NULL)
            req->out = NULL; /* libmicrohttpd owns it now */
    } else {
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    }
    return r;
}

/* Every answer leaves through emit, so this is the one place the CORS
 * headers of a ROUTE_CORS path are added: handlers' answers, the gateway's
 * 401/403/429, the server's own 405/413/429/504 and the preflight alike. */
static void add_cors_headers(struct MHD_Response *r, const request_t *req)
{
    if (!req->cors_path)
        return;
    const http_server_config_t *cfg = &req->server->cfg;
    const char *allowed = cors_allowed_origin(cfg->cors_origins, cfg->cors_origin_count,
                                              request_header(req, "origin"));
    cors_header_t headers[CORS_MAX_HEADERS];
    size_t n = cors_headers(allowed, req->preflight, req->allowed, headers);
    for (size_t i = 0; i < n; i++)
        MHD_add_response_header(r, headers[i].name, headers[i].value);
}

static enum MHD_Result emit(struct MHD_Connection *connection, request_t *req)
{
    if (req->status == 0) /* every path answers; kept as a last guard */
        reply_internal_error(req);
    if (req->status >= 400 && req->out != NULL &&
        memchr(req->out, '\n', req->out_len) == NULL) /* compact JSON: one log line */
        req->logged_body = arena_strndup(req->arena, req->out, req->out_len);
    struct MHD_Response *r = build_response(req);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "x-request-id", req->id);
    if (req->content_type != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, req->content_type);
    add_cors_headers(r, req);
    for (size_t i = 0; i < req->header_count; i++)
        MHD_add_response_header(r, req->header_names[i], req->header_values[i]);
    if (req->close_after || atomic_load(&req->server->draining))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(connection, (unsigned)req->status, r);
    MHD_destroy_response(r);
    leave_flight(req);
    return rc;
}
/* ---- the transport's phases -------------------------------------------- */

/* Matches the route once, on the first callback: the body limit needs it
 * before the body arrives, and the phases reuse it. */
static void route_request(request_t *req)
{
    char allowed[128];
    req->route_status = router_match(req->server->cfg.router, req->method, req->target,
                                     req->path_len, arena_alloc_cb, req->arena, &req->match,
                                     allowed, sizeof allowed);
    if (req->route_status == ROUTER_METHOD_NOT_ALLOWED)
        req->allowed = arena_strndup(req->arena, allowed, strlen(allowed));
    unsigned flags = 0;
    if (req->route_status == ROUTER_OK)
        flags = req->match.route->flags;
    else if (req->route_status == ROUTER_METHOD_NOT_ALLOWED)
        flags = router_path_flags(req->server->cfg.router, req->target, req->path_len);
    req->cors_path = (flags & ROUTE_CORS) != 0;
}

/* A browser asks before a cross-origin call with Authorization: OPTIONS on
 * the same path. On a ROUTE_CORS path no route takes OPTIONS, so the server
 * answers it itself, before routing's 405, authentication and load
 * shedding: it carries no token, needs no database, and a refused preflight
 * looks to the page like a network failure. Judged on the first call (so it
 * is never shed), answered on the last (an answer queued before the end of
 * the request makes libmicrohttpd close the connection, and a page sends a
 * preflight before each call): 204 with no body; the headers (only Vary for
 * an origin not allowed) are added by emit. */
static bool is_preflight(const request_t *req)
{
    return req->cors_path && req->route_status == ROUTER_METHOD_NOT_ALLOWED &&
           strcmp(req->method, "OPTIONS") == 0;
}

static bool route_phase(request_t *req)
{
    switch (req->route_status) {
    case ROUTER_OK:
        return true;
    case ROUTER_METHOD_NOT_ALLOWED:
        reply_header(req, "Allow", req->allowed);
        reply_error(req, 405, "Method %s is not allowed on this path", req->method);
        return false;
    case ROUTER_BAD_PATH:
        reply_error(req, 400, "The request path is not validly percent-encoded");
        return false;
    case ROUTER_NO_MEMORY:
        request_log_failure(req, "routing: out of memory");
        reply_internal_error(req);
        return false;
    default:
        reply_error(req, 404, "No route matches %s %.*s", req->method, (int)req->path_len,
                    req->target);
        return false;
    }
}

/* The router's answer, or the application's through the dispatch callback. */
static void run_phases(request_t *req)
{
    if (!route_phase(req))
        return;
    const http_server_config_t *cfg = &req->server->cfg;
    if (clock_monotonic_ms() >= req->deadline_ms) { /* waited in the queue past it */
        reply_error(req, 504, "Endpoint request timed out");
        return;
    }
    cfg->dispatch(cfg->user, req);
    if (req->status == 0) {
        request_log_failure(req, "the application answered nothing");
        reply_internal_error(req);
    }
}

/* ---- connections ------------------------------------------------------- */

static bool phase_move(server_conn_t *conn, conn_phase_t from, conn_phase_t to)
{
    int expected = (int)from;
    return atomic_compare_exchange_strong(&conn->phase, &expected, (int)to);
}

/* The request ended (answered, or its body refused and swallowed): the
 * connection waits for the next head, from now. */
static void conn_await_head(server_conn_t *conn)
{
    atomic_store(&conn->since_ms, clock_monotonic_ms());
    if (!phase_move(conn, CONN_WORKING, CONN_AWAITING_HEAD))
        phase_move(conn, CONN_RECEIVING, CONN_AWAITING_HEAD);
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server_t *server = cls;
    server_conn_t *conn = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn = calloc(1, sizeof *conn);
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (conn == NULL || fd == NULL || addr == NULL || addr->client_addr == NULL) {
            free(conn); /* untracked: libmicrohttpd's own timeout still bounds it */
            return;
        }
        conn->fd = fd->connect_fd;
        memcpy(&conn->addr, addr->client_addr,
               addr->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                        : sizeof(struct sockaddr_in));
        proxies_address_text((struct sockaddr *)&conn->addr, conn->peer, sizeof conn->peer);
        atomic_store(&conn->phase, CONN_AWAITING_HEAD);
        atomic_store(&conn->since_ms, clock_monotonic_ms());
        pthread_mutex_lock(&server->conns_lock);
        conn->next = server->conns;
        if (server->conns != NULL)
            server->conns->prev = conn;
        server->conns = conn;
        pthread_mutex_unlock(&server->conns_lock);
        *socket_context = conn;
        return;
    }
    if (conn == NULL)
        return;
    pthread_mutex_lock(&server->conns_lock);
    if (conn->prev != NULL)
        conn->prev->next = conn->next;
    else
        server->conns = conn->next;
    if (conn->next != NULL)
        conn->next->prev = conn->prev;
    pthread_mutex_unlock(&server->conns_lock);
    acceptor_release(server->acceptor, (struct sockaddr *)&conn->addr);
    free(conn);
    *socket_context = NULL;
}

/* ---- answers written straight to a socket ------------------------------ */

/* For the two places that answer without libmicrohttpd: the acceptor's
 * refusal of a first head, and the sweep's 408. The answer is logged like any
 * other; the connection is closed after it. */
static void write_raw(http_server_t *server, int fd, int status, const char *message)
{
    char id[40];
    buf_t idb = buf_over(id, sizeof id);
    buf_puts(&idb, server->cfg.instance_id);
    buf_putc(&idb, '-');
    buf_put_hex(&idb, atomic_fetch_add(&server->request_seq, 1), 16);
    json_t *body_json = error_body(status, message);
    char *body = body_json ? json_dumps(body_json, JSON_COMPACT) : NULL;
    if (body == NULL) {
        json_decref(body_json);
        return;
    }
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nx-request-id: %s\r\nConnection: close\r\n\r\n",
                     status, error_status_name(status), strlen(body), id);
    if (n > 0 && (size_t)n < sizeof head && send(fd, head, (size_t)n, MSG_NOSIGNAL) == n)
        (void)!send(fd, body, strlen(body), MSG_NOSIGNAL);
    log_event(LOG_INFO, "request",
              json_pack("{s:s, s:n, s:i, s:o}", "request_id", id, "route", "status", status,
                        "body", body_json));
    free(body);
}

/* The acceptor's refusal: answered, then the head that was only peeked is
 * read away so that closing does not reset the connection under the answer. */
static void on_refuse(void *user, int fd, const struct sockaddr *addr, int status,
                      const char *reason)
{
    (void)addr;
    write_raw(user, fd, status, reason);
    shutdown(fd, SHUT_WR);
    char sink[4096];
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
        ;
}

static bool on_handoff(void *user, int fd, const struct sockaddr *addr, socklen_t addr_len)
{
    http_server_t *server = user;
    return MHD_add_connection(server->daemon, fd, addr, addr_len) == MHD_YES;
}

/* A body is late when, past the head's grace, less than HTTP_MIN_BODY_RATE
 * bytes per second of it arrived since its head. */
static bool body_late(const http_server_t *server, const server_conn_t *conn, int64_t now)
{
    int64_t elapsed = now - atomic_load(&conn->since_ms);
    int64_t over = elapsed - server->cfg.header_timeout_ms;
    if (over <= 0)
        return false;
    return atomic_load(&conn->body_bytes) * 1000u < (uint64_t)elapsed * HTTP_MIN_BODY_RATE;
}

/* Runs on the acceptor's thread every SWEEP_TICK_MS. */
static void on_tick(void *user)
{
    http_server_t *server = user;
    int64_t now = clock_monotonic_ms();
    pthread_mutex_lock(&server->conns_lock);
    for (server_conn_t *c = server->conns; c != NULL; c = c->next) {
        int phase = atomic_load(&c->phase);
        if (phase == CONN_AWAITING_HEAD &&
            now - atomic_load(&c->since_ms) >= server->cfg.header_timeout_ms &&
            phase_move(c, CONN_AWAITING_HEAD, CONN_KILLED)) {
            shutdown(c->fd, SHUT_RDWR); /* libmicrohttpd sees the end and closes it */
        } else if (phase == CONN_RECEIVING && body_late(server, c, now) &&
                   phase_move(c, CONN_RECEIVING, CONN_KILLED)) {
            write_raw(server, c->fd, 408, "The request body arrived too slowly");
            shutdown(c->fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&server->conns_lock);
}

/* ---- libmicrohttpd callbacks ------------------------------------------ */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
    http_server_t *server = cls;
    arena_t *arena = arena_new(REQUEST_ARENA_BLOCK);
    if (arena == NULL)
        return NULL;
    request_t *req = arena_alloc(arena, sizeof *req);
    if (req == NULL) {
        arena_free(arena);
        return NULL;
    }
    memset(req, 0, sizeof *req);
    req->server = server;
    req->arena = arena;
    req->connection = connection;
    req->start_us = clock_monotonic_us();
    req->deadline_ms = req->start_us / 1000 + server->cfg.request_timeout_ms;
    req->target = arena_strndup(arena, uri, strlen(uri));
    /* Unique without a random draw per request: a random per-process prefix
     * and a counter. */
    buf_t id = buf_over(req->id, sizeof req->id);
    buf_puts(&id, server->cfg.instance_id);
    buf_putc(&id, '-');
    buf_put_hex(&id, atomic_fetch_add(&server->request_seq, 1), 16);
    if (req->target == NULL) {
        arena_free(arena);
        return NULL;
    }
    url_split(req->target, &req->path_len, &req->query);
    const union MHD_ConnectionInfo *ctx =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->conn = ctx != NULL ? ctx->socket_context : NULL;
    return req;
}

static size_t route_body_limit(const request_t *req)
{
    size_t limit = req->server->cfg.max_body;
    if (req->route_status == ROUTER_OK && req->match.route->max_body > limit)
        limit = req->match.route->max_body;
    return limit;
}

static enum MHD_Result add_framing_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                         size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    framing_add(cls, key, key_size, value != NULL ? value : "", value != NULL ? value_size : 0);
    return MHD_YES;
}

/* The acceptor judged the first head of a connection; later heads on a kept
 * connection are judged here, from the fields libmicrohttpd parsed. */
static framing_t judge_framing(struct MHD_Connection *connection)
{
    framing_t f = {0};
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, add_framing_field, &f);
    return f;
}

static void set_client_address(request_t *req)
{
    const char *peer = req->conn != NULL ? req->conn->peer : "";
    proxies_client_address(req->server->trusted, peer, request_header(req, "x-forwarded-for"),
                           req->client_address, sizeof req->client_address);
}

static bool take_large_slot(request_t *req)
{
    http_server_t *server = req->server;
    unsigned held = atomic_fetch_add(&server->large_bodies, 1);
    if (held >= server->cfg.max_large_bodies) {
        atomic_fetch_sub(&server->large_bodies, 1);
        return false;
    }
    req->holds_large_slot = true;
    return true;
}

static void refuse_large(request_t *req)
{
    metrics_count_limit_reject(req->server->cfg.metrics, METRICS_LIMIT_NODE);
    reply_header(req, "Retry-After", "1");
    reply_error_body(req, 429, error_body_rate_limited(ERROR_LIMIT_ENDPOINT, 1));
}

static workpool_class_t job_class(const request_t *req)
{
    bool reads = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    return reads ? WORKPOOL_READ : WORKPOOL_WRITE;
}

/* Load shedding: a request bound for the pool when max_in_flight of its
 * class are already between head and answer. Inline routes never wait, so
 * they are never shed. */
static bool shed(request_t *req)
{
    if (req->route_status == ROUTER_OK && (req->match.route->flags & ROUTE_INLINE) != 0)
        return false;
    http_server_t *server = req->server;
    req->flight_class = job_class(req);
    req->counted_in_class = true;
    return atomic_fetch_add(&server->in_class[req->flight_class], 1) + 1 > server->cfg.max_in_flight;
}

static enum MHD_Result first_call(struct MHD_Connection *connection, request_t *req)
{
    http_server_t *server = req->server;
    if (req->conn != NULL) {
        atomic_store(&req->conn->body_bytes, 0);
        atomic_store(&req->conn->since_ms, clock_monotonic_ms());
    }
    atomic_fetch_add(&server->in_flight, 1);
    req->counted_in_flight = true;
    framing_t framing = judge_framing(connection);
    bool has_body = framing.chunked || (framing.has_length && framing.content_length > 0);
    if (req->conn != NULL &&
        !phase_move(req->conn, CONN_AWAITING_HEAD, has_body ? CONN_RECEIVING : CONN_WORKING))
        return MHD_NO; /* the sweep closed it meanwhile */
    set_client_address(req);
    route_request(req);
    req->body_limit = route_body_limit(req);
    if (framing.verdict != FRAMING_OK) {
        req->close_after = true;
        reply_error(req, framing_status(framing.verdict), "%s", framing.reason);
        return emit(connection, req);
    }
    req->preflight = is_preflight(req);
    if (!req->preflight && shed(req)) {
        metrics_count_limit_reject(server->cfg.metrics, METRICS_LIMIT_NODE);
        reply_header(req, "Retry-After", "1");
        reply_error_body(req, 429, error_body_rate_limited(ERROR_LIMIT_NODE, 1));
        return emit(connection, req);
    }
    if (framing.has_length && framing.content_length <= req->body_limit)
        req->body_expected = (size_t)framing.content_length;
    if (framing.has_length && framing.content_length > req->body_limit) {
        reply_error(req, 413, "Request body exceeds the limit of %zu bytes", req->body_limit);
        return emit(connection, req);
    }
    /* Refused only once the body is in: clients send a whole body before
     * they read an answer, and one closed mid-body sees a broken pipe
     * instead of the 429 and its Retry-After. The body is read and dropped. */
    if (framing.has_length && framing.content_length > HTTP_LARGE_BODY && !take_large_slot(req))
        req->large_refused = true;
    return MHD_YES;
}

/* The body lives in one malloc'd buffer, not the arena: an announced
 * length sizes it once, and a chunked body grows with realloc, so a 13 MB
 * body costs 13 MB, not the 32 MB of every doubling kept until the request
 * ends. Freed at completion. */
static bool grow_body(request_t *req, size_t need)
{
    size_t cap = req->body_cap ? req->body_cap * 2 : 4096;
    if (req->body_expected + 1 > cap)
        cap = req->body_expected + 1;
    while (cap < need)
        cap *= 2;
    char *grown = realloc(req->body, cap);
    if (grown == NULL)
        return false;
    req->body = grown;
    req->body_cap = cap;
    return true;
}

static enum MHD_Result take_body(request_t *req, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    if (req->conn != NULL)
        atomic_fetch_add(&req->conn->body_bytes, n);
    if (req->body_too_large || req->large_refused || req->body_len + n > req->body_limit) {
        req->body_too_large = !req->large_refused;
        req->discarded += n;
        return req->discarded > DISCARD_CAP ? MHD_NO : MHD_YES;
    }
    if (req->body_len + n > HTTP_LARGE_BODY && !req->holds_large_slot && !take_large_slot(req)) {
        req->large_refused = true; /* a chunked body grew large: 429 once it ends */
        req->discarded += n;
        return MHD_YES;
    }
    size_t need = req->body_len + n + 1;
    if (need > req->body_cap && !grow_body(req, need))
        return MHD_NO;
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = '\0';
    return MHD_YES;
}

/* Runs on a worker: the handler's answer, then the connection goes on. */
static void on_job(void *user, workpool_job_t *job)
{
    (void)user;
    request_t *req = (request_t *)((char *)job - offsetof(request_t, job));
    run_phases(req);
    atomic_store(&req->answered, true);
    MHD_resume_connection(req->connection);
}

/* The whole request is in: answer it here or hand it to the pool. */
static enum MHD_Result last_call(struct MHD_Connection *connection, request_t *req)
{
    if (req->conn != NULL && !phase_move(req->conn, CONN_RECEIVING, CONN_WORKING) &&
        atomic_load(&req->conn->phase) == CONN_KILLED)
        return MHD_NO;
    if (req->large_refused) {
        refuse_large(req);
        return emit(connection, req);
    }
    if (req->body_too_large) {
        reply_error(req, 413, "Request body exceeds the limit of %zu bytes", req->body_limit);
        return emit(connection, req);
    }
    if (req->preflight) {
        reply_empty(req, 204);
        return emit(connection, req);
    }
    if (!route_phase(req) || (req->match.route->flags & ROUTE_INLINE) != 0) {
        if (req->status == 0)
            run_phases(req);
        return emit(connection, req);
    }
    req->queued = true;
    MHD_suspend_connection(connection);
    workpool_push(req->server->pool, &req->job,
                  req->holds_large_slot ? WORKPOOL_BULK : job_class(req));
    return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *connection, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)cls;
    (void)url; /* already percent-decoded by libmicrohttpd: routing uses the raw target */
    (void)version;
    request_t *req = *con_cls;
    if (req == NULL)
        return MHD_NO;
    if (req->conn != NULL && atomic_load(&req->conn->phase) == CONN_KILLED)
        return MHD_NO;
    if (req->queued) /* resumed: the worker answered */
        return atomic_load(&req->answered) ? emit(connection, req) : MHD_YES;
    if (req->status != 0) { /* answered early: swallow the rest */
        if (req->conn != NULL)
            atomic_fetch_add(&req->conn->body_bytes, *upload_data_size);
        req->discarded += *upload_data_size;
        *upload_data_size = 0;
        return req->discarded > DISCARD_CAP ? MHD_NO : MHD_YES;
    }
    if (!req->started) {
        req->started = true;
        req->method = method;
        return first_call(connection, req);
    }
    if (*upload_data_size > 0)
        return take_body(req, upload_data, upload_data_size);
    return last_call(connection, req);
}

/* A method is a token of visible characters; anything else is replaced so the
 * log line stays valid JSON whatever a client sends. */
static void sanitize_method(const char *method, char *out, size_t cap)
{
    size_t i = 0;
    for (; method != NULL && method[i] != '\0' && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)method[i];
        out[i] = (c > 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
    }
    out[i] = '\0';
}

/* One JSON line per request (spec § Logging: error responses with their
 * full body). Every value written raw here is known-safe: ids and tenant ids
 * are ours, the route label comes from the route table, and the body is the
 * JSON this server serialized. Tokens and secrets are never part of it. */
static void log_access(request_t *req, const char *route, int64_t latency_us)
{
    char method[24];
    sanitize_method(req->method, method, sizeof method);
    const char *body = req->status >= 400 ? req->logged_body : NULL;
    size_t cap = 512 + (body ? strlen(body) : 0);
    char *fields = arena_alloc(req->arena, cap);
    if (fields == NULL)
        return;
    buf_t b = buf_over(fields, cap);
    buf_puts(&b, "\"request_id\":\"");
    buf_puts(&b, req->id);
    if (req->authenticated) {
        buf_puts(&b, "\",\"tenant_id\":\"");
        buf_puts(&b, req->claims.tenant_id);
    }
    buf_puts(&b, "\",\"client\":\"");
    buf_puts(&b, req->client_address); /* an address's text: digits, hex, '.', ':' */
    buf_puts(&b, "\",\"method\":\"");
    buf_puts(&b, method);
    buf_puts(&b, "\",\"route\":");
    if (route != NULL) {
        buf_putc(&b, '"');
        buf_puts(&b, route);
        buf_putc(&b, '"');
    } else {
        buf_puts(&b, "null");
    }
    buf_puts(&b, ",\"status\":");
    buf_put_u64(&b, (uint64_t)req->status);
    buf_puts(&b, ",\"latency_us\":");
    buf_put_i64(&b, latency_us);
    if (body != NULL) {
        buf_puts(&b, ",\"body\":");
        buf_puts(&b, body);
    }
    if (!b.overflow)
        log_event_raw(req->status >= 500 ? LOG_ERROR : LOG_INFO, "request", fields);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)connection;
    (void)toe;
    http_server_t *server = cls;
    request_t *req = *con_cls;
    if (req == NULL)
        return;
    *con_cls = NULL;
    int64_t latency_us = clock_monotonic_us() - req->start_us;
    if (req->status != 0) {
        size_t route_index = req->route_status == ROUTER_OK && req->match.route != NULL
                                 ? req->match.route->index
                                 : SIZE_MAX;
        metrics_observe_request(server->cfg.metrics, route_index, req->status, latency_us);
        log_access(req, route_index == SIZE_MAX ? NULL : server->cfg.route_labels[route_index],
                   latency_us);
    }
    if (req->stream.free_cls != NULL) /* answered with a stream that never got queued */
        req->stream.free_cls(req->stream.cls);
    free(req->out);
    free(req->body);
    leave_flight(req);
    if (req->holds_large_slot)
        atomic_fetch_sub(&server->large_bodies, 1);
    if (req->conn != NULL)
        conn_await_head(req->conn);
    arena_free(req->arena);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    log_event(LOG_WARN, "libmicrohttpd", json_pack("{s:s}", "detail", buf));
}

/* ---- start and stop --------------------------------------------------- */

static int listen_socket(const http_server_config_t *cfg, bool *ipv6, unsigned *port, char **err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    char service[8];
    snprintf(service, sizeof service, "%u", cfg->listen_port);
    int rc = getaddrinfo(cfg->listen_host, service, &hints, &res);
    if (rc != 0 || res == NULL) {
        if (asprintf(err, "cannot resolve listen address %s: %s", cfg->listen_host,
                     gai_strerror(rc)) < 0)
            *err = NULL;
        return -1;
    }
    *ipv6 = res->ai_family == AF_INET6;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        if (asprintf(err, "cannot listen on %s:%u: %s", cfg->listen_host, cfg->listen_port,
                     strerror(errno)) < 0)
            *err = NULL;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &len);
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

static struct MHD_Daemon *start_daemon(http_server_t *server, bool ipv6)
{
    const http_server_config_t *cfg = &server->cfg;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET |
                     MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, server,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, /* first, or early messages bypass it */
        MHD_OPTION_THREAD_POOL_SIZE, cfg->io_threads ? cfg->io_threads : 2u,
        MHD_OPTION_CONNECTION_LIMIT, cfg->connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, server,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, server,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, server,
        MHD_OPTION_END);
}

/* In this order: no new connection or sweep, then no handler, then no
 * connection; the acceptor's memory last, since libmicrohttpd's close
 * notifications release their address counts into it. */
static void server_free(http_server_t *server)
{
    if (server->acceptor != NULL)
        acceptor_stop(server->acceptor);
    if (server->pool != NULL)
        workpool_stop(server->pool); /* resumes every connection it holds */
    if (server->daemon != NULL)
        MHD_stop_daemon(server->daemon);
    acceptor_free(server->acceptor);
    proxies_free(server->trusted);
    pthread_mutex_destroy(&server->conns_lock);
    free(server);
}

static bool start_parts(http_server_t *server, int listen_fd, bool ipv6, char **err)
{
    const http_server_config_t *cfg = &server->cfg;
    server->daemon = start_daemon(server, ipv6);
    unsigned reserved_for_reads = cfg->threads / 4 ? cfg->threads / 4 : 1;
    server->pool = workpool_start(cfg->threads, reserved_for_reads, cfg->max_large_bodies, on_job,
                                  server);
    if (server->daemon == NULL || server->pool == NULL) {
        *err = strdup("cannot start the HTTP threads");
        close(listen_fd);
        return false;
    }
    acceptor_config_t acfg = {
        .listen_fd = listen_fd,
        .header_timeout_ms = (unsigned)cfg->header_timeout_ms,
        .head_max = HEAD_MAX,
        .connection_limit = cfg->connection_limit,
        .per_address_limit = cfg->per_ip_connection_limit,
        .trusted = server->trusted,
        .tick_ms = SWEEP_TICK_MS,
        .handoff = on_handoff,
        .refuse = on_refuse,
        .tick = on_tick,
        .user = server,
    };
    server->acceptor = acceptor_start(&acfg, err);
    if (server->acceptor == NULL) {
        close(listen_fd);
        return false;
    }
    return true;
}

/* Descriptors kept for everything but client connections: the database,
 * the engines' sockets, log files. */
#define RESERVED_FDS 256u

/* Raises the descriptor limit to the hard limit, so that the connection
 * limit can be reached; when it still cannot, lowers the connection limit to
 * what fits, and says so: refusing connections beats failing accept(). */
static void fit_descriptor_limit(http_server_config_t *cfg)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        return;
    if (lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
        getrlimit(RLIMIT_NOFILE, &lim);
    }
    if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= cfg->connection_limit + RESERVED_FDS)
        return;
    unsigned fits = lim.rlim_cur > 2 * RESERVED_FDS ? (unsigned)lim.rlim_cur - RESERVED_FDS
                                                     : (unsigned)lim.rlim_cur / 2;
    log_event(LOG_WARN, "connection limit lowered to the descriptor limit",
              json_pack("{s:i, s:i}", "configured", (json_int_t)cfg->connection_limit, "limit",
                        (json_int_t)fits));
    cfg->connection_limit = fits;
}

http_server_t *http_server_start(const http_server_config_t *cfg, char **err)
{
    http_server_t *server = calloc(1, sizeof *server);
    if (server == NULL)
        return NULL;
    server->cfg = *cfg;
    fit_descriptor_limit(&server->cfg);
    pthread_mutex_init(&server->conns_lock, NULL);
    server->trusted = proxies_parse(cfg->trusted_proxies ? cfg->trusted_proxies : "", err);
    bool ipv6 = false;
    int listen_fd = server->trusted ? listen_socket(cfg, &ipv6, &server->port, err) : -1;
    if (listen_fd < 0 || !start_parts(server, listen_fd, ipv6, err)) {
        server_free(server);
        return NULL;
    }
    if (cfg->base_url != NULL && cfg->base_url[0] == '\0') {
        const char *fmt = ipv6 ? "http://[%s]:%u" : "http://%s:%u";
        snprintf(cfg->base_url, cfg->base_url_cap, fmt, cfg->listen_host, server->port);
    }
    return server;
}

unsigned http_server_port(const http_server_t *server)
{
    return server->port;
}

void http_server_stop(http_server_t *server)
{
    atomic_store(&server->draining, true);
    acceptor_close_listener(server->acceptor);
    int64_t until = clock_monotonic_ms() + server->cfg.drain_ms;
    while (atomic_load(&server->in_flight) > 0 && clock_monotonic_ms() < until)
        clock_sleep_ms(5);
    server_free(server);
}
