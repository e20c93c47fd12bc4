/* scopes: the names of what a credential may reach. See scopes.h. */
#include "core/scopes.h"

#include <stdbool.h>
#include <string.h>

static const char *const scope_names[] = {
    "reports", "accounts", "assets", "transactions", "inventory", "tax-documents",
};
#define SCOPE_COUNT (sizeof scope_names / sizeof scope_names[0])

static bool is_scope_separator(char c)
{
    return c == ',' || c == ' ';
}

/* Bit of the scope named by name[0..len), or 0. */
static unsigned scope_bit(const char *name, size_t len)
{
    for (size_t i = 0; i < SCOPE_COUNT; i++)
        if (strlen(scope_names[i]) == len && memcmp(scope_names[i], name, len) == 0)
            return 1u << i;
    return 0;
}

int scopes_parse(const char *text, unsigned *scopes, const char **bad, size_t *bad_len)
{
    if (text == NULL || scopes == NULL) {
        if (bad != NULL)
            *bad = "";
        if (bad_len != NULL)
            *bad_len = 0;
        return -1;
    }
    unsigned set = 0;
    const char *p = text;
    while (*p != '\0') {
        if (is_scope_separator(*p)) {
            p++;
            continue;
        }
        const char *start = p;
        while (*p != '\0' && !is_scope_separator(*p))
            p++;
        unsigned bit = scope_bit(start, (size_t)(p - start));
        if (bit == 0) {
            if (bad != NULL)
                *bad = start;
            if (bad_len != NULL)
                *bad_len = (size_t)(p - start);
            return -1;
        }
        set |= bit;
    }
    *scopes = set;
    return 0;
}

void scopes_format(unsigned scopes, char *dst, size_t dst_cap)
{
    if (dst == NULL || dst_cap == 0)
        return;
    size_t n = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < SCOPE_COUNT; i++) {
        if ((scopes & (1u << i)) == 0)
            continue;
        size_t len = strlen(scope_names[i]);
        size_t sep = n > 0 ? 1 : 0;
        /* Stop at the last whole name that fits: a cut name would be unknown,
         * and dropping names can only narrow what the text grants. */
        if (n + sep + len + 1 > dst_cap)
            return;
        if (sep)
            dst[n++] = ' ';
        memcpy(dst + n, scope_names[i], len);
        n += len;
        dst[n] = '\0';
    }
}
