/* core/grow: room in a growable array (items, count, cap), the one way every
 * module grows one: the capacity doubles, starting at a size of the caller's
 * choosing, so n appends cost O(n) copies. */
#ifndef TAXD_CORE_GROW_H
#define TAXD_CORE_GROW_H

#include <stddef.h>

/* Returns items, possibly moved, with room for at least `need` elements of
 * `size` bytes, and sets *cap to the new capacity (from `first`, doubled
 * until it fits). NULL when out of memory or the byte count would overflow:
 * items and *cap are then unchanged and items still belongs to the caller. */
void *grow_array(void *items, size_t *cap, size_t need, size_t size, size_t first);

#endif
