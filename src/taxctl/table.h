/* taxctl/table: an aligned text table of JSON objects' scalar fields, for
 * `taxctl get|list --table`. The columns and their widths are chosen from
 * the first batch of items (a list's first page), so a long list is printed
 * as it arrives, never held whole: a later item's value wider than its
 * column is cut with "…", a field the first items did not have is left out.
 * Objects and arrays are not scalars: they are left out too. Widths count
 * UTF-8 characters, not bytes. */
#ifndef TAXCTL_TABLE_H
#define TAXCTL_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#define TAXCTL_TABLE_MAX_WIDTH 40 /* a cell's widest; longer values are cut */

typedef struct taxctl_table taxctl_table;

/* A table printing to out; NULL when out of memory. */
taxctl_table *taxctl_table_new(FILE *out);

/* Prints the items of array (JSON objects; other values are skipped). The
 * first call picks the columns and prints the header. False when out of
 * memory. */
bool taxctl_table_rows(taxctl_table *t, json_t *array);

/* Frees t (prints nothing more). */
void taxctl_table_free(taxctl_table *t);

/* One object as two columns, FIELD and VALUE, its scalar fields in order. */
void taxctl_table_object(FILE *out, json_t *object);

/* A scalar as a table shows it (strings unquoted, null empty), malloc'd;
 * NULL for an object or an array. Exposed for the unit test. */
char *taxctl_table_cell(json_t *value);

/* The first width characters of s, with "…" as the last one when s is
 * longer; malloc'd. */
char *taxctl_table_cut(const char *s, size_t width);

#endif
