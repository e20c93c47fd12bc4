/* core/grow: see grow.h. */
#include "core/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow_array(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return items;
    size_t next = *cap != 0 ? *cap : (first != 0 ? first : 1);
    while (next < need) {
        if (next > SIZE_MAX / 2)
            return NULL;
        next *= 2;
    }
    if (size != 0 && next > SIZE_MAX / size)
        return NULL;
    void *grown = realloc(items, next * size);
    if (grown != NULL)
        *cap = next;
    return grown;
}
