/* Fuzzes bearer-header parsing and JWT verification. Input: a token, or an
 * authorization header value ("Bearer <token>").
 *
 * Properties (abort on violation):
 *  - a token verifies only when its third part is the base64url HMAC-SHA256,
 *    under the ring's key, of its first two parts exactly as sent (checked
 *    here with the crypto primitives directly, not through token.c);
 *  - a verified token's claims obey the time rules at "now": exp > now,
 *    iat and nbf at most TOKEN_CLOCK_SKEW_S ahead, exp at most
 *    TOKEN_LIFETIME_S after iat, and non-empty ids;
 *  - token_check_times agrees with token_verify on a verified token;
 *  - the bearer parser's token lies inside the header, is non-empty, and
 *    follows "Bearer" (any case) and exactly one space.
 * The seeds include genuine tokens (key: 32 bytes of 7, kid "kfuzz"), so the
 * claim checks are reached, not only the signature check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/crypto.h"
#include "http/token.h"

#define NOW 1700000000

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

static const uint8_t *fuzz_key(void)
{
    static uint8_t key[KEYS_KEY_LEN];
    memset(key, 7, sizeof key);
    return key;
}

/* The reference: is sig the MAC of the signing input under the key? */
static int genuinely_signed(const char *token, size_t len)
{
    const char *dot = memchr(token, '.', len);
    const char *dot2 = dot ? memchr(dot + 1, '.', len - (size_t)(dot + 1 - token)) : NULL;
    if (dot2 == NULL)
        return 0;
    uint8_t mac[CRYPTO_SHA256_LEN], given[CRYPTO_SHA256_LEN + 3];
    size_t got = 0;
    if (crypto_hmac_sha256(fuzz_key(), KEYS_KEY_LEN, token, (size_t)(dot2 - token), mac) != 0)
        FAIL("reference MAC failed");
    if (crypto_base64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - token), given, sizeof given,
                                &got) != 0)
        return 0;
    return got == sizeof mac && memcmp(given, mac, sizeof mac) == 0;
}

static void check_verified(const token_claims_t *c)
{
    if (c->expires_at <= NOW || c->issued_at > NOW + TOKEN_CLOCK_SKEW_S ||
        (c->not_before != INT64_MIN && c->not_before > NOW + TOKEN_CLOCK_SKEW_S) ||
        c->expires_at - c->issued_at > TOKEN_LIFETIME_S || c->tenant_id[0] == '\0' ||
        c->client_id[0] == '\0')
        FAIL("a verified token breaks a claim rule");
    if (token_check_times(c, NOW) != TOKEN_OK || token_check_times(c, c->expires_at) != TOKEN_EXPIRED)
        FAIL("the time rules disagree");
}

static void verify(const token_signer_t *signer, const char *token, size_t len)
{
    token_claims_t claims;
    if (token_verify(signer, token, len, NOW, &claims) != TOKEN_OK)
        return;
    if (!genuinely_signed(token, len))
        FAIL("a forged token verified");
    check_verified(&claims);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static token_signer_t *signer;
    if (signer == NULL) {
        keys_ring_t ring = {.count = 1};
        strcpy(ring.kid[0], "kfuzz");
        memcpy(ring.key[0], fuzz_key(), KEYS_KEY_LEN);
        signer = token_signer_new(&ring);
    }
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *token;
    size_t len;
    if (token_parse_bearer(text, &token, &len)) {
        size_t header_len = strlen(text);
        if (len == 0 || token < text + 7 || token + len > text + header_len ||
            strncasecmp(text, "Bearer ", 7) != 0 || token != text + 7)
            FAIL("the bearer parser's token is not where it should be");
        verify(signer, token, len);
    }
    verify(signer, (const char *)data, size);
    free(text);
    return 0;
}
