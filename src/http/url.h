/* url: the raw request target, split and decoded exactly once. libmicrohttpd
 * hands handlers a URL that it has already percent-decoded, which loses the
 * difference between "/" and "%2F" in an id; taxd keeps the raw target and
 * decodes each path segment and query value here, once. */
#ifndef TAXD_HTTP_URL_H
#define TAXD_HTTP_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Splits a raw target "path?query" without copying: *path_len covers the path,
 * *query points after '?' (or at the terminating NUL) and runs to the end. */
void url_split(const char *target, size_t *path_len, const char **query);

/* Percent-decodes src[0..len) into dst (which needs len + 1 bytes) and
 * NUL-terminates. plus_is_space: decode '+' as ' ' (query strings only).
 * Returns the decoded length, or -1 for a malformed escape ("%4", "%zz") or
 * an encoded NUL ("%00"). */
long url_decode(const char *src, size_t len, char *dst, bool plus_is_space);

/* Finds the first query parameter called name (compared after decoding) and
 * decodes its value into a malloc'd string the caller frees. Returns 1 when
 * found, 0 when absent, -1 when the query is malformed or memory ran out
 * (then *value is NULL). A parameter without '=' has the empty value. */
int url_query_get(const char *query, const char *name, char **value);

#endif
