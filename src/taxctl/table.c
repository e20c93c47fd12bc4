/* taxctl/table: see table.h. */
#include <stdlib.h>
#include <string.h>

#include "table.h"

#define MAX_COLUMNS 32

struct taxctl_table {
    FILE *out;
    size_t n;                      /* columns; 0 until the first rows */
    char *names[MAX_COLUMNS];
    size_t widths[MAX_COLUMNS];
};

/* UTF-8 characters in s (continuation bytes not counted). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

char *taxctl_table_cut(const char *s, size_t width)
{
    if (text_width(s) <= width)
        return strdup(s);
    if (width == 0)
        return strdup("");
    /* keep width-1 characters, then the ellipsis */
    size_t keep = 0, chars = 0;
    while (s[keep]) {
        if (((unsigned char)s[keep] & 0xC0) != 0x80) {
            if (chars == width - 1)
                break;
            chars++;
        }
        keep++;
    }
    char *out = malloc(keep + sizeof "…");
    if (out) {
        memcpy(out, s, keep);
        memcpy(out + keep, "…", sizeof "…");
    }
    return out;
}

char *taxctl_table_cell(json_t *value)
{
    char *s = NULL;
    switch (json_typeof(value)) {
    case JSON_STRING: s = strdup(json_string_value(value)); break;
    case JSON_NULL: s = strdup(""); break;
    case JSON_TRUE: s = strdup("true"); break;
    case JSON_FALSE: s = strdup("false"); break;
    case JSON_INTEGER:
    case JSON_REAL: s = json_dumps(value, JSON_ENCODE_ANY); break;
    default: return NULL;
    }
    /* a cell is one line: a newline or a tab inside would break the rows */
    for (char *p = s; p && *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return s;
}

taxctl_table *taxctl_table_new(FILE *out)
{
    taxctl_table *t = calloc(1, sizeof *t);
    if (t)
        t->out = out;
    return t;
}

void taxctl_table_free(taxctl_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t);
}

static void widen(taxctl_table *t, size_t col, const char *text)
{
    size_t w = text_width(text);
    if (w > TAXCTL_TABLE_MAX_WIDTH)
        w = TAXCTL_TABLE_MAX_WIDTH;
    if (w > t->widths[col])
        t->widths[col] = w;
}

/* Columns: the scalar fields of the first items, in order of appearance;
 * widths from the names and the values. */
static bool pick_columns(taxctl_table *t, json_t *array)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item) {
        const char *key;
        json_t *v;
        json_object_foreach(item, key, v) {
            char *cell = taxctl_table_cell(v);
            if (!cell)
                continue;
            size_t c = 0;
            while (c < t->n && strcmp(t->names[c], key) != 0)
                c++;
            if (c == t->n && t->n < MAX_COLUMNS) {
                if (!(t->names[c] = strdup(key))) {
                    free(cell);
                    return false;
                }
                t->n++;
                widen(t, c, key);
            }
            if (c < t->n)
                widen(t, c, cell);
            free(cell);
        }
    }
    return true;
}

static void print_cell(taxctl_table *t, size_t col, const char *text)
{
    char *cut = taxctl_table_cut(text, t->widths[col]);
    const char *s = cut ? cut : "";
    bool last = col + 1 == t->n;
    fputs(s, t->out);
    if (!last)
        fprintf(t->out, "%*s", (int)(t->widths[col] - text_width(s) + 2), "");
    free(cut);
}

bool taxctl_table_rows(taxctl_table *t, json_t *array)
{
    if (t->n == 0) {
        if (!pick_columns(t, array))
            return false;
        for (size_t c = 0; c < t->n; c++)
            print_cell(t, c, t->names[c]);
        if (t->n)
            fputc('\n', t->out);
    }
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item) {
        if (!json_is_object(item) || t->n == 0)
            continue;
        for (size_t c = 0; c < t->n; c++) {
            json_t *v = json_object_get(item, t->names[c]);
            char *cell = v ? taxctl_table_cell(v) : NULL;
            print_cell(t, c, cell ? cell : "");
            free(cell);
        }
        fputc('\n', t->out);
    }
    return true;
}

void taxctl_table_object(FILE *out, json_t *object)
{
    size_t width = strlen("FIELD");
    const char *key;
    json_t *v;
    json_object_foreach(object, key, v) {
        if (!json_is_object(v) && !json_is_array(v) && text_width(key) > width)
            width = text_width(key);
    }
    fprintf(out, "%-*s  VALUE\n", (int)width, "FIELD");
    json_object_foreach(object, key, v) {
        char *cell = taxctl_table_cell(v);
        if (!cell)
            continue;
        fprintf(out, "%s%*s  %s\n", key, (int)(width - text_width(key)), "", cell);
        free(cell);
    }
}
