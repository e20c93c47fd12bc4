/* server: libmicrohttpd glue and the transport's phases. See server.h.
 *
 * libmicrohttpd calls the access handler several times per request: once with
 * the headers, then once per body chunk, then once more with no data. taxd
 * creates its request (arena, id, raw target) in the URI-log callback, which
 * sees the target before libmicrohttpd percent-decodes it, decides the body
 * limit and load shedding on the first call (a response queued then is what
 * the client receives), swallows body chunks, and on the last call answers
 * an unrouted request itself or hands a routed one to the dispatch callback.
 * The completion callback writes the access log and metrics and frees the
 * arena, so nothing a request allocated can outlive it. A streamed body
 * (reply_stream, report downloads) is the one exception by design: its
 * reader owns its state and libmicrohttpd frees it when the body is done.
 *
 * The dispatch callback may block (on the database); the pool is sized well
 * above the core count for that reason, and the application bounds its waits
 * by the request's deadline (504). */
#include "http/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "http/errors.h"
#include "http/url.h"

/* Past this many bytes of an oversized chunked body, stop reading and answer
 * at once: a client streaming without end must not hold a thread forever. */
#define DISCARD_CAP (64u * 1024 * 1024)
#define REQUEST_ARENA_BLOCK 8192
/* Bytes libmicrohttpd asks a streamed body's reader for at a time. */
#define STREAM_BLOCK (64u * 1024)

_Static_assert(REPLY_STREAM_END == MHD_CONTENT_READER_END_OF_STREAM &&
                   REPLY_STREAM_ERROR == MHD_CONTENT_READER_END_WITH_ERROR &&
                   REPLY_STREAM_SIZE_UNKNOWN == MHD_SIZE_UNKNOWN,
               "reply_stream_t speaks libmicrohttpd's reader protocol");

struct http_server {
    http_server_config_t cfg;
    struct MHD_Daemon *daemon;
    _Atomic uint64_t request_seq;
    _Atomic unsigned in_flight;  /* requests between first byte and completion */
    _Atomic bool draining;       /* stopping: answer with Connection: close */
    unsigned port;
    /* the way back from the one panic MHD_quiesce_daemon may raise */
    _Atomic bool quiescing;
    pthread_t quiescer;
    jmp_buf quiesce_jump;
};

/* ---- response emission ------------------------------------------------ */

static enum MHD_Result emit(struct MHD_Connection *connection, request_t *req)
{
    if (req->status == 0) /* run_phases answers every request; kept as a last guard */
        reply_internal_error(req);
    struct MHD_Response *r;
    if (req->status >= 400 && req->out != NULL &&
        memchr(req->out, '\n', req->out_len) == NULL) /* compact JSON: one log line */
        req->logged_body = arena_strndup(req->arena, req->out, req->out_len);
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
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "x-request-id", req->id);
    if (req->content_type != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, req->content_type);
    for (size_t i = 0; i < req->header_count; i++)
        MHD_add_response_header(r, req->header_names[i], req->header_values[i]);
    if (atomic_load(&req->server->draining))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(connection, (unsigned)req->status, r);
    MHD_destroy_response(r);
    /* The request's work ends here, before a byte of the answer is sent: a
     * client that sends its next request as soon as it reads this one must
     * never find it still counted as in flight. */
    if (req->counted_in_flight) {
        atomic_fetch_sub(&req->server->in_flight, 1);
        req->counted_in_flight = false;
    }
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
    cfg->dispatch(cfg->user, req);
    if (req->status == 0) {
        request_log_failure(req, "the application answered nothing");
        reply_internal_error(req);
    }
}

/* ---- libmicrohttpd callbacks ------------------------------------------ */

static void peer_address(struct MHD_Connection *connection, char *out, size_t cap)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL)
        return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)cap);
}

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
    peer_address(connection, req->client_address, sizeof req->client_address);
    return req;
}

static size_t route_body_limit(const request_t *req)
{
    size_t limit = req->server->cfg.max_body;
    if (req->route_status == ROUTER_OK && req->match.route->max_body > limit)
        limit = req->match.route->max_body;
    return limit;
}

static bool declared_too_large(request_t *req)
{
    const char *cl = request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl == NULL)
        return false;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    return *end == '\0' && n > req->body_limit;
}

static enum MHD_Result first_call(struct MHD_Connection *connection, request_t *req)
{
    http_server_t *server = req->server;
    unsigned in_flight = atomic_fetch_add(&server->in_flight, 1) + 1;
    req->counted_in_flight = true;
    route_request(req);
    req->body_limit = route_body_limit(req);
    if (in_flight > server->cfg.max_in_flight) {
        metrics_count_limit_reject(server->cfg.metrics, METRICS_LIMIT_NODE);
        reply_header(req, "Retry-After", "1");
        reply_error_body(req, 429, error_body_rate_limited(ERROR_LIMIT_NODE, 1));
        return emit(connection, req);
    }
    if (declared_too_large(req)) {
        reply_error(req, 413, "Request body exceeds the limit of %zu bytes", req->body_limit);
        return emit(connection, req);
    }
    return MHD_YES;
}

static enum MHD_Result take_body(request_t *req, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    if (req->body_too_large || req->body_len + n > req->body_limit) {
        req->body_too_large = true;
        req->discarded += n;
        return req->discarded > DISCARD_CAP ? MHD_NO : MHD_YES;
    }
    size_t need = req->body_len + n + 1;
    if (need > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        char *grown = arena_alloc(req->arena, cap);
        if (grown == NULL)
            return MHD_NO;
        if (req->body_len > 0)
            memcpy(grown, req->body, req->body_len);
        req->body = grown;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = '\0';
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
    if (req->status != 0) { /* answered early: swallow the rest */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!req->started) {
        req->started = true;
        req->method = method;
        return first_call(connection, req);
    }
    if (*upload_data_size > 0)
        return take_body(req, upload_data, upload_data_size);
    if (req->body_too_large)
        reply_error(req, 413, "Request body exceeds the limit of %zu bytes", req->body_limit);
    else
        run_phases(req);
    return emit(connection, req);
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
    if (req->counted_in_flight)
        atomic_fetch_sub(&server->in_flight, 1);
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

/* libmicrohttpd 0.9.75 races itself in MHD_quiesce_daemon: it marks a pool
 * thread quiesced, and that thread may take the listening socket out of its
 * epoll set (tolerating ENOENT) just before quiesce does the same, which
 * then fails and panics. The library declares its panic path unreachable
 * once the handler returns, so this handler never returns: that one panic,
 * raised in the thread that is quiescing, jumps back to quiesce_listener,
 * which asks again (the library holds no lock there, and the raced thread
 * has by then recorded the socket as out of its set). Every other panic
 * aborts, as the library's default handler does. */
static void on_mhd_panic(void *cls, const char *file, unsigned int line, const char *reason)
{
    http_server_t *server = cls;
    bool known_race = reason != NULL &&
                      strstr(reason, "Failed to remove listen FD from epoll set") != NULL;
    bool recoverable = known_race && server != NULL && atomic_load(&server->quiescing) &&
                       pthread_equal(pthread_self(), server->quiescer);
    log_event(recoverable ? LOG_WARN : LOG_ERROR, "libmicrohttpd panic",
              json_pack("{s:s, s:i, s:s}", "file", file != NULL ? file : "?", "line", (int)line,
                        "reason", reason != NULL ? reason : "?"));
    if (recoverable)
        longjmp(server->quiesce_jump, 1);
    abort();
}

/* MHD_quiesce_daemon, asked again when it lost the race above. The
 * listening socket (to close), or MHD_INVALID_SOCKET when it could not be
 * taken: MHD_stop_daemon then closes it. */
static MHD_socket quiesce_listener(http_server_t *server)
{
    server->quiescer = pthread_self();
    for (volatile int attempt = 0; attempt < 3; attempt++) {
        atomic_store(&server->quiescing, true);
        if (setjmp(server->quiesce_jump) == 0) {
            MHD_socket listener = MHD_quiesce_daemon(server->daemon);
            atomic_store(&server->quiescing, false);
            return listener;
        }
        atomic_store(&server->quiescing, false);
    }
    return MHD_INVALID_SOCKET;
}

/* ---- start and stop --------------------------------------------------- */

static int resolve_listen(const http_server_config_t *cfg, struct sockaddr_storage *addr,
                          bool *ipv6, char **err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char port[8];
    snprintf(port, sizeof port, "%u", cfg->listen_port);
    int rc = getaddrinfo(cfg->listen_host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        if (asprintf(err, "cannot resolve listen address %s: %s", cfg->listen_host,
                     gai_strerror(rc)) < 0)
            *err = NULL;
        return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *ipv6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return 0;
}

http_server_t *http_server_start(const http_server_config_t *cfg, char **err)
{
    struct sockaddr_storage addr;
    bool ipv6 = false;
    if (resolve_listen(cfg, &addr, &ipv6, err) != 0)
        return NULL;
    http_server_t *server = calloc(1, sizeof *server);
    if (server == NULL)
        return NULL;
    server->cfg = *cfg;
    MHD_set_panic_func(on_mhd_panic, server);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    server->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->listen_port, NULL, NULL, on_access, server,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, /* first, or early messages bypass it */
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, cfg->threads,
        MHD_OPTION_CONNECTION_LIMIT, cfg->connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->per_ip_connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, server,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, server,
        MHD_OPTION_END);
    if (server->daemon == NULL) {
        if (asprintf(err, "cannot listen on %s:%u", cfg->listen_host, cfg->listen_port) < 0)
            *err = NULL;
        MHD_set_panic_func(on_mhd_panic, NULL);
        free(server);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    server->port = info ? info->port : cfg->listen_port;
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
    MHD_socket listener = quiesce_listener(server);
    if (listener != MHD_INVALID_SOCKET)
        close(listener);
    int64_t until = clock_monotonic_ms() + server->cfg.drain_ms;
    while (atomic_load(&server->in_flight) > 0 && clock_monotonic_ms() < until)
        clock_sleep_ms(5);
    MHD_stop_daemon(server->daemon);
    MHD_set_panic_func(on_mhd_panic, NULL); /* server is freed */
    free(server);
}
