/* Unit tests for src/http/framing.c and src/http/proxies.c: the framing
 * rules of RFC 9112 § 6 as taxd applies them, and whose address a request is
 * judged by behind a trusted proxy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/framing.h"
#include "http/proxies.h"

static framing_t judge(const char *block)
{
    return framing_judge_block(block, strlen(block));
}

static void test_plain_length_and_chunked_pass(void **state)
{
    (void)state;
    framing_t f = judge("Host: t\r\nContent-Length: 42\r\n");
    assert_int_equal(f.verdict, FRAMING_OK);
    assert_true(f.has_length);
    assert_int_equal(f.content_length, 42);
    f = judge("Host: t\r\nTransfer-Encoding: Chunked\r\n");
    assert_int_equal(f.verdict, FRAMING_OK);
    assert_true(f.chunked);
    f = judge("Host: t\r\nContent-Length: 7\r\ncontent-length: 7\r\n"); /* same value twice */
    assert_int_equal(f.verdict, FRAMING_OK);
    f = judge("Host: t\n"); /* bare LF line ends */
    assert_int_equal(f.verdict, FRAMING_OK);
}

static void test_length_and_chunked_together_is_400(void **state)
{
    (void)state;
    assert_int_equal(judge("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n").verdict,
                     FRAMING_BAD_REQUEST);
    assert_int_equal(judge("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n").verdict,
                     FRAMING_BAD_REQUEST);
    assert_int_equal(framing_status(FRAMING_BAD_REQUEST), 400);
}

static void test_bad_or_differing_lengths_are_400(void **state)
{
    (void)state;
    const char *bad[] = {"Content-Length: -1\r\n", "Content-Length: 18446744073709551616\r\n",
                         "Content-Length: 1000000000000000000\r\n", /* 19 digits */
                         "Content-Length: 5, 5\r\n", "Content-Length: +5\r\n",
                         "Content-Length: 0x10\r\n", "Content-Length: \r\n",
                         "Content-Length: 2\r\nContent-Length: 5\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        framing_t f = judge(bad[i]);
        assert_int_equal(f.verdict, FRAMING_BAD_REQUEST);
        assert_non_null(f.reason);
    }
    assert_int_equal(judge("Content-Length: 999999999999999999\r\n").verdict, FRAMING_OK);
}

static void test_other_codings_are_501(void **state)
{
    (void)state;
    const char *codings[] = {"gzip", "gzip, chunked", "chunked, chunked", "identity", ""};
    for (size_t i = 0; i < sizeof codings / sizeof codings[0]; i++) {
        char block[64];
        snprintf(block, sizeof block, "Transfer-Encoding: %s\r\n", codings[i]);
        assert_int_equal(judge(block).verdict, FRAMING_NOT_IMPLEMENTED);
    }
    assert_int_equal(judge("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n")
                         .verdict,
                     FRAMING_NOT_IMPLEMENTED);
    assert_int_equal(framing_status(FRAMING_NOT_IMPLEMENTED), 501);
}

static void test_malformed_lines_are_400(void **state)
{
    (void)state;
    assert_int_equal(judge("Host: t\r\n folded\r\n").verdict, FRAMING_BAD_REQUEST);
    assert_int_equal(judge("no colon here\r\n").verdict, FRAMING_BAD_REQUEST);
    /* a space before the colon would let "Content-Length :" slip past a proxy */
    assert_int_equal(judge("Content-Length : 5\r\n").verdict, FRAMING_BAD_REQUEST);
}

static void test_proxies_parse_and_trust(void **state)
{
    (void)state;
    char *err = NULL;
    proxies_t *set = proxies_parse(" 10.0.0.0/8, 192.168.1.7 ,::1, 2001:db8::/32", &err);
    assert_non_null(set);
    assert_true(proxies_trust_text(set, "10.200.3.4"));
    assert_false(proxies_trust_text(set, "11.0.0.1"));
    assert_true(proxies_trust_text(set, "192.168.1.7"));
    assert_false(proxies_trust_text(set, "192.168.1.8"));
    assert_true(proxies_trust_text(set, "::1"));
    assert_true(proxies_trust_text(set, "2001:db8:1::5"));
    assert_false(proxies_trust_text(set, "2001:db9::5"));
    assert_false(proxies_trust_text(set, "not an address"));
    proxies_free(set);
    const char *bad[] = {"10.0.0.0/33", "300.1.1.1", "10.0.0.0/", "10.0.0.0/x", "::1/129"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        assert_null(proxies_parse(bad[i], &err));
        assert_non_null(err);
        assert_non_null(strstr(err, "--trusted-proxies"));
        free(err);
    }
    set = proxies_parse("", &err);
    assert_non_null(set);
    assert_false(proxies_trust_text(set, "127.0.0.1"));
    proxies_free(set);
}

static void test_client_address_reads_forwarded_from_the_right(void **state)
{
    (void)state;
    char *err = NULL;
    proxies_t *set = proxies_parse("127.0.0.3,10.0.0.0/8", &err);
    char out[64];
    /* untrusted peer: its header is ignored */
    proxies_client_address(set, "127.0.0.2", "203.0.113.7", out, sizeof out);
    assert_string_equal(out, "127.0.0.2");
    /* trusted peer: the entry it appended */
    proxies_client_address(set, "127.0.0.3", "198.51.100.1, 203.0.113.7", out, sizeof out);
    assert_string_equal(out, "203.0.113.7");
    /* a chain of trusted proxies is walked past */
    proxies_client_address(set, "127.0.0.3", "198.51.100.1, 203.0.113.7, 10.1.2.3", out,
                           sizeof out);
    assert_string_equal(out, "203.0.113.7");
    /* garbage stops the walk at the last address believed */
    proxies_client_address(set, "127.0.0.3", "<script>, 10.1.2.3", out, sizeof out);
    assert_string_equal(out, "10.1.2.3");
    proxies_client_address(set, "127.0.0.3", "evil", out, sizeof out);
    assert_string_equal(out, "127.0.0.3");
    /* no header, or an empty one: the peer */
    proxies_client_address(set, "127.0.0.3", NULL, out, sizeof out);
    assert_string_equal(out, "127.0.0.3");
    proxies_client_address(set, "127.0.0.3", "", out, sizeof out);
    assert_string_equal(out, "127.0.0.3");
    proxies_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_length_and_chunked_pass),
        cmocka_unit_test(test_length_and_chunked_together_is_400),
        cmocka_unit_test(test_bad_or_differing_lengths_are_400),
        cmocka_unit_test(test_other_codings_are_501),
        cmocka_unit_test(test_malformed_lines_are_400),
        cmocka_unit_test(test_proxies_parse_and_trust),
        cmocka_unit_test(test_client_address_reads_forwarded_from_the_right),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
