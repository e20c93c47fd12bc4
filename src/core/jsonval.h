/* core/jsonval: JSON values in the service's own formats, made one way for
 * the handlers, the engines' payloads and the operator commands. Each
 * returns a new reference (NULL when out of memory, which jansson's
 * setters and json_pack take as a failure). */
#ifndef TAXD_CORE_JSONVAL_H
#define TAXD_CORE_JSONVAL_H

#include <jansson.h>
#include <stdint.h>

/* ms since the epoch as RFC 3339 UTC with milliseconds and Z. */
json_t *jsonval_time(int64_t ms);

/* The same, or null when ms is 0 or less: a time that was never set. */
json_t *jsonval_time_or_null(int64_t ms);

#endif
