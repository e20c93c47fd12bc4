/* webhooks/request: the HTTP side of one delivery attempt, on a libcurl easy
 * handle kept for reuse (its connection stays in the multi handle's cache):
 * the options every request shares, set once; the request's own (URL,
 * body, headers, timeouts, source address), set per attempt; and its answer
 * read back. Knows nothing of the database, of outcomes or of retries.
 *
 * The request: a POST over HTTP/1.1 to an https URL, no redirect followed,
 * no proxy from the environment, no signals, the given CA bundle as the
 * only trust when one is given, the response body discarded. Its headers:
 * content-type, x-service-signature, x-service-source or the Basic
 * authorization, x-trace-id, and empty Expect (no 100-continue round trip)
 * and Accept. The Basic header is written here, not by libcurl, whose auth
 * negotiation would first send a request without credentials. */
#ifndef TAXD_WEBHOOKS_REQUEST_H
#define TAXD_WEBHOOKS_REQUEST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/webhooks.h"
#include "webhooks/subscription.h"

#define WEBHOOK_REQUEST_HEADERS 6
#define WEBHOOK_SIGNATURE_LINE_MAX 160 /* "x-service-signature: " and two v1= signatures */

typedef struct webhook_request {
    CURL *easy;                  /* for life: created by webhook_request_init */
    struct curl_slist *headers;  /* header_nodes: libcurl only reads the list */
    struct curl_slist header_nodes[WEBHOOK_REQUEST_HEADERS];
    char signature_line[WEBHOOK_SIGNATURE_LINE_MAX];
    char trace_line[STORE_WH_ID_MAX + 16];
    char *auth_line;             /* a copy of the Basic header (wiped when done) or NULL */
    char *body;                  /* owned from prepare to done */
    char errbuf[CURL_ERROR_SIZE];
} webhook_request_t;

/* What the endpoint (or the way to it) answered. */
typedef struct webhook_answer {
    CURLcode result;             /* CURLE_OK: an HTTP answer was read */
    int status;                  /* its status; 0 when none */
    int connect_status;          /* a proxy's answer to CONNECT; 0 when none */
    int64_t retry_after_s;       /* a Retry-After header's delay; 0 when none */
    const char *error;           /* when result is not CURLE_OK: libcurl's words (r's or static) */
} webhook_answer_t;

/* Makes r's easy handle with the options every request shares. ca_file and
 * proxy may be NULL or "" (the system's trust store; no proxy at all, which
 * only tests change). owner is what CURLINFO_PRIVATE gives back. r must
 * stay where it is while the handle lives. 0, or -1 (nothing to free). */
int webhook_request_init(webhook_request_t *r, const char *ca_file, const char *proxy,
                         void *owner);

/* The next request on r: body (malloc'd, len bytes) is taken over; the
 * signature header value and the trace id are copied; the URL, timeout,
 * source address and Basic credential are s's. false when it cannot be set
 * up, or signature is NULL (r then still owns body: call
 * webhook_request_done). */
bool webhook_request_prepare(webhook_request_t *r, const webhook_sub_t *s, const char *trace_id,
                             const char *signature, char *body, size_t len);

/* The answer of the request that just finished with result. */
void webhook_request_answer(webhook_request_t *r, CURLcode result, webhook_answer_t *out);

/* The request is over: frees its body and wipes its Basic copy; the easy
 * handle stays for the next one. */
void webhook_request_done(webhook_request_t *r);

/* Done, then the easy handle is cleaned up. */
void webhook_request_free(webhook_request_t *r);

#endif
