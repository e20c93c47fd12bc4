/* clock: wall and monotonic time, and the test offset. See clock.h. */
#include "core/clock.h"

#include "core/buf.h"

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
