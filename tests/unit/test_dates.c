/* Unit tests of the date rules of issue 15: a datetime's UTC instant must fall
 * in 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z (clock_parse_rfc3339 and
 * the V_DATETIME schema type), and a date of birth must be from 1900-01-01 to
 * the service's today (v_check_birth_date). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "core/clock.h"
#include "core/validate.h"

/* 2026-11-24T12:00:00Z */
#define NOW_MS INT64_C(1795521600000)

static void test_parse_bounds(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(clock_parse_rfc3339("0001-01-01T00:00:00Z", &ms), 0);
    assert_true(ms == CLOCK_MIN_MS);
    assert_int_equal(clock_parse_rfc3339("9999-12-31T23:59:59.999Z", &ms), 0);
    assert_true(ms == CLOCK_MAX_MS);
    assert_int_equal(clock_parse_rfc3339("9999-12-31T23:59:59+23:59", &ms), 0);
    assert_int_equal(clock_parse_rfc3339("0001-01-01T23:58:00+23:58", &ms), 0);
}

static void test_parse_refuses_outside(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(clock_parse_rfc3339("9999-12-31T23:59:59-23:59", &ms), -1);
    assert_int_equal(clock_parse_rfc3339("9999-12-31T23:59:59.999-00:01", &ms), -1);
    assert_int_equal(clock_parse_rfc3339("0000-01-01T00:00:00+23:59", &ms), -1);
    assert_int_equal(clock_parse_rfc3339("0000-12-31T23:59:59.999Z", &ms), -1);
    assert_int_equal(clock_parse_rfc3339("0001-01-01T00:00:00+00:01", &ms), -1);
}

static void test_format_round_trips_bounds(void **state)
{
    (void)state;
    char out[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(CLOCK_MIN_MS, out);
    assert_string_equal(out, "0001-01-01T00:00:00.000Z");
    clock_format_rfc3339(CLOCK_MAX_MS, out);
    assert_string_equal(out, "9999-12-31T23:59:59.999Z");
}

static void test_schema_datetime_range(void **state)
{
    (void)state;
    static const v_field FIELD = {"when", V_DATETIME, .required = true};
    const char *ok[] = {"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999Z"};
    const char *bad[] = {"9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        json_t *v = json_string(ok[i]);
        json_t *issues = json_array();
        assert_int_equal(v_check_value(&FIELD, v, NULL, issues), 0);
        json_decref(issues);
        json_decref(v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *v = json_string(bad[i]);
        json_t *issues = json_array();
        json_t *path = json_pack("[s]", "when");
        assert_int_equal(v_check_value(&FIELD, v, path, issues), 1);
        json_t *issue = json_array_get(issues, 0);
        assert_string_equal(json_string_value(json_object_get(issue, "code")), "invalid_format");
        assert_string_equal(json_string_value(json_object_get(issue, "format")), "datetime");
        assert_true(json_equal(json_object_get(issue, "path"), path));
        assert_non_null(strstr(json_string_value(json_object_get(issue, "message")),
                               "0001-01-01T00:00:00Z"));
        json_decref(path);
        json_decref(issues);
        json_decref(v);
    }
}

/* The issues of {"birth_date": date} checked at NOW_MS. */
static size_t birth_issues(const char *date, const char **message)
{
    json_t *body = json_pack("{s:s}", "birth_date", date);
    json_t *issues = json_array();
    size_t n = v_check_birth_date(body, "birth_date", NOW_MS, issues);
    assert_int_equal(json_array_size(issues), n);
    static char kept[128];
    kept[0] = '\0';
    if (n > 0) {
        json_t *issue = json_array_get(issues, 0);
        assert_string_equal(json_string_value(json_object_get(issue, "code")), "custom");
        json_t *path = json_pack("[s]", "birth_date");
        assert_true(json_equal(json_object_get(issue, "path"), path));
        json_decref(path);
        strncpy(kept, json_string_value(json_object_get(issue, "message")), sizeof kept - 1);
    }
    *message = kept;
    json_decref(issues);
    json_decref(body);
    return n;
}

static void test_birth_date(void **state)
{
    (void)state;
    const char *m;
    assert_int_equal(birth_issues("1900-01-01", &m), 0);
    assert_int_equal(birth_issues("2026-11-24", &m), 0); /* born today */
    assert_int_equal(birth_issues("2026-11-25", &m), 1);
    assert_string_equal(m, "birth_date cannot be in the future");
    assert_int_equal(birth_issues("9999-12-31", &m), 1);
    assert_string_equal(m, "birth_date cannot be in the future");
    assert_int_equal(birth_issues("1899-12-31", &m), 1);
    assert_string_equal(m, "birth_date cannot be before 1900-01-01");
    assert_int_equal(birth_issues("0001-01-01", &m), 1);
}

static void test_birth_date_leaves_the_rest_to_the_schema(void **state)
{
    (void)state;
    json_t *issues = json_array();
    json_t *body = json_pack("{s:n, s:i, s:s}", "a", "b", 1, "c", "1800-13-45");
    assert_int_equal(v_check_birth_date(body, "a", NOW_MS, issues), 0);
    assert_int_equal(v_check_birth_date(body, "b", NOW_MS, issues), 0);
    assert_int_equal(v_check_birth_date(body, "c", NOW_MS, issues), 0);
    assert_int_equal(v_check_birth_date(body, "absent", NOW_MS, issues), 0);
    assert_int_equal(json_array_size(issues), 0);
    json_decref(body);
    json_decref(issues);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_bounds),
        cmocka_unit_test(test_parse_refuses_outside),
        cmocka_unit_test(test_format_round_trips_bounds),
        cmocka_unit_test(test_schema_datetime_range),
        cmocka_unit_test(test_birth_date),
        cmocka_unit_test(test_birth_date_leaves_the_rest_to_the_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
