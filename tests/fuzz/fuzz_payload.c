/* Fuzzes the webhook payload's canonical JSON (webhooks/payload.c). Input:
 * any bytes. They are read twice: as a JSON text (an event), and as the raw
 * bytes of one string value (any bytes, valid UTF-8 or not).
 *
 * Properties (abort on violation):
 *  - payload_dump writes exactly what Python's json.dumps(value,
 *    separators=(",", ":"), ensure_ascii=False) writes, as computed by the
 *    independent serializer below (the escapes \" \\ \b \f \n \r \t and
 *    lowercase \u00xx for other control characters, everything else raw);
 *  - it fails (NULL) exactly when the value holds a real number or a string
 *    that is not valid UTF-8 (jansson's own UTF-8 check is the reference);
 *  - its output parses back to an equal value, and dumping that again gives
 *    the same bytes (the receiver's "parse and re-serialize" verification);
 *  - payload_envelope and payload_envelope_raw give the same bytes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/dbuf.h"
#include "core/utf8.h"
#include "webhooks/payload.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

/* ---- the reference: Python's compact json.dumps, ensure_ascii=False ---- */

static void ref_string(dbuf_t *o, const char *s, size_t n)
{
    dbuf_put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t" : NULL;
        if (named != NULL)
            dbuf_puts(o, named);
        else if (c < 0x20)
            dbuf_printf(o, "\\u%04x", c);
        else
            dbuf_put(o, (const char *)&c, 1);
    }
    dbuf_put(o, "\"", 1);
}

/* False when the value cannot be written (a real, or bytes that are not
 * UTF-8 by jansson's check). */
static bool ref_value(dbuf_t *o, const json_t *v)
{
    const char *key;
    json_t *child;
    bool ok = true, first = true;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        dbuf_put(o, "{", 1);
        json_object_foreach((json_t *)v, key, child) {
            if (!first)
                dbuf_put(o, ",", 1);
            first = false;
            ref_string(o, key, strlen(key));
            dbuf_put(o, ":", 1);
            ok = ref_value(o, child) && ok;
        }
        dbuf_put(o, "}", 1);
        return ok;
    case JSON_ARRAY:
        dbuf_put(o, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i > 0)
                dbuf_put(o, ",", 1);
            ok = ref_value(o, json_array_get(v, i)) && ok;
        }
        dbuf_put(o, "]", 1);
        return ok;
    case JSON_STRING: {
        json_t *checked = json_stringn(json_string_value(v), json_string_length(v));
        ok = checked != NULL;
        json_decref(checked);
        ref_string(o, json_string_value(v), json_string_length(v));
        return ok;
    }
    case JSON_INTEGER:
        dbuf_printf(o, "%lld", (long long)json_integer_value(v));
        return true;
    case JSON_TRUE:
        dbuf_puts(o, "true");
        return true;
    case JSON_FALSE:
        dbuf_puts(o, "false");
        return true;
    case JSON_NULL:
        dbuf_puts(o, "null");
        return true;
    default:
        return false;
    }
}

static void check_value(const json_t *v)
{
    dbuf_t ref = {0};
    bool writable = ref_value(&ref, v);
    size_t ref_len = 0;
    char *want = dbuf_finish(&ref, &ref_len);
    size_t len = 0;
    char *got = payload_dump(v, &len);
    if ((got != NULL) != writable)
        FAIL("payload_dump fails on a writable value, or writes a real or invalid UTF-8");
    if (got == NULL) {
        free(want);
        return;
    }
    if (want == NULL || len != ref_len || memcmp(got, want, len) != 0)
        FAIL("payload_dump differs from Python's compact json.dumps");
    json_error_t err;
    json_t *back = json_loadb(got, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (back == NULL || !json_equal(back, v))
        FAIL("the payload does not parse back to the same value");
    size_t len2 = 0;
    char *again = payload_dump(back, &len2);
    if (again == NULL || len2 != len || memcmp(again, got, len) != 0)
        FAIL("parse and re-serialize does not give the same bytes");

    static const int64_t WHEN[] = {0, 1709287200123, 253402300799999};
    for (size_t i = 0; i < 3; i++) {
        size_t e1 = 0, e2 = 0;
        char *env = payload_envelope(v, WHEN[i], &e1);
        char *raw = payload_envelope_raw(got, len, WHEN[i], &e2);
        if (env == NULL || raw == NULL || e1 != e2 || memcmp(env, raw, e1) != 0)
            FAIL("payload_envelope and payload_envelope_raw differ");
        free(env);
        free(raw);
    }
    free(again);
    json_decref(back);
    free(got);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *event = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (event != NULL) {
        check_value(event);
        json_decref(event);
    }
    json_t *raw = json_stringn_nocheck((const char *)data, size);
    if (raw == NULL)
        FAIL("out of memory");
    json_t *checked = json_stringn((const char *)data, size);
    if (utf8_valid((const char *)data, size) != (checked != NULL))
        FAIL("utf8_valid disagrees with jansson's UTF-8 check");
    json_decref(checked);
    check_value(raw);
    json_decref(raw);
    return 0;
}
