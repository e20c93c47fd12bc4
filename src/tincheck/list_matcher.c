/* tincheck/list_matcher: the shipped matcher (matcher.h). It stands in for
 * the tax authority's matching service with a list the operator supplies
 * (--tin-match-file): one "TIN_TYPE,TIN,NAME" per line, '#' comments and
 * blank lines ignored. The TIN is written as the API accepts it (with or
 * without hyphens) and must pass the structural rules of its type; the name
 * is everything after the second comma, so it may hold commas itself.
 *
 * The file is read once when the engine starts, into an array sorted by
 * (type, TIN); a lookup is a binary search followed by a scan of the
 * entries with the same key (one TIN may be listed under several names:
 * any of them matches). The array is read-only afterwards, so the engine's
 * threads share it without locks. The file holds TINs: errors name the
 * line number only, and the memory is wiped when the matcher is freed. */
#include "tincheck/matcher.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tincheck/rules.h"

typedef struct entry {
    tincheck_type_t type;
    char tin[TINCHECK_NORMAL_MAX];
    char *name; /* owned; as written, trimmed */
} entry_t;

typedef struct list {
    entry_t *entries; /* owned, sorted by (type, tin) */
    size_t count;
} list_t;

/* ---- names ------------------------------------------------------------ */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static const char *skip_space(const char *s)
{
    while (is_space(*s))
        s++;
    return s;
}

static int lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : (unsigned char)c;
}

int tincheck_name_compare(const char *a, const char *b)
{
    a = skip_space(a);
    b = skip_space(b);
    for (;;) {
        bool run_a = is_space(*a), run_b = is_space(*b);
        if (run_a)
            a = skip_space(a);
        if (run_b)
            b = skip_space(b);
        /* a run of whitespace is one space, or nothing at the end */
        int ca = run_a && *a != '\0' ? ' ' : lower(*a);
        int cb = run_b && *b != '\0' ? ' ' : lower(*b);
        if (ca != cb)
            return ca < cb ? -1 : 1;
        if (ca == '\0')
            return 0;
        if (!run_a)
            a++;
        if (!run_b)
            b++;
    }
}

/* ---- the list --------------------------------------------------------- */

static int entry_key_cmp(const entry_t *x, tincheck_type_t type, const char *tin)
{
    if (x->type != type)
        return x->type < type ? -1 : 1;
    return strcmp(x->tin, tin);
}

static int entry_sort_cmp(const void *a, const void *b)
{
    const entry_t *y = b;
    return entry_key_cmp(a, y->type, y->tin);
}

static tincheck_match_t list_match(void *ctx, const char *tin_type, const char *tin,
                                   const char *name)
{
    const list_t *list = ctx;
    tincheck_type_t type = tincheck_type_parse(tin_type);
    size_t lo = 0, hi = list->count; /* first entry whose key is >= (type, tin) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_key_cmp(&list->entries[mid], type, tin) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < list->count && entry_key_cmp(&list->entries[i], type, tin) == 0; i++)
        if (tincheck_name_compare(list->entries[i].name, name) == 0)
            return TINCHECK_MATCH_VALID;
    return TINCHECK_MATCH_MISMATCH;
}

static void list_free(void *ctx)
{
    list_t *list = ctx;
    if (list == NULL)
        return;
    for (size_t i = 0; i < list->count; i++) {
        explicit_bzero(list->entries[i].name, strlen(list->entries[i].name));
        free(list->entries[i].name);
    }
    if (list->entries != NULL)
        explicit_bzero(list->entries, list->count * sizeof list->entries[0]);
    free(list->entries);
    free(list);
}

void tincheck_matcher_free(tincheck_matcher_t *m)
{
    if (m->free != NULL)
        m->free(m->ctx);
    memset(m, 0, sizeof *m);
}

/* ---- reading the file ------------------------------------------------- */

static int fail(char **err, const char *path, size_t line, const char *what)
{
    if (line > 0) {
        if (asprintf(err, "%s: line %zu: %s", path, line, what) < 0)
            *err = NULL;
    } else if (asprintf(err, "%s: %s", path, what) < 0) {
        *err = NULL;
    }
    return -1;
}

static int append(list_t *list, size_t *cap, entry_t *e)
{
    if (list->count == *cap) {
        size_t grown = *cap == 0 ? 64 : *cap * 2;
        entry_t *more = realloc(list->entries, grown * sizeof *more);
        if (more == NULL)
            return -1;
        list->entries = more;
        *cap = grown;
    }
    list->entries[list->count++] = *e;
    return 0;
}

/* Parses one line (without its newline) into e; returns NULL or what is
 * wrong with it. A comment or blank line sets e->name to NULL. */
static const char *parse_line(char *line, entry_t *e)
{
    e->name = NULL;
    char *start = (char *)skip_space(line);
    if (*start == '\0' || *start == '#')
        return NULL;
    char *comma1 = strchr(start, ',');
    char *comma2 = comma1 != NULL ? strchr(comma1 + 1, ',') : NULL;
    if (comma2 == NULL)
        return "expected TIN_TYPE,TIN,NAME";
    *comma1 = *comma2 = '\0';
    char *type_text = start, *tin = (char *)skip_space(comma1 + 1);
    for (char *end = comma1; end > type_text && is_space(end[-1]);)
        *--end = '\0';
    for (char *end = comma2; end > tin && is_space(end[-1]);)
        *--end = '\0';
    e->type = tincheck_type_parse(type_text);
    if (e->type == TINCHECK_TYPE_UNKNOWN || e->type == TINCHECK_TYPE_FOREIGN)
        return "TIN_TYPE must be SSN, EIN, ITIN or ATIN";
    if (tincheck_rules_check(type_text, tin, e->tin) != TINCHECK_RULE_OK)
        return "the TIN does not pass the structural rules of its type";
    const char *name = skip_space(comma2 + 1);
    size_t len = strlen(name);
    while (len > 0 && is_space(name[len - 1]))
        len--;
    if (len == 0)
        return "the NAME is empty";
    e->name = strndup(name, len);
    return e->name != NULL ? NULL : "out of memory";
}

static int read_list(FILE *f, const char *path, list_t *list, char **err)
{
    char *line = NULL;
    size_t line_cap = 0, cap = 0, number = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &line_cap, f)) >= 0) {
        number++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        entry_t e;
        const char *problem = parse_line(line, &e);
        if (problem != NULL)
            rc = fail(err, path, number, problem);
        else if (e.name != NULL && append(list, &cap, &e) != 0) {
            free(e.name);
            rc = fail(err, path, number, "out of memory");
        }
        explicit_bzero(&e, sizeof e);
    }
    if (line != NULL)
        explicit_bzero(line, line_cap);
    free(line);
    if (rc == 0 && ferror(f))
        rc = fail(err, path, 0, "read error");
    return rc;
}

int tincheck_list_matcher_open(const char *path, tincheck_matcher_t *out, char **err)
{
    memset(out, 0, sizeof *out);
    *err = NULL;
    list_t *list = calloc(1, sizeof *list);
    if (list == NULL)
        return fail(err, "tin match file", 0, "out of memory");
    if (path != NULL && path[0] != '\0') {
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            free(list);
            return fail(err, path, 0, "cannot be opened");
        }
        int rc = read_list(f, path, list, err);
        fclose(f);
        if (rc != 0) {
            list_free(list);
            return -1;
        }
        if (list->count > 0)
            qsort(list->entries, list->count, sizeof list->entries[0], entry_sort_cmp);
    }
    out->match = list_match;
    out->free = list_free;
    out->ctx = list;
    return 0;
}
