/* Unit tests for src/http/url.c: the raw target is split without copying and
 * every segment or query value is decoded exactly once, strictly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "http/url.h"

static void test_split_with_query(void **state)
{
    (void)state;
    const char *target = "/v1/a%2Fb?x=1&y=2";
    size_t path_len = 0;
    const char *query = NULL;
    url_split(target, &path_len, &query);
    assert_int_equal(path_len, 9);
    assert_ptr_equal(query, target + 10);
    assert_string_equal(query, "x=1&y=2");
}

static void test_split_without_query(void **state)
{
    (void)state;
    const char *target = "/v1/filers";
    size_t path_len = 0;
    const char *query = NULL;
    url_split(target, &path_len, &query);
    assert_int_equal(path_len, 10);
    assert_ptr_equal(query, target + 10);
    assert_string_equal(query, "");
}

static void test_split_empty_query_and_second_question_mark(void **state)
{
    (void)state;
    const char *target = "/p?";
    size_t path_len = 0;
    const char *query = NULL;
    url_split(target, &path_len, &query);
    assert_int_equal(path_len, 2);
    assert_string_equal(query, "");

    /* Only the first '?' splits; a later one belongs to the query. */
    url_split("/p?a=?b", &path_len, &query);
    assert_int_equal(path_len, 2);
    assert_string_equal(query, "a=?b");
}

/* Decodes s and checks the exact result and length. */
static void check_decode(const char *s, bool plus, const char *want)
{
    char dst[64];
    long n = url_decode(s, strlen(s), dst, plus);
    assert_int_equal(n, (long)strlen(want));
    assert_memory_equal(dst, want, strlen(want) + 1);
}

static void test_decode_escapes(void **state)
{
    (void)state;
    check_decode("a%2Fb", false, "a/b");
    check_decode("a%2fb", false, "a/b");
    check_decode("100%25", false, "100%");
    check_decode("1%2B1", false, "1+1");
    check_decode("a%20b", false, "a b");
    check_decode("caf%C3%A9", false, "caf\xc3\xa9");
    check_decode("", false, "");
    check_decode("plain", false, "plain");
    /* A decoded '%' is not decoded again. */
    check_decode("%2541", false, "%41");
}

static void test_decode_plus(void **state)
{
    (void)state;
    check_decode("a+b", false, "a+b");
    check_decode("a+b", true, "a b");
    check_decode("a%2Bb", true, "a+b");
}

static void test_decode_raw_utf8_passes_through(void **state)
{
    (void)state;
    check_decode("\xc3\xa9t\xc3\xa9", false, "\xc3\xa9t\xc3\xa9");
}

static void test_decode_respects_length(void **state)
{
    (void)state;
    char dst[8];
    /* Only the first 3 bytes are decoded, so the escape after them is ignored. */
    assert_int_equal(url_decode("abc%zz", 3, dst, false), 3);
    assert_string_equal(dst, "abc");
    /* An escape cut by the length is malformed even if the buffer goes on. */
    assert_int_equal(url_decode("a%41", 3, dst, false), -1);
}

static void test_decode_malformed(void **state)
{
    (void)state;
    char dst[16];
    assert_int_equal(url_decode("%", 1, dst, false), -1);
    assert_int_equal(url_decode("abc%", 4, dst, false), -1);
    assert_int_equal(url_decode("%4", 2, dst, false), -1);
    assert_int_equal(url_decode("%zz", 3, dst, false), -1);
    assert_int_equal(url_decode("%4g", 3, dst, false), -1);
    assert_int_equal(url_decode("%g4", 3, dst, true), -1);
    assert_int_equal(url_decode("%00", 3, dst, false), -1);
    assert_int_equal(url_decode("a%00b", 5, dst, true), -1);
    /* A raw NUL inside the given length is refused like an encoded one. */
    assert_int_equal(url_decode("a\0b", 3, dst, false), -1);
}

static void test_query_first_match(void **state)
{
    (void)state;
    char *v = NULL;
    assert_int_equal(url_query_get("a=1&b=2&a=3", "a", &v), 1);
    assert_string_equal(v, "1");
    free(v);
    assert_int_equal(url_query_get("a=1&b=2&a=3", "b", &v), 1);
    assert_string_equal(v, "2");
    free(v);
}

static void test_query_absent(void **state)
{
    (void)state;
    char *v = (char *)"sentinel";
    assert_int_equal(url_query_get("a=1&b=2", "c", &v), 0);
    assert_null(v);
    v = (char *)"sentinel";
    assert_int_equal(url_query_get("", "a", &v), 0);
    assert_null(v);
    /* A prefix of a name is not the name. */
    assert_int_equal(url_query_get("ab=1", "a", &v), 0);
    assert_int_equal(url_query_get("a=1", "ab", &v), 0);
    assert_null(v);
}

static void test_query_empty_and_valueless(void **state)
{
    (void)state;
    char *v = NULL;
    assert_int_equal(url_query_get("a=&b=2", "a", &v), 1);
    assert_string_equal(v, "");
    free(v);
    assert_int_equal(url_query_get("flag&b=2", "flag", &v), 1);
    assert_string_equal(v, "");
    free(v);
    assert_int_equal(url_query_get("b=2&flag", "flag", &v), 1);
    assert_string_equal(v, "");
    free(v);
    /* Empty pairs are skipped. */
    assert_int_equal(url_query_get("&&b=2&", "b", &v), 1);
    assert_string_equal(v, "2");
    free(v);
}

static void test_query_decoding(void **state)
{
    (void)state;
    char *v = NULL;
    assert_int_equal(url_query_get("q=a+b%2Bc%20d%C3%A9", "q", &v), 1);
    assert_string_equal(v, "a b+c d\xc3\xa9");
    free(v);
    /* Names are compared after decoding, '+' included. */
    assert_int_equal(url_query_get("x=0&account%5Fid=7", "account_id", &v), 1);
    assert_string_equal(v, "7");
    free(v);
    assert_int_equal(url_query_get("tax+year=2024", "tax year", &v), 1);
    assert_string_equal(v, "2024");
    free(v);
    /* '=' after the first belongs to the value. */
    assert_int_equal(url_query_get("k=a=b", "k", &v), 1);
    assert_string_equal(v, "a=b");
    free(v);
}

static void test_query_malformed(void **state)
{
    (void)state;
    char *v = (char *)"sentinel";
    assert_int_equal(url_query_get("a=%zz", "a", &v), -1);
    assert_null(v);
    v = (char *)"sentinel";
    assert_int_equal(url_query_get("a=%00", "a", &v), -1);
    assert_null(v);
    assert_int_equal(url_query_get("a%4=1", "a", &v), -1);
    assert_null(v);
    /* Malformed anywhere means malformed, whichever parameter is asked for. */
    assert_int_equal(url_query_get("a=1&b=%", "a", &v), -1);
    assert_null(v);
    assert_int_equal(url_query_get("b=%&a=1", "a", &v), -1);
    assert_null(v);
    assert_int_equal(url_query_get("a=1&%zz=2", "c", &v), -1);
    assert_null(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_with_query),
        cmocka_unit_test(test_split_without_query),
        cmocka_unit_test(test_split_empty_query_and_second_question_mark),
        cmocka_unit_test(test_decode_escapes),
        cmocka_unit_test(test_decode_plus),
        cmocka_unit_test(test_decode_raw_utf8_passes_through),
        cmocka_unit_test(test_decode_respects_length),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_query_first_match),
        cmocka_unit_test(test_query_absent),
        cmocka_unit_test(test_query_empty_and_valueless),
        cmocka_unit_test(test_query_decoding),
        cmocka_unit_test(test_query_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
