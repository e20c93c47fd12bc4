/* taxctl/txconv: see txconv.h. The JSON of a CSV line is written by hand
 * (strings escaped here), because the line is one flat record and the
 * import's hot loop should not build and free a tree per line. */
#include "txconv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define ID_MAX 256
#define SUBTYPE_MAX 64
#define INT_DIGITS_MAX 20
#define FRACTION_DIGITS_MAX 18
#define CODE_MAX 32

/* ---- the buffer */

void txconv_buf_reset(txconv_buf *b)
{
    b->len = 0;
    b->oom = false;
    if (b->s)
        b->s[0] = '\0';
}

void txconv_buf_free(txconv_buf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

static void put_n(txconv_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void put(txconv_buf *b, const char *s)
{
    put_n(b, s, strlen(s));
}

/* A JSON string literal of s (already checked to be UTF-8). */
static void put_string(txconv_buf *b, const char *s)
{
    put(b, "\"");
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put_n(b, run, (size_t)(p - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        put(b, esc);
        run = p + 1;
    }
    put(b, run);
    put(b, "\"");
}

/* One problem, "; "-separated from the previous ones. */
static void problem(txconv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(txconv_buf *b, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (b->len)
        put(b, "; ");
    put(b, text);
}

/* ---- the checks */

/* Code points of valid UTF-8, or -1 when s is not UTF-8. */
static long utf8_length(const char *s)
{
    long n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
        int extra = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2
                  : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (extra < 0 || (extra == 1 && *p < 0xC2) || (extra == 3 && *p > 0xF4))
            return -1;
        unsigned cp = extra ? *p & (0x3F >> extra) : *p;
        p++;
        for (int k = 0; k < extra; k++, p++) {
            if ((*p & 0xC0) != 0x80)
                return -1;
            cp = (cp << 6) | (*p & 0x3F);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return -1;
    }
    return n;
}

bool txconv_decimal_ok(const char *s, bool above_zero, const char **why)
{
    const char *p = s;
    while (*p == '0' && p[1] >= '0' && p[1] <= '9')
        p++; /* leading zeros count for nothing */
    size_t int_digits = 0, frac_digits = 0;
    bool nonzero = false;
    for (; *p >= '0' && *p <= '9'; p++, int_digits++)
        nonzero |= *p != '0';
    if (int_digits == 0) {
        *why = *s == '-' ? "is negative" : "is not a decimal number";
        return false;
    }
    if (*p == '.') {
        const char *frac = ++p;
        size_t last = 0; /* significant fractional digits: up to the last non-zero one */
        for (; *p >= '0' && *p <= '9'; p++) {
            if (*p != '0') {
                nonzero = true;
                last = (size_t)(p - frac) + 1;
            }
        }
        if (p == frac) {
            *why = "is not a decimal number";
            return false;
        }
        frac_digits = last;
    }
    if (*p != '\0') {
        *why = "is not a decimal number (digits and one '.', no exponent, sign or spaces)";
        return false;
    }
    if (int_digits > INT_DIGITS_MAX) {
        *why = "has more than 20 integer digits";
        return false;
    }
    if (frac_digits > FRACTION_DIGITS_MAX) {
        *why = "has more than 18 fractional digits";
        return false;
    }
    if (above_zero && !nonzero) {
        *why = "must be greater than zero";
        return false;
    }
    return true;
}

static bool digits(const char *s, int n, int *value)
{
    *value = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *value = *value * 10 + (s[i] - '0');
    }
    return true;
}

static int days_in(int year, int month)
{
    static const int DAYS[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : DAYS[month - 1];
}

/* YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+hh:mm|-hh:mm), a real date and time. */
bool txconv_datetime_ok(const char *s)
{
    int y, mo, d, h, mi, sec, oh, om;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return false;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || h > 23 || mi > 59 || sec > 59)
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        const char *f = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == f || p - f > 9)
            return false;
    }
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        return true;
    return (*p == '+' || *p == '-') && digits(p + 1, 2, &oh) && p[3] == ':' &&
           digits(p + 4, 2, &om) && p[6] == '\0' && oh <= 23 && om <= 59;
}

bool txconv_asset_code_ok(const char *s, size_t len)
{
    if (len < 1 || len > CODE_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", s[i]) || !s[i])
            return false;
    return true;
}

static const char *const TYPES[] = {"trade", "deposit", "withdraw", "income", "expense"};
static const char *const ASSET_TYPES[] = {"crypto", "fiat", "nft", "security"};
static const char *const FIAT[] = {
    "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "CNY", "HKD", "SGD", "SEK",
    "NOK", "DKK", "PLN", "CZK", "HUF", "MXN", "BRL", "INR", "KRW", "ZAR", "TRY", "ILS",
    "AED", "SAR", "THB", "IDR", "MYR", "PHP", "TWD", "ARS", "CLP", "COP",
};

static bool one_of(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}
#define ONE_OF(s, set) one_of((s), (set), sizeof(set) / sizeof((set)[0]))

/* What a type needs: 'r' required, '-' must be empty, for sent and received. */
static void needs(const char *type, char *sent, char *received)
{
    bool trade = strcmp(type, "trade") == 0;
    bool in = strcmp(type, "deposit") == 0 || strcmp(type, "income") == 0;
    *sent = trade || !in ? 'r' : '-';
    *received = trade || in ? 'r' : '-';
}

/* ---- the header */

static const char *const COLUMNS[TXC_N_COLUMNS] = {
    "id", "account_id", "datetime", "type", "subtype",
    "sent_asset", "sent_amount", "sent_usd_rate",
    "received_asset", "received_amount", "received_usd_rate",
    "fee_asset", "fee_amount", "fee_usd_rate",
};

bool txconv_header_read(txconv_header *h, const char *const *fields, size_t n, char *msg,
                        size_t msg_len)
{
    for (int c = 0; c < TXC_N_COLUMNS; c++)
        h->at[c] = -1;
    h->n_fields = n;
    for (size_t i = 0; i < n; i++) {
        int c = 0;
        while (c < TXC_N_COLUMNS && strcmp(fields[i], COLUMNS[c]) != 0)
            c++;
        if (c == TXC_N_COLUMNS) {
            snprintf(msg, msg_len, "unknown column '%.64s' (the columns are id, account_id, datetime, "
                     "type, subtype, and sent_/received_/fee_ asset, amount, usd_rate)", fields[i]);
            return false;
        }
        if (h->at[c] >= 0) {
            snprintf(msg, msg_len, "column '%s' appears twice", COLUMNS[c]);
            return false;
        }
        h->at[c] = (int)i;
    }
    for (int c = TXC_ID; c <= TXC_TYPE; c++)
        if (h->at[c] < 0) {
            snprintf(msg, msg_len, "the header has no column '%s'", COLUMNS[c]);
            return false;
        }
    return true;
}

/* ---- a CSV record */

static const char *col(const txconv_header *h, const char *const *fields, int c)
{
    return h->at[c] >= 0 ? fields[h->at[c]] : "";
}

/* The line item of group g (0 sent, 1 received, 2 fee), checked; written
 * to json when present. Returns whether it is present. */
static bool line_item(const txconv_header *h, const char *const *f, int g, txconv_buf *json,
                      txconv_buf *problems)
{
    static const char *const NAMES[] = {"sent", "received", "fee"};
    const char *asset = col(h, f, TXC_SENT_ASSET + 3 * g);
    const char *amount = col(h, f, TXC_SENT_AMOUNT + 3 * g);
    const char *rate = col(h, f, TXC_SENT_RATE + 3 * g);
    const char *name = NAMES[g], *why;
    if (!*asset && !*amount && !*rate)
        return false;
    const char *colon = strchr(asset, ':');
    size_t code_len = colon ? (size_t)(colon - asset) : strlen(asset);
    const char *type = NULL;
    if (!*asset)
        problem(problems, "%s_asset is missing", name);
    else if (!txconv_asset_code_ok(asset, code_len))
        problem(problems, "%s_asset '%.40s' is not an asset code (1 to 32 of A-Z a-z 0-9 . _ -, "
                "optionally :crypto, :fiat, :nft or :security)", name, asset);
    else if (colon && !ONE_OF(colon + 1, ASSET_TYPES))
        problem(problems, "%s_asset's type '%.20s' is not crypto, fiat, nft or security", name, colon + 1);
    else
        type = colon ? colon + 1 : NULL;
    if (!*amount)
        problem(problems, "%s_amount is missing", name);
    else if (!txconv_decimal_ok(amount, true, &why))
        problem(problems, "%s_amount '%.40s' %s", name, amount, why);
    if (*rate && !txconv_decimal_ok(rate, false, &why))
        problem(problems, "%s_usd_rate '%.40s' %s", name, rate, why);
    if (problems->len)
        return true;
    char code[CODE_MAX + 1];
    memcpy(code, asset, code_len);
    code[code_len] = '\0';
    if (!type)
        type = ONE_OF(code, FIAT) ? "fiat" : "crypto";
    put(json, g == 0 ? ",\"sent\":[" : g == 1 ? ",\"received\":[" : ",\"fees\":[");
    put(json, "{\"asset_amount\":{\"amount\":\"");
    put(json, amount);
    put(json, "\",\"asset\":{\"code\":\"");
    put(json, code);
    put(json, "\",\"type\":\"");
    put(json, type);
    put(json, "\"}}");
    if (*rate) {
        put(json, ",\"rates\":[{\"amount\":\"");
        put(json, rate);
        put(json, "\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}]");
    }
    put(json, "}]");
    return true;
}

static void check_text(txconv_buf *problems, const char *name, const char *v, long max, bool required)
{
    long n = utf8_length(v);
    if (n < 0)
        problem(problems, "%s is not valid UTF-8", name);
    else if (n == 0 && required)
        problem(problems, "%s is missing", name);
    else if (n > max)
        problem(problems, "%s is longer than %ld characters", name, max);
}

bool txconv_csv(const txconv_header *h, const char *const *f, size_t n, txconv_buf *json,
                const char **id, txconv_buf *problems)
{
    txconv_buf_reset(json);
    txconv_buf_reset(problems);
    if (n != h->n_fields) {
        problem(problems, "%zu fields where the header has %zu", n, h->n_fields);
        return false;
    }
    const char *type = col(h, f, TXC_TYPE), *subtype = col(h, f, TXC_SUBTYPE);
    const char *when = col(h, f, TXC_DATETIME);
    check_text(problems, "id", col(h, f, TXC_ID), ID_MAX, true);
    check_text(problems, "account_id", col(h, f, TXC_ACCOUNT), ID_MAX, true);
    check_text(problems, "subtype", subtype, SUBTYPE_MAX, false);
    if (!*when)
        problem(problems, "datetime is missing");
    else if (!txconv_datetime_ok(when))
        problem(problems, "datetime '%.40s' is not ISO 8601 with seconds and a zone "
                "(2024-01-31T12:00:00Z, 2024-01-31T12:00:00.250+01:00)", when);
    bool type_ok = ONE_OF(type, TYPES);
    if (!*type)
        problem(problems, "type is missing");
    else if (!type_ok)
        problem(problems, "type '%.20s' is not trade, deposit, withdraw, income or expense", type);
    put(json, "{\"id\":");
    put_string(json, col(h, f, TXC_ID));
    put(json, ",\"account_id\":");
    put_string(json, col(h, f, TXC_ACCOUNT));
    put(json, ",\"datetime\":");
    put_string(json, when);
    put(json, ",\"type\":");
    put_string(json, type);
    if (*subtype) {
        put(json, ",\"subtype\":");
        put_string(json, subtype);
    }
    bool has[3];
    for (int g = 0; g < 3; g++)
        has[g] = line_item(h, f, g, json, problems);
    put(json, "}");
    if (type_ok) {
        char sent, received;
        needs(type, &sent, &received);
        if (sent == 'r' && !has[0])
            problem(problems, "a %s needs a sent line item (sent_asset, sent_amount)", type);
        if (sent == '-' && has[0])
            problem(problems, "a %s has no sent line item", type);
        if (received == 'r' && !has[1])
            problem(problems, "a %s needs a received line item (received_asset, received_amount)", type);
        if (received == '-' && has[1])
            problem(problems, "a %s has no received line item", type);
    }
    if (json->oom)
        problem(problems, "out of memory");
    *id = col(h, f, TXC_ID);
    return problems->len == 0;
}

/* ---- a JSONL line */

/* One TransactionAmountWrite at path. */
static void check_amount(json_t *a, const char *path, bool above_zero, txconv_buf *problems)
{
    const char *amount = json_string_value(json_object_get(a, "amount")), *why;
    json_t *asset = json_object_get(a, "asset");
    const char *code = json_string_value(json_object_get(asset, "code"));
    if (!json_is_object(a))
        problem(problems, "%s is not an object", path);
    else if (!amount)
        problem(problems, "%s.amount is missing or not a string", path);
    else if (!txconv_decimal_ok(amount, above_zero, &why))
        problem(problems, "%s.amount '%.40s' %s", path, amount, why);
    if (json_is_object(a) && (!code || !txconv_asset_code_ok(code, strlen(code))))
        problem(problems, "%s.asset.code is missing or not an asset code", path);
    if (json_is_object(a) && !ONE_OF(json_string_value(json_object_get(asset, "type")) ?
                                         json_string_value(json_object_get(asset, "type")) : "",
                                     ASSET_TYPES))
        problem(problems, "%s.asset.type is not crypto, fiat, nft or security", path);
}

/* The array under key; returns its length (0 when absent). */
static size_t check_lines(json_t *tx, const char *key, txconv_buf *problems)
{
    json_t *lines = json_object_get(tx, key);
    if (!lines || json_is_null(lines))
        return 0;
    if (!json_is_array(lines)) {
        problem(problems, "%s is not an array", key);
        return 0;
    }
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l) {
        char path[64];
        snprintf(path, sizeof path, "%s[%zu].asset_amount", key, i);
        check_amount(json_object_get(l, "asset_amount"), path, true, problems);
        json_t *rates = json_object_get(l, "rates"), *r;
        size_t k;
        json_array_foreach(rates, k, r) {
            snprintf(path, sizeof path, "%s[%zu].rates[%zu]", key, i, k);
            check_amount(r, path, false, problems);
        }
    }
    return json_array_size(lines);
}

static const char *string_field(json_t *tx, const char *key, long max, txconv_buf *problems)
{
    json_t *v = json_object_get(tx, key);
    if (!json_is_string(v)) {
        problem(problems, "%s is missing or not a string", key);
        return NULL;
    }
    check_text(problems, key, json_string_value(v), max, true);
    return json_string_value(v);
}

bool txconv_jsonl(const char *line, size_t len, char **id, txconv_buf *problems)
{
    txconv_buf_reset(problems);
    *id = NULL;
    json_error_t je;
    json_t *tx = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!tx) {
        problem(problems, "not JSON: %s (column %d)", je.text, je.column);
        return false;
    }
    if (!json_is_object(tx)) {
        problem(problems, "not a JSON object");
        json_decref(tx);
        return false;
    }
    const char *tx_id = string_field(tx, "id", ID_MAX, problems);
    string_field(tx, "account_id", ID_MAX, problems);
    const char *when = string_field(tx, "datetime", 64, problems);
    if (when && !txconv_datetime_ok(when))
        problem(problems, "datetime '%.40s' is not ISO 8601 with seconds and a zone", when);
    const char *type = json_string_value(json_object_get(tx, "type"));
    if (!type || !ONE_OF(type, TYPES))
        problem(problems, "type is missing or not trade, deposit, withdraw, income or expense");
    size_t sent = check_lines(tx, "sent", problems);
    size_t received = check_lines(tx, "received", problems);
    check_lines(tx, "fees", problems);
    if (type && ONE_OF(type, TYPES)) {
        char need_sent, need_received;
        needs(type, &need_sent, &need_received);
        if ((need_sent == 'r') != (sent > 0))
            problem(problems, need_sent == 'r' ? "a %s needs a sent line item" : "a %s has no sent line item", type);
        if ((need_received == 'r') != (received > 0))
            problem(problems, need_received == 'r' ? "a %s needs a received line item"
                                                   : "a %s has no received line item", type);
    }
    if (problems->len == 0 && tx_id && !(*id = strdup(tx_id)))
        problem(problems, "out of memory");
    json_decref(tx);
    return problems->len == 0;
}
