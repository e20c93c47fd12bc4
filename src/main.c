/* taxd: the command line. `serve` runs the HTTP API, `worker` the engines,
 * `admin` the operator commands, `version` prints the version. main() only
 * dispatches; each mode is wired in app/ (app/app.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"

#define TAXD_VERSION "0.1.0"

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: taxd COMMAND [options]\n\n"
            "commands:\n"
            "  serve     run the HTTP API and the background engines (taxd serve --help)\n"
            "  worker    run only the background engines (same options as serve)\n"
            "  admin     operator commands on the database (taxd admin --help)\n"
            "  version   print the version\n");
}

int main(int argc, char **argv)
{
    if (app_global_init() != 0) /* once, before any thread */
        return 1;
    atexit(app_global_cleanup);
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0)
        return app_serve(argc - 2, argv + 2);
    if (strcmp(cmd, "worker") == 0)
        return app_worker(argc - 2, argv + 2);
    if (strcmp(cmd, "admin") == 0)
        return app_admin(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("taxd %s\n", TAXD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    fprintf(stderr, "taxd: unknown command '%s'\n", cmd);
    print_usage(stderr);
    return 2;
}
