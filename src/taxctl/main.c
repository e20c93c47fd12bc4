/* taxctl: global options, then one command (taxctl.h). argv[0] of a command
 * is its own name, so each command parses the rest with getopt_long. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taxctl.h"

static const struct {
    const char *name;
    taxctl_command_fn run;
    const char *summary;
} COMMANDS[] = {
    {"login", taxctl_login, "store the service URL and client credentials (mode 0600)"},
    {"import", taxctl_import, "import transactions from CSV or JSONL (resumable)"},
    {"report", taxctl_report, "trigger a report, wait for it and download it"},
    {"get", taxctl_get, "print one resource"},
    {"list", taxctl_list, "print every item of a list route"},
    {"webhooks", taxctl_webhooks, "receive deliveries locally (listen) or check one (verify)"},
    {"post", taxctl_post, "send a JSON body to a route (create an owner or an account)"},
    {"patch", taxctl_patch, "send a JSON body to a route with PATCH"},
    {"delete", taxctl_delete, "delete the resource at a route"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: taxctl [--url URL] [--config FILE] [--ca-file FILE] [--verbose] COMMAND ...\n\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-9s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\n`taxctl COMMAND --help` for a command's options; man taxctl for the rest.\n");
}

/* Takes "--name value" or "--name=value" at argv[*i]; true when it matched. */
static bool take_value(int argc, char **argv, int *i, const char *name, const char **out)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return false;
    if (argv[*i][n] == '=') {
        *out = argv[*i] + n + 1;
        return true;
    }
    if (argv[*i][n] != '\0' || *i + 1 >= argc)
        return false;
    *out = argv[++*i];
    return true;
}

int main(int argc, char **argv)
{
    taxctl_globals g = {0};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0)
            g.verbose = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return TAXCTL_EXIT_OK;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("taxctl %s\n", TAXD_CLIENT_VERSION);
            return TAXCTL_EXIT_OK;
        } else if (!take_value(argc, argv, &i, "--url", &g.url) &&
                   !take_value(argc, argv, &i, "--config", &g.config_path) &&
                   !take_value(argc, argv, &i, "--ca-file", &g.ca_file)) {
            fprintf(stderr, "taxctl: unknown option %s\n", argv[i]);
            usage(stderr);
            return TAXCTL_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return TAXCTL_EXIT_USAGE;
    }
    for (size_t c = 0; c < N_COMMANDS; c++)
        if (strcmp(argv[i], COMMANDS[c].name) == 0) {
            if (taxd_global_init() != TAXD_OK) {
                fprintf(stderr, "taxctl: libcurl failed to initialize\n");
                return TAXCTL_EXIT_INCOMPLETE;
            }
            return COMMANDS[c].run(&g, argc - i, argv + i);
        }
    fprintf(stderr, "taxctl: unknown command %s\n", argv[i]);
    usage(stderr);
    return TAXCTL_EXIT_USAGE;
}
