/* oauth: POST /v1/oauth/token, the client-credentials grant that mints the
 * bearer tokens every other route needs (spec § Authentication 2), and
 * POST /v1/oauth/account-owner-token, the same grant plus `account_owner_id`,
 * which mints a token that names one owner of the tenant (its uuid, claim
 * `aoi`) and that the gateway lets reach only that owner's routes (issue 19,
 * item 1). Both run one function (mint), so the throttle, the 401 and the
 * 403 are the same; an owner unknown to the credential's tenant is 404,
 * judged only after the credentials passed, so it tells a stranger nothing.
 *
 * Only a keyed hash of each client secret is stored; the presented secret is
 * hashed with the server key and compared in constant time. An unknown
 * client id is hashed and compared all the same, so the answer's timing does
 * not reveal which client ids exist.
 *
 * Failed secrets are throttled per (client id, client address)
 * (http/authfail.h): API_AUTH_FAILURE_LIMIT failures within the window
 * answer 429 "Rate limit exceeded. Retry in N seconds." with Retry-After
 * until the window ends. The pair is the key so that nobody can lock a
 * known client out from elsewhere; and while a pair is throttled even the
 * right secret is refused, before any lookup, or the throttle would tell a
 * guesser which guess was right. A wrong tenant_id (403) is not a failed
 * secret. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/clock.h"
#include "http/errors.h"
#include "core/validate.h"
#include "store/owners.h"

static const char *const GRANT_TYPES[] = {"client_credentials", NULL};

static const v_field TOKEN_FIELDS[] = {
    {"grant_type", V_ENUM, .required = true, .values = GRANT_TYPES},
    {"client_id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"client_secret", V_STRING, .required = true, .min_len = 1, .max_len = 512},
    {"tenant_id", V_STRING, .min_len = 1, .max_len = 64},
    {NULL},
};
static const v_schema TOKEN_REQUEST = {TOKEN_FIELDS};

static const v_field OWNER_TOKEN_FIELDS[] = {
    {"grant_type", V_ENUM, .required = true, .values = GRANT_TYPES},
    {"client_id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {"client_secret", V_STRING, .required = true, .min_len = 1, .max_len = 512},
    {"tenant_id", V_STRING, .min_len = 1, .max_len = 64},
    {"account_owner_id", V_STRING, .required = true, .min_len = 1, .max_len = DOMAIN_ID_MAX},
    {NULL},
};
static const v_schema OWNER_TOKEN_REQUEST = {OWNER_TOKEN_FIELDS};

#define OWNER "Account owner" /* the record named by a 404 */

/* True when the presented secret matches the stored hash (constant time). */
static bool secret_matches(request_t *req, const char *secret, const uint8_t stored[32])
{
    uint8_t presented[32];
    const crypto_hmac_key_t *hasher = api_ctx(req)->secret_hasher;
    if (crypto_hmac_key_sign(hasher, secret, strlen(secret), presented) != 0)
        return false;
    return crypto_equal(presented, sizeof presented, stored, 32);
}

/* owner_uuid: "" for a tenant token. */
static void answer_token(request_t *req, const store_credential_t *cred, const char *owner_uuid)
{
    token_claims_t claims = {0};
    if (!buf_copy(claims.tenant_id, sizeof claims.tenant_id, cred->tenant_id) ||
        !buf_copy(claims.owner_uuid, sizeof claims.owner_uuid, owner_uuid) ||
        !buf_copy(claims.client_id, sizeof claims.client_id, cred->client_id)) {
        request_log_failure(req, "token: a stored id does not fit the claims");
        reply_error(req, 500, "The token could not be issued");
        return;
    }
    claims.scopes = cred->scopes;
    claims.issued_at = api_now_s(req);
    claims.expires_at = claims.issued_at + TOKEN_LIFETIME_S;
    char *token = token_sign(api_ctx(req)->signer, &claims);
    if (token == NULL) {
        request_log_failure(req, "token: signing");
        reply_error(req, 500, "The token could not be issued");
        return;
    }
    json_t *body = json_pack("{s:s, s:i, s:s}", "access_token", token, "expires_in",
                             (json_int_t)TOKEN_LIFETIME_S, "token_type", "Bearer");
    free(token);
    reply_json(req, 200, body);
}

/* 429 while the pair is throttled; true when it was. */
static bool throttled(request_t *req, const char *client_id, const char *address)
{
    uint32_t wait_s = authfail_check(api_ctx(req)->auth_failures, client_id, address,
                                     api_now_ms(req));
    if (wait_s == 0)
        return false;
    char *seconds = arena_sprintf(req->arena, "%u", wait_s);
    if (seconds != NULL)
        reply_header(req, "Retry-After", seconds);
    reply_error_body(req, 429, error_body_rate_limited(ERROR_LIMIT_TENANT, wait_s));
    return true;
}

/* The credential named by client_id when the secret matches and it is not
 * revoked; otherwise false after answering 401 (recorded as a failure) or 5xx. */
static bool authenticate_client(request_t *req, store_conn_t *db, const char *client_id,
                                const char *secret, store_credential_t *cred)
{
    const char *address = request_client_address(req);
    store_status_t rc = store_credential_get(db, client_id, cred);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        reply_store_failure(req, rc);
        return false;
    }
    if (rc == STORE_NOT_FOUND)
        memset(cred, 0, sizeof *cred); /* compare against nothing, in the same time */
    bool valid = secret_matches(req, secret, cred->secret_hash);
    if (rc == STORE_NOT_FOUND || !valid || cred->revoked_at != 0) {
        authfail_record(api_ctx(req)->auth_failures, client_id, address, api_now_ms(req));
        reply_error(req, 401, "Invalid client credentials");
        return false;
    }
    authfail_forget(api_ctx(req)->auth_failures, client_id, address);
    return true;
}

/* The owner's uuid into uuid ("" when owner_id is NULL: a tenant token);
 * false after answering 404 or 5xx. */
static bool resolve_owner(request_t *req, store_conn_t *db, const char *tenant_id,
                          const char *owner_id, char uuid[STORE_UUID_LEN])
{
    uuid[0] = '\0';
    if (owner_id == NULL)
        return true;
    return api_found(req, store_owner_uuid(db, tenant_id, owner_id, uuid), OWNER, owner_id);
}

/* Both grants: schema is TOKEN_REQUEST or OWNER_TOKEN_REQUEST. */
static void mint(request_t *req, const v_schema *schema)
{
    json_t *body = api_read_body(req, schema, "token request");
    if (body == NULL)
        return;

    const char *client_id = json_string_value(json_object_get(body, "client_id"));
    const char *secret = json_string_value(json_object_get(body, "client_secret"));
    const char *tenant_id = json_string_value(json_object_get(body, "tenant_id"));
    const char *owner_id = json_string_value(json_object_get(body, "account_owner_id"));
    if (throttled(req, client_id, request_client_address(req)))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_credential_t cred;
    if (!authenticate_client(req, db, client_id, secret, &cred))
        return;
    if (tenant_id != NULL && strcmp(tenant_id, cred.tenant_id) != 0) {
        reply_error_body(req, 403, error_body_forbidden());
        return;
    }
    char owner_uuid[STORE_UUID_LEN];
    if (!resolve_owner(req, db, cred.tenant_id, owner_id, owner_uuid))
        return;
    store_status_t rc = store_credential_touch(db, client_id, api_now_ms(req));
    if (rc != STORE_OK) {
        reply_store_failure(req, rc);
        return;
    }
    answer_token(req, &cred, owner_uuid);
}

void api_oauth_token(request_t *req)
{
    mint(req, &TOKEN_REQUEST);
}

void api_oauth_owner_token(request_t *req)
{
    mint(req, &OWNER_TOKEN_REQUEST);
}
