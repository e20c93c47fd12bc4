/* Unit tests for src/reports/links.c: a link made by report_link_make
 * verifies until its expiry and not after; the signature is an independent
 * HMAC-SHA256 of "<id>\n<expires>\n<nonce>" (recomputed here with the
 * one-shot function); any altered byte is invalid_signature, also when the
 * link is expired too; malformed values are refused; two links made in the
 * same second differ. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "reports/links.h"

#define ID "0f8b7c1e-9c1d-4b7a-8e3f-2a1b3c4d5e6f"
#define BASE "http://127.0.0.1:8080"
#define NOW 1700000000

static const uint8_t KEY[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

typedef struct parts {
    char expires[32], nonce[64], signature[96];
} parts_t;

/* Splits a link's query into its three values. */
static void split(const char *url, parts_t *p)
{
    const char *q = strchr(url, '?');
    assert_non_null(q);
    assert_int_equal(sscanf(q, "?expires=%31[^&]&nonce=%63[^&]&signature=%95s", p->expires,
                            p->nonce, p->signature),
                     3);
}

static crypto_hmac_key_t *key_new(void)
{
    crypto_hmac_key_t *k = crypto_hmac_key_new(KEY, sizeof KEY);
    assert_non_null(k);
    return k;
}

static void make(crypto_hmac_key_t *k, char *url, parts_t *p)
{
    int64_t expires = 0;
    assert_int_equal(report_link_make(k, BASE, "inventory-summary", ID, NOW, url, REPORT_LINK_MAX, &expires), 0);
    assert_int_equal(expires, NOW + REPORT_LINK_TTL_S);
    split(url, p);
}

static void test_link_shape_and_independent_signature(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char url[REPORT_LINK_MAX];
    parts_t p;
    make(k, url, &p);
    assert_int_equal(strncmp(url, BASE "/v1/reports/inventory-summary/" ID "/download?", 96), 0);
    assert_string_equal(p.expires, "1700000900");
    assert_int_equal(strlen(p.nonce), 22);     /* 16 bytes */
    assert_int_equal(strlen(p.signature), 43); /* 32 bytes */
    char msg[256], sig[64];
    uint8_t mac[32];
    snprintf(msg, sizeof msg, "%s\n%s\n%s", ID, p.expires, p.nonce);
    assert_int_equal(crypto_hmac_sha256(KEY, sizeof KEY, msg, strlen(msg), mac), 0);
    crypto_base64url_encode(mac, sizeof mac, sig, sizeof sig);
    assert_string_equal(sig, p.signature);
    crypto_hmac_key_free(k);
}

static void test_valid_until_expiry(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char url[REPORT_LINK_MAX];
    parts_t p;
    make(k, url, &p);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, p.signature, NOW),
                     REPORT_LINK_OK);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, p.signature, NOW + 899),
                     REPORT_LINK_OK);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, p.signature, NOW + 900),
                     REPORT_LINK_EXPIRED);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, p.signature, NOW + 86400),
                     REPORT_LINK_EXPIRED);
    crypto_hmac_key_free(k);
}

static void test_altered_is_invalid_even_when_expired(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char url[REPORT_LINK_MAX];
    parts_t p;
    make(k, url, &p);
    char sig[96], nonce[64];
    strcpy(sig, p.signature);
    sig[5] = sig[5] == 'A' ? 'B' : 'A';
    strcpy(nonce, p.nonce);
    nonce[0] = nonce[0] == 'A' ? 'B' : 'A';
    int64_t times[] = {NOW, NOW + 10000};
    for (size_t i = 0; i < 2; i++) {
        int64_t t = times[i];
        assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, sig, t),
                         REPORT_LINK_INVALID);
        assert_int_equal(report_link_verify(k, ID, "1700000901", p.nonce, p.signature, t),
                         REPORT_LINK_INVALID);
        assert_int_equal(report_link_verify(k, ID, p.expires, nonce, p.signature, t),
                         REPORT_LINK_INVALID);
        assert_int_equal(report_link_verify(k, "1f8b7c1e-9c1d-4b7a-8e3f-2a1b3c4d5e6f", p.expires,
                                            p.nonce, p.signature, t),
                         REPORT_LINK_INVALID);
    }
    /* another key */
    uint8_t other[32] = {0};
    crypto_hmac_key_t *k2 = crypto_hmac_key_new(other, sizeof other);
    assert_int_equal(report_link_verify(k2, ID, p.expires, p.nonce, p.signature, NOW),
                     REPORT_LINK_INVALID);
    crypto_hmac_key_free(k2);
    crypto_hmac_key_free(k);
}

static void test_malformed_values_are_invalid(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char url[REPORT_LINK_MAX];
    parts_t p;
    make(k, url, &p);
    char longer[128];
    snprintf(longer, sizeof longer, "%sA", p.signature);
    char padded[128];
    snprintf(padded, sizeof padded, "%s=", p.signature);
    const char *bad_expires[] = {"", "-1", "+1700000900", "17e8", "1700000900 ",
                                 "9999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_expires / sizeof bad_expires[0]; i++)
        assert_int_equal(report_link_verify(k, ID, bad_expires[i], p.nonce, p.signature, NOW),
                         REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, longer, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, padded, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, "abc", p.signature, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, "", NOW), REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, NULL, p.nonce, p.signature, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, NULL, p.signature, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, NULL, NOW),
                     REPORT_LINK_INVALID);
    assert_int_equal(report_link_verify(k, NULL, p.expires, p.nonce, p.signature, NOW),
                     REPORT_LINK_INVALID);
    crypto_hmac_key_free(k);
}

/* A link under another collection (tax-form PDFs) has that path and
 * verifies with the same key, the id alone being signed. */
static void test_link_under_another_collection(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char url[REPORT_LINK_MAX];
    int64_t expires = 0;
    assert_int_equal(report_link_make_at(k, BASE, "/v1/tax-documentation/document", ID, NOW, url,
                                         sizeof url, &expires),
                     0);
    assert_true(strncmp(url, BASE "/v1/tax-documentation/document/" ID "/download?expires=",
                        strlen(BASE "/v1/tax-documentation/document/" ID "/download?expires=")) ==
                0);
    parts_t p;
    split(url, &p);
    assert_int_equal(report_link_verify(k, ID, p.expires, p.nonce, p.signature, NOW),
                     REPORT_LINK_OK);
    assert_int_equal(report_link_make_at(k, BASE, "/v1/tax-documentation/document", ID, NOW, url,
                                         40, &expires),
                     -1); /* too small a buffer */
    crypto_hmac_key_free(k);
}

static void test_two_links_in_one_second_differ(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char a[REPORT_LINK_MAX], b[REPORT_LINK_MAX];
    parts_t pa, pb;
    make(k, a, &pa);
    make(k, b, &pb);
    assert_string_not_equal(a, b);
    assert_string_not_equal(pa.nonce, pb.nonce);
    assert_int_equal(report_link_verify(k, ID, pb.expires, pb.nonce, pb.signature, NOW),
                     REPORT_LINK_OK);
    crypto_hmac_key_free(k);
}

static void test_small_buffer_fails(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = key_new();
    char small[64];
    int64_t expires;
    assert_int_equal(report_link_make(k, BASE, "inventory-summary", ID, NOW, small, sizeof small, &expires), -1);
    crypto_hmac_key_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_shape_and_independent_signature),
        cmocka_unit_test(test_valid_until_expiry),
        cmocka_unit_test(test_altered_is_invalid_even_when_expired),
        cmocka_unit_test(test_malformed_values_are_invalid),
        cmocka_unit_test(test_two_links_in_one_second_differ),
        cmocka_unit_test(test_link_under_another_collection),
        cmocka_unit_test(test_small_buffer_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
