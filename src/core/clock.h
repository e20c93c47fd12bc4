/* clock: every "now" in taxd comes from here. The wall clock can be shifted by
 * an offset so tests can move time (token expiry, URL expiry, retention)
 * without sleeping; the offset exists only when test hooks are enabled, and
 * the monotonic clock, which bounds waits and deadlines, is never shifted. */
#ifndef TAXD_CORE_CLOCK_H
#define TAXD_CORE_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct taxd_clock {
    _Atomic int64_t offset_ms; /* added to the wall clock; 0 in production */
} taxd_clock_t;

/* Wall-clock milliseconds since the epoch, plus the offset. clock may be NULL. */
int64_t clock_now_ms(const taxd_clock_t *clock);
void clock_set_offset_ms(taxd_clock_t *clock, int64_t offset_ms);

/* Milliseconds from an arbitrary start; never goes back, never shifted. */
int64_t clock_monotonic_ms(void);
int64_t clock_monotonic_us(void);

/* Sleeps ms milliseconds (none when ms <= 0), resuming after a signal. */
void clock_sleep_ms(int64_t ms);

#define CLOCK_RFC3339_LEN 25 /* "2026-11-22T01:44:11.123Z" plus the NUL */

/* Formats ms since the epoch as RFC 3339 UTC with milliseconds and 'Z'. */
void clock_format_rfc3339(int64_t ms, char out[CLOCK_RFC3339_LEN]);

/* The instants taxd accepts: 0001-01-01T00:00:00.000Z to
 * 9999-12-31T23:59:59.999Z, the span a four-digit year written in UTC can
 * hold. An offset can carry a datetime written inside it out of it
 * ("9999-12-31T23:59:59-23:59" is in year 10000), and the formatter above
 * could not write such an instant back. */
#define CLOCK_MIN_MS INT64_C(-62135596800000)
#define CLOCK_MAX_MS INT64_C(253402300799999)

/* Parses RFC 3339 with a zone ("2024-01-02T03:04:05Z", "...05.123+02:00")
 * into ms since the epoch (UTC). Fractional digits past milliseconds are
 * dropped (taxd keeps datetimes to the millisecond). Returns 0, or -1 when the
 * text is not such a datetime (range-checked, leap years included) or its
 * instant falls outside CLOCK_MIN_MS..CLOCK_MAX_MS. */
int clock_parse_rfc3339(const char *text, int64_t *ms);

#endif
