/* taxctl: the command-line tool on libtaxdclient. Each command is one file
 * (login.c, import.c, report.c, get.c, webhooks.c, post.c) with an entry point of
 * the shape below; main.c parses the global options and dispatches. taxctl
 * includes <taxd/client.h> and its own headers only. */
#ifndef TAXCTL_TAXCTL_H
#define TAXCTL_TAXCTL_H

#include <stdbool.h>

#include <taxd/client.h>

/* Exit statuses, the same for every command (taxctl(1), EXIT STATUS). */
enum {
    TAXCTL_EXIT_OK = 0,         /* everything was done */
    TAXCTL_EXIT_REFUSED = 1,    /* the service refused some or all of it */
    TAXCTL_EXIT_USAGE = 2,      /* bad command line, file or configuration */
    TAXCTL_EXIT_INCOMPLETE = 3, /* stopped before the end: run it again */
};

/* The options every command takes, before the command's name. */
typedef struct {
    const char *url;         /* --url, else TAXD_URL, else the config file */
    const char *config_path; /* --config, else TAXCTL_CONFIG, else ~/.config/taxctl/config */
    const char *ca_file;     /* --ca-file: the service's CA for an https URL */
    bool verbose;            /* --verbose: request and response lines on stderr */
} taxctl_globals;

/* A client from the configuration file written by `taxctl login`, with
 * --url / TAXD_URL and TAXD_CLIENT_ID / TAXD_CLIENT_SECRET overriding it.
 * NULL after printing why (exit TAXCTL_EXIT_USAGE). */
taxd_client *taxctl_client(const taxctl_globals *g);

/* Prints "taxctl: WHAT: <message> (status S, request id R)" to stderr,
 * and the issues when there are some. */
void taxctl_print_error(const char *what, const taxd_error *err);

/* The exit status a failed call deserves: TAXCTL_EXIT_REFUSED for an answer
 * (4xx), TAXCTL_EXIT_INCOMPLETE for no answer, 5xx or a timeout. */
int taxctl_exit_for(const taxd_error *err);

typedef int (*taxctl_command_fn)(const taxctl_globals *g, int argc, char **argv);

int taxctl_login(const taxctl_globals *g, int argc, char **argv);
int taxctl_import(const taxctl_globals *g, int argc, char **argv);
int taxctl_report(const taxctl_globals *g, int argc, char **argv);
int taxctl_get(const taxctl_globals *g, int argc, char **argv);
int taxctl_list(const taxctl_globals *g, int argc, char **argv);
int taxctl_webhooks(const taxctl_globals *g, int argc, char **argv);
int taxctl_post(const taxctl_globals *g, int argc, char **argv);
int taxctl_patch(const taxctl_globals *g, int argc, char **argv);
int taxctl_delete(const taxctl_globals *g, int argc, char **argv);

#endif
