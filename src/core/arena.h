/* arena: the memory of one request, freed in one call when the response has
 * been sent (as nginx's pools). Cleanup callbacks release what the arena does
 * not own directly (jansson values, pooled connections), in reverse order.
 * An arena is used by one thread at a time. */
#ifndef TAXD_CORE_ARENA_H
#define TAXD_CORE_ARENA_H

#include <stddef.h>

typedef struct arena arena_t;

/* NULL on allocation failure. */
arena_t *arena_new(size_t first_block);
/* Runs the cleanups (last registered first), then frees every block. */
void arena_free(arena_t *arena);

/* 16-byte aligned memory living until arena_free; NULL when memory ran out. */
void *arena_alloc(arena_t *arena, size_t n);
/* Copies s[0..len) and NUL-terminates. */
char *arena_strndup(arena_t *arena, const char *s, size_t len);
char *arena_sprintf(arena_t *arena, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Registers fn(arg) to run at arena_free. Returns 0, or -1 (then fn was not
 * registered and the caller still owns arg). */
int arena_defer(arena_t *arena, void (*fn)(void *), void *arg);

/* The allocator signature the router takes. */
void *arena_alloc_cb(void *arena, size_t n);

#endif
