/* crypto: the only door to OpenSSL. Random bytes, SHA-256, HMAC-SHA256 (EVP_MAC),
 * constant-time comparison, base64 / base64url, AES-256-GCM. Nothing here is
 * hand-rolled cryptography: every primitive is OpenSSL 3's.
 *
 * All functions are thread-safe. Output buffers are owned by the caller. */
#ifndef TAXD_CORE_CRYPTO_H
#define TAXD_CORE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_LEN 32
#define CRYPTO_AEAD_KEY_LEN 32
#define CRYPTO_AEAD_NONCE_LEN 12
#define CRYPTO_AEAD_TAG_LEN 16
#define CRYPTO_AEAD_OVERHEAD (CRYPTO_AEAD_NONCE_LEN + CRYPTO_AEAD_TAG_LEN)

/* Bytes needed for the NUL-terminated encoding of n input bytes. */
#define CRYPTO_BASE64_LEN(n) ((((n) + 2) / 3) * 4 + 1)
#define CRYPTO_HEX_LEN(n) ((n) * 2 + 1)

/* Fills buf with len bytes from the CSPRNG. Returns 0, or -1 on failure. */
int crypto_random_bytes(void *buf, size_t len);

void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN]);

/* SHA-256 over data given in pieces (a digest of a whole table, row by row).
 * crypto_sha256_new returns NULL on failure; crypto_sha256_final writes the
 * digest and frees the context; crypto_sha256_free drops one unfinished
 * (NULL is fine). Update and final return 0, or -1 on failure. */
typedef struct crypto_sha256_ctx crypto_sha256_ctx_t;
crypto_sha256_ctx_t *crypto_sha256_new(void);
int crypto_sha256_update(crypto_sha256_ctx_t *ctx, const void *data, size_t len);
int crypto_sha256_final(crypto_sha256_ctx_t *ctx, uint8_t out[CRYPTO_SHA256_LEN]);
void crypto_sha256_free(crypto_sha256_ctx_t *ctx);

/* One-shot HMAC-SHA256. Returns 0, or -1 on failure. */
int crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                       uint8_t out[CRYPTO_SHA256_LEN]);

/* A key prepared once and used for many messages from many threads: the EVP_MAC
 * is fetched and keyed at creation, and each signature works on a duplicate of
 * that context. Created by crypto_hmac_key_new (NULL on failure), freed by
 * crypto_hmac_key_free. */
typedef struct crypto_hmac_key crypto_hmac_key_t;
crypto_hmac_key_t *crypto_hmac_key_new(const void *key, size_t key_len);
int crypto_hmac_key_sign(const crypto_hmac_key_t *key, const void *msg, size_t msg_len,
                         uint8_t out[CRYPTO_SHA256_LEN]);
void crypto_hmac_key_free(crypto_hmac_key_t *key);

/* Constant-time equality. Lengths are compared first (a length mismatch is false
 * without touching content); equal lengths compare every byte. */
bool crypto_equal(const void *a, size_t a_len, const void *b, size_t b_len);

/* Standard base64 with padding. Writes a NUL-terminated string into dst and
 * returns its length, or returns 0 when dst_cap < CRYPTO_BASE64_LEN(len) (and
 * len > 0). */
size_t crypto_base64_encode(const void *src, size_t len, char *dst, size_t dst_cap);
/* Strict decoding: rejects characters outside the alphabet, bad padding and
 * a length that is not a multiple of 4. Returns 0 and sets *out_len, or -1. */
int crypto_base64_decode(const char *src, size_t len, uint8_t *dst, size_t dst_cap,
                         size_t *out_len);

/* base64url (RFC 4648 §5) without padding, as JWTs use it. Encoding returns the
 * length written (NUL-terminated), 0 when dst is too small. Decoding rejects
 * padding, '+', '/', and impossible lengths (len % 4 == 1). */
size_t crypto_base64url_encode(const void *src, size_t len, char *dst, size_t dst_cap);
int crypto_base64url_decode(const char *src, size_t len, uint8_t *dst, size_t dst_cap,
                            size_t *out_len);

/* Lowercase hex. dst needs CRYPTO_HEX_LEN(len) bytes; always NUL-terminates. */
void crypto_hex_encode(const void *src, size_t len, char *dst);
/* The value (0..15) of one hex digit of either case, or -1. */
int crypto_hex_value(char c);

/* AES-256-GCM with a fresh random 96-bit nonce. sealed receives
 * nonce || ciphertext || tag and must hold len + CRYPTO_AEAD_OVERHEAD bytes.
 * aad may be NULL. Returns 0 or -1. */
int crypto_aead_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const void *aad, size_t aad_len,
                     const void *plain, size_t len, uint8_t *sealed);
/* Inverse of crypto_aead_seal; plain must hold sealed_len - CRYPTO_AEAD_OVERHEAD
 * bytes. Returns 0, or -1 when the input is short, altered or under another key. */
int crypto_aead_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const void *aad, size_t aad_len,
                     const uint8_t *sealed, size_t sealed_len, uint8_t *plain);

#endif
