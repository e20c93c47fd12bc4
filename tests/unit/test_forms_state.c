/* Unit tests of the tax form state machine (spec § Tax form status): every
 * allowed transition and every refused one, from each state and for each
 * action, plus the status names the events and the API carry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "forms/state.h"

static void expect(forms_status_t from, forms_action_t action, forms_decision_t decision,
                   forms_status_t next)
{
    forms_status_t got = (forms_status_t)-1;
    assert_int_equal(forms_decide(from, action, &got), decision);
    assert_int_equal(got, next);
}

/* (none) --generate--> Generated: a new form. */
static void test_generate_from_none_creates(void **state)
{
    (void)state;
    expect(FORMS_NONE, FORMS_GENERATE, FORMS_CREATE, FORMS_GENERATED);
    assert_false(forms_refused(FORMS_CREATE));
}

/* Generated --generate--> Generated: refreshed in place. */
static void test_generate_over_generated_refreshes(void **state)
{
    (void)state;
    expect(FORMS_GENERATED, FORMS_GENERATE, FORMS_REFRESH, FORMS_GENERATED);
    assert_false(forms_refused(FORMS_REFRESH));
}

/* Generated --file--> Filed; Generated --delete--> Deleted. */
static void test_generated_files_and_deletes(void **state)
{
    (void)state;
    expect(FORMS_GENERATED, FORMS_FILE, FORMS_MOVE, FORMS_FILED);
    expect(FORMS_GENERATED, FORMS_DELETE, FORMS_MOVE, FORMS_DELETED);
    assert_false(forms_refused(FORMS_MOVE));
}

/* A Filed form cannot be deleted; Filed is final; it is never regenerated. */
static void test_filed_is_final(void **state)
{
    (void)state;
    expect(FORMS_FILED, FORMS_DELETE, FORMS_REFUSED_FILED, FORMS_FILED);
    expect(FORMS_FILED, FORMS_FILE, FORMS_REFUSED_FILED, FORMS_FILED);
    expect(FORMS_FILED, FORMS_GENERATE, FORMS_REFUSED_FILED, FORMS_FILED);
    assert_true(forms_refused(FORMS_REFUSED_FILED));
    assert_non_null(strstr(forms_refusal_reason(FORMS_REFUSED_FILED, FORMS_DELETE),
                           "cannot be deleted"));
}

/* Deleted is final for file and delete; generating again starts a new form. */
static void test_deleted_is_final_and_regenerating_creates(void **state)
{
    (void)state;
    expect(FORMS_DELETED, FORMS_FILE, FORMS_REFUSED_DELETED, FORMS_DELETED);
    expect(FORMS_DELETED, FORMS_DELETE, FORMS_REFUSED_DELETED, FORMS_DELETED);
    expect(FORMS_DELETED, FORMS_GENERATE, FORMS_CREATE, FORMS_GENERATED);
    assert_true(forms_refused(FORMS_REFUSED_DELETED));
}

/* Filing or deleting a form that does not exist is refused. */
static void test_nothing_to_file_or_delete(void **state)
{
    (void)state;
    expect(FORMS_NONE, FORMS_FILE, FORMS_REFUSED_MISSING, FORMS_NONE);
    expect(FORMS_NONE, FORMS_DELETE, FORMS_REFUSED_MISSING, FORMS_NONE);
    assert_true(forms_refused(FORMS_REFUSED_MISSING));
    assert_string_equal(forms_refusal_reason(FORMS_CREATE, FORMS_GENERATE), "");
}

/* The spec's spellings, both ways. */
static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(forms_status_name(FORMS_GENERATED), "Generated");
    assert_string_equal(forms_status_name(FORMS_FILED), "Filed");
    assert_string_equal(forms_status_name(FORMS_DELETED), "Deleted");
    assert_null(forms_status_name(FORMS_NONE));
    forms_status_t s;
    assert_true(forms_status_parse("Filed", &s));
    assert_int_equal(s, FORMS_FILED);
    assert_false(forms_status_parse("filed", &s));
    assert_false(forms_status_parse("", &s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_from_none_creates),
        cmocka_unit_test(test_generate_over_generated_refreshes),
        cmocka_unit_test(test_generated_files_and_deletes),
        cmocka_unit_test(test_filed_is_final),
        cmocka_unit_test(test_deleted_is_final_and_regenerating_creates),
        cmocka_unit_test(test_nothing_to_file_or_delete),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
