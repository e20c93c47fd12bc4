/* libtaxdclient: the C client of taxd's HTTP API (and of Taxbit-compatible
 * services that follow the same contract).
 *
 * This header is the library's whole public API. It gets right what every
 * integration otherwise writes by hand:
 *   - tokens: minted from client credentials, cached, refreshed before they
 *     expire; a 401 mints one new token and retries once, never more;
 *   - retries: a 429 waits for Retry-After (seconds or an HTTP date), else
 *     backs off; a 5xx, a reset or a timeout on a safe request (GET, the
 *     transactions upsert, a report's status) backs off exponentially with
 *     full jitter, bounded in count and in time; 400, 403, 404 and 409 are
 *     never retried unchanged; a create whose answer was lost reads the
 *     record back instead of creating it twice;
 *   - errors: one struct (taxd_error) whatever shape the body had;
 *   - transactions: one, a batch, or a stream (taxd_sender) with at most one
 *     request per id in flight and never an older payload after a newer one;
 *   - reports: trigger, wait, download to a file (a fresh link when one
 *     expired), with progress;
 *   - webhooks: signature verification against one or several secrets,
 *     the envelope's events, and a deduplication helper.
 *
 * Conventions (curl's):
 *   - every function that can fail returns a taxd_code; TAXD_OK is 0;
 *   - a taxd_error * argument may be NULL; when given it is filled on failure
 *     and must be released with taxd_error_clear (also safe on a zeroed one);
 *   - strings handed back through char ** are malloc'd and the caller frees
 *     them with free(); strings passed in are only read during the call;
 *   - JSON goes in and out as text (UTF-8), so the library imposes no JSON
 *     library on its users;
 *   - one taxd_client may be used from several threads at once (the token
 *     cache is shared and locked); a taxd_sender or a taxd_dedup is used
 *     from one thread at a time;
 *   - the library never prints; what it would say goes to the log callback.
 *     Client secrets and bearer tokens never reach the log callback or a
 *     taxd_error.
 *
 * Link with `pkg-config --cflags --libs taxdclient`. Call curl_global_init
 * (or taxd_global_init) once before the first client when the program has
 * several threads. */
#ifndef TAXD_CLIENT_H
#define TAXD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TAXD_CLIENT_VERSION "0.1.0"

typedef enum {
    TAXD_OK = 0,
    TAXD_E_HTTP,       /* the service answered an error status: see err->status */
    TAXD_E_TRANSPORT,  /* no answer: connection refused or reset, TLS, DNS */
    TAXD_E_TIMEOUT,    /* no answer in time, retries included */
    TAXD_E_INVALID,    /* a bad argument: nothing was sent */
    TAXD_E_PROTOCOL,   /* an answer the library could not read (not the JSON it expects) */
    TAXD_E_IO,         /* a local file could not be read or written */
    TAXD_E_NOMEM,
    TAXD_E_FAILED,     /* a report ended `failed` (err->message says why) */
    TAXD_E_ABORTED,    /* a callback asked to stop */
} taxd_code;

/* A failure, whatever its source. For TAXD_E_HTTP, status is the final
 * answer's status and the other fields come from its body: `error` when the
 * body had a string `error`, `message` the body's message (its key matched
 * case-insensitively), `details` the body's `issues` or the transactions
 * shape's `data` as compact JSON, `request_id` the answer's x-request-id.
 * For other codes, message says what failed and status is 0. Fields absent
 * from the answer are NULL. */
typedef struct {
    taxd_code code;
    int status;
    char *error;
    char *message;
    char *details;      /* JSON array text, or NULL */
    char *request_id;
    char *body;         /* the raw answer body, NUL-terminated, or NULL */
    long retry_after_ms; /* a 429's Retry-After, -1 when absent */
    int attempts;       /* requests made, retries included */
} taxd_error;

void taxd_error_clear(taxd_error *err);

/* A short English name of code ("HTTP error", "timeout", ...). */
const char *taxd_code_name(taxd_code code);

/* curl_global_init(CURL_GLOBAL_DEFAULT), for programs that do not call it. */
taxd_code taxd_global_init(void);

/* ---- the client ---------------------------------------------------------- */

typedef struct taxd_client taxd_client;

/* One line the client would log: direction is '>' for a request line,
 * '<' for a response line, '*' for a decision (a retry, a token refresh).
 * Authorization headers and secrets are never in it. */
typedef void (*taxd_log_fn)(void *userdata, char direction, const char *line);

typedef struct {
    const char *base_url;       /* "http://127.0.0.1:8080" (required; no trailing path) */
    const char *client_id;      /* required for anything but webhooks */
    const char *client_secret;
    const char *tenant_id;      /* optional: sent with the token request */
    const char *ca_file;        /* optional CA bundle for https base URLs */
    const char *user_agent;     /* optional; default "libtaxdclient/<version>" */
    long connect_timeout_ms;    /* 0: 10,000 */
    long request_timeout_ms;    /* one attempt; 0: 60,000 */
    int max_attempts;           /* attempts of one request, first included; 0: 6 */
    long max_retry_ms;          /* time budget of one request's retries; 0: 120,000 */
    long backoff_base_ms;       /* first backoff's ceiling; 0: 250 */
    long backoff_max_ms;        /* largest backoff; 0: 30,000 */
    long token_refresh_margin_s; /* refresh this long before expiry; 0: 300 */
    taxd_log_fn log;            /* optional */
    void *log_userdata;
} taxd_client_options;

/* A client for options (copied; the strings are duplicated). NULL with err
 * filled when an option is missing or malformed. */
taxd_client *taxd_client_new(const taxd_client_options *options, taxd_error *err);
void taxd_client_free(taxd_client *client);

/* The bearer token the next request would use, minting or refreshing it
 * when needed: for callers that speak to routes this library does not
 * wrap. *token is malloc'd. */
taxd_code taxd_client_token(taxd_client *client, char **token, taxd_error *err);

/* ---- any route ----------------------------------------------------------- */

/* Percent-encodes one path segment or query value (RFC 3986 unreserved
 * characters stay); malloc'd, NULL when out of memory. */
char *taxd_escape(const char *segment);

typedef enum {
    TAXD_SAFE = 1,      /* may be sent again after a 5xx, a reset or a timeout */
    TAXD_CREATE = 2,    /* a POST that creates: never sent twice; see readback */
} taxd_request_flags;

typedef struct {
    const char *method;         /* "GET", "POST", "PATCH", "DELETE" */
    const char *path;           /* "/v1/accounts/a%201?limit=10": escaped by the caller */
    const char *body;           /* JSON text or NULL */
    size_t body_len;            /* 0: strlen(body) */
    unsigned flags;             /* taxd_request_flags; GET is always safe */
    /* For TAXD_CREATE: when the answer is lost (reset, timeout, 5xx without
     * a body the service wrote), GET this path; a 200 there is taken as the
     * create's answer, a 404 means nothing was created and the POST is sent
     * again. NULL: a lost create is reported as it failed. */
    const char *readback_path;
} taxd_request;

typedef struct {
    int status;                 /* the final answer's status (2xx on TAXD_OK) */
    char *body;                 /* NUL-terminated */
    size_t body_len;
    char *request_id;
    int attempts;
} taxd_response;

void taxd_response_clear(taxd_response *response);

/* Sends request with a token and the retry policy above. TAXD_OK for a 2xx
 * (response filled); TAXD_E_HTTP for any other final status (err filled,
 * response filled too when given). response may be NULL. */
taxd_code taxd_send(taxd_client *client, const taxd_request *request, taxd_response *response,
                    taxd_error *err);

/* GET path; *json receives the body of the 2xx. */
taxd_code taxd_get(taxd_client *client, const char *path, char **json, taxd_error *err);

/* Every item of a list route, following meta.next_cursor: each page's
 * `data` array is handed to on_page as JSON text; on_page returns false to
 * stop (TAXD_E_ABORTED). path may carry a query (limit=...). */
typedef bool (*taxd_page_fn)(void *userdata, const char *data_json);
taxd_code taxd_list(taxd_client *client, const char *path, taxd_page_fn on_page, void *userdata,
                    taxd_error *err);

/* ---- transactions -------------------------------------------------------- */

typedef enum {
    TAXD_TX_CREATED = 1,
    TAXD_TX_UPDATED,
    TAXD_TX_UNCHANGED,
    TAXD_TX_REFUSED,            /* the element was refused: http_status and message say why */
} taxd_tx_outcome;

typedef struct {
    taxd_tx_outcome outcome;
    int http_status;            /* 201, 200, or the element's 400 / 404 */
    char *message;              /* REFUSED: the error's message (malloc'd), else NULL */
    char *details;              /* REFUSED: its data[] as JSON text, else NULL */
} taxd_tx_result;

void taxd_tx_result_clear(taxd_tx_result *result);

/* POST /v1/transactions/external-id with one transaction (JSON object text
 * in the API's model). A refused transaction (400, 404) is TAXD_OK with
 * outcome REFUSED: it is the transaction's fault, not the call's. */
taxd_code taxd_tx_upsert(taxd_client *client, const char *json, taxd_tx_result *result,
                         taxd_error *err);

/* The same with n transactions in one request (the batch endpoint: 1 to
 * 1,000; ids must be distinct within a batch). results[0..n) are filled in
 * order. */
taxd_code taxd_tx_upsert_batch(taxd_client *client, const char *const *jsons, size_t n,
                               taxd_tx_result *results, taxd_error *err);

/* A stream of upserts over several connections, in batches.
 *   - At most one request carrying a given id is in flight; a later
 *     payload of an id is sent only after the earlier one was answered
 *     (acknowledged or refused), so no older payload lands after a newer.
 *   - on_result is called once per transaction, from the sender's threads
 *     (one at a time), with the tag given to taxd_sender_add.
 *   - A batch whose request failed after the retries is reported with
 *     on_failure (each of its tags) and the stream stops: taxd_sender_finish
 *     answers that error. Transactions never sent are not reported. */
typedef struct taxd_sender taxd_sender;

typedef void (*taxd_result_fn)(void *userdata, uint64_t tag, const taxd_tx_result *result);
typedef void (*taxd_failure_fn)(void *userdata, uint64_t tag, const taxd_error *err);
/* Called once per batch, after its on_result (or on_failure) calls and
 * before its ids are released, so before any later payload of those ids is
 * sent: the place for a journal to make the batch's answers durable. */
typedef void (*taxd_batch_fn)(void *userdata, size_t count);

typedef struct {
    int connections;            /* 0: 4 */
    size_t batch_size;          /* 0: 1,000 (at most 1,000) */
    size_t max_batch_bytes;     /* 0: 8 MiB */
    taxd_result_fn on_result;
    taxd_failure_fn on_failure;
    void *userdata;
    taxd_batch_fn on_batch;     /* optional */
} taxd_sender_options;

taxd_sender *taxd_sender_new(taxd_client *client, const taxd_sender_options *options,
                             taxd_error *err);
/* Queues one transaction (copied). Blocks while the queue is full. id is
 * the transaction's id (the caller has parsed it). TAXD_E_ABORTED once the
 * stream has stopped on a failure. */
taxd_code taxd_sender_add(taxd_sender *sender, const char *id, const char *json, uint64_t tag);
/* Sends what is queued, waits for every answer, stops the threads. */
taxd_code taxd_sender_finish(taxd_sender *sender, taxd_error *err);
void taxd_sender_free(taxd_sender *sender);

/* ---- reports --------------------------------------------------------------- */

typedef enum {
    TAXD_REPORT_INVENTORY_SUMMARY = 1,   /* /v1/reports/inventory-summary */
    TAXD_REPORT_GAINS,                   /* /v1/reports/gains */
} taxd_report_kind;

/* phase is "pending", "processing", "completed", "downloading";
 * done/total are bytes while downloading (total -1 when unknown), else 0.
 * Returning false stops the wait or the download (TAXD_E_ABORTED). */
typedef bool (*taxd_progress_fn)(void *userdata, const char *phase, int64_t done, int64_t total);

/* Triggers a report with body (JSON text, or NULL for none); *report_id is
 * malloc'd. A trigger is a create: it is never sent twice. */
taxd_code taxd_report_trigger(taxd_client *client, taxd_report_kind kind, const char *body,
                              char **report_id, taxd_error *err);

/* Polls the report's status with backoff (250 ms growing to 5 s) until it
 * is completed (TAXD_OK) or failed (TAXD_E_FAILED), or timeout_ms passed
 * (TAXD_E_TIMEOUT; 0 waits forever). *status_json (may be NULL) receives
 * the last status body. */
taxd_code taxd_report_wait(taxd_client *client, taxd_report_kind kind, const char *report_id,
                           long timeout_ms, taxd_progress_fn progress, void *userdata,
                           char **status_json, taxd_error *err);

/* Downloads a completed report into path (written beside it, renamed into
 * place when complete). A link that expired or was refused is replaced by a
 * fresh one from the status route, once per failure, up to 3 times. */
taxd_code taxd_report_download(taxd_client *client, taxd_report_kind kind, const char *report_id,
                               const char *path, taxd_progress_fn progress, void *userdata,
                               taxd_error *err);

/* ---- webhooks (no client needed) ------------------------------------------ */

/* True when any "v1=" signature of header (x-service-signature: comma-
 * separated) is the base64 HMAC-SHA256 of body[0..len) under any of
 * secrets[0..count). Lengths are compared before bytes, bytes in constant
 * time. NULL or empty inputs verify nothing. */
bool taxd_webhook_verify(const char *header, const char *const *secrets, size_t count,
                         const void *body, size_t len);

/* One event of a delivery. */
typedef struct {
    char *event_type;
    char *event_id;             /* NULL when the event had none */
    char *json;                 /* the whole event object, compact JSON */
} taxd_webhook_event;

typedef struct {
    char *timestamp;            /* the envelope's timestamp, or NULL */
    taxd_webhook_event *events;
    size_t count;
} taxd_webhook_delivery;

/* Parses a delivery's envelope {"timestamp", "data": [event...]}; unknown
 * fields are ignored. TAXD_E_PROTOCOL when it is not such an envelope. */
taxd_code taxd_webhook_parse(const void *body, size_t len, taxd_webhook_delivery *delivery,
                             taxd_error *err);
void taxd_webhook_delivery_clear(taxd_webhook_delivery *delivery);

/* Remembers the last capacity event ids (FIFO eviction), since delivery is
 * at least once. */
typedef struct taxd_dedup taxd_dedup;
taxd_dedup *taxd_dedup_new(size_t capacity);
/* True when event_id was seen (among the last capacity); else records it. */
bool taxd_dedup_seen(taxd_dedup *dedup, const char *event_id);
void taxd_dedup_free(taxd_dedup *dedup);

#ifdef __cplusplus
}
#endif

#endif
