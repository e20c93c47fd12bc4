/* log: JSON lines on stderr, written whole by one write(2) (a line, or a
 * batch of lines no longer than PIPE_BUF) so lines from many threads never
 * interleave. Callers pass structured fields; nothing here formats
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

/* Lines gathered by one thread and written together: a loop that logs a
 * line per item pays one write(2) per flush instead of one per line. Each
 * write holds whole lines and at most PIPE_BUF bytes (a longer line alone),
 * so lines of other threads still never land inside one. Zero-initialise;
 * the owner flushes (before it sleeps) and frees it. */
typedef struct log_batch {
    char *data; /* PIPE_BUF bytes once a line was added */
    size_t len;
} log_batch_t;

/* log_event_raw's line, added to b (written at once when b cannot grow). */
void log_batch_add(log_batch_t *b, log_level_t level, const char *msg, const char *fields_json);
void log_batch_flush(log_batch_t *b);
/* Flushes, then releases b's buffer. */
void log_batch_free(log_batch_t *b);

/* printf-style convenience without fields. */
void log_msg(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
