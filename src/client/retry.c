/* retry: the retry policy as pure functions (no I/O, no clock but the one
 * passed in), so that every rule is a unit test (test_client_policy.c).
 * send.c applies them with the limits (attempts, time budget).
 *
 * The table (docs/decisions.md, "Tokens, retries and errors"):
 *   2xx, 3xx          stop: the answer
 *   401               mint a new token and send again, once; a second 401
 *                     (or one from the token request) is final
 *   429               wait Retry-After, else back off; every method (the
 *                     request was not processed)
 *   400, 403, 404, 409 and every other 4xx
 *                     final: the same request gets the same answer
 *   501, 505          final: the service does not do this at all
 *   other 5xx, reset, timeout
 *                     safe request (GET, TAXD_SAFE): back off and resend;
 *                     create (TAXD_CREATE): the outcome is unknown (the
 *                     service may have written it before the answer was
 *                     lost, and a proxy's 502/504 says nothing about the
 *                     upstream), so read it back; any other request: final
 *   nothing sent (connection refused, name not resolved)
 *                     resend, whatever the method: nothing reached the
 *                     service */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <taxd/client.h>

#include "internal.h"

/* ---- Retry-After */

static const char *const MONTHS[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};

/* Reads n digits (exactly) at *p; -1 when they are not there. */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return v;
}

/* 1 or 2 digits (asctime pads the day with a space). */
static int day_number(const char **p)
{
    while (**p == ' ')
        (*p)++;
    int v = digits(p, 1);
    if (v < 0)
        return -1;
    if (isdigit((unsigned char)**p))
        v = v * 10 + (*(*p)++ - '0');
    return v;
}

static int month_number(const char **p)
{
    for (int m = 0; m < 12; m++)
        if (strncasecmp(*p, MONTHS[m], 3) == 0) {
            *p += 3;
            return m + 1;
        }
    return -1;
}

/* HH:MM:SS as seconds of the day, -1 when malformed. */
static long clock_time(const char **p)
{
    int h = digits(p, 2);
    if (h < 0 || *(*p)++ != ':')
        return -1;
    int m = digits(p, 2);
    if (m < 0 || *(*p)++ != ':')
        return -1;
    int s = digits(p, 2);
    if (s < 0 || h > 23 || m > 59 || s > 60)
        return -1;
    return h * 3600L + m * 60L + s;
}

/* An HTTP date (RFC 9110 § 5.6.7: IMF-fixdate, RFC 850, asctime) as ms
 * since the epoch; -1 when it is none of them. */
static int64_t http_date_ms(const char *s)
{
    while (isalpha((unsigned char)*s)) /* the day name, any length */
        s++;
    if (*s == ',')
        s++;
    while (*s == ' ')
        s++;
    int day, month, year;
    long secs;
    if (isdigit((unsigned char)*s)) {
        /* "06 Nov 1994 08:49:37 GMT" or "06-Nov-94 08:49:37 GMT" */
        day = day_number(&s);
        char sep = *s++;
        if (day < 0 || (sep != ' ' && sep != '-') || (month = month_number(&s)) < 0 || *s++ != sep)
            return -1;
        const char *y = s;
        year = digits(&s, 4);
        if (year < 0) {
            s = y;
            year = digits(&s, 2);
            if (year < 0)
                return -1;
            year += year < 70 ? 2000 : 1900;
        }
        if (*s++ != ' ' || (secs = clock_time(&s)) < 0)
            return -1;
        while (*s == ' ')
            s++;
        if (strncmp(s, "GMT", 3) != 0)
            return -1;
        s += 3;
    } else {
        /* asctime: "Nov  6 08:49:37 1994" */
        if ((month = month_number(&s)) < 0 || *s != ' ' || (day = day_number(&s)) < 0 ||
            *s++ != ' ' || (secs = clock_time(&s)) < 0 || *s++ != ' ' ||
            (year = digits(&s, 4)) < 0)
            return -1;
    }
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s != '\0' || day < 1 || day > 31)
        return -1;
    struct tm midnight = {.tm_year = year - 1900, .tm_mon = month - 1, .tm_mday = day};
    time_t day_start = timegm(&midnight); /* UTC, no time zone or locale involved */
    if (day_start == (time_t)-1)
        return -1;
    return ((int64_t)day_start + secs) * 1000;
}

long tc_retry_after_ms(const char *value, int64_t now_ms)
{
    if (value == NULL)
        return -1;
    while (*value == ' ' || *value == '\t')
        value++;
    if (isdigit((unsigned char)*value)) {
        const char *p = value;
        long secs = 0;
        /* saturate at the most seconds whose milliseconds fit: a longer
         * value waits that long, never less (no wrap, no smaller wait for
         * a longer value) */
        const long cap = LONG_MAX / 1000;
        for (; isdigit((unsigned char)*p); p++) {
            int d = *p - '0';
            secs = secs > (cap - d) / 10 ? cap : secs * 10 + d;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            return secs * 1000;
        /* not delta-seconds: maybe a date that starts with digits? none does */
        return -1;
    }
    int64_t at = http_date_ms(value);
    if (at < 0)
        return -1;
    if (at <= now_ms)
        return 0;
    /* at > now_ms: the difference fits in 64 unsigned bits even when
     * at - now_ms would overflow int64_t (a clock far from the date) */
    uint64_t wait = (uint64_t)at - (uint64_t)now_ms;
    return wait > (uint64_t)LONG_MAX ? LONG_MAX : (long)wait;
}

/* ---- backoff */

long tc_backoff_ms(long base_ms, long max_ms, int retry)
{
    if (base_ms <= 0 || max_ms <= 0)
        return 0;
    long ceiling = base_ms;
    for (int i = 1; i < retry && ceiling < max_ms; i++)
        ceiling = ceiling > LONG_MAX / 2 ? LONG_MAX : ceiling * 2;
    if (ceiling > max_ms)
        ceiling = max_ms;
    return tc_random_upto(ceiling);
}

/* ---- the decision */

tc_decision tc_decide(int status, taxd_code transport_code, bool nothing_sent, bool safe,
                      bool create, bool refreshed)
{
    if (status == 0) {
        if (transport_code != TAXD_E_TRANSPORT && transport_code != TAXD_E_TIMEOUT)
            return TC_STOP;
        if (nothing_sent)
            return TC_RETRY;
        if (create)
            return TC_READBACK;
        return safe ? TC_RETRY : TC_STOP;
    }
    if (status < 400)
        return TC_STOP;
    if (status == 401)
        return refreshed ? TC_STOP : TC_REFRESH_TOKEN;
    if (status == 429)
        return TC_RETRY;
    if (status < 500 || status == 501 || status == 505)
        return TC_STOP;
    if (create)
        return TC_READBACK;
    return safe ? TC_RETRY : TC_STOP;
}
