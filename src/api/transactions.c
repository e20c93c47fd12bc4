/* transactions: create or update by the caller's id, read, delete
 * (spec § Endpoints named in the error conventions, § Retry safety 2).
 *
 * The model is Taxbit's transaction version 2: id, account_id, datetime,
 * type with an optional subtype, and sent / received / fees arrays of
 * {"asset_amount":{"amount","asset":{"code","type"}},"rates":[...]}, plus
 * optional metadata. A body is validated, then normalised (api/tx_document.c,
 * shared with the fuzzer) into a canonical
 * JSON document (fixed key order, canonical decimals, the datetime in UTC
 * with milliseconds): that document is what is stored and answered, and a
 * resend whose canonical form is byte-identical changes nothing and emits no
 * event. Amounts and rates are exact decimals (core/decimal.h): a value that
 * cannot be held exactly is refused with an issue, never rounded.
 *
 * POST also takes a JSON array of 1 to 1,000 transactions (a batch, see
 * "batches" below): every element follows the rules of a single upsert and
 * gets its own result; the valid ones are written in one database
 * transaction.
 *
 * Errors of POST use the transactions shape (errors.h), with the validation
 * detail in data[].message; authentication, rate limits, 413 and 504 keep the
 * shapes they have everywhere. GET and DELETE of an unknown id answer the
 * lookup shape naming the external id and the tenant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/tx_document.h"
#include "core/clock.h"
#include "core/dbuf.h"
#include "core/domain.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "http/errors.h"
#include "store/transactions.h"

#define PAUSE_HEADER "x-taxd-test-pause-ms"

/* ---- errors in the transactions shape --------------------------------- */

static void reply_tx_error(request_t *req, int status, const char *message, const char *type,
                           json_t *data)
{
    reply_error_body(req, status, error_body_transactions(message, type, data));
}

static void reply_tx_invalid(request_t *req, json_t *issues)
{
    reply_tx_error(req, 400, "Validation failed", "ValidationError", issues);
}

#define TX_NOT_SAVED "The transaction could not be saved"
/* A batch is all or nothing: its 500 says that none of it was written. */
#define BATCH_NOT_SAVED "The batch could not be saved: none of its transactions was written"

/* The 500 of this route; message is TX_NOT_SAVED or BATCH_NOT_SAVED, or
 * says that a write was saved although its answer could not be built. */
static void reply_tx_500(request_t *req, const char *message)
{
    reply_tx_error(req, 500, message, "InternalServerError", NULL);
}

/* A failed store call (message as for reply_tx_500). */
static void reply_tx_store_failure(request_t *req, store_status_t st, const char *message)
{
    if (st == STORE_TIMEOUT || st == STORE_UNAVAILABLE) /* 504 and 503 keep their shapes */
        reply_store_failure(req, st);
    else
        reply_tx_500(req, message);
}

/* A failure outside the store (api_internal_error's log line, this route's
 * body). */
static void reply_tx_internal_error(request_t *req, const char *what, const char *message)
{
    request_log_failure(req, what);
    reply_tx_500(req, message);
}

static void add_issue(json_t *issues, const char *message, json_t *path)
{
    json_array_append_new(issues, v_issue("custom", path, message, NULL));
    json_decref(path);
}

/* The line items for the store: the USD rate, when one is given, is what the
 * engine values a line with. Allocated from the request arena. */
static store_tx_line_t *store_lines(request_t *req, const json_t *canon, size_t *count)
{
    size_t n = 0;
    for (int a = 0; a < TX_DOCUMENT_ARRAY_COUNT; a++)
        n += json_array_size(json_object_get(canon, TX_DOCUMENT_ARRAYS[a]));
    store_tx_line_t *lines = arena_alloc(req->arena, (n ? n : 1) * sizeof *lines);
    if (lines == NULL)
        return NULL;
    size_t k = 0;
    for (int a = 0; a < TX_DOCUMENT_ARRAY_COUNT; a++) {
        const json_t *arr = json_object_get(canon, TX_DOCUMENT_ARRAYS[a]);
        for (size_t i = 0; i < json_array_size(arr); i++, k++) {
            const json_t *amount = json_object_get(json_array_get(arr, i), "asset_amount");
            const json_t *asset = json_object_get(amount, "asset");
            store_tx_line_t *l = &lines[k];
            memset(l, 0, sizeof *l);
            l->kind = (store_line_kind_t)a;
            snprintf(l->asset, sizeof l->asset, "%s", json_string_value(json_object_get(asset, "code")));
            snprintf(l->asset_type, sizeof l->asset_type, "%s",
                     json_string_value(json_object_get(asset, "type")));
            snprintf(l->amount, sizeof l->amount, "%s",
                     json_string_value(json_object_get(amount, "amount")));
            if (ids_uuid_v4(l->new_asset_uuid) != 0)
                return NULL;
            const json_t *rates = json_object_get(json_array_get(arr, i), "rates");
            for (size_t r = 0; r < json_array_size(rates) && !l->has_rate; r++) {
                const json_t *rate = json_array_get(rates, r);
                const char *code = json_string_value(
                    json_object_get(json_object_get(rate, "asset"), "code"));
                if (strcmp(code, DOMAIN_REPORTING_CURRENCY) != 0)
                    continue; /* kept in the document; the inventory values in USD */
                l->has_rate = true;
                snprintf(l->usd_rate, sizeof l->usd_rate, "%s",
                         json_string_value(json_object_get(rate, "amount")));
            }
        }
    }
    *count = n;
    return lines;
}

/* ---- handlers --------------------------------------------------------- */

/* Parses the body (an object, or an array for a batch); answers 400 itself
 * and returns NULL when it cannot be read. */
static json_t *read_body(request_t *req)
{
    char msg[256];
    json_t *body = v_parse_body_any(req->body, req->body_len,
                                    request_header(req, "content-type"), msg, sizeof msg);
    if (body == NULL)
        reply_tx_error(req, 400, msg, "ValidationError", NULL);
    return body;
}

/* Validates a single transaction; answers 400 itself and returns false. */
static bool valid_tx_body(request_t *req, const json_t *body, int64_t *datetime_ms)
{
    json_t *issues = tx_document_check(body, datetime_ms);
    if (json_array_size(issues) == 0) {
        json_decref(issues);
        return true;
    }
    reply_tx_invalid(req, issues);
    return false;
}

/* Only with --test-hooks: hold the write transaction open this long. */
static int test_pause_ms(request_t *req)
{
    const char *value = request_header(req, PAUSE_HEADER);
    if (!api_ctx(req)->test_hooks || value == NULL)
        return 0;
    int ms = atoi(value);
    return ms > 0 && ms <= 60000 ? ms : 0;
}

static json_t *record_json(const char *body, const char *uuid, int64_t created, int64_t updated)
{
    json_t *doc = json_loads(body, 0, NULL);
    if (doc == NULL)
        return NULL;
    json_object_set_new(doc, "uuid", json_string(uuid));
    json_object_set_new(doc, "created_at", jsonval_time(created));
    json_object_set_new(doc, "updated_at", jsonval_time(updated));
    return doc;
}

static const char *const OUTCOME_NAMES[] = {"created", "updated", "unchanged"};

/* A stored element's record as GET answers it (record_json), written as
 * text: the stored document is already compact canonical JSON, so its closing
 * brace is replaced by the three fields the service chose; nothing is parsed
 * or serialised again. */
static void put_record(dbuf_t *b, const char *text, const store_tx_result_t *r)
{
    char created[CLOCK_RFC3339_LEN], updated[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(r->created_at, created);
    clock_format_rfc3339(r->updated_at, updated);
    size_t len = strlen(text);
    dbuf_put(b, text, len - 1); /* without its '}' */
    dbuf_printf(b, ",\"uuid\":\"%s\",\"created_at\":\"%s\",\"updated_at\":\"%s\"}", r->uuid,
                created, updated);
}

/* A single write's answer: {"data": the record as GET answers it}. */
static void answer_record(request_t *req, const char *text, const store_tx_result_t *r,
                          int status)
{
    dbuf_t b;
    dbuf_init(&b, strlen(text) + 160);
    dbuf_puts(&b, "{\"data\":");
    put_record(&b, text, r);
    dbuf_put(&b, "}", 1);
    size_t len = 0;
    char *answer = dbuf_finish(&b, &len);
    if (answer == NULL) /* out of memory after the commit: a resend answers "unchanged" */
        reply_tx_internal_error(req, "out of memory building the answer of a saved transaction",
                                "The transaction was saved but its answer could not be built");
    else
        reply_text(req, status, "application/json", answer, len);
}

/* The error body (transactions shape) of a write the store refused for its
 * account: unknown (404) or another account's transaction (400). */
static json_t *refused_body(const store_tx_write_t *w, store_tx_outcome_t outcome,
                            const char *current, int *status)
{
    char msg[640];
    if (outcome == STORE_TX_NO_ACCOUNT) {
        snprintf(msg, sizeof msg, "Account '%s' not found", w->account_id);
        *status = 404;
        return error_body_transactions(msg, "NotFoundError", NULL);
    }
    snprintf(msg, sizeof msg,
             "Transaction '%s' belongs to account '%s' and cannot be moved to account '%s'",
             w->id, current, w->account_id);
    json_t *issues = json_array();
    add_issue(issues, msg, json_pack("[s]", "account_id"));
    *status = 400;
    return error_body_transactions("Validation failed", "ValidationError", issues);
}

/* The write's record comes from the store's result and the body written,
 * so a durable write is answered without reading it back (a read could fail
 * or pass the deadline after the commit). */
static void answer_write(request_t *req, const store_tx_write_t *w, store_status_t st,
                         const store_tx_result_t *r)
{
    if (r->outcome == STORE_TX_NO_ACCOUNT || r->outcome == STORE_TX_MOVED) {
        int status;
        json_t *refused = refused_body(w, r->outcome, r->current_account, &status);
        reply_error_body(req, status, refused);
    } else if (st != STORE_OK) {
        reply_tx_store_failure(req, st, TX_NOT_SAVED);
    } else {
        answer_record(req, w->body, r, r->outcome == STORE_TX_CREATED ? 201 : 200);
    }
}

/* ---- batches ---------------------------------------------------------- *
 *
 * A JSON array of 1 to DOMAIN_BATCH_MAX transactions is a batch: every element
 * follows every rule of a single upsert, the valid ones are written in index
 * order in one database transaction (store_tx_upsert_batch), and the answer
 * is 200 {"data": [result per element, in order]} (the single upsert's
 * {"data": ...} envelope around an array). A result is {"index", "status":
 * created|updated|unchanged|error, "data"}: data is the record as GET
 * answers it, or, with "http_status", the error body that element alone
 * would have been answered. A storage failure fails the whole batch (nothing
 * is written). Memory: one arena array of elements and one of writes; the
 * per-element JSON is the canonical document the record is built from. */

/* The batch itself; its elements are checked one by one (each answers alone). */
static const v_field BATCH = {"batch", V_ARRAY, .required = true, .min_items = 1,
                              .max_items = DOMAIN_BATCH_MAX};

typedef struct batch_elem {
    json_t *canon;      /* the valid element's canonical document; NULL when refused */
    char *text;         /* its compact text, what is stored (malloc'd) */
    json_t *error;      /* the refused element's error body */
    int http_status;
    int64_t datetime_ms;
    size_t write;       /* its index in the writes */
} batch_elem_t;

typedef struct id_ref {
    const char *id;
    size_t index;
} id_ref_t;

static int id_ref_cmp(const void *a, const void *b)
{
    const id_ref_t *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}

/* A later element with the id of an earlier valid one is refused: sorting
 * (id, index) pairs finds them in O(n log n). */
static void refuse_duplicates(request_t *req, batch_elem_t *elems, size_t n)
{
    id_ref_t *refs = arena_alloc(req->arena, n * sizeof *refs);
    size_t k = 0;
    if (refs == NULL)
        return; /* the caller's allocations fail too and answer 500 */
    for (size_t i = 0; i < n; i++)
        if (elems[i].canon != NULL)
            refs[k++] = (id_ref_t){json_string_value(json_object_get(elems[i].canon, "id")), i};
    qsort(refs, k, sizeof *refs, id_ref_cmp);
    for (size_t g = 0; g < k;) {
        size_t e = g + 1;
        for (; e < k && strcmp(refs[e].id, refs[g].id) == 0; e++) {
            char msg[STORE_ID_MAX + 96];
            snprintf(msg, sizeof msg, "Duplicate id '%s' in the batch (first at index %zu)",
                     refs[e].id, refs[g].index);
            batch_elem_t *dup = &elems[refs[e].index];
            json_t *issues = json_array();
            add_issue(issues, msg, json_pack("[s]", "id"));
            dup->error = error_body_transactions(msg, "ValidationError", issues);
            dup->http_status = 400;
            json_decref(dup->canon);
            dup->canon = NULL;
        }
        g = e;
    }
}

/* Fills w for a valid element; false when memory or randomness failed. */
static bool batch_write(request_t *req, const batch_elem_t *el, int64_t now,
                        store_tx_write_t *w)
{
    char *uuids = arena_alloc(req->arena, 2 * IDS_UUID_LEN);
    size_t line_count = 0;
    store_tx_line_t *lines = store_lines(req, el->canon, &line_count);
    if (uuids == NULL || lines == NULL || el->text == NULL || ids_uuid_v4(uuids) != 0 ||
        ids_uuid_v4(uuids + IDS_UUID_LEN) != 0)
        return false;
    *w = (store_tx_write_t){
        .tenant_id = req->claims.tenant_id,
        .id = json_string_value(json_object_get(el->canon, "id")),
        .account_id = json_string_value(json_object_get(el->canon, "account_id")),
        .datetime_ms = el->datetime_ms,
        .type = json_string_value(json_object_get(el->canon, "type")),
        .subtype = json_string_value(json_object_get(el->canon, "subtype")),
        .body = el->text, .lines = lines, .line_count = line_count, .new_uuid = uuids,
        .event_uuid = uuids + IDS_UUID_LEN, .now = now};
    return true;
}

/* The answer {"data":[result per element, in order]} as text (malloc'd),
 * NULL when memory ran out. */
static char *batch_answer(batch_elem_t *elems, size_t n, const store_tx_write_t *writes,
                          const store_tx_result_t *results, size_t *len)
{
    dbuf_t b;
    dbuf_init(&b, 64 + n * 512);
    dbuf_puts(&b, "{\"data\":[");
    for (size_t i = 0; i < n; i++) {
        batch_elem_t *el = &elems[i];
        const store_tx_result_t *r = el->text != NULL ? &results[el->write] : NULL;
        if (i > 0)
            dbuf_put(&b, ",", 1);
        if (r != NULL && r->outcome != STORE_TX_NO_ACCOUNT && r->outcome != STORE_TX_MOVED) {
            dbuf_printf(&b, "{\"index\":%zu,\"status\":\"%s\",\"data\":", i,
                        OUTCOME_NAMES[r->outcome]);
            put_record(&b, el->text, r);
            dbuf_put(&b, "}", 1);
            continue;
        }
        if (r != NULL)
            el->error = refused_body(&writes[el->write], r->outcome, r->current_account,
                                     &el->http_status);
        char *error = el->error != NULL ? json_dumps(el->error, JSON_COMPACT) : NULL;
        if (error == NULL) {
            dbuf_free(&b);
            return NULL;
        }
        dbuf_printf(&b, "{\"index\":%zu,\"status\":\"error\",\"http_status\":%d,\"data\":", i,
                    el->http_status);
        dbuf_puts(&b, error);
        dbuf_put(&b, "}", 1);
        free(error);
    }
    dbuf_puts(&b, "]}");
    return dbuf_finish(&b, len);
}

static void upsert_batch(request_t *req, json_t *body)
{
    /* Not an array either (an object was a single upsert): the array's
     * invalid_type issue on [], as POST /v1/assets answers. */
    json_t *issues = json_array();
    v_check_value(&BATCH, body, NULL, issues);
    if (json_array_size(issues) > 0) {
        reply_tx_invalid(req, issues);
        return;
    }
    json_decref(issues);

    size_t n = json_array_size(body), valid = 0;
    batch_elem_t *elems = arena_alloc(req->arena, n * sizeof *elems);
    store_tx_write_t *writes = arena_alloc(req->arena, n * sizeof *writes);
    store_tx_result_t *results = arena_alloc(req->arena, n * sizeof *results);
    if (elems == NULL || writes == NULL || results == NULL) {
        reply_tx_internal_error(req, "out of memory for a batch", BATCH_NOT_SAVED);
        return;
    }
    memset(elems, 0, n * sizeof *elems);
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(body, i);
        json_t *problems = tx_document_check(item, &elems[i].datetime_ms);
        if (json_array_size(problems) > 0) {
            elems[i].error = error_body_transactions("Validation failed", "ValidationError",
                                                     problems);
            elems[i].http_status = 400;
        } else {
            json_decref(problems);
            elems[i].canon = tx_document_canonical(item, elems[i].datetime_ms);
        }
    }
    refuse_duplicates(req, elems, n);

    bool ok = true;
    int64_t now = api_now_ms(req);
    for (size_t i = 0; i < n && ok; i++) {
        batch_elem_t *el = &elems[i];
        if (el->canon == NULL)
            continue;
        el->text = json_dumps(el->canon, JSON_COMPACT);
        el->write = valid;
        ok = el->text != NULL && batch_write(req, el, now, &writes[valid++]);
    }
    store_conn_t *db = ok ? api_request_db(req) : NULL;
    store_status_t st = db != NULL ? store_tx_upsert_batch(db, writes, valid, results)
                                   : STORE_UNAVAILABLE; /* no connection */
    if (!ok) {
        reply_tx_internal_error(req, "preparing a batch's writes (memory or uuid generation)",
                                BATCH_NOT_SAVED);
    } else if (st != STORE_OK) {
        reply_tx_store_failure(req, st, BATCH_NOT_SAVED);
    } else {
        bool wake = false;
        for (size_t i = 0; i < valid; i++)
            wake = wake || results[i].new_deliveries;
        if (wake) /* new deliveries: the webhook dispatcher starts at once */
            api_wake_engines(req);
        size_t len = 0;
        char *answer = batch_answer(elems, n, writes, results, &len);
        if (answer == NULL) /* out of memory after the commit: a resend answers "unchanged" */
            reply_tx_internal_error(req, "out of memory building the answer of a saved batch",
                                    "The batch was saved but its answer could not be built");
        else
            reply_text(req, 200, "application/json", answer, len);
    }
    for (size_t i = 0; i < n; i++) {
        json_decref(elems[i].canon);
        json_decref(elems[i].error);
        free(elems[i].text);
    }
}

static void upsert_single(request_t *req, json_t *body)
{
    int64_t datetime_ms;
    if (!valid_tx_body(req, body, &datetime_ms))
        return;
    json_t *canon = tx_document_canonical(body, datetime_ms);
    char *text = canon ? json_dumps(canon, JSON_COMPACT) : NULL;
    size_t line_count = 0;
    store_tx_line_t *lines = text ? store_lines(req, canon, &line_count) : NULL;
    char tx_uuid[IDS_UUID_LEN], event_uuid[IDS_UUID_LEN];
    store_conn_t *db = NULL;
    if (lines == NULL || ids_uuid_v4(tx_uuid) != 0 || ids_uuid_v4(event_uuid) != 0) {
        reply_tx_internal_error(req, "preparing a write (memory or uuid generation)",
                                TX_NOT_SAVED);
    } else if ((db = api_request_db(req)) == NULL) {
        reply_tx_store_failure(req, STORE_UNAVAILABLE, TX_NOT_SAVED); /* no connection */
    } else {
        const json_t *subtype = json_object_get(canon, "subtype");
        store_tx_write_t w = {
            .tenant_id = req->claims.tenant_id,
            .id = json_string_value(json_object_get(canon, "id")),
            .account_id = json_string_value(json_object_get(canon, "account_id")),
            .datetime_ms = datetime_ms,
            .type = json_string_value(json_object_get(canon, "type")),
            .subtype = json_string_value(subtype), .body = text, .lines = lines,
            .line_count = line_count, .new_uuid = tx_uuid, .event_uuid = event_uuid,
            .now = api_now_ms(req)};
        store_tx_result_t result;
        store_status_t st = store_tx_upsert(db, &w, test_pause_ms(req), &result);
        if (st == STORE_OK && result.new_deliveries)
            api_wake_engines(req); /* the webhook dispatcher starts at once */
        answer_write(req, &w, st, &result);
    }
    free(text);
    json_decref(canon);
}

void api_transactions_upsert(request_t *req)
{
    json_t *body = read_body(req);
    if (body == NULL)
        return;
    if (json_is_object(body))
        upsert_single(req, body);
    else
        upsert_batch(req, body);
    json_decref(body);
}

static void reply_unknown(request_t *req, const char *id)
{
    char msg[640];
    snprintf(msg, sizeof msg, "Transaction with external id '%s' not found for tenant '%s'", id,
             req->claims.tenant_id);
    reply_error_body(req, 404, error_body_lookup(msg));
}

void api_transactions_get(request_t *req)
{
    const char *id = request_param(req, "transactionId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_tx_t tx;
    store_status_t st = store_tx_get(db, req->claims.tenant_id, id, &tx);
    if (st == STORE_NOT_FOUND) {
        reply_unknown(req, id);
        return;
    }
    if (st != STORE_OK) {
        reply_store_failure(req, st);
        return;
    }
    json_t *doc = record_json(tx.body, tx.uuid, tx.created_at, tx.updated_at);
    free(tx.body);
    if (doc == NULL)
        api_internal_error(req, "transaction: the stored document does not parse, or memory ran out");
    else
        reply_data(req, 200, doc);
}

void api_transactions_delete(request_t *req)
{
    const char *id = request_param(req, "transactionId");
    char event_uuid[IDS_UUID_LEN];
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    if (ids_uuid_v4(event_uuid) != 0) {
        api_internal_error(req, "uuid generation");
        return;
    }
    store_status_t st = store_tx_delete(db, req->claims.tenant_id, id, event_uuid,
                                        api_now_ms(req));
    if (st == STORE_NOT_FOUND)
        reply_unknown(req, id);
    else if (st != STORE_OK)
        reply_store_failure(req, st);
    else {
        api_wake_engines(req); /* the webhook dispatcher starts at once */
        reply_empty(req, 204);
    }
}
