/* client/internal: what the library's files share and its users never see.
 * Every file of src/client/ includes <taxd/client.h> and this header only
 * (never taxd's own src/: the client is a separate product that talks to
 * taxd through HTTP alone). Nothing here is exported from the shared
 * library (libtaxdclient.map keeps only taxd_*). */
#ifndef TAXD_CLIENT_INTERNAL_H
#define TAXD_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

#include <curl/curl.h>

#include <taxd/client.h>

struct taxd_client {
    char *base_url; /* without a trailing slash */
    char *client_id, *client_secret, *tenant_id, *ca_file, *user_agent;
    long connect_timeout_ms, request_timeout_ms, max_retry_ms;
    long backoff_base_ms, backoff_max_ms, refresh_margin_s;
    int max_attempts;
    taxd_log_fn log;
    void *log_userdata;

    pthread_mutex_t mint_lock; /* held while minting: N threads needing a token mint once */
    pthread_mutex_t lock;      /* guards everything below (never held across I/O) */
    char *token;               /* the cached bearer token, or NULL */
    int64_t token_expires_ms;  /* wall clock (tc_now_ms) when it expires */
    int64_t token_refresh_ms;  /* wall clock after which the next request mints a new one */
    uint64_t token_generation; /* bumped on every mint: a 401 refreshes once per generation */
    CURL **idle;               /* easy handles kept for reuse (keep-alive connections) */
    size_t n_idle, cap_idle;
};

/* ---- handles and time (client.c) */

/* An easy handle with the client's timeouts, CA file and user agent set,
 * reused from the idle pool when there is one (its connection kept alive).
 * NULL when out of memory. */
CURL *tc_handle_take(taxd_client *c);
/* Back to the pool (reset of per-request options is the taker's job:
 * tc_handle_take calls curl_easy_reset and sets the defaults again). */
void tc_handle_give(taxd_client *c, CURL *h);

int64_t tc_now_ms(void);       /* wall clock, ms since the epoch */
int64_t tc_monotonic_ms(void);
void tc_sleep_ms(long ms);
/* A uniformly random value in [0, bound] (bound >= 0), for full jitter. */
long tc_random_upto(long bound);

/* One line to the log callback, if any (printf-style). */
void tc_log(taxd_client *c, char direction, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- errors (error.c) */

/* Fills err (when not NULL) with code and a formatted message; returns code. */
taxd_code tc_fail(taxd_error *err, taxd_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills err from an error answer whatever its body's shape: status, the
 * string `error` if any, the message under any case of "message", the
 * `issues` array or the transactions shape's `data` array as JSON text,
 * the raw body, request_id and retry_after_ms (-1 when none). Returns
 * TAXD_E_HTTP. */
taxd_code tc_error_from_answer(taxd_error *err, int status, const char *body, size_t len,
                               const char *request_id, long retry_after_ms);

/* ---- retry policy (retry.c): pure functions, unit tested */

/* A Retry-After value (delta seconds, or an IMF-fixdate / RFC 850 / asctime
 * HTTP date) as milliseconds from now_ms; -1 when absent or unreadable;
 * 0 for a date in the past. */
long tc_retry_after_ms(const char *value, int64_t now_ms);

/* The delay before attempt number `retry` (1 for the first retry): full
 * jitter, a uniform value in [0, min(max_ms, base_ms * 2^(retry-1))]. */
long tc_backoff_ms(long base_ms, long max_ms, int retry);

typedef enum {
    TC_STOP = 0,        /* give the answer to the caller */
    TC_RETRY,           /* send again after the delay */
    TC_REFRESH_TOKEN,   /* mint a new token, then send again at once (once) */
    TC_READBACK,        /* a create's answer was lost: GET its readback path */
} tc_decision;

/* What to do after an attempt: status is the answer's (0 when none came:
 * transport_code says why), nothing_sent when no byte of the request left
 * (connection refused, DNS: safe to resend whatever the method),
 * safe/create from the request's flags, refreshed whether this request
 * already refreshed its token (or needs none: the token request itself).
 * Limits (attempts, time) are the caller's: this says only what the answer
 * deserves. */
tc_decision tc_decide(int status, taxd_code transport_code, bool nothing_sent, bool safe,
                      bool create, bool refreshed);

/* ---- tokens (token.c) */

/* The bearer token for a request (*token malloc'd) and its generation.
 * stale_generation is the generation of a token the service just refused
 * with a 401 (0: none): a token of a later generation (another thread
 * already minted) is used as it is, else a new one is minted. A token due
 * for refresh is minted again too. Minting happens under mint_lock, so N
 * threads that need a new token together mint it once. */
taxd_code tc_token_get(taxd_client *c, uint64_t stale_generation, char **token,
                       uint64_t *generation, taxd_error *err);

/* ---- the attempt loop (send.c) */

/* taxd_send with or without a bearer token (without: the token request
 * itself, whose 401 is final). */
taxd_code tc_run(taxd_client *c, const taxd_request *request, bool with_token,
                 taxd_response *response, taxd_error *err);

#endif
