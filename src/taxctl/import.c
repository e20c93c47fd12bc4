/* PLACEHOLDER: replaced by the helper that owns this command (issue 18). */
#include <stdio.h>
#include "taxctl.h"
int taxctl_import(const taxctl_globals *g, int argc, char **argv)
{
    (void)g; (void)argc;
    fprintf(stderr, "taxctl %s: not built yet\n", argv[0]);
    return TAXCTL_EXIT_INCOMPLETE;
}
