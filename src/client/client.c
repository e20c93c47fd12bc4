/* client: a taxd_client's life (options checked and defaulted, strings
 * copied), the pool of idle curl easy handles, time, randomness, logging and
 * the small public helpers (taxd_code_name, taxd_escape, taxd_global_init).
 *
 * The pool. Each attempt takes an easy handle and gives it back; a handle
 * keeps its connection open, so the next request to the same service reuses
 * it (keep-alive) without a new TCP or TLS handshake. Handles are taken and
 * given under the client's mutex, never used by two threads at once, and
 * reset (curl_easy_reset keeps the connection and caches) before each use.
 * At most POOL_MAX idle handles are kept: a burst of N threads leaves N
 * handles, and beyond POOL_MAX they are closed. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <taxd/client.h>

#include "internal.h"

enum {
    POOL_MAX = 64,
    DEFAULT_CONNECT_TIMEOUT_MS = 10000,
    DEFAULT_REQUEST_TIMEOUT_MS = 60000,
    DEFAULT_MAX_ATTEMPTS = 6,
    DEFAULT_MAX_RETRY_MS = 120000,
    DEFAULT_BACKOFF_BASE_MS = 250,
    DEFAULT_BACKOFF_MAX_MS = 30000,
    DEFAULT_REFRESH_MARGIN_S = 300,
    LOG_LINE_MAX = 1024,
};

/* ---- public helpers */

const char *taxd_code_name(taxd_code code)
{
    switch (code) {
    case TAXD_OK: return "ok";
    case TAXD_E_HTTP: return "HTTP error";
    case TAXD_E_TRANSPORT: return "transport error";
    case TAXD_E_TIMEOUT: return "timeout";
    case TAXD_E_INVALID: return "invalid argument";
    case TAXD_E_PROTOCOL: return "protocol error";
    case TAXD_E_IO: return "I/O error";
    case TAXD_E_NOMEM: return "out of memory";
    case TAXD_E_FAILED: return "failed";
    case TAXD_E_ABORTED: return "aborted";
    }
    return "unknown error";
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

taxd_code taxd_global_init(void)
{
    pthread_once(&global_once, global_init_once);
    return global_rc == CURLE_OK ? TAXD_OK : TAXD_E_TRANSPORT;
}

char *taxd_escape(const char *segment)
{
    static const char hex[] = "0123456789ABCDEF";
    if (segment == NULL)
        return NULL;
    size_t n = strlen(segment);
    char *out = malloc(n * 3 + 1);
    if (out == NULL)
        return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)segment; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

/* ---- time and randomness */

int64_t tc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tc_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tc_sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Per-thread xorshift64*, seeded from the kernel once per thread: jitter
 * needs no cryptographic quality, only threads that do not move in step. */
static _Thread_local uint64_t rng_state;

static uint64_t rng_next(void)
{
    if (rng_state == 0) {
        if (getrandom(&rng_state, sizeof rng_state, 0) != (ssize_t)sizeof rng_state)
            rng_state = (uint64_t)tc_monotonic_ms() ^ (uint64_t)(uintptr_t)&rng_state;
        if (rng_state == 0)
            rng_state = 0x9E3779B97F4A7C15ull;
    }
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

long tc_random_upto(long bound)
{
    if (bound <= 0)
        return 0;
    return (long)(rng_next() % ((uint64_t)bound + 1));
}

/* ---- logging */

void tc_log(taxd_client *c, char direction, const char *fmt, ...)
{
    if (c == NULL || c->log == NULL)
        return;
    char line[LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->log(c->log_userdata, direction, line);
}

/* ---- the handle pool */

static void handle_defaults(taxd_client *c, CURL *h)
{
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    /* HTTP/1.1 on https too: one request per connection, so a lost answer
     * is one request's, and the pool's keep-alive is plain. */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca_file != NULL) {
        /* CAINFO alone still trusts the system directory (GUIDE § 7). */
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    }
}

CURL *tc_handle_take(taxd_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->n_idle > 0)
        h = c->idle[--c->n_idle];
    pthread_mutex_unlock(&c->lock);
    if (h != NULL)
        curl_easy_reset(h);
    else if ((h = curl_easy_init()) == NULL)
        return NULL;
    handle_defaults(c, h);
    return h;
}

void tc_handle_give(taxd_client *c, CURL *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    if (c->n_idle == c->cap_idle && c->cap_idle < POOL_MAX) {
        size_t cap = c->cap_idle ? c->cap_idle * 2 : 8;
        if (cap > POOL_MAX)
            cap = POOL_MAX;
        CURL **grown = realloc(c->idle, cap * sizeof *grown);
        if (grown != NULL) {
            c->idle = grown;
            c->cap_idle = cap;
        }
    }
    if (c->n_idle < c->cap_idle) {
        c->idle[c->n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (h != NULL)
        curl_easy_cleanup(h);
}

/* ---- the client */

static bool dup_opt(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL)
        return true;
    return (*dst = strdup(src)) != NULL;
}

/* NULL when base_url is usable, else why not. A URL with user information
 * is refused: it would put a password in every log line that names it. */
static const char *base_url_problem(const char *url)
{
    if (url == NULL || *url == '\0')
        return "base_url is required";
    const char *rest;
    if (strncmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        rest = url + 8;
    else
        return "base_url must start with http:// or https://";
    size_t host_len = strcspn(rest, "/?#");
    if (host_len == 0)
        return "base_url has no host";
    if (memchr(rest, '@', host_len) != NULL)
        return "base_url must not carry user information (credentials go in client_id and client_secret)";
    for (const char *p = rest + host_len; *p; p++)
        if (*p != '/')
            return "base_url must have no path, query or fragment (\"https://host:port\")";
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return "base_url contains a space or a control character";
    return NULL;
}

static const char *options_problem(const taxd_client_options *o)
{
    const char *bad = base_url_problem(o->base_url);
    if (bad != NULL)
        return bad;
    if ((o->client_id == NULL) != (o->client_secret == NULL))
        return "client_id and client_secret go together";
    if (o->client_id != NULL && (*o->client_id == '\0' || *o->client_secret == '\0'))
        return "client_id and client_secret must not be empty";
    if (o->connect_timeout_ms < 0 || o->request_timeout_ms < 0 || o->max_attempts < 0 ||
        o->max_retry_ms < 0 || o->backoff_base_ms < 0 || o->backoff_max_ms < 0 ||
        o->token_refresh_margin_s < 0)
        return "timeouts, attempts, backoffs and margins must not be negative";
    return NULL;
}

static long or_default(long value, long fallback)
{
    return value > 0 ? value : fallback;
}

taxd_client *taxd_client_new(const taxd_client_options *options, taxd_error *err)
{
    if (options == NULL) {
        tc_fail(err, TAXD_E_INVALID, "no options");
        return NULL;
    }
    const char *bad = options_problem(options);
    if (bad != NULL) {
        tc_fail(err, TAXD_E_INVALID, "%s", bad);
        return NULL;
    }
    if (taxd_global_init() != TAXD_OK) {
        tc_fail(err, TAXD_E_TRANSPORT, "libcurl failed to initialize");
        return NULL;
    }
    taxd_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        tc_fail(err, TAXD_E_NOMEM, "out of memory");
        return NULL;
    }
    bool ok = dup_opt(&c->base_url, options->base_url) &&
              dup_opt(&c->client_id, options->client_id) &&
              dup_opt(&c->client_secret, options->client_secret) &&
              dup_opt(&c->tenant_id, options->tenant_id) &&
              dup_opt(&c->ca_file, options->ca_file) &&
              dup_opt(&c->user_agent, options->user_agent ? options->user_agent
                                                          : "libtaxdclient/" TAXD_CLIENT_VERSION);
    if (!ok) {
        /* the mutexes are not initialized yet: free the strings only */
        free(c->base_url), free(c->client_id), free(c->tenant_id), free(c->ca_file);
        free(c->user_agent);
        if (c->client_secret)
            explicit_bzero(c->client_secret, strlen(c->client_secret));
        free(c->client_secret);
        free(c);
        tc_fail(err, TAXD_E_NOMEM, "out of memory");
        return NULL;
    }
    size_t len = strlen(c->base_url);
    while (len > 0 && c->base_url[len - 1] == '/')
        c->base_url[--len] = '\0';
    c->connect_timeout_ms = or_default(options->connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS);
    c->request_timeout_ms = or_default(options->request_timeout_ms, DEFAULT_REQUEST_TIMEOUT_MS);
    c->max_attempts = (int)or_default(options->max_attempts, DEFAULT_MAX_ATTEMPTS);
    c->max_retry_ms = or_default(options->max_retry_ms, DEFAULT_MAX_RETRY_MS);
    c->backoff_base_ms = or_default(options->backoff_base_ms, DEFAULT_BACKOFF_BASE_MS);
    c->backoff_max_ms = or_default(options->backoff_max_ms, DEFAULT_BACKOFF_MAX_MS);
    if (c->backoff_max_ms < c->backoff_base_ms)
        c->backoff_max_ms = c->backoff_base_ms;
    c->refresh_margin_s = or_default(options->token_refresh_margin_s, DEFAULT_REFRESH_MARGIN_S);
    c->log = options->log;
    c->log_userdata = options->log_userdata;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->mint_lock, NULL);
    return c;
}

void taxd_client_free(taxd_client *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_idle; i++)
        curl_easy_cleanup(c->idle[i]);
    free(c->idle);
    if (c->client_secret)
        explicit_bzero(c->client_secret, strlen(c->client_secret));
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    free(c->client_secret);
    free(c->token);
    free(c->base_url), free(c->client_id), free(c->tenant_id), free(c->ca_file);
    free(c->user_agent);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->mint_lock);
    free(c);
}
