/* log: JSON lines on stderr, one write(2) per line so lines from many threads
 * never interleave. Callers pass structured fields; nothing here formats
 * secrets, and callers must never put tokens, client secrets or TINs in
 * fields. */
#ifndef TAXD_CORE_LOG_H
#define TAXD_CORE_LOG_H

#include <jansson.h>

typedef enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;

/* Writes {"time":...,"level":...,"msg":msg, ...fields}. fields (an object or
 * NULL) is stolen. */
void log_event(log_level_t level, const char *msg, json_t *fields);

/* The hot-path variant: fields_json is a pre-serialized, trusted fragment of
 * object members ("\"k\":1,\"s\":\"v\"") that is written as is. Used by the
 * access log, which must not pay for building a JSON tree per request. */
void log_event_raw(log_level_t level, const char *msg, const char *fields_json);

/* printf-style convenience without fields. */
void log_msg(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
