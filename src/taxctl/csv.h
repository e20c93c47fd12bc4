/* taxctl/csv: an RFC 4180 reader over a buffer in memory (the mmap'd file).
 * Fields are separated by ',', records end with LF or CRLF, a field in
 * double quotes may hold commas, quotes doubled ("") and line breaks. A
 * record's line is the line it starts on (1-based), so a message can name
 * it. The reader owns the record's storage, valid until the next call. */
#ifndef TAXCTL_CSV_H
#define TAXCTL_CSV_H

#include <stddef.h>

typedef struct {
    const char *p, *end;
    long line;          /* the line p is on */
    char *buf;          /* the current record's fields, NUL-separated */
    size_t len, cap;
    size_t *offsets;    /* field i starts at buf + offsets[i] */
    const char **fields;
    size_t n, ncap;
} csv_reader;

/* A reader of data[0..len) (a leading UTF-8 byte order mark is skipped). */
void csv_open(csv_reader *r, const char *data, size_t len);
void csv_close(csv_reader *r);

/* The next record: 1 with r->fields[0..r->n) and *line set; 0 at the end;
 * -1 on a syntax error (why in msg, *line its record's line), the reader
 * then being past that record; -2 out of memory. A blank line is skipped. */
int csv_next(csv_reader *r, long *line, char *msg, size_t msg_len);

#endif
