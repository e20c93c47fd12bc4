/* Unit tests for src/core/validate.c: strict body parsing and schema issues in
 * the Zod v4 format of spec § Errors (validation failure shape). Every check
 * compares the whole issue list against the expected JSON text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/validate.h"

static const char *const METHODS[] = {"FIFO", "HIFO", NULL};
static const char *const ONLY[] = {"ONLY", NULL};

static const v_field ITEM_FIELDS[] = {
    {"code", V_STRING, .required = true, .min_len = 1, .max_len = 8},
    {"qty", V_DECIMAL, .required = true},
    {NULL},
};
static const v_schema ITEM = {ITEM_FIELDS};

static const v_field ADDRESS_FIELDS[] = {
    {"city", V_STRING, .required = true},
    {NULL},
};
static const v_schema ADDRESS = {ADDRESS_FIELDS};

static const v_field TAG = {NULL, V_STRING, .min_len = 1};

static const v_field ORDER_FIELDS[] = {
    {"id", V_STRING, .required = true, .min_len = 1, .max_len = 256},
    {"method", V_ENUM, .values = METHODS},
    {"count", V_INTEGER, .has_range = true, .min_int = 0, .max_int = 100},
    {"active", V_BOOLEAN, .required = false},
    {"amount", V_DECIMAL, .required = false},
    {"at", V_DATETIME, .required = false},
    {"on", V_DATE, .required = false},
    {"note", V_STRING, .nullable = true, .max_len = 3},
    {"address", V_OBJECT, .object = &ADDRESS},
    {"items", V_ARRAY, .min_items = 1, .max_items = 3, .object = &ITEM},
    {"tags", V_ARRAY, .items = &TAG},
    {"extra", V_ANY, .required = true},
    {NULL},
};
static const v_schema ORDER = {ORDER_FIELDS};

static json_t *load(const char *text)
{
    json_error_t error;
    json_t *value = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &error);
    if (value == NULL)
        fail_msg("bad test JSON %s: %s", text, error.text);
    return value;
}

/* Fails, showing both, unless got equals the JSON text exactly. Takes got. */
static void assert_json(json_t *got, const char *expected_text)
{
    json_t *expected = load(expected_text);
    assert_non_null(got);
    if (!json_equal(got, expected)) {
        char *dump = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        print_error("expected %s\n     got %s\n", expected_text, dump);
        free(dump);
        fail();
    }
    json_decref(expected);
    json_decref(got);
}

/* Checks body_text against schema at the root and compares the issue list. */
static void assert_issues(const v_schema *schema, const char *body_text, const char *expected)
{
    json_t *body = load(body_text);
    json_t *issues = json_array();
    size_t n = v_check_object(schema, body, NULL, issues);
    assert_int_equal(n, json_array_size(issues));
    json_decref(body);
    assert_json(issues, expected);
}

/* Same, for one value held in {"v": value} against a one-field schema. */
static void assert_field(const v_field *field, const char *value_text, const char *expected)
{
    v_field fields[2] = {*field, {NULL}};
    fields[0].name = "v";
    const v_schema schema = {fields};
    char body[512];
    snprintf(body, sizeof body, "{\"v\":%s}", value_text);
    assert_issues(&schema, body, expected);
}

static void assert_field_ok(const v_field *field, const char *value_text)
{
    assert_field(field, value_text, "[]");
}

/* ---- schema checks -------------------------------------------------- */

static void test_valid_body_has_no_issues(void **state)
{
    (void)state;
    assert_issues(&ORDER,
                  "{\"id\":\"o-1\",\"method\":\"HIFO\",\"count\":100,\"active\":false,"
                  "\"amount\":\"-12.50\",\"at\":\"2024-02-29T23:59:59.123456789Z\","
                  "\"on\":\"2024-02-29\",\"note\":\"abc\",\"address\":{\"city\":\"Oslo\"},"
                  "\"items\":[{\"code\":\"A\",\"qty\":\"1\"}],\"tags\":[\"x\"],\"extra\":null}",
                  "[]");
}

static void test_invalid_type_string(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":5,\"extra\":1}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"id\"],"
                  "\"message\":\"Invalid input: expected string, received number\"}]");
}

static void test_invalid_type_received_names(void **state)
{
    (void)state;
    static const struct {
        const char *value, *received;
    } CASES[] = {
        {"1.5", "number"}, {"true", "boolean"}, {"{}", "object"}, {"[]", "array"}, {"null", "null"},
    };
    const v_field field = {"v", V_STRING, .required = true};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char expected[256];
        snprintf(expected, sizeof expected,
                 "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected string, received %s\"}]",
                 CASES[i].received);
        assert_field(&field, CASES[i].value, expected);
    }
}

static void test_required_missing(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"extra\":1}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"id\"],"
                  "\"message\":\"Invalid input: expected string, received undefined\"}]");
}

/* V_ANY accepts anything, including absence, even when marked required. */
static void test_any_accepts_absence(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\"}", "[]");
}

static void test_expected_names_per_type(void **state)
{
    (void)state;
    static const struct {
        v_type_t type;
        const char *expected;
    } CASES[] = {
        {V_INTEGER, "number"}, {V_BOOLEAN, "boolean"}, {V_DECIMAL, "string"},
        {V_DATETIME, "string"}, {V_DATE, "string"},    {V_OBJECT, "object"},
        {V_ARRAY, "array"},     {V_STRING, "string"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const v_field field = {"v", CASES[i].type, .required = true};
        char expected[256];
        snprintf(expected, sizeof expected,
                 "[{\"code\":\"invalid_type\",\"expected\":\"%s\",\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected %s, received undefined\"}]",
                 CASES[i].expected, CASES[i].expected);
        /* the field is absent from {"w":...}, so the required rule applies */
        v_field fields[2] = {field, {NULL}};
        const v_schema schema = {fields};
        assert_issues(&schema, "{\"w\":1}", expected);
    }
}

static void test_nullable_optional_accepts_null(void **state)
{
    (void)state;
    const v_field field = {"v", V_STRING, .nullable = true};
    assert_field_ok(&field, "null");
}

static void test_not_nullable_optional_refuses_null(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":null}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"number\",\"path\":[\"count\"],"
                  "\"message\":\"Invalid input: expected number, received null\"}]");
}

/* null means absent for a nullable field, and absent breaks required. */
static void test_nullable_required_refuses_null(void **state)
{
    (void)state;
    const v_field field = {"v", V_STRING, .required = true, .nullable = true};
    assert_field(&field, "null",
                 "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected string, received null\"}]");
    assert_field_ok(&field, "\"a\"");
}

#define METHOD_ISSUE                                                                             \
    "[{\"code\":\"invalid_value\",\"values\":[\"FIFO\",\"HIFO\"],\"path\":[\"method\"],"         \
    "\"message\":\"Invalid option: expected one of \\\"FIFO\\\"|\\\"HIFO\\\"\"}]"

static void test_enum_unknown_value(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"method\":\"LIFO\"}", METHOD_ISSUE);
    /* matching is exact: case matters */
    assert_issues(&ORDER, "{\"id\":\"x\",\"method\":\"fifo\"}", METHOD_ISSUE);
}

/* Zod's z.enum reports a wrong type as invalid_value too, keeping `values`. */
static void test_enum_wrong_type(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"method\":5}", METHOD_ISSUE);
    assert_issues(&ORDER, "{\"id\":\"x\",\"method\":null}", METHOD_ISSUE);
}

static void test_enum_required_missing(void **state)
{
    (void)state;
    const v_field field = {"method", V_ENUM, .required = true, .values = METHODS};
    v_field fields[2] = {field, {NULL}};
    const v_schema schema = {fields};
    assert_issues(&schema, "{}", METHOD_ISSUE);
}

static void test_enum_single_value_message(void **state)
{
    (void)state;
    const v_field field = {"v", V_ENUM, .values = ONLY};
    assert_field(&field, "\"OTHER\"",
                 "[{\"code\":\"invalid_value\",\"values\":[\"ONLY\"],\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected \\\"ONLY\\\"\"}]");
    assert_field_ok(&field, "\"ONLY\"");
}

static void test_string_too_small(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"\"}",
                  "[{\"code\":\"too_small\",\"origin\":\"string\",\"minimum\":1,"
                  "\"inclusive\":true,\"path\":[\"id\"],"
                  "\"message\":\"Too small: expected string to have >=1 characters\"}]");
}

static void test_string_too_big(void **state)
{
    (void)state;
    char body[400];
    int n = snprintf(body, sizeof body, "{\"id\":\"");
    memset(body + n, 'a', 257);
    snprintf(body + n + 257, sizeof body - (size_t)n - 257, "\"}");
    assert_issues(&ORDER, body,
                  "[{\"code\":\"too_big\",\"origin\":\"string\",\"maximum\":256,"
                  "\"inclusive\":true,\"path\":[\"id\"],"
                  "\"message\":\"Too big: expected string to have <=256 characters\"}]");
    /* exactly 256 is fine */
    memmove(body + n + 256, body + n + 257, strlen(body + n + 257) + 1);
    assert_issues(&ORDER, body, "[]");
}

/* Lengths count code points: "ééé" is 3 characters in 6 bytes. */
static void test_string_length_counts_code_points(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"note\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}", "[]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"note\":\"\xf0\x9f\x98\x80\xc3\xa9\xc3\xa9\xc3\xa9\"}",
                  "[{\"code\":\"too_big\",\"origin\":\"string\",\"maximum\":3,"
                  "\"inclusive\":true,\"path\":[\"note\"],"
                  "\"message\":\"Too big: expected string to have <=3 characters\"}]");
}

static void test_string_with_nul_refused(void **state)
{
    (void)state;
    json_t *body = json_pack("{s:s#}", "id", "a\0b", (int)3);
    assert_non_null(body);
    json_t *issues = json_array();
    assert_int_equal(v_check_object(&ORDER, body, NULL, issues), 1);
    json_decref(body);
    assert_json(issues, "[{\"code\":\"invalid_format\",\"origin\":\"string\","
                        "\"format\":\"string\",\"path\":[\"id\"],"
                        "\"message\":\"String must not contain NUL characters\"}]");
}

/* "FIFO\0x" must not match "FIFO" by a C string comparison. */
static void test_enum_with_nul_refused(void **state)
{
    (void)state;
    json_t *body = json_pack("{s:s,s:s#}", "id", "x", "method", "FIFO\0x", (int)6);
    assert_non_null(body);
    json_t *issues = json_array();
    assert_int_equal(v_check_object(&ORDER, body, NULL, issues), 1);
    json_decref(body);
    assert_json(issues, METHOD_ISSUE);
}

static void test_integer_range(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":-1}",
                  "[{\"code\":\"too_small\",\"origin\":\"number\",\"minimum\":0,"
                  "\"inclusive\":true,\"path\":[\"count\"],"
                  "\"message\":\"Too small: expected number to be >=0\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":101}",
                  "[{\"code\":\"too_big\",\"origin\":\"number\",\"maximum\":100,"
                  "\"inclusive\":true,\"path\":[\"count\"],"
                  "\"message\":\"Too big: expected number to be <=100\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":0}", "[]");
}

static void test_integer_types(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":1.5}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"int\",\"path\":[\"count\"],"
                  "\"message\":\"Invalid input: expected int, received number\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":1.0}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"int\",\"path\":[\"count\"],"
                  "\"message\":\"Invalid input: expected int, received number\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"count\":\"3\"}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"number\",\"path\":[\"count\"],"
                  "\"message\":\"Invalid input: expected number, received string\"}]");
}

static void test_integer_without_range(void **state)
{
    (void)state;
    const v_field field = {"v", V_INTEGER, .required = false};
    assert_field_ok(&field, "-9223372036854775808");
    assert_field_ok(&field, "9223372036854775807");
}

static void test_boolean(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"active\":\"true\"}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"boolean\",\"path\":[\"active\"],"
                  "\"message\":\"Invalid input: expected boolean, received string\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"active\":true}", "[]");
}

static void test_array_too_small(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"items\":[]}",
                  "[{\"code\":\"too_small\",\"origin\":\"array\",\"minimum\":1,"
                  "\"inclusive\":true,\"path\":[\"items\"],"
                  "\"message\":\"Too small: expected array to have >=1 items\"}]");
}

/* Too many elements: one issue, elements not checked (bounds the issue list). */
static void test_array_too_big_skips_elements(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"items\":[1,2,3,4]}",
                  "[{\"code\":\"too_big\",\"origin\":\"array\",\"maximum\":3,"
                  "\"inclusive\":true,\"path\":[\"items\"],"
                  "\"message\":\"Too big: expected array to have <=3 items\"}]");
}

static void test_array_wrong_type(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"items\":{}}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"array\",\"path\":[\"items\"],"
                  "\"message\":\"Invalid input: expected array, received object\"}]");
}

static void test_nested_paths_with_indexes(void **state)
{
    (void)state;
    assert_issues(&ORDER,
                  "{\"id\":\"x\",\"items\":[{\"code\":\"a\",\"qty\":\"1\"},"
                  "{\"code\":\"b\",\"qty\":\"2\"},{\"qty\":\"3\"}],\"tags\":[\"a\",\"\"]}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"string\","
                  "\"path\":[\"items\",2,\"code\"],"
                  "\"message\":\"Invalid input: expected string, received undefined\"},"
                  "{\"code\":\"too_small\",\"origin\":\"string\",\"minimum\":1,"
                  "\"inclusive\":true,\"path\":[\"tags\",1],"
                  "\"message\":\"Too small: expected string to have >=1 characters\"}]");
}

static void test_array_element_not_object(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"items\":[\"a\",null]}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"object\",\"path\":[\"items\",0],"
                  "\"message\":\"Invalid input: expected object, received string\"},"
                  "{\"code\":\"invalid_type\",\"expected\":\"object\",\"path\":[\"items\",1],"
                  "\"message\":\"Invalid input: expected object, received null\"}]");
}

static void test_nested_object(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"address\":\"Oslo\"}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"object\",\"path\":[\"address\"],"
                  "\"message\":\"Invalid input: expected object, received string\"}]");
    assert_issues(&ORDER, "{\"id\":\"x\",\"address\":{\"city\":1}}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"string\","
                  "\"path\":[\"address\",\"city\"],"
                  "\"message\":\"Invalid input: expected string, received number\"}]");
}

/* All issues are reported, in schema order, not just the first. */
static void test_multiple_issues(void **state)
{
    (void)state;
    assert_issues(&ORDER,
                  "{\"method\":\"X\",\"count\":-5,\"amount\":\"1e5\",\"at\":\"2024-01-01\","
                  "\"on\":\"2023-02-29\"}",
                  "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"id\"],"
                  "\"message\":\"Invalid input: expected string, received undefined\"},"
                  "{\"code\":\"invalid_value\",\"values\":[\"FIFO\",\"HIFO\"],"
                  "\"path\":[\"method\"],"
                  "\"message\":\"Invalid option: expected one of \\\"FIFO\\\"|\\\"HIFO\\\"\"},"
                  "{\"code\":\"too_small\",\"origin\":\"number\",\"minimum\":0,"
                  "\"inclusive\":true,\"path\":[\"count\"],"
                  "\"message\":\"Too small: expected number to be >=0\"},"
                  "{\"code\":\"invalid_format\",\"origin\":\"string\",\"format\":\"decimal\","
                  "\"path\":[\"amount\"],\"message\":\"Invalid decimal: expected a plain "
                  "decimal string such as \\\"12.50\\\"\"},"
                  "{\"code\":\"invalid_format\",\"origin\":\"string\",\"format\":\"datetime\","
                  "\"path\":[\"at\"],\"message\":\"Invalid ISO datetime\"},"
                  "{\"code\":\"invalid_format\",\"origin\":\"string\",\"format\":\"date\","
                  "\"path\":[\"on\"],\"message\":\"Invalid ISO date\"}]");
}

static void test_unknown_keys_ignored(void **state)
{
    (void)state;
    assert_issues(&ORDER, "{\"id\":\"x\",\"surprise\":{\"deep\":[1,2]},\"address\":"
                          "{\"city\":\"Oslo\",\"zip\":7}}",
                  "[]");
}

static void test_root_not_object(void **state)
{
    (void)state;
    assert_issues(&ORDER, "[1]",
                  "[{\"code\":\"invalid_type\",\"expected\":\"object\",\"path\":[],"
                  "\"message\":\"Invalid input: expected object, received array\"}]");
    json_t *issues = json_array();
    assert_int_equal(v_check_object(&ORDER, NULL, NULL, issues), 1);
    assert_json(issues, "[{\"code\":\"invalid_type\",\"expected\":\"object\",\"path\":[],"
                        "\"message\":\"Invalid input: expected object, received undefined\"}]");
}

/* Paths are relative to the path given, which is left unchanged. */
static void test_path_prefix(void **state)
{
    (void)state;
    json_t *prefix = load("[\"assets\",4]");
    json_t *body = load("{\"extra\":0}");
    json_t *issues = json_array();
    assert_int_equal(v_check_object(&ORDER, body, prefix, issues), 1);
    assert_json(issues, "[{\"code\":\"invalid_type\",\"expected\":\"string\","
                        "\"path\":[\"assets\",4,\"id\"],"
                        "\"message\":\"Invalid input: expected string, received undefined\"}]");
    assert_json(prefix, "[\"assets\",4]");
    json_decref(body);
}

/* Issues are appended after whatever the array already holds. */
static void test_issues_appended(void **state)
{
    (void)state;
    json_t *issues = load("[{\"code\":\"custom\",\"path\":[],\"message\":\"earlier\"}]");
    json_t *body = load("{\"id\":1}");
    assert_int_equal(v_check_object(&ORDER, body, NULL, issues), 1);
    json_decref(body);
    assert_json(issues, "[{\"code\":\"custom\",\"path\":[],\"message\":\"earlier\"},"
                        "{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"id\"],"
                        "\"message\":\"Invalid input: expected string, received number\"}]");
}

/* Top-level arrays are checked with v_check_value. */
static void test_check_value_top_level_array(void **state)
{
    (void)state;
    const v_field list = {NULL, V_ARRAY, .required = true, .max_items = 5, .object = &ITEM};
    json_t *body = load("[{\"code\":\"a\",\"qty\":\"1\"},{\"code\":\"toolongcode\",\"qty\":1}]");
    json_t *issues = json_array();
    assert_int_equal(v_check_value(&list, body, NULL, issues), 2);
    json_decref(body);
    assert_json(issues, "[{\"code\":\"too_big\",\"origin\":\"string\",\"maximum\":8,"
                        "\"inclusive\":true,\"path\":[1,\"code\"],"
                        "\"message\":\"Too big: expected string to have <=8 characters\"},"
                        "{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[1,\"qty\"],"
                        "\"message\":\"Invalid input: expected string, received number\"}]");
}

/* ---- string formats ------------------------------------------------- */

static void assert_format_cases(v_type_t type, const char *format, const char *message,
                                const char *const *good, const char *const *bad)
{
    const v_field field = {"v", type, .required = false};
    for (size_t i = 0; good[i] != NULL; i++) {
        char value[128];
        snprintf(value, sizeof value, "\"%s\"", good[i]);
        assert_field_ok(&field, value);
    }
    for (size_t i = 0; bad[i] != NULL; i++) {
        char value[128], expected[512];
        snprintf(value, sizeof value, "\"%s\"", bad[i]);
        snprintf(expected, sizeof expected,
                 "[{\"code\":\"invalid_format\",\"origin\":\"string\",\"format\":\"%s\","
                 "\"path\":[\"v\"],\"message\":\"%s\"}]",
                 format, message);
        print_message("refusing %s\n", bad[i]);
        assert_field(&field, value, expected);
    }
}

static void test_datetime_cases(void **state)
{
    (void)state;
    static const char *const GOOD[] = {
        "2024-01-02T03:04:05Z",
        "2024-02-29T00:00:00Z",
        "2024-12-31T23:59:59+05:30",
        "2024-06-01T12:00:00-08:00",
        "2024-06-01T12:00:00.1Z",
        "2024-06-01T12:00:00.123456789+23:59",
        "2000-02-29T00:00:00Z",
        NULL,
    };
    static const char *const BAD[] = {
        "2023-02-29T00:00:00Z",          /* not a leap year */
        "1900-02-29T00:00:00Z",          /* century, not a leap year */
        "2024-04-31T00:00:00Z",          /* April has 30 days */
        "2024-13-01T00:00:00Z",          /* month */
        "2024-00-01T00:00:00Z",          /* month */
        "2024-01-00T00:00:00Z",          /* day */
        "2024-01-01T24:00:00Z",          /* hour */
        "2024-01-01T23:60:00Z",          /* minute */
        "2024-01-01T23:59:60Z",          /* second */
        "2024-01-01T00:00:00",           /* no zone */
        "2024-01-01T00:00Z",             /* no seconds */
        "2024-01-01 00:00:00Z",          /* space separator */
        "2024-01-01t00:00:00z",          /* lowercase */
        "2024-01-01T00:00:00.Z",         /* empty fraction */
        "2024-01-01T00:00:00.1234567890Z", /* ten fraction digits */
        "2024-01-01T00:00:00+0530",      /* offset without colon */
        "2024-01-01T00:00:00+24:00",     /* offset hour */
        "2024-01-01T00:00:00+05:60",     /* offset minute */
        "2024-01-01T00:00:00Z ",         /* trailing space */
        "2024-01-01",                    /* date only */
        "24-01-01T00:00:00Z",            /* short year */
        "",
        NULL,
    };
    assert_format_cases(V_DATETIME, "datetime", "Invalid ISO datetime", GOOD, BAD);
}

static void test_date_cases(void **state)
{
    (void)state;
    static const char *const GOOD[] = {"2024-02-29", "2000-02-29", "2023-12-31", "0001-01-01",
                                       NULL};
    static const char *const BAD[] = {
        "2023-02-29", "1900-02-29", "2024-06-31", "2024-13-01", "2024-1-01",
        "2024-01-01T00:00:00Z", "20240101", "2024/01/01", " 2024-01-01", "", NULL,
    };
    assert_format_cases(V_DATE, "date", "Invalid ISO date", GOOD, BAD);
}

static void test_decimal_cases(void **state)
{
    (void)state;
    static const char *const GOOD[] = {
        "1", "-0.5", "0", "12.50", "007", "-123456789012345678901234567890.123456789",
        /* 80 characters exactly */
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
        NULL,
    };
    static const char *const BAD[] = {
        "1e5", "1.", ".5", "+1", "-", "", " 1", "1 ", "1,5", "1.2.3", "--1", "0x10", "NaN",
        "Infinity",
        /* 81 characters */
        "123456789012345678901234567890123456789012345678901234567890123456789012345678901",
        NULL,
    };
    assert_format_cases(V_DECIMAL, "decimal",
                        "Invalid decimal: expected a plain decimal string such as \\\"12.50\\\"",
                        GOOD, BAD);
}

static void test_decimal_number_refused(void **state)
{
    (void)state;
    const v_field field = {"v", V_DECIMAL, .required = false};
    assert_field(&field, "1.5",
                 "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected string, received number\"}]");
    assert_field(&field, "1",
                 "[{\"code\":\"invalid_type\",\"expected\":\"string\",\"path\":[\"v\"],"
                 "\"message\":\"Invalid input: expected string, received number\"}]");
}

/* ---- v_issue -------------------------------------------------------- */

static void test_issue_custom(void **state)
{
    (void)state;
    json_t *path = load("[\"lots\",0,\"amount\"]");
    assert_json(v_issue("custom", path, "Amount exceeds the lot", json_pack("{s:s}", "x", "y")),
                "{\"code\":\"custom\",\"path\":[\"lots\",0,\"amount\"],"
                "\"message\":\"Amount exceeds the lot\",\"x\":\"y\"}");
    /* the path was copied, not taken */
    assert_json(path, "[\"lots\",0,\"amount\"]");
    assert_json(v_issue("custom", NULL, "m", NULL),
                "{\"code\":\"custom\",\"path\":[],\"message\":\"m\"}");
}

/* ---- v_parse_body --------------------------------------------------- */

/* Parses text (length taken without its NUL) and checks the result and msg. */
static void assert_parse(const char *text, const char *content_type, bool allow_empty,
                         const char *expected_json, const char *expected_msg)
{
    char msg[256];
    memset(msg, 'Z', sizeof msg);
    json_t *got = v_parse_body(text, strlen(text), content_type, allow_empty, msg, sizeof msg);
    print_message("parsing [%s] as %s\n", text, content_type ? content_type : "(null)");
    assert_string_equal(msg, expected_msg);
    if (expected_json == NULL)
        assert_null(got);
    else
        assert_json(got, expected_json);
}

static void test_parse_ok(void **state)
{
    (void)state;
    assert_parse("{\"a\":1}", "application/json", false, "{\"a\":1}", "");
    assert_parse(" [1,2] \n", "application/json", false, "[1,2]", "");
}

static void test_parse_content_type_variants(void **state)
{
    (void)state;
    static const char *const GOOD[] = {
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "  application/json  ",
        "application/json ; charset=utf-8",
        NULL,
    };
    static const char *const BAD[] = {
        "application/jsonx", "text/json",  "application/json-patch+json", "text/plain",
        "application/xml",   "",           "application/json x",          "application",
        NULL,
    };
    for (size_t i = 0; GOOD[i] != NULL; i++)
        assert_parse("{}", GOOD[i], false, "{}", "");
    for (size_t i = 0; BAD[i] != NULL; i++)
        assert_parse("{}", BAD[i], false, NULL, "Content-Type must be application/json");
    assert_parse("{}", NULL, false, NULL, "Content-Type must be application/json");
}

static void test_parse_duplicate_keys(void **state)
{
    (void)state;
    assert_parse("{\"id\":1,\"id\":2}", "application/json", false, NULL,
                 "Malformed JSON: duplicate object key near '\"id\"' at line 1, column 12");
}

static void test_parse_trailing_garbage(void **state)
{
    (void)state;
    assert_parse("{\"a\":1} x", "application/json", false, NULL,
                 "Malformed JSON: end of file expected at line 1, column 9");
    assert_parse("{}{}", "application/json", false, NULL,
                 "Malformed JSON: end of file expected at line 1, column 3");
}

static void test_parse_malformed(void **state)
{
    (void)state;
    assert_parse("{\"a\":", "application/json", false, NULL,
                 "Malformed JSON: unexpected token near end of file at line 1, column 5");
    assert_parse("   ", "application/json", false, NULL,
                 "Malformed JSON: '[' or '{' expected near end of file at line 1, column 3");
    assert_parse("{\"a\":99999999999999999999}", "application/json", false, NULL,
                 "Malformed JSON: too big integer at line 1, column 25");
    assert_parse("{\"a\":\"\\u0000\"}", "application/json", false, NULL,
                 "Malformed JSON: \\u0000 is not allowed without JSON_ALLOW_NUL at line 1, "
                 "column 13");
    /* The input is never quoted back: it could be a TIN or a secret. */
    assert_parse("{\"tin\":\"123-45-6789", "application/json", false, NULL,
                 "Malformed JSON: premature end of input at line 1, column 19");
}

static void test_parse_empty(void **state)
{
    (void)state;
    assert_parse("", "application/json", false, NULL, "Request body is required");
    assert_parse("", NULL, false, NULL, "Request body is required");
    assert_parse("", "application/json", true, NULL, "");
    assert_parse("", NULL, true, NULL, "");
}

/* v_parse_body_text (routes flagged ROUTE_TEXT_JSON): text/plain with
 * charset UTF-8 or none is JSON, as a browser's fetch labels a string body;
 * any other charset is refused, naming the content type; application/json
 * as before; and v_parse_body itself still refuses text/plain. */
static void assert_parse_text(const char *text, const char *content_type, bool allow_empty,
                              const char *expected_json, const char *expected_msg)
{
    char msg[256];
    memset(msg, 'Z', sizeof msg);
    json_t *got = v_parse_body_text(text, strlen(text), content_type, allow_empty, msg,
                                    sizeof msg);
    print_message("parsing [%s] as %s (text allowed)\n", text,
                  content_type ? content_type : "(null)");
    assert_string_equal(msg, expected_msg);
    if (expected_json == NULL)
        assert_null(got);
    else
        assert_json(got, expected_json);
}

static void test_parse_text_plain(void **state)
{
    (void)state;
    static const char *const GOOD[] = {
        "text/plain;charset=UTF-8",   /* what Chromium and Node send */
        "text/plain; charset=utf-8",
        "TEXT/PLAIN;CHARSET=UTF-8",
        "text/plain",
        "text/plain ;charset=\"UTF-8\"",
        "text/plain; format=flowed; charset=utf-8",
        "application/json",
        "application/json; charset=utf-8",
        NULL,
    };
    static const char *const OTHER_CHARSET[] = {
        "text/plain;charset=latin1",
        "text/plain; charset=ISO-8859-1",
        "text/plain;charset=utf-16",
        "text/plain;charset=utf-8x",
        "text/plain;charset=\"utf-8",
        "text/plain;charset=utf-8;charset=latin1",
        NULL,
    };
    static const char *const NOT_TEXT[] = {
        "text/plainx", "text/html", "text/plain-json", "", "multipart/form-data", NULL,
    };
    for (size_t i = 0; GOOD[i] != NULL; i++)
        assert_parse_text("{\"a\":1}", GOOD[i], false, "{\"a\":1}", "");
    for (size_t i = 0; OTHER_CHARSET[i] != NULL; i++)
        assert_parse_text("{}", OTHER_CHARSET[i], false, NULL,
                          "Content-Type text/plain must have charset UTF-8 (or none)");
    for (size_t i = 0; NOT_TEXT[i] != NULL; i++)
        assert_parse_text("{}", NOT_TEXT[i], false, NULL,
                          "Content-Type must be application/json or text/plain");
    assert_parse_text("{}", NULL, false, NULL,
                      "Content-Type must be application/json or text/plain");
    /* The JSON rules are the same whatever the type. */
    assert_parse_text("{\"id\":1,\"id\":2}", "text/plain", false, NULL,
                      "Malformed JSON: duplicate object key near '\"id\"' at line 1, column 12");
    assert_parse_text("{\"tin\":\"123-45-6789", "text/plain;charset=UTF-8", false, NULL,
                      "Malformed JSON: premature end of input at line 1, column 19");
    /* An empty body with no type is no body, where the handler allows none. */
    assert_parse_text("", NULL, true, NULL, "");
    assert_parse_text("", "text/plain;charset=UTF-8", true, NULL, "");
    assert_parse_text("", NULL, false, NULL, "Request body is required");
    /* Other routes: text/plain stays refused. */
    assert_parse("{}", "text/plain;charset=UTF-8", false, NULL,
                 "Content-Type must be application/json");
}

/* Bodies are not NUL-terminated: only len bytes are read. */
static void test_parse_uses_length(void **state)
{
    (void)state;
    const char buffer[] = "{\"a\":1}GARBAGE";
    char msg[64];
    json_t *got = v_parse_body(buffer, 7, "application/json", false, msg, sizeof msg);
    assert_string_equal(msg, "");
    assert_json(got, "{\"a\":1}");
}

/* A small buffer truncates the message; NULL/0 is tolerated. */
static void test_parse_small_msg_buffer(void **state)
{
    (void)state;
    char msg[8];
    assert_null(v_parse_body("", 0, NULL, false, msg, sizeof msg));
    assert_string_equal(msg, "Request");
    assert_null(v_parse_body("x", 1, "application/json", false, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_body_has_no_issues),
        cmocka_unit_test(test_parse_text_plain),
        cmocka_unit_test(test_invalid_type_string),
        cmocka_unit_test(test_invalid_type_received_names),
        cmocka_unit_test(test_required_missing),
        cmocka_unit_test(test_any_accepts_absence),
        cmocka_unit_test(test_expected_names_per_type),
        cmocka_unit_test(test_nullable_optional_accepts_null),
        cmocka_unit_test(test_not_nullable_optional_refuses_null),
        cmocka_unit_test(test_nullable_required_refuses_null),
        cmocka_unit_test(test_enum_unknown_value),
        cmocka_unit_test(test_enum_wrong_type),
        cmocka_unit_test(test_enum_required_missing),
        cmocka_unit_test(test_enum_single_value_message),
        cmocka_unit_test(test_string_too_small),
        cmocka_unit_test(test_string_too_big),
        cmocka_unit_test(test_string_length_counts_code_points),
        cmocka_unit_test(test_string_with_nul_refused),
        cmocka_unit_test(test_enum_with_nul_refused),
        cmocka_unit_test(test_integer_range),
        cmocka_unit_test(test_integer_types),
        cmocka_unit_test(test_integer_without_range),
        cmocka_unit_test(test_boolean),
        cmocka_unit_test(test_array_too_small),
        cmocka_unit_test(test_array_too_big_skips_elements),
        cmocka_unit_test(test_array_wrong_type),
        cmocka_unit_test(test_nested_paths_with_indexes),
        cmocka_unit_test(test_array_element_not_object),
        cmocka_unit_test(test_nested_object),
        cmocka_unit_test(test_multiple_issues),
        cmocka_unit_test(test_unknown_keys_ignored),
        cmocka_unit_test(test_root_not_object),
        cmocka_unit_test(test_path_prefix),
        cmocka_unit_test(test_issues_appended),
        cmocka_unit_test(test_check_value_top_level_array),
        cmocka_unit_test(test_datetime_cases),
        cmocka_unit_test(test_date_cases),
        cmocka_unit_test(test_decimal_cases),
        cmocka_unit_test(test_decimal_number_refused),
        cmocka_unit_test(test_issue_custom),
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_content_type_variants),
        cmocka_unit_test(test_parse_duplicate_keys),
        cmocka_unit_test(test_parse_trailing_garbage),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_empty),
        cmocka_unit_test(test_parse_uses_length),
        cmocka_unit_test(test_parse_small_msg_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
