/* clock: wall and monotonic time, and the test offset. See clock.h. */
#include "core/clock.h"

#include "core/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <time.h>

int64_t clock_now_ms(const taxd_clock_t *clock)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (clock != NULL)
        ms += atomic_load_explicit(&clock->offset_ms, memory_order_relaxed);
    return ms;
}

void clock_set_offset_ms(taxd_clock_t *clock, int64_t offset_ms)
{
    atomic_store_explicit(&clock->offset_ms, offset_ms, memory_order_relaxed);
}

void clock_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int64_t clock_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_monotonic_ms(void)
{
    return clock_monotonic_us() / 1000;
}

void clock_format_rfc3339(int64_t ms, char out[CLOCK_RFC3339_LEN])
{
    time_t secs = (time_t)(ms / 1000);
    int millis = (int)(ms % 1000);
    if (millis < 0) {
        millis += 1000;
        secs -= 1;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    /* Runs for every log line: digits are written directly, not by printf.
     * Years outside 0..9999 cannot be written in this format; they are
     * clamped (no timestamp taxd handles comes near them). */
    int year = tm.tm_year + 1900;
    year = year < 0 ? 0 : year > 9999 ? 9999 : year;
    buf_t b = buf_over(out, CLOCK_RFC3339_LEN);
    buf_put_dec(&b, (uint64_t)year, 4);
    buf_putc(&b, '-');
    buf_put_dec(&b, (uint64_t)tm.tm_mon + 1, 2);
    buf_putc(&b, '-');
    buf_put_dec(&b, (uint64_t)tm.tm_mday, 2);
    buf_putc(&b, 'T');
    buf_put_dec(&b, (uint64_t)tm.tm_hour, 2);
    buf_putc(&b, ':');
    buf_put_dec(&b, (uint64_t)tm.tm_min, 2);
    buf_putc(&b, ':');
    buf_put_dec(&b, (uint64_t)tm.tm_sec, 2);
    buf_putc(&b, '.');
    buf_put_dec(&b, (uint64_t)millis, 3);
    buf_putc(&b, 'Z');
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int days_in_month(int year, int month)
{
    static const int DAYS[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : DAYS[month - 1];
}

/* The zone part: "Z" or "+hh:mm" / "-hh:mm"; *offset_ms is what to subtract. */
static bool parse_zone(const char *p, int64_t *offset_ms)
{
    if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
        *offset_ms = 0;
        return true;
    }
    int hh, mm;
    if ((p[0] != '+' && p[0] != '-') || !digits(p + 1, 2, &hh) || p[3] != ':' ||
        !digits(p + 4, 2, &mm) || p[6] != '\0' || hh > 23 || mm > 59)
        return false;
    *offset_ms = (int64_t)(hh * 60 + mm) * 60000 * (p[0] == '-' ? -1 : 1);
    return true;
}

int clock_parse_rfc3339(const char *text, int64_t *ms)
{
    int year, mon, day, hour, min, sec;
    const char *p = text;
    if (strlen(p) < 20 || !digits(p, 4, &year) || p[4] != '-' || !digits(p + 5, 2, &mon) ||
        p[7] != '-' || !digits(p + 8, 2, &day) || (p[10] != 'T' && p[10] != 't') ||
        !digits(p + 11, 2, &hour) || p[13] != ':' || !digits(p + 14, 2, &min) || p[16] != ':' ||
        !digits(p + 17, 2, &sec))
        return -1;
    if (mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) || hour > 23 ||
        min > 59 || sec > 59)
        return -1;
    p += 19;
    int millis = 0;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 3)
                millis = millis * 10 + (*p - '0');
        if (n == 0 || n > 9)
            return -1;
        for (; n < 3; n++)
            millis *= 10;
    }
    int64_t offset;
    if (!parse_zone(p, &offset))
        return -1;
    struct tm tm = {.tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day,
                    .tm_hour = hour, .tm_min = min, .tm_sec = sec};
    int64_t instant = (int64_t)timegm(&tm) * 1000 + millis - offset;
    if (instant < CLOCK_MIN_MS || instant > CLOCK_MAX_MS)
        return -1;
    *ms = instant;
    return 0;
}
