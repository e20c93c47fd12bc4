/* Fuzzes the signed download URL (reports/links.c). Input: five fields
 * separated by NUL bytes: base URL, report id, "now" in unix seconds
 * (digits), which value to tamper with ('i' the id, 'e' expires, 'n' the
 * nonce, 's' the signature, anything else none), and the tampering: "=text"
 * replaces the value with text; otherwise each pair of bytes (position,
 * byte) overwrites one byte of the genuine value (position modulo its
 * length), which reaches the values of a link made with a random nonce.
 *
 * A link is made for the id at now, and its query values are read back the
 * way the download route reads them (url_split, url_query_get).
 * Properties (abort on violation):
 *  - the link is base + "/v1/reports/inventory-summary/<id>/download?..."
 *    and its expiry is now + REPORT_LINK_TTL_S;
 *  - the genuine values verify at now and up to the last second before the
 *    expiry, are "expired" from the expiry on, and are "invalid" under
 *    another key;
 *  - any value changed by the replacement (a tampered link) never verifies
 *    and is never reported "expired", at any time: always "invalid";
 *  - fuzzed values that are not those of a link made here never verify. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "http/url.h"
#include "reports/links.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

#define PATH "/v1/reports/inventory-summary/"

static const crypto_hmac_key_t *key_of(int which)
{
    static crypto_hmac_key_t *keys[2];
    if (keys[which] == NULL) {
        uint8_t raw[32];
        memset(raw, which ? 0x5a : 0xa5, sizeof raw);
        keys[which] = crypto_hmac_key_new(raw, sizeof raw);
        if (keys[which] == NULL)
            FAIL("no key");
    }
    return keys[which];
}

static char *query_value(const char *query, const char *name)
{
    char *value = NULL;
    if (url_query_get(query, name, &value) != 1)
        FAIL("a link's query value cannot be read back");
    return value;
}

static void all_invalid(const char *id, const char *v[3], int64_t now, int64_t until)
{
    static const int64_t DELTA[] = {0, -1, 1, 899, 900, 901, 86400};
    for (size_t i = 0; i < sizeof DELTA / sizeof DELTA[0]; i++) {
        int64_t t = (i < 3 ? now : until) + DELTA[i];
        if (report_link_verify(key_of(0), id, v[0], v[1], v[2], t) != REPORT_LINK_INVALID)
            FAIL("a tampered link is not invalid");
    }
}

/* The value after the tampering (malloc'd): "=text" is text; otherwise
 * (position, byte) pairs overwrite bytes of value. */
static char *tampered(const char *value, const char *how)
{
    if (how[0] == '=')
        return strdup(how + 1);
    char *out = strdup(value);
    size_t n = strlen(out);
    for (const char *p = how; n > 0 && p[0] != '\0' && p[1] != '\0'; p += 2)
        out[(unsigned char)p[0] % n] = p[1];
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *f[5];
    size_t at = 0;
    for (int i = 0; i < 5; i++) {
        f[i] = copy + (at < size ? at : size);
        at += strlen(f[i]) + 1;
    }
    const char *base = f[0], *id = f[1], *which = f[3], *replacement = f[4];
    int64_t now = 0;
    for (const char *p = f[2]; *p >= '0' && *p <= '9' && now < 100000000000LL; p++)
        now = now * 10 + (*p - '0');

    /* Arbitrary values: never valid (the key is not guessable). */
    if (report_link_verify(key_of(0), id, f[2], replacement, which, now) == REPORT_LINK_OK)
        FAIL("fuzzed values verified");

    char link[REPORT_LINK_MAX];
    int64_t expires_s = 0;
    if (report_link_make(key_of(0), base, "inventory-summary", id, now, link, sizeof link, &expires_s) != 0) {
        free(copy);
        return 0; /* an id over 64 bytes or a base URL too long: refused */
    }
    if (expires_s != now + REPORT_LINK_TTL_S)
        FAIL("the expiry is not now + REPORT_LINK_TTL_S");
    size_t base_len = strlen(base);
    if (strncmp(link, base, base_len) != 0 || strncmp(link + base_len, PATH, strlen(PATH)) != 0 ||
        strncmp(link + base_len + strlen(PATH), id, strlen(id)) != 0)
        FAIL("the link does not start with base + path + id");
    const char *target = link + base_len + strlen(PATH) + strlen(id);
    if (strncmp(target, "/download?", 10) != 0)
        FAIL("the link's path does not end in /download");
    size_t path_len;
    const char *query;
    url_split(target, &path_len, &query);
    char *v[3] = {query_value(query, "expires"), query_value(query, "nonce"),
                  query_value(query, "signature")};
    const char *cv[3] = {v[0], v[1], v[2]};

    if (report_link_verify(key_of(0), id, cv[0], cv[1], cv[2], now) != REPORT_LINK_OK ||
        report_link_verify(key_of(0), id, cv[0], cv[1], cv[2], expires_s - 1) != REPORT_LINK_OK)
        FAIL("a genuine link does not verify before its expiry");
    if (report_link_verify(key_of(0), id, cv[0], cv[1], cv[2], expires_s) != REPORT_LINK_EXPIRED)
        FAIL("a genuine link is not expired at its expiry");
    if (report_link_verify(key_of(1), id, cv[0], cv[1], cv[2], now) != REPORT_LINK_INVALID)
        FAIL("a link verifies under another key");

    /* The tampered link: one value replaced or edited. */
    const char *tv[4] = {cv[0], cv[1], cv[2], id};
    int slot = which[0] == 'e' ? 0 : which[0] == 'n' ? 1 : which[0] == 's' ? 2 : which[0] == 'i' ? 3 : -1;
    if (slot >= 0) {
        char *edited = tampered(tv[slot], replacement);
        if (strcmp(edited, tv[slot]) != 0) {
            tv[slot] = edited;
            all_invalid(tv[3], tv, now, expires_s);
        }
        free(edited);
    }
    for (int i = 0; i < 3; i++)
        free(v[i]);
    free(copy);
    return 0;
}
