/* webhook_loop.h: what the two references of `make bench-webhooks` share,
 * so that the durable floor (webhook_durable_loop.c) sends exactly what the
 * bare loop (webhook_curl_loop.c) sends: the request's options and headers,
 * the body file, a clock. Header-only: each reference is one `cc` of one
 * file. */
#ifndef TAXD_BENCH_WEBHOOK_LOOP_H
#define TAXD_BENCH_WEBHOOK_LOOP_H

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double loop_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The whole file, malloc'd (the caller frees), its size in *len; NULL when
 * it cannot be read. */
static inline char *loop_read_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)*len + 1);
    if (data != NULL && fread(data, 1, (size_t)*len, f) != (size_t)*len) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

static inline size_t loop_discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

/* The request headers: the body's type, and no 100-continue round trip.
 * The caller frees them with curl_slist_free_all. */
static inline struct curl_slist *loop_headers(void)
{
    struct curl_slist *headers = curl_slist_append(NULL, "content-type: application/json");
    return curl_slist_append(headers, "Expect:");
}

/* A POST of body to url over HTTP/1.1, trusting the CA file alone. */
static inline void loop_setup(CURL *h, const char *url, const char *ca, const char *body,
                              long len, struct curl_slist *headers)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, loop_discard);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
}

#endif
