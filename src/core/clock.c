/* clock: wall and monotonic time, and the test offset. See clock.h. */
#include "core/clock.h"

#include <stdio.h>
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
    /* years past 9999 cannot occur for ms in int64 range we accept; the
     * wider scratch buffer keeps the compiler's truncation analysis quiet */
    char buf[64];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    memcpy(out, buf, CLOCK_RFC3339_LEN - 1);
    out[CLOCK_RFC3339_LEN - 1] = '\0';
}
