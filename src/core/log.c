/* log: JSON lines on stderr. See log.h. The time is the real wall clock, not
 * the test-shifted service clock: logs must stay truthful. */
#include "core/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"

static const char *level_name(log_level_t level)
{
    switch (level) {
    case LOG_DEBUG: return "debug";
    case LOG_INFO: return "info";
    case LOG_WARN: return "warn";
    default: return "error";
    }
}

void log_event(log_level_t level, const char *msg, json_t *fields)
{
    char now[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(clock_now_ms(NULL), now);
    json_t *line = json_object();
    if (line == NULL) {
        json_decref(fields);
        return;
    }
    json_object_set_new(line, "time", json_string(now));
    json_object_set_new(line, "level", json_string(level_name(level)));
    json_object_set_new(line, "msg", json_string(msg));
    if (fields != NULL)
        json_object_update_missing(line, fields);
    json_decref(fields);

    char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(line);
    if (text == NULL)
        return;
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: written with an explicit length below */
    ssize_t written = write(STDERR_FILENO, text, len + 1);
    (void)written; /* nowhere to report a failed log write */
    free(text);
}

static void write_raw_line(buf_t *b, log_level_t level, const char *msg,
                           const char *fields_json)
{
    char now[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(clock_now_ms(NULL), now);
    buf_puts(b, "{\"time\":\"");
    buf_puts(b, now);
    buf_puts(b, "\",\"level\":\"");
    buf_puts(b, level_name(level));
    buf_puts(b, "\",\"msg\":\"");
    buf_puts(b, msg);
    buf_puts(b, "\",");
    buf_puts(b, fields_json);
    buf_puts(b, "}\n");
}

/* Formats the line into stack (or, when it is longer, a heap buffer the
 * caller frees through *heap); NULL when out of memory. */
static const char *raw_line(char *stack, size_t cap, char **heap, size_t *len, log_level_t level,
                            const char *msg, const char *fields_json)
{
    buf_t b = buf_over(stack, cap);
    write_raw_line(&b, level, msg, fields_json);
    *heap = NULL;
    if (b.overflow) { /* a long error body: the line goes on the heap */
        size_t heap_cap = strlen(fields_json) + strlen(msg) + 128;
        if ((*heap = malloc(heap_cap)) == NULL)
            return NULL;
        b = buf_over(*heap, heap_cap);
        write_raw_line(&b, level, msg, fields_json);
    }
    *len = b.len;
    return b.data;
}

static void write_all(const char *data, size_t len)
{
    ssize_t written = write(STDERR_FILENO, data, len);
    (void)written; /* nowhere to report a failed log write */
}

void log_event_raw(log_level_t level, const char *msg, const char *fields_json)
{
    char stack[2048], *heap;
    size_t len;
    const char *line = raw_line(stack, sizeof stack, &heap, &len, level, msg, fields_json);
    if (line != NULL)
        write_all(line, len);
    free(heap);
}

void log_batch_add(log_batch_t *b, log_level_t level, const char *msg, const char *fields_json)
{
    char stack[2048], *heap;
    size_t len;
    const char *line = raw_line(stack, sizeof stack, &heap, &len, level, msg, fields_json);
    if (line == NULL)
        return;
    if (b->len + len > PIPE_BUF)
        log_batch_flush(b);
    /* a line longer than a batch, or no buffer to be had, is written alone */
    bool batched = len <= PIPE_BUF && (b->data != NULL || (b->data = malloc(PIPE_BUF)) != NULL);
    if (batched) {
        memcpy(b->data + b->len, line, len);
        b->len += len;
    } else {
        write_all(line, len);
    }
    free(heap);
}

void log_batch_flush(log_batch_t *b)
{
    if (b->len > 0)
        write_all(b->data, b->len);
    b->len = 0;
}

void log_batch_free(log_batch_t *b)
{
    log_batch_flush(b);
    free(b->data);
    b->data = NULL;
}

void log_msg(log_level_t level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_event(level, buf, NULL);
}
