/* webhooks/request: one delivery attempt's HTTP request (request.h). */
#include "webhooks/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_TIMEOUT_MS 10000L

static size_t discard_body(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

int webhook_request_init(webhook_request_t *r, const char *ca_file, const char *proxy,
                         void *owner)
{
    memset(r, 0, sizeof *r);
    CURL *h = r->easy = curl_easy_init();
    if (h == NULL)
        return -1;
    bool ok =
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_PROXY, proxy != NULL ? proxy : "") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_POST, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_USERAGENT, "taxd-webhooks") == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_body) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf) == CURLE_OK &&
        curl_easy_setopt(h, CURLOPT_PRIVATE, owner) == CURLE_OK;
    if (ok && ca_file != NULL && ca_file[0] != '\0') /* the bundle alone, not the CA path too */
        ok = curl_easy_setopt(h, CURLOPT_CAINFO, ca_file) == CURLE_OK &&
             curl_easy_setopt(h, CURLOPT_CAPATH, NULL) == CURLE_OK;
    if (ok)
        return 0;
    curl_easy_cleanup(h);
    r->easy = NULL;
    return -1;
}

/* The header list, in nodes and buffers of r itself (no allocation per
 * request but the Basic header's copy: the subscription's own may be
 * replaced by a reload while the request runs). */
static bool build_headers(webhook_request_t *r, const webhook_sub_t *s, const char *trace_id,
                          const char *signature)
{
    int n = snprintf(r->signature_line, sizeof r->signature_line, "x-service-signature: %s",
                     signature);
    if (n < 0 || (size_t)n >= sizeof r->signature_line)
        return false;
    snprintf(r->trace_line, sizeof r->trace_line, "x-trace-id: %s", trace_id);
    char *source = (char *)"x-service-source: webhook";
    if (s->auth_header != NULL && (source = r->auth_line = strdup(s->auth_header)) == NULL)
        return false;
    char *lines[WEBHOOK_REQUEST_HEADERS] = {
        (char *)"content-type: application/json", r->signature_line, source, r->trace_line,
        (char *)"Expect:", /* no 100-continue round trip */
        (char *)"Accept:"};
    for (size_t i = 0; i < WEBHOOK_REQUEST_HEADERS; i++)
        r->header_nodes[i] = (struct curl_slist){
            .data = lines[i],
            .next = i + 1 < WEBHOOK_REQUEST_HEADERS ? &r->header_nodes[i + 1] : NULL};
    r->headers = &r->header_nodes[0];
    return true;
}

bool webhook_request_prepare(webhook_request_t *r, const webhook_sub_t *s, const char *trace_id,
                             const char *signature, char *body, size_t len)
{
    r->body = body;
    r->errbuf[0] = '\0';
    if (signature == NULL || !build_headers(r, s, trace_id, signature))
        return false;
    CURL *h = r->easy;
    long timeout = (long)s->timeout_s * 1000L;
    return curl_easy_setopt(h, CURLOPT_URL, s->url) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->headers) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                            timeout < CONNECT_TIMEOUT_MS ? timeout : CONNECT_TIMEOUT_MS) ==
               CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_INTERFACE,
                            s->interface[0] != '\0' ? s->interface : NULL) == CURLE_OK;
}

void webhook_request_answer(webhook_request_t *r, CURLcode result, webhook_answer_t *out)
{
    long status = 0, connect_status = 0;
    curl_off_t retry_after = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(r->easy, CURLINFO_HTTP_CONNECTCODE, &connect_status);
    if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after) != CURLE_OK)
        retry_after = 0;
    *out = (webhook_answer_t){
        .result = result, .status = (int)status, .connect_status = (int)connect_status,
        .retry_after_s = retry_after > 0 ? (int64_t)retry_after : 0,
        .error = result == CURLE_OK ? NULL
                 : r->errbuf[0] != '\0' ? r->errbuf
                                        : curl_easy_strerror(result)};
}

void webhook_request_done(webhook_request_t *r)
{
    if (r->auth_line != NULL) {
        explicit_bzero(r->auth_line, strlen(r->auth_line));
        free(r->auth_line);
    }
    r->auth_line = NULL;
    r->headers = NULL;
    free(r->body);
    r->body = NULL;
}

void webhook_request_free(webhook_request_t *r)
{
    webhook_request_done(r);
    if (r->easy != NULL)
        curl_easy_cleanup(r->easy);
    r->easy = NULL;
}
