/* client/reports: trigger a report, wait for it, download its file.
 *
 * A report is three conversations with the service:
 *   1. the trigger, a POST that creates (TAXD_CREATE). No route reads a
 *      report back by anything the caller chose, so a trigger whose answer
 *      was lost cannot be recovered: it is reported as failed, never sent
 *      again (sending it again could start a second report, and a tenant's
 *      active reports are limited). The caller sees TAXD_E_TRANSPORT or
 *      TAXD_E_TIMEOUT and decides.
 *   2. the wait: GET of the status route (safe, so taxd_send retries it)
 *      every 250 ms, doubling to 5 s, until `completed` or `failed`. The
 *      progress callback hears every poll, so a caller can redraw a line.
 *   3. the download: the status route hands out a signed link valid 15
 *      minutes that needs no token. The body is streamed to PATH.part and
 *      renamed into place only when complete, so PATH is never a partial
 *      file. A link refused with 403 (expired: the wait or a slow start took
 *      longer than its life) is replaced by a fresh one from the status
 *      route; so is a link whose transfer failed (reset, 5xx): both up to
 *      3 times. The link is an absolute URL from taxd, but a service behind
 *      a proxy may hand out a relative one: both work (tc_report_link_url).
 *
 * The signed link is a credential for 15 minutes: it is logged without its
 * query string. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "internal.h"
#include "reports.h"

#define REPORT_POLL_FIRST_MS 250
#define REPORT_POLL_MAX_MS 5000
#define REPORT_LINK_RETRIES 3
#define ERROR_BODY_CAP (64 * 1024)

static const char *kind_route(taxd_report_kind kind)
{
    switch (kind) {
    case TAXD_REPORT_INVENTORY_SUMMARY: return "/v1/reports/inventory-summary";
    case TAXD_REPORT_GAINS: return "/v1/reports/gains";
    }
    return NULL;
}

/* "<route>/<escaped id>", malloc'd; NULL when out of memory. */
static char *status_path(const char *route, const char *report_id)
{
    char *id = taxd_escape(report_id);
    if (!id)
        return NULL;
    size_t n = strlen(route) + strlen(id) + 2;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%s", route, id);
    free(id);
    return path;
}

/* A string member of a JSON object text, malloc'd; NULL when absent. */
static char *json_member(const char *json, const char *key)
{
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    const char *v = root ? json_string_value(json_object_get(root, key)) : NULL;
    char *out = v ? strdup(v) : NULL;
    json_decref(root);
    return out;
}

/* ---- trigger ------------------------------------------------------------ */

taxd_code taxd_report_trigger(taxd_client *client, taxd_report_kind kind, const char *body,
                              char **report_id, taxd_error *err)
{
    const char *route = kind_route(kind);
    if (!client || !route || !report_id)
        return tc_fail(err, TAXD_E_INVALID, "report trigger: a client, a report kind and "
                                            "report_id are required");
    *report_id = NULL;
    taxd_request req = {.method = "POST", .path = route, .body = body ? body : "{}",
                        .flags = TAXD_CREATE, .readback_path = NULL};
    taxd_response resp = {0};
    taxd_code rc = taxd_send(client, &req, &resp, err);
    if (rc != TAXD_OK) {
        taxd_response_clear(&resp);
        return rc;
    }
    *report_id = json_member(resp.body, "report_id");
    rc = *report_id ? TAXD_OK
                    : tc_fail(err, TAXD_E_PROTOCOL, "report trigger: the answer (status %d, "
                                                    "request id %s) has no report_id",
                              resp.status, resp.request_id ? resp.request_id : "none");
    taxd_response_clear(&resp);
    return rc;
}

/* ---- wait --------------------------------------------------------------- */

/* The report's status, its failure message when failed. */
static taxd_code read_status(const char *json, char **status, char **failure, taxd_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    const char *s = root ? json_string_value(json_object_get(root, "status")) : NULL;
    if (!s) {
        json_decref(root);
        return tc_fail(err, TAXD_E_PROTOCOL, "report status: the answer has no status");
    }
    *status = strdup(s);
    json_t *e = json_object_get(root, "error");
    const char *m = json_string_value(json_object_get(e, "message"));
    const char *code = json_string_value(json_object_get(e, "code"));
    if (m || code) {
        size_t n = (m ? strlen(m) : 0) + (code ? strlen(code) : 0) + 4;
        *failure = malloc(n);
        if (*failure)
            snprintf(*failure, n, "%s%s%s%s", m ? m : "", m && code ? " (" : "",
                     code ? code : "", m && code ? ")" : "");
    }
    json_decref(root);
    return *status ? TAXD_OK : tc_fail(err, TAXD_E_NOMEM, "out of memory");
}

taxd_code taxd_report_wait(taxd_client *client, taxd_report_kind kind, const char *report_id,
                           long timeout_ms, taxd_progress_fn progress, void *userdata,
                           char **status_json, taxd_error *err)
{
    const char *route = kind_route(kind);
    if (status_json)
        *status_json = NULL;
    if (!client || !route || !report_id || !*report_id)
        return tc_fail(err, TAXD_E_INVALID, "report wait: a client, a report kind and an id "
                                            "are required");
    char *path = status_path(route, report_id);
    if (!path)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    int64_t deadline = timeout_ms > 0 ? tc_monotonic_ms() + timeout_ms : 0;
    long delay = REPORT_POLL_FIRST_MS;
    taxd_code rc;
    for (;;) {
        char *json = NULL, *status = NULL, *failure = NULL;
        rc = taxd_get(client, path, &json, err);
        if (rc == TAXD_OK)
            rc = read_status(json, &status, &failure, err);
        if (rc == TAXD_OK && progress && !progress(userdata, status, 0, 0))
            rc = tc_fail(err, TAXD_E_ABORTED, "report wait: stopped by the progress callback");
        bool done = rc != TAXD_OK || strcmp(status, "completed") == 0 ||
                    strcmp(status, "failed") == 0;
        if (rc == TAXD_OK && strcmp(status, "failed") == 0)
            rc = tc_fail(err, TAXD_E_FAILED, "report %s failed: %s", report_id,
                         failure ? failure : "no reason given");
        if (done && status_json && json) {
            *status_json = json;
            json = NULL;
        }
        free(json);
        free(status);
        free(failure);
        if (done)
            break;
        long wait = delay;
        if (deadline) {
            int64_t left = deadline - tc_monotonic_ms();
            if (left <= 0) {
                rc = tc_fail(err, TAXD_E_TIMEOUT, "report %s: not completed within %ld ms",
                             report_id, timeout_ms);
                break;
            }
            if (left < wait)
                wait = (long)left;
        }
        tc_log(client, '*', "report %s not ready; next poll in %ld ms", report_id, wait);
        tc_sleep_ms(wait);
        delay = delay * 2 > REPORT_POLL_MAX_MS ? REPORT_POLL_MAX_MS : delay * 2;
    }
    free(path);
    return rc;
}

/* ---- download ------------------------------------------------------------ */

char *tc_report_link_url(const char *base_url, const char *link)
{
    if (!base_url || !link || !*link)
        return NULL;
    if (strncasecmp(link, "http://", 7) == 0 || strncasecmp(link, "https://", 8) == 0)
        return strdup(link);
    size_t nb = strlen(base_url);
    while (nb > 0 && base_url[nb - 1] == '/')
        nb--;
    const char *sep = link[0] == '/' ? "" : "/";
    size_t n = nb + strlen(sep) + strlen(link) + 1;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "%.*s%s%s", (int)nb, base_url, sep, link);
    return url;
}

/* One transfer's state, shared by the curl callbacks. */
typedef struct {
    CURL *h;
    FILE *file;              /* PATH.part, written while the status is 2xx */
    bool write_failed;
    char *error_body;        /* a non-2xx answer's body, kept in memory */
    size_t error_len;
    char *request_id;
    taxd_progress_fn progress;
    void *userdata;
    bool aborted;
} transfer;

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        if (fwrite(data, 1, len, t->file) != len) {
            t->write_failed = true;
            return 0;
        }
        return len;
    }
    if (t->error_len + len > ERROR_BODY_CAP)
        return len; /* keep the start: enough to read the error's shape */
    char *grown = realloc(t->error_body, t->error_len + len + 1);
    if (!grown)
        return 0;
    memcpy(grown + t->error_len, data, len);
    t->error_len += len;
    grown[t->error_len] = '\0';
    t->error_body = grown;
    return len;
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    size_t len = size * n;
    static const char name[] = "x-request-id:";
    if (len > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0) {
        const char *v = line + sizeof name - 1;
        size_t vl = len - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        free(t->request_id);
        t->request_id = strndup(v, vl);
    }
    return len;
}

static int on_progress(void *userdata, curl_off_t total, curl_off_t done, curl_off_t ult,
                       curl_off_t uln)
{
    (void)ult;
    (void)uln;
    transfer *t = userdata;
    long status = 0;
    curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
    if (!t->progress || status < 200 || status >= 300)
        return 0;
    if (!t->progress(t->userdata, "downloading", (int64_t)done, total > 0 ? (int64_t)total : -1)) {
        t->aborted = true;
        return 1;
    }
    return 0;
}

/* The link's path without its query (the signature), for the log. */
static void log_link(taxd_client *c, const char *url)
{
    size_t n = strcspn(url, "?");
    tc_log(c, '>', "GET %.*s%s (signed link, no token)", (int)n, url, url[n] ? "?..." : "");
}

typedef enum { FETCH_DONE, FETCH_REFRESH, FETCH_RETRY, FETCH_FINAL } fetch_outcome;

/* Streams url into part. FETCH_DONE: part holds the whole file;
 * FETCH_REFRESH: the link was refused (403), a fresh one is asked for at
 * once; FETCH_RETRY: the transfer failed (reset, timeout, 429, 5xx), a
 * fresh link after a backoff; FETCH_FINAL: stop with *rc. err is filled
 * unless FETCH_DONE. */
static fetch_outcome fetch_link(taxd_client *c, const char *url, const char *part,
                                taxd_progress_fn progress, void *userdata, taxd_code *rc,
                                taxd_error *err)
{
    transfer t = {.progress = progress, .userdata = userdata};
    t.file = fopen(part, "wb");
    if (!t.file) {
        *rc = tc_fail(err, TAXD_E_IO, "report download: cannot write %s: %s", part,
                      strerror(errno));
        return FETCH_FINAL;
    }
    t.h = tc_handle_take(c);
    if (!t.h) {
        fclose(t.file);
        *rc = tc_fail(err, TAXD_E_NOMEM, "out of memory");
        return FETCH_FINAL;
    }
    /* A report can be large: no bound on the whole transfer, only on a
     * stall (the request timeout with less than 1 byte a second). */
    long stall_s = c->request_timeout_ms > 0 ? (c->request_timeout_ms + 999) / 1000 : 60;
    curl_easy_setopt(t.h, CURLOPT_URL, url);
    curl_easy_setopt(t.h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(t.h, CURLOPT_TIMEOUT_MS, 0L);
    curl_easy_setopt(t.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(t.h, CURLOPT_LOW_SPEED_TIME, stall_s);
    curl_easy_setopt(t.h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t.h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(t.h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(t.h, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(t.h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(t.h, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(t.h, CURLOPT_NOPROGRESS, 0L);
    log_link(c, url);
    CURLcode cc = curl_easy_perform(t.h);
    long status = 0;
    curl_easy_getinfo(t.h, CURLINFO_RESPONSE_CODE, &status);
    tc_handle_give(c, t.h);
    bool closed = fclose(t.file) == 0;
    fetch_outcome out = FETCH_FINAL;
    if (t.aborted) {
        *rc = tc_fail(err, TAXD_E_ABORTED, "report download: stopped by the progress callback");
    } else if (t.write_failed || (cc == CURLE_OK && status / 100 == 2 && !closed)) {
        *rc = tc_fail(err, TAXD_E_IO, "report download: cannot write %s: %s", part,
                      strerror(errno));
    } else if (cc != CURLE_OK) {
        tc_log(c, '*', "report download failed: %s", curl_easy_strerror(cc));
        *rc = tc_fail(err, cc == CURLE_OPERATION_TIMEDOUT ? TAXD_E_TIMEOUT : TAXD_E_TRANSPORT,
                      "report download: %s", curl_easy_strerror(cc));
        out = FETCH_RETRY;
    } else {
        tc_log(c, '<', "%ld (report file)", status);
        if (status / 100 == 2) {
            out = FETCH_DONE;
            *rc = TAXD_OK;
        } else {
            *rc = tc_error_from_answer(err, (int)status, t.error_body, t.error_len, t.request_id,
                                       -1);
            /* 403: the link expired or was refused (ReportLinkRefused);
             * 429 and 5xx: the service's trouble, worth another try. */
            out = status == 403                   ? FETCH_REFRESH
                  : status == 429 || status >= 500 ? FETCH_RETRY
                                                   : FETCH_FINAL;
        }
    }
    free(t.error_body);
    free(t.request_id);
    return out;
}

/* A fresh download link from the status route; malloc'd absolute URL. */
static taxd_code fresh_link(taxd_client *c, const char *path, char **url, taxd_error *err)
{
    char *json = NULL;
    *url = NULL;
    taxd_code rc = taxd_get(c, path, &json, err);
    if (rc != TAXD_OK)
        return rc;
    char *status = json_member(json, "status");
    char *link = json_member(json, "download_url");
    if (!status || strcmp(status, "completed") != 0)
        rc = tc_fail(err, TAXD_E_INVALID, "report download: the report is %s, not completed",
                     status ? status : "of unknown status");
    else if (!link || !(*url = tc_report_link_url(c->base_url, link)))
        rc = tc_fail(err, TAXD_E_PROTOCOL, "report download: the status has no download_url");
    free(status);
    free(link);
    free(json);
    return rc;
}

taxd_code taxd_report_download(taxd_client *client, taxd_report_kind kind, const char *report_id,
                               const char *path, taxd_progress_fn progress, void *userdata,
                               taxd_error *err)
{
    const char *route = kind_route(kind);
    if (!client || !route || !report_id || !*report_id || !path || !*path)
        return tc_fail(err, TAXD_E_INVALID, "report download: a client, a report kind, an id "
                                            "and a path are required");
    char *spath = status_path(route, report_id);
    size_t np = strlen(path) + sizeof ".part";
    char *part = malloc(np);
    if (!spath || !part) {
        free(spath);
        free(part);
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    }
    snprintf(part, np, "%s.part", path);
    taxd_code rc = TAXD_OK;
    for (int attempt = 0; attempt <= REPORT_LINK_RETRIES; attempt++) {
        if (attempt > 0) {
            tc_log(client, '*', "report download: fetching a fresh link (%d of %d)", attempt,
                   REPORT_LINK_RETRIES);
            taxd_error_clear(err);
        }
        char *url = NULL;
        rc = fresh_link(client, spath, &url, err);
        if (rc != TAXD_OK)
            break;
        fetch_outcome out = fetch_link(client, url, part, progress, userdata, &rc, err);
        free(url);
        if (out == FETCH_DONE && rename(part, path) != 0)
            rc = tc_fail(err, TAXD_E_IO, "report download: cannot rename %s to %s: %s", part,
                         path, strerror(errno));
        if (out == FETCH_DONE || out == FETCH_FINAL)
            break;
        if (out == FETCH_RETRY && attempt < REPORT_LINK_RETRIES)
            tc_sleep_ms(tc_backoff_ms(client->backoff_base_ms, client->backoff_max_ms,
                                      attempt + 1));
    }
    if (rc != TAXD_OK)
        unlink(part);
    free(part);
    free(spath);
    return rc;
}
