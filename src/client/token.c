/* token: the bearer token of a client, minted from its credentials with
 * POST /v1/oauth/token {grant_type, client_id, client_secret[, tenant_id]},
 * cached, and minted again
 *   - before it expires: refresh_margin seconds before expires_in ends
 *     (half the lifetime when the margin is not shorter than the lifetime,
 *     so a short-lived token is not minted for every request);
 *   - after a 401 (spec § Authentication 7): once per token generation, so
 *     N threads that get a 401 for the same token together mint once and
 *     all retry with the new one.
 *
 * Locking: c->lock guards the cached token and is never held across I/O;
 * c->mint_lock is held while minting, so a second thread that needs a new
 * token waits for the first one's and then finds it in the cache.
 *
 * The secret goes into the request body only (never a log line: send.c logs
 * the method, path and size), and the body is wiped after the call. The
 * token endpoint is called without a token, so its 401 ("Invalid client
 * credentials") is final; its 429 (a throttled client) and 5xx are retried
 * like any safe request: minting twice is harmless. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <taxd/client.h>

#include "internal.h"

enum { DEFAULT_LIFETIME_S = 3600 }; /* when an answer lacks expires_in: err on the short side */

/* True when the cached token may be used by a request whose last token
 * (generation stale) was refused; called under c->lock. */
static bool cached_usable(const taxd_client *c, uint64_t stale, int64_t now_ms)
{
    return c->token != NULL && c->token_generation > stale && now_ms < c->token_refresh_ms;
}

/* Copies the cached token out; called under c->lock. */
static taxd_code copy_cached(taxd_client *c, char **token, uint64_t *generation, taxd_error *err)
{
    *token = strdup(c->token);
    *generation = c->token_generation;
    return *token ? TAXD_OK : tc_fail(err, TAXD_E_NOMEM, "out of memory");
}

static char *token_request_body(const taxd_client *c)
{
    json_t *body = json_pack("{s:s, s:s, s:s}", "grant_type", "client_credentials", "client_id",
                             c->client_id, "client_secret", c->client_secret);
    if (body && c->tenant_id)
        json_object_set_new(body, "tenant_id", json_string(c->tenant_id));
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    /* jansson's copy of the secret is freed with the object: overwrite it first */
    json_t *secret = json_object_get(body, "client_secret");
    if (secret)
        explicit_bzero((char *)json_string_value(secret), json_string_length(secret));
    json_decref(body);
    return text;
}

/* Reads {access_token, expires_in} from a 2xx of the token endpoint. */
static taxd_code read_token(const taxd_response *resp, char **token, long *lifetime_s,
                            taxd_error *err)
{
    json_t *body = json_loadb(resp->body, resp->body_len, 0, NULL);
    json_t *access = json_object_get(body, "access_token");
    json_t *expires = json_object_get(body, "expires_in");
    taxd_code rc = TAXD_OK;
    if (!json_is_string(access) || json_string_length(access) == 0) {
        rc = tc_fail(err, TAXD_E_PROTOCOL, "the token endpoint answered %d without an access_token",
                     resp->status);
    } else if ((*token = strdup(json_string_value(access))) == NULL) {
        rc = tc_fail(err, TAXD_E_NOMEM, "out of memory");
    } else {
        *lifetime_s = json_is_integer(expires) && json_integer_value(expires) > 0
                          ? (long)json_integer_value(expires)
                          : DEFAULT_LIFETIME_S;
        explicit_bzero((char *)json_string_value(access), json_string_length(access));
    }
    json_decref(body);
    return rc;
}

/* One mint (with the retry policy); *token malloc'd. */
static taxd_code mint(taxd_client *c, char **token, long *lifetime_s, taxd_error *err)
{
    if (c->client_id == NULL)
        return tc_fail(err, TAXD_E_INVALID, "no client credentials (client_id and client_secret)");
    char *body = token_request_body(c);
    if (body == NULL)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    taxd_request r = {.method = "POST", .path = "/v1/oauth/token", .body = body,
                      .flags = TAXD_SAFE};
    taxd_response resp;
    taxd_code rc = tc_run(c, &r, false, &resp, err);
    explicit_bzero(body, strlen(body));
    free(body);
    if (rc == TAXD_OK)
        rc = read_token(&resp, token, lifetime_s, err);
    if (resp.body)
        explicit_bzero(resp.body, resp.body_len);
    taxd_response_clear(&resp);
    return rc;
}

/* Stores a new token; called under c->lock. */
static void cache_token(taxd_client *c, char *token, long lifetime_s, int64_t now_ms)
{
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    c->token = token;
    c->token_generation++;
    long margin = c->refresh_margin_s < lifetime_s ? c->refresh_margin_s : lifetime_s / 2;
    c->token_expires_ms = now_ms + (int64_t)lifetime_s * 1000;
    c->token_refresh_ms = now_ms + (int64_t)(lifetime_s - margin) * 1000;
}

taxd_code tc_token_get(taxd_client *c, uint64_t stale_generation, char **token,
                       uint64_t *generation, taxd_error *err)
{
    *token = NULL;
    taxd_code rc;
    pthread_mutex_lock(&c->lock);
    if (cached_usable(c, stale_generation, tc_now_ms())) {
        rc = copy_cached(c, token, generation, err);
        pthread_mutex_unlock(&c->lock);
        return rc;
    }
    pthread_mutex_unlock(&c->lock);

    pthread_mutex_lock(&c->mint_lock);
    pthread_mutex_lock(&c->lock);
    bool had = c->token != NULL;
    if (cached_usable(c, stale_generation, tc_now_ms())) { /* another thread minted it */
        rc = copy_cached(c, token, generation, err);
        pthread_mutex_unlock(&c->lock);
        pthread_mutex_unlock(&c->mint_lock);
        return rc;
    }
    pthread_mutex_unlock(&c->lock);

    int64_t asked_ms = tc_now_ms(); /* expiry counts from the request, not the answer */
    char *fresh = NULL;
    long lifetime_s = 0;
    rc = mint(c, &fresh, &lifetime_s, err);
    pthread_mutex_lock(&c->lock);
    if (rc == TAXD_OK) {
        cache_token(c, fresh, lifetime_s, asked_ms);
        rc = copy_cached(c, token, generation, err);
    } else if (c->token && c->token_generation > stale_generation && tc_now_ms() < c->token_expires_ms) {
        /* the early refresh failed but the token still works: use it */
        taxd_error_clear(err);
        rc = copy_cached(c, token, generation, err);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&c->mint_lock);
    if (rc == TAXD_OK && fresh)
        tc_log(c, '*', had ? "token refreshed (expires in %ld s)" : "token minted (expires in %ld s)",
               lifetime_s);
    return rc;
}

taxd_code taxd_client_token(taxd_client *client, char **token, taxd_error *err)
{
    if (token)
        *token = NULL;
    if (client == NULL || token == NULL)
        return tc_fail(err, TAXD_E_INVALID, "taxd_client_token needs a client and a place for the token");
    uint64_t generation;
    return tc_token_get(client, 0, token, &generation, err);
}
