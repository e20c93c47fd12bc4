/* admin/cli: see cli.h. */
#include "admin/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int admin_fail(int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *err = json_pack("{s:s}", "error", msg);
    char *text = json_dumps(err, JSON_COMPACT);
    fprintf(stderr, "%s\n", text ? text : "{\"error\":\"out of memory\"}");
    free(text);
    json_decref(err);
    return code;
}

int admin_print_json(json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(doc);
    if (text == NULL)
        return admin_fail(EXIT_REFUSED, "out of memory");
    printf("%s\n", text);
    free(text);
    return 0;
}

int admin_store_failed(store_status_t rc, const char *what)
{
    return admin_fail(EXIT_REFUSED, "%s failed: %s", what, store_status_name(rc));
}

static bool listed(const char *word, const char *const *list)
{
    for (const char *const *f = list; f != NULL && *f != NULL; f++)
        if (strcmp(word, *f) == 0)
            return true;
    return false;
}

int admin_check_flags(const args_t *a, const char *const *allowed, const char *const *switches)
{
    for (int i = 0; i < a->argc; i++) {
        if (listed(a->argv[i], switches))
            continue;
        if (!listed(a->argv[i], allowed))
            return admin_fail(EXIT_USAGE, "unknown option '%s'", a->argv[i]);
        if (i + 1 >= a->argc)
            return admin_fail(EXIT_USAGE, "option %s needs a value", a->argv[i]);
        i++; /* the value */
    }
    return 0;
}

const char *admin_flag_in(const args_t *a, const char *name, const char *const *switches)
{
    for (int i = 0; i < a->argc; i++) {
        if (listed(a->argv[i], switches))
            continue;
        if (i + 1 < a->argc && strcmp(a->argv[i], name) == 0)
            return a->argv[i + 1];
        i++;
    }
    return NULL;
}

const char *admin_flag(const args_t *a, const char *name)
{
    return admin_flag_in(a, name, NULL);
}

bool admin_switch(const args_t *a, const char *name, const char *const *switches)
{
    for (int i = 0; i < a->argc; i++) {
        if (listed(a->argv[i], switches)) {
            if (strcmp(a->argv[i], name) == 0)
                return true;
            continue;
        }
        i++;
    }
    return false;
}
