/* send: one request through the retry policy (retry.c) with a bearer token
 * (token.c): taxd_send, and taxd_get / taxd_list on top of it.
 *
 * An attempt is one HTTP exchange on a pooled easy handle (client.c). After
 * it, tc_decide says what the answer deserves and the loop applies the
 * limits: at most max_attempts requests, and no wait that would end past
 * max_retry_ms after the first attempt began (a 429 whose Retry-After is
 * longer than what remains is final at once, not slept through).
 *
 * A create whose answer was lost (reset or timeout after the request left,
 * or a 5xx) is never sent again blindly: its readback_path is read; a 2xx
 * there is the answer (status 200, the readback's body), a 404 means
 * nothing was created and the create is sent again (after a backoff), any
 * other answer is the error. One readback is allowed past max_attempts, so
 * that a caller always learns whether the record exists when it can be
 * known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include <taxd/client.h>

#include "internal.h"

enum {
    BODY_MAX = 64 * 1024 * 1024, /* an answer larger than this is refused (TAXD_E_PROTOCOL) */
    HEADER_VALUE_MAX = 128,
};

/* One exchange's outcome. */
typedef struct {
    int status;                  /* 0: no answer (code says why) */
    taxd_code code;              /* TAXD_OK when an answer came */
    bool nothing_sent;           /* no byte of the request reached the wire */
    bool final;                  /* a transport failure no retry can mend (TLS, URL) */
    char *body;
    size_t len, cap;
    bool too_big;
    char request_id[HEADER_VALUE_MAX];
    char retry_after[HEADER_VALUE_MAX];
    char curl_error[CURL_ERROR_SIZE];
    long elapsed_ms;
} exchange;

static void exchange_clear(exchange *x)
{
    free(x->body);
    memset(x, 0, sizeof *x);
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    exchange *x = userdata;
    size_t add = size * n;
    if (add > BODY_MAX - x->len) {
        x->too_big = true;
        return 0;
    }
    if (x->len + add + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (cap < x->len + add + 1)
            cap *= 2;
        char *grown = realloc(x->body, cap);
        if (grown == NULL)
            return 0;
        x->body = grown;
        x->cap = cap;
    }
    memcpy(x->body + x->len, data, add);
    x->len += add;
    x->body[x->len] = '\0';
    return add;
}

/* Copies header `name`'s value (case-insensitive name) into out. */
static void take_header(const char *line, size_t len, const char *name, char *out)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t vlen = (size_t)(end - v);
    if (vlen >= HEADER_VALUE_MAX)
        vlen = HEADER_VALUE_MAX - 1;
    memcpy(out, v, vlen);
    out[vlen] = '\0';
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    exchange *x = userdata;
    size_t len = size * n;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a 100 Continue): forget the last one's headers */
        x->request_id[0] = x->retry_after[0] = '\0';
        return len;
    }
    take_header(line, len, "x-request-id", x->request_id);
    take_header(line, len, "retry-after", x->retry_after);
    return len;
}

/* What a failed curl_easy_perform means for the policy. */
static void classify(exchange *x, CURLcode rc, CURL *h)
{
    curl_off_t sent = 0;
    curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent);
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        x->code = TAXD_E_TRANSPORT;
        x->nothing_sent = true;
        return;
    case CURLE_OPERATION_TIMEDOUT:
        x->code = TAXD_E_TIMEOUT;
        x->nothing_sent = sent == 0;
        return;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        x->code = TAXD_E_TRANSPORT;
        x->nothing_sent = sent == 0;
        return;
    case CURLE_WRITE_ERROR:
        x->code = x->too_big ? TAXD_E_PROTOCOL : TAXD_E_NOMEM;
        x->final = true;
        return;
    case CURLE_OUT_OF_MEMORY:
        x->code = TAXD_E_NOMEM;
        x->final = true;
        return;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
        x->code = TAXD_E_PROTOCOL;
        x->final = true;
        return;
    default: /* TLS verification, a bad URL or CA file: the same next time */
        x->code = TAXD_E_TRANSPORT;
        x->final = true;
        return;
    }
}

/* One request on the wire. Fills x; returns false only when out of memory
 * before anything was tried. */
static bool exchange_run(taxd_client *c, const char *method, const char *path, const char *body,
                         size_t body_len, bool safe, const char *token, exchange *x)
{
    memset(x, 0, sizeof *x);
    size_t url_len = strlen(c->base_url) + strlen(path) + 1;
    char *url = malloc(url_len);
    size_t auth_len = token ? strlen(token) + 32 : 0;
    char *auth = token ? malloc(auth_len) : NULL;
    CURL *h = tc_handle_take(c);
    struct curl_slist *headers = NULL, *more;
    bool ok = url && (!token || auth) && h;
    if (ok) {
        snprintf(url, url_len, "%s%s", c->base_url, path);
        if (token)
            snprintf(auth, auth_len, "Authorization: Bearer %s", token);
        const char *lines[] = {"Accept: application/json", "Expect:",
                               body ? "Content-Type: application/json" : NULL, auth};
        for (size_t i = 0; ok && i < sizeof lines / sizeof lines[0]; i++) {
            if (lines[i] == NULL)
                continue;
            if ((more = curl_slist_append(headers, lines[i])) == NULL)
                ok = false;
            else
                headers = more;
        }
    }
    if (!ok) {
        x->code = TAXD_E_NOMEM;
        x->final = true;
    } else {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->curl_error);
        if (!safe) {
            /* libcurl silently sends a request again when a reused
             * connection dies before any answer byte (it takes the
             * connection for one the server had closed while idle). For a
             * request that may not be resent that is a blind resend: such a
             * request gets a connection of its own, so a lost answer is
             * ours to see (and to read back). */
            curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
        }
        if (strcmp(method, "GET") == 0) {
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        } else {
            if (strcmp(method, "POST") != 0)
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
            if (body != NULL || strcmp(method, "POST") == 0) {
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
            }
        }
        int64_t t0 = tc_monotonic_ms();
        CURLcode rc = curl_easy_perform(h);
        x->elapsed_ms = (long)(tc_monotonic_ms() - t0);
        if (rc == CURLE_OK) {
            long status = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
            x->status = (int)status;
            x->code = TAXD_OK;
        } else {
            classify(x, rc, h);
            if (x->curl_error[0] == '\0')
                snprintf(x->curl_error, sizeof x->curl_error, "%s", curl_easy_strerror(rc));
        }
        /* the handle keeps pointers to headers and url until its next reset */
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    }
    curl_slist_free_all(headers);
    if (auth) {
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    free(url);
    tc_handle_give(c, h);
    return ok;
}

static void log_answer(taxd_client *c, const exchange *x)
{
    if (x->status == 0)
        tc_log(c, '<', "no answer after %ld ms: %s", x->elapsed_ms, x->curl_error);
    else if (x->request_id[0])
        tc_log(c, '<', "%d in %ld ms (request id %s)", x->status, x->elapsed_ms, x->request_id);
    else
        tc_log(c, '<', "%d in %ld ms", x->status, x->elapsed_ms);
}

/* The final error of x (its answer, or why there was none). */
static taxd_code exchange_error(const exchange *x, const char *method, const char *path,
                                int64_t now_ms, taxd_error *err)
{
    if (x->status != 0)
        return tc_error_from_answer(err, x->status, x->body, x->len,
                                    x->request_id[0] ? x->request_id : NULL,
                                    tc_retry_after_ms(x->retry_after[0] ? x->retry_after : NULL,
                                                      now_ms));
    if (x->code == TAXD_E_PROTOCOL && x->too_big)
        return tc_fail(err, x->code, "%s %s: the answer is larger than %d bytes", method, path,
                       BODY_MAX);
    if (x->code == TAXD_E_NOMEM)
        return tc_fail(err, x->code, "%s %s: out of memory", method, path);
    return tc_fail(err, x->code, "%s %s: %s%s", method, path,
                   x->code == TAXD_E_TIMEOUT ? "no answer in time: " : "no answer: ",
                   x->curl_error);
}

static bool is_success(int status)
{
    return status >= 200 && status < 300;
}

static const char *reason_of(const exchange *x, char *buf, size_t size)
{
    if (x->status != 0)
        snprintf(buf, size, "%d", x->status);
    else
        snprintf(buf, size, "%s", x->code == TAXD_E_TIMEOUT ? "a timeout" : "no answer");
    return buf;
}

static taxd_code check_request(const taxd_request *r)
{
    if (r == NULL || r->method == NULL || r->path == NULL || r->path[0] != '/')
        return TAXD_E_INVALID;
    for (const char *m = r->method; *m; m++)
        if (*m < 'A' || *m > 'Z')
            return TAXD_E_INVALID;
    for (const char *p = r->path; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return TAXD_E_INVALID;
    return TAXD_OK;
}

/* The loop's state of one request. */
typedef struct {
    taxd_client *c;
    const taxd_request *r;
    bool with_token, safe, create;
    int attempts, retries;
    bool refreshed, readback_spent;
    uint64_t stale_generation, generation;
    int64_t started_ms;
} run_state;

/* Sleeps before the next attempt when the limits allow; false (and nothing
 * slept) when they do not. */
static bool wait_for_retry(run_state *s, const exchange *x)
{
    taxd_client *c = s->c;
    if (s->attempts >= c->max_attempts)
        return false;
    long remaining = c->max_retry_ms - (long)(tc_monotonic_ms() - s->started_ms);
    if (remaining <= 0)
        return false;
    long delay = -1;
    if (x->status == 429)
        delay = tc_retry_after_ms(x->retry_after[0] ? x->retry_after : NULL, tc_now_ms());
    if (delay > remaining)
        return false; /* Retry-After says: not within the budget */
    if (delay < 0) {
        delay = tc_backoff_ms(c->backoff_base_ms, c->backoff_max_ms, s->retries + 1);
        if (delay > remaining)
            delay = remaining;
    }
    s->retries++;
    char why[32];
    tc_log(c, '*', "retry %d/%d in %ld ms after %s", s->attempts + 1, c->max_attempts, delay,
           reason_of(x, why, sizeof why));
    tc_sleep_ms(delay);
    return true;
}

/* One attempt of method/path: token, exchange, logs. */
static taxd_code attempt(run_state *s, const char *method, const char *path, const char *body,
                         size_t len, exchange *x, taxd_error *err)
{
    char *token = NULL;
    if (s->with_token) {
        taxd_code rc = tc_token_get(s->c, s->stale_generation, &token, &s->generation, err);
        if (rc != TAXD_OK)
            return rc;
    }
    if (body != NULL)
        tc_log(s->c, '>', "%s %s (%zu bytes)", method, path, len);
    else
        tc_log(s->c, '>', "%s %s", method, path);
    bool safe = s->safe || strcmp(method, "GET") == 0; /* a readback is a GET */
    bool ok = exchange_run(s->c, method, path, body, len, safe, token, x);
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
    s->attempts++;
    if (!ok)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    log_answer(s->c, x);
    return TAXD_OK;
}

/* Moves x into response (when given). */
static void give_response(const run_state *s, exchange *x, taxd_response *response)
{
    if (response == NULL)
        return;
    response->status = x->status;
    response->body = x->body ? x->body : strdup("");
    response->body_len = x->len;
    response->request_id = x->request_id[0] ? strdup(x->request_id) : NULL;
    response->attempts = s->attempts;
    x->body = NULL;
}

/* The end of the loop: success or the error of x. */
static taxd_code finish(run_state *s, const char *method, const char *path, exchange *x,
                        taxd_response *response, taxd_error *err)
{
    taxd_code rc = TAXD_OK;
    if (x->status == 0 || !is_success(x->status))
        rc = exchange_error(x, method, path, tc_now_ms(), err);
    if (err)
        err->attempts = s->attempts;
    if (x->status != 0)
        give_response(s, x, response);
    else if (response)
        response->attempts = s->attempts;
    exchange_clear(x);
    return rc;
}

taxd_code tc_run(taxd_client *c, const taxd_request *r, bool with_token, taxd_response *response,
                 taxd_error *err)
{
    if (response)
        memset(response, 0, sizeof *response);
    if (c == NULL || check_request(r) != TAXD_OK)
        return tc_fail(err, TAXD_E_INVALID, "a request needs a client, a method in capitals "
                                            "and a path that starts with / (escaped)");
    run_state s = {.c = c, .r = r, .with_token = with_token, .refreshed = !with_token,
                   .safe = strcmp(r->method, "GET") == 0 || (r->flags & TAXD_SAFE),
                   .create = (r->flags & TAXD_CREATE) && !(r->flags & TAXD_SAFE),
                   .started_ms = tc_monotonic_ms()};
    size_t len = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
    exchange x = {0}, lost = {0};
    bool reading_back = false;
    for (;;) {
        const char *method = reading_back ? "GET" : r->method;
        const char *path = reading_back ? r->readback_path : r->path;
        taxd_code rc = attempt(&s, method, path, reading_back ? NULL : r->body, len, &x, err);
        if (rc != TAXD_OK) {
            if (err)
                err->attempts = s.attempts;
            exchange_clear(&lost);
            return rc;
        }
        if (x.final)
            break;
        if (reading_back && x.status == 404) {
            /* nothing was created: the create may be sent again */
            tc_log(c, '*', "readback %s: 404, the create was not written", path);
            reading_back = false;
            exchange_clear(&x);
            if (!wait_for_retry(&s, &lost)) {
                x = lost; /* the create's own failure is the answer */
                memset(&lost, 0, sizeof lost);
                method = r->method, path = r->path;
                return finish(&s, method, path, &x, response, err);
            }
            exchange_clear(&lost);
            continue;
        }
        tc_decision d = tc_decide(x.status, x.code, x.nothing_sent, s.safe || reading_back,
                                  s.create && !reading_back, s.refreshed);
        if (d == TC_REFRESH_TOKEN) {
            tc_log(c, '*', "%d: minting a new token and sending again, once", x.status);
            s.refreshed = true;
            s.stale_generation = s.generation;
            exchange_clear(&x);
            continue;
        }
        if (d == TC_READBACK && r->readback_path != NULL &&
            (s.attempts < c->max_attempts || !s.readback_spent)) {
            char why[32];
            tc_log(c, '*', "the answer to a create was lost (%s): reading back %s",
                   reason_of(&x, why, sizeof why), r->readback_path);
            if (s.attempts >= c->max_attempts)
                s.readback_spent = true;
            exchange_clear(&lost);
            lost = x;
            memset(&x, 0, sizeof x);
            reading_back = true;
            continue;
        }
        if (d == TC_RETRY && wait_for_retry(&s, &x)) {
            exchange_clear(&x);
            continue;
        }
        exchange_clear(&lost);
        return finish(&s, method, path, &x, response, err);
    }
    exchange_clear(&lost);
    return finish(&s, reading_back ? "GET" : r->method,
                  reading_back ? r->readback_path : r->path, &x, response, err);
}

taxd_code taxd_send(taxd_client *client, const taxd_request *request, taxd_response *response,
                    taxd_error *err)
{
    return tc_run(client, request, true, response, err);
}

taxd_code taxd_get(taxd_client *client, const char *path, char **json, taxd_error *err)
{
    if (json)
        *json = NULL;
    taxd_request r = {.method = "GET", .path = path};
    taxd_response resp;
    taxd_code rc = taxd_send(client, &r, &resp, err);
    if (rc == TAXD_OK && json) {
        *json = resp.body;
        resp.body = NULL;
    }
    taxd_response_clear(&resp);
    return rc;
}

/* path with cursor=... added to its query (malloc'd). */
static char *with_cursor(const char *path, const char *cursor)
{
    char *escaped = taxd_escape(cursor);
    if (escaped == NULL)
        return NULL;
    size_t n = strlen(path) + strlen(escaped) + 16;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%ccursor=%s", path, strchr(path, '?') ? '&' : '?', escaped);
    free(escaped);
    return out;
}

/* Hands one page's data to on_page; *next receives meta.next_cursor
 * (malloc'd) or NULL at the end. */
static taxd_code one_page(const char *body, taxd_page_fn on_page, void *userdata, char **next,
                          taxd_error *err)
{
    *next = NULL;
    json_error_t jerr;
    json_t *page = json_loads(body, 0, &jerr);
    json_t *data = json_object_get(page, "data");
    if (!json_is_array(data)) {
        json_decref(page);
        return tc_fail(err, TAXD_E_PROTOCOL, "a list page without a data array");
    }
    char *text = json_dumps(data, JSON_COMPACT);
    json_t *cursor = json_object_get(json_object_get(page, "meta"), "next_cursor");
    bool more = json_is_string(cursor) && json_string_length(cursor) > 0;
    if (more)
        *next = strdup(json_string_value(cursor));
    json_decref(page); /* cursor goes with it */
    if (text == NULL || (more && *next == NULL)) {
        free(text);
        free(*next);
        *next = NULL;
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    }
    bool go_on = on_page(userdata, text);
    free(text);
    if (!go_on) {
        free(*next);
        *next = NULL;
        return tc_fail(err, TAXD_E_ABORTED, "stopped by the page callback");
    }
    return TAXD_OK;
}

taxd_code taxd_list(taxd_client *client, const char *path, taxd_page_fn on_page, void *userdata,
                    taxd_error *err)
{
    if (path == NULL || on_page == NULL)
        return tc_fail(err, TAXD_E_INVALID, "taxd_list needs a path and a page callback");
    char *cursor = NULL;
    taxd_code rc = TAXD_OK;
    do {
        char *page_path = cursor ? with_cursor(path, cursor) : strdup(path);
        free(cursor);
        cursor = NULL;
        if (page_path == NULL)
            return tc_fail(err, TAXD_E_NOMEM, "out of memory");
        char *body = NULL;
        rc = taxd_get(client, page_path, &body, err);
        free(page_path);
        if (rc == TAXD_OK)
            rc = one_page(body, on_page, userdata, &cursor, err);
        free(body);
    } while (rc == TAXD_OK && cursor != NULL);
    free(cursor);
    return rc;
}
