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
        cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
