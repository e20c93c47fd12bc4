/* Unit tests of the append buffer: exact output, and truncation that is
 * flagged rather than silent or out of bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/buf.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_overflow_is_flagged_and_bounded),
        cmocka_unit_test(test_json_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
