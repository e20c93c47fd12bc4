/* crypto: thin wrappers over OpenSSL 3. See crypto.h.
 *
 * Design and trade-offs:
 * - Every primitive (CSPRNG, SHA-256, HMAC, AES-GCM, constant-time compare) is
 *   OpenSSL's. HMAC goes through EVP_MAC because HMAC_CTX is deprecated in 3.0.
 *   A prepared key (crypto_hmac_key_t) fetches and keys the EVP_MAC once and
 *   duplicates that context per message: duplicating is cheaper than fetching
 *   and re-keying, and it leaves the shared context untouched, so one key can
 *   sign from many threads without a lock.
 * - The base64 codecs are written out here instead of wrapping EVP_DecodeBlock:
 *   that function keeps padding bytes in its output length, accepts embedded
 *   whitespace and knows no base64url, so a wrapper would be longer than the
 *   codec and harder to make strict. Encoding is not a cryptographic primitive,
 *   and strict decoding matters for us: the JWT signature is over the encoded
 *   text, so decoders reject every non-canonical form (bad padding, non-zero
 *   trailing bits, impossible lengths) to keep one encoding per byte string.
 *   The decoder's table lookups depend on the input characters; that is
 *   acceptable because nothing secret is decoded on a path an attacker can time
 *   repeatedly (key files are read once at start-up).
 * - AES-256-GCM takes a fresh random 96-bit nonce per message. With random
 *   nonces the usual bound is 2^32 messages per key, far beyond what one
 *   deployment seals (TINs). On a failed open the output buffer is wiped so
 *   unauthenticated plaintext never reaches the caller. */
#include "core/crypto.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

int crypto_random_bytes(void *buf, size_t len)
{
    uint8_t *p = buf;
    /* RAND_bytes takes an int: feed it in chunks so any size_t works. */
    while (len > 0) {
        int chunk = len > INT_MAX ? INT_MAX : (int)len;
        if (RAND_bytes(p, chunk) != 1)
            return -1;
        p += chunk;
        len -= (size_t)chunk;
    }
    return 0;
}

void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN])
{
    unsigned int out_len = 0;
    /* The header promises no failure: a SHA-256 that cannot run means the
     * library is unusable, and returning a wrong digest would be worse than
     * stopping. */
    if (EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) != 1 ||
        out_len != CRYPTO_SHA256_LEN)
        abort();
}

/* The context is OpenSSL's own, behind a type of ours so that no caller
 * includes OpenSSL. */
crypto_sha256_ctx_t *crypto_sha256_new(void)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        md = NULL;
    }
    return (crypto_sha256_ctx_t *)md;
}

int crypto_sha256_update(crypto_sha256_ctx_t *ctx, const void *data, size_t len)
{
    return EVP_DigestUpdate((EVP_MD_CTX *)ctx, data, len) == 1 ? 0 : -1;
}

int crypto_sha256_final(crypto_sha256_ctx_t *ctx, uint8_t out[CRYPTO_SHA256_LEN])
{
    unsigned int out_len = 0;
    int ok = EVP_DigestFinal_ex((EVP_MD_CTX *)ctx, out, &out_len) == 1 &&
             out_len == CRYPTO_SHA256_LEN;
    EVP_MD_CTX_free((EVP_MD_CTX *)ctx);
    return ok ? 0 : -1;
}

void crypto_sha256_free(crypto_sha256_ctx_t *ctx)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)ctx);
}

/* EVP_MAC rejects a NULL key pointer even with length 0; an empty HMAC key is
 * legal (RFC 2104), so point at a harmless byte instead. */
static const void *crypto_key_or_empty(const void *key, size_t key_len)
{
    static const uint8_t empty = 0;
    return key_len == 0 ? &empty : key;
}

int crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                       uint8_t out[CRYPTO_SHA256_LEN])
{
    crypto_hmac_key_t *k = crypto_hmac_key_new(key, key_len);
    if (k == NULL)
        return -1;
    int rc = crypto_hmac_key_sign(k, msg, msg_len, out);
    crypto_hmac_key_free(k);
    return rc;
}

struct crypto_hmac_key {
    EVP_MAC *mac;
    EVP_MAC_CTX *ctx; /* keyed, never updated: only duplicated */
};

crypto_hmac_key_t *crypto_hmac_key_new(const void *key, size_t key_len)
{
    if (key == NULL && key_len > 0)
        return NULL;
    crypto_hmac_key_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    k->mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
    if (k->mac != NULL)
        k->ctx = EVP_MAC_CTX_new(k->mac);
    if (k->ctx == NULL) {
        crypto_hmac_key_free(k);
        return NULL;
    }
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(k->ctx, crypto_key_or_empty(key, key_len), key_len, params) != 1) {
        crypto_hmac_key_free(k);
        return NULL;
    }
    return k;
}

int crypto_hmac_key_sign(const crypto_hmac_key_t *key, const void *msg, size_t msg_len,
                         uint8_t out[CRYPTO_SHA256_LEN])
{
    if (key == NULL || (msg == NULL && msg_len > 0))
        return -1;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(key->ctx);
    if (ctx == NULL)
        return -1;
    size_t out_len = 0;
    int ok = (msg_len == 0 || EVP_MAC_update(ctx, msg, msg_len) == 1) &&
             EVP_MAC_final(ctx, out, &out_len, CRYPTO_SHA256_LEN) == 1 &&
             out_len == CRYPTO_SHA256_LEN;
    EVP_MAC_CTX_free(ctx);
    return ok ? 0 : -1;
}

void crypto_hmac_key_free(crypto_hmac_key_t *key)
{
    if (key == NULL)
        return;
    EVP_MAC_CTX_free(key->ctx); /* cleanses the key schedule */
    EVP_MAC_free(key->mac);
    free(key);
}

bool crypto_equal(const void *a, size_t a_len, const void *b, size_t b_len)
{
    if (a_len != b_len)
        return false;
    if (a_len == 0)
        return true;
    return CRYPTO_memcmp(a, b, a_len) == 0;
}

/* ---- base64 ---- */

static const char crypto_b64_std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char crypto_b64_url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Length of the encoding of len bytes, without the NUL; 0 with *ok false when
 * it would overflow size_t. */
static size_t crypto_b64_encoded_len(size_t len, bool pad, bool *ok)
{
    *ok = len / 3 < (SIZE_MAX - 8) / 4;
    if (!*ok)
        return 0;
    size_t full = len / 3 * 4;
    size_t rest = len % 3;
    if (rest == 0)
        return full;
    return full + (pad ? 4 : rest + 1);
}

static size_t crypto_b64_encode(const char *alphabet, bool pad, const void *src, size_t len,
                                char *dst, size_t dst_cap)
{
    bool ok;
    size_t need = crypto_b64_encoded_len(len, pad, &ok);
    if (!ok || dst == NULL || dst_cap < need + 1 || (src == NULL && len > 0))
        return 0;
    const uint8_t *s = src;
    size_t o = 0;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        dst[o++] = alphabet[v >> 18 & 63];
        dst[o++] = alphabet[v >> 12 & 63];
        dst[o++] = alphabet[v >> 6 & 63];
        dst[o++] = alphabet[v & 63];
    }
    size_t rest = len - i;
    if (rest > 0) {
        uint32_t v = (uint32_t)s[i] << 16 | (rest == 2 ? (uint32_t)s[i + 1] << 8 : 0);
        dst[o++] = alphabet[v >> 18 & 63];
        dst[o++] = alphabet[v >> 12 & 63];
        if (rest == 2)
            dst[o++] = alphabet[v >> 6 & 63];
        if (pad) {
            if (rest == 1)
                dst[o++] = '=';
            dst[o++] = '=';
        }
    }
    dst[o] = '\0';
    return o;
}

size_t crypto_base64_encode(const void *src, size_t len, char *dst, size_t dst_cap)
{
    return crypto_b64_encode(crypto_b64_std, true, src, len, dst, dst_cap);
}

size_t crypto_base64url_encode(const void *src, size_t len, char *dst, size_t dst_cap)
{
    return crypto_b64_encode(crypto_b64_url, false, src, len, dst, dst_cap);
}

/* Value of c in the alphabet, or -1. */
static int crypto_b64_value(char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

/* Decodes unpadded text (len % 4 != 1, checked by the caller). Rejects
 * characters outside the alphabet and non-zero bits in the last character,
 * which would give a second encoding of the same bytes. */
static int crypto_b64_decode_body(const char *src, size_t len, bool url, uint8_t *dst,
                                  size_t dst_cap, size_t *out_len)
{
    size_t need = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    if (need > dst_cap || (dst == NULL && need > 0))
        return -1;
    uint32_t acc = 0;
    size_t bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = crypto_b64_value(src[i], url);
        if (v < 0)
            return -1;
        acc = (acc << 6 | (uint32_t)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            dst[o++] = (uint8_t)(acc >> bits);
        }
    }
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    *out_len = o;
    return 0;
}

int crypto_base64_decode(const char *src, size_t len, uint8_t *dst, size_t dst_cap,
                         size_t *out_len)
{
    if (out_len == NULL || (src == NULL && len > 0) || len % 4 != 0)
        return -1;
    size_t pad = 0;
    if (len > 0 && src[len - 1] == '=')
        pad = len > 1 && src[len - 2] == '=' ? 2 : 1;
    /* Padding completes the last quantum only: the body must not end short of
     * it. With the '=' removed, the body is 2 or 3 characters past a multiple
     * of 4, and any '=' left inside it fails the alphabet check. */
    return crypto_b64_decode_body(src, len - pad, false, dst, dst_cap, out_len);
}

int crypto_base64url_decode(const char *src, size_t len, uint8_t *dst, size_t dst_cap,
                            size_t *out_len)
{
    if (out_len == NULL || (src == NULL && len > 0) || len % 4 == 1)
        return -1;
    return crypto_b64_decode_body(src, len, true, dst, dst_cap, out_len);
}

void crypto_hex_encode(const void *src, size_t len, char *dst)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *s = src;
    for (size_t i = 0; i < len; i++) {
        dst[2 * i] = digits[s[i] >> 4];
        dst[2 * i + 1] = digits[s[i] & 15];
    }
    dst[2 * len] = '\0';
}

int crypto_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- AES-256-GCM ---- */

/* EVP lengths are ints. */
static bool crypto_fits_int(size_t n)
{
    return n <= (size_t)INT_MAX;
}

int crypto_aead_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const void *aad, size_t aad_len,
                     const void *plain, size_t len, uint8_t *sealed)
{
    if (key == NULL || sealed == NULL || (aad == NULL && aad_len > 0) ||
        (plain == NULL && len > 0) || !crypto_fits_int(aad_len) ||
        !crypto_fits_int(len + CRYPTO_AEAD_OVERHEAD))
        return -1;
    uint8_t *nonce = sealed;
    uint8_t *cipher = sealed + CRYPTO_AEAD_NONCE_LEN;
    uint8_t *tag = cipher + len;
    if (crypto_random_bytes(nonce, CRYPTO_AEAD_NONCE_LEN) != 0)
        return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return -1;
    int n = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
             (aad_len == 0 || EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aad_len) == 1) &&
             (len == 0 || EVP_EncryptUpdate(ctx, cipher, &n, plain, (int)len) == 1) &&
             EVP_EncryptFinal_ex(ctx, cipher + (len == 0 ? 0 : n), &n) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, CRYPTO_AEAD_TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

int crypto_aead_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const void *aad, size_t aad_len,
                     const uint8_t *sealed, size_t sealed_len, uint8_t *plain)
{
    if (key == NULL || sealed == NULL || sealed_len < CRYPTO_AEAD_OVERHEAD ||
        (aad == NULL && aad_len > 0) || !crypto_fits_int(aad_len) ||
        !crypto_fits_int(sealed_len))
        return -1;
    size_t len = sealed_len - CRYPTO_AEAD_OVERHEAD;
    if (plain == NULL && len > 0)
        return -1;
    const uint8_t *nonce = sealed;
    const uint8_t *cipher = sealed + CRYPTO_AEAD_NONCE_LEN;
    /* The ctrl takes a non-const pointer but only reads the tag. */
    uint8_t tag[CRYPTO_AEAD_TAG_LEN];
    memcpy(tag, cipher + len, sizeof tag);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return -1;
    int n = 0;
    uint8_t final_block[16];
    int ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) == 1 &&
             (aad_len == 0 || EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len) == 1) &&
             (len == 0 || EVP_DecryptUpdate(ctx, plain, &n, cipher, (int)len) == 1) &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, CRYPTO_AEAD_TAG_LEN, tag) == 1 &&
             EVP_DecryptFinal_ex(ctx, final_block, &n) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok && len > 0)
        OPENSSL_cleanse(plain, len);
    return ok ? 0 : -1;
}
