/* Fuzzes the webhook signature header (webhooks/signature.c). Input: four
 * fields separated by newlines: secret, second secret (empty: none), a
 * header value, and the body (the rest, newlines included).
 *
 * Properties (abort on violation):
 *  - the header made for the body under one or two secrets is "v1=<44
 *    base64 characters>" per secret, newest first, comma-separated, and
 *    verifies under each of its secrets, and the keyed variant gives the
 *    same bytes;
 *  - it does not verify under another secret, nor for the body with any
 *    byte changed, nor with a byte of a signature changed;
 *  - the fuzzed header verifies exactly when one of its comma-separated
 *    parts is "v1=" followed by the base64 HMAC-SHA256 of the body (the
 *    reference: split here, MAC with crypto_hmac_sha256). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "webhooks/signature.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

#define SIG_TEXT 44

/* Takes the next newline-terminated field as a NUL-terminated copy. */
static char *field(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - *p);
    char *out = malloc(n + 1);
    memcpy(out, *p, n);
    out[n] = '\0';
    *p = nl ? nl + 1 : end;
    return out;
}

static bool reference_verify(const char *header, const char *secret, const char *body, size_t len)
{
    uint8_t mac[CRYPTO_SHA256_LEN];
    char want[3 + CRYPTO_BASE64_LEN(CRYPTO_SHA256_LEN)] = "v1=";
    if (crypto_hmac_sha256(secret, strlen(secret), body, len, mac) != 0 ||
        crypto_base64_encode(mac, sizeof mac, want + 3, sizeof want - 3) != SIG_TEXT)
        FAIL("reference MAC failed");
    size_t want_len = strlen(want);
    for (const char *p = header;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == want_len && memcmp(p, want, n) == 0)
            return true;
        if (comma == NULL)
            return false;
        p = comma + 1;
    }
}

static void check_made(const char *s1, const char *s2, const char *body, size_t len)
{
    const char *secrets[2] = {s1, s2};
    size_t count = s2[0] != '\0' ? 2 : 1;
    char *header = signature_header(secrets, count, body, len);
    if (header == NULL)
        FAIL("no header for a body");
    if (strlen(header) != count * (3 + SIG_TEXT) + (count - 1) ||
        strncmp(header, "v1=", 3) != 0 || (count == 2 && strncmp(header + 3 + SIG_TEXT, ",v1=", 4) != 0))
        FAIL("the header is not v1=<sig>[,v1=<sig>]");
    crypto_hmac_key_t *keys[2] = {NULL, NULL};
    for (size_t i = 0; i < count; i++) {
        keys[i] = crypto_hmac_key_new(secrets[i], strlen(secrets[i]));
        if (keys[i] == NULL)
            FAIL("no key");
        if (!signature_verify(header, secrets[i], body, len))
            FAIL("a genuine header does not verify");
    }
    char *keyed = signature_header_keyed((const crypto_hmac_key_t *const *)keys, count, body, len);
    if (keyed == NULL || strcmp(keyed, header) != 0)
        FAIL("the keyed header differs");
    bool other_is_known = strcmp(s1, "other") == 0 || (count == 2 && strcmp(s2, "other") == 0);
    if (!other_is_known && signature_verify(header, "other", body, len))
        FAIL("a header verifies under a secret it was not made with");
    if (len > 0) {
        char *changed = malloc(len);
        memcpy(changed, body, len);
        changed[len / 2] ^= 0x01;
        if (signature_verify(header, s1, changed, len))
            FAIL("a header verifies for a changed body");
        free(changed);
    }
    for (size_t pos = 3; pos < 3 + SIG_TEXT - 1; pos += 7) {
        char saved = header[pos];
        header[pos] = saved == 'A' ? 'B' : 'A';
        if (count == 1 && signature_verify(header, s1, body, len))
            FAIL("a header with a changed signature verifies");
        header[pos] = saved;
    }
    free(keyed);
    for (size_t i = 0; i < count; i++)
        crypto_hmac_key_free(keys[i]);
    free(header);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char *s1 = field(&p, end), *s2 = field(&p, end), *header = field(&p, end);
    size_t len = (size_t)(end - p);
    char *body = malloc(len + 1);
    memcpy(body, p, len);
    body[len] = '\0';

    check_made(s1, s2, body, len);
    if (signature_verify(header, s1, body, len) != reference_verify(header, s1, body, len))
        FAIL("signature_verify disagrees with the reference");
    free(body);
    free(header);
    free(s2);
    free(s1);
    return 0;
}
