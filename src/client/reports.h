/* client/reports: the pure part of the report functions, for unit tests.
 * The public functions (taxd_report_*) are in <taxd/client.h>. */
#ifndef TAXD_CLIENT_REPORTS_H
#define TAXD_CLIENT_REPORTS_H

/* The URL to fetch for a status answer's download_url: an absolute http(s)
 * link as it is, a relative one ("/v1/..." or "v1/...") joined to base_url
 * with exactly one slash. malloc'd; NULL for an empty link or no memory. */
char *tc_report_link_url(const char *base_url, const char *link);

#endif
