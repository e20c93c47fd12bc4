/* test_taxdocs: tax documentation. The pure model (src/taxdocs/model.c):
 * each schema's valid and invalid inputs, expiration dates (leap years,
 * year ends), VAT structures, the status derivations and the state object
 * builder (W-9-only and W-8-only fields only where they belong). Then the
 * store half against a real database: a submission and its events and TIN
 * check, and taxdocs_record_tin_result_in_tx called as the TIN engine will
 * call it (current W-9, superseded W-9, unknown submission). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tin.h"
#include "store/owners.h"
#include "store/store.h"
#include "taxdocs/model.h"
#include "taxdocs/submit.h"
#include "taxdocs/tin_result.h"

#include "scratch_store.h"

#define NOW 1779408000000LL /* 2026-05-22T00:00:00Z */

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &err);
    if (v == NULL)
        fail_msg("bad test JSON: %s", err.text);
    return v;
}

static const char *W9 =
    "{\"document_type\":\"W-9\",\"name\":\"Ada\",\"entity_classification\":\"INDIVIDUAL\","
    "\"tin_type\":\"SSN\",\"tin\":\"123-45-6789\",\"address\":{\"line1\":\"1 Main\",\"city\":\"X\","
    "\"country_code\":\"US\"},\"certified\":true,\"signature_date\":\"2025-05-10\"}";
static const char *W8BEN =
    "{\"document_type\":\"W-8BEN\",\"name\":\"Karl\",\"country_of_citizenship\":\"DE\","
    "\"permanent_residence_address\":{\"line1\":\"Str 1\",\"city\":\"Berlin\",\"country_code\":"
    "\"DE\"},\"foreign_tin\":\"1234\",\"date_of_birth\":\"1980-02-29\",\"treaty_claim\":"
    "{\"country_code\":\"DE\",\"article\":\"10\",\"withholding_rate\":\"15\"},\"certified\":true,"
    "\"signature_date\":\"2024-05-10\"}";
static const char *W8BENE =
    "{\"document_type\":\"W-8BEN-E\",\"name\":\"GmbH\",\"country_of_organization\":\"DE\","
    "\"chapter3_status\":\"CORPORATION\",\"permanent_residence_address\":{\"line1\":\"Str 1\","
    "\"city\":\"Berlin\",\"country_code\":\"DE\"},\"foreign_tin_not_required_reason\":\"none\","
    "\"certified\":true,\"signature_date\":\"2024-05-10\"}";
static const char *DPS =
    "{\"document_type\":\"DPS\",\"name\":\"GmbH\",\"seller_type\":\"ENTITY\",\"address\":"
    "{\"line1\":\"Str 1\",\"city\":\"Berlin\",\"country_code\":\"DE\"},\"tax_residences\":"
    "[{\"country_code\":\"DE\",\"tin\":\"1\"}],\"vat_number\":\"DE 123.456.789\","
    "\"certified\":true,\"signature_date\":\"2025-01-01\"}";
static const char *SELF_CERT =
    "{\"document_type\":\"SELF_CERTIFICATION\",\"name\":\"Karl\",\"account_holder_type\":"
    "\"INDIVIDUAL\",\"address\":{\"line1\":\"Str 1\",\"city\":\"Berlin\",\"country_code\":\"DE\"},"
    "\"tax_residences\":[{\"country_code\":\"DE\",\"tin\":\"1\"}],\"certified\":true,"
    "\"signature_date\":\"2025-01-01\"}";

/* body with key set to the JSON value `value` ("null" removes... no: sets null;
 * NULL deletes the key). */
static json_t *with(const char *body, const char *key, const char *value)
{
    json_t *b = parse(body);
    if (value == NULL)
        json_object_del(b, key);
    else
        json_object_set_new(b, key, parse(value));
    return b;
}

/* The paths of the issues taxdocs_check finds, as compact JSON of the array. */
static char *check_paths(const json_t *body, size_t *count, taxdocs_type_t *type)
{
    json_t *issues = json_array();
    *count = taxdocs_check(body, NOW, issues, type);
    json_t *paths = json_array();
    size_t i;
    json_t *issue;
    json_array_foreach(issues, i, issue)
        json_array_append(paths, json_object_get(issue, "path"));
    char *text = json_dumps(paths, JSON_COMPACT);
    json_decref(paths);
    json_decref(issues);
    return text;
}

static void expect_paths(json_t *body, const char *expected)
{
    size_t n;
    taxdocs_type_t type;
    char *paths = check_paths(body, &n, &type);
    assert_string_equal(paths, expected);
    free(paths);
    json_decref(body);
}

/* ---- schemas */

static void test_each_type_valid(void **state)
{
    (void)state;
    const char *bodies[] = {W9, W8BEN, W8BENE, DPS, SELF_CERT};
    for (int i = 0; i < TAXDOCS_TYPE_COUNT; i++) {
        json_t *b = parse(bodies[i]);
        size_t n;
        taxdocs_type_t type = (taxdocs_type_t)99;
        char *paths = check_paths(b, &n, &type);
        assert_string_equal(paths, "[]");
        assert_int_equal(type, (taxdocs_type_t)i);
        free(paths);
        json_decref(b);
    }
}

static void test_document_type_refused(void **state)
{
    (void)state;
    expect_paths(parse("[1]"), "[[]]");
    expect_paths(parse("\"W-9\""), "[[]]");
    expect_paths(with(W9, "document_type", "\"W-4\""), "[[\"document_type\"]]");
    expect_paths(with(W9, "document_type", NULL), "[[\"document_type\"]]");
    expect_paths(with(W9, "document_type", "9"), "[[\"document_type\"]]");
    /* the values are listed */
    json_t *issues = json_array();
    taxdocs_type_t type;
    json_t *b = with(W9, "document_type", "\"w9\"");
    assert_int_equal(taxdocs_check(b, NOW, issues, &type), 1);
    char *values = json_dumps(json_object_get(json_array_get(issues, 0), "values"), JSON_COMPACT);
    assert_string_equal(values, "[\"W-9\",\"W-8BEN\",\"W-8BEN-E\",\"DPS\",\"SELF_CERTIFICATION\"]");
    free(values);
    json_decref(b);
    json_decref(issues);
}

static void test_w9_invalid(void **state)
{
    (void)state;
    expect_paths(with(W9, "tin", NULL), "[[\"tin\"]]");
    expect_paths(with(W9, "tin", "\"12345678\""), "[[\"tin\"]]");
    expect_paths(with(W9, "tin", "\"12345678a\""), "[[\"tin\"]]");
    expect_paths(with(W9, "tin", "123456789"), "[[\"tin\"]]");
    expect_paths(with(W9, "tin", "\"123456789\""), "[]");
    expect_paths(with(W9, "tin_type", "\"FOREIGN\""), "[[\"tin_type\"]]");
    expect_paths(with(W9, "certified", "\"yes\""), "[[\"certified\"]]");
    expect_paths(with(W9, "signature_date", "\"2026-05-23\""), "[[\"signature_date\"]]");
    expect_paths(with(W9, "signature_date", "\"2026-05-22\""), "[]"); /* today is fine */
    expect_paths(with(W9, "signature_date", "\"2025-02-29\""), "[[\"signature_date\"]]");
    expect_paths(with(W9, "address", "{\"line1\":\"x\",\"city\":\"y\",\"country_code\":\"us\"}"),
                 "[[\"address\",\"country_code\"]]");
    expect_paths(with(W9, "entity_classification", NULL), "[[\"entity_classification\"]]");
    /* fields a W-9 does not have are ignored, whatever they hold */
    expect_paths(with(W9, "country_of_citizenship", "\"xx\""), "[]");
    expect_paths(with(W9, "date_of_birth", "\"2999-01-01\""), "[]");
    expect_paths(with(W9, "mailing_address", "{\"country_code\":\"us\"}"), "[]");
}

static void test_w8_invalid(void **state)
{
    (void)state;
    expect_paths(with(W8BEN, "date_of_birth", NULL), "[[\"date_of_birth\"]]");
    expect_paths(with(W8BEN, "date_of_birth", "\"2027-01-01\""), "[[\"date_of_birth\"]]");
    expect_paths(with(W8BEN, "country_of_citizenship", "\"De\""), "[[\"country_of_citizenship\"]]");
    expect_paths(with(W8BEN, "country_of_citizenship", "\"DEU\""), "[[\"country_of_citizenship\"]]");
    expect_paths(with(W8BEN, "treaty_claim",
                      "{\"country_code\":\"DE\",\"article\":\"10\",\"withholding_rate\":\"100.01\"}"),
                 "[[\"treaty_claim\",\"withholding_rate\"]]");
    expect_paths(with(W8BEN, "treaty_claim",
                      "{\"country_code\":\"DE\",\"article\":\"10\",\"withholding_rate\":\"-1\"}"),
                 "[[\"treaty_claim\",\"withholding_rate\"]]");
    expect_paths(with(W8BEN, "treaty_claim",
                      "{\"country_code\":\"DE\",\"article\":\"10\",\"withholding_rate\":\"100\"}"),
                 "[]");
    expect_paths(with(W8BEN, "treaty_claim", "null"), "[]");
    expect_paths(with(W8BENE, "chapter3_status", "\"LLC\""), "[[\"chapter3_status\"]]");
    expect_paths(with(W8BENE, "country_of_organization", NULL), "[[\"country_of_organization\"]]");
    expect_paths(with(W8BENE, "permanent_residence_address", "\"Berlin\""),
                 "[[\"permanent_residence_address\"]]");
}

static void test_dps_and_self_cert_invalid(void **state)
{
    (void)state;
    expect_paths(with(DPS, "tax_residences", "[]"), "[[\"tax_residences\"]]");
    expect_paths(with(DPS, "tax_residences", "[{\"country_code\":\"de\"}]"),
                 "[[\"tax_residences\",0,\"country_code\"]]");
    expect_paths(with(DPS, "seller_type", "\"PERSON\""), "[[\"seller_type\"]]");
    expect_paths(with(DPS, "vat_number", "12"), "[[\"vat_number\"]]");
    expect_paths(with(SELF_CERT, "account_holder_type", NULL), "[[\"account_holder_type\"]]");
    expect_paths(with(SELF_CERT, "tax_residences", "[{\"tin\":\"1\"}]"),
                 "[[\"tax_residences\",0,\"country_code\"]]");
    expect_paths(with(SELF_CERT, "certified", NULL), "[[\"certified\"]]");
}

/* No issue message quotes the submitted TIN. */
static void test_messages_never_quote_the_tin(void **state)
{
    (void)state;
    json_t *b = with(W9, "tin", "\"98765-4321x\"");
    json_t *issues = json_array();
    taxdocs_type_t type;
    assert_int_equal(taxdocs_check(b, NOW, issues, &type), 1);
    char *text = json_dumps(issues, JSON_COMPACT);
    assert_null(strstr(text, "98765"));
    free(text);
    json_decref(issues);
    json_decref(b);
}

/* ---- derivations */

static void expect_expiration(const char *signed_on, const char *expected)
{
    char out[TAXDOCS_DATE_LEN];
    assert_true(taxdocs_expiration_date(signed_on, out));
    assert_string_equal(out, expected);
}

static void test_expiration_dates(void **state)
{
    (void)state;
    expect_expiration("2024-05-10", "2027-12-31");
    expect_expiration("2024-02-29", "2027-12-31"); /* signed on a leap day */
    expect_expiration("2021-03-01", "2024-12-31"); /* expires in a leap year */
    expect_expiration("2023-12-31", "2026-12-31"); /* signed on a year end */
    expect_expiration("2024-01-01", "2027-12-31"); /* signed on a year start */
    expect_expiration("1999-12-31", "2002-12-31");
    char out[TAXDOCS_DATE_LEN];
    assert_false(taxdocs_expiration_date("2024-5-10", out));
    assert_false(taxdocs_expiration_date("2024-05-10x", out));
    assert_false(taxdocs_expiration_date("", out));
    assert_false(taxdocs_expiration_date("abcd-ef-gh", out));
}

static void test_vat_numbers(void **state)
{
    (void)state;
    const char *good[] = {"DE123456789", "DE 123 456 789", "ATU12345678", "FR1A123456789",
                          "NL123456789B01", "IE1234567WA", "ES X1234567X", "RO12", "EL123456789",
                          "XIGD123", NULL};
    const char *bad[] = {"DE12345678", "DE1234567890", "US123456789", "AT12345678", "NL123456789",
                         "de123456789", "D", "FR1A12345678", "RO1", "", NULL};
    for (const char **v = good; *v != NULL; v++)
        assert_true(taxdocs_vat_number_valid(*v));
    for (const char **v = bad; *v != NULL; v++)
        assert_false(taxdocs_vat_number_valid(*v));
}

static void assess(const char *body_text, json_t *body, taxdocs_state_t *st)
{
    json_t *b = body != NULL ? body : parse(body_text);
    taxdocs_type_t type;
    json_t *issues = json_array();
    assert_int_equal(taxdocs_check(b, NOW, issues, &type), 0);
    json_decref(issues);
    assert_int_equal(taxdocs_assess(type, b, NOW, st), 0);
    json_decref(b);
}

/* The issue types of st in order, comma-separated. */
static void expect_issue_types(const taxdocs_state_t *st, const char *expected)
{
    json_t *issues = json_loads(st->issues, 0, NULL);
    assert_true(json_is_array(issues));
    char got[256] = "";
    size_t i;
    json_t *issue;
    json_array_foreach(issues, i, issue) {
        if (i > 0)
            strcat(got, ",");
        strcat(got, json_string_value(json_object_get(issue, "issue_type")));
        const char *created_at = json_string_value(json_object_get(issue, "created_at"));
        assert_non_null(created_at);
        assert_int_equal(strlen(created_at), strlen("2026-05-22T00:00:00.000Z"));
    }
    json_decref(issues);
    assert_string_equal(got, expected);
}

static void test_valid_documents_have_no_issues(void **state)
{
    (void)state;
    taxdocs_state_t st;
    assess(W9, NULL, &st);
    assert_string_equal(st.data_collection_status, "COMPLETE");
    assert_string_equal(st.tax_documentation_status, "VALID");
    assert_false(st.needs_resubmission);
    assert_string_equal(st.issues, "[]");
    assert_string_equal(st.tin_status, "PENDING");
    assert_int_equal(st.tin_validated_at, 0);
    assess(W8BEN, NULL, &st);
    assert_string_equal(st.expiration_date, "2027-12-31");
    assert_string_equal(st.treaty_claim_status, "VALID");
    assert_string_equal(st.issues, "[]");
    assess(W8BENE, NULL, &st);
    assert_string_equal(st.treaty_claim_status, "NOT_CLAIMED");
    assert_string_equal(st.tax_documentation_status, "VALID");
    assess(DPS, NULL, &st);
    assert_string_equal(st.data_collection_status, "COMPLETE");
    assert_string_equal(st.vat_status, "VALID");
    assert_int_equal(st.vat_validated_at, NOW);
    assert_string_equal(st.expiration_date, "2028-12-31");
    assess(SELF_CERT, NULL, &st);
    assert_string_equal(st.tax_documentation_status, "VALID");
    assert_string_equal(st.issues, "[]");
}

static void test_w8_issues(void **state)
{
    (void)state;
    taxdocs_state_t st;
    json_t *b = parse(W8BEN);
    json_object_set_new(b, "certified", json_false());
    json_object_set_new(b, "country_of_citizenship", json_string("US"));
    json_object_set_new(json_object_get(b, "permanent_residence_address"), "country_code",
                        json_string("US"));
    json_object_del(b, "foreign_tin");
    json_object_set_new(b, "signature_date", json_string("2022-06-01")); /* expired 2025-12-31 */
    assess(NULL, b, &st);
    expect_issue_types(&st, "MISSING_CERTIFICATION,US_INDICIA,MISSING_FOREIGN_TIN,"
                            "TREATY_COUNTRY_MISMATCH,EXPIRED");
    assert_string_equal(st.treaty_claim_status, "INVALID"); /* DE claim, US residence */
    assert_string_equal(st.data_collection_status, "INCOMPLETE");
    assert_string_equal(st.tax_documentation_status, "INVALID");
    assert_true(st.needs_resubmission);
    assert_string_equal(st.expiration_date, "2025-12-31");
    /* US indicia in two fields: one issue with two details */
    json_t *issues = json_loads(st.issues, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(json_array_get(issues, 1), "details")), 2);
    json_decref(issues);
}

/* Not incomplete, but still invalid: the fix is not "supply what is missing". */
static void test_w8_treaty_mismatch_is_complete_but_invalid(void **state)
{
    (void)state;
    taxdocs_state_t st;
    assess(NULL,
           with(W8BENE, "treaty_claim",
                "{\"country_code\":\"FR\",\"article\":\"10\",\"withholding_rate\":\"5\"}"),
           &st);
    expect_issue_types(&st, "TREATY_COUNTRY_MISMATCH");
    assert_string_equal(st.data_collection_status, "COMPLETE");
    assert_string_equal(st.tax_documentation_status, "INVALID");
    assert_string_equal(st.treaty_claim_status, "INVALID");
}

static void test_self_cert_and_dps_missing_tins(void **state)
{
    (void)state;
    taxdocs_state_t st;
    const char *residences = "[{\"country_code\":\"DE\"},{\"country_code\":\"FR\","
                             "\"tin_not_required_reason\":\"not issued\"},{\"country_code\":\"IT\"}]";
    assess(NULL, with(SELF_CERT, "tax_residences", residences), &st);
    expect_issue_types(&st, "MISSING_TIN,MISSING_TIN");
    assert_non_null(strstr(st.issues, "tax_residences[2].tin"));
    assert_string_equal(st.data_collection_status, "INCOMPLETE");
    assess(NULL, with(DPS, "tax_residences", residences), &st);
    assert_string_equal(st.data_collection_status, "INCOMPLETE");
    assess(NULL, with(DPS, "vat_number", NULL), &st);
    assert_string_equal(st.vat_status, "NOT_PROVIDED");
    assert_int_equal(st.vat_validated_at, 0);
    assess(NULL, with(DPS, "vat_number", "\"DE12\""), &st);
    assert_string_equal(st.vat_status, "INVALID");
    assert_int_equal(st.vat_validated_at, NOW);
    json_t *b = with(DPS, "seller_type", "\"INDIVIDUAL\"");
    assess(NULL, b, &st); /* an individual seller without date_of_birth */
    assert_string_equal(st.data_collection_status, "INCOMPLETE");
}

static void test_tin_results(void **state)
{
    (void)state;
    taxdocs_state_t st;
    assess(W9, NULL, &st);
    assert_int_equal(taxdocs_apply_tin_result(&st, "VALID", NOW + 5000), 0);
    assert_string_equal(st.tin_status, "VALID");
    assert_int_equal(st.tin_validated_at, NOW + 5000);
    assert_string_equal(st.issues, "[]");
    assert_false(st.needs_resubmission);
    assert_int_equal(taxdocs_apply_tin_result(&st, "MISMATCH", NOW + 6000), 0);
    expect_issue_types(&st, "TIN_MISMATCH");
    assert_non_null(strstr(st.issues, "\"created_at\":\"2026-05-22T00:00:06.000Z\""));
    assert_true(st.needs_resubmission);
    assert_string_equal(st.tax_documentation_status, "INVALID");
    assert_string_equal(st.data_collection_status, "COMPLETE");
    /* a later result replaces the earlier one's issue */
    assert_int_equal(taxdocs_apply_tin_result(&st, "INVALID_FORMAT", NOW + 7000), 0);
    expect_issue_types(&st, "TIN_INVALID_FORMAT");
    assert_int_equal(taxdocs_apply_tin_result(&st, "VALID", NOW + 8000), 0);
    assert_string_equal(st.issues, "[]");
    assert_false(st.needs_resubmission);
    assert_string_equal(st.tax_documentation_status, "VALID");
    /* issues of the submission itself stay */
    json_t *uncertified = with(W9, "certified", "false");
    assess(NULL, uncertified, &st);
    assert_int_equal(taxdocs_apply_tin_result(&st, "MISMATCH", NOW), 0);
    expect_issue_types(&st, "MISSING_CERTIFICATION,TIN_MISMATCH");
    assert_int_equal(taxdocs_apply_tin_result(&st, "VALID", NOW), 0);
    expect_issue_types(&st, "MISSING_CERTIFICATION");
    assert_true(st.needs_resubmission);
    /* an opaque status is kept (cut to the column) */
    assess(W9, NULL, &st);
    assert_int_equal(taxdocs_apply_tin_result(&st, "SOME_FUTURE_STATUS_THAT_IS_RATHER_LONG", NOW), 0);
    assert_string_equal(st.tin_status, "SOME_FUTURE_STATUS_THAT_IS_RATHE");
    assert_false(st.needs_resubmission);
    /* only a W-9 has a TIN result */
    assess(W8BEN, NULL, &st);
    assert_int_equal(taxdocs_apply_tin_result(&st, "VALID", NOW), -1);
}

/* ---- the objects as answered */

static char *keys_of(const json_t *object)
{
    static char keys[512];
    keys[0] = '\0';
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)object, key, value) {
        strcat(keys, key);
        strcat(keys, ",");
    }
    return keys;
}

static void test_object_fields_where_they_belong(void **state)
{
    (void)state;
    taxdocs_state_t st;
    assess(W9, NULL, &st);
    json_t *o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o), "data_collection_status,type,needs_resubmission,"
                                    "tax_documentation_status,issues,tin_status,");
    json_decref(o);
    taxdocs_apply_tin_result(&st, "VALID", NOW);
    o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o), "data_collection_status,type,needs_resubmission,"
                                    "tax_documentation_status,issues,tin_status,"
                                    "tin_validation_date,");
    assert_string_equal(json_string_value(json_object_get(o, "tin_validation_date")),
                        "2026-05-22T00:00:00.000Z");
    json_decref(o);
    assess(W8BENE, NULL, &st);
    o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o), "data_collection_status,type,needs_resubmission,"
                                    "tax_documentation_status,issues,expiration_date,"
                                    "treaty_claim_status,");
    assert_string_equal(json_string_value(json_object_get(o, "type")), "W-8BEN-E");
    json_decref(o);
    assess(DPS, NULL, &st);
    o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o),
                        "data_collection_status,expiration_date,vat_status,vat_validation_date,");
    json_decref(o);
    assess(NULL, with(DPS, "vat_number", NULL), &st);
    o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o), "data_collection_status,expiration_date,vat_status,");
    json_decref(o);
    assess(SELF_CERT, NULL, &st);
    o = taxdocs_object_json(&st);
    assert_string_equal(keys_of(o), "data_collection_status,needs_resubmission,"
                                    "tax_documentation_status,issues,");
    assert_true(json_is_array(json_object_get(o, "issues")));
    json_decref(o);
}

static void test_status_json_only_objects_on_file(void **state)
{
    (void)state;
    const char *owner = "00000000-0000-4000-8000-000000000001";
    const taxdocs_state_t *none[TAXDOCS_OBJECT_COUNT] = {NULL, NULL, NULL};
    json_t *s = taxdocs_status_json(owner, none);
    char *text = json_dumps(s, JSON_COMPACT);
    assert_string_equal(text, "{\"account_owner_id\":\"00000000-0000-4000-8000-000000000001\"}");
    free(text);
    json_decref(s);
    taxdocs_state_t self, dps;
    assess(SELF_CERT, NULL, &self);
    assess(DPS, NULL, &dps);
    const taxdocs_state_t *two[TAXDOCS_OBJECT_COUNT] = {NULL, &dps, &self};
    s = taxdocs_status_json(owner, two);
    assert_string_equal(keys_of(s), "account_owner_id,dps_questionnaire,self_certification,");
    json_decref(s);
}

/* ---- the store half: submission, events, TIN check, TIN result */

typedef struct fixture {
    char dir[64];
    char path[160];
    store_t *store;
    store_conn_t *conn;
    char tenant[STORE_UUID_LEN];
    char owner_uuid[STORE_UUID_LEN];
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
} fixture_t;

static int fixture_setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    *state = fx;
    fx->store = SCRATCH_STORE_OPEN(fx, "taxd.db");
    if (fx->store == NULL)
        return -1;
    fx->conn = store_acquire(fx->store);
    if (fx->conn == NULL)
        return -1;
    memset(fx->key, 7, sizeof fx->key);
    store_tenant_t tenant = {.id = "00000000-0000-4000-8000-000000000001", .name = "t",
                             .created_at = NOW};
    store_tenant_seed_t seed = {"00000000-0000-4000-8000-000000000002",
                                "00000000-0000-4000-8000-000000000003"};
    if (store_tenant_create(fx->conn, &tenant, &seed, NULL) != STORE_OK)
        return -1;
    memcpy(fx->tenant, tenant.id, STORE_UUID_LEN);
    store_owner_t *owner = calloc(1, sizeof *owner);
    snprintf(owner->uuid, sizeof owner->uuid, "00000000-0000-4000-8000-000000000010");
    snprintf(owner->id, sizeof owner->id, "owner-1");
    snprintf(owner->name, sizeof owner->name, "Ada");
    snprintf(owner->account_owner_type, sizeof owner->account_owner_type, "individual");
    owner->created_at = owner->updated_at = NOW;
    store_status_t st = store_owner_create(fx->conn, fx->tenant, owner);
    memcpy(fx->owner_uuid, owner->uuid, STORE_UUID_LEN);
    free(owner);
    return st == STORE_OK ? 0 : -1;
}

static int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx->conn != NULL)
        store_release(fx->store, fx->conn);
    if (fx->store != NULL)
        scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static void submit(fixture_t *fx, const char *body_text, int64_t now, char id[STORE_UUID_LEN])
{
    json_t *body = parse(body_text);
    taxdocs_type_t type;
    json_t *issues = json_array();
    assert_int_equal(taxdocs_check(body, now, issues, &type), 0);
    json_decref(issues);
    taxdocs_submission_t s = {.tin_key = fx->key,
                              .tenant_id = fx->tenant,
                              .owner_uuid = fx->owner_uuid,
                              .type = type,
                              .body = body,
                              .now = now,
                              .source = "api"};
    assert_int_equal(taxdocs_submit(fx->conn, &s, id), STORE_OK);
    json_decref(body);
}

/* The events written so far, "TYPE payload" per line, in order. */
static char *events_text(fixture_t *fx)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT type, payload FROM events ORDER BY rowid",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    while (sqlite3_step(stmt) == SQLITE_ROW)
        len += (size_t)snprintf(out + len, cap - len, "%s %s\n", sqlite3_column_text(stmt, 0),
                                sqlite3_column_text(stmt, 1));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
}

typedef struct tin_result_args {
    const char *tenant, *id, *status;
    int64_t at;
} tin_result_args_t;

static store_status_t record_tx(store_conn_t *conn, const void *arg)
{
    const tin_result_args_t *a = arg;
    return taxdocs_record_tin_result_in_tx(conn, a->tenant, a->id, a->status, a->at, a->at);
}

static void test_submit_w9_queues_check_and_emits(void **state)
{
    fixture_t *fx = *state;
    char id[STORE_UUID_LEN];
    submit(fx, W9, NOW, id);
    char *events = events_text(fx);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS {\"account_owner_id\":\"%s\","
             "\"w_form_questionnaire\":{\"data_collection_status\":\"COMPLETE\",\"type\":\"W-9\","
             "\"needs_resubmission\":false,\"tax_documentation_status\":\"VALID\",\"issues\":[],"
             "\"tin_status\":\"PENDING\"}}\n",
             fx->owner_uuid);
    assert_string_equal(events, expected);
    free(events);

    /* the check: kind, subject, owner, name, type; its TIN opens for the check's id */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(fx->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT id, kind, subject_id, owner_uuid, name, tin_type,"
                                        " tin_sealed, status FROM tin_checks",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    const char *check_id = (const char *)sqlite3_column_text(stmt, 0);
    assert_string_equal(sqlite3_column_text(stmt, 1), "tax_documentation");
    assert_string_equal(sqlite3_column_text(stmt, 2), id);
    assert_string_equal(sqlite3_column_text(stmt, 3), fx->owner_uuid);
    assert_string_equal(sqlite3_column_text(stmt, 4), "Ada");
    assert_string_equal(sqlite3_column_text(stmt, 5), "SSN");
    assert_string_equal(sqlite3_column_text(stmt, 7), "PENDING");
    char tin[TIN_MAX];
    assert_int_equal(tin_open(fx->key, fx->tenant, check_id, sqlite3_column_blob(stmt, 6),
                              (size_t)sqlite3_column_bytes(stmt, 6), tin),
                     0);
    assert_string_equal(tin, "123-45-6789");
    assert_int_equal(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    /* the submission's own sealed TIN opens for (tenant, submission id) only */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT tin_sealed FROM tax_documents", -1, &stmt,
                                        NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    assert_int_equal(tin_open(fx->key, fx->tenant, id, sqlite3_column_blob(stmt, 0),
                              (size_t)sqlite3_column_bytes(stmt, 0), tin),
                     0);
    assert_string_equal(tin, "123-45-6789");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

static void test_tin_result_on_current_w9(void **state)
{
    fixture_t *fx = *state;
    char id[STORE_UUID_LEN];
    submit(fx, W9, NOW, id);
    tin_result_args_t a = {fx->tenant, id, "MISMATCH", NOW + 1000};
    assert_int_equal(store_write(fx->conn, record_tx, &a), STORE_OK);
    char *events = events_text(fx);
    char expected[2048];
    snprintf(expected, sizeof expected,
             "TAX_DOCUMENTATION_TIN_VALIDATION {\"tax_documentation_id\":\"%s\","
             "\"account_owner_id\":\"%s\",\"account_owner_external_id\":\"owner-1\","
             "\"status\":\"MISMATCH\",\"validation_date\":\"2026-05-22T00:00:01.000Z\"}\n"
             "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS {\"account_owner_id\":\"%s\","
             "\"w_form_questionnaire\":{\"data_collection_status\":\"COMPLETE\",\"type\":\"W-9\","
             "\"needs_resubmission\":true,\"tax_documentation_status\":\"INVALID\",\"issues\":"
             "[{\"issue_type\":\"TIN_MISMATCH\",\"created_at\":\"2026-05-22T00:00:01.000Z\","
             "\"details\":[{\"field\":\"tin\",\"description\":\"The name and TIN do not match the "
             "tax authority's records\"}]}],\"tin_status\":\"MISMATCH\",\"tin_validation_date\":"
             "\"2026-05-22T00:00:01.000Z\"}}\n",
             id, fx->owner_uuid, fx->owner_uuid);
    const char *second = strchr(events, '\n') + 1; /* after the submission's event */
    assert_string_equal(second, expected);
    free(events);
    /* the GET reads the same state */
    json_t *status = NULL;
    assert_int_equal(taxdocs_status_get(fx->conn, fx->tenant, fx->owner_uuid, &status), STORE_OK);
    json_t *w = json_object_get(status, "w_form_questionnaire");
    assert_string_equal(json_string_value(json_object_get(w, "tin_status")), "MISMATCH");
    json_decref(status);
}

/* A result for a superseded W-9 is recorded on it and announced with
 * TAX_DOCUMENTATION_TIN_VALIDATION, but the owner's state did not change:
 * no status event. */
static void test_tin_result_on_superseded_w9(void **state)
{
    fixture_t *fx = *state;
    char w9[STORE_UUID_LEN], w8[STORE_UUID_LEN];
    submit(fx, W9, NOW, w9);
    submit(fx, W8BEN, NOW, w8);
    tin_result_args_t a = {fx->tenant, w9, "VALID", NOW + 1000};
    assert_int_equal(store_write(fx->conn, record_tx, &a), STORE_OK);
    char *events = events_text(fx);
    const char *last = events;
    for (int i = 0; i < 2; i++)
        last = strchr(last, '\n') + 1;
    assert_non_null(strstr(last, "TAX_DOCUMENTATION_TIN_VALIDATION {"));
    assert_non_null(strstr(last, "\"status\":\"VALID\""));
    assert_null(strchr(strchr(last, '\n') + 1, '\n')); /* nothing after it */
    free(events);
    json_t *status = NULL;
    assert_int_equal(taxdocs_status_get(fx->conn, fx->tenant, fx->owner_uuid, &status), STORE_OK);
    json_t *w = json_object_get(status, "w_form_questionnaire");
    assert_string_equal(json_string_value(json_object_get(w, "type")), "W-8BEN");
    json_decref(status);
}

static void test_tin_result_for_unknown_submission(void **state)
{
    fixture_t *fx = *state;
    char w8[STORE_UUID_LEN];
    submit(fx, W8BEN, NOW, w8);
    tin_result_args_t unknown = {fx->tenant, "00000000-0000-4000-8000-00000000dead", "VALID", NOW};
    assert_int_equal(store_write(fx->conn, record_tx, &unknown), STORE_OK);
    tin_result_args_t not_w9 = {fx->tenant, w8, "VALID", NOW};
    assert_int_equal(store_write(fx->conn, record_tx, &not_w9), STORE_OK);
    char *events = events_text(fx);
    assert_null(strchr(strchr(events, '\n') + 1, '\n')); /* only the submission's event */
    free(events);
}

/* Every submission is a change of state: identical ones emit again; each
 * object keeps its latest submission. */
static void test_latest_per_object(void **state)
{
    fixture_t *fx = *state;
    char a[STORE_UUID_LEN], b[STORE_UUID_LEN], c[STORE_UUID_LEN];
    submit(fx, SELF_CERT, NOW, a);
    submit(fx, DPS, NOW, b);
    submit(fx, SELF_CERT, NOW, c);
    char *events = events_text(fx);
    int lines = 0;
    for (const char *p = events; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    assert_int_equal(lines, 3);
    free(events);
    json_t *status = NULL;
    assert_int_equal(taxdocs_status_get(fx->conn, fx->tenant, fx->owner_uuid, &status), STORE_OK);
    assert_string_equal(keys_of(status), "account_owner_id,dps_questionnaire,self_certification,");
    json_decref(status);
}

#define FIXTURE_TEST(name) cmocka_unit_test_setup_teardown(name, fixture_setup, fixture_teardown)

int main(void)
{
    const char *filter = getenv("TEST_FILTER");
    if (filter != NULL)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_type_valid),
        cmocka_unit_test(test_document_type_refused),
        cmocka_unit_test(test_w9_invalid),
        cmocka_unit_test(test_w8_invalid),
        cmocka_unit_test(test_dps_and_self_cert_invalid),
        cmocka_unit_test(test_messages_never_quote_the_tin),
        cmocka_unit_test(test_expiration_dates),
        cmocka_unit_test(test_vat_numbers),
        cmocka_unit_test(test_valid_documents_have_no_issues),
        cmocka_unit_test(test_w8_issues),
        cmocka_unit_test(test_w8_treaty_mismatch_is_complete_but_invalid),
        cmocka_unit_test(test_self_cert_and_dps_missing_tins),
        cmocka_unit_test(test_tin_results),
        cmocka_unit_test(test_object_fields_where_they_belong),
        cmocka_unit_test(test_status_json_only_objects_on_file),
        FIXTURE_TEST(test_submit_w9_queues_check_and_emits),
        FIXTURE_TEST(test_tin_result_on_current_w9),
        FIXTURE_TEST(test_tin_result_on_superseded_w9),
        FIXTURE_TEST(test_tin_result_for_unknown_submission),
        FIXTURE_TEST(test_latest_per_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
