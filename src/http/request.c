/* request: the handler-facing side of an exchange. Every response a handler
 * makes goes through reply_*, which serializes JSON compactly, remembers
 * error bodies for the access log and never builds error JSON itself
 * (src/http/errors.c does). A second reply on the same request is a bug; it
 * is caught by an assertion in debug builds and ignored otherwise. */
#include "http/request.h"

#include <assert.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/utf8.h"
#include "http/errors.h"
#include "http/url.h"
#include "core/validate.h"

const char *request_client_address(const request_t *req)
{
    return req->client_address;
}

const char *request_header(const request_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

const char *request_param(const request_t *req, const char *name)
{
    return router_param(&req->match, name);
}

static void free_malloced(void *p)
{
    free(p);
}

const char *request_query(request_t *req, const char *name, bool *malformed)
{
    char *value = NULL;
    int rc = url_query_get(req->query, name, &value);
    *malformed = rc < 0;
    if (rc <= 0)
        return NULL;
    if (arena_defer(req->arena, free_malloced, value) != 0) {
        free(value);
        *malformed = true;
        return NULL;
    }
    return value;
}

static void decref_json(void *value)
{
    json_decref(value);
}

json_t *request_json(request_t *req, bool allow_empty)
{
    char msg[256];
    const char *type = request_header(req, "content-type");
    bool text_json = req->match.route != NULL && (req->match.route->flags & ROUTE_TEXT_JSON) != 0;
    json_t *body = text_json ? v_parse_body_text(req->body, req->body_len, type, allow_empty, msg,
                                                 sizeof msg)
                             : v_parse_body(req->body, req->body_len, type, allow_empty, msg,
                                            sizeof msg);
    if (body == NULL) {
        if (!(allow_empty && msg[0] == '\0'))
            reply_error(req, 400, "%s", msg);
        return NULL;
    }
    if (arena_defer(req->arena, decref_json, body) != 0) {
        json_decref(body);
        reply_error(req, 500, "Out of memory");
        return NULL;
    }
    return body;
}

static void set_output(request_t *req, int status, const char *content_type, char *text,
                       size_t len)
{
    assert(req->status == 0 && "a request is answered once");
    if (req->status != 0) {
        free(text);
        return;
    }
    req->status = status;
    req->content_type = content_type;
    req->out = text;
    req->out_len = len;
}

void reply_json(request_t *req, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        static const char fallback[] = "{\"error\":\"Internal Server Error\","
                                       "\"message\":\"Out of memory\"}";
        text = strdup(fallback);
        status = 500;
    }
    set_output(req, status, "application/json", text, text ? strlen(text) : 0);
}

void reply_data(request_t *req, int status, json_t *data)
{
    json_t *body = json_object();
    json_object_set_new(body, "data", data);
    reply_json(req, status, body);
}

void reply_error_body(request_t *req, int status, json_t *body)
{
    reply_json(req, status, body);
}

/* Messages quote ids as the client sent them, which may be any bytes: made
 * valid UTF-8 here (and never cut inside a character), once for every
 * handler, or the body could not be serialized at all. */
void reply_error(request_t *req, int status, const char *fmt, ...)
{
    char raw[2048], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    utf8_sanitize(raw, msg, sizeof msg);
    reply_json(req, status, error_body(status, msg));
}

void reply_invalid(request_t *req, const char *message, json_t *issues)
{
    reply_json(req, 400, error_body_validation(message, issues));
}

void reply_internal_error(request_t *req)
{
    reply_json(req, 500, error_body(500, "The request could not be completed"));
}

void request_log_failure(const request_t *req, const char *what)
{
    log_event(LOG_ERROR, "request failed", json_pack("{s:s, s:s}", "request_id", req->id,
                                                     "failed", what));
}

void reply_text(request_t *req, int status, const char *content_type, char *text, size_t len)
{
    set_output(req, status, content_type, text, len);
}

void reply_stream(request_t *req, int status, const char *content_type, uint64_t size,
                  reply_stream_read_fn read, void *cls, void (*free_cls)(void *cls))
{
    assert(req->status == 0 && "a request is answered once");
    if (req->status != 0) {
        if (free_cls != NULL)
            free_cls(cls);
        return;
    }
    set_output(req, status, content_type, NULL, 0);
    req->stream = (reply_stream_t){read, cls, free_cls, size};
}

void reply_empty(request_t *req, int status)
{
    set_output(req, status, NULL, NULL, 0);
}

void reply_header(request_t *req, const char *name, const char *value)
{
    if (req->header_count >= REQUEST_MAX_HEADERS)
        return;
    req->header_names[req->header_count] = name;
    req->header_values[req->header_count] = value;
    req->header_count++;
}

void reply_header_u64(request_t *req, const char *name, uint64_t value)
{
    if (req->header_count >= REQUEST_MAX_HEADERS)
        return;
    char *text = req->header_numbers[req->header_count];
    buf_t b = buf_over(text, sizeof req->header_numbers[0]);
    buf_put_u64(&b, value);
    reply_header(req, name, text);
}
