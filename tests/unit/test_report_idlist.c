/* test_report_idlist: the skipped ids of a report listed from the stored
 * requested array and its bitmap (reports/idlist.h), and the account_ids
 * array cut out of a trigger's body.
 *
 * What they prove: only the marked elements come out, in order, once,
 * comma-separated, byte for byte as stored (escapes kept), whatever the
 * size of the pieces they are read in; the measure equals what is read; a
 * malformed stored text is an error, never garbage; the body's
 * "account_ids" member is found among other members (nested values and
 * strings with brackets skipped), and whitespace outside strings is
 * removed without touching the strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/idlist.h"

static const char IDS[] = "[\"m1\",\"a1\",\"m2\",\"m1\",\"q\\\"x,]\",\"m2\"]";

/* Reads everything r produces, `piece` bytes at a time, into out. */
static long read_all(report_skipped_reader_t *r, char *out, size_t cap, size_t piece)
{
    size_t n = 0;
    for (;;) {
        size_t max = cap - n < piece ? cap - n : piece;
        long got = report_skipped_read(r, out + n, max);
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        n += (size_t)got;
    }
    out[n] = '\0';
    return (long)n;
}

static void test_marked_elements_in_order(void **state)
{
    (void)state;
    uint8_t bits[1] = {0};
    assert_int_equal(report_skipped_size(6), 1);
    assert_int_equal(report_skipped_size(9), 2);
    report_skipped_set(bits, sizeof bits, 0);
    report_skipped_set(bits, sizeof bits, 2);
    report_skipped_set(bits, sizeof bits, 4);
    report_skipped_set(bits, sizeof bits, 99); /* beyond: ignored */
    assert_true(report_skipped_has(bits, sizeof bits, 4));
    assert_false(report_skipped_has(bits, sizeof bits, 1));
    const char *want = "\"m1\",\"m2\",\"q\\\"x,]\"";
    for (size_t piece = 1; piece <= 40; piece++) {
        report_skipped_reader_t r;
        char out[128];
        report_skipped_reader_begin(&r, IDS, strlen(IDS), bits, sizeof bits);
        assert_int_equal(read_all(&r, out, sizeof out - 1, piece), (long)strlen(want));
        assert_string_equal(out, want);
    }
    uint64_t bytes = 0;
    int64_t count = 0;
    assert_int_equal(report_skipped_measure(IDS, strlen(IDS), bits, sizeof bits, &bytes, &count),
                     0);
    assert_int_equal(bytes, strlen(want));
    assert_int_equal(count, 3);
}

static void test_none_marked_and_empty(void **state)
{
    (void)state;
    uint8_t bits[1] = {0};
    report_skipped_reader_t r;
    char out[16];
    report_skipped_reader_begin(&r, IDS, strlen(IDS), bits, sizeof bits);
    assert_int_equal(read_all(&r, out, sizeof out - 1, 4), 0);
    report_skipped_reader_begin(&r, "[ ]", 3, bits, sizeof bits);
    assert_int_equal(read_all(&r, out, sizeof out - 1, 4), 0);
    /* whitespace between tokens is JSON too */
    bits[0] = 0x3;
    const char *spaced = "[ \"a\" ,\n\"b\" ]";
    report_skipped_reader_begin(&r, spaced, strlen(spaced), bits, sizeof bits);
    assert_int_equal(read_all(&r, out, sizeof out - 1, 3), 7);
    assert_string_equal(out, "\"a\",\"b\"");
}

static void test_malformed_is_an_error(void **state)
{
    (void)state;
    uint8_t bits[1] = {0xff};
    const char *bad[] = {"", "{}", "[\"a\"", "[\"a\",]", "[1]", "[\"a\" \"b\"]", "[\"unterminated]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        report_skipped_reader_t r;
        char out[64];
        report_skipped_reader_begin(&r, bad[i], strlen(bad[i]), bits, sizeof bits);
        assert_int_equal(read_all(&r, out, sizeof out - 1, 64), -1);
        uint64_t bytes;
        int64_t count;
        assert_int_equal(report_skipped_measure(bad[i], strlen(bad[i]), bits, sizeof bits,
                                                &bytes, &count),
                         -1);
    }
}

static void test_body_span_and_compact(void **state)
{
    (void)state;
    char body[] = "{ \"format\" : \"csv\", \"x\": {\"account_ids\": [\"no\"], \"s\": \"]}\"},"
                  " \"account_ids\" : [ \"a b\" , \"c\\\" d\" ,\n \"e\" ] , \"y\": [1, 2] }";
    size_t start = 0, len = 0;
    assert_true(report_body_ids_span(body, strlen(body), &start, &len));
    size_t n = report_json_compact(body + start, len);
    body[start + n] = '\0';
    assert_string_equal(body + start, "[\"a b\",\"c\\\" d\",\"e\"]");
    char absent[] = "{\"format\":\"csv\"}";
    assert_false(report_body_ids_span(absent, strlen(absent), &start, &len));
    char escaped[] = "{\"account\\u005fids\":[\"a\"]}"; /* the caller serializes instead */
    assert_false(report_body_ids_span(escaped, strlen(escaped), &start, &len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marked_elements_in_order),
        cmocka_unit_test(test_none_marked_and_empty),
        cmocka_unit_test(test_malformed_is_an_error),
        cmocka_unit_test(test_body_span_and_compact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
