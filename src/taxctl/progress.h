/* taxctl/progress: how far a long command is, on stderr. On a terminal a
 * one-line bar redrawn at most 10 times a second (count, percent, rate,
 * ETA); otherwise a plain line every `every_s` seconds or every 10%, so a
 * log file gets a few lines rather than a stream of carriage returns. */
#ifndef TAXCTL_PROGRESS_H
#define TAXCTL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *out;
    bool tty, quiet, drawn;
    const char *what;       /* "import" */
    long total;             /* the count to reach */
    long done;
    long drawn_done;        /* done when last drawn */
    long base;              /* done when timing started: the rate counts this run only */
    int64_t start_ms, last_ms;
    int last_tenth;         /* plain mode: the last 10% step printed */
    long every_s;
} progress;

/* total: what done counts up to; quiet: print nothing (--no-progress). */
void progress_start(progress *p, FILE *out, const char *what, long total, long base, bool quiet);
/* Sets the count and redraws when due. */
void progress_update(progress *p, long done);
/* The final state, and a newline after a bar. */
void progress_end(progress *p);

#endif
