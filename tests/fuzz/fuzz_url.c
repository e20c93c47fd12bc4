/* Fuzzes the raw-target handling: splitting, routing with parameter
 * decoding and query lookup must never crash, read out of bounds or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/router.h"
#include "http/url.h"

/* The request arena's stand-in: the router's parameters belong to the
 * allocator's owner (a refused path's too), freed together after each input. */
typedef struct scratch {
    void *blocks[64];
    size_t count;
} scratch_t;

static void *alloc_scratch(void *ctx, size_t n)
{
    scratch_t *s = ctx;
    if (s->count == sizeof s->blocks / sizeof s->blocks[0])
        return NULL;
    return s->blocks[s->count++] = malloc(n);
}

static const route_t ROUTES[] = {
    {"GET", "/v1/filers", 0, 0, NULL, 0},
    {"GET", "/v1/filers/{filerId}", 0, 0, NULL, 0},
    {"POST", "/v1/transactions/external-id", 0, 0, NULL, 0},
    {"GET", "/v1/transactions/external-id/{id}", 0, 0, NULL, 0},
    {"GET", "/v1/a/{x}/b/{y}", 0, 0, NULL, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static router_t *router;
    if (router == NULL)
        router = router_new(ROUTES, sizeof ROUTES / sizeof ROUTES[0]);
    char *target = malloc(size + 1);
    memcpy(target, data, size);
    target[size] = '\0';

    size_t path_len;
    const char *query;
    url_split(target, &path_len, &query);
    router_match_t match;
    char allowed[64];
    scratch_t scratch = {.count = 0};
    router_match(router, "GET", target, path_len, alloc_scratch, &scratch, &match, allowed,
                 sizeof allowed);
    for (size_t i = 0; i < scratch.count; i++)
        free(scratch.blocks[i]);
    char *value = NULL;
    if (url_query_get(query, "cursor", &value) > 0)
        free(value);
    char *decoded = malloc(size + 1);
    url_decode(target, size, decoded, true);
    free(decoded);
    free(target);
    return 0;
}
