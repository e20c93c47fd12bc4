/* Unit tests for src/http/token.c: a known-answer token computed independently
 * (Python hmac/base64/json), round trips, the expiry and issue-time rules, the
 * pinned algorithm, key ids and ring rotation, claims that are read only after
 * the signature, garbage that must come back MALFORMED, scopes and the
 * authorization header syntax. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "http/token.h"

#define KID_NEW "kaaaaaaaa"
#define KID_OLD "kbbbbbbbb"
#define T_IAT 1700000000
#define T_EXP (T_IAT + TOKEN_LIFETIME_S)

/* HS256 over Python's json.dumps(separators=(',',':')) of the header
 * {"alg":"HS256","typ":"JWT","kid":"kaaaaaaaa"} and the payload
 * {"iss":"taxd","sub":"client-1","tid":"tenant-1","scope":"reports accounts",
 *  "iat":1700000000,"exp":1700086400}, key 32 bytes of 0x11. */
static const char kat_token[] =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImthYWFhYWFhYSJ9."
    "eyJpc3MiOiJ0YXhkIiwic3ViIjoiY2xpZW50LTEiLCJ0aWQiOiJ0ZW5hbnQtMSIsInNjb3BlIjoicmVwb3J0cyBh"
    "Y2NvdW50cyIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDg2NDAwfQ."
    "Ri1uPoYR2ct-lpjfpqzLt5yM4UBBS2dhxeDyo-sbJkY";

static const char good_header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}";
static const char good_payload[] =
    "{\"iss\":\"taxd\",\"sub\":\"client-1\",\"tid\":\"tenant-1\",\"iat\":1700000000,"
    "\"exp\":1700086400}";

struct fixture {
    keys_ring_t ring; /* new key 0x11.., old key 0x22.. */
    token_signer_t *signer;
};

static void ring_init(keys_ring_t *r)
{
    memset(r, 0, sizeof *r);
    r->count = 2;
    strcpy(r->kid[0], KID_NEW);
    strcpy(r->kid[1], KID_OLD);
    memset(r->key[0], 0x11, KEYS_KEY_LEN);
    memset(r->key[1], 0x22, KEYS_KEY_LEN);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    ring_init(&f->ring);
    f->signer = token_signer_new(&f->ring);
    if (f->signer == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    token_signer_free(f->signer);
    free(f);
    return 0;
}

/* Builds "<b64url header>.<b64url payload>.<b64url HMAC-SHA256(key, ...)>"
 * from raw JSON text, so tests can sign headers token_sign never writes. */
static char *make_token(const char *header, const char *payload, const uint8_t key[32])
{
    size_t hl = strlen(header), pl = strlen(payload);
    size_t cap = CRYPTO_BASE64_LEN(hl) + CRYPTO_BASE64_LEN(pl) + CRYPTO_BASE64_LEN(32);
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n = crypto_base64url_encode(header, hl, out, cap);
    out[n++] = '.';
    n += crypto_base64url_encode(payload, pl, out + n, cap - n);
    uint8_t mac[32];
    assert_int_equal(crypto_hmac_sha256(key, 32, out, n, mac), 0);
    out[n++] = '.';
    crypto_base64url_encode(mac, sizeof mac, out + n, cap - n);
    return out;
}

static token_status_t verify_str(const struct fixture *f, const char *token, int64_t now,
                                 token_claims_t *c)
{
    return token_verify(f->signer, token, strlen(token), now, c);
}

static token_claims_t sample_claims(void)
{
    token_claims_t c;
    memset(&c, 0, sizeof c);
    strcpy(c.tenant_id, "tenant-1");
    strcpy(c.client_id, "client-1");
    c.scopes = SCOPE_REPORTS | SCOPE_ACCOUNTS;
    c.issued_at = T_IAT;
    c.expires_at = T_EXP;
    return c;
}

/* Decodes the payload part of token into buf. */
static void payload_of(const char *token, char *buf, size_t cap)
{
    const char *a = strchr(token, '.');
    const char *b = strchr(a + 1, '.');
    size_t n = 0;
    assert_int_equal(
        crypto_base64url_decode(a + 1, (size_t)(b - a - 1), (uint8_t *)buf, cap - 1, &n), 0);
    buf[n] = '\0';
}

/* ---- signing ---- */

static void test_sign_known_answer(void **state)
{
    struct fixture *f = *state;
    token_claims_t c = sample_claims();
    char *t = token_sign(f->signer, &c);
    assert_non_null(t);
    assert_string_equal(t, kat_token);
    free(t);
    token_claims_t got;
    assert_int_equal(verify_str(f, kat_token, T_IAT, &got), TOKEN_OK);
}

static void test_sign_verify_round_trip(void **state)
{
    struct fixture *f = *state;
    token_claims_t c = sample_claims();
    strcpy(c.tenant_id, "9b2f3c1e-0000-4000-8000-000000000001");
    memset(c.client_id, 'c', TOKEN_ID_MAX - 1); /* the longest id allowed */
    c.client_id[TOKEN_ID_MAX - 1] = '\0';
    c.scopes = SCOPE_ALL;
    char *t = token_sign(f->signer, &c);
    assert_non_null(t);
    token_claims_t got;
    memset(&got, 0xee, sizeof got);
    assert_int_equal(verify_str(f, t, T_IAT + 10, &got), TOKEN_OK);
    assert_string_equal(got.tenant_id, c.tenant_id);
    assert_string_equal(got.client_id, c.client_id);
    assert_int_equal(got.scopes, SCOPE_ALL);
    assert_int_equal(got.issued_at, T_IAT);
    assert_int_equal(got.expires_at, T_EXP);
    free(t);
}

static void test_sign_without_scopes_omits_claim(void **state)
{
    struct fixture *f = *state;
    token_claims_t c = sample_claims();
    c.scopes = 0;
    char *t = token_sign(f->signer, &c);
    assert_non_null(t);
    char payload[512];
    payload_of(t, payload, sizeof payload);
    assert_string_equal(payload, "{\"iss\":\"taxd\",\"sub\":\"client-1\",\"tid\":\"tenant-1\","
                                 "\"iat\":1700000000,\"exp\":1700086400}");
    token_claims_t got;
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    assert_int_equal(got.scopes, 0);
    free(t);
}

static void test_sign_refuses_bad_claims(void **state)
{
    struct fixture *f = *state;
    token_claims_t c = sample_claims();
    c.tenant_id[0] = '\0';
    assert_null(token_sign(f->signer, &c));
    c = sample_claims();
    memset(c.client_id, 'x', TOKEN_ID_MAX); /* no NUL inside the array */
    assert_null(token_sign(f->signer, &c));
    c = sample_claims();
    c.scopes = 1u << 6;
    assert_null(token_sign(f->signer, &c));
    c = sample_claims();
    assert_null(token_sign(NULL, &c));
    assert_null(token_sign(f->signer, NULL));
}

static void test_signer_new_refuses_bad_rings(void **state)
{
    (void)state;
    keys_ring_t r;
    ring_init(&r);
    r.count = 0;
    assert_null(token_signer_new(&r));
    r.count = KEYS_RING_MAX + 1;
    assert_null(token_signer_new(&r));
    ring_init(&r);
    r.kid[1][0] = '\0';
    assert_null(token_signer_new(&r));
    ring_init(&r);
    memset(r.kid[0], 'k', KEYS_KID_MAX); /* unterminated */
    assert_null(token_signer_new(&r));
    assert_null(token_signer_new(NULL));
    token_signer_free(NULL);
}

/* ---- time ---- */

static void test_expiry_boundary(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    assert_int_equal(verify_str(f, kat_token, T_EXP - 1, &got), TOKEN_OK);
    assert_int_equal(verify_str(f, kat_token, T_EXP, &got), TOKEN_EXPIRED);
    assert_int_equal(verify_str(f, kat_token, T_EXP + 100000, &got), TOKEN_EXPIRED);
}

static void test_issued_in_future(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    /* Up to 60 s of clock skew is tolerated. */
    assert_int_equal(verify_str(f, kat_token, T_IAT - 60, &got), TOKEN_OK);
    assert_int_equal(verify_str(f, kat_token, T_IAT - 61, &got), TOKEN_NOT_YET_VALID);
    assert_int_equal(verify_str(f, kat_token, INT64_MIN, &got), TOKEN_NOT_YET_VALID);
}

/* Signs a payload with the KAT's claims plus `extra` (",\"nbf\":..." etc.)
 * and iat/exp as given, under the ring's signing key. */
static char *token_with(const struct fixture *f, long long iat, long long exp, const char *extra)
{
    char payload[512];
    snprintf(payload, sizeof payload,
             "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":%lld,\"exp\":%lld%s}", iat,
             exp, extra);
    return make_token(good_header, payload, f->ring.key[0]);
}

static void test_not_before_in_future(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    char *t = token_with(f, T_IAT, T_EXP, ",\"nbf\":1700003600"); /* iat + 1 h */
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_NOT_YET_VALID);
    assert_int_equal(verify_str(f, t, T_IAT + 3600 - TOKEN_CLOCK_SKEW_S - 1, &got),
                     TOKEN_NOT_YET_VALID);
    assert_int_equal(verify_str(f, t, INT64_MIN, &got), TOKEN_NOT_YET_VALID);
    /* The same skew as iat: a little ahead of our clock is accepted. */
    assert_int_equal(verify_str(f, t, T_IAT + 3600 - TOKEN_CLOCK_SKEW_S, &got), TOKEN_OK);
    assert_int_equal(verify_str(f, t, T_IAT + 3600, &got), TOKEN_OK);
    free(t);
}

static void test_not_before_in_past(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    char *t = token_with(f, T_IAT, T_EXP, ",\"nbf\":1699999000");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    assert_int_equal(verify_str(f, t, T_EXP, &got), TOKEN_EXPIRED); /* nbf does not extend exp */
    free(t);
    t = token_with(f, T_IAT, T_EXP, ",\"nbf\":-9223372036854775808");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    free(t);
}

static void test_not_before_must_be_integer(void **state)
{
    struct fixture *f = *state;
    const char *bad[] = {
        ",\"nbf\":\"1699999000\"", ",\"nbf\":1699999000.0", ",\"nbf\":1.7e9",
        ",\"nbf\":null",         ",\"nbf\":true",          ",\"nbf\":[1699999000]",
    };
    token_claims_t got;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = token_with(f, T_IAT, T_EXP, bad[i]);
        token_status_t st = verify_str(f, t, T_IAT, &got);
        if (st != TOKEN_BAD_CLAIMS)
            fail_msg("nbf %s gave %s", bad[i], token_status_name(st));
        free(t);
    }
}

/* We never sign a token that lasts longer than TOKEN_LIFETIME_S, so one that
 * claims to (a stolen key minting long-lived tokens) is refused. */
static void test_lifetime_bounded(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    char *t = token_with(f, T_IAT, T_IAT + TOKEN_LIFETIME_S, "");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    free(t);
    t = token_with(f, T_IAT, T_IAT + TOKEN_LIFETIME_S + 1, "");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_CLAIMS);
    free(t);
    t = token_with(f, T_IAT, T_IAT + 10LL * 365 * 86400, ""); /* ten years */
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_CLAIMS);
    free(t);
    /* The sum iat + lifetime must not overflow on the way. */
    t = token_with(f, INT64_MAX - 10, INT64_MAX, "");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_NOT_YET_VALID);
    free(t);
    t = token_with(f, INT64_MIN, INT64_MAX, "");
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_CLAIMS);
    free(t);
}

/* ---- tampering ---- */

static void test_tampered_payload_rejected(void **state)
{
    struct fixture *f = *state;
    /* The KAT's signature on a payload naming another tenant. */
    char *other = make_token(good_header,
                             "{\"iss\":\"taxd\",\"sub\":\"client-1\",\"tid\":\"tenant-2\","
                             "\"scope\":\"reports accounts\",\"iat\":1700000000,"
                             "\"exp\":1700086400}",
                             f->ring.key[0]);
    const char *kat_sig = strrchr(kat_token, '.');
    char *forged = malloc(strlen(other) + 64);
    assert_non_null(forged);
    strcpy(forged, other);
    strcpy(strrchr(forged, '.'), kat_sig);
    token_claims_t got;
    assert_int_equal(verify_str(f, forged, T_IAT, &got), TOKEN_BAD_SIGNATURE);
    assert_int_equal(verify_str(f, other, T_IAT, &got), TOKEN_OK); /* control */
    assert_string_equal(got.tenant_id, "tenant-2");
    free(other);
    free(forged);
}

static void test_tampered_signature_rejected(void **state)
{
    struct fixture *f = *state;
    char t[sizeof kat_token];
    token_claims_t got;
    size_t sig = (size_t)(strrchr(kat_token, '.') - kat_token) + 1;
    /* Every signature character but the last (whose low bits must be zero) is
     * swapped for another in the alphabet. */
    for (size_t i = sig; i + 1 < sizeof kat_token - 1; i++) {
        strcpy(t, kat_token);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        if (verify_str(f, t, T_IAT, &got) != TOKEN_BAD_SIGNATURE)
            fail_msg("signature change at %zu accepted", i);
    }
    /* A shorter signature, still well-formed base64url. */
    strcpy(t, kat_token);
    t[strlen(t) - 4] = '\0';
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_SIGNATURE);
    /* The signature of another message under the right key. */
    char *x = make_token(good_header, good_payload, f->ring.key[0]);
    strcpy(t, kat_token);
    strcpy(strrchr(t, '.'), strrchr(x, '.'));
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_SIGNATURE);
    free(x);
}

static void test_signature_checked_before_claims(void **state)
{
    struct fixture *f = *state;
    uint8_t wrong[32];
    memset(wrong, 0x33, sizeof wrong);
    token_claims_t got;
    /* Expired, claim-less or premature payloads under a wrong key all report
     * the signature, not what the unverified payload says. */
    const char *payloads[] = {
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1,\"exp\":2}",
        "{}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":9999999999,\"exp\":99999999999}",
    };
    for (size_t i = 0; i < 3; i++) {
        char *t = make_token(good_header, payloads[i], wrong);
        assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_SIGNATURE);
        free(t);
    }
}

/* ---- header ---- */

static void test_algorithm_pinned(void **state)
{
    struct fixture *f = *state;
    const char *headers[] = {
        "{\"alg\":\"none\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS512\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"hs256\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS256 \",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":null,\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":[\"HS256\"],\"kid\":\"" KID_NEW "\"}",
        "{\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWS\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS256\",\"typ\":1,\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS256\",\"kid\":\"" KID_NEW "\",\"crit\":[\"b64\"]}",
    };
    token_claims_t got;
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        /* A signature that is right for the bytes, with the right key. */
        char *t = make_token(headers[i], good_payload, f->ring.key[0]);
        token_status_t st = verify_str(f, t, T_IAT, &got);
        if (st != TOKEN_BAD_ALGORITHM)
            fail_msg("header %zu gave %s", i, token_status_name(st));
        free(t);
    }
    /* alg none with an empty signature is not even three parts of base64url. */
    char *t = make_token(headers[0], good_payload, f->ring.key[0]);
    *(strrchr(t, '.') + 1) = '\0';
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_MALFORMED);
    free(t);
    /* typ is optional. */
    t = make_token("{\"alg\":\"HS256\",\"kid\":\"" KID_NEW "\"}", good_payload, f->ring.key[0]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    free(t);
}

static void test_unknown_kid_rejected(void **state)
{
    struct fixture *f = *state;
    const char *headers[] = {
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"kcccccccc\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"kaaaaaaa\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"kaaaaaaaaa\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":7}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
    };
    token_claims_t got;
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char *t = make_token(headers[i], good_payload, f->ring.key[0]);
        token_status_t st = verify_str(f, t, T_IAT, &got);
        if (st != TOKEN_UNKNOWN_KEY)
            fail_msg("header %zu gave %s", i, token_status_name(st));
        free(t);
    }
}

static void test_kid_selects_its_own_key(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    /* The new kid with the old key's signature. */
    char *t = make_token(good_header, good_payload, f->ring.key[1]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_SIGNATURE);
    free(t);
}

static void test_older_ring_key_still_verifies(void **state)
{
    struct fixture *f = *state;
    /* Before rotation the old key was first and signed. */
    keys_ring_t before;
    memset(&before, 0, sizeof before);
    before.count = 1;
    strcpy(before.kid[0], KID_OLD);
    memcpy(before.key[0], f->ring.key[1], KEYS_KEY_LEN);
    token_signer_t *old_signer = token_signer_new(&before);
    assert_non_null(old_signer);
    token_claims_t c = sample_claims();
    char *t = token_sign(old_signer, &c);
    assert_non_null(t);
    token_claims_t got;
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    assert_string_equal(got.tenant_id, "tenant-1");
    /* And a signer that knows only the new key refuses it. */
    keys_ring_t after = f->ring;
    after.count = 1;
    token_signer_t *new_only = token_signer_new(&after);
    assert_non_null(new_only);
    assert_int_equal(token_verify(new_only, t, strlen(t), T_IAT, &got), TOKEN_UNKNOWN_KEY);
    /* The current signer signs with the first key only. */
    char *t2 = token_sign(f->signer, &c);
    assert_non_null(t2);
    assert_int_equal(token_verify(new_only, t2, strlen(t2), T_IAT, &got), TOKEN_OK);
    assert_int_equal(token_verify(old_signer, t2, strlen(t2), T_IAT, &got), TOKEN_UNKNOWN_KEY);
    free(t);
    free(t2);
    token_signer_free(old_signer);
    token_signer_free(new_only);
}

/* ---- claims ---- */

static void test_bad_claims_under_valid_signature(void **state)
{
    struct fixture *f = *state;
    const char *payloads[] = {
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"tid\":\"t\",\"iat\":1700000000,\"exp\":1700086400}",
        "{\"sub\":\"c\",\"tid\":\"t\",\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"other\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"\",\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":5,\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1700000000}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1700000000,\"exp\":\"1700086400\"}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1700000000,\"exp\":1700086400.0}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"iat\":1.7e9,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"scope\":\"reports bogus\","
        "\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"scope\":\"\","
        "\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"scope\":[\"reports\"],"
        "\"iat\":1700000000,\"exp\":1700086400}",
    };
    token_claims_t got;
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char *t = make_token(good_header, payloads[i], f->ring.key[0]);
        token_status_t st = verify_str(f, t, T_IAT, &got);
        if (st != TOKEN_BAD_CLAIMS)
            fail_msg("payload %zu gave %s", i, token_status_name(st));
        free(t);
    }
}

/* The account-owner claim (issue 19): signed when set, read back, and
 * accepted only as a canonical uuid string. */
static void test_owner_claim(void **state)
{
    struct fixture *f = *state;
    token_claims_t c = sample_claims();
    strcpy(c.owner_uuid, "0d7f1c1e-2a3b-4c5d-8e9f-0123456789ab");
    char *t = token_sign(f->signer, &c);
    assert_non_null(t);
    token_claims_t got;
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    assert_string_equal(got.owner_uuid, c.owner_uuid);
    free(t);
    strcpy(c.owner_uuid, "not-a-uuid");
    assert_null(token_sign(f->signer, &c));
    const char *bad[] = {
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"aoi\":\"\","
        "\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"aoi\":5,"
        "\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"aoi\":\"0d7f1c1e-2a3b-4c5d-8e9f-0123456789abX\","
        "\"iat\":1700000000,\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"aoi\":\"0d7f1c1e-2a3b-4c5d-8e9f-0123456789aZ\","
        "\"iat\":1700000000,\"exp\":1700086400}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = make_token(good_header, bad[i], f->ring.key[0]);
        token_status_t st = verify_str(f, b, T_IAT, &got);
        if (st != TOKEN_BAD_CLAIMS)
            fail_msg("payload %zu gave %s", i, token_status_name(st));
        free(b);
    }
}

static void test_id_length_limits(void **state)
{
    struct fixture *f = *state;
    char payload[512], id[TOKEN_ID_MAX + 1];
    token_claims_t got;
    memset(id, 't', TOKEN_ID_MAX - 1);
    id[TOKEN_ID_MAX - 1] = '\0';
    snprintf(payload, sizeof payload,
             "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"%s\",\"iat\":1700000000,"
             "\"exp\":1700086400}",
             id);
    char *t = make_token(good_header, payload, f->ring.key[0]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_OK);
    assert_int_equal(strlen(got.tenant_id), TOKEN_ID_MAX - 1);
    free(t);
    strcat(id, "t"); /* TOKEN_ID_MAX characters: one too many */
    snprintf(payload, sizeof payload,
             "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"%s\",\"iat\":1700000000,"
             "\"exp\":1700086400}",
             id);
    t = make_token(good_header, payload, f->ring.key[0]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_BAD_CLAIMS);
    free(t);
}

static void test_duplicate_keys_and_nul_malformed(void **state)
{
    struct fixture *f = *state;
    token_claims_t got;
    char *t = make_token(good_header,
                         "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"tid\":\"u\","
                         "\"iat\":1700000000,\"exp\":1700086400}",
                         f->ring.key[0]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_MALFORMED);
    free(t);
    t = make_token("{\"alg\":\"HS256\",\"alg\":\"none\",\"kid\":\"" KID_NEW "\"}", good_payload,
                   f->ring.key[0]);
    assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_MALFORMED);
    free(t);
    /* \u0000 inside a string could make "HS256\0x" or "tenant\0x" compare as
     * something else in C: the parser refuses it outright. */
    const char *nul_headers[] = {
        "{\"alg\":\"HS256\\u0000\",\"typ\":\"JWT\",\"kid\":\"" KID_NEW "\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"kaaaaaaaa\\u0000x\"}",
    };
    for (size_t i = 0; i < 2; i++) {
        t = make_token(nul_headers[i], good_payload, f->ring.key[0]);
        assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_MALFORMED);
        free(t);
    }
    const char *nul_payloads[] = {
        "{\"iss\":\"taxd\",\"sub\":\"c\\u0000d\",\"tid\":\"t\",\"iat\":1700000000,"
        "\"exp\":1700086400}",
        "{\"iss\":\"taxd\",\"sub\":\"c\",\"tid\":\"t\",\"scope\":\"reports\\u0000assets\","
        "\"iat\":1700000000,\"exp\":1700086400}",
    };
    for (size_t i = 0; i < 2; i++) {
        t = make_token(good_header, nul_payloads[i], f->ring.key[0]);
        assert_int_equal(verify_str(f, t, T_IAT, &got), TOKEN_MALFORMED);
        free(t);
    }
}

/* ---- garbage ---- */

static void test_garbage_is_malformed(void **state)
{
    struct fixture *f = *state;
    const char *inputs[] = {
        "",
        ".",
        "..",
        "...",
        "abc",
        "a.b",
        "a.b.c.d",
        "eyJ.eyJ.x.y",
        "a*b.c.d",
        "eyJhbGciOiJIUzI1NiJ9.eyJ9=.abc",       /* padding */
        "eyJhbGciOiJIUzI1NiJ9==.e30.abc",       /* padding */
        "eyJhbGciOiJIUzI1NiJ9.e30.a",           /* len % 4 == 1 */
        "eyJhbGciOiJIUzI1NiJ9.e30.ab+/",        /* base64, not base64url */
        "bm90IGpzb24.bm90IGpzb24.AAAA",         /* "not json" */
        "W10.e30.AAAA",                         /* header [] */
        "e30.W10.AAAA",                         /* payload [] */
        "InN0ciI.e30.AAAA",                     /* header "str" */
        ".e30.AAAA",                            /* empty header */
        "e30..AAAA",                            /* empty payload */
        "e30.e30.",                             /* empty signature */
        " e30.e30.AAAA",
        "e30.e30.AAAA ",
    };
    token_claims_t got;
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        token_status_t st = verify_str(f, inputs[i], T_IAT, &got);
        if (st != TOKEN_MALFORMED)
            fail_msg("input %zu (\"%s\") gave %s", i, inputs[i], token_status_name(st));
    }
    assert_int_equal(token_verify(f->signer, NULL, 0, T_IAT, &got), TOKEN_MALFORMED);
    /* len bounds the read: cut by one character, the KAT's signature ends in
     * non-zero spare bits, which no canonical base64url has. */
    assert_int_equal(token_verify(f->signer, kat_token, strlen(kat_token) - 1, T_IAT, &got),
                     TOKEN_MALFORMED);
    assert_int_equal(token_verify(f->signer, kat_token, 10, T_IAT, &got), TOKEN_MALFORMED);
    /* An embedded NUL is outside base64url. */
    char nul[] = "e30.e\0.AAAA";
    assert_int_equal(token_verify(f->signer, nul, sizeof nul - 1, T_IAT, &got), TOKEN_MALFORMED);
    /* Very long input is refused without being decoded. */
    size_t big = 100000;
    char *huge = malloc(big + 1);
    assert_non_null(huge);
    memset(huge, 'A', big);
    huge[10] = '.';
    huge[20] = '.';
    huge[big] = '\0';
    assert_int_equal(verify_str(f, huge, T_IAT, &got), TOKEN_MALFORMED);
    free(huge);
}

static void test_random_inputs_never_accepted(void **state)
{
    struct fixture *f = *state;
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_..=+/ {}\"";
    uint8_t rnd[200];
    token_claims_t got;
    for (int round = 0; round < 3000; round++) {
        assert_int_equal(crypto_random_bytes(rnd, sizeof rnd), 0);
        size_t len = rnd[0] % 150;
        char t[160];
        for (size_t i = 0; i < len; i++)
            t[i] = alphabet[rnd[i + 1] % (sizeof alphabet - 1)];
        t[len] = '\0';
        token_status_t st = token_verify(f->signer, t, len, T_IAT, &got);
        assert_int_not_equal(st, TOKEN_OK);
    }
    /* Mutations of a valid token: flip one byte anywhere. */
    for (size_t i = 0; i < sizeof kat_token - 1; i++) {
        char t[sizeof kat_token];
        strcpy(t, kat_token);
        t[i] ^= 0x01;
        token_status_t st = verify_str(f, t, T_IAT, &got);
        if (st == TOKEN_OK)
            fail_msg("flip at %zu accepted", i);
    }
}

/* ---- scopes ---- */

static void test_scopes_parse(void **state)
{
    (void)state;
    unsigned s = 99;
    const char *bad = NULL;
    size_t bad_len = 0;
    assert_int_equal(scopes_parse("reports,accounts", &s, &bad, &bad_len), 0);
    assert_int_equal(s, SCOPE_REPORTS | SCOPE_ACCOUNTS);
    assert_int_equal(scopes_parse("reports accounts", &s, &bad, &bad_len), 0);
    assert_int_equal(s, SCOPE_REPORTS | SCOPE_ACCOUNTS);
    assert_int_equal(scopes_parse(" , tax-documents,, inventory ", &s, &bad, &bad_len), 0);
    assert_int_equal(s, SCOPE_TAX_DOCUMENTS | SCOPE_INVENTORY);
    assert_int_equal(scopes_parse("assets assets", &s, &bad, &bad_len), 0);
    assert_int_equal(s, SCOPE_ASSETS);
    assert_int_equal(scopes_parse("", &s, &bad, &bad_len), 0);
    assert_int_equal(s, 0);
    assert_int_equal(scopes_parse(
                         "reports,accounts,assets,transactions,inventory,tax-documents", &s, &bad,
                         &bad_len),
                     0);
    assert_int_equal(s, SCOPE_ALL);

    const char *text = "reports,bogus,assets";
    s = 77;
    assert_int_equal(scopes_parse(text, &s, &bad, &bad_len), -1);
    assert_ptr_equal(bad, text + 8);
    assert_int_equal(bad_len, 5);
    assert_int_equal(s, 77); /* untouched on failure */
    const char *cases[] = {"Reports", "report", "reportsx", "tax_documents", "reports;assets"};
    size_t lens[] = {7, 6, 8, 13, 14};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(scopes_parse(cases[i], &s, &bad, &bad_len), -1);
        assert_ptr_equal(bad, cases[i]);
        assert_int_equal(bad_len, lens[i]);
    }
}

static void test_scopes_format(void **state)
{
    (void)state;
    char buf[128];
    scopes_format(SCOPE_ALL, buf, sizeof buf);
    assert_string_equal(buf, "reports accounts assets transactions inventory tax-documents");
    scopes_format(SCOPE_TAX_DOCUMENTS | SCOPE_REPORTS, buf, sizeof buf);
    assert_string_equal(buf, "reports tax-documents");
    scopes_format(0, buf, sizeof buf);
    assert_string_equal(buf, "");
    /* Too small: whole names only. */
    scopes_format(SCOPE_REPORTS | SCOPE_ACCOUNTS | SCOPE_ASSETS, buf, 17);
    assert_string_equal(buf, "reports accounts");
    scopes_format(SCOPE_REPORTS | SCOPE_ACCOUNTS | SCOPE_ASSETS, buf, 16);
    assert_string_equal(buf, "reports");
    scopes_format(SCOPE_REPORTS, buf, 3);
    assert_string_equal(buf, "");
    /* Every set survives format then parse. */
    for (unsigned set = 0; set <= SCOPE_ALL; set++) {
        unsigned back = 999;
        scopes_format(set, buf, sizeof buf);
        assert_int_equal(scopes_parse(buf, &back, NULL, NULL), 0);
        assert_int_equal(back, set);
    }
}

/* ---- authorization header ---- */

static void test_parse_bearer(void **state)
{
    (void)state;
    const char *t = NULL;
    size_t n = 0;
    const char *good[] = {"Bearer abc", "bearer abc", "BEARER abc", "bEaReR abc"};
    for (size_t i = 0; i < 4; i++) {
        t = NULL;
        n = 0;
        assert_true(token_parse_bearer(good[i], &t, &n));
        assert_ptr_equal(t, good[i] + 7);
        assert_int_equal(n, 3);
    }
    const char *bad[] = {"Bearer", "Bearer ", "Basic x", "Bearerx", "Bearer  x", "",
                         " Bearer x", "Bearer\tx", "Bearer \tx", "Bear x", "Bearer: x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (token_parse_bearer(bad[i], &t, &n))
            fail_msg("accepted \"%s\"", bad[i]);
    assert_false(token_parse_bearer(NULL, &t, &n));
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(token_status_name(TOKEN_OK), "ok");
    assert_string_equal(token_status_name(TOKEN_MALFORMED), "malformed");
    assert_string_equal(token_status_name(TOKEN_BAD_ALGORITHM), "bad_algorithm");
    assert_string_equal(token_status_name(TOKEN_UNKNOWN_KEY), "unknown_key");
    assert_string_equal(token_status_name(TOKEN_BAD_SIGNATURE), "bad_signature");
    assert_string_equal(token_status_name(TOKEN_EXPIRED), "expired");
    assert_string_equal(token_status_name(TOKEN_NOT_YET_VALID), "not_yet_valid");
    assert_string_equal(token_status_name(TOKEN_BAD_CLAIMS), "bad_claims");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_sign_known_answer),
        T(test_sign_verify_round_trip),
        T(test_sign_without_scopes_omits_claim),
        T(test_sign_refuses_bad_claims),
        cmocka_unit_test(test_signer_new_refuses_bad_rings),
        T(test_expiry_boundary),
        T(test_issued_in_future),
        T(test_not_before_in_future),
        T(test_not_before_in_past),
        T(test_not_before_must_be_integer),
        T(test_lifetime_bounded),
        T(test_tampered_payload_rejected),
        T(test_tampered_signature_rejected),
        T(test_signature_checked_before_claims),
        T(test_algorithm_pinned),
        T(test_unknown_kid_rejected),
        T(test_kid_selects_its_own_key),
        T(test_older_ring_key_still_verifies),
        T(test_bad_claims_under_valid_signature),
        T(test_owner_claim),
        T(test_id_length_limits),
        T(test_duplicate_keys_and_nul_malformed),
        T(test_garbage_is_malformed),
        T(test_random_inputs_never_accepted),
        cmocka_unit_test(test_scopes_parse),
        cmocka_unit_test(test_scopes_format),
        cmocka_unit_test(test_parse_bearer),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
