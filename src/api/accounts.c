/* accounts: a tenant's accounts (POST, GET one, GET list, PATCH).
 *
 * An account belongs to an account owner and a filer, both named by their
 * caller ids; when the create omits filer_id the tenant's default filer
 * ("default") is used and answered, so every record names its filer. The
 * cost basis method is FIFO unless the caller picks HIFO or AUSTRIA, and
 * austria_tax_year is present exactly when the method is AUSTRIA. The
 * validator checks the shape of each body; the rules it cannot state (that
 * pairing, ids that are at most 256 bytes, id and uuid that never change)
 * are custom issues built here, on the field they are about.
 *
 * Order of answers. Create: 400 (shape, then rules), 409 (the id is taken:
 * a client that lost the response of its create reads the record back),
 * 404 for the owner, then 404 for the filer. PATCH: 400 for the shape, 404
 * for the account, 400 for the rules on the merged record, 404 for the owner,
 * then the filer. The merge runs inside the store's write transaction
 * (store_account_update), so the rules hold against the record as it is at
 * that moment, not as an earlier read saw it.
 *
 * PATCH is a merge patch. One deliberate strictness: changing the method
 * away from AUSTRIA while a year is stored needs "austria_tax_year": null in
 * the same patch. Clearing the year silently would drop a setting the
 * withholding work depends on, so the client must say it.
 *
 * Ids in paths may decode to bytes that are not UTF-8 (%FF); such an id
 * cannot exist, and the 404 names it with U+FFFD in place of the bad bytes,
 * since a JSON message cannot carry them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/domain.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "store/accounts.h"
#include "store/dispositions.h"

static const v_field CREATE_FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"account_owner_id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"filer_id", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"name", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"cost_basis_method", V_ENUM, .nullable = true, .values = DOMAIN_ACCOUNT_METHOD_NAMES},
    {"austria_tax_year", V_INTEGER, .nullable = true, .has_range = true,
     .min_int = DOMAIN_TAX_YEAR_MIN, .max_int = DOMAIN_TAX_YEAR_MAX},
    {.name = NULL}};
static const v_schema CREATE_SCHEMA = {CREATE_FIELDS};

/* null is refused for what every record has (ids, method): only name and
 * austria_tax_year can be cleared. */
static const v_field PATCH_FIELDS[] = {
    {"id", V_STRING, .min_len = 1},
    {"uuid", V_STRING, .min_len = 1},
    {"account_owner_id", V_STRING, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"filer_id", V_STRING, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"name", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"cost_basis_method", V_ENUM, .values = DOMAIN_ACCOUNT_METHOD_NAMES},
    {"austria_tax_year", V_INTEGER, .nullable = true, .has_range = true,
     .min_int = DOMAIN_TAX_YEAR_MIN, .max_int = DOMAIN_TAX_YEAR_MAX},
    {.name = NULL}};
static const v_schema PATCH_SCHEMA = {PATCH_FIELDS};

/* ---- output */

static json_t *account_json(const store_account_t *a)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:o, s:o}", "id", a->id, "uuid",
                     a->uuid, "account_owner_id", a->owner_id, "filer_id", a->filer_id, "name",
                     api_string_or_null(a->name), "cost_basis_method", a->cost_basis_method,
                     "austria_tax_year",
                     a->austria_tax_year != 0 ? json_integer(a->austria_tax_year) : json_null(),
                     "created_at", jsonval_time(a->created_at), "updated_at",
                     jsonval_time(a->updated_at));
}

/* The method in force now (issue 16): the account's latest disposition
 * method record with effective_from <= now, else its own stored method
 * (what the account's PATCH sets). Answers name it as cost_basis_method. */
static store_status_t method_in_force(request_t *req, store_conn_t *db, const char *uuid,
                                      char method[DOMAIN_METHOD_SIZE])
{
    char found[DOMAIN_METHOD_SIZE];
    store_status_t st = store_disposition_in_force(db, uuid, api_now_ms(req), found);
    if (st == STORE_OK)
        memcpy(method, found, DOMAIN_METHOD_SIZE);
    return st == STORE_NOT_FOUND ? STORE_OK : st;
}

/* ---- rules the schema cannot state */

static void add_issue(json_t *issues, const char *field, const char *code, const char *message,
                      json_t *extra)
{
    json_t *path = json_pack("[s]", field);
    json_array_append_new(issues, v_issue(code, path, message, extra));
    json_decref(path);
}

/* The validator counts characters; stored ids are limited in bytes. */
static void check_id_bytes(json_t *issues, const json_t *body, const char *field)
{
    const json_t *value = json_object_get(body, field);
    if (json_is_string(value) && json_string_length(value) > DOMAIN_ID_MAX)
        add_issue(issues, field, "custom", API_ID_TOO_BIG, NULL);
}

/* The AUSTRIA <-> austria_tax_year rule. year_stored: the year was not in
 * the request but kept from the stored record (PATCH), which needs its own
 * explanation. */
static void check_method_year(json_t *issues, const char *method, int year, bool year_stored)
{
    domain_method_t m = DOMAIN_METHOD_DEFAULT;
    domain_method_parse(method, &m); /* the schema admitted only the method names */
    bool austria = m == DOMAIN_METHOD_AUSTRIA;
    if (austria && year == 0)
        add_issue(issues, "austria_tax_year", "custom",
                  "Required when cost_basis_method is AUSTRIA", NULL);
    else if (!austria && year != 0)
        add_issue(issues, "austria_tax_year", "custom",
                  year_stored ? "Set to null explicitly to change cost_basis_method from AUSTRIA"
                              : "Only allowed when cost_basis_method is AUSTRIA",
                  NULL);
}

/* A string field of a validated body, or fallback when absent or null. */
static const char *string_or(const json_t *body, const char *field, const char *fallback)
{
    const char *s = json_string_value(json_object_get(body, field));
    return s != NULL ? s : fallback;
}

/* ---- responses */

static void reply_missing(request_t *req, store_account_missing_t missing, const char *account_id,
                          const char *owner_id, const char *filer_id)
{
    if (missing == STORE_ACCOUNT_MISSING_OWNER)
        reply_error(req, 404, "Account owner '%s' not found", owner_id);
    else if (missing == STORE_ACCOUNT_MISSING_FILER)
        reply_error(req, 404, "Filer '%s' not found", filer_id);
    else
        reply_error(req, 404, "Account with id '%s' not found", account_id);
}

/* ---- POST /v1/accounts */

/* Builds the new account from a validated body; answers 400 and returns
 * false when a rule fails. The copies are cut to fit their buffers, but an
 * id that would be cut is refused (check_id_bytes) before the copy is used. */
static bool account_from_body(request_t *req, const json_t *body, store_account_t *a)
{
    memset(a, 0, sizeof *a);
    buf_copy(a->id, sizeof a->id, string_or(body, "id", ""));
    buf_copy(a->owner_id, sizeof a->owner_id, string_or(body, "account_owner_id", ""));
    buf_copy(a->filer_id, sizeof a->filer_id, string_or(body, "filer_id", DOMAIN_DEFAULT_FILER_ID));
    buf_copy(a->name, sizeof a->name, string_or(body, "name", ""));
    buf_copy(a->cost_basis_method, sizeof a->cost_basis_method,
              string_or(body, "cost_basis_method", domain_method_name(DOMAIN_METHOD_DEFAULT)));
    a->austria_tax_year = (int)json_integer_value(json_object_get(body, "austria_tax_year"));

    json_t *issues = json_array();
    check_id_bytes(issues, body, "id");
    check_id_bytes(issues, body, "account_owner_id");
    check_id_bytes(issues, body, "filer_id");
    check_method_year(issues, a->cost_basis_method, a->austria_tax_year, false);
    if (json_array_size(issues) > 0) {
        reply_invalid(req, "Invalid account", issues);
        return false;
    }
    json_decref(issues);
    return true;
}

void api_accounts_create(request_t *req)
{
    json_t *body = api_read_body(req, &CREATE_SCHEMA, "account");
    store_account_t account;
    if (body == NULL || !account_from_body(req, body, &account))
        return;
    if (ids_uuid_v4(account.uuid) != 0) {
        api_internal_error(req, "uuid generation");
        return;
    }
    account.created_at = account.updated_at = api_now_ms(req);
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_account_missing_t missing;
    store_status_t rc = store_account_create(db, req->claims.tenant_id, &account, &missing);
    if (rc == STORE_OK)
        reply_data(req, 201, account_json(&account));
    else if (rc == STORE_CONFLICT)
        reply_error(req, 409, "Account with id '%s' already exists", account.id);
    else if (rc == STORE_NOT_FOUND)
        reply_missing(req, missing, account.id, account.owner_id, account.filer_id);
    else
        reply_store_failure(req, rc);
}

/* ---- GET /v1/accounts/{accountId} */

void api_accounts_get(request_t *req)
{
    const char *id = request_param(req, "accountId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_account_t account;
    store_status_t rc = store_account_get(db, req->claims.tenant_id, id, &account);
    if (rc == STORE_OK)
        rc = method_in_force(req, db, account.uuid, account.cost_basis_method);
    if (rc == STORE_OK)
        reply_data(req, 200, account_json(&account));
    else if (rc == STORE_NOT_FOUND)
        reply_missing(req, STORE_ACCOUNT_MISSING_ACCOUNT, id, NULL, NULL);
    else
        reply_store_failure(req, rc);
}

/* ---- GET /v1/accounts */

static int append_account(const store_account_t *account, void *page)
{
    return api_page_add(page, account_json(account));
}

/* arg: the owner's caller id (?account_owner_id=), or NULL for every account. */
/* The page's cost_basis_method is the method in force, read once the list's
 * statement is done (its callback may not use the connection). */
static store_status_t fetch_accounts(store_conn_t *db, api_page_t *page, const void *arg)
{
    store_status_t st = store_account_list(db, page->req->claims.tenant_id, arg, page->after,
                                           page->limit, append_account, page, &page->more);
    for (size_t i = 0; st == STORE_OK && i < json_array_size(page->items); i++) {
        json_t *item = json_array_get(page->items, i);
        char method[DOMAIN_METHOD_SIZE] = "";
        st = method_in_force(page->req, db, json_string_value(json_object_get(item, "uuid")),
                             method);
        if (st == STORE_OK && method[0] != '\0')
            json_object_set_new(item, "cost_basis_method", json_string(method));
    }
    return st;
}

void api_accounts_list(request_t *req)
{
    /* A malformed query string is refused the same whichever parameter
     * finds it first, so the filter may be read before the page's. */
    bool malformed = false;
    const char *owner_id = request_query(req, "account_owner_id", &malformed);
    if (api_query_ok(req, malformed, json_array()))
        api_list(req, "id", fetch_accounts, owner_id);
}

/* ---- PATCH /v1/accounts/{accountId} */

typedef struct patch_ctx {
    const json_t *body;
    json_t *issues; /* owned by the handler */
} patch_ctx_t;

/* id and uuid may be sent, but only with the values they have: the id
 * exactly, the uuid in either case (its hex digits are case-insensitive). */
static void check_unchanged(json_t *issues, const json_t *body, const char *field,
                            const char *stored, bool any_case)
{
    const char *sent = json_string_value(json_object_get(body, field));
    if (sent != NULL && (any_case ? strcasecmp(sent, stored) : strcmp(sent, stored)) != 0)
        add_issue(issues, field, "custom", "Cannot be changed", NULL);
}

/* Replaces out with the body's string field when the body has it (and it is
 * not null). */
static void patch_text(const json_t *body, const char *field, char *out, size_t cap)
{
    const char *s = json_string_value(json_object_get(body, field));
    if (s != NULL)
        buf_copy(out, cap, s);
}

/* Applies the merge patch (validated) to next. */
static void apply_patch(const json_t *body, store_account_t *next)
{
    patch_text(body, "account_owner_id", next->owner_id, sizeof next->owner_id);
    patch_text(body, "filer_id", next->filer_id, sizeof next->filer_id);
    patch_text(body, "cost_basis_method", next->cost_basis_method,
               sizeof next->cost_basis_method);
    const json_t *name = json_object_get(body, "name");
    if (json_is_null(name))
        next->name[0] = '\0';
    else
        patch_text(body, "name", next->name, sizeof next->name);
    const json_t *year = json_object_get(body, "austria_tax_year");
    if (year != NULL)
        next->austria_tax_year = (int)json_integer_value(year); /* null reads as 0: cleared */
}

/* store_account_merge_fn: runs inside the store's write transaction. */
static bool merge_patch(const store_account_t *current, store_account_t *next, void *arg)
{
    patch_ctx_t *ctx = arg;
    check_unchanged(ctx->issues, ctx->body, "id", current->id, false);
    check_unchanged(ctx->issues, ctx->body, "uuid", current->uuid, true);
    apply_patch(ctx->body, next);
    bool year_stored = json_object_get(ctx->body, "austria_tax_year") == NULL;
    check_method_year(ctx->issues, next->cost_basis_method, next->austria_tax_year, year_stored);
    return json_array_size(ctx->issues) == 0;
}

void api_accounts_update(request_t *req)
{
    const char *id = request_param(req, "accountId");
    json_t *body = api_read_body(req, &PATCH_SCHEMA, "account");
    if (body == NULL)
        return;
    patch_ctx_t ctx = {body, json_array()};
    check_id_bytes(ctx.issues, body, "account_owner_id");
    check_id_bytes(ctx.issues, body, "filer_id");
    if (json_array_size(ctx.issues) > 0) {
        reply_invalid(req, "Invalid account", ctx.issues);
        return;
    }
    store_conn_t *db = api_db(req);
    if (db == NULL) {
        json_decref(ctx.issues);
        return;
    }
    store_account_t account;
    store_account_missing_t missing;
    store_status_t rc =
        store_account_update(db, req->claims.tenant_id, id, merge_patch, &ctx,
                             api_now_ms(req), &account, &missing);
    if (rc == STORE_CONFLICT) {
        reply_invalid(req, "Invalid account", ctx.issues);
        return;
    }
    json_decref(ctx.issues);
    if (rc == STORE_OK)
        rc = method_in_force(req, db, account.uuid, account.cost_basis_method);
    if (rc == STORE_OK)
        reply_data(req, 200, account_json(&account));
    else if (rc == STORE_NOT_FOUND)
        reply_missing(req, missing, id, string_or(body, "account_owner_id", ""),
                      string_or(body, "filer_id", ""));
    else
        reply_store_failure(req, rc);
}
