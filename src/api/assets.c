/* assets: a tenant's assets (POST/GET /v1/assets, GET/DELETE /v1/assets/{assetId}).
 *
 * POST takes one asset (an object) or a batch (an array of 1 to 1,000). A
 * single asset follows the tenant-records conventions: 201, 400 with issues,
 * 409 when its code or name is taken. A batch answers 200 even when some
 * elements failed (spec § Statuses that are not errors), with one result per
 * element in order: {"index","status":"created","asset"} or
 * {"index","status":"error","error","message"[,"issues"]}, the error part
 * being the body the element would have had alone (built by errors.c).
 * Invalid elements are answered without reaching the store; the valid ones
 * go to the store in one transaction that checks conflicts element by
 * element, so a 200 means every "created" element is durable and a failing
 * one undoes nothing (store/assets.c). Issue paths are relative to the
 * element (["code"]), since the result already carries its index.
 *
 * Addressing: {assetId} is the asset's uuid or its code, looked up within
 * the token's tenant only, so another tenant's asset (by uuid or by code) is
 * 404 like one that does not exist; the message is the spec's "No asset is
 * configured for the supplied id", which names no id. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "http/errors.h"
#include "store/assets.h"

#define ASSETS_BATCH_MAX 1000
#define ASSET_CODE_CHARS 32
#define ASSET_NAME_CHARS 128
#define ASSET_DECIMALS_MAX 36
#define ASSET_NOT_FOUND "No asset is configured for the supplied id"

static const char *const ASSET_TYPES[] = {"crypto", "fiat", "nft", "security", NULL};
static const v_field ASSET_FIELDS[] = {
    {"code", V_STRING, .required = true, .min_len = 1, .max_len = ASSET_CODE_CHARS},
    {"name", V_STRING, .required = true, .min_len = 1, .max_len = ASSET_NAME_CHARS},
    {"type", V_ENUM, .required = true, .values = ASSET_TYPES},
    {"decimals", V_INTEGER, .nullable = true, .has_range = true, .min_int = 0,
     .max_int = ASSET_DECIMALS_MAX},
    {.name = NULL}};
static const v_schema ASSET = {ASSET_FIELDS};
/* The batch itself; its elements are checked one by one (each answers alone). */
static const v_field ASSET_BATCH = {.type = V_ARRAY, .required = true, .min_items = 1,
                                    .max_items = ASSETS_BATCH_MAX};

/* ---- output */

static json_t *asset_json(const store_asset_t *a)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "uuid", a->uuid, "code", a->code, "name",
                     a->name, "type", a->type, "decimals",
                     a->decimals == STORE_ASSET_NO_DECIMALS ? json_null()
                                                            : json_integer(a->decimals),
                     "created_at", jsonval_time(a->created_at));
}

/* The 409 body of an element whose code or name is taken. */
static json_t *conflict_body(const store_asset_t *a, store_asset_outcome_t outcome)
{
    if (outcome == STORE_ASSET_CONFLICT_CODE)
        return error_bodyf(409, "An asset with code '%s' already exists", a->code);
    return error_bodyf(409, "An asset with name '%s' already exists", a->name);
}

/* ---- input */

static bool issue_names_field(const json_t *issue, const char *field)
{
    const json_t *path = json_object_get(issue, "path");
    return json_array_size(path) == 1 &&
           json_is_string(json_array_get(path, 0)) &&
           strcmp(json_string_value(json_array_get(path, 0)), field) == 0;
}

static bool has_issue_for(const json_t *issues, const char *field)
{
    size_t i;
    const json_t *issue;
    json_array_foreach(issues, i, issue) {
        if (issue_names_field(issue, field))
            return true;
    }
    return false;
}

/* Every issue of one asset object (a new array), paths relative to it: the
 * schema's, and the code's character rule, which a schema cannot state
 * (only when the schema found nothing wrong with the code, so one field gets
 * one issue). The rule's issue goes first, where "code" is in the schema, so
 * issues stay in field order. */
static json_t *asset_issues(const json_t *value)
{
    json_t *issues = json_array();
    if (issues == NULL)
        return NULL;
    /* An issue that could not be appended (no memory) must not pass as valid. */
    if (v_check_object(&ASSET, value, NULL, issues) != json_array_size(issues)) {
        json_decref(issues);
        return NULL;
    }
    const json_t *code = json_object_get(value, "code");
    if (!json_is_string(code) || has_issue_for(issues, "code") ||
        store_asset_code_valid(json_string_value(code)))
        return issues;
    json_t *path = json_pack("[s]", "code");
    json_t *issue =
        path == NULL ? NULL
                     : v_issue("custom", path,
                               "Invalid code: expected 1 to 32 of the characters A-Z a-z 0-9 . _ -",
                               NULL);
    json_decref(path);
    if (json_array_insert_new(issues, 0, issue) != 0) {
        json_decref(issues);
        return NULL;
    }
    return issues;
}

/* Fills a store record from an element that has no issues; false only when
 * no uuid could be made (the caller answers). */
static bool asset_from_json(const json_t *value, int64_t now, store_asset_t *out)
{
    memset(out, 0, sizeof *out);
    const char *code = json_string_value(json_object_get(value, "code"));
    const char *name = json_string_value(json_object_get(value, "name"));
    const char *type = json_string_value(json_object_get(value, "type"));
    const json_t *decimals = json_object_get(value, "decimals");
    if (ids_uuid_v4(out->uuid) != 0)
        return false;
    /* The schema bounded every length (32 ASCII, 128 code points, an enum). */
    snprintf(out->code, sizeof out->code, "%s", code);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->type, sizeof out->type, "%s", type);
    out->decimals = json_is_integer(decimals) ? (int)json_integer_value(decimals)
                                              : STORE_ASSET_NO_DECIMALS;
    out->created_at = now;
    return true;
}

/* ---- POST one */

static void create_one(request_t *req, const json_t *body)
{
    json_t *issues = asset_issues(body);
    if (issues == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid asset", issues);
        return;
    }
    json_decref(issues);
    store_asset_t asset;
    if (!asset_from_json(body, api_now_ms(req), &asset)) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_asset_outcome_t outcome;
    store_status_t rc = store_assets_create_batch(db, req->claims.tenant_id, &asset, 1, &outcome);
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    if (outcome != STORE_ASSET_CREATED) {
        reply_error_body(req, 409, conflict_body(&asset, outcome));
        return;
    }
    reply_data(req, 201, asset_json(&asset));
}

/* ---- POST a batch */

/* The valid elements of a batch, packed for the store, and where each came from. */
typedef struct batch {
    size_t size;            /* elements in the request */
    json_t *results;        /* per request element; null until decided */
    store_asset_t *assets;  /* the valid ones, in request order */
    size_t *origin;         /* assets[k] is request element origin[k] */
    store_asset_outcome_t *outcomes;
    size_t count;
} batch_t;

/* {"index": i, "status": status} merged with extra (stolen); NULL when any
 * part could not be made, so no result ever lacks its detail. */
static json_t *element_result(size_t index, const char *status, json_t *extra)
{
    if (extra == NULL)
        return NULL;
    json_t *result = json_pack("{s:I, s:s}", "index", (json_int_t)index, "status", status);
    if (result != NULL && json_object_update(result, extra) != 0) {
        json_decref(result);
        result = NULL;
    }
    json_decref(extra);
    return result;
}

static void release_json(void *value)
{
    json_decref(value);
}

static bool batch_alloc(request_t *req, batch_t *b, size_t size)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    b->results = json_array();
    b->assets = arena_alloc(req->arena, size * sizeof *b->assets);
    b->origin = arena_alloc(req->arena, size * sizeof *b->origin);
    b->outcomes = arena_alloc(req->arena, size * sizeof *b->outcomes);
    if (b->results == NULL || b->assets == NULL || b->origin == NULL || b->outcomes == NULL ||
        arena_defer(req->arena, release_json, b->results) != 0) {
        json_decref(b->results);
        b->results = NULL;
        return false;
    }
    return true;
}

/* Answers every invalid element now; queues the valid ones for the store. */
static bool batch_sort(request_t *req, const json_t *body, batch_t *b)
{
    int64_t now = api_now_ms(req);
    for (size_t i = 0; i < b->size; i++) {
        const json_t *value = json_array_get(body, i);
        json_t *issues = asset_issues(value);
        if (issues == NULL)
            return false;
        json_t *result = json_null();
        if (json_array_size(issues) > 0) {
            result = element_result(i, "error", error_body_validation("Invalid asset", issues));
        } else {
            json_decref(issues);
            if (!asset_from_json(value, now, &b->assets[b->count]))
                return false;
            b->origin[b->count++] = i;
        }
        if (json_array_append_new(b->results, result) != 0)
            return false;
    }
    return true;
}

/* Fills in the result of every element that reached the store. */
static bool batch_answer(batch_t *b)
{
    for (size_t k = 0; k < b->count; k++) {
        const store_asset_t *a = &b->assets[k];
        json_t *result =
            b->outcomes[k] == STORE_ASSET_CREATED
                ? element_result(b->origin[k], "created", json_pack("{s:o}", "asset", asset_json(a)))
                : element_result(b->origin[k], "error", conflict_body(a, b->outcomes[k]));
        if (result == NULL || json_array_set_new(b->results, b->origin[k], result) != 0)
            return false;
    }
    return true;
}

static void create_many(request_t *req, const json_t *body)
{
    json_t *issues = json_array();
    if (issues == NULL) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    if (v_check_value(&ASSET_BATCH, body, NULL, issues) > 0) {
        reply_invalid(req, "Invalid assets", issues);
        return;
    }
    json_decref(issues);
    batch_t b;
    if (!batch_alloc(req, &b, json_array_size(body))) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    if (!batch_sort(req, body, &b)) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    if (b.count > 0) {
        store_conn_t *db = api_db(req);
        if (db == NULL)
            return;
        store_status_t rc = store_assets_create_batch(db, req->claims.tenant_id, b.assets,
                                                      b.count, b.outcomes);
        if (rc != STORE_OK) {
            reply_store_failure(req, rc);
            return;
        }
    }
    if (!batch_answer(&b)) {
        reply_store_failure(req, STORE_ERROR);
        return;
    }
    reply_data(req, 200, json_incref(b.results));
}

void api_assets_create(request_t *req)
{
    json_t *body = request_json(req, false);
    if (body == NULL)
        return;
    /* The parser admits only objects and arrays at the top level. */
    if (json_is_array(body))
        create_many(req, body);
    else
        create_one(req, body);
}

/* ---- GET */

static int append_asset(const store_asset_t *asset, void *ctx)
{
    return json_array_append_new(ctx, asset_json(asset)) == 0 ? 0 : 1;
}

void api_assets_list(request_t *req)
{
    size_t limit;
    const char *after;
    if (!api_page_params(req, &limit, &after))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    json_t *items = json_array();
    bool more = false;
    store_status_t rc =
        store_asset_list(db, req->claims.tenant_id, after, limit, append_asset, items, &more);
    if (rc != STORE_OK) {
        json_decref(items);
        reply_store_failure(req, rc);
        return;
    }
    size_t n = json_array_size(items);
    const char *last =
        n > 0 ? json_string_value(json_object_get(json_array_get(items, n - 1), "code")) : NULL;
    api_reply_page(req, items, last, more);
}

void api_assets_get(request_t *req)
{
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_asset_t asset;
    store_status_t rc =
        store_asset_get(db, req->claims.tenant_id, request_param(req, "assetId"), &asset);
    if (rc == STORE_NOT_FOUND) {
        reply_error(req, 404, ASSET_NOT_FOUND);
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_data(req, 200, asset_json(&asset));
}

/* ---- DELETE */

static void reply_refusal(request_t *req, store_asset_refusal_t refusal,
                          const store_asset_t *asset)
{
    if (refusal == STORE_ASSET_REFUSED_REPORTING)
        reply_error(req, 409, "%s is the tenant's reporting currency and cannot be deleted",
                    asset->code);
    else
        reply_error(req, 409, "Asset '%s' is referenced by transactions and cannot be deleted",
                    asset->code);
}

void api_assets_delete(request_t *req)
{
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_asset_t asset;
    store_asset_refusal_t refusal;
    store_status_t rc = store_asset_delete(db, req->claims.tenant_id,
                                           request_param(req, "assetId"), &refusal, &asset);
    if (rc == STORE_NOT_FOUND) {
        reply_error(req, 404, ASSET_NOT_FOUND);
        return;
    }
    if (rc == STORE_CONFLICT && refusal != STORE_ASSET_REFUSED_NONE) {
        reply_refusal(req, refusal, &asset);
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_empty(req, 204);
}
