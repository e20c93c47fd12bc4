/* taxctl login: stores the service URL and client credentials (config.h).
 * The secret is read from a prompt with echo off, or from standard input
 * when it is not a terminal: never from the command line, where ps and the
 * shell's history would show it. Before writing, a token is minted with the
 * credentials, so a typo is found now and not at the first import. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: taxctl [--url URL] login --client-id ID [--tenant-id T] [--ca-file F] "
                 "[--no-check]\n"
                 "The client secret is asked for (or read from standard input).\n");
}

/* One line of standard input, echo off on a terminal; malloc'd or NULL. */
static char *read_secret(void)
{
    bool tty = isatty(STDIN_FILENO);
    struct termios old, quiet;
    if (tty) {
        fprintf(stderr, "client secret: ");
        fflush(stderr);
        if (tcgetattr(STDIN_FILENO, &old) == 0) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        } else {
            tty = false;
        }
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fprintf(stderr, "\n");
    }
    if (n <= 0) {
        free(line);
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

int taxctl_login(const taxctl_globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"client-id", required_argument, NULL, 'i'}, {"tenant-id", required_argument, NULL, 't'},
        {"ca-file", required_argument, NULL, 'c'},   {"no-check", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},            {0},
    };
    const char *client_id = getenv("TAXD_CLIENT_ID"), *tenant_id = NULL;
    const char *ca_file = g->ca_file;
    bool check = true;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'i': client_id = optarg; break;
        case 't': tenant_id = optarg; break;
        case 'c': ca_file = optarg; break;
        case 'n': check = false; break;
        case 'h': usage(stdout); return TAXCTL_EXIT_OK;
        default: usage(stderr); return TAXCTL_EXIT_USAGE;
        }
    }
    const char *url = g->url ? g->url : getenv("TAXD_URL");
    if (optind != argc || !url || !client_id) {
        fprintf(stderr, "taxctl login: %s\n", optind != argc ? "unexpected argument"
                                              : !url ? "give --url URL (or TAXD_URL)"
                                                     : "give --client-id ID");
        usage(stderr);
        return TAXCTL_EXIT_USAGE;
    }
    char *secret = getenv("TAXD_CLIENT_SECRET") ? strdup(getenv("TAXD_CLIENT_SECRET"))
                                                : read_secret();
    if (!secret || !*secret) {
        fprintf(stderr, "taxctl login: no client secret was given\n");
        free(secret);
        return TAXCTL_EXIT_USAGE;
    }
    taxctl_config cfg = {.url = dup_or_null(url), .client_id = dup_or_null(client_id),
                         .client_secret = secret, .tenant_id = dup_or_null(tenant_id),
                         .ca_file = dup_or_null(ca_file)};
    int status = TAXCTL_EXIT_OK;
    if (check) {
        taxd_client_options co = {.base_url = cfg.url, .client_id = cfg.client_id,
                                  .client_secret = cfg.client_secret, .tenant_id = cfg.tenant_id,
                                  .ca_file = cfg.ca_file, .user_agent = "taxctl/" TAXD_CLIENT_VERSION};
        taxd_error err = {0};
        taxd_client *client = taxd_client_new(&co, &err);
        char *token = NULL;
        if (client && taxd_client_token(client, &token, &err) == TAXD_OK) {
            explicit_bzero(token, strlen(token));
        } else {
            taxctl_print_error("login", &err);
            status = taxctl_exit_for(&err);
        }
        free(token);
        taxd_client_free(client);
        taxd_error_clear(&err);
    }
    char *path = status == TAXCTL_EXIT_OK ? taxctl_config_path(g) : NULL;
    if (status == TAXCTL_EXIT_OK) {
        if (path && taxctl_config_write(path, &cfg))
            fprintf(stderr, "taxctl: logged in to %s; credentials saved in %s (mode 0600)\n",
                    cfg.url, path);
        else
            status = TAXCTL_EXIT_USAGE;
    }
    free(path);
    taxctl_config_clear(&cfg);
    return status;
}
