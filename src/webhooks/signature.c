/* webhooks/signature: see signature.h. */
#include "webhooks/signature.h"

#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"

#define SIG_B64_LEN CRYPTO_BASE64_LEN(CRYPTO_SHA256_LEN) /* 44 + NUL */

static bool sign_one(const char *secret, const void *body, size_t len, char out[SIG_B64_LEN])
{
    uint8_t mac[CRYPTO_SHA256_LEN];
    return crypto_hmac_sha256(secret, strlen(secret), body, len, mac) == 0 &&
           crypto_base64_encode(mac, sizeof mac, out, SIG_B64_LEN) > 0;
}

static bool sign_keyed(const crypto_hmac_key_t *key, const void *body, size_t len,
                       char out[SIG_B64_LEN])
{
    uint8_t mac[CRYPTO_SHA256_LEN];
    return crypto_hmac_key_sign(key, body, len, mac) == 0 &&
           crypto_base64_encode(mac, sizeof mac, out, SIG_B64_LEN) > 0;
}

/* "v1=<sig>,v1=<sig>" with signature i made by sign(i). */
static char *join_signatures(size_t count, const void *const *keys, bool keyed,
                             const void *body, size_t len)
{
    if (count == 0)
        return NULL;
    size_t cap = count * (3 + SIG_B64_LEN + 1);
    char *header = malloc(cap);
    if (header == NULL)
        return NULL;
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        char sig[SIG_B64_LEN];
        bool ok = keyed ? sign_keyed(keys[i], body, len, sig) : sign_one(keys[i], body, len, sig);
        if (!ok) {
            free(header);
            return NULL;
        }
        if (i > 0)
            header[used++] = ',';
        memcpy(header + used, "v1=", 3);
        used += 3;
        size_t n = strlen(sig);
        memcpy(header + used, sig, n);
        used += n;
    }
    header[used] = '\0';
    return header;
}

char *signature_header(const char *const *secrets, size_t count, const void *body, size_t len)
{
    return join_signatures(count, (const void *const *)secrets, false, body, len);
}

char *signature_header_keyed(const crypto_hmac_key_t *const *keys, size_t count,
                             const void *body, size_t len)
{
    return join_signatures(count, (const void *const *)keys, true, body, len);
}

bool signature_verify(const char *header, const char *secret, const void *body, size_t len)
{
    char expected[SIG_B64_LEN];
    if (header == NULL || !sign_one(secret, body, len, expected))
        return false;
    size_t expected_len = strlen(expected);
    bool match = false;
    for (const char *p = header; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 3 && strncmp(p, "v1=", 3) == 0)
            match |= crypto_equal(p + 3, n - 3, expected, expected_len);
        p += n + (end != NULL);
    }
    return match;
}
