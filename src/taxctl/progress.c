/* taxctl/progress: see progress.h. */
#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR_WIDTH 30
#define REDRAW_MS 100
#define PLAIN_EVERY_S 5

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void progress_start(progress *p, FILE *out, const char *what, long total, long base, bool quiet)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = isatty(fileno(out));
    p->quiet = quiet;
    p->what = what;
    p->total = total;
    p->done = p->base = p->drawn_done = base;
    p->start_ms = p->last_ms = now_ms();
    p->last_tenth = total > 0 ? (int)(base * 10 / total) : 0;
    const char *every = getenv("TAXCTL_PROGRESS_EVERY_S"); /* tests: a plain line sooner */
    p->every_s = every && atol(every) > 0 ? atol(every) : PLAIN_EVERY_S;
}

/* "1:02:03" or "2:03" */
static void duration(char *buf, size_t len, long s)
{
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

/* count, percent, rate and ETA into buf */
static void figures(const progress *p, int64_t now, char *buf, size_t len)
{
    int64_t elapsed_ms = now - p->start_ms;
    long this_run = p->done - p->base;
    long rate = elapsed_ms >= 50 ? (long)(this_run * (int64_t)1000 / elapsed_ms) : 0;
    int pct = p->total > 0 ? (int)(p->done * 100 / p->total) : 100;
    char eta[32] = "?";
    if (p->done >= p->total)
        snprintf(eta, sizeof eta, "0:00");
    else if (rate > 0)
        duration(eta, sizeof eta, (p->total - p->done + rate - 1) / rate);
    snprintf(buf, len, "%ld/%ld %3d%% %ld tx/s ETA %s", p->done, p->total, pct, rate, eta);
}

static void draw(progress *p, int64_t now)
{
    char text[160];
    figures(p, now, text, sizeof text);
    if (p->tty) {
        int filled = p->total > 0 ? (int)(p->done * BAR_WIDTH / p->total) : BAR_WIDTH;
        char bar[BAR_WIDTH + 1];
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < filled ? '#' : '-';
        bar[BAR_WIDTH] = '\0';
        fprintf(p->out, "\r\033[K%s [%s] %s", p->what, bar, text);
    } else {
        fprintf(p->out, "taxctl %s: %s\n", p->what, text);
    }
    fflush(p->out);
    p->drawn = true;
    p->drawn_done = p->done;
    p->last_ms = now;
}

void progress_update(progress *p, long done)
{
    p->done = done;
    if (p->quiet)
        return;
    int64_t now = now_ms();
    if (p->tty) {
        if (now - p->last_ms >= REDRAW_MS)
            draw(p, now);
        return;
    }
    int tenth = p->total > 0 ? (int)(done * 10 / p->total) : 10;
    if (tenth > p->last_tenth || now - p->last_ms >= p->every_s * 1000) {
        p->last_tenth = tenth;
        draw(p, now);
    }
}

void progress_end(progress *p)
{
    if (p->quiet)
        return;
    if (p->tty || (p->done != p->base && p->done != p->drawn_done))
        draw(p, now_ms());
    if (p->tty)
        fputc('\n', p->out);
    fflush(p->out);
}
