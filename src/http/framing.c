/* framing: see framing.h. */
#include "http/framing.h"

#include <strings.h>

static bool name_is(const char *name, size_t len, const char *want)
{
    size_t n = 0;
    while (want[n] != '\0')
        n++;
    return len == n && strncasecmp(name, want, n) == 0;
}

static void refuse(framing_t *f, framing_verdict_t verdict, const char *reason)
{
    if (f->verdict != FRAMING_OK)
        return; /* the first refusal names the problem */
    f->verdict = verdict;
    f->reason = reason;
}

/* A plain decimal of at most 18 digits (below 2^63): no sign, no spaces, no
 * list. A Content-Length of "5, 5" (§ 6.3 allows a server to accept it) is
 * refused too: no client of taxd sends it. */
static bool parse_length(const char *v, size_t len, uint64_t *out)
{
    if (len == 0 || len > 18)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    *out = n;
    return true;
}

static void add_length(framing_t *f, const char *value, size_t len)
{
    uint64_t n;
    if (!parse_length(value, len, &n)) {
        refuse(f, FRAMING_BAD_REQUEST, "Content-Length is not a valid length");
        return;
    }
    if (f->has_length && f->content_length != n)
        refuse(f, FRAMING_BAD_REQUEST, "Content-Length is given twice with different values");
    f->has_length = true;
    f->content_length = n;
}

static void add_coding(framing_t *f, const char *value, size_t len)
{
    if (f->chunked || !name_is(value, len, "chunked")) {
        refuse(f, FRAMING_NOT_IMPLEMENTED, "Transfer-Encoding other than chunked is not supported");
        return;
    }
    f->chunked = true;
}

void framing_add(framing_t *f, const char *name, size_t name_len, const char *value,
                 size_t value_len)
{
    if (name_is(name, name_len, "content-length"))
        add_length(f, value, value_len);
    else if (name_is(name, name_len, "transfer-encoding"))
        add_coding(f, value, value_len);
    else
        return;
    if (f->has_length && f->chunked)
        refuse(f, FRAMING_BAD_REQUEST, "Content-Length and Transfer-Encoding must not both be sent");
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* One field line (without its line end) into the verdict. */
static void judge_line(framing_t *f, const char *line, size_t len)
{
    if (len > 0 && is_space(line[0])) {
        refuse(f, FRAMING_BAD_REQUEST, "Obsolete header line folding is not accepted");
        return;
    }
    size_t colon = 0;
    while (colon < len && line[colon] != ':')
        colon++;
    if (colon == len || colon == 0 || is_space(line[colon - 1])) {
        refuse(f, FRAMING_BAD_REQUEST, "A header line is malformed");
        return;
    }
    size_t start = colon + 1, end = len;
    while (start < end && is_space(line[start]))
        start++;
    while (end > start && is_space(line[end - 1]))
        end--;
    framing_add(f, line, colon, line + start, end - start);
}

framing_t framing_judge_block(const char *block, size_t len)
{
    framing_t f = {0};
    size_t pos = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && block[end] != '\n')
            end++;
        size_t line_end = end > pos && block[end - 1] == '\r' ? end - 1 : end;
        if (line_end > pos)
            judge_line(&f, block + pos, line_end - pos);
        pos = end + 1;
    }
    return f;
}

int framing_status(framing_verdict_t verdict)
{
    switch (verdict) {
    case FRAMING_BAD_REQUEST:
        return 400;
    case FRAMING_NOT_IMPLEMENTED:
        return 501;
    default:
        return 200;
    }
}
