/* Fuzzes the client's retry policy (src/client/retry.c). Input: 8 bytes of
 * now_ms (big endian, signed), 4 bytes for tc_decide (status: bytes 0-1
 * mod 1000; byte 2: transport code; byte 3: bits nothing_sent, safe,
 * create, refreshed), then the Retry-After value (the rest, cut at a NUL).
 *
 * Properties (abort on violation):
 *  - tc_retry_after_ms is never below -1; a delta-seconds value (digits
 *    between optional spaces and tabs) gives exactly seconds * 1000, or
 *    (LONG_MAX / 1000) * 1000 when more seconds than that; a value that
 *    is not delta-seconds gives -1 or, when it is read as a date, a wait
 *    of 0 or more: never negative, and never more than the date's distance
 *    from now (a date read at t gives at most t - now + 1 ms);
 *  - tc_decide returns one of the four decisions; never TC_RETRY (nor a
 *    token refresh or a read back) for 400, 403, 404 and 409; never
 *    TC_REFRESH_TOKEN when the request already refreshed; TC_REFRESH_TOKEN
 *    only for a 401; TC_READBACK only for a create. */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

#define FAIL(why)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz property: %s\n", why);                                           \
        abort();                                                                               \
    } while (0)

/* The delta-seconds reading, saturated at LONG_MAX / 1000 seconds; -2 when
 * the value is not delta-seconds. */
static long ref_delta_ms(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (!isdigit((unsigned char)*v))
        return -2;
    const long cap = LONG_MAX / 1000;
    long secs = 0;
    for (; isdigit((unsigned char)*v); v++) {
        int d = *v - '0';
        secs = secs > (cap - d) / 10 ? cap : secs * 10 + d;
    }
    while (*v == ' ' || *v == '\t')
        v++;
    return *v == '\0' ? secs * 1000 : -2;
}

static void check_retry_after(const char *value, int64_t now_ms)
{
    long got = tc_retry_after_ms(value, now_ms);
    if (got < -1)
        FAIL("tc_retry_after_ms is below -1");
    long want = ref_delta_ms(value);
    if (want >= 0 && got != want)
        FAIL("a delta-seconds value does not give exactly its seconds * 1000 (saturated)");
    if (want == -2 && got >= 0 && now_ms < INT64_MAX - 1000) {
        /* a date: the same value read a second later waits 1000 ms less (or 0) */
        long later = tc_retry_after_ms(value, now_ms + 1000);
        if (later < 0)
            FAIL("a date is readable at one instant and not a second later");
        if (got > 1000 && later != got - 1000 && got != LONG_MAX)
            FAIL("a date's wait does not shrink with the clock");
    }
    if (tc_retry_after_ms(NULL, now_ms) != -1)
        FAIL("no value does not give -1");
}

static void check_decide(int status, taxd_code transport, uint8_t bits)
{
    bool nothing_sent = bits & 1, safe = bits & 2, create = bits & 4, refreshed = bits & 8;
    tc_decision d = tc_decide(status, transport, nothing_sent, safe, create, refreshed);
    if (d != TC_STOP && d != TC_RETRY && d != TC_REFRESH_TOKEN && d != TC_READBACK)
        FAIL("tc_decide returns no decision");
    bool final = status == 400 || status == 403 || status == 404 || status == 409;
    if (final && d != TC_STOP)
        FAIL("tc_decide does not stop at 400, 403, 404 or 409");
    if (refreshed && d == TC_REFRESH_TOKEN)
        FAIL("tc_decide refreshes a token twice");
    if (d == TC_REFRESH_TOKEN && status != 401)
        FAIL("tc_decide refreshes a token for another status than 401");
    if (d == TC_READBACK && !create)
        FAIL("tc_decide reads back what was not a create");
    if (status >= 200 && status < 400 && d != TC_STOP)
        FAIL("tc_decide does not stop at a success");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 12)
        return 0;
    uint64_t raw = 0;
    for (int i = 0; i < 8; i++)
        raw = raw << 8 | data[i];
    int64_t now_ms = (int64_t)raw;
    int status = ((data[8] << 8) | data[9]) % 1000;
    taxd_code transport = (taxd_code)(data[10] % 16);
    check_decide(status, transport, data[11]);
    size_t len = size - 12;
    char *value = malloc(len + 1);
    memcpy(value, data + 12, len);
    value[len] = '\0';
    check_retry_after(value, now_ms);
    free(value);
    return 0;
}
