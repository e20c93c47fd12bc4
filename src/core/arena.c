/* arena: a chain of blocks with bump allocation. Requests are short and small,
 * so nothing is ever freed individually; a large allocation gets a block of
 * its own rather than wasting the tail of the current one. */
#include "core/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    struct block *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
} block_t;

typedef struct cleanup {
    struct cleanup *next;
    void (*fn)(void *);
    void *arg;
} cleanup_t;

struct arena {
    block_t *blocks;
    cleanup_t *cleanups;
    size_t block_size;
};

static block_t *block_new(size_t size)
{
    block_t *b = malloc(sizeof *b + size);
    if (b == NULL)
        return NULL;
    b->next = NULL;
    b->size = size;
    b->used = 0;
    return b;
}

arena_t *arena_new(size_t first_block)
{
    arena_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->block_size = first_block < 1024 ? 1024 : first_block;
    a->blocks = block_new(a->block_size);
    if (a->blocks == NULL) {
        free(a);
        return NULL;
    }
    return a;
}

void arena_free(arena_t *arena)
{
    if (arena == NULL)
        return;
    for (cleanup_t *c = arena->cleanups; c != NULL; c = c->next)
        c->fn(c->arg);
    block_t *b = arena->blocks;
    while (b != NULL) {
        block_t *next = b->next;
        free(b);
        b = next;
    }
    free(arena);
}

void *arena_alloc(arena_t *arena, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n)
        return NULL;
    block_t *cur = arena->blocks;
    if (cur->size - cur->used >= need) {
        void *p = cur->data + cur->used;
        cur->used += need;
        return p;
    }
    if (need > arena->block_size / 2) { /* big: its own block, behind the current one */
        block_t *big = block_new(need);
        if (big == NULL)
            return NULL;
        big->used = need;
        big->next = cur->next;
        cur->next = big;
        return big->data;
    }
    block_t *fresh = block_new(arena->block_size);
    if (fresh == NULL)
        return NULL;
    fresh->next = cur;
    arena->blocks = fresh;
    fresh->used = need;
    return fresh->data;
}

void *arena_alloc_cb(void *arena, size_t n)
{
    return arena_alloc(arena, n);
}

char *arena_strndup(arena_t *arena, const char *s, size_t len)
{
    char *p = arena_alloc(arena, len + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *arena_sprintf(arena_t *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return NULL;
    char *p = arena_alloc(arena, (size_t)len + 1);
    if (p == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return p;
}

int arena_defer(arena_t *arena, void (*fn)(void *), void *arg)
{
    cleanup_t *c = arena_alloc(arena, sizeof *c);
    if (c == NULL)
        return -1;
    c->fn = fn;
    c->arg = arg;
    c->next = arena->cleanups;
    arena->cleanups = c;
    return 0;
}
