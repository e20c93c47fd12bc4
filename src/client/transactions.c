/* client/transactions: upserts of one transaction or a batch.
 *
 * Both go to POST /v1/transactions/external-id with TAXD_SAFE: the upsert is
 * keyed by the caller's id, so an identical resend after a 5xx, a reset or a
 * timeout is harmless (spec § Retry safety 2); taxd_send does the retrying.
 *
 * What is reported:
 *   - a batch answers 200 {"data": [{index, status, http_status?, data}]}:
 *     each element's status is taken as it is (created, updated, unchanged,
 *     error -> REFUSED with the element's http_status, message and data[]);
 *   - a single upsert answers 201 (CREATED) or 200, and a 200 does not say
 *     whether the resend was identical (the record's updated_at is kept,
 *     but an earlier update also leaves updated_at after created_at). A 200
 *     is reported UPDATED unless updated_at equals created_at (then nothing
 *     was ever updated, so this write changed nothing: UNCHANGED). Callers
 *     that need the exact distinction send a batch of one;
 *   - a 400 or 404 answered to a single upsert is the transaction's fault:
 *     TAXD_OK with outcome REFUSED; any other failure is the call's.
 *
 * The batch body is the callers' JSON texts joined into an array, without
 * parsing them: each is only checked to look like an object ('{' ... '}'),
 * so that one malformed text cannot turn the whole batch into a 400. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#define TX_PATH "/v1/transactions/external-id"
#define BATCH_MAX 1000

void taxd_tx_result_clear(taxd_tx_result *result)
{
    if (!result)
        return;
    free(result->message);
    free(result->details);
    memset(result, 0, sizeof *result);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The [start, end) of text without surrounding JSON whitespace. */
static void trim(const char *text, size_t len, size_t *start, size_t *end)
{
    size_t a = 0, b = len;
    while (a < b && strchr(" \t\r\n", text[a]))
        a++;
    while (b > a && strchr(" \t\r\n", text[b - 1]))
        b--;
    *start = a;
    *end = b;
}

/* The cheap check: a JSON object's text, by its first and last bytes. */
static bool looks_like_object(const char *json)
{
    if (!json)
        return false;
    size_t a, b;
    trim(json, strlen(json), &a, &b);
    return b - a >= 2 && json[a] == '{' && json[b - 1] == '}';
}

/* ---- single */

/* UNCHANGED when the record says it was never updated, else UPDATED. */
static taxd_tx_outcome outcome_of_200(const char *body, size_t len)
{
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *data = json_object_get(doc, "data");
    const char *created = json_string_value(json_object_get(data, "created_at"));
    const char *updated = json_string_value(json_object_get(data, "updated_at"));
    taxd_tx_outcome o = created && updated && strcmp(created, updated) == 0 ? TAXD_TX_UNCHANGED
                                                                            : TAXD_TX_UPDATED;
    json_decref(doc);
    return o;
}

/* A 400 or 404 to an upsert: the transaction was refused (moved from err). */
static void refused_from(taxd_tx_result *result, taxd_error *e)
{
    result->outcome = TAXD_TX_REFUSED;
    result->http_status = e->status;
    result->message = e->message;
    result->details = e->details;
    e->message = NULL;
    e->details = NULL;
}

taxd_code taxd_tx_upsert(taxd_client *client, const char *json, taxd_tx_result *result,
                         taxd_error *err)
{
    if (!client || !result || !looks_like_object(json))
        return tc_fail(err, TAXD_E_INVALID, "a transaction must be a JSON object's text");
    memset(result, 0, sizeof *result);
    taxd_request rq = {.method = "POST", .path = TX_PATH, .body = json, .flags = TAXD_SAFE};
    taxd_response rs = {0};
    taxd_error e = {0};
    taxd_code code = taxd_send(client, &rq, &rs, &e);
    if (code == TAXD_OK) {
        result->http_status = rs.status;
        result->outcome = rs.status == 201 ? TAXD_TX_CREATED : outcome_of_200(rs.body, rs.body_len);
    } else if (code == TAXD_E_HTTP && (e.status == 400 || e.status == 404)) {
        refused_from(result, &e);
        code = TAXD_OK;
    }
    taxd_response_clear(&rs);
    if (code != TAXD_OK && err)
        *err = e;
    else
        taxd_error_clear(&e);
    return code;
}

/* ---- batch */

/* "[a,b,...]" from the texts; NULL when out of memory. */
static char *join_batch(const char *const *jsons, size_t n, size_t *out_len)
{
    size_t total = 2 + n;
    for (size_t i = 0; i < n; i++)
        total += strlen(jsons[i]);
    char *body = malloc(total + 1);
    if (!body)
        return NULL;
    size_t at = 0;
    body[at++] = '[';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(jsons[i]);
        if (i)
            body[at++] = ',';
        memcpy(body + at, jsons[i], len);
        at += len;
    }
    body[at++] = ']';
    body[at] = '\0';
    *out_len = at;
    return body;
}

static const struct {
    const char *name;
    taxd_tx_outcome outcome;
} STATUSES[] = {
    {"created", TAXD_TX_CREATED},
    {"updated", TAXD_TX_UPDATED},
    {"unchanged", TAXD_TX_UNCHANGED},
    {"error", TAXD_TX_REFUSED},
};

/* A refused element's http_status: an error status as it is, anything
 * else (absent, not an integer, out of 100-599) 400. The tree parser and
 * the scanner both apply it, so they agree (fuzz_client_answer). */
static int refusal_status(long long http_status)
{
    return http_status >= 100 && http_status <= 599 ? (int)http_status : 400;
}

/* One element of the answer into result; false when it is not one. */
static bool read_element(json_t *el, size_t index, taxd_tx_result *result)
{
    json_t *idx = json_object_get(el, "index");
    const char *status = json_string_value(json_object_get(el, "status"));
    if (!json_is_integer(idx) || json_integer_value(idx) != (json_int_t)index || !status)
        return false;
    result->outcome = 0;
    for (size_t k = 0; k < sizeof STATUSES / sizeof STATUSES[0]; k++)
        if (strcmp(status, STATUSES[k].name) == 0)
            result->outcome = STATUSES[k].outcome;
    if (result->outcome == 0)
        return false;
    if (result->outcome != TAXD_TX_REFUSED) {
        result->http_status = result->outcome == TAXD_TX_CREATED ? 201 : 200;
        return true;
    }
    json_t *data = json_object_get(el, "data");
    result->http_status = refusal_status(json_integer_value(json_object_get(el, "http_status")));
    result->message = dup_or_null(json_string_value(json_object_get(data, "message")));
    json_t *issues = json_object_get(data, "data");
    if (json_is_array(issues))
        result->details = json_dumps(issues, JSON_COMPACT);
    return true;
}

/* The 200's {"data": [...]} into results[0..n). */
static taxd_code read_batch_answer(const taxd_response *rs, size_t n, taxd_tx_result *results,
                                   taxd_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(rs->body, rs->body_len, 0, &je);
    json_t *data = json_object_get(doc, "data");
    taxd_code code = TAXD_OK;
    if (!json_is_array(data) || json_array_size(data) != n) {
        code = tc_fail(err, TAXD_E_PROTOCOL, "the batch answer is not {\"data\": [%zu results]}", n);
    } else {
        for (size_t i = 0; i < n && code == TAXD_OK; i++)
            if (!read_element(json_array_get(data, i), i, &results[i]))
                code = tc_fail(err, TAXD_E_PROTOCOL, "the batch answer's element %zu is unreadable", i);
    }
    if (code != TAXD_OK)
        for (size_t i = 0; i < n; i++)
            taxd_tx_result_clear(&results[i]);
    if (code != TAXD_OK && err) {
        err->status = rs->status;
        err->request_id = dup_or_null(rs->request_id);
    }
    json_decref(doc);
    return code;
}

/* ---- the batch answer without building a tree
 *
 * A batch of 1,000 answers ~700 KB (every element carries its record), and
 * parsing it into a jansson tree was most of an import's client CPU
 * (a malloc and a free per node: 1.5 s of 2.5 s for 100,000 transactions).
 * The answer is read instead by a scanner that skips values: each
 * element's index, status and http_status are read in place, and only a
 * refused element's `data` (its error body) is parsed. Anything the
 * scanner does not expect sends the whole answer to the tree parser above,
 * which stays the reference. */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at '"': past the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* Past one value at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p != '{' && *p != '[') {
        while (p < end && !strchr(",}] \t\r\n", *p))
            p++;
        return p;
    }
    int depth = 0;
    while (p < end) {
        if (*p == '"') {
            if (!(p = skip_string(p, end)))
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* A key (without escapes) at p: its text in [*k, *k + *n); past the ':'
 * and the whitespace after it, at a value's first byte (never at end: a
 * body cut after the ':' is not read past its end). */
static const char *read_key(const char *p, const char *end, const char **k, size_t *n)
{
    p = skip_ws(p, end);
    if (p >= end || *p != '"')
        return NULL;
    const char *q = skip_string(p, end);
    if (!q || memchr(p + 1, '\\', (size_t)(q - p - 2)))
        return NULL;
    *k = p + 1;
    *n = (size_t)(q - p - 2);
    q = skip_ws(q, end);
    if (q >= end || *q != ':')
        return NULL;
    q = skip_ws(q + 1, end);
    return q < end ? q : NULL;
}

static bool key_is(const char *k, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(k, want, n) == 0;
}

/* A small non-negative integer at [p, q), or -1. */
static long small_int(const char *p, const char *q)
{
    long v = 0;
    if (p == q || q - p > 9)
        return -1;
    for (; p < q; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* A refused element's error body (the transactions shape) into result. */
static void read_refusal(const char *data, const char *data_end, long http_status, taxd_tx_result *result)
{
    json_t *body = json_loadb(data, (size_t)(data_end - data), 0, NULL);
    json_t *issues = json_object_get(body, "data");
    result->http_status = refusal_status(http_status);
    result->message = dup_or_null(json_string_value(json_object_get(body, "message")));
    if (json_is_array(issues))
        result->details = json_dumps(issues, JSON_COMPACT);
    json_decref(body);
}

/* One element {"index", "status", "http_status"?, "data"} at p into
 * result; past it, or NULL. */
static const char *scan_element(const char *p, const char *end, size_t index, taxd_tx_result *result)
{
    if (p >= end || *p != '{')
        return NULL;
    p = skip_ws(p + 1, end);
    long idx = -1, http_status = 0;
    const char *data = NULL, *data_end = NULL;
    result->outcome = 0;
    while (p && p < end && *p != '}') {
        const char *k, *v;
        size_t n;
        if (!(v = read_key(p, end, &k, &n)) || !(p = skip_value(v, end)))
            return NULL;
        if (key_is(k, n, "index"))
            idx = small_int(v, p);
        else if (key_is(k, n, "http_status"))
            http_status = small_int(v, p);
        else if (key_is(k, n, "data")) {
            data = v;
            data_end = p;
        } else if (key_is(k, n, "status")) {
            /* a repeated key: the last one counts, as in jansson's tree */
            result->outcome = 0;
            for (size_t s = 0; *v == '"' && s < sizeof STATUSES / sizeof STATUSES[0]; s++)
                if (key_is(v + 1, (size_t)(p - v - 2), STATUSES[s].name))
                    result->outcome = STATUSES[s].outcome;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p = skip_ws(p + 1, end);
    }
    if (!p || p >= end || idx != (long)index || result->outcome == 0 || !data)
        return NULL;
    if (result->outcome == TAXD_TX_REFUSED)
        read_refusal(data, data_end, http_status, result);
    else
        result->http_status = result->outcome == TAXD_TX_CREATED ? 201 : 200;
    return p + 1;
}

/* The elements of the "data" array at p (just past its '['); past its ']'. */
static const char *scan_elements(const char *p, const char *end, size_t n, taxd_tx_result *results,
                                 size_t *got)
{
    p = skip_ws(p, end);
    while (p && p < end && *p != ']') {
        if (*got == n || !(p = scan_element(p, end, *got, &results[*got])))
            return NULL;
        (*got)++;
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p = skip_ws(p + 1, end);
    }
    return p && p < end ? p + 1 : NULL;
}

bool tc_tx_scan_answer(const char *p, size_t len, size_t n, taxd_tx_result *results)
{
    const char *end = p + len;
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return false;
    p++;
    size_t got = 0;
    bool seen = false;
    while (p < end) {
        const char *k, *v;
        size_t kn;
        if (!(v = read_key(p, end, &k, &kn)))
            return false;
        if (key_is(k, kn, "data")) {
            /* a second "data" (jansson's tree keeps the last) or one that
             * is not an array: the tree parser decides */
            if (seen || *v != '[')
                return false;
            seen = true;
            p = scan_elements(v + 1, end, n, results, &got);
        } else {
            p = skip_value(v, end);
        }
        if (!p)
            return false;
        p = skip_ws(p, end);
        if (p < end && *p == '}')
            return seen && got == n;
        if (p >= end || *p != ',')
            return false;
        p++;
    }
    return false;
}

taxd_code taxd_tx_upsert_batch(taxd_client *client, const char *const *jsons, size_t n,
                               taxd_tx_result *results, taxd_error *err)
{
    if (!client || !jsons || !results || n == 0 || n > BATCH_MAX)
        return tc_fail(err, TAXD_E_INVALID, "a batch has 1 to %d transactions (got %zu)", BATCH_MAX, n);
    for (size_t i = 0; i < n; i++)
        if (!looks_like_object(jsons[i]))
            return tc_fail(err, TAXD_E_INVALID, "the batch's transaction %zu is not a JSON object's text", i);
    memset(results, 0, n * sizeof *results);
    size_t len = 0;
    char *body = join_batch(jsons, n, &len);
    if (!body)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory building a batch of %zu", n);
    taxd_request rq = {.method = "POST", .path = TX_PATH, .body = body, .body_len = len,
                       .flags = TAXD_SAFE};
    taxd_response rs = {0};
    taxd_code code = taxd_send(client, &rq, &rs, err);
    free(body);
    if (code == TAXD_OK && !tc_tx_scan_answer(rs.body, rs.body_len, n, results)) {
        for (size_t i = 0; i < n; i++)
            taxd_tx_result_clear(&results[i]);
        code = read_batch_answer(&rs, n, results, err);
    }
    taxd_response_clear(&rs);
    return code;
}
