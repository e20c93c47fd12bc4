/* Unit tests of the TIN check's pure parts: the structural rules of each
 * type with valid and invalid examples of every rule (tincheck/rules.h), the
 * list matcher and its file format (tincheck/matcher.h), and the verdict
 * that combines them (tincheck_evaluate). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tincheck/matcher.h"
#include "tincheck/rules.h"
#include "tincheck/runner.h"

typedef struct example {
    const char *type;
    const char *tin;
    tincheck_rule_t rule;
    const char *normal; /* expected normal form when the rule is OK */
} example_t;

static void check_examples(const example_t *ex, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char normal[TINCHECK_NORMAL_MAX];
        tincheck_rule_t got = tincheck_rules_check(ex[i].type, ex[i].tin, normal);
        if (got != ex[i].rule)
            fail_msg("%s '%s': expected rule %s, got %s", ex[i].type, ex[i].tin,
                     tincheck_rule_name(ex[i].rule), tincheck_rule_name(got));
        assert_string_equal(normal, ex[i].rule == TINCHECK_RULE_OK ? ex[i].normal : "");
    }
}

#define CHECK(list) check_examples((list), sizeof(list) / sizeof((list)[0]))

static void test_ssn(void **state)
{
    (void)state;
    static const example_t ex[] = {
        {"SSN", "123-45-6789", TINCHECK_RULE_OK, "123456789"},
        {"SSN", "123456789", TINCHECK_RULE_OK, "123456789"},
        {"SSN", "001-01-0001", TINCHECK_RULE_OK, "001010001"},
        {"SSN", "665-99-9999", TINCHECK_RULE_OK, "665999999"},
        {"SSN", "667-01-0001", TINCHECK_RULE_OK, "667010001"},
        {"SSN", "899-99-9999", TINCHECK_RULE_OK, "899999999"},
        {"SSN", "000-12-3456", TINCHECK_RULE_AREA, NULL},
        {"SSN", "666-12-3456", TINCHECK_RULE_AREA, NULL},
        {"SSN", "900-12-3456", TINCHECK_RULE_AREA, NULL},
        {"SSN", "999123456", TINCHECK_RULE_AREA, NULL},
        {"SSN", "123-00-6789", TINCHECK_RULE_GROUP, NULL},
        {"SSN", "123-45-0000", TINCHECK_RULE_SERIAL, NULL},
        {"SSN", "12345678", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "1234567890", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "123-456-789", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "12-3456789", TINCHECK_RULE_SHAPE, NULL},  /* the EIN's hyphen */
        {"SSN", "123-45-678", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "123-456789", TINCHECK_RULE_SHAPE, NULL},  /* one hyphen of two */
        {"SSN", "123 45 6789", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "12a-45-6789", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "123--45-6789", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "-123456789", TINCHECK_RULE_SHAPE, NULL},
        {"SSN", "", TINCHECK_RULE_SHAPE, NULL},
    };
    CHECK(ex);
}

static void test_itin(void **state)
{
    (void)state;
    static const example_t ex[] = {
        {"ITIN", "900-50-1234", TINCHECK_RULE_OK, "900501234"},
        {"ITIN", "912-65-1234", TINCHECK_RULE_OK, "912651234"},
        {"ITIN", "912701234", TINCHECK_RULE_OK, "912701234"},
        {"ITIN", "999-88-0000", TINCHECK_RULE_OK, "999880000"},
        {"ITIN", "912-90-1234", TINCHECK_RULE_OK, "912901234"},
        {"ITIN", "912-92-1234", TINCHECK_RULE_OK, "912921234"},
        {"ITIN", "912-94-1234", TINCHECK_RULE_OK, "912941234"},
        {"ITIN", "912-99-1234", TINCHECK_RULE_OK, "912991234"},
        {"ITIN", "812-70-1234", TINCHECK_RULE_AREA, NULL},
        {"ITIN", "012-70-1234", TINCHECK_RULE_AREA, NULL},
        {"ITIN", "912-49-1234", TINCHECK_RULE_GROUP, NULL},
        {"ITIN", "912-66-1234", TINCHECK_RULE_GROUP, NULL},
        {"ITIN", "912-69-1234", TINCHECK_RULE_GROUP, NULL},
        {"ITIN", "912-89-1234", TINCHECK_RULE_GROUP, NULL},
        {"ITIN", "912-93-1234", TINCHECK_RULE_GROUP, NULL}, /* the ATIN's group */
        {"ITIN", "912-00-1234", TINCHECK_RULE_GROUP, NULL},
        {"ITIN", "912-70-123", TINCHECK_RULE_SHAPE, NULL},
        {"ITIN", "91-2701234", TINCHECK_RULE_SHAPE, NULL},
    };
    CHECK(ex);
}

static void test_atin(void **state)
{
    (void)state;
    static const example_t ex[] = {
        {"ATIN", "912-93-4567", TINCHECK_RULE_OK, "912934567"},
        {"ATIN", "900930000", TINCHECK_RULE_OK, "900930000"},
        {"ATIN", "812-93-4567", TINCHECK_RULE_AREA, NULL},
        {"ATIN", "912-92-4567", TINCHECK_RULE_GROUP, NULL},
        {"ATIN", "912-70-4567", TINCHECK_RULE_GROUP, NULL},
        {"ATIN", "9129345678", TINCHECK_RULE_SHAPE, NULL},
    };
    CHECK(ex);
}

static void test_ein(void **state)
{
    (void)state;
    /* every prefix 00..99 against the published list */
    static const int valid[] = {1,  2,  3,  4,  5,  6,  10, 11, 12, 13, 14, 15, 16, 20,
                                21, 22, 23, 24, 25, 26, 27, 30, 31, 32, 33, 34, 35, 36,
                                37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 50, 51,
                                52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
                                66, 67, 68, 71, 72, 73, 74, 75, 76, 77, 80, 81, 82, 83,
                                84, 85, 86, 87, 88, 90, 91, 92, 93, 94, 95, 98, 99};
    size_t next = 0;
    for (int p = 0; p < 100; p++) {
        char tin[24], normal[TINCHECK_NORMAL_MAX];
        snprintf(tin, sizeof tin, "%02d-3456789", p);
        bool expected = next < sizeof valid / sizeof valid[0] && valid[next] == p;
        next += expected;
        tincheck_rule_t got = tincheck_rules_check("EIN", tin, normal);
        if (got != (expected ? TINCHECK_RULE_OK : TINCHECK_RULE_PREFIX))
            fail_msg("EIN prefix %02d: got %s", p, tincheck_rule_name(got));
    }
    static const example_t ex[] = {
        {"EIN", "12-3456789", TINCHECK_RULE_OK, "123456789"},
        {"EIN", "123456789", TINCHECK_RULE_OK, "123456789"},
        {"EIN", "00-0000000", TINCHECK_RULE_PREFIX, NULL},
        {"EIN", "07-1234567", TINCHECK_RULE_PREFIX, NULL},
        {"EIN", "89-1234567", TINCHECK_RULE_PREFIX, NULL},
        {"EIN", "123-45-6789", TINCHECK_RULE_SHAPE, NULL}, /* the SSN's hyphens */
        {"EIN", "12-345678", TINCHECK_RULE_SHAPE, NULL},
        {"EIN", "1-23456789", TINCHECK_RULE_SHAPE, NULL},
        {"EIN", "12-34567890", TINCHECK_RULE_SHAPE, NULL},
    };
    CHECK(ex);
}

static void test_foreign(void **state)
{
    (void)state;
    static const example_t ex[] = {
        {"FOREIGN", "DE 123/456.78", TINCHECK_RULE_OK, "DE12345678"},
        {"FOREIGN", "ab-12", TINCHECK_RULE_OK, "AB12"},
        {"FOREIGN", "X", TINCHECK_RULE_OK, "X"},
        {"FOREIGN", "123456789012345678901234567890", TINCHECK_RULE_OK,
         "123456789012345678901234567890"},
        {"FOREIGN", "1234567890123456789012345678901", TINCHECK_RULE_SHAPE, NULL},
        {"FOREIGN", "", TINCHECK_RULE_SHAPE, NULL},
        {"FOREIGN", " - / .", TINCHECK_RULE_SHAPE, NULL},
        {"FOREIGN", "AB#12", TINCHECK_RULE_SHAPE, NULL},
        {"FOREIGN", "AB_12", TINCHECK_RULE_SHAPE, NULL},
        {"FOREIGN", "\xc3\xa9" "12", TINCHECK_RULE_SHAPE, NULL},
    };
    CHECK(ex);
}

static void test_type(void **state)
{
    (void)state;
    char normal[TINCHECK_NORMAL_MAX];
    assert_int_equal(tincheck_rules_check("ssn", "123456789", normal), TINCHECK_RULE_TYPE);
    assert_int_equal(tincheck_rules_check("SIN", "123456789", normal), TINCHECK_RULE_TYPE);
    assert_int_equal(tincheck_rules_check(NULL, "123456789", normal), TINCHECK_RULE_TYPE);
    assert_int_equal(tincheck_rules_check("SSN", NULL, normal), TINCHECK_RULE_SHAPE);
    assert_int_equal(tincheck_type_parse("FOREIGN"), TINCHECK_TYPE_FOREIGN);
    assert_int_equal(tincheck_type_parse("EIN "), TINCHECK_TYPE_UNKNOWN);
}

/* ---- names and the list matcher ---------------------------------------- */

static void test_name_compare(void **state)
{
    (void)state;
    assert_int_equal(tincheck_name_compare("Jane Q Public", "  jane\t q   PUBLIC  "), 0);
    assert_int_equal(tincheck_name_compare("Acme, Inc.", "ACME, INC."), 0);
    assert_int_not_equal(tincheck_name_compare("Jane Public", "JanePublic"), 0);
    assert_int_not_equal(tincheck_name_compare("Jane", "Jane Q"), 0);
    assert_int_not_equal(tincheck_name_compare("Jane Q", "Jane"), 0);
    assert_int_equal(tincheck_name_compare("", "   "), 0);
    /* non-ASCII letters compare exactly */
    assert_int_equal(tincheck_name_compare("Jos\xc3\xa9", "JOS\xc3\xa9"), 0);
    assert_int_not_equal(tincheck_name_compare("Jos\xc3\xa9", "Jos\xc3\x89"), 0);
}

static char *write_file(const char *text)
{
    char *path = strdup("/tmp/taxd-tin-list-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_list_matcher(void **state)
{
    (void)state;
    char *path = write_file("# comment\n"
                            "\n"
                            "SSN,123-45-6789,Jane Q Public\r\n"
                            "  SSN , 123456789 , Janet Public  \n"
                            "EIN,12-3456789,Acme Widgets, Inc.\n"
                            "ITIN,912701234,Juan Perez\n"
                            "   # indented comment\n"
                            "ATIN,912-93-4567,Baby Doe");
    tincheck_matcher_t m;
    char *err = NULL;
    assert_int_equal(tincheck_list_matcher_open(path, &m, &err), 0);
    assert_null(err);
    assert_int_equal(m.match(m.ctx, "SSN", "123456789", "jane q public"), TINCHECK_MATCH_VALID);
    assert_int_equal(m.match(m.ctx, "SSN", "123456789", "Janet Public"), TINCHECK_MATCH_VALID);
    assert_int_equal(m.match(m.ctx, "SSN", "123456789", "John Public"), TINCHECK_MATCH_MISMATCH);
    assert_int_equal(m.match(m.ctx, "ITIN", "123456789", "Jane Q Public"),
                     TINCHECK_MATCH_MISMATCH); /* the type is part of the key */
    assert_int_equal(m.match(m.ctx, "EIN", "123456789", "ACME WIDGETS, INC."),
                     TINCHECK_MATCH_VALID);
    assert_int_equal(m.match(m.ctx, "ITIN", "912701234", "Juan  Perez"), TINCHECK_MATCH_VALID);
    assert_int_equal(m.match(m.ctx, "ATIN", "912934567", "Baby Doe"), TINCHECK_MATCH_VALID);
    assert_int_equal(m.match(m.ctx, "SSN", "234567890", "Jane Q Public"),
                     TINCHECK_MATCH_MISMATCH);

    /* the verdict: rules first, then the matcher */
    assert_string_equal(tincheck_evaluate(&m, "SSN", "123-45-6789", "Jane Q Public"), "VALID");
    assert_string_equal(tincheck_evaluate(&m, "SSN", "123-45-6789", "Jane"), "MISMATCH");
    assert_string_equal(tincheck_evaluate(&m, "SSN", "666-45-6789", "Jane"), "INVALID_FORMAT");
    assert_string_equal(tincheck_evaluate(&m, "XX", "123-45-6789", "Jane"), "INVALID_FORMAT");
    assert_string_equal(tincheck_evaluate(&m, "FOREIGN", "DE123", "Jane"), "FOREIGN");
    assert_string_equal(tincheck_evaluate(&m, "FOREIGN", "DE#123", "Jane"), "INVALID_FORMAT");
    tincheck_matcher_free(&m);
    assert_null(m.ctx);
    unlink(path);
    free(path);
}

static void test_list_matcher_without_file(void **state)
{
    (void)state;
    tincheck_matcher_t m;
    char *err = NULL;
    assert_int_equal(tincheck_list_matcher_open("", &m, &err), 0);
    assert_string_equal(tincheck_evaluate(&m, "SSN", "123-45-6789", "Jane"), "MISMATCH");
    tincheck_matcher_free(&m);
    assert_int_equal(tincheck_list_matcher_open(NULL, &m, &err), 0);
    tincheck_matcher_free(&m);
}

static tincheck_match_t always_retry(void *ctx, const char *t, const char *tin, const char *n)
{
    (void)ctx, (void)t, (void)tin, (void)n;
    return TINCHECK_MATCH_RETRY;
}

static void test_plugged_matcher_retry(void **state)
{
    (void)state;
    tincheck_matcher_t m = {always_retry, NULL, NULL};
    assert_null(tincheck_evaluate(&m, "SSN", "123-45-6789", "Jane"));
    assert_string_equal(tincheck_evaluate(&m, "SSN", "000-45-6789", "Jane"), "INVALID_FORMAT");
    tincheck_matcher_free(&m); /* no free function: nothing to do */
}

static void expect_refused(const char *text, const char *line_hint)
{
    char *path = write_file(text);
    tincheck_matcher_t m;
    char *err = NULL;
    assert_int_equal(tincheck_list_matcher_open(path, &m, &err), -1);
    assert_non_null(err);
    if (strstr(err, line_hint) == NULL)
        fail_msg("error '%s' does not name '%s'", err, line_hint);
    assert_null(strstr(err, "45-6789")); /* never the TIN */
    assert_null(m.ctx);
    free(err);
    unlink(path);
    free(path);
}

static void test_list_matcher_refuses_bad_lines(void **state)
{
    (void)state;
    expect_refused("SSN,123-45-6789\n", "line 1: expected TIN_TYPE,TIN,NAME");
    expect_refused("# ok\nSSN,123-45-6789,Jane\nSIN,123-45-6789,Jane\n", "line 3: TIN_TYPE");
    expect_refused("FOREIGN,DE6789,Hans\n", "line 1: TIN_TYPE");
    expect_refused("SSN,666-45-6789,Jane\n", "line 1: the TIN does not pass");
    expect_refused("EIN,07-3456789,Acme\n", "line 1: the TIN does not pass");
    expect_refused("SSN,123-45-6789,   \n", "line 1: the NAME is empty");

    tincheck_matcher_t m;
    char *err = NULL;
    assert_int_equal(tincheck_list_matcher_open("/nonexistent/taxd/tins.csv", &m, &err), -1);
    assert_non_null(strstr(err, "cannot be opened"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ssn),
        cmocka_unit_test(test_itin),
        cmocka_unit_test(test_atin),
        cmocka_unit_test(test_ein),
        cmocka_unit_test(test_foreign),
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_name_compare),
        cmocka_unit_test(test_list_matcher),
        cmocka_unit_test(test_list_matcher_without_file),
        cmocka_unit_test(test_plugged_matcher_retry),
        cmocka_unit_test(test_list_matcher_refuses_bad_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
