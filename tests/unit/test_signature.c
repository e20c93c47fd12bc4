/* Unit tests of the webhook signature header against values computed with
 * Python's hmac and base64 (an independent implementation): format, order
 * during rotation, and verification by any one signature. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "webhooks/signature.h"

static const char BODY[] = "{\"timestamp\":\"2024-02-29T12:34:56.789Z\",\"data\":[{\"event_type\":\"X\"}]}";
#define NEW_SIG "IYio1zlUuUoFOc61S9jbKkZlQtZ5trfIJCIx6kec3c0="
#define OLD_SIG "C1X/LlXsRY9Lhfs5PTofmiUXX7SoFToHSI9BztqRcvs="

static void test_header_format_and_rotation(void **state)
{
    (void)state;
    const char *one[] = {"new-secret"};
    char *h = signature_header(one, 1, BODY, strlen(BODY));
    assert_string_equal(h, "v1=" NEW_SIG);
    free(h);
    const char *both[] = {"new-secret", "old-secret"};
    h = signature_header(both, 2, BODY, strlen(BODY));
    assert_string_equal(h, "v1=" NEW_SIG ",v1=" OLD_SIG); /* newest first, no spaces */
    free(h);
    assert_null(signature_header(both, 0, BODY, strlen(BODY))); /* signing cannot be off */
}

/* The dispatcher signs with keys prepared once per subscription: the same
 * header, byte for byte. */
static void test_keyed_header_is_the_same(void **state)
{
    (void)state;
    crypto_hmac_key_t *keys[] = {crypto_hmac_key_new("new-secret", 10),
                                 crypto_hmac_key_new("old-secret", 10)};
    assert_non_null(keys[0]);
    assert_non_null(keys[1]);
    char *h = signature_header_keyed((const crypto_hmac_key_t *const *)keys, 2, BODY,
                                     strlen(BODY));
    assert_string_equal(h, "v1=" NEW_SIG ",v1=" OLD_SIG);
    free(h);
    h = signature_header_keyed((const crypto_hmac_key_t *const *)keys, 1, BODY, strlen(BODY));
    assert_string_equal(h, "v1=" NEW_SIG);
    free(h);
    assert_null(signature_header_keyed((const crypto_hmac_key_t *const *)keys, 0, BODY,
                                       strlen(BODY)));
    crypto_hmac_key_free(keys[0]);
    crypto_hmac_key_free(keys[1]);
}

static void test_verify(void **state)
{
    (void)state;
    const char *header = "v1=" NEW_SIG ",v1=" OLD_SIG;
    assert_true(signature_verify(header, "old-secret", BODY, strlen(BODY)));
    assert_true(signature_verify(header, "new-secret", BODY, strlen(BODY)));
    assert_false(signature_verify(header, "other", BODY, strlen(BODY)));
    assert_false(signature_verify(header, "new-secret", BODY, strlen(BODY) - 1));
    assert_false(signature_verify("v1=" NEW_SIG "x", "new-secret", BODY, strlen(BODY)));
    assert_false(signature_verify("v2=" NEW_SIG, "new-secret", BODY, strlen(BODY)));
    assert_false(signature_verify("", "new-secret", BODY, strlen(BODY)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_format_and_rotation),
        cmocka_unit_test(test_keyed_header_is_the_same),
        cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
