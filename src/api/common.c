/* common: what every resource handler shares. Cursor pagination (?limit=
 * 1..100, default 25; ?cursor= an opaque token from meta.next_cursor: the
 * base64url of the last key of the previous page, so pages stay stable under
 * inserts), request bodies validated against a schema, the answer to a
 * failed store call, and the small output conventions (times as RFC 3339 with
 * milliseconds, absent optional values as null). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/validate.h"
#include "http/errors.h"
#include "reports/links.h"

#define PAGE_DEFAULT 25
#define PAGE_MAX 100
#define CURSOR_KEY_MAX 1024

/* One issue of the query parameter `name` (extra stolen). */
static void add_query_issue(json_t *issues, const char *code, const char *name,
                            const char *message, json_t *extra)
{
    json_t *path = json_pack("[s]", name);
    json_array_append_new(issues, v_issue(code, path, message, extra));
    json_decref(path);
}

static bool refuse_query(request_t *req, const char *code, const char *name, const char *message,
                         json_t *extra)
{
    json_t *issues = json_array();
    add_query_issue(issues, code, name, message, extra);
    reply_invalid(req, "Invalid query parameters", issues);
    return false;
}

static bool parse_limit(request_t *req, const char *text, size_t *limit)
{
    *limit = PAGE_DEFAULT;
    if (text == NULL)
        return true;
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno != 0)
        return refuse_query(req, "invalid_type", "limit", "Invalid input: expected int",
                            json_pack("{s:s}", "expected", "int"));
    if (n < 1)
        return refuse_query(req, "too_small", "limit", "Too small: expected number to be >=1",
                            json_pack("{s:s, s:i, s:b}", "origin", "number", "minimum", 1,
                                      "inclusive", 1));
    if (n > PAGE_MAX)
        return refuse_query(req, "too_big", "limit", "Too big: expected number to be <=100",
                            json_pack("{s:s, s:i, s:b}", "origin", "number", "maximum",
                                      PAGE_MAX, "inclusive", 1));
    *limit = (size_t)n;
    return true;
}

static bool decode_cursor(request_t *req, const char *cursor, const char **after)
{
    char *key = arena_alloc(req->arena, CURSOR_KEY_MAX + 1);
    size_t len = 0;
    if (key == NULL ||
        crypto_base64url_decode(cursor, strlen(cursor), (uint8_t *)key, CURSOR_KEY_MAX,
                                &len) != 0 ||
        len == 0 || memchr(key, '\0', len) != NULL)
        return refuse_query(req, "custom", "cursor", "Invalid cursor", NULL);
    key[len] = '\0';
    *after = key;
    return true;
}

/* Parses ?limit= and ?cursor=; *after receives the decoded key the page
 * starts after ("" for the first page, arena-owned). On invalid input
 * answers 400 itself and returns false. */
static bool page_params(request_t *req, size_t *limit, const char **after)
{
    bool malformed = false;
    const char *text = request_query(req, "limit", &malformed);
    const char *cursor = malformed ? NULL : request_query(req, "cursor", &malformed);
    if (!api_query_ok(req, malformed, json_array()))
        return false;
    *after = "";
    if (!parse_limit(req, text, limit))
        return false;
    return cursor == NULL || decode_cursor(req, cursor, after);
}

/* meta.next_cursor: the opaque cursor after last_key, or null when !more. */
static json_t *next_cursor(const char *last_key, bool more)
{
    char out[CRYPTO_BASE64_LEN(CURSOR_KEY_MAX)];
    if (!more || last_key == NULL ||
        crypto_base64url_encode(last_key, strlen(last_key), out, sizeof out) == 0)
        return json_null();
    return json_string(out);
}

int api_page_add(api_page_t *page, json_t *item)
{
    if (item == NULL || json_array_append_new(page->items, item) != 0) {
        page->failed = true;
        return 1;
    }
    return 0;
}

void api_list(request_t *req, const char *key_field, api_page_fetch_fn fetch, const void *arg)
{
    api_page_t page = {.req = req};
    if (!page_params(req, &page.limit, &page.after))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    page.items = json_array();
    if (page.items == NULL) {
        api_internal_error(req, "out of memory for a page");
        return;
    }
    store_status_t st = fetch(db, &page, arg);
    if (st != STORE_OK || page.failed) {
        json_decref(page.items);
        api_fail(req, st, "a listed record could not be answered");
        return;
    }
    if (page.bad_cursor) {
        json_decref(page.items);
        refuse_query(req, "custom", "cursor", "Invalid cursor", NULL);
        return;
    }
    size_t n = json_array_size(page.items);
    json_t *last = n > 0 ? json_object_get(json_array_get(page.items, n - 1), key_field) : NULL;
    const char *key = page.last_key != NULL ? page.last_key : json_string_value(last);
    reply_json(req, 200, json_pack("{s:o, s:{s:o}}", "data", page.items, "meta", "next_cursor",
                                   next_cursor(key, page.more)));
}

json_t *api_read_body(request_t *req, const v_schema *schema, const char *what)
{
    json_t *body = request_json(req, false);
    if (body == NULL)
        return NULL;
    json_t *issues = json_array();
    if (v_check_object(schema, body, NULL, issues) > 0) {
        char message[128];
        snprintf(message, sizeof message, "Invalid %s", what);
        reply_invalid(req, message, issues);
        return NULL;
    }
    json_decref(issues);
    return body;
}

json_t *api_string_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

void reply_store_failure(request_t *req, store_status_t status)
{
    if (status == STORE_TIMEOUT)
        reply_json(req, 504, error_body(504, NULL));
    else if (status == STORE_UNAVAILABLE) /* the database server is away: try again later */
        reply_json(req, 503, error_body(503, NULL));
    else
        reply_internal_error(req);
}

void api_internal_error(request_t *req, const char *what)
{
    request_log_failure(req, what);
    reply_internal_error(req);
}

void api_fail(request_t *req, store_status_t st, const char *what)
{
    if (st != STORE_OK)
        reply_store_failure(req, st);
    else
        api_internal_error(req, what);
}

store_conn_t *api_db(request_t *req)
{
    store_conn_t *db = api_request_db(req);
    if (db == NULL)
        reply_store_failure(req, STORE_UNAVAILABLE); /* no connection to the database */
    return db;
}

bool api_found(request_t *req, store_status_t rc, const char *what, const char *id)
{
    if (rc == STORE_NOT_FOUND)
        reply_error(req, 404, "%s with id '%s' not found", what, id);
    else if (rc != STORE_OK)
        reply_store_failure(req, rc);
    return rc == STORE_OK;
}

/* ---- query parameters (shared by the read routes) ---------------------- */

const char *api_query_text(request_t *req, const char *name, json_t *issues, bool *malformed)
{
    bool bad = false;
    const char *value = request_query(req, name, &bad);
    *malformed = *malformed || bad;
    if (bad)
        return NULL;
    if (value == NULL)
        add_query_issue(issues, "invalid_type", name,
                        "Invalid input: expected string, received undefined",
                        json_pack("{s:s}", "expected", "string"));
    else if (value[0] == '\0')
        add_query_issue(issues, "too_small", name,
                        "Too small: expected string to have >=1 characters",
                        json_pack("{s:s, s:i, s:b}", "origin", "string", "minimum", 1,
                                  "inclusive", 1));
    return value != NULL && value[0] != '\0' ? value : NULL;
}

bool api_query_year(const char *text, const char *name, int min, int max, json_t *issues,
                    int *year)
{
    if (text == NULL) {
        add_query_issue(issues, "invalid_type", name,
                        "Invalid input: expected int, received undefined",
                        json_pack("{s:s}", "expected", "int"));
        return false;
    }
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0) {
        add_query_issue(issues, "invalid_type", name, "Invalid input: expected int",
                        json_pack("{s:s}", "expected", "int"));
        return false;
    }
    if (n < min || n > max) {
        bool big = n > max;
        char message[64];
        snprintf(message, sizeof message, "Too %s: expected number to be %s%d",
                 big ? "big" : "small", big ? "<=" : ">=", big ? max : min);
        add_query_issue(issues, big ? "too_big" : "too_small", name, message,
                        json_pack("{s:s, s:i, s:b}", "origin", "number",
                                  big ? "maximum" : "minimum", big ? max : min,
                                  "inclusive", 1));
        return false;
    }
    *year = (int)n;
    return true;
}

bool api_query_date(request_t *req, const char *name, bool required, json_t *issues,
                    bool *malformed, int64_t *ms)
{
    bool bad = false;
    const char *text = request_query(req, name, &bad);
    *malformed = *malformed || bad;
    if (bad)
        return false;
    if (text == NULL) {
        if (required)
            add_query_issue(issues, "invalid_type", name,
                            "Invalid input: expected string, received undefined",
                            json_pack("{s:s}", "expected", "string"));
        return false;
    }
    /* YYYY-MM-DD exactly; the clock's parser checks the calendar */
    char datetime[32];
    bool shaped = strlen(text) == 10 && text[4] == '-' && text[7] == '-';
    for (int i = 0; shaped && i < 10; i++)
        shaped = i == 4 || i == 7 || (text[i] >= '0' && text[i] <= '9');
    if (shaped)
        snprintf(datetime, sizeof datetime, "%sT00:00:00Z", text);
    if (!shaped || clock_parse_rfc3339(datetime, ms) != 0) {
        add_query_issue(issues, "invalid_format", name, "Invalid ISO date",
                        json_pack("{s:s, s:s}", "origin", "string", "format", "date"));
        return false;
    }
    return true;
}

bool api_query_period(request_t *req, bool required, json_t *issues, bool *malformed,
                      int64_t *from_ms, int64_t *to_ms)
{
    int64_t start = CLOCK_MIN_MS, end = CLOCK_MAX_MS;
    bool has_start = api_query_date(req, "start_date", required, issues, malformed, &start);
    bool has_end = api_query_date(req, "end_date", required, issues, malformed, &end);
    if (has_start && has_end && start > end) {
        add_query_issue(issues, "custom", "start_date",
                        "start_date must not be after end_date", NULL);
        return false;
    }
    *from_ms = start;
    *to_ms = has_end ? end + INT64_C(86400000) : CLOCK_MAX_MS + 1; /* inclusive end day */
    return true;
}

bool api_query_ok(request_t *req, bool malformed, json_t *issues)
{
    if (malformed) {
        json_decref(issues);
        reply_error(req, 400, "The query string is not validly percent-encoded");
        return false;
    }
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid query parameters", issues);
        return false;
    }
    json_decref(issues);
    return true;
}

/* ---- signed download links (reports/links.h) */

static void reply_link_refused(request_t *req, report_link_status_t status)
{
    const char *reason = status == REPORT_LINK_EXPIRED ? "expired" : "invalid_signature";
    reply_error_body(req, 403, error_body_forbidden_reason(reason));
}

bool api_link_ok(request_t *req, const char *id_param)
{
    bool malformed = false;
    const char *expires = request_query(req, "expires", &malformed);
    const char *nonce = malformed ? NULL : request_query(req, "nonce", &malformed);
    const char *signature = malformed ? NULL : request_query(req, "signature", &malformed);
    report_link_status_t status =
        malformed ? REPORT_LINK_INVALID
                  : report_link_verify(api_ctx(req)->links_key, request_param(req, id_param),
                                       expires, nonce, signature, api_now_s(req));
    if (status != REPORT_LINK_OK)
        reply_link_refused(req, status);
    return status == REPORT_LINK_OK;
}
