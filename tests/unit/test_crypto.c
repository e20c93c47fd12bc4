/* Unit tests for src/core/crypto.c: known-answer vectors (RFC 4231 HMAC-SHA256,
 * FIPS 180-2 SHA-256, RFC 4648 base64, GCM test case 14) plus the strictness
 * and failure paths the token and key code rely on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/crypto.h"

static void hex_of(const uint8_t *b, size_t n, char *out)
{
    crypto_hex_encode(b, n, out);
}

static void test_sha256_known_answers(void **state)
{
    (void)state;
    uint8_t d[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_HEX_LEN(CRYPTO_SHA256_LEN)];
    crypto_sha256("abc", 3, d);
    hex_of(d, sizeof d, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    crypto_sha256("", 0, d);
    hex_of(d, sizeof d, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_hex_encode(void **state)
{
    (void)state;
    const uint8_t b[] = {0x00, 0xab, 0xff, 0x10};
    char hex[CRYPTO_HEX_LEN(sizeof b)];
    crypto_hex_encode(b, sizeof b, hex);
    assert_string_equal(hex, "00abff10");
    crypto_hex_encode(b, 0, hex);
    assert_string_equal(hex, "");
}

/* ---- HMAC: RFC 4231 §4 ---- */

struct hmac_case {
    uint8_t key[131];
    size_t key_len;
    const char *data;
    size_t data_len;
    const char *mac_hex; /* truncated for case 5 */
};

static void fill(uint8_t *b, uint8_t v, size_t n)
{
    memset(b, v, n);
}

static size_t rfc4231_cases(struct hmac_case *c)
{
    static uint8_t d3[50], d4[50];
    memset(d3, 0xdd, sizeof d3);
    memset(d4, 0xcd, sizeof d4);
    memset(c, 0, 7 * sizeof *c);
    fill(c[0].key, 0x0b, 20);
    c[0].key_len = 20;
    c[0].data = "Hi There";
    c[0].mac_hex = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
    memcpy(c[1].key, "Jefe", 4);
    c[1].key_len = 4;
    c[1].data = "what do ya want for nothing?";
    c[1].mac_hex = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    fill(c[2].key, 0xaa, 20);
    c[2].key_len = 20;
    c[2].data = (const char *)d3;
    c[2].data_len = sizeof d3;
    c[2].mac_hex = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe";
    for (int i = 0; i < 25; i++)
        c[3].key[i] = (uint8_t)(i + 1);
    c[3].key_len = 25;
    c[3].data = (const char *)d4;
    c[3].data_len = sizeof d4;
    c[3].mac_hex = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b";
    fill(c[4].key, 0x0c, 20);
    c[4].key_len = 20;
    c[4].data = "Test With Truncation";
    c[4].mac_hex = "a3b6167473100ee06e0c796c2955552b";
    fill(c[5].key, 0xaa, 131);
    c[5].key_len = 131;
    c[5].data = "Test Using Larger Than Block-Size Key - Hash Key First";
    c[5].mac_hex = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
    fill(c[6].key, 0xaa, 131);
    c[6].key_len = 131;
    c[6].data = "This is a test using a larger than block-size key and a larger than "
                "block-size data. The key needs to be hashed before being used by the "
                "HMAC algorithm.";
    c[6].mac_hex = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2";
    for (int i = 0; i < 7; i++)
        if (c[i].data_len == 0)
            c[i].data_len = strlen(c[i].data);
    return 7;
}

static void assert_mac_hex(const uint8_t mac[CRYPTO_SHA256_LEN], const char *want)
{
    char hex[CRYPTO_HEX_LEN(CRYPTO_SHA256_LEN)];
    crypto_hex_encode(mac, CRYPTO_SHA256_LEN, hex);
    /* Case 5 publishes only the first 128 bits. */
    assert_memory_equal(hex, want, strlen(want));
}

static void test_hmac_rfc4231_one_shot(void **state)
{
    (void)state;
    struct hmac_case c[7];
    size_t n = rfc4231_cases(c);
    for (size_t i = 0; i < n; i++) {
        uint8_t mac[CRYPTO_SHA256_LEN];
        assert_int_equal(crypto_hmac_sha256(c[i].key, c[i].key_len, c[i].data, c[i].data_len, mac),
                         0);
        assert_mac_hex(mac, c[i].mac_hex);
    }
}

static void test_hmac_rfc4231_prepared_key(void **state)
{
    (void)state;
    struct hmac_case c[7];
    size_t n = rfc4231_cases(c);
    for (size_t i = 0; i < n; i++) {
        crypto_hmac_key_t *k = crypto_hmac_key_new(c[i].key, c[i].key_len);
        assert_non_null(k);
        /* Signing twice proves the prepared context is not consumed. */
        for (int round = 0; round < 2; round++) {
            uint8_t mac[CRYPTO_SHA256_LEN];
            assert_int_equal(crypto_hmac_key_sign(k, c[i].data, c[i].data_len, mac), 0);
            assert_mac_hex(mac, c[i].mac_hex);
        }
        crypto_hmac_key_free(k);
    }
}

static void test_hmac_empty_key_and_message(void **state)
{
    (void)state;
    uint8_t mac[CRYPTO_SHA256_LEN];
    assert_int_equal(crypto_hmac_sha256(NULL, 0, NULL, 0, mac), 0);
    assert_mac_hex(mac, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
    assert_null(crypto_hmac_key_new(NULL, 5));
    assert_int_equal(crypto_hmac_key_sign(NULL, "x", 1, mac), -1);
    crypto_hmac_key_free(NULL);
}

struct hmac_thread_arg {
    const crypto_hmac_key_t *key;
    int failures;
};

static void *hmac_thread(void *p)
{
    struct hmac_thread_arg *a = p;
    for (int i = 0; i < 500; i++) {
        uint8_t mac[CRYPTO_SHA256_LEN];
        char hex[CRYPTO_HEX_LEN(CRYPTO_SHA256_LEN)];
        if (crypto_hmac_key_sign(a->key, "what do ya want for nothing?", 28, mac) != 0) {
            a->failures++;
            continue;
        }
        crypto_hex_encode(mac, sizeof mac, hex);
        if (strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") != 0)
            a->failures++;
    }
    return NULL;
}

static void test_hmac_prepared_key_shared_by_threads(void **state)
{
    (void)state;
    crypto_hmac_key_t *k = crypto_hmac_key_new("Jefe", 4);
    assert_non_null(k);
    pthread_t t[4];
    struct hmac_thread_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct hmac_thread_arg){.key = k};
        assert_int_equal(pthread_create(&t[i], NULL, hmac_thread, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    crypto_hmac_key_free(k);
}

/* ---- constant-time equality ---- */

static void test_equal(void **state)
{
    (void)state;
    assert_true(crypto_equal("abc", 3, "abc", 3));
    assert_false(crypto_equal("abc", 3, "abd", 3));
    assert_false(crypto_equal("xbc", 3, "abc", 3));
    /* A prefix is not equal: lengths are compared first. */
    assert_false(crypto_equal("abc", 3, "abcd", 4));
    assert_false(crypto_equal("abcd", 4, "abc", 3));
    assert_true(crypto_equal("", 0, "", 0));
    assert_false(crypto_equal("", 0, "a", 1));
}

/* ---- base64: RFC 4648 §10 ---- */

static const char *const rfc4648_in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
static const char *const rfc4648_b64[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                          "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
static const char *const rfc4648_b64url[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE",
                                             "Zm9vYmFy"};

static void test_base64_rfc4648_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < 7; i++) {
        const char *in = rfc4648_in[i];
        char enc[16];
        uint8_t dec[16];
        size_t dec_len = 99;
        size_t n = crypto_base64_encode(in, strlen(in), enc, sizeof enc);
        assert_int_equal(n, strlen(rfc4648_b64[i]));
        assert_string_equal(enc, rfc4648_b64[i]);
        assert_int_equal(crypto_base64_decode(enc, n, dec, sizeof dec, &dec_len), 0);
        assert_int_equal(dec_len, strlen(in));
        assert_memory_equal(dec, in, dec_len);

        n = crypto_base64url_encode(in, strlen(in), enc, sizeof enc);
        assert_int_equal(n, strlen(rfc4648_b64url[i]));
        assert_string_equal(enc, rfc4648_b64url[i]);
        dec_len = 99;
        assert_int_equal(crypto_base64url_decode(enc, n, dec, sizeof dec, &dec_len), 0);
        assert_int_equal(dec_len, strlen(in));
        assert_memory_equal(dec, in, dec_len);
    }
}

static void test_base64_alphabets_differ(void **state)
{
    (void)state;
    const uint8_t b[] = {0xfb, 0xff, 0xbf};
    char enc[8];
    uint8_t dec[4];
    size_t n;
    assert_int_equal(crypto_base64_encode(b, 3, enc, sizeof enc), 4);
    assert_string_equal(enc, "+/+/");
    assert_int_equal(crypto_base64url_encode(b, 3, enc, sizeof enc), 4);
    assert_string_equal(enc, "-_-_");
    assert_int_equal(crypto_base64url_decode("-_-_", 4, dec, sizeof dec, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(dec, b, 3);
    assert_int_equal(crypto_base64_decode("+/+/", 4, dec, sizeof dec, &n), 0);
    assert_memory_equal(dec, b, 3);
    /* Each decoder refuses the other's alphabet. */
    assert_int_equal(crypto_base64_decode("-_-_", 4, dec, sizeof dec, &n), -1);
    assert_int_equal(crypto_base64url_decode("+/+/", 4, dec, sizeof dec, &n), -1);
    assert_int_equal(crypto_base64url_decode("Zm+v", 4, dec, sizeof dec, &n), -1);
    assert_int_equal(crypto_base64url_decode("Zm/v", 4, dec, sizeof dec, &n), -1);
}

static void test_base64_round_trip_all_lengths(void **state)
{
    (void)state;
    uint8_t src[70];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (size_t len = 0; len <= sizeof src; len++) {
        char enc[CRYPTO_BASE64_LEN(sizeof src)];
        uint8_t dec[sizeof src];
        size_t n, dn = 0;
        n = crypto_base64_encode(src, len, enc, CRYPTO_BASE64_LEN(len));
        assert_int_equal(n, CRYPTO_BASE64_LEN(len) - 1);
        assert_int_equal(crypto_base64_decode(enc, n, dec, len, &dn), 0);
        assert_int_equal(dn, len);
        assert_memory_equal(dec, src, len);
        n = crypto_base64url_encode(src, len, enc, sizeof enc);
        assert_int_equal(n, (len * 4 + 2) / 3);
        assert_null(strchr(enc, '='));
        assert_int_equal(crypto_base64url_decode(enc, n, dec, len, &dn), 0);
        assert_int_equal(dn, len);
        assert_memory_equal(dec, src, len);
    }
}

static void test_base64_strict_rejections(void **state)
{
    (void)state;
    uint8_t dec[16];
    size_t n = 0;
    const char *bad[] = {
        "Zg=",      /* length not a multiple of 4 */
        "Zg",       /* padding missing */
        "Zm9",      /* padding missing */
        "Z===",     /* three padding characters */
        "====",     /* padding only */
        "Zg=a",     /* data after padding */
        "Z=g=",     /* padding inside */
        "=Zg=",     /* padding first */
        "Zh==",     /* non-zero trailing bits: a second encoding of "f" */
        "Zm9=",     /* non-zero trailing bits */
        "Zm9v\n",   /* whitespace */
        "Zm 9v",    /* whitespace */
        "Zm9*",     /* outside the alphabet */
        "Zm9vYg==Zm9v", /* padding in the middle */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = crypto_base64_decode(bad[i], strlen(bad[i]), dec, sizeof dec, &n);
        if (rc != -1)
            fail_msg("accepted base64 \"%s\"", bad[i]);
    }
    /* An embedded NUL is outside the alphabet. */
    assert_int_equal(crypto_base64_decode("Zm\0v", 4, dec, sizeof dec, &n), -1);
    assert_int_equal(crypto_base64_decode("Zm9v", 4, dec, sizeof dec, NULL), -1);
}

static void test_base64url_strict_rejections(void **state)
{
    (void)state;
    uint8_t dec[16];
    size_t n = 0;
    const char *bad[] = {
        "Zg==",  /* padding is not base64url */
        "Zm8=",  /* padding */
        "Z",     /* len % 4 == 1 */
        "Zm9vY", /* len % 4 == 1 */
        "Zh",    /* non-zero trailing bits */
        "Zm9",   /* non-zero trailing bits */
        "Zm9v.", /* outside the alphabet */
        "Zm v",  /* whitespace */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = crypto_base64url_decode(bad[i], strlen(bad[i]), dec, sizeof dec, &n);
        if (rc != -1)
            fail_msg("accepted base64url \"%s\"", bad[i]);
    }
    assert_int_equal(crypto_base64url_decode("Zm\0v", 4, dec, sizeof dec, &n), -1);
    assert_int_equal(crypto_base64url_decode("Zm9v", 4, dec, sizeof dec, NULL), -1);
}

static void test_base64_small_buffers(void **state)
{
    (void)state;
    char enc[8];
    uint8_t dec[8];
    size_t n = 0;
    /* "f" needs "Zg==" plus the NUL: 5 bytes. */
    assert_int_equal(crypto_base64_encode("f", 1, enc, 4), 0);
    assert_int_equal(crypto_base64_encode("f", 1, enc, 5), 4);
    /* base64url "f" needs "Zg" plus the NUL: 3 bytes. */
    assert_int_equal(crypto_base64url_encode("f", 1, enc, 2), 0);
    assert_int_equal(crypto_base64url_encode("f", 1, enc, 3), 2);
    assert_int_equal(crypto_base64_encode("foo", 3, NULL, 0), 0);
    /* Decoding "foobar" needs 6 bytes. */
    assert_int_equal(crypto_base64_decode("Zm9vYmFy", 8, dec, 5, &n), -1);
    assert_int_equal(crypto_base64_decode("Zm9vYmFy", 8, dec, 6, &n), 0);
    assert_int_equal(n, 6);
    assert_int_equal(crypto_base64url_decode("Zm9vYmE", 7, dec, 4, &n), -1);
    assert_int_equal(crypto_base64url_decode("Zm9vYmE", 7, dec, 5, &n), 0);
    assert_int_equal(n, 5);
}

/* ---- AES-256-GCM ---- */

static void test_aead_known_answer_open(void **state)
{
    (void)state;
    /* GCM specification (McGrew & Viega) test case 14: zero key, zero IV, one
     * zero block. */
    uint8_t key[32] = {0};
    uint8_t sealed[12 + 16 + 16] = {0};
    const uint8_t ct[16] = {0xce, 0xa7, 0x40, 0x3d, 0x4d, 0x60, 0x6b, 0x6e,
                            0x07, 0x4e, 0xc5, 0xd3, 0xba, 0xf3, 0x9d, 0x18};
    const uint8_t tag[16] = {0xd0, 0xd1, 0xc8, 0xa7, 0x99, 0x99, 0x6b, 0xf0,
                             0x26, 0x5b, 0x98, 0xb5, 0xd4, 0x8a, 0xb9, 0x19};
    memcpy(sealed + 12, ct, 16);
    memcpy(sealed + 28, tag, 16);
    uint8_t plain[16];
    memset(plain, 0xee, sizeof plain);
    assert_int_equal(crypto_aead_open(key, NULL, 0, sealed, sizeof sealed, plain), 0);
    uint8_t zero[16] = {0};
    assert_memory_equal(plain, zero, 16);
}

static void test_aead_round_trip(void **state)
{
    (void)state;
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
    assert_int_equal(crypto_random_bytes(key, sizeof key), 0);
    const char msg[] = "123-45-6789";
    const char aad[] = "tenant-1/filer-7";
    uint8_t s1[sizeof msg + CRYPTO_AEAD_OVERHEAD], s2[sizeof s1];
    uint8_t plain[sizeof msg];
    assert_int_equal(crypto_aead_seal(key, aad, strlen(aad), msg, sizeof msg, s1), 0);
    assert_int_equal(crypto_aead_seal(key, aad, strlen(aad), msg, sizeof msg, s2), 0);
    /* Fresh nonces: the same message seals differently. */
    assert_memory_not_equal(s1, s2, sizeof s1);
    assert_memory_not_equal(s1 + CRYPTO_AEAD_NONCE_LEN, msg, sizeof msg);
    assert_int_equal(crypto_aead_open(key, aad, strlen(aad), s1, sizeof s1, plain), 0);
    assert_memory_equal(plain, msg, sizeof msg);
    assert_int_equal(crypto_aead_open(key, aad, strlen(aad), s2, sizeof s2, plain), 0);
    assert_memory_equal(plain, msg, sizeof msg);
}

static void test_aead_empty_plaintext_and_no_aad(void **state)
{
    (void)state;
    uint8_t key[CRYPTO_AEAD_KEY_LEN] = {1};
    uint8_t sealed[CRYPTO_AEAD_OVERHEAD];
    assert_int_equal(crypto_aead_seal(key, NULL, 0, NULL, 0, sealed), 0);
    assert_int_equal(crypto_aead_open(key, NULL, 0, sealed, sizeof sealed, NULL), 0);
    sealed[CRYPTO_AEAD_OVERHEAD - 1] ^= 1;
    assert_int_equal(crypto_aead_open(key, NULL, 0, sealed, sizeof sealed, NULL), -1);
}

static void test_aead_rejects_every_tampered_byte(void **state)
{
    (void)state;
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
    assert_int_equal(crypto_random_bytes(key, sizeof key), 0);
    const char msg[] = "secret TIN";
    uint8_t sealed[sizeof msg + CRYPTO_AEAD_OVERHEAD];
    uint8_t plain[sizeof msg];
    assert_int_equal(crypto_aead_seal(key, "a", 1, msg, sizeof msg, sealed), 0);
    for (size_t i = 0; i < sizeof sealed; i++) {
        sealed[i] ^= 0x01;
        memset(plain, 0x55, sizeof plain);
        if (crypto_aead_open(key, "a", 1, sealed, sizeof sealed, plain) != -1)
            fail_msg("tampered byte %zu accepted", i);
        /* No unauthenticated plaintext is left behind. */
        assert_null(memmem(plain, sizeof plain, "secret", 6));
        sealed[i] ^= 0x01;
    }
    assert_int_equal(crypto_aead_open(key, "a", 1, sealed, sizeof sealed, plain), 0);
}

static void test_aead_wrong_key_aad_and_short_input(void **state)
{
    (void)state;
    uint8_t key[CRYPTO_AEAD_KEY_LEN], other[CRYPTO_AEAD_KEY_LEN];
    assert_int_equal(crypto_random_bytes(key, sizeof key), 0);
    memcpy(other, key, sizeof other);
    other[31] ^= 0x80;
    const char msg[] = "payload";
    uint8_t sealed[sizeof msg + CRYPTO_AEAD_OVERHEAD];
    uint8_t plain[sizeof msg];
    assert_int_equal(crypto_aead_seal(key, "aad", 3, msg, sizeof msg, sealed), 0);
    assert_int_equal(crypto_aead_open(other, "aad", 3, sealed, sizeof sealed, plain), -1);
    assert_int_equal(crypto_aead_open(key, "aae", 3, sealed, sizeof sealed, plain), -1);
    assert_int_equal(crypto_aead_open(key, NULL, 0, sealed, sizeof sealed, plain), -1);
    assert_int_equal(crypto_aead_open(key, "aad", 2, sealed, sizeof sealed, plain), -1);
    /* Truncations: shorter than the overhead, and a dropped tag byte. */
    assert_int_equal(crypto_aead_open(key, "aad", 3, sealed, CRYPTO_AEAD_OVERHEAD - 1, plain), -1);
    assert_int_equal(crypto_aead_open(key, "aad", 3, sealed, 0, plain), -1);
    assert_int_equal(crypto_aead_open(key, "aad", 3, sealed, sizeof sealed - 1, plain), -1);
    assert_int_equal(crypto_aead_open(key, "aad", 3, sealed, sizeof sealed, plain), 0);
    assert_memory_equal(plain, msg, sizeof msg);
}

static void test_random_bytes(void **state)
{
    (void)state;
    uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};
    assert_int_equal(crypto_random_bytes(a, sizeof a), 0);
    assert_int_equal(crypto_random_bytes(b, sizeof b), 0);
    assert_memory_not_equal(a, zero, sizeof a);
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(crypto_random_bytes(a, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_known_answers),
        cmocka_unit_test(test_hex_encode),
        cmocka_unit_test(test_hmac_rfc4231_one_shot),
        cmocka_unit_test(test_hmac_rfc4231_prepared_key),
        cmocka_unit_test(test_hmac_empty_key_and_message),
        cmocka_unit_test(test_hmac_prepared_key_shared_by_threads),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_base64_rfc4648_vectors),
        cmocka_unit_test(test_base64_alphabets_differ),
        cmocka_unit_test(test_base64_round_trip_all_lengths),
        cmocka_unit_test(test_base64_strict_rejections),
        cmocka_unit_test(test_base64url_strict_rejections),
        cmocka_unit_test(test_base64_small_buffers),
        cmocka_unit_test(test_aead_known_answer_open),
        cmocka_unit_test(test_aead_round_trip),
        cmocka_unit_test(test_aead_empty_plaintext_and_no_aad),
        cmocka_unit_test(test_aead_rejects_every_tampered_byte),
        cmocka_unit_test(test_aead_wrong_key_aad_and_short_input),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
