/* Unit tests for src/taxdocs/taxbit_map.c: every row of the mapping table
 * of docs/decisions.md ("Taxbit's words on the SDK routes"), the status
 * object's shape (Taxbit's keys only, RFC 3339 dates, {} when nothing is
 * on file, self-certifications left out). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taxdocs/taxbit_map.h"

static store_taxdoc_t row(const char *type)
{
    store_taxdoc_t r;
    memset(&r, 0, sizeof r);
    snprintf(r.document_type, sizeof r.document_type, "%s", type);
    snprintf(r.data_collection_status, sizeof r.data_collection_status, "COMPLETE");
    return r;
}

static const char *tin(const char *type, const char *status, const char *tin_type)
{
    static store_taxdoc_t r;
    r = row(type);
    snprintf(r.tin_status, sizeof r.tin_status, "%s", status);
    snprintf(r.tin_type, sizeof r.tin_type, "%s", tin_type);
    return taxbit_tin_status(&r);
}

static void test_tin_status_table(void **state)
{
    (void)state;
    assert_string_equal(tin("W-9", "PENDING", "SSN"), "PENDING");
    assert_string_equal(tin("W-9", "VALID", "SSN"), "VALID_SSN_MATCH");
    assert_string_equal(tin("W-9", "VALID", "ITIN"), "VALID_SSN_MATCH");
    assert_string_equal(tin("W-9", "VALID", "ATIN"), "VALID_SSN_MATCH");
    assert_string_equal(tin("W-9", "VALID", "EIN"), "VALID_EIN_MATCH");
    assert_string_equal(tin("W-9", "INVALID_FORMAT", "SSN"), "INVALID_DATA");
    assert_string_equal(tin("W-9", "MISMATCH", "EIN"), "MISMATCH");
    assert_string_equal(tin("W-9", "ERROR", "EIN"), "ERROR");
    assert_string_equal(tin("W-9", "SOMETHING_A_MATCHER_SAID", "EIN"), "ERROR");
    assert_string_equal(tin("W-8BEN", "", ""), "FOREIGN");
    assert_string_equal(tin("W-8BEN-E", "", ""), "FOREIGN");
}

static const char *vat(const char *status, const char *note)
{
    static store_taxdoc_t r;
    r = row("DPS");
    snprintf(r.vat_status, sizeof r.vat_status, "%s", status);
    snprintf(r.vat_note, sizeof r.vat_note, "%s", note);
    return taxbit_vat_status(&r);
}

static void test_vat_status_table(void **state)
{
    (void)state;
    assert_string_equal(vat("VALID", ""), "VALID");
    assert_string_equal(vat("INVALID", ""), "INVALID");
    assert_string_equal(vat("NOT_PROVIDED", "NON_EU"), "NON_EU");
    assert_string_equal(vat("VALID", "NON_EU"), "NON_EU");
    assert_string_equal(vat("NOT_PROVIDED", "NOT_REQUIRED"), "NOT_REQUIRED");
    assert_string_equal(vat("NOT_PROVIDED", ""), "INSUFFICIENT_DATA");
}

static void test_status_object(void **state)
{
    (void)state;
    store_taxdoc_t rows[3] = {row("W-9"), row("DPS"), row("SELF_CERTIFICATION")};
    snprintf(rows[0].tin_status, sizeof rows[0].tin_status, "VALID");
    snprintf(rows[0].tin_type, sizeof rows[0].tin_type, "EIN");
    rows[0].tin_validated_at = 1764000000123;
    rows[0].needs_resubmission = true;
    snprintf(rows[1].vat_status, sizeof rows[1].vat_status, "NOT_PROVIDED");
    snprintf(rows[1].vat_note, sizeof rows[1].vat_note, "NOT_REQUIRED");
    snprintf(rows[1].expiration_date, sizeof rows[1].expiration_date, "2027-12-31");

    json_t *s = taxbit_status_json(rows, 3);
    assert_non_null(s);
    char *text = json_dumps(s, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(
        text, "{\"dps_questionnaire\":{\"data_collection_status\":\"COMPLETE\","
              "\"expiration_date\":\"2027-12-31T00:00:00.000Z\",\"vat_status\":\"NOT_REQUIRED\"},"
              "\"w_form_questionnaire\":{\"data_collection_status\":\"COMPLETE\","
              "\"needs_resubmission\":true,\"tin_status\":\"VALID_EIN_MATCH\","
              "\"tin_validation_date\":\"2025-11-24T16:00:00.123Z\",\"type\":\"W-9\"}}");
    free(text);
    json_decref(s);

    json_t *empty = taxbit_status_json(rows + 2, 1); /* a self-certification only */
    assert_int_equal(json_object_size(empty), 0);
    json_decref(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tin_status_table),
        cmocka_unit_test(test_vat_status_table),
        cmocka_unit_test(test_status_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
