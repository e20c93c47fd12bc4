/* errmsg: see errmsg.h. */
#include "core/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

void errmsg_set(char **err, const char *fmt, ...)
{
    if (err == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0)
        *err = NULL;
    va_end(ap);
}
