/* reports: the report routes (spec § Report endpoints), for two kinds of
 * report with the same mechanics: inventory-summary and gains (issue 16).
 *
 *   POST /v1/reports/{kind}                 trigger (scope reports): 202
 *   GET  /v1/reports/{kind}/{reportId}      status (scope reports): 200
 *   GET  /v1/reports/{kind}/{reportId}/download?expires&nonce&signature
 *                                           the file; no token, the link is
 *                                           the credential (reports/links.h)
 *
 * Each kind has routes of its own (so an operator's endpoint rule names one
 * of them); a report of one kind is 404 under the other's routes. The gains
 * trigger also takes tax_year (required: 2009 to next year by the service
 * clock). The active-report limit below counts both kinds together: it is
 * one per tenant.
 *
 * The trigger only validates and inserts a pending row, then wakes this
 * process's runner (reports/runner.c does the work, in any process that
 * shares the database). Its body is optional: none, or {}, means every
 * account of the tenant; {"account_ids":[...]} scopes it (1 to 50,000 ids of
 * 1 to 256 characters and bytes; the route's body limit is raised to 16 MiB
 * to fit them); "format" is csv (default) or jsonl.
 *
 * Bounds (docs/decisions.md, "Report triggers are bounded"): the gateway
 * applies the trigger's own rate limit (a built-in endpoint rule the
 * operator can replace); here, a tenant with --report-max-active reports
 * pending or processing gets 429 "Too many requests." with Retry-After,
 * counted in the insert's own transaction. The ids are stored as cut out of
 * the body the server received (see ids_text), and the parsed ones are
 * released before the insert: a trigger holds the body and nothing more.
 *
 * Status. A malformed id (not a UUID v4) is 404 like an unknown one; another
 * tenant's report is 403; a report past its retention is 404 even before
 * the janitor deleted it. A completed report's answer carries a fresh signed
 * link (a new nonce every time) valid 15 minutes, and the metadata computed
 * at completion, complete: every skipped id is listed, never truncated or
 * paged. They are listed from the requested ids as stored and the bitmap of
 * those skipped (reports/idlist.h), streamed: the answer holds one copy of
 * the requested ids in memory while it is sent, and builds no list.
 *
 * Download. The link is verified before the database is touched (403 with a
 * reason), then the report must exist, be completed and be within its
 * retention (404). The file is streamed chunk by chunk from the database
 * (reply_stream) by a reader that holds its own connection and one chunk
 * buffer: memory does not depend on the file's size. */
#include <ctype.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/domain.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "core/utf8.h"
#include "http/errors.h"
#include "reports/format.h"
#include "reports/idlist.h"
#include "reports/links.h"
#include "store/reports.h"

#define REPORT_IDS_MAX 50000
#define RETENTION_MS (30LL * 24 * 3600 * 1000)
#define TEST_HEADER "x-taxd-test-report"
#define TEST_PAUSE_MAX_MS 600000
/* Retry-After when the tenant has too many reports pending or processing:
 * reports of the maximum size complete in a few seconds. */
#define ACTIVE_RETRY_AFTER_S 2

static const char *const FORMATS[] = {"csv", "jsonl", NULL};
static const v_field ACCOUNT_ID_ITEM = {"account_id", V_STRING, .required = true, .min_len = 1,
                                        .max_len = DOMAIN_ID_MAX};
static const v_field TRIGGER_FIELDS[] = {
    {"account_ids", V_ARRAY, .min_items = 1, .max_items = REPORT_IDS_MAX,
     .items = &ACCOUNT_ID_ITEM},
    {"format", V_ENUM, .values = FORMATS},
    {NULL, V_ANY, .required = false},
};
static const v_schema TRIGGER = {TRIGGER_FIELDS};
/* The gains trigger: tax_year's upper bound is next year by the service
 * clock, so the field list is copied per request with it filled in. */
static const v_field GAINS_TRIGGER_FIELDS[] = {
    {"account_ids", V_ARRAY, .min_items = 1, .max_items = REPORT_IDS_MAX,
     .items = &ACCOUNT_ID_ITEM},
    {"format", V_ENUM, .values = FORMATS},
    {"tax_year", V_INTEGER, .required = true, .has_range = true,
     .min_int = DOMAIN_QUERY_TAX_YEAR_MIN, .max_int = DOMAIN_TAX_YEAR_MAX},
    {NULL, V_ANY, .required = false},
};
#define GAINS_TRIGGER_FIELD_COUNT (sizeof GAINS_TRIGGER_FIELDS / sizeof GAINS_TRIGGER_FIELDS[0])
#define GAINS_TAX_YEAR_FIELD 2

/* ---- trigger ---------------------------------------------------------- */

/* The validator counts characters; ids are also at most DOMAIN_ID_MAX bytes.
 * Only ids the schema accepted are looked at, so an id gets one issue at
 * most. */
static void check_id_bytes(const json_t *ids, json_t *issues)
{
    if (!json_is_array(ids) || json_array_size(ids) > REPORT_IDS_MAX)
        return;
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *id = json_array_get(ids, i);
        size_t bytes = json_string_length(id);
        if (!json_is_string(id) || bytes <= DOMAIN_ID_MAX ||
            utf8_chars(json_string_value(id), bytes) > DOMAIN_ID_MAX)
            continue;
        json_t *path = json_pack("[s, I]", "account_ids", (json_int_t)i);
        json_array_append_new(issues, v_issue("custom", path, API_ID_TOO_BIG, NULL));
        json_decref(path);
    }
}

/* The test directive header (only with --test-hooks): "fail" or
 * "pause=<ms>". Answers 400 itself for anything else. */
static bool read_directive(request_t *req, char out[STORE_REPORT_DIRECTIVE_MAX])
{
    out[0] = '\0';
    const char *value = api_ctx(req)->test_hooks ? request_header(req, TEST_HEADER) : NULL;
    if (value == NULL)
        return true;
    char *end = NULL;
    long long ms = strncmp(value, "pause=", 6) == 0 ? strtoll(value + 6, &end, 10) : -1;
    bool pause_ok = end != NULL && end != value + 6 && *end == '\0' && ms > 0 &&
                    ms <= TEST_PAUSE_MAX_MS;
    if (strcmp(value, "fail") != 0 && !pause_ok) {
        reply_error(req, 400, "%s must be 'fail' or 'pause=<ms>' (1 to %d)", TEST_HEADER,
                    TEST_PAUSE_MAX_MS);
        return false;
    }
    snprintf(out, STORE_REPORT_DIRECTIVE_MAX, "%s", value);
    return true;
}

/* The year of the service clock's now, plus one: the last tax year a query
 * may name. */
static int64_t next_tax_year(const request_t *req)
{
    time_t now_s = (time_t)(api_now_ms(req) / 1000);
    struct tm tm;
    gmtime_r(&now_s, &tm);
    return (int64_t)tm.tm_year + 1900 + 1;
}

/* The validated body (NULL: none, every account in CSV; the gains trigger
 * needs one, for its tax_year); false after a 400. */
static bool read_trigger(request_t *req, bool gains, json_t **body)
{
    *body = request_json(req, !gains);
    if (*body == NULL)
        return req->status == 0;
    json_t *issues = json_array();
    v_field fields[GAINS_TRIGGER_FIELD_COUNT];
    v_schema schema = {fields};
    if (gains) {
        memcpy(fields, GAINS_TRIGGER_FIELDS, sizeof fields);
        fields[GAINS_TAX_YEAR_FIELD].max_int = next_tax_year(req);
    }
    v_check_object(gains ? &schema : &TRIGGER, *body, NULL, issues);
    check_id_bytes(json_object_get(*body, "account_ids"), issues);
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid report request", issues);
        return false;
    }
    json_decref(issues);
    return true;
}

static bool is_gains(const store_report_t *r)
{
    return strcmp(r->kind, STORE_REPORT_KIND_GAINS) == 0;
}

/* report_id, status, format, (gains: tax_year,) created_at. */
static json_t *report_head(const store_report_t *r)
{
    if (is_gains(r))
        return json_pack("{s:s, s:s, s:s, s:i, s:o}", "report_id", r->id, "status", r->status,
                         "format", r->format, "tax_year", r->tax_year, "created_at",
                         jsonval_time(r->created_at));
    return json_pack("{s:s, s:s, s:s, s:o}", "report_id", r->id, "status", r->status, "format",
                     r->format, "created_at", jsonval_time(r->created_at));
}

static void free_text(void *p)
{
    free(p);
}

/* The id list as stored: the array as sent (duplicates kept, escapes as
 * the client wrote them), without whitespace. It is cut out of the body the
 * server already holds and compacted in place, so no other copy is made;
 * only a body whose keys use escapes has its parsed array serialized. The
 * parsed array is then released from the body at once: up to 16 MB of
 * strings that nothing reads again. */
static bool ids_text(request_t *req, json_t *body, const char **out, size_t *len)
{
    const json_t *ids = body != NULL ? json_object_get(body, "account_ids") : NULL;
    *out = NULL;
    *len = 0;
    if (ids == NULL)
        return true;
    size_t start = 0, span = 0;
    if (report_body_ids_span(req->body, req->body_len, &start, &span)) {
        *len = report_json_compact(req->body + start, span);
        *out = req->body + start;
    } else {
        char *text = json_dumps(ids, JSON_COMPACT);
        if (text == NULL || arena_defer(req->arena, free_text, text) != 0) {
            free(text);
            api_internal_error(req, "report: out of memory for the account ids");
            return false;
        }
        *out = text;
        *len = strlen(text);
    }
    json_object_del(body, "account_ids");
    return true;
}

/* 429 "Too many requests." with Retry-After: the tenant has its maximum of
 * reports pending or processing. */
static void reply_too_many_active(request_t *req)
{
    const char *value = arena_sprintf(req->arena, "%d", ACTIVE_RETRY_AFTER_S);
    if (value != NULL)
        reply_header(req, "Retry-After", value);
    metrics_count_limit_reject(api_ctx(req)->metrics, METRICS_LIMIT_ENDPOINT);
    reply_error_body(req, 429, error_body_rate_limited(ERROR_LIMIT_ENDPOINT,
                                                       ACTIVE_RETRY_AFTER_S));
}

static void trigger(request_t *req, const char *kind)
{
    store_report_t r = {0};
    json_t *body = NULL;
    const char *account_ids = NULL;
    size_t ids_len = 0;
    bool gains = strcmp(kind, STORE_REPORT_KIND_GAINS) == 0;
    if (!read_directive(req, r.test_directive) || !read_trigger(req, gains, &body) ||
        !ids_text(req, body, &account_ids, &ids_len))
        return;
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    if (gains)
        r.tax_year = (int)json_integer_value(json_object_get(body, "tax_year"));
    const json_t *format = body != NULL ? json_object_get(body, "format") : NULL;
    snprintf(r.format, sizeof r.format, "%s", format != NULL ? json_string_value(format) : "csv");
    snprintf(r.tenant_id, sizeof r.tenant_id, "%.36s", req->claims.tenant_id);
    snprintf(r.status, sizeof r.status, "pending");
    r.created_at = api_now_ms(req);
    r.expires_at = r.created_at + RETENTION_MS;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    if (ids_uuid_v4(r.id) != 0) {
        api_internal_error(req, "uuid generation");
        return;
    }
    bool admitted = false;
    store_status_t st = store_report_create(db, &r, account_ids, ids_len,
                                            api_ctx(req)->report_max_active, &admitted);
    if (st != STORE_OK) {
        reply_store_failure(req, st);
        return;
    }
    if (!admitted) {
        reply_too_many_active(req);
        return;
    }
    api_wake_engines(req);
    reply_json(req, 202, report_head(&r));
}

void api_reports_trigger(request_t *req)
{
    trigger(req, STORE_REPORT_KIND_INVENTORY);
}

void api_reports_gains_trigger(request_t *req)
{
    trigger(req, STORE_REPORT_KIND_GAINS);
}

/* ---- finding a report -------------------------------------------------- */

/* The report of `kind` named by the path, lowercased (UUIDs in any case),
 * within its retention. Answers 404 itself (malformed, unknown, of the other
 * kind, or expired) and store failures; *found false then. */
static bool find_report(request_t *req, const char *kind, unsigned texts, store_report_t *r)
{
    const char *raw = request_param(req, "reportId");
    char id[STORE_UUID_LEN];
    if (raw == NULL || !ids_is_uuid_v4(raw)) {
        reply_error(req, 404, "Report with id '%s' not found", raw != NULL ? raw : "");
        return false;
    }
    for (size_t i = 0; i < sizeof id; i++)
        id[i] = (char)tolower((unsigned char)raw[i]);
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return false;
    store_status_t st = store_report_get(db, id, texts, r);
    if (st == STORE_OK && (r->expires_at <= api_now_ms(req) || strcmp(r->kind, kind) != 0)) {
        store_report_clear(r);
        st = STORE_NOT_FOUND;
    }
    if (st == STORE_NOT_FOUND)
        reply_error(req, 404, "Report with id '%s' not found", raw);
    else if (st != STORE_OK)
        reply_store_failure(req, st);
    return st == STORE_OK;
}

/* ---- status ------------------------------------------------------------ */

/* download_url, expires_at and metadata of a completed report; metadata is
 * the last member. */
static bool add_completed(request_t *req, const store_report_t *r, json_t *out)
{
    char url[REPORT_LINK_MAX];
    int64_t expires_s = 0;
    json_error_t error;
    json_t *metadata = r->metadata != NULL ? json_loads(r->metadata, 0, &error) : NULL;
    const api_context_t *ctx = api_ctx(req);
    if (metadata == NULL ||
        report_link_make(ctx->links_key, ctx->base_url, r->kind, r->id, api_now_s(req), url,
                         sizeof url, &expires_s) != 0) {
        json_decref(metadata);
        return false;
    }
    json_object_set_new(out, "download_url", json_string(url));
    json_object_set_new(out, "expires_at", jsonval_time(expires_s * 1000));
    json_object_set_new(out, "metadata", metadata);
    return true;
}

/* A completed report's answer whose skipped ids come from the stored
 * requested ids and bitmap: the JSON before the ids (up to the '[' of
 * not_found_in_organization), the ids, then TAIL. */
#define TAIL "]}}}"
#define TAIL_LEN (sizeof TAIL - 1)

typedef struct skipped_body {
    char *head;                  /* malloc'd */
    size_t head_len;
    char *ids;                   /* malloc'd: the requested ids as stored */
    uint8_t *bits;               /* malloc'd: the skipped bitmap */
    uint64_t list_bytes;         /* what the reader produces */
    uint64_t list_done;
    report_skipped_reader_t reader;
} skipped_body_t;

static void skipped_body_free(void *cls)
{
    skipped_body_t *b = cls;
    free(b->head);
    free(b->ids);
    free(b->bits);
    free(b);
}

/* reply_stream_read_fn: the head, the skipped ids, the tail, in order
 * (libmicrohttpd asks for the body sequentially). */
static ssize_t skipped_body_read(void *cls, uint64_t pos, char *out, size_t max)
{
    skipped_body_t *b = cls;
    uint64_t list_end = b->head_len + b->list_bytes;
    if (pos >= list_end + TAIL_LEN)
        return REPLY_STREAM_END;
    if (pos < b->head_len) {
        size_t n = (size_t)(b->head_len - pos) < max ? (size_t)(b->head_len - pos) : max;
        memcpy(out, b->head + pos, n);
        return (ssize_t)n;
    }
    if (pos >= list_end) {
        size_t off = (size_t)(pos - list_end);
        size_t n = TAIL_LEN - off < max ? TAIL_LEN - off : max;
        memcpy(out, TAIL + off, n);
        return (ssize_t)n;
    }
    if (pos - b->head_len != b->list_done)
        return REPLY_STREAM_ERROR; /* not sequential: never send garbage */
    uint64_t left = list_end - pos;
    long n = report_skipped_read(&b->reader, out, left < max ? (size_t)left : max);
    if (n <= 0)
        return REPLY_STREAM_ERROR; /* shorter than measured, or malformed */
    b->list_done += (uint64_t)n;
    return (ssize_t)n;
}

/* Makes metadata.skipped_account_ids.not_found_in_organization an empty
 * array, the last member of the last member of out's last member, and
 * returns out's compact text cut just after that array's '['. NULL when
 * memory ran out. */
static char *head_text(json_t *out, size_t *len)
{
    json_t *metadata = json_object_get(out, "metadata");
    json_t *skipped = json_object_get(metadata, "skipped_account_ids");
    skipped = skipped != NULL ? json_incref(skipped) : json_object();
    json_object_del(metadata, "skipped_account_ids");
    json_object_del(skipped, "not_found_in_organization");
    if (json_object_set_new(skipped, "not_found_in_organization", json_array()) != 0 ||
        json_object_set_new(metadata, "skipped_account_ids", skipped) != 0)
        return NULL;
    char *text = json_dumps(out, JSON_COMPACT);
    size_t n = text != NULL ? strlen(text) : 0;
    if (n < TAIL_LEN + 1 || memcmp(text + n - TAIL_LEN - 1, "[" TAIL, TAIL_LEN + 1) != 0) {
        free(text); /* members out of order: cannot happen with jansson >= 2.8 */
        return NULL;
    }
    text[n - TAIL_LEN] = '\0';
    *len = n - TAIL_LEN;
    return text;
}

/* Answers out (consumed) with the skipped ids of r streamed into it; takes
 * r's bitmap. False (nothing answered yet) when the ids cannot be read or
 * memory ran out; a report deleted meanwhile is answered 404, a lock
 * timeout 504. */
static bool reply_with_skipped(request_t *req, store_report_t *r, json_t *out)
{
    skipped_body_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        json_decref(out);
        return false;
    }
    b->head = head_text(out, &b->head_len);
    json_decref(out);
    size_t ids_len = 0;
    int64_t count = 0;
    store_conn_t *db = api_db(req);
    store_status_t st = db == NULL ? STORE_ERROR
                                   : store_report_requested(db, r->id, &b->ids, &ids_len);
    b->bits = r->skipped;
    r->skipped = NULL;
    if (st == STORE_NOT_FOUND || st == STORE_TIMEOUT) {
        skipped_body_free(b); /* deleted meanwhile (retention), or the database stayed locked */
        if (st == STORE_NOT_FOUND)
            reply_error(req, 404, "Report with id '%s' not found", r->id);
        else
            reply_store_failure(req, st);
        return true;
    }
    if (b->head == NULL || st != STORE_OK ||
        report_skipped_measure(b->ids, ids_len, b->bits, r->skipped_len, &b->list_bytes,
                               &count) != 0) {
        skipped_body_free(b);
        return false;
    }
    report_skipped_reader_begin(&b->reader, b->ids, ids_len, b->bits, r->skipped_len);
    reply_stream(req, 200, "application/json", b->head_len + b->list_bytes + TAIL_LEN,
                 skipped_body_read, b, skipped_body_free);
    return true;
}

static void get_report(request_t *req, const char *kind)
{
    store_report_t r;
    if (!find_report(req, kind, STORE_REPORT_WITH_METADATA, &r))
        return;
    if (strcmp(r.tenant_id, req->claims.tenant_id) != 0) {
        store_report_clear(&r);
        reply_error_body(req, 403, error_body_forbidden());
        return;
    }
    json_t *out = report_head(&r);
    bool ok = out != NULL;
    bool completed = strcmp(r.status, "completed") == 0;
    if (ok && completed)
        ok = add_completed(req, &r, out);
    else if (ok && strcmp(r.status, "failed") == 0)
        ok = json_object_set_new(out, "error", json_pack("{s:s, s:s}", "code", r.error_code,
                                                         "message", r.error_message)) == 0;
    if (ok && completed && r.scoped && r.skipped != NULL) {
        ok = reply_with_skipped(req, &r, out);
        out = NULL;
    }
    store_report_clear(&r);
    if (!ok) {
        json_decref(out);
        api_internal_error(req, "report status: the stored metadata or ids do not parse, the "
                                "link cannot be made, or memory ran out");
        return;
    }
    if (out != NULL)
        reply_json(req, 200, out);
}

void api_reports_get(request_t *req)
{
    get_report(req, STORE_REPORT_KIND_INVENTORY);
}

void api_reports_gains_get(request_t *req)
{
    get_report(req, STORE_REPORT_KIND_GAINS);
}

/* ---- download ---------------------------------------------------------- */

typedef struct download {
    store_t *store;
    store_conn_t *conn;          /* its own, never the request's */
    char id[STORE_UUID_LEN];
    uint64_t size;
    int64_t loaded_seq;          /* the chunk in buf, -1 for none */
    size_t loaded_len;
    char buf[STORE_REPORT_CHUNK_BYTES];
} download_t;

static void download_free(void *cls)
{
    download_t *d = cls;
    store_release(d->store, d->conn);
    free(d);
}

/* reply_stream_read_fn: bytes from pos, a chunk at a time. A chunk that is
 * gone (the janitor deleted the report meanwhile) aborts the body. */
static ssize_t download_read(void *cls, uint64_t pos, char *out, size_t max)
{
    download_t *d = cls;
    if (pos >= d->size)
        return REPLY_STREAM_END;
    int64_t seq = (int64_t)(pos / STORE_REPORT_CHUNK_BYTES);
    size_t offset = (size_t)(pos % STORE_REPORT_CHUNK_BYTES);
    if (seq != d->loaded_seq) {
        d->loaded_seq = -1;
        if (store_report_chunk(d->conn, d->id, seq, d->buf, sizeof d->buf, &d->loaded_len) !=
            STORE_OK)
            return REPLY_STREAM_ERROR;
        d->loaded_seq = seq;
    }
    if (offset >= d->loaded_len)
        return REPLY_STREAM_ERROR; /* shorter than its size says: never send garbage */
    size_t n = d->loaded_len - offset;
    n = n < max ? n : max;
    memcpy(out, d->buf + offset, n);
    return (ssize_t)n;
}

static void stream_report(request_t *req, const store_report_t *r)
{
    report_format_t format = REPORT_FORMAT_CSV;
    report_format_parse(r->format, &format);
    store_t *store = api_ctx(req)->store;
    download_t *d = malloc(sizeof *d);
    if (d == NULL) {
        api_internal_error(req, "report download: out of memory");
        return;
    }
    if ((d->conn = store_acquire(store)) == NULL) {
        free(d);
        reply_store_failure(req, STORE_UNAVAILABLE); /* no connection for the reader */
        return;
    }
    d->store = store;
    memcpy(d->id, r->id, sizeof d->id);
    d->size = (uint64_t)r->size_bytes;
    d->loaded_seq = -1;
    d->loaded_len = 0;
    const char *disposition =
        arena_sprintf(req->arena, "attachment; filename=\"%s-%s.%s\"", r->kind, r->id,
                      report_format_extension(format));
    if (disposition != NULL)
        reply_header(req, "content-disposition", disposition);
    reply_header(req, "cache-control", "no-store");
    reply_stream(req, 200, report_format_content_type(format), d->size, download_read, d,
                 download_free);
}

static void download(request_t *req, const char *kind)
{
    store_report_t r;
    if (!api_link_ok(req, "reportId") || !find_report(req, kind, 0, &r))
        return;
    if (strcmp(r.status, "completed") != 0) { /* links are only made for completed reports */
        reply_error(req, 404, "Report with id '%s' not found", r.id);
        return;
    }
    stream_report(req, &r);
}

void api_reports_download(request_t *req)
{
    download(req, STORE_REPORT_KIND_INVENTORY);
}

void api_reports_gains_download(request_t *req)
{
    download(req, STORE_REPORT_KIND_GAINS);
}
