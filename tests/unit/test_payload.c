/* Unit tests of the canonical webhook body: the bytes equal what Python's
 * json.dumps(separators=(",", ":"), ensure_ascii=False) and JavaScript's
 * JSON.stringify write for the same value (the expected text below was
 * produced by Python and checked to be a fixed point of node's
 * JSON.parse/JSON.stringify), reals and invalid UTF-8 are refused, and the
 * envelope has the spec's shape. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "webhooks/payload.h"

static void test_matches_python_and_javascript(void **state)
{
    (void)state;
    json_t *v = json_object();
    json_object_set_new(v, "event_type", json_string("X"));
    json_object_set_new(v, "s", json_string("a\"b\\c\x01\x1f\x7f\xc3\xa9\xe2\x80\xa8\n\t\b\f\r/<>&"));
    json_object_set_new(v, "n", json_integer(-42));
    json_object_set_new(v, "t", json_true());
    json_object_set_new(v, "f", json_false());
    json_object_set_new(v, "z", json_null());
    json_object_set_new(v, "a", json_pack("[i,s,{s:s}]", 1, "x", "k", "v"));
    size_t len = 0;
    char *text = payload_dump(v, &len);
    const char *expected =
        "{\"event_type\":\"X\",\"s\":\"a\\\"b\\\\c\\u0001\\u001f\x7f\xc3\xa9\xe2\x80\xa8"
        "\\n\\t\\b\\f\\r/<>&\",\"n\":-42,\"t\":true,\"f\":false,\"z\":null,"
        "\"a\":[1,\"x\",{\"k\":\"v\"}]}";
    assert_non_null(text);
    assert_string_equal(text, expected);
    assert_int_equal(len, strlen(expected));
    free(text);
    json_decref(v);
}

static void test_refuses_reals_and_bad_utf8(void **state)
{
    (void)state;
    size_t len;
    json_t *real = json_pack("{s:f}", "x", 1.5);
    assert_null(payload_dump(real, &len));
    json_decref(real);
    json_t *bad = json_object();
    json_object_set_new(bad, "x", json_stringn_nocheck("\xff", 1));
    assert_null(payload_dump(bad, &len));
    json_decref(bad);
}

static void test_envelope(void **state)
{
    (void)state;
    json_t *event = json_pack("{s:s, s:s}", "event_type", "INVENTORY_UPDATE", "id", "e1");
    size_t len;
    char *text = payload_envelope(event, 1709210096789, &len);
    assert_string_equal(text, "{\"timestamp\":\"2024-02-29T12:34:56.789Z\",\"data\":"
                              "[{\"event_type\":\"INVENTORY_UPDATE\",\"id\":\"e1\"}]}");
    free(text);
    json_decref(event);
}

/* The dispatcher renders the event once (payload_dump) and wraps it per
 * attempt: the same bytes as payload_envelope, escapes included. */
static void test_envelope_raw_is_the_same(void **state)
{
    (void)state;
    json_t *event = json_pack("{s:s, s:s, s:i}", "event_type", "X", "note",
                              "q\"b\\c\x01\u00e9", "n", 7);
    size_t event_len, len, raw_len;
    char *event_text = payload_dump(event, &event_len);
    char *text = payload_envelope(event, 1709210096789, &len);
    char *raw = payload_envelope_raw(event_text, event_len, 1709210096789, &raw_len);
    assert_int_equal(raw_len, len);
    assert_memory_equal(raw, text, len);
    assert_int_equal(raw[raw_len], '\0');
    free(raw);
    free(text);
    free(event_text);
    json_decref(event);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_python_and_javascript),
        cmocka_unit_test(test_refuses_reals_and_bad_utf8),
        cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_envelope_raw_is_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
