/* account_owners: the people and entities that own a tenant's accounts.
 *
 *   POST  /v1/account-owners                    create with the caller's id (409 when taken)
 *   GET   /v1/account-owners                    list in caller-id order, cursor pages
 *   GET   /v1/account-owners/{accountOwnerId}   one owner
 *   PATCH /v1/account-owners/{accountOwnerId}   merge patch
 *
 * Every lookup goes through the token's tenant, so another tenant's owner is
 * simply not found and two tenants may use the same caller ids.
 *
 * Validation happens in three passes, all reported in one 400 where they can
 * be: the declarative schema (types, lengths, enumerations with `values`),
 * then rules a schema cannot state about one field (TIN characters, country
 * codes of ISO 3166-1, email shape, id bytes), then rules across fields (a TIN needs
 * its tin_type, a birth date belongs to individuals only). The cross-field
 * pass runs on the record as it will be stored, so for a PATCH it sees the
 * stored values merged with the patch: clearing tin_type while a TIN stays is
 * refused just as a create without it is.
 *
 * TINs: the clear value exists only inside this process, between the parsed
 * body and tin_seal (or tin_open and tin_mask), and local copies are wiped
 * after use. The uuid is generated before sealing because it is part of the
 * associated data. No message built here contains a TIN (the body parser
 * never quotes its input back). Responses are always built by opening the stored sealed
 * bytes, so what a client sees is exactly what a later GET will show.
 *
 * PATCH reads the record, merges and writes it back as a whole (by uuid, in
 * the tenant): two concurrent PATCHes of one owner resolve as last writer
 * wins for the whole record, which keeps the store interface to one update
 * statement. An update never reseals an unchanged TIN (absent, or sent with
 * its stored value): its associated data (tenant, uuid) does not change. A
 * PATCH whose merged record equals the stored one writes nothing, so
 * updated_at moves only when something changed.
 *
 * TIN checks (api/owner_tin.h): a create with a TIN, or a PATCH changing the
 * TIN, its type or the name, queues the owner's TIN check in the owner's
 * write transaction; removing the TIN retires a pending one. */
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/owner_tin.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/countries.h"
#include "core/domain.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/tin.h"
#include "core/utf8.h"
#include "store/owners.h"
#include "taxdocs/model.h"

/* ---- schemas */

static const char *const OWNER_TYPES[] = {"individual", "entity", NULL};

static const v_field ADDRESS_FIELDS[] = {
    {"line1", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"line2", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"city", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"state", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"postal_code", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_POSTAL_CODE_MAX},
    {"country_code", V_STRING, .nullable = true, .min_len = 2, .max_len = 2},
    {.name = NULL}};
static const v_schema ADDRESS = {ADDRESS_FIELDS};

/* Optional fields accept null on create too (as absent), so a client can send
 * back the shape it reads. */
#define OPTIONAL_OWNER_FIELDS                                                                  \
    {"tax_country_code", V_STRING, .nullable = true, .min_len = 2, .max_len = 2},              \
    {"tin", V_STRING, .nullable = true, .min_len = 1, .max_len = TIN_INPUT_MAX},               \
    {"tin_type", V_ENUM, .nullable = true, .values = TIN_TYPE_NAMES},                               \
    {"birth_date", V_DATE, .nullable = true},                                                  \
    {"email", V_STRING, .nullable = true, .min_len = 1, .max_len = 254},                       \
    {"address", V_OBJECT, .nullable = true, .object = &ADDRESS}

static const v_field CREATE_FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"name", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"account_owner_type", V_ENUM, .required = true, .values = OWNER_TYPES},
    OPTIONAL_OWNER_FIELDS,
    {.name = NULL}};
static const v_schema CREATE = {CREATE_FIELDS};

/* Merge patch: everything optional; the required fields refuse null. id and
 * uuid may be sent back unchanged (checked against the record). */
static const v_field PATCH_FIELDS[] = {
    {"id", V_STRING, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"uuid", V_STRING, .min_len = 1},
    {"name", V_STRING, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"account_owner_type", V_ENUM, .values = OWNER_TYPES},
    OPTIONAL_OWNER_FIELDS,
    {.name = NULL}};
static const v_schema PATCH = {PATCH_FIELDS};

/* ---- issues the schema cannot state */

static void add_issue(json_t *issues, const char *const *path, const char *code,
                      const char *message, json_t *extra)
{
    json_t *p = json_array();
    for (size_t i = 0; path[i] != NULL; i++)
        json_array_append_new(p, json_string(path[i]));
    json_t *issue = v_issue(code, p, message, extra);
    /* Out of memory: json_null() never fails, so the body is still refused. */
    json_array_append_new(issues, issue != NULL ? issue : json_null());
    json_decref(p);
}

/* A string value the schema accepted as to type (NULL otherwise), so the
 * rules below never pile onto a type issue. */
static const char *string_at(const json_t *object, const char *key)
{
    const json_t *v = json_object_get(object, key);
    if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
        return NULL;
    return json_string_value(v);
}

/* Two uppercase ASCII letters forming an assigned ISO 3166-1 code (the
 * same list as tax documentation, core/countries.h); a length issue is the
 * schema's to report. */
static void check_country(json_t *issues, const json_t *object, const char *key,
                          const char *const *path)
{
    const char *s = string_at(object, key);
    if (s == NULL || utf8_chars(s, strlen(s)) != 2 || country_is_iso(s))
        return;
    if (domain_country_code_valid(s))
        add_issue(issues, path, "custom",
                  "Invalid country code: not an ISO 3166-1 alpha-2 country", NULL);
    else
        add_issue(issues, path, "invalid_format", "Invalid string: must match pattern /^[A-Z]{2}$/",
                  json_pack("{s:s, s:s, s:s}", "origin", "string", "format", "regex", "pattern",
                            "^[A-Z]{2}$"));
}

/* Digits, letters, ' ', '-', '/' and '.', with at least one digit or
 * letter: every TIN the TIN check's FOREIGN rule calls well-formed
 * (tincheck/rules.h: 1..30 of those characters) is accepted here, so an
 * owner is never refused a TIN the check would take. The message never
 * quotes the value. */
static void check_tin(json_t *issues, const json_t *body)
{
    const char *s = string_at(body, "tin");
    if (s == NULL || s[0] == '\0')
        return;
    bool alnum = false;
    for (const char *p = s; *p != '\0'; p++) {
        char c = *p;
        bool letter_or_digit =
            (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        if (!letter_or_digit && c != '-' && c != ' ' && c != '/' && c != '.') {
            alnum = false;
            break;
        }
        alnum = alnum || letter_or_digit;
    }
    if (!alnum)
        add_issue(issues, (const char *const[]){"tin", NULL}, "custom",
                  "Invalid TIN: expected digits, letters, ' ', '-', '/' and '.' only, with at "
                  "least one digit or letter",
                  NULL);
}

/* One '@' with something on each side. */
static void check_email(json_t *issues, const json_t *body)
{
    const char *s = string_at(body, "email");
    if (s == NULL || s[0] == '\0')
        return;
    const char *at = strchr(s, '@');
    if (at != NULL && at != s && at[1] != '\0' && strchr(at + 1, '@') == NULL)
        return;
    add_issue(issues, (const char *const[]){"email", NULL}, "invalid_format",
              "Invalid email address",
              json_pack("{s:s, s:s}", "origin", "string", "format", "email"));
}

/* Ids are limited in bytes (DOMAIN_ID_MAX, docs/decisions.md); the schema counts
 * characters, so a long non-ASCII id passes it and is caught here. */
static void check_id_bytes(json_t *issues, const json_t *body)
{
    const char *s = string_at(body, "id");
    if (s == NULL || utf8_chars(s, strlen(s)) > DOMAIN_ID_MAX || strlen(s) <= DOMAIN_ID_MAX)
        return;
    add_issue(issues, (const char *const[]){"id", NULL}, "custom",
              API_ID_TOO_BIG " in UTF-8", NULL);
}

static void check_fields(json_t *issues, const json_t *body)
{
    check_id_bytes(issues, body);
    check_country(issues, body, "tax_country_code",
                  (const char *const[]){"tax_country_code", NULL});
    check_tin(issues, body);
    check_email(issues, body);
    const json_t *address = json_object_get(body, "address");
    if (json_is_object(address))
        check_country(issues, address, "country_code",
                      (const char *const[]){"address", "country_code", NULL});
}

/* ---- the body */

/* Parses and checks the body against schema and the single-field rules;
 * answers 400 itself and returns NULL on failure. The value belongs to the
 * request's arena. */
static json_t *read_owner_body(request_t *req, const v_schema *schema, json_t *issues)
{
    json_t *body = request_json(req, false);
    if (body == NULL)
        return NULL;
    v_check_object(schema, body, NULL, issues);
    check_fields(issues, body); /* each rule skips values the schema already refused */
    return body;
}

/* Answers 400 "Invalid account owner" when issues holds any; steals issues. */
static bool reply_if_invalid(request_t *req, json_t *issues)
{
    if (json_array_size(issues) == 0) {
        json_decref(issues);
        return false;
    }
    reply_invalid(req, "Invalid account owner", issues);
    return true;
}

/* ---- merging a body into a record */

/* A present key sets the field (null or "" clears it); an absent key keeps
 * it. Returns false only when a value does not fit (the schema prevents it). */
static bool merge_text(const json_t *object, const char *key, char *out, size_t cap)
{
    const json_t *v = json_object_get(object, key);
    if (v == NULL)
        return true;
    return buf_copy(out, cap, json_is_string(v) ? json_string_value(v) : "");
}

#define MERGE(obj, key, field) merge_text((obj), (key), (field), sizeof(field))

/* The address is one value: present replaces all of it, null removes it. */
static bool merge_address(const json_t *body, store_owner_t *o)
{
    const json_t *a = json_object_get(body, "address");
    if (a == NULL)
        return true;
    o->address_line1[0] = o->address_line2[0] = o->address_city[0] = '\0';
    o->address_state[0] = o->address_postal_code[0] = o->address_country_code[0] = '\0';
    if (!json_is_object(a))
        return true;
    return MERGE(a, "line1", o->address_line1) && MERGE(a, "line2", o->address_line2) &&
           MERGE(a, "city", o->address_city) && MERGE(a, "state", o->address_state) &&
           MERGE(a, "postal_code", o->address_postal_code) &&
           MERGE(a, "country_code", o->address_country_code);
}

/* Everything but the TIN, which needs the uuid and the key (seal_tin). */
static bool merge_owner(const json_t *body, store_owner_t *o)
{
    return MERGE(body, "id", o->id) && MERGE(body, "name", o->name) &&
           MERGE(body, "account_owner_type", o->account_owner_type) &&
           MERGE(body, "tax_country_code", o->tax_country_code) &&
           MERGE(body, "tin_type", o->tin_type) && MERGE(body, "birth_date", o->birth_date) &&
           MERGE(body, "email", o->email) && merge_address(body, o);
}

/* Applies the body's tin: a string is sealed for (tenant, o->uuid), null
 * removes the TIN, absent keeps it. Returns 0 or -1. */
static int seal_tin(const api_context_t *api, const char *tenant_id, const json_t *body,
                    store_owner_t *o)
{
    const json_t *v = json_object_get(body, "tin");
    if (v == NULL)
        return 0;
    if (!json_is_string(v)) {
        o->tin_sealed_len = 0;
        return 0;
    }
    return tin_seal(api->tin_key, tenant_id, o->uuid, json_string_value(v), o->tin_sealed,
                    &o->tin_sealed_len);
}

/* Rules across fields, on the record as it will be stored. The date of
 * birth is judged as sent (a stored one is never re-judged as days pass). */
static void check_record(json_t *issues, const json_t *body, const store_owner_t *o,
                         int64_t now_ms)
{
    if (v_check_birth_date(body, "birth_date", now_ms, issues) == 0)
        taxdocs_check_birth_years(body, "birth_date", now_ms, issues);
    const json_t *tin = json_object_get(body, "tin");
    bool has_tin = tin != NULL ? json_is_string(tin) : o->tin_sealed_len > 0;
    if (has_tin && o->tin_type[0] == '\0')
        add_issue(issues, (const char *const[]){"tin_type", NULL}, "custom",
                  "tin_type is required when tin is given", NULL);
    if (o->birth_date[0] != '\0' && strcmp(o->account_owner_type, "entity") == 0)
        add_issue(issues, (const char *const[]){"birth_date", NULL}, "custom",
                  "birth_date applies only to account owners of type individual", NULL);
}

/* ---- the record as answered */

static json_t *address_json(const store_owner_t *o)
{
    if (o->address_line1[0] == '\0')
        return json_null();
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "line1", o->address_line1, "line2",
                     api_string_or_null(o->address_line2), "city",
                     api_string_or_null(o->address_city), "state",
                     api_string_or_null(o->address_state), "postal_code",
                     api_string_or_null(o->address_postal_code), "country_code",
                     api_string_or_null(o->address_country_code));
}

/* The masked TIN, or null; -1 when the sealed bytes do not open (another
 * key, or altered data), which the caller answers as a 500. */
static int masked_tin(const api_context_t *api, const char *tenant_id, const store_owner_t *o,
                      json_t **out)
{
    *out = NULL;
    if (o->tin_sealed_len == 0) {
        *out = json_null();
        return 0;
    }
    char clear[TIN_MAX], masked[TIN_MAX];
    int rc = tin_open(api->tin_key, tenant_id, o->uuid, o->tin_sealed, o->tin_sealed_len, clear);
    if (rc == 0)
        tin_mask(clear, masked);
    explicit_bzero(clear, sizeof clear);
    if (rc != 0)
        return -1;
    *out = json_string(masked);
    return 0;
}

/* The record's JSON, or NULL when its TIN cannot be opened or memory ran out. */
static json_t *owner_json(const api_context_t *api, const char *tenant_id, const store_owner_t *o)
{
    json_t *tin;
    if (masked_tin(api, tenant_id, o, &tin) != 0) {
        log_event(LOG_ERROR, "account owner: sealed TIN does not open",
                  json_pack("{s:s}", "uuid", o->uuid));
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id", o->id,
                     "uuid", o->uuid, "name", o->name, "account_owner_type",
                     o->account_owner_type, "tax_country_code",
                     api_string_or_null(o->tax_country_code), "tin", tin, "tin_type",
                     api_string_or_null(o->tin_type), "birth_date",
                     api_string_or_null(o->birth_date), "email", api_string_or_null(o->email),
                     "address", address_json(o), "created_at", jsonval_time(o->created_at),
                     "updated_at", jsonval_time(o->updated_at));
}

static void reply_owner(request_t *req, int status, const store_owner_t *o)
{
    json_t *data = owner_json(api_ctx(req), req->claims.tenant_id, o);
    if (data == NULL) {
        api_internal_error(req, "account owner: its TIN does not open, or memory ran out");
        return;
    }
    reply_data(req, status, data);
}

#define OWNER "Account owner" /* the record named by a 404 */

/* ---- handlers */

/* Merges the body into *owner and checks the record's rules into issues;
 * answers 500 (the schema let through a value that does not fit) or 400
 * (any issue; issues stolen either way) itself and returns false. */
static bool merge_and_check(request_t *req, const json_t *body, store_owner_t *owner,
                            json_t *issues)
{
    if (!merge_owner(body, owner)) {
        json_decref(issues);
        api_internal_error(req, "account owner: a validated value does not fit its record");
        return false;
    }
    check_record(issues, body, owner, api_now_ms(req));
    return !reply_if_invalid(req, issues);
}

void api_owners_create(request_t *req)
{
    json_t *issues = json_array();
    json_t *body = read_owner_body(req, &CREATE, issues);
    if (body == NULL) {
        json_decref(issues);
        return;
    }
    store_owner_t owner = {0};
    bool checked = json_array_size(issues) > 0 ? !reply_if_invalid(req, issues)
                                               : merge_and_check(req, body, &owner, issues);
    if (!checked)
        return;

    const char *tenant_id = req->claims.tenant_id;
    if (ids_uuid_v4(owner.uuid) != 0 || seal_tin(api_ctx(req), tenant_id, body, &owner) != 0) {
        api_internal_error(req, "account owner: uuid generation or sealing the TIN");
        return;
    }
    owner.created_at = owner.updated_at = api_now_ms(req);
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    const char *failed;
    store_status_t rc = owner_tin_write(req, &owner, NULL, &failed); /* queues its TIN check */
    if (failed != NULL) {
        api_internal_error(req, failed);
        return;
    }
    if (rc == STORE_CONFLICT) {
        reply_error(req, 409, "Account owner with id '%s' already exists", owner.id);
        return;
    }
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    reply_owner(req, 201, &owner);
}

void api_owners_get(request_t *req)
{
    const char *id = request_param(req, "accountOwnerId");
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_owner_t owner;
    store_status_t rc = store_owner_get(db, req->claims.tenant_id, id, &owner);
    if (!api_found(req, rc, OWNER, id))
        return;
    reply_owner(req, 200, &owner);
}

static int append_owner(const store_owner_t *owner, void *arg)
{
    api_page_t *page = arg;
    return api_page_add(page, owner_json(api_ctx(page->req), page->req->claims.tenant_id, owner));
}

static store_status_t fetch_owners(store_conn_t *db, api_page_t *page, const void *arg)
{
    (void)arg;
    return store_owner_list(db, page->req->claims.tenant_id, page->after, page->limit,
                            append_owner, page, &page->more);
}

void api_owners_list(request_t *req)
{
    api_list(req, "id", fetch_owners, NULL);
}

/* id and uuid identify the record: sending them back unchanged is fine,
 * the id exactly, the uuid in either case (a UUID's hex digits are
 * case-insensitive, as for filers). */
static void check_identity(json_t *issues, const json_t *body, const char *key,
                           const char *current, bool any_case)
{
    const char *sent = string_at(body, key);
    if (sent == NULL || (any_case ? strcasecmp(sent, current) : strcmp(sent, current)) == 0)
        return;
    char message[64];
    snprintf(message, sizeof message, "%s cannot be changed", key);
    add_issue(issues, (const char *const[]){key, NULL}, "custom", message, NULL);
}

/* The patch's TIN into owner. A TIN sent with the value the stored record
 * has keeps the stored sealed bytes: sealing it again (a fresh nonce) would
 * make an unchanged record look changed. */
static int patch_tin(const api_context_t *api, const char *tenant_id, const json_t *body,
                     const store_owner_t *stored, const owner_tin_t *before, store_owner_t *owner)
{
    const char *tin = json_string_value(json_object_get(body, "tin"));
    if (tin == NULL || !before->has_tin || strcmp(tin, before->tin) != 0)
        return seal_tin(api, tenant_id, body, owner);
    memcpy(owner->tin_sealed, stored->tin_sealed, stored->tin_sealed_len);
    owner->tin_sealed_len = stored->tin_sealed_len;
    return 0;
}

#define TEXT_DIFFERS(a, b, field) (strcmp((a)->field, (b)->field) != 0)

/* Does the merged record differ from the stored one in anything a client
 * can see? The times are not compared: they are the write's to set. */
static bool owner_changed(const store_owner_t *a, const store_owner_t *b)
{
    return TEXT_DIFFERS(a, b, uuid) || TEXT_DIFFERS(a, b, name) ||
           TEXT_DIFFERS(a, b, account_owner_type) || TEXT_DIFFERS(a, b, tax_country_code) ||
           TEXT_DIFFERS(a, b, tin_type) || TEXT_DIFFERS(a, b, birth_date) ||
           TEXT_DIFFERS(a, b, email) || TEXT_DIFFERS(a, b, address_line1) ||
           TEXT_DIFFERS(a, b, address_line2) || TEXT_DIFFERS(a, b, address_city) ||
           TEXT_DIFFERS(a, b, address_state) || TEXT_DIFFERS(a, b, address_postal_code) ||
           TEXT_DIFFERS(a, b, address_country_code) || a->tin_sealed_len != b->tin_sealed_len ||
           memcmp(a->tin_sealed, b->tin_sealed, a->tin_sealed_len) != 0;
}

/* Seals the patch's TIN and writes the owner; the snapshot taken before the
 * merge tells owner_tin_write whether the TIN check must run again. A patch
 * that changes nothing writes nothing and leaves owner as stored, so
 * updated_at means "last changed" (as for accounts and filers). */
static store_status_t update_with_check(request_t *req, const json_t *body, store_owner_t *owner,
                                        const char **failed)
{
    const char *tenant_id = req->claims.tenant_id;
    owner_tin_t before = {0};
    store_owner_t stored;
    *failed = NULL;
    store_status_t rc = store_owner_get(api_db(req), tenant_id, owner->id, &stored);
    if (rc == STORE_OK && owner_tin_snapshot(req, &stored, &before) != 0)
        *failed = "account owner: the stored TIN does not open";
    else if (rc == STORE_OK && patch_tin(api_ctx(req), tenant_id, body, &stored, &before, owner) != 0)
        *failed = "account owner: sealing the TIN";
    else if (rc == STORE_OK && !owner_changed(&stored, owner))
        *owner = stored;
    else if (rc == STORE_OK) {
        owner->updated_at = api_now_ms(req);
        rc = owner_tin_write(req, owner, &before, failed);
    }
    owner_tin_wipe(&before);
    return rc;
}

void api_owners_update(request_t *req)
{
    const char *id = request_param(req, "accountOwnerId");
    json_t *issues = json_array();
    json_t *body = read_owner_body(req, &PATCH, issues);
    if (body == NULL) {
        json_decref(issues);
        return;
    }
    check_identity(issues, body, "id", id, false);
    if (reply_if_invalid(req, issues))
        return;

    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    const char *tenant_id = req->claims.tenant_id;
    store_owner_t owner;
    store_status_t rc = store_owner_get(db, tenant_id, id, &owner);
    if (!api_found(req, rc, OWNER, id))
        return;

    issues = json_array();
    check_identity(issues, body, "uuid", owner.uuid, true);
    if (!merge_and_check(req, body, &owner, issues))
        return;
    const char *failed;
    rc = update_with_check(req, body, &owner, &failed);
    if (failed != NULL) {
        api_internal_error(req, failed);
        return;
    }
    /* it was there a moment ago: a 404 reports what is true now */
    if (!api_found(req, rc, OWNER, id))
        return;
    reply_owner(req, 200, &owner);
}
