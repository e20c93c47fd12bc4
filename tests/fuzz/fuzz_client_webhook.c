/* Fuzzes the webhook receiver's helpers (src/client/webhook.c). Input:
 * three newline-terminated fields, a secret, a second secret (empty: none)
 * and a signature header, then the body (the rest, newlines included).
 *
 * Properties (abort on violation):
 *  - taxd_webhook_parse: when it accepts the body, the body is a JSON
 *    object (jansson, duplicates rejected) whose "data" is an array of as
 *    many elements as events; each event's json is compact (no whitespace
 *    outside strings), parses with jansson, and equals the data element at
 *    its index (json_equal); event_type is that element's string
 *    event_type, event_id its event_id (NULL when absent or not a string);
 *    the timestamp is the envelope's;
 *  - taxd_webhook_verify agrees with a reference: the HMAC-SHA256 of the
 *    body under each non-empty secret, base64 by OpenSSL's EVP_EncodeBlock,
 *    prefixed "v1=", compared with every comma-separated part of the
 *    header with spaces and tabs trimmed (an empty body verifies nothing);
 *  - a header made here for a non-empty body ("v1=<sig>" per secret, comma
 *    separated, spaces and tabs around entries or not) verifies under each of its
 *    secrets, and not for the body with one byte changed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <taxd/client.h>

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

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

/* "v1=" + base64 HMAC-SHA256 of body under secret (48 bytes + NUL). */
static void reference_sig(const char *secret, const char *body, size_t len, char out[48])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)body, len, mac,
             &mac_len) == NULL || mac_len != 32)
        FAIL("reference HMAC failed");
    memcpy(out, "v1=", 3);
    if (EVP_EncodeBlock((unsigned char *)out + 3, mac, 32) != 44)
        FAIL("reference base64 failed");
}

static bool reference_verify(const char *header, const char *const *secrets, size_t count,
                             const char *body, size_t len)
{
    if (len == 0 || header[0] == '\0')
        return false;
    for (size_t i = 0; i < count; i++) {
        if (secrets[i][0] == '\0')
            continue;
        char want[48];
        reference_sig(secrets[i], body, len, want);
        for (const char *p = header;;) {
            const char *comma = strchr(p, ',');
            const char *a = p, *b = comma ? comma : p + strlen(p);
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                b--;
            if (b - a == 47 && memcmp(a, want, 47) == 0)
                return true;
            if (comma == NULL)
                break;
            p = comma + 1;
        }
    }
    return false;
}

static bool is_compact(const char *json)
{
    bool in_string = false;
    for (const char *p = json; *p; p++) {
        if (in_string) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_string = false;
        } else if (*p == '"') {
            in_string = true;
        } else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            return false;
        }
    }
    return true;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_parse(const char *body, size_t len)
{
    taxd_webhook_delivery d;
    taxd_error err = {0};
    if (taxd_webhook_parse(body, len, &d, &err) != TAXD_OK) {
        if (err.message == NULL)
            FAIL("a refused delivery without a message");
        taxd_error_clear(&err);
        return;
    }
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *data = json_object_get(root, "data");
    if (!json_is_object(root) || !json_is_array(data) || json_array_size(data) != d.count)
        FAIL("an accepted delivery is not {\"data\": [as many events]}");
    if (!same_text(d.timestamp, json_string_value(json_object_get(root, "timestamp"))))
        FAIL("the timestamp differs from the envelope's");
    for (size_t i = 0; i < d.count; i++) {
        const taxd_webhook_event *e = &d.events[i];
        json_t *want = json_array_get(data, i);
        if (e->json == NULL || !is_compact(e->json))
            FAIL("an event's json is not compact");
        json_t *got = json_loads(e->json, JSON_REJECT_DUPLICATES, NULL);
        if (got == NULL)
            FAIL("an event's json does not parse");
        if (!json_equal(got, want))
            FAIL("an event's json differs from the body's data element");
        json_decref(got);
        if (!same_text(e->event_type, json_string_value(json_object_get(want, "event_type"))) ||
            e->event_type == NULL)
            FAIL("an event's event_type differs from the element's");
        if (!same_text(e->event_id, json_string_value(json_object_get(want, "event_id"))))
            FAIL("an event's event_id differs from the element's");
    }
    json_decref(root);
    taxd_webhook_delivery_clear(&d);
}

static void check_made(const char *s1, const char *s2, const char *body, size_t len)
{
    if (len == 0 || s1[0] == '\0')
        return;
    const char *secrets[2] = {s1, s2};
    size_t count = s2[0] != '\0' ? 2 : 1;
    /* the separators vary with the body: ",", ", " or " ,\t" (spaces and
     * tabs around an entry are the sender's choice) */
    static const char *const SEP[] = {",", ", ", " ,\t"};
    char header[2 * 48 + 8] = "";
    char sig[48];
    reference_sig(s1, body, len, sig);
    strncat(header, sig, 47);
    if (count == 2) {
        reference_sig(s2, body, len, sig);
        strcat(header, SEP[len % 3]);
        strncat(header, sig, 47);
    }
    if (len % 2)
        strcat(header, " ");
    for (size_t i = 0; i < count; i++)
        if (!taxd_webhook_verify(header, &secrets[i], 1, body, len))
            FAIL("a made header does not verify under its secret");
    char *changed = malloc(len);
    memcpy(changed, body, len);
    changed[len / 2] ^= 0x01;
    if (taxd_webhook_verify(header, secrets, count, changed, len))
        FAIL("a made header verifies for a changed body");
    free(changed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char *s1 = field(&p, end), *s2 = field(&p, end), *header = field(&p, end);
    size_t len = (size_t)(end - p);
    char *body = malloc(len ? len : 1); /* exact size: ASan sees a read past it */
    memcpy(body, p, len);

    check_parse(body, len);
    const char *secrets[2] = {s1, s2};
    size_t count = s2[0] != '\0' ? 2 : 1;
    if (taxd_webhook_verify(header, secrets, count, body, len) !=
        reference_verify(header, secrets, count, body, len))
        FAIL("taxd_webhook_verify disagrees with the reference");
    check_made(s1, s2, body, len);
    free(body);
    free(header);
    free(s2);
    free(s1);
    return 0;
}
