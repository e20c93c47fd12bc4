/* tincheck/rules: see rules.h. Each type is a small function over the nine
 * digits, so every rule is one readable line next to its published range. */
#include "tincheck/rules.h"

#include <string.h>

#include "core/domain.h"
#include "core/tin.h"

tincheck_type_t tincheck_type_parse(const char *tin_type)
{
    if (tin_type == NULL)
        return TINCHECK_TYPE_UNKNOWN;
    /* TIN_TYPE_NAMES lists the types in tincheck_type_t's order. */
    int i = domain_name_index(TIN_TYPE_NAMES, tin_type);
    return i >= 0 ? (tincheck_type_t)i : TINCHECK_TYPE_UNKNOWN;
}

const char *tincheck_rule_name(tincheck_rule_t rule)
{
    switch (rule) {
    case TINCHECK_RULE_OK: return "ok";
    case TINCHECK_RULE_TYPE: return "type";
    case TINCHECK_RULE_SHAPE: return "shape";
    case TINCHECK_RULE_AREA: return "area";
    case TINCHECK_RULE_GROUP: return "group";
    case TINCHECK_RULE_SERIAL: return "serial";
    case TINCHECK_RULE_PREFIX: return "prefix";
    }
    return "unknown";
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Copies the nine digits of `tin` into out when tin is either nine digits or
 * the printed form with a hyphen after each position in `hyphens` (a
 * 0-terminated list of digit counts, e.g. {3, 5, 0} for 123-45-6789). */
static bool nine_digits(const char *tin, const int *hyphens, char out[10])
{
    size_t len = strlen(tin);
    size_t n = 0;
    bool printed = len != 9;
    const int *next = hyphens;
    for (size_t i = 0; i < len; i++) {
        char c = tin[i];
        if (printed && *next != 0 && (int)n == *next && c == '-') {
            next++;
            continue;
        }
        if (!is_digit(c) || n == 9)
            return false;
        out[n++] = c;
    }
    out[n] = '\0';
    return n == 9 && (!printed || *next == 0);
}

static int number(const char *digits, int count)
{
    int v = 0;
    for (int i = 0; i < count; i++)
        v = v * 10 + (digits[i] - '0');
    return v;
}

static bool in_ranges(int v, const int (*ranges)[2], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v >= ranges[i][0] && v <= ranges[i][1])
            return true;
    return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* SSA: no area 000, 666 or 900-999, no group 00, no serial 0000. */
static tincheck_rule_t check_ssn(const char *d)
{
    int area = number(d, 3);
    if (area == 0 || area == 666 || area >= 900)
        return TINCHECK_RULE_AREA;
    if (number(d + 3, 2) == 0)
        return TINCHECK_RULE_GROUP;
    return number(d + 5, 4) == 0 ? TINCHECK_RULE_SERIAL : TINCHECK_RULE_OK;
}

/* IRS: an ITIN begins with 9 and its fourth and fifth digits are in these
 * ranges. */
static tincheck_rule_t check_itin(const char *d)
{
    static const int GROUPS[][2] = {{50, 65}, {70, 88}, {90, 92}, {94, 99}};
    if (d[0] != '9')
        return TINCHECK_RULE_AREA;
    return in_ranges(number(d + 3, 2), GROUPS, COUNT(GROUPS)) ? TINCHECK_RULE_OK
                                                               : TINCHECK_RULE_GROUP;
}

/* IRS: an ATIN begins with 9 and its fourth and fifth digits are 93. */
static tincheck_rule_t check_atin(const char *d)
{
    if (d[0] != '9')
        return TINCHECK_RULE_AREA;
    return number(d + 3, 2) == 93 ? TINCHECK_RULE_OK : TINCHECK_RULE_GROUP;
}

/* IRS "How EINs are assigned and valid EIN prefixes": the campus prefixes,
 * Internet (20-27, 45-48, ...) and SBA ones included. */
static tincheck_rule_t check_ein(const char *d)
{
    static const int PREFIXES[][2] = {{1, 6},   {10, 16}, {20, 27}, {30, 48}, {50, 68},
                                      {71, 77}, {80, 88}, {90, 95}, {98, 99}};
    return in_ranges(number(d, 2), PREFIXES, COUNT(PREFIXES)) ? TINCHECK_RULE_OK
                                                               : TINCHECK_RULE_PREFIX;
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* 1..30 characters of letters, digits, ' ', '-', '/', '.', one letter or
 * digit at least; the separators are dropped and letters upper-cased, so
 * "ab-12/3" and "AB 123" are the same foreign TIN to a matcher. */
static tincheck_rule_t check_foreign(const char *tin, char normal[TINCHECK_NORMAL_MAX])
{
    size_t len = strlen(tin);
    if (len == 0 || len > TINCHECK_FOREIGN_MAX)
        return TINCHECK_RULE_SHAPE;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = tin[i];
        if (is_alnum(c))
            normal[n++] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
        else if (c != ' ' && c != '-' && c != '/' && c != '.')
            return TINCHECK_RULE_SHAPE;
    }
    normal[n] = '\0';
    return n > 0 ? TINCHECK_RULE_OK : TINCHECK_RULE_SHAPE;
}

tincheck_rule_t tincheck_rules_check(const char *tin_type, const char *tin,
                                     char normal[TINCHECK_NORMAL_MAX])
{
    static const int SSN_HYPHENS[] = {3, 5, 0};
    static const int EIN_HYPHENS[] = {2, 0};
    normal[0] = '\0';
    tincheck_type_t type = tincheck_type_parse(tin_type);
    if (type == TINCHECK_TYPE_UNKNOWN)
        return TINCHECK_RULE_TYPE;
    if (tin == NULL)
        return TINCHECK_RULE_SHAPE;
    tincheck_rule_t rule;
    if (type == TINCHECK_TYPE_FOREIGN) {
        rule = check_foreign(tin, normal);
    } else {
        const int *hyphens = type == TINCHECK_TYPE_EIN ? EIN_HYPHENS : SSN_HYPHENS;
        if (!nine_digits(tin, hyphens, normal)) {
            rule = TINCHECK_RULE_SHAPE;
        } else if (type == TINCHECK_TYPE_SSN) {
            rule = check_ssn(normal);
        } else if (type == TINCHECK_TYPE_ITIN) {
            rule = check_itin(normal);
        } else if (type == TINCHECK_TYPE_ATIN) {
            rule = check_atin(normal);
        } else {
            rule = check_ein(normal);
        }
    }
    if (rule != TINCHECK_RULE_OK)
        memset(normal, 0, TINCHECK_NORMAL_MAX);
    return rule;
}
