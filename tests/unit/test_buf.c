/* Unit tests of the append buffers: core/buf's exact output, and truncation
 * that is flagged rather than silent or out of bounds; core/dbuf's growth,
 * its one allocation when sized up front, and a failed writer's NULL. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/dbuf.h"

static void test_appends(void **state)
{
    (void)state;
    char storage[64];
    buf_t b = buf_over(storage, sizeof storage);
    buf_puts(&b, "id=");
    buf_put_u64(&b, 0);
    buf_putc(&b, ',');
    buf_put_u64(&b, UINT64_MAX);
    buf_putc(&b, ',');
    buf_put_i64(&b, INT64_MIN);
    buf_putc(&b, ',');
    buf_put_hex(&b, 0x2aULL, 16);
    assert_string_equal(storage, "id=0,18446744073709551615,-9223372036854775808,000000000000002a");
    assert_false(b.overflow);
    assert_int_equal(b.len, strlen(storage));
}

static void test_overflow_is_flagged_and_bounded(void **state)
{
    (void)state;
    char storage[8];
    memset(storage, 'x', sizeof storage);
    buf_t b = buf_over(storage, 6);
    buf_puts(&b, "abc");
    buf_puts(&b, "defg"); /* does not fit: dropped whole */
    assert_true(b.overflow);
    assert_string_equal(storage, "abc");
    buf_puts(&b, "de"); /* exactly fills the 5 usable bytes */
    assert_string_equal(storage, "abcde");
    assert_int_equal(storage[6], 'x'); /* nothing written past cap */
}

/* The escapes JSON.stringify makes and no others: short forms for the
 * five that have one, lowercase \u00xx for the other control characters,
 * UTF-8 and DEL as they are. */
static void test_json_string(void **state)
{
    (void)state;
    char storage[128];
    buf_t b = buf_over(storage, sizeof storage);
    buf_put_json_string(&b, "plain");
    buf_putc(&b, ' ');
    buf_put_json_string(&b, "q\"b\\n\nt\tr\rb\bf\fx\x01\x1f\x7f\xc3\xa9");
    buf_putc(&b, ' ');
    buf_put_json_string(&b, NULL);
    buf_putc(&b, ' ');
    buf_put_json_string(&b, "");
    assert_false(b.overflow);
    assert_string_equal(storage, "\"plain\" \"q\\\"b\\\\n\\nt\\tr\\rb\\bf\\fx\\u0001\\u001f\x7f\xc3\xa9\""
                                 " null \"\"");
    b = buf_over(storage, 8);
    buf_put_json_string(&b, "longer than eight");
    assert_true(b.overflow);
    assert_true(strlen(storage) < 8);
}

static void test_dbuf_grows_and_hands_over(void **state)
{
    (void)state;
    dbuf_t b = {0};
    char piece[100];
    memset(piece, 'x', sizeof piece);
    for (int i = 0; i < 50; i++) /* 5,000 bytes: several doublings */
        dbuf_put(&b, piece, sizeof piece);
    dbuf_printf(&b, "|%d|%s|", 42, "forty-two");
    dbuf_puts(&b, "end");
    size_t len = 0;
    char *text = dbuf_finish(&b, &len);
    assert_non_null(text);
    assert_int_equal(len, 5000 + strlen("|42|forty-two|end"));
    assert_int_equal(strlen(text), len);
    assert_string_equal(text + 5000, "|42|forty-two|end");
    assert_null(b.data); /* handed over */
    free(text);

    /* Sized up front: no regrowth while it fits. */
    dbuf_init(&b, 16);
    char *first = b.data;
    dbuf_printf(&b, "%s", "0123456789abcdef");
    assert_ptr_equal(b.data, first);
    text = dbuf_finish(&b, NULL);
    assert_string_equal(text, "0123456789abcdef");
    free(text);

    /* Nothing appended is still a string. */
    b = (dbuf_t){0};
    text = dbuf_finish(&b, &len);
    assert_non_null(text);
    assert_string_equal(text, "");
    assert_int_equal(len, 0);
    free(text);
}

/* The growing buffer writes JSON strings with the fixed one's escapes. */
static void test_dbuf_json_string_matches_buf(void **state)
{
    (void)state;
    const char *s = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f \xc3\xa9";
    char storage[128];
    buf_t fixed = buf_over(storage, sizeof storage);
    buf_put_json_string(&fixed, s);
    dbuf_t b = {0};
    dbuf_put_json_string(&b, s, strlen(s));
    char *text = dbuf_finish(&b, NULL);
    assert_string_equal(text, storage);
    assert_string_equal(text, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f \xc3\xa9\"");
    free(text);
}

static void test_dbuf_failed_writer_gets_null(void **state)
{
    (void)state;
    dbuf_t b;
    dbuf_init(&b, 8);
    dbuf_puts(&b, "partial");
    b.failed = true; /* a writer that met a value it cannot write, or no memory */
    dbuf_puts(&b, " dropped");
    size_t len = 7;
    assert_null(dbuf_finish(&b, &len));
    assert_null(b.data); /* freed: ASan would report the leak */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_overflow_is_flagged_and_bounded),
        cmocka_unit_test(test_json_string),
        cmocka_unit_test(test_dbuf_grows_and_hands_over),
        cmocka_unit_test(test_dbuf_json_string_matches_buf),
        cmocka_unit_test(test_dbuf_failed_writer_gets_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
