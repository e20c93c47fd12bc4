/* router: (method, raw path) -> route template.
 *
 * Design. Templates are split into segments once, at router_new; a match is a
 * linear scan over them. For the few dozen routes taxd has, a scan of short
 * byte comparisons is as fast as a trie and far easier to check by eye. The
 * raw path is split into segment offsets on the stack, so the only memory a
 * match takes is the decoded parameters, from the caller's allocator.
 *
 * Raw matching. Literal segments are compared byte for byte with the raw path,
 * and a {param} takes one whole non-empty raw segment, decoded exactly once
 * (plus_is_space=false). So "%2F" in an id is data, never a separator, and an
 * empty segment ("//") or a trailing slash matches no template.
 *
 * Precedence. Among the templates that match both the path and the method, one
 * with a literal at the first position where they differ wins: POST
 * /v1/transactions/external-id beats POST /v1/transactions/{id}. Precedence
 * is decided among routes that accept the method, so with only GET
 * /v1/transactions/{id}, a GET of .../external-id still reaches it (the id
 * "external-id" is a legal id) instead of being a 405. A 405 is returned only
 * when some template matches the path and none takes the method; its Allow
 * list holds, in table order and without repeats, the methods of every
 * template matching the path.
 *
 * A table that would make a match ambiguous (two routes with the same method
 * and the same literal/param shape) is refused at router_new, as are malformed
 * templates; both are programming errors best caught at start.
 *
 * The router copies the table and the method and template strings, so callers
 * may build routes from temporary strings; route_t.path of router_route()
 * points into the router and lives as long as it does.
 */
#include "http/router.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/url.h"

/* Deeper templates are refused at router_new; deeper paths cannot match. */
#define ROUTER_MAX_SEGMENTS 16

typedef struct router_segment {
    const char *text; /* into the copied template; for a param, the name */
    size_t len;
    bool is_param;
} router_segment_t;

typedef struct router_entry {
    router_segment_t segments[ROUTER_MAX_SEGMENTS];
    size_t segment_count;
} router_entry_t;

struct router {
    route_t *routes;         /* count, with method and path owned by the router */
    router_entry_t *entries; /* count, parallel to routes */
    size_t count;
};

typedef struct router_path {
    const char *text[ROUTER_MAX_SEGMENTS];
    size_t len[ROUTER_MAX_SEGMENTS];
    size_t count;
} router_path_t;

static char *router_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL)
        memcpy(copy, s, n);
    return copy;
}

static bool router_literal_is_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr("{}%?#", s[i]) != NULL)
            return false;
    }
    return true;
}

/* Classifies one template segment. Returns false when it is malformed. */
static bool router_parse_segment(const char *s, size_t len, router_segment_t *seg)
{
    if (len == 0)
        return false;
    if (s[0] != '{') {
        *seg = (router_segment_t){.text = s, .len = len, .is_param = false};
        return router_literal_is_valid(s, len);
    }
    if (len < 3 || s[len - 1] != '}')
        return false;
    *seg = (router_segment_t){.text = s + 1, .len = len - 2, .is_param = true};
    return router_literal_is_valid(seg->text, seg->len);
}

static bool router_param_name_is_repeated(const router_entry_t *e, size_t upto)
{
    const router_segment_t *last = &e->segments[upto];
    for (size_t i = 0; i < upto; i++) {
        const router_segment_t *s = &e->segments[i];
        if (s->is_param && s->len == last->len && memcmp(s->text, last->text, s->len) == 0)
            return true;
    }
    return false;
}

/* Splits "/a/{b}/c" into segments pointing into path. */
static bool router_parse_template(const char *path, router_entry_t *e)
{
    if (path == NULL || path[0] != '/')
        return false;
    size_t params = 0;
    e->segment_count = 0;
    const char *p = path + 1;
    for (;;) {
        size_t len = strcspn(p, "/");
        if (e->segment_count == ROUTER_MAX_SEGMENTS)
            return false;
        router_segment_t *seg = &e->segments[e->segment_count];
        if (!router_parse_segment(p, len, seg))
            return false;
        if (seg->is_param && (++params > ROUTER_MAX_PARAMS ||
                              router_param_name_is_repeated(e, e->segment_count)))
            return false;
        e->segment_count++;
        if (p[len] == '\0')
            return true;
        p += len + 1;
    }
}

static bool router_same_shape(const router_entry_t *a, const router_entry_t *b)
{
    if (a->segment_count != b->segment_count)
        return false;
    for (size_t i = 0; i < a->segment_count; i++) {
        const router_segment_t *x = &a->segments[i];
        const router_segment_t *y = &b->segments[i];
        if (x->is_param != y->is_param)
            return false;
        if (!x->is_param && (x->len != y->len || memcmp(x->text, y->text, x->len) != 0))
            return false;
    }
    return true;
}

static bool router_is_ambiguous(const router_t *r, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        if (strcmp(r->routes[i].method, r->routes[upto].method) == 0 &&
            router_same_shape(&r->entries[i], &r->entries[upto]))
            return true;
    }
    return false;
}

static int router_add(router_t *r, const route_t *src, size_t index)
{
    route_t *dst = &r->routes[index];
    *dst = *src;
    dst->index = index;
    dst->method = NULL;
    dst->path = NULL;
    if (src->method == NULL || src->method[0] == '\0' || src->path == NULL)
        return -1;
    dst->method = router_strdup(src->method);
    dst->path = router_strdup(src->path);
    r->count = index + 1; /* from here router_free releases this entry */
    if (dst->method == NULL || dst->path == NULL)
        return -1;
    if (!router_parse_template(dst->path, &r->entries[index]))
        return -1;
    return router_is_ambiguous(r, index) ? -1 : 0;
}

router_t *router_new(const route_t *routes, size_t count)
{
    router_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->routes = calloc(count ? count : 1, sizeof *r->routes);
    r->entries = calloc(count ? count : 1, sizeof *r->entries);
    if (r->routes == NULL || r->entries == NULL) {
        router_free(r);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (router_add(r, &routes[i], i) != 0) {
            router_free(r);
            return NULL;
        }
    }
    return r;
}

void router_free(router_t *router)
{
    if (router == NULL)
        return;
    for (size_t i = 0; i < router->count; i++) {
        free((char *)router->routes[i].method);
        free((char *)router->routes[i].path);
    }
    free(router->routes);
    free(router->entries);
    free(router);
}

size_t router_route_count(const router_t *router)
{
    return router->count;
}

const route_t *router_route(const router_t *router, size_t index)
{
    return index < router->count ? &router->routes[index] : NULL;
}

/* Splits a raw path into segments; false when it cannot match any template
 * (no leading '/', too deep). Empty segments are kept: they match nothing. */
static bool router_split_path(const char *path, size_t len, router_path_t *out)
{
    if (len == 0 || path[0] != '/')
        return false;
    out->count = 0;
    size_t start = 1;
    for (;;) {
        const char *slash = memchr(path + start, '/', len - start);
        size_t end = slash != NULL ? (size_t)(slash - path) : len;
        if (out->count == ROUTER_MAX_SEGMENTS)
            return false;
        out->text[out->count] = path + start;
        out->len[out->count] = end - start;
        out->count++;
        if (slash == NULL)
            return true;
        start = end + 1;
    }
}

static bool router_entry_matches(const router_entry_t *e, const router_path_t *p)
{
    if (e->segment_count != p->count)
        return false;
    for (size_t i = 0; i < p->count; i++) {
        const router_segment_t *s = &e->segments[i];
        if (p->len[i] == 0)
            return false;
        if (s->is_param)
            continue;
        if (s->len != p->len[i] || memcmp(s->text, p->text[i], s->len) != 0)
            return false;
    }
    return true;
}

/* True when a beats b: a literal at the first position where they differ. */
static bool router_is_more_specific(const router_entry_t *a, const router_entry_t *b)
{
    for (size_t i = 0; i < a->segment_count; i++) {
        if (a->segments[i].is_param != b->segments[i].is_param)
            return !a->segments[i].is_param;
    }
    return false;
}

static bool router_method_listed(const router_t *r, const router_path_t *p, size_t upto)
{
    const char *method = r->routes[upto].method;
    for (size_t i = 0; i < upto; i++) {
        if (strcmp(r->routes[i].method, method) == 0 && router_entry_matches(&r->entries[i], p))
            return true;
    }
    return false;
}

/* Writes "GET, POST" into allowed, keeping only whole methods that fit. */
static void router_write_allowed(const router_t *r, const router_path_t *p, char *allowed,
                                 size_t cap)
{
    if (allowed == NULL || cap == 0)
        return;
    size_t used = 0;
    allowed[0] = '\0';
    for (size_t i = 0; i < r->count; i++) {
        if (!router_entry_matches(&r->entries[i], p) || router_method_listed(r, p, i))
            continue;
        const char *method = r->routes[i].method;
        size_t sep = used > 0 ? 2 : 0;
        size_t n = strlen(method);
        if (used + sep + n + 1 > cap)
            return;
        memcpy(allowed + used, ", ", sep);
        memcpy(allowed + used + sep, method, n + 1);
        used += sep + n;
    }
}

static router_status_t router_decode_params(const router_entry_t *e, const router_path_t *p,
                                            void *(*alloc)(void *ctx, size_t n),
                                            void *alloc_ctx, router_match_t *match)
{
    for (size_t i = 0; i < e->segment_count; i++) {
        const router_segment_t *s = &e->segments[i];
        if (!s->is_param)
            continue;
        char *value = alloc(alloc_ctx, p->len[i] + 1);
        if (value == NULL)
            return ROUTER_NO_MEMORY;
        if (url_decode(p->text[i], p->len[i], value, false) < 0)
            return ROUTER_BAD_PATH;
        size_t k = match->param_count++;
        match->param_names[k] = s->text;
        match->param_name_lens[k] = s->len;
        match->params[k] = value;
    }
    return ROUTER_OK;
}

router_status_t router_match(const router_t *router, const char *method, const char *path,
                             size_t path_len, void *(*alloc)(void *ctx, size_t n),
                             void *alloc_ctx, router_match_t *match, char *allowed,
                             size_t allowed_cap)
{
    memset(match, 0, sizeof *match);
    if (allowed != NULL && allowed_cap > 0)
        allowed[0] = '\0';
    router_path_t p;
    if (!router_split_path(path, path_len, &p))
        return ROUTER_NOT_FOUND;
    size_t best = SIZE_MAX;
    bool path_matched = false;
    for (size_t i = 0; i < router->count; i++) {
        const router_entry_t *e = &router->entries[i];
        if (!router_entry_matches(e, &p))
            continue;
        path_matched = true;
        if (strcmp(router->routes[i].method, method) != 0)
            continue;
        if (best == SIZE_MAX || router_is_more_specific(e, &router->entries[best]))
            best = i;
    }
    if (best == SIZE_MAX && !path_matched)
        return ROUTER_NOT_FOUND;
    if (best == SIZE_MAX) {
        router_write_allowed(router, &p, allowed, allowed_cap);
        return ROUTER_METHOD_NOT_ALLOWED;
    }
    router_status_t st = router_decode_params(&router->entries[best], &p, alloc, alloc_ctx, match);
    if (st != ROUTER_OK) {
        memset(match, 0, sizeof *match);
        return st;
    }
    match->route = &router->routes[best];
    return ROUTER_OK;
}

unsigned router_path_flags(const router_t *router, const char *path, size_t path_len)
{
    router_path_t p;
    if (!router_split_path(path, path_len, &p))
        return 0;
    unsigned flags = 0;
    for (size_t i = 0; i < router->count; i++)
        if (router_entry_matches(&router->entries[i], &p))
            flags |= router->routes[i].flags;
    return flags;
}

const char *router_param(const router_match_t *match, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < match->param_count; i++) {
        if (match->param_name_lens[i] == n && memcmp(match->param_names[i], name, n) == 0)
            return match->params[i];
    }
    return NULL;
}
