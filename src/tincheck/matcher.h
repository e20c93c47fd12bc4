/* tincheck/matcher: the second half of a TIN check, after the structural
 * rules (tincheck/rules.h): does this name go with this TIN? The tax
 * authority's matching service answers that for real; taxd ships a matcher
 * that compares with an operator-supplied list (list_matcher.c) and any
 * other can be plugged in behind this small vtable.
 *
 * Contract of a matcher:
 *  - match() is called only with a TIN that passed the rules for a US type
 *    (SSN, EIN, ITIN, ATIN), in its normalised form (nine digits), and the
 *    name as stored (UTF-8, 1 to 256 characters). Foreign TINs never reach
 *    it: they end as FOREIGN.
 *  - It may be called from several engine threads at once, so ctx must be
 *    read-only after creation or lock what it changes.
 *  - It may block (a network call), but should bound its wait well below
 *    the TIN check lease (--tin-check-lease-ms), or another worker takes the
 *    check meanwhile and the result is discarded.
 *  - TINCHECK_MATCH_RETRY means "no answer now" (the service is down): the
 *    check stays pending and is tried again once its lease expires.
 *  - It must never log, keep or send anywhere but its matching service the
 *    TIN or the name, and must not keep the pointers after returning.
 *  - free(ctx) releases everything; it is called once, after the last
 *    match(), and may be NULL when there is nothing to release. */
#ifndef TAXD_TINCHECK_MATCHER_H
#define TAXD_TINCHECK_MATCHER_H

typedef enum tincheck_match {
    TINCHECK_MATCH_VALID,    /* the name and the TIN go together */
    TINCHECK_MATCH_MISMATCH, /* they do not, or the TIN is unknown */
    TINCHECK_MATCH_RETRY,    /* no answer now: try again later */
} tincheck_match_t;

typedef struct tincheck_matcher {
    /* tin_type: "SSN", "EIN", "ITIN" or "ATIN"; tin: nine digits. */
    tincheck_match_t (*match)(void *ctx, const char *tin_type, const char *tin,
                              const char *name);
    void (*free)(void *ctx);
    void *ctx; /* owned by the matcher until free */
} tincheck_matcher_t;

/* The shipped matcher: the list in the file at path (format in
 * docs/operations.md § TIN checks), read once here. path NULL or "" gives a
 * matcher with an empty list, which answers MISMATCH to everything. Returns
 * 0, or -1 with *err malloc'd (naming the line, never its content) when the
 * file cannot be read or a line is malformed. The caller owns *out and
 * releases it with tincheck_matcher_free. */
int tincheck_list_matcher_open(const char *path, tincheck_matcher_t *out, char **err);

/* Releases a matcher (any implementation); safe on a zeroed struct. */
void tincheck_matcher_free(tincheck_matcher_t *m);

/* Compares names as the list matcher does: ASCII letters case-insensitively,
 * runs of whitespace as one space, leading and trailing whitespace ignored.
 * Exposed for other matchers and the tests. */
int tincheck_name_compare(const char *a, const char *b);

#endif
