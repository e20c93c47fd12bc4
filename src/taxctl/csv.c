/* taxctl/csv: see csv.h. One pass, byte by byte: quoted fields are the
 * only state, and a record is built in one reused buffer. */
#include "csv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void csv_open(csv_reader *r, const char *data, size_t len)
{
    memset(r, 0, sizeof *r);
    r->p = data;
    r->end = data + len;
    r->line = 1;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        r->p += 3;
}

void csv_close(csv_reader *r)
{
    free(r->buf);
    free(r->offsets);
    free(r->fields);
    memset(r, 0, sizeof *r);
}

static int put(csv_reader *r, char c)
{
    if (r->len == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        char *b = realloc(r->buf, cap);
        if (!b)
            return -2;
        r->buf = b;
        r->cap = cap;
    }
    r->buf[r->len++] = c;
    return 0;
}

/* Ends the current field (NUL) and starts the next one's offset. */
static int end_field(csv_reader *r)
{
    if (put(r, '\0') != 0)
        return -2;
    if (r->n + 1 >= r->ncap) {
        size_t cap = r->ncap ? r->ncap * 2 : 32;
        size_t *o = realloc(r->offsets, cap * sizeof *o);
        if (!o)
            return -2;
        r->offsets = o;
        r->ncap = cap;
    }
    r->offsets[++r->n] = r->len;
    return 0;
}

/* Skips to the start of the next line (after a syntax error). */
static void skip_line(csv_reader *r)
{
    while (r->p < r->end && *r->p != '\n')
        r->p++;
    if (r->p < r->end) {
        r->p++;
        r->line++;
    }
}

static int finish_record(csv_reader *r)
{
    const char **f = realloc(r->fields, r->ncap * sizeof *f);
    if (!f)
        return -2;
    r->fields = f;
    for (size_t i = 0; i < r->n; i++)
        r->fields[i] = r->buf + r->offsets[i];
    return 1;
}

/* A quoted field from just after its opening quote to just after the
 * closing one. */
static int quoted(csv_reader *r, long start_line, char *msg, size_t msg_len)
{
    for (;;) {
        if (r->p >= r->end) {
            snprintf(msg, msg_len, "a quoted field opened on line %ld is never closed", start_line);
            return -1;
        }
        char c = *r->p++;
        if (c == '"') {
            if (r->p < r->end && *r->p == '"') {
                r->p++;
                if (put(r, '"') != 0)
                    return -2;
                continue;
            }
            return 0;
        }
        if (c == '\n')
            r->line++;
        if (put(r, c) != 0)
            return -2;
    }
}

/* One field at r->p (quoted or not), stored and ended. */
static int field(csv_reader *r, long line, char *msg, size_t msg_len)
{
    if (r->p < r->end && *r->p == '"') {
        r->p++;
        int q = quoted(r, line, msg, msg_len);
        if (q != 0)
            return q;
        if (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r') {
            snprintf(msg, msg_len, "text after a closing quote");
            skip_line(r);
            return -1;
        }
        return end_field(r);
    }
    while (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r') {
        if (*r->p == '"') {
            snprintf(msg, msg_len, "a quote inside a field that does not start with one");
            skip_line(r);
            return -1;
        }
        if (put(r, *r->p++) != 0)
            return -2;
    }
    return end_field(r);
}

/* Past the record's end: LF, CRLF, or the end of the data. */
static int end_record(csv_reader *r, char *msg, size_t msg_len)
{
    if (r->p < r->end && *r->p == '\r') {
        if (r->p + 1 >= r->end || r->p[1] != '\n') {
            snprintf(msg, msg_len, "a carriage return outside quotes not followed by a line feed");
            skip_line(r);
            return -1;
        }
        r->p++;
    }
    if (r->p < r->end) { /* the '\n' */
        r->p++;
        r->line++;
    }
    return 0;
}

int csv_next(csv_reader *r, long *line, char *msg, size_t msg_len)
{
    while (r->p < r->end && (*r->p == '\n' || (*r->p == '\r' && r->p + 1 < r->end && r->p[1] == '\n'))) {
        r->p += *r->p == '\r' ? 2 : 1; /* blank lines between records */
        r->line++;
    }
    if (r->p >= r->end)
        return 0;
    *line = r->line;
    r->len = 0;
    r->n = 0;
    if (!r->offsets && (r->offsets = malloc(32 * sizeof *r->offsets)) != NULL)
        r->ncap = 32;
    if (!r->offsets)
        return -2;
    r->offsets[0] = 0;
    for (;;) {
        int f = field(r, *line, msg, msg_len);
        if (f != 0)
            return f;
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        int e = end_record(r, msg, msg_len);
        return e != 0 ? e : finish_record(r);
    }
}
