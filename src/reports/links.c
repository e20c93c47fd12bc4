/* reports/links: see links.h. The MAC covers the query values exactly as
 * they appear in the link (no re-encoding), so any change to a byte of the
 * id, the expiry or the nonce changes the message. Values whose shape is
 * wrong (an expiry that is not digits, a nonce or signature that does not
 * decode to its length) are refused before any MAC is computed: that
 * reveals nothing a client does not already know. */
#include "reports/links.h"

#include <stdbool.h>
#include <string.h>

#include "core/buf.h"

#define ID_MAX 64            /* report ids are UUIDs (36 characters) */
#define EXPIRES_DIGITS_MAX 18
#define NONCE_TEXT_MAX CRYPTO_BASE64_LEN(REPORT_LINK_NONCE_BYTES)
#define SIGNATURE_TEXT_MAX CRYPTO_BASE64_LEN(CRYPTO_SHA256_LEN)

/* The signed message "<id>\n<expires>\n<nonce>" into out. */
static bool link_message(const char *id, const char *expires, const char *nonce, buf_t *out)
{
    buf_puts(out, id);
    buf_putc(out, '\n');
    buf_puts(out, expires);
    buf_putc(out, '\n');
    buf_puts(out, nonce);
    return !out->overflow;
}

static int link_mac(const crypto_hmac_key_t *key, const char *id, const char *expires,
                    const char *nonce, uint8_t mac[CRYPTO_SHA256_LEN])
{
    char text[ID_MAX + EXPIRES_DIGITS_MAX + NONCE_TEXT_MAX + 4];
    buf_t msg = buf_over(text, sizeof text);
    if (!link_message(id, expires, nonce, &msg))
        return -1;
    return crypto_hmac_key_sign(key, msg.data, msg.len, mac);
}

int report_link_make(const crypto_hmac_key_t *key, const char *base_url, const char *kind,
                     const char *report_id, int64_t now_s, char *out, size_t cap,
                     int64_t *expires_s)
{
    char collection[64];
    buf_t c = buf_over(collection, sizeof collection);
    buf_puts(&c, "/v1/reports/");
    buf_puts(&c, kind);
    if (c.overflow)
        return -1;
    return report_link_make_at(key, base_url, collection, report_id, now_s, out, cap, expires_s);
}

int report_link_make_at(const crypto_hmac_key_t *key, const char *base_url,
                        const char *collection, const char *report_id, int64_t now_s, char *out,
                        size_t cap, int64_t *expires_s)
{
    uint8_t nonce_bytes[REPORT_LINK_NONCE_BYTES], mac[CRYPTO_SHA256_LEN];
    char nonce[NONCE_TEXT_MAX], signature[SIGNATURE_TEXT_MAX], expires[24];
    if (strlen(report_id) > ID_MAX ||
        crypto_random_bytes(nonce_bytes, sizeof nonce_bytes) != 0 ||
        crypto_base64url_encode(nonce_bytes, sizeof nonce_bytes, nonce, sizeof nonce) == 0)
        return -1;
    *expires_s = now_s + REPORT_LINK_TTL_S;
    buf_t e = buf_over(expires, sizeof expires);
    buf_put_i64(&e, *expires_s);
    if (link_mac(key, report_id, expires, nonce, mac) != 0 ||
        crypto_base64url_encode(mac, sizeof mac, signature, sizeof signature) == 0)
        return -1;
    buf_t b = buf_over(out, cap);
    buf_puts(&b, base_url);
    buf_puts(&b, collection);
    buf_putc(&b, '/');
    buf_puts(&b, report_id);
    buf_puts(&b, "/download?expires=");
    buf_puts(&b, expires);
    buf_puts(&b, "&nonce=");
    buf_puts(&b, nonce);
    buf_puts(&b, "&signature=");
    buf_puts(&b, signature);
    return b.overflow ? -1 : 0;
}

/* 1 to EXPIRES_DIGITS_MAX decimal digits, nothing else. */
static bool parse_expires(const char *text, int64_t *out)
{
    size_t n = strlen(text);
    if (n == 0 || n > EXPIRES_DIGITS_MAX)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
        v = v * 10 + (text[i] - '0');
    }
    *out = v;
    return true;
}

/* text decodes (base64url, no padding) to exactly len bytes. */
static bool decodes_to(const char *text, uint8_t *out, size_t len)
{
    size_t got = 0;
    size_t n = strlen(text);
    return n < CRYPTO_BASE64_LEN(len) &&
           crypto_base64url_decode(text, n, out, len, &got) == 0 && got == len;
}

report_link_status_t report_link_verify(const crypto_hmac_key_t *key, const char *report_id,
                                        const char *expires, const char *nonce,
                                        const char *signature, int64_t now_s)
{
    uint8_t nonce_bytes[REPORT_LINK_NONCE_BYTES], given[CRYPTO_SHA256_LEN];
    uint8_t expected[CRYPTO_SHA256_LEN];
    int64_t until = 0;
    if (report_id == NULL || expires == NULL || nonce == NULL || signature == NULL ||
        strlen(report_id) > ID_MAX || !parse_expires(expires, &until) ||
        !decodes_to(nonce, nonce_bytes, sizeof nonce_bytes) ||
        !decodes_to(signature, given, sizeof given) ||
        link_mac(key, report_id, expires, nonce, expected) != 0)
        return REPORT_LINK_INVALID;
    if (!crypto_equal(expected, sizeof expected, given, sizeof given))
        return REPORT_LINK_INVALID;
    return now_s < until ? REPORT_LINK_OK : REPORT_LINK_EXPIRED;
}
