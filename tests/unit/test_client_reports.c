/* libtaxdclient reports: the download link's URL (absolute as is, relative
 * joined to the base URL with one slash) and the arguments the report
 * functions refuse before sending anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/internal.h"
#include "client/reports.h"

static void check_link(const char *base, const char *link, const char *want)
{
    char *got = tc_report_link_url(base, link);
    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Rule: an absolute download_url is fetched as the service gave it. */
static void absolute_links_are_kept(void **state)
{
    (void)state;
    check_link("http://proxy:1", "http://127.0.0.1:8080/v1/reports/x/download?expires=1",
               "http://127.0.0.1:8080/v1/reports/x/download?expires=1");
    check_link("http://proxy:1", "HTTPS://h/v1/r?a=b", "HTTPS://h/v1/r?a=b");
}

/* Rule: a relative download_url is joined to the client's base URL. */
static void relative_links_join_the_base(void **state)
{
    (void)state;
    check_link("http://h:1", "/v1/reports/x/download?s=1", "http://h:1/v1/reports/x/download?s=1");
    check_link("http://h:1/", "/v1/r", "http://h:1/v1/r");
    check_link("http://h:1//", "v1/r", "http://h:1/v1/r");
    check_link("http://h:1", "", NULL);
    check_link("http://h:1", NULL, NULL);
}

/* Rule: a call without what it needs is TAXD_E_INVALID and sends nothing. */
static void bad_arguments_send_nothing(void **state)
{
    (void)state;
    taxd_error err = {0};
    char *id = (char *)"x";
    assert_int_equal(taxd_report_trigger(NULL, TAXD_REPORT_GAINS, NULL, &id, &err),
                     TAXD_E_INVALID);
    assert_non_null(err.message);
    taxd_error_clear(&err);
    assert_int_equal(taxd_report_wait(NULL, TAXD_REPORT_GAINS, "id", 0, NULL, NULL, NULL, &err),
                     TAXD_E_INVALID);
    taxd_error_clear(&err);
    assert_int_equal(taxd_report_download(NULL, TAXD_REPORT_GAINS, "id", "/tmp/x", NULL, NULL,
                                          &err),
                     TAXD_E_INVALID);
    taxd_error_clear(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(absolute_links_are_kept),
        cmocka_unit_test(relative_links_join_the_base),
        cmocka_unit_test(bad_arguments_send_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
