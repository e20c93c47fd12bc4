/* reports/idlist: see idlist.h.
 *
 * The scanner accepts any JSON array of strings (whitespace between tokens
 * included), though the stored text is always jansson's compact form: the
 * rows of reports triggered before the ids moved to report_ids were written
 * the same way, and a scanner that is stricter than JSON would turn a
 * harmless difference into a 500. Inside a string it only needs to find the
 * closing quote: a backslash escapes the next byte, whatever it is. */
#include "reports/idlist.h"

#include <string.h>

size_t report_skipped_size(int64_t requested)
{
    return requested > 0 ? (size_t)((requested + 7) / 8) : 0;
}

void report_skipped_set(uint8_t *bits, size_t len, int64_t pos)
{
    if (pos < 0 || (uint64_t)pos / 8 >= len)
        return;
    bits[pos / 8] |= (uint8_t)(1u << (pos % 8));
}

bool report_skipped_has(const uint8_t *bits, size_t len, int64_t pos)
{
    if (bits == NULL || pos < 0 || (uint64_t)pos / 8 >= len)
        return false;
    return (bits[pos / 8] >> (pos % 8)) & 1u;
}

/* ---- the array scanner ------------------------------------------------ */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* End (one past) of the JSON string starting at text[pos] == '"', or 0. */
static size_t string_end(const char *text, size_t len, size_t pos)
{
    for (size_t i = pos + 1; i < len; i++) {
        if (text[i] == '\\')
            i++;
        else if (text[i] == '"')
            return i + 1;
    }
    return 0;
}


void report_idlist_begin(report_idlist_t *it, const char *text, size_t len)
{
    *it = (report_idlist_t){.text = text, .len = len};
}

static void skip_space(report_idlist_t *it)
{
    while (it->pos < it->len && is_space(it->text[it->pos]))
        it->pos++;
}

/* At a '"': moves past the closing quote; false when there is none. */
static bool skip_string(report_idlist_t *it)
{
    size_t end = string_end(it->text, it->len, it->pos);
    if (end == 0)
        return false;
    it->pos = end;
    return true;
}

int report_idlist_next(report_idlist_t *it, const char **elem, size_t *elem_len,
                       int64_t *index)
{
    skip_space(it);
    if (!it->started) {
        if (it->pos >= it->len || it->text[it->pos] != '[')
            return -1;
        it->started = true;
        it->pos++;
        skip_space(it);
        if (it->pos < it->len && it->text[it->pos] == ']')
            return 0; /* empty: every later call answers 0 too */
    } else {
        if (it->pos >= it->len)
            return -1;
        if (it->text[it->pos] == ']')
            return 0;
        if (it->text[it->pos] != ',')
            return -1;
        it->pos++;
        skip_space(it);
    }
    if (it->pos >= it->len || it->text[it->pos] != '"')
        return -1;
    size_t start = it->pos;
    if (!skip_string(it))
        return -1;
    *elem = it->text + start;
    *elem_len = it->pos - start;
    *index = it->index++;
    return 1;
}

/* ---- the skipped elements --------------------------------------------- */

void report_skipped_reader_begin(report_skipped_reader_t *r, const char *text, size_t len,
                                 const uint8_t *bits, size_t bits_len)
{
    *r = (report_skipped_reader_t){.bits = bits, .bits_len = bits_len};
    report_idlist_begin(&r->list, text, len);
}

/* Moves to the next marked element; 1, 0 at the end, -1 malformed. */
static int next_marked(report_skipped_reader_t *r)
{
    for (;;) {
        int64_t index = 0;
        int rc = report_idlist_next(&r->list, &r->elem, &r->elem_len, &index);
        if (rc <= 0)
            return rc;
        if (report_skipped_has(r->bits, r->bits_len, index)) {
            r->elem_done = 0;
            r->comma_pending = r->need_comma;
            r->need_comma = true;
            return 1;
        }
    }
}

long report_skipped_read(report_skipped_reader_t *r, char *out, size_t max)
{
    size_t n = 0;
    while (n < max && !r->done) {
        if (r->elem == NULL || (r->elem_done == r->elem_len && !r->comma_pending)) {
            int rc = next_marked(r);
            if (rc < 0)
                return -1;
            if (rc == 0) {
                r->done = true;
                break;
            }
        }
        if (r->comma_pending) {
            out[n++] = ',';
            r->comma_pending = false;
            continue;
        }
        size_t take = r->elem_len - r->elem_done;
        if (take > max - n)
            take = max - n;
        memcpy(out + n, r->elem + r->elem_done, take);
        r->elem_done += take;
        n += take;
    }
    return (long)n;
}

int report_skipped_measure(const char *text, size_t len, const uint8_t *bits, size_t bits_len,
                           uint64_t *bytes, int64_t *count)
{
    *bytes = 0;
    *count = 0;
    report_idlist_t it;
    report_idlist_begin(&it, text, len);
    const char *elem;
    size_t elem_len;
    int64_t index;
    int rc;
    while ((rc = report_idlist_next(&it, &elem, &elem_len, &index)) == 1) {
        if (!report_skipped_has(bits, bits_len, index))
            continue;
        *bytes += elem_len + (*count > 0 ? 1 : 0);
        (*count)++;
    }
    return rc == 0 ? 0 : -1;
}

/* ---- the trigger's body ----------------------------------------------- */

/* End (one past) of the JSON value starting at text[pos], or 0. */
static size_t value_end(const char *text, size_t len, size_t pos)
{
    if (pos >= len)
        return 0;
    if (text[pos] == '"')
        return string_end(text, len, pos);
    if (text[pos] != '{' && text[pos] != '[') {
        while (pos < len && !is_space(text[pos]) && strchr(",}]", text[pos]) == NULL)
            pos++;
        return pos;
    }
    size_t depth = 0;
    for (size_t i = pos; i < len; i++) {
        char c = text[i];
        if (c == '"') {
            size_t end = string_end(text, len, i);
            if (end == 0)
                return 0;
            i = end - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return 0;
}

static size_t skip_ws(const char *text, size_t len, size_t pos)
{
    while (pos < len && is_space(text[pos]))
        pos++;
    return pos;
}

bool report_body_ids_span(const char *body, size_t len, size_t *start, size_t *span_len)
{
    static const char KEY[] = "\"account_ids\"";
    size_t pos = skip_ws(body, len, 0);
    if (pos >= len || body[pos] != '{')
        return false;
    pos = skip_ws(body, len, pos + 1);
    while (pos < len && body[pos] == '"') {
        size_t key_end = string_end(body, len, pos);
        if (key_end == 0 || memchr(body + pos, '\\', key_end - pos) != NULL)
            return false;
        bool wanted = key_end - pos == sizeof KEY - 1 && memcmp(body + pos, KEY, sizeof KEY - 1) == 0;
        pos = skip_ws(body, len, key_end);
        if (pos >= len || body[pos] != ':')
            return false;
        pos = skip_ws(body, len, pos + 1);
        size_t end = value_end(body, len, pos);
        if (end == 0)
            return false;
        if (wanted) {
            *start = pos;
            *span_len = end - pos;
            return true;
        }
        pos = skip_ws(body, len, end);
        if (pos < len && body[pos] == ',')
            pos = skip_ws(body, len, pos + 1);
    }
    return false;
}

size_t report_json_compact(char *text, size_t len)
{
    size_t out = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') {
            size_t end = string_end(text, len, i);
            if (end == 0)
                end = len; /* unterminated: kept as it is */
            memmove(text + out, text + i, end - i);
            out += end - i;
            i = end - 1;
        } else if (!is_space(text[i])) {
            text[out++] = text[i];
        }
    }
    return out;
}
