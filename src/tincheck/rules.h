/* tincheck/rules: the published structural rules of US taxpayer
 * identification numbers, as a pure function of (tin_type, text): no SQL, no
 * HTTP, no logging. A TIN is first normalised (the hyphens of the printed
 * forms removed, a foreign TIN upper-cased with its separators removed), then
 * classified. The first rule a TIN breaks is reported, so tests and
 * operators can tell which one it was; callers show only "INVALID_FORMAT".
 *
 *   SSN   123-45-6789 or 123456789: area (digits 1-3) not 000, 666 or
 *         900-999; group (digits 4-5) not 00; serial (digits 6-9) not 0000.
 *   ITIN  same printed forms: area 9xx; group 50-65, 70-88, 90-92 or 94-99.
 *   ATIN  same printed forms: area 9xx; group 93.
 *   EIN   12-3456789 or 123456789: the two-digit prefix is an IRS campus
 *         prefix (01-06, 10-16, 20-27, 30-48, 50-68, 71-77, 80-88, 90-95,
 *         98-99; docs/decisions.md gives the source).
 *   FOREIGN 1 to 30 characters of ASCII letters, digits, space, '-', '/'
 *         and '.', with at least one letter or digit; normalised to the
 *         upper-cased letters and digits alone.
 *
 * Nothing here keeps a copy of the TIN; the caller wipes its buffers. */
#ifndef TAXD_TINCHECK_RULES_H
#define TAXD_TINCHECK_RULES_H

#include <stdbool.h>

#define TINCHECK_NORMAL_MAX 32  /* a normalised TIN plus the NUL */
#define TINCHECK_FOREIGN_MAX 30 /* characters of a foreign TIN as written */

typedef enum tincheck_type {
    TINCHECK_TYPE_SSN,
    TINCHECK_TYPE_EIN,
    TINCHECK_TYPE_ITIN,
    TINCHECK_TYPE_ATIN,
    TINCHECK_TYPE_FOREIGN,
    TINCHECK_TYPE_UNKNOWN,
} tincheck_type_t;

/* Which rule a TIN broke (TINCHECK_RULE_OK: none). */
typedef enum tincheck_rule {
    TINCHECK_RULE_OK = 0,
    TINCHECK_RULE_TYPE,    /* tin_type is none of the above */
    TINCHECK_RULE_SHAPE,   /* not one of the printed forms (length, characters, hyphens) */
    TINCHECK_RULE_AREA,    /* SSN area 000/666/9xx; ITIN or ATIN area not 9xx */
    TINCHECK_RULE_GROUP,   /* SSN group 00; ITIN group outside its ranges; ATIN group not 93 */
    TINCHECK_RULE_SERIAL,  /* SSN serial 0000 */
    TINCHECK_RULE_PREFIX,  /* EIN prefix not a campus prefix */
} tincheck_rule_t;

/* "SSN", "EIN", "ITIN", "ATIN", "FOREIGN" (exact, upper case); anything
 * else is TINCHECK_TYPE_UNKNOWN. */
tincheck_type_t tincheck_type_parse(const char *tin_type);

/* Applies the rules of tin_type to tin. On TINCHECK_RULE_OK, normal
 * (TINCHECK_NORMAL_MAX bytes, caller-owned) holds the normalised TIN: nine
 * digits for the US types. normal is an empty string otherwise. */
tincheck_rule_t tincheck_rules_check(const char *tin_type, const char *tin,
                                     char normal[TINCHECK_NORMAL_MAX]);

/* A short stable name of a rule ("ok", "type", "shape", ...) for tests and
 * logs; it never contains the TIN. */
const char *tincheck_rule_name(tincheck_rule_t rule);

#endif
