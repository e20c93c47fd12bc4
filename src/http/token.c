/* token: HS256 JWTs for the API. See token.h.
 *
 * Design and trade-offs:
 * - The algorithm is pinned. The header is read only to find the key: "alg"
 *   must be exactly "HS256" (so "none", "HS512", "RS256" and a missing alg are
 *   refused before any key is touched), "typ" may only be "JWT", and "kid"
 *   picks one ring key by exact match. This closes the classic JWT holes
 *   (alg=none, algorithm confusion, key chosen by the token) without a general
 *   JOSE library; libjwt was rejected for taking the algorithm from the token.
 * - Order of checks: the three parts are decoded and both JSON parts parsed
 *   first (anything else is MALFORMED, "not three base64url parts of JSON"),
 *   then the header is judged, then the signature is compared in constant time
 *   over the exact bytes received. Only after that is any payload field read,
 *   so an unsigned payload can never influence the result beyond "malformed".
 * - Parsing stays strict: base64url without padding and with canonical
 *   trailing bits (crypto.c), jansson with JSON_REJECT_DUPLICATES (a second
 *   "tid" could otherwise be read differently by two parsers), strings with an
 *   embedded NUL refused (jansson already rejects \u0000 without
 *   JSON_ALLOW_NUL; the length checks here keep that true if flags change),
 *   integers only for times (iat, exp and, when present, nbf).
 * - Lifetime: exp may be at most TOKEN_LIFETIME_S after iat. We never sign a
 *   longer-lived token, so one that claims to be (minted with a leaked key, or
 *   by a future bug) is bad claims rather than a valid decade-long credential.
 *   nbf, when present, is honoured with the same clock skew as iat; it can
 *   only delay a token, never extend it.
 * - Verification does not allocate on the caller's behalf: decoded parts live
 *   in fixed stack buffers sized from TOKEN_MAX_LEN; jansson's own allocations
 *   are released before returning. Signing renders JSON with json_dumpb into
 *   stack buffers for the same reason and to stay clear of jansson's
 *   process-wide allocator hooks; only the returned token is malloc'd.
 * - The signer holds one prepared crypto_hmac_key_t per ring key: the EVP_MAC
 *   is keyed once and duplicated per token, so verification from many threads
 *   needs no lock and no per-request key setup. */
#include "http/token.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/crypto.h"

#define TOKEN_MAX_LEN 4096           /* longer bearer strings are refused unread */
#define TOKEN_HEADER_MAX 512         /* decoded header JSON */
#define TOKEN_PAYLOAD_MAX 3072       /* decoded payload JSON (covers TOKEN_MAX_LEN) */
#define TOKEN_ISSUER "taxd"

struct token_signer {
    size_t count;
    char kid[KEYS_RING_MAX][KEYS_KID_MAX];
    crypto_hmac_key_t *key[KEYS_RING_MAX];
};

/* ---- signer ---- */

token_signer_t *token_signer_new(const keys_ring_t *ring)
{
    if (ring == NULL || ring->count == 0 || ring->count > KEYS_RING_MAX)
        return NULL;
    token_signer_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < ring->count; i++) {
        size_t kid_len = strnlen(ring->kid[i], KEYS_KID_MAX);
        s->key[i] = crypto_hmac_key_new(ring->key[i], KEYS_KEY_LEN);
        s->count = i + 1; /* so token_signer_free releases what exists */
        if (kid_len == 0 || kid_len == KEYS_KID_MAX || s->key[i] == NULL) {
            token_signer_free(s);
            return NULL;
        }
        memcpy(s->kid[i], ring->kid[i], kid_len + 1);
    }
    return s;
}

void token_signer_free(token_signer_t *signer)
{
    if (signer == NULL)
        return;
    for (size_t i = 0; i < signer->count; i++)
        crypto_hmac_key_free(signer->key[i]);
    free(signer);
}

/* ---- signing ---- */

static bool token_id_ok(const char *id)
{
    size_t n = strnlen(id, TOKEN_ID_MAX);
    return n > 0 && n < TOKEN_ID_MAX;
}

/* True when s is a uuid in its canonical 36-character text. */
static bool token_uuid_ok(const char *s)
{
    uint8_t bytes[IDS_UUID_BYTES];
    return strnlen(s, IDS_UUID_LEN) == IDS_UUID_LEN - 1 && ids_uuid_parse(s, bytes);
}

/* Renders obj compactly into buf; returns the length, or 0 when it does not fit. */
static size_t token_dump(json_t *obj, char *buf, size_t cap)
{
    if (obj == NULL)
        return 0;
    size_t n = json_dumpb(obj, buf, cap, JSON_COMPACT);
    json_decref(obj);
    return n > cap ? 0 : n;
}

static json_t *token_build_payload(const token_claims_t *c)
{
    json_t *p = json_object();
    if (p == NULL)
        return NULL;
    char scope[128];
    scopes_format(c->scopes, scope, sizeof scope);
    int bad = json_object_set_new(p, "iss", json_string(TOKEN_ISSUER)) |
              json_object_set_new(p, "sub", json_string(c->client_id)) |
              json_object_set_new(p, "tid", json_string(c->tenant_id));
    if (c->scopes != 0)
        bad |= json_object_set_new(p, "scope", json_string(scope));
    if (c->owner_uuid[0] != '\0')
        bad |= json_object_set_new(p, "aoi", json_string(c->owner_uuid));
    bad |= json_object_set_new(p, "iat", json_integer(c->issued_at)) |
           json_object_set_new(p, "exp", json_integer(c->expires_at));
    if (bad != 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

char *token_sign(const token_signer_t *signer, const token_claims_t *claims)
{
    if (signer == NULL || claims == NULL || signer->count == 0 ||
        !token_id_ok(claims->tenant_id) || !token_id_ok(claims->client_id) ||
        (claims->scopes & ~SCOPE_ALL) != 0 ||
        (claims->owner_uuid[0] != '\0' && !token_uuid_ok(claims->owner_uuid)))
        return NULL;
    char header[TOKEN_HEADER_MAX], payload[TOKEN_PAYLOAD_MAX];
    size_t h_len = token_dump(json_pack("{s:s, s:s, s:s}", "alg", "HS256", "typ", "JWT", "kid",
                                        signer->kid[0]),
                              header, sizeof header);
    size_t p_len = token_dump(token_build_payload(claims), payload, sizeof payload);
    if (h_len == 0 || p_len == 0)
        return NULL;
    size_t h64 = CRYPTO_BASE64_LEN(h_len), p64 = CRYPTO_BASE64_LEN(p_len);
    size_t s64 = CRYPTO_BASE64_LEN(CRYPTO_SHA256_LEN);
    char *out = malloc(h64 + p64 + s64);
    if (out == NULL)
        return NULL;
    size_t n = crypto_base64url_encode(header, h_len, out, h64);
    out[n++] = '.';
    n += crypto_base64url_encode(payload, p_len, out + n, p64);
    uint8_t mac[CRYPTO_SHA256_LEN];
    if (crypto_hmac_key_sign(signer->key[0], out, n, mac) != 0) {
        free(out);
        return NULL;
    }
    out[n++] = '.';
    crypto_base64url_encode(mac, sizeof mac, out + n, s64);
    return out;
}

/* ---- verification ---- */

/* True when v is a string of exactly `want` (no embedded NUL, no suffix). */
static bool token_json_string_is(const json_t *v, const char *want)
{
    return json_is_string(v) && json_string_length(v) == strlen(want) &&
           memcmp(json_string_value(v), want, strlen(want)) == 0;
}

/* Decodes one base64url part and parses it as a JSON object. */
static json_t *token_parse_part(const char *src, size_t len, char *buf, size_t cap)
{
    size_t n = 0;
    if (len == 0 || crypto_base64url_decode(src, len, (uint8_t *)buf, cap, &n) != 0)
        return NULL;
    json_error_t jerr;
    json_t *v = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr);
    if (v != NULL && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static token_status_t token_check_header(const token_signer_t *signer, const json_t *header,
                                         const crypto_hmac_key_t **key)
{
    if (!token_json_string_is(json_object_get(header, "alg"), "HS256"))
        return TOKEN_BAD_ALGORITHM;
    const json_t *typ = json_object_get(header, "typ");
    if (typ != NULL && !token_json_string_is(typ, "JWT"))
        return TOKEN_BAD_ALGORITHM;
    /* We understand no JWS extension, and RFC 7515 §4.1.11 says to refuse
     * tokens that mark one as critical. */
    if (json_object_get(header, "crit") != NULL)
        return TOKEN_BAD_ALGORITHM;
    const json_t *kid = json_object_get(header, "kid");
    if (!json_is_string(kid))
        return TOKEN_UNKNOWN_KEY;
    for (size_t i = 0; i < signer->count; i++) {
        if (token_json_string_is(kid, signer->kid[i])) {
            *key = signer->key[i];
            return TOKEN_OK;
        }
    }
    return TOKEN_UNKNOWN_KEY;
}

static bool token_copy_id(const json_t *v, char dst[TOKEN_ID_MAX])
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n >= TOKEN_ID_MAX || memchr(s, '\0', n) != NULL)
        return false;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

/* True when exp is more than TOKEN_LIFETIME_S after iat, written so that the
 * sum cannot overflow (both come from the token). */
static bool token_outlives(int64_t iat, int64_t exp)
{
    return iat <= INT64_MAX - TOKEN_LIFETIME_S && exp > iat + TOKEN_LIFETIME_S;
}

/* Reads iat, exp and the optional nbf; all must be JSON integers. */
static token_status_t token_read_times(const json_t *p, token_claims_t *c)
{
    const json_t *iat = json_object_get(p, "iat");
    const json_t *exp = json_object_get(p, "exp");
    const json_t *nbf = json_object_get(p, "nbf");
    if (!json_is_integer(iat) || !json_is_integer(exp) || (nbf != NULL && !json_is_integer(nbf)))
        return TOKEN_BAD_CLAIMS;
    c->issued_at = json_integer_value(iat);
    c->expires_at = json_integer_value(exp);
    c->not_before = nbf == NULL ? INT64_MIN : json_integer_value(nbf);
    if (token_outlives(c->issued_at, c->expires_at))
        return TOKEN_BAD_CLAIMS;
    return TOKEN_OK;
}

/* Reads the optional aoi claim: absent, or a uuid string. */
static bool token_read_owner(const json_t *p, token_claims_t *c)
{
    const json_t *aoi = json_object_get(p, "aoi");
    c->owner_uuid[0] = '\0';
    if (aoi == NULL)
        return true;
    if (!json_is_string(aoi) || json_string_length(aoi) != IDS_UUID_LEN - 1)
        return false;
    memcpy(c->owner_uuid, json_string_value(aoi), IDS_UUID_LEN);
    return token_uuid_ok(c->owner_uuid);
}

/* Reads the claims of a payload whose signature has been verified. */
static token_status_t token_read_claims(const json_t *p, token_claims_t *c)
{
    const json_t *iss = json_object_get(p, "iss");
    const json_t *scope = json_object_get(p, "scope");
    if (!token_json_string_is(iss, TOKEN_ISSUER) ||
        !token_copy_id(json_object_get(p, "tid"), c->tenant_id) ||
        !token_copy_id(json_object_get(p, "sub"), c->client_id) ||
        !token_read_owner(p, c) || token_read_times(p, c) != TOKEN_OK)
        return TOKEN_BAD_CLAIMS;
    c->scopes = 0;
    if (scope == NULL)
        return TOKEN_OK;
    /* A present scope must name something: we never sign an empty one, and
     * reading it as "all routes" would widen access. */
    if (!json_is_string(scope) || json_string_length(scope) != strlen(json_string_value(scope)) ||
        scopes_parse(json_string_value(scope), &c->scopes, NULL, NULL) != 0 ||
        c->scopes == 0)
        return TOKEN_BAD_CLAIMS;
    return TOKEN_OK;
}

/* True when t is later than now_s plus the tolerated skew (another host's
 * clock may run a little ahead of ours). */
static bool token_ahead(int64_t t, int64_t now_s)
{
    return now_s <= INT64_MAX - TOKEN_CLOCK_SKEW_S && t > now_s + TOKEN_CLOCK_SKEW_S;
}

token_status_t token_check_times(const token_claims_t *c, int64_t now_s)
{
    if (now_s >= c->expires_at)
        return TOKEN_EXPIRED;
    if (token_ahead(c->issued_at, now_s) || token_ahead(c->not_before, now_s))
        return TOKEN_NOT_YET_VALID;
    return TOKEN_OK;
}

/* Splits token at its two dots; false unless there are exactly two. */
static bool token_split(const char *token, size_t len, size_t *dot1, size_t *dot2)
{
    const char *a = memchr(token, '.', len);
    if (a == NULL)
        return false;
    *dot1 = (size_t)(a - token);
    const char *b = memchr(a + 1, '.', len - *dot1 - 1);
    if (b == NULL)
        return false;
    *dot2 = (size_t)(b - token);
    return memchr(b + 1, '.', len - *dot2 - 1) == NULL;
}

static token_status_t token_verify_parsed(const token_signer_t *signer, const char *token,
                                          size_t signed_len, const uint8_t *sig, size_t sig_len,
                                          const json_t *header, const json_t *payload,
                                          int64_t now_s, token_claims_t *claims)
{
    const crypto_hmac_key_t *key = NULL;
    token_status_t st = token_check_header(signer, header, &key);
    if (st != TOKEN_OK)
        return st;
    uint8_t want[CRYPTO_SHA256_LEN];
    if (crypto_hmac_key_sign(key, token, signed_len, want) != 0 ||
        !crypto_equal(want, sizeof want, sig, sig_len))
        return TOKEN_BAD_SIGNATURE;
    token_claims_t c;
    memset(&c, 0, sizeof c);
    st = token_read_claims(payload, &c);
    if (st == TOKEN_OK)
        st = token_check_times(&c, now_s);
    if (st == TOKEN_OK)
        *claims = c;
    return st;
}

token_status_t token_verify(const token_signer_t *signer, const char *token, size_t len,
                            int64_t now_s, token_claims_t *claims)
{
    size_t dot1 = 0, dot2 = 0;
    if (signer == NULL || claims == NULL || token == NULL || len == 0 || len > TOKEN_MAX_LEN ||
        !token_split(token, len, &dot1, &dot2))
        return TOKEN_MALFORMED;
    /* The signature part must be base64url too before anything is judged; a
     * well-formed signature of the wrong length is a bad signature, later. */
    uint8_t sig[TOKEN_MAX_LEN / 4 * 3];
    size_t sig_len = 0;
    if (dot2 + 1 == len ||
        crypto_base64url_decode(token + dot2 + 1, len - dot2 - 1, sig, sizeof sig, &sig_len) != 0)
        return TOKEN_MALFORMED;
    char hbuf[TOKEN_HEADER_MAX], pbuf[TOKEN_PAYLOAD_MAX];
    json_t *header = token_parse_part(token, dot1, hbuf, sizeof hbuf);
    json_t *payload = token_parse_part(token + dot1 + 1, dot2 - dot1 - 1, pbuf, sizeof pbuf);
    token_status_t st = TOKEN_MALFORMED;
    if (header != NULL && payload != NULL)
        st = token_verify_parsed(signer, token, dot2, sig, sig_len, header, payload, now_s, claims);
    json_decref(header);
    json_decref(payload);
    return st;
}

const char *token_status_name(token_status_t status)
{
    switch (status) {
    case TOKEN_OK: return "ok";
    case TOKEN_MALFORMED: return "malformed";
    case TOKEN_BAD_ALGORITHM: return "bad_algorithm";
    case TOKEN_UNKNOWN_KEY: return "unknown_key";
    case TOKEN_BAD_SIGNATURE: return "bad_signature";
    case TOKEN_EXPIRED: return "expired";
    case TOKEN_NOT_YET_VALID: return "not_yet_valid";
    case TOKEN_BAD_CLAIMS: return "bad_claims";
    }
    return "unknown";
}

/* ---- authorization header ---- */

bool token_parse_bearer(const char *header, const char **token, size_t *token_len)
{
    static const char scheme[] = "Bearer";
    const size_t scheme_len = sizeof scheme - 1;
    if (header == NULL || token == NULL || token_len == NULL)
        return false;
    if (strncasecmp(header, scheme, scheme_len) != 0 || header[scheme_len] != ' ')
        return false;
    const char *t = header + scheme_len + 1;
    /* A second space or a tab would make the "exactly one space" rule moot. */
    if (*t == '\0' || *t == ' ' || *t == '\t')
        return false;
    *token = t;
    *token_len = strlen(t);
    return true;
}
