/* token: the bearer tokens of the API. JWTs signed with HS256 over OpenSSL's
 * EVP_MAC. The algorithm is pinned (a header naming anything else is refused),
 * the header's `kid` selects one of the ring's keys so the signing key can be
 * rotated, the signature is compared in constant time, and issue, not-before
 * and expiry times are checked against the caller's clock. Verification needs no database.
 *
 * Also here: the authorization header syntax. The scope names are core/scopes.h. */
#ifndef TAXD_HTTP_TOKEN_H
#define TAXD_HTTP_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ids.h"
#include "core/keys.h"
#include "core/scopes.h"

#define TOKEN_LIFETIME_S 86400   /* spec § Limits: 24 hours */
#define TOKEN_CLOCK_SKEW_S 60     /* an iat this far ahead is still accepted */
#define TOKEN_ID_MAX 64          /* tenant and client ids, including the NUL */

typedef struct token_claims {
    char tenant_id[TOKEN_ID_MAX];
    char client_id[TOKEN_ID_MAX];
    unsigned scopes;   /* 0: all routes */
    int64_t issued_at; /* seconds since the epoch */
    int64_t expires_at;
    int64_t not_before; /* nbf; INT64_MIN when absent. token_sign never writes it */
    /* aoi: the one account owner (service uuid) an account-owner token may
     * act for; "" for a tenant token (issue 19, item 1). */
    char owner_uuid[IDS_UUID_LEN];
} token_claims_t;

/* A ring of signing keys prepared for use from many threads. Built from a
 * keys_ring_t (copied); freed by token_signer_free. NULL on failure. */
typedef struct token_signer token_signer_t;
token_signer_t *token_signer_new(const keys_ring_t *ring);
void token_signer_free(token_signer_t *signer);

/* Signs claims with the ring's first key. Returns a malloc'd NUL-terminated
 * token the caller frees, or NULL. */
char *token_sign(const token_signer_t *signer, const token_claims_t *claims);

typedef enum token_status {
    TOKEN_OK = 0,
    TOKEN_MALFORMED,     /* not three base64url parts of JSON */
    TOKEN_BAD_ALGORITHM, /* header alg is not HS256, or typ is not JWT when present */
    TOKEN_UNKNOWN_KEY,   /* kid missing or not in the ring */
    TOKEN_BAD_SIGNATURE,
    TOKEN_EXPIRED,       /* now >= exp */
    TOKEN_NOT_YET_VALID, /* iat or nbf more than 60 s in the future */
    TOKEN_BAD_CLAIMS,    /* missing or ill-typed claims, or exp more than
                            TOKEN_LIFETIME_S after iat */
} token_status_t;

/* Verifies token (len bytes, need not be NUL-terminated) at time now_s and
 * fills *claims on TOKEN_OK. Never allocates on the caller's behalf. */
token_status_t token_verify(const token_signer_t *signer, const char *token, size_t len,
                            int64_t now_s, token_claims_t *claims);
const char *token_status_name(token_status_t status);

/* The time rules alone, for claims that verified earlier (the token cache):
 * TOKEN_EXPIRED when now_s >= exp, TOKEN_NOT_YET_VALID when iat or nbf is more
 * than TOKEN_CLOCK_SKEW_S after now_s, else TOKEN_OK. */
token_status_t token_check_times(const token_claims_t *claims, int64_t now_s);

/* The authorization header is valid when it is "Bearer" (any case), exactly one
 * space, and a non-empty token. On success *token and *token_len point into header. */
bool token_parse_bearer(const char *header, const char **token, size_t *token_len);

#endif
