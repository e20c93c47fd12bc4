/* taxctl report: trigger a report, wait for it with a progress line,
 * download it, print where it went and what its metadata says.
 *
 *   taxctl report inventory-summary [--accounts FILE] [--format csv|jsonl]
 *                                   -o FILE [--timeout SECONDS]
 *   taxctl report gains --tax-year YEAR [same options]
 *
 * --accounts FILE holds one account id per line (blank lines skipped).
 * Progress goes to stderr: on a terminal one line redrawn in place; else
 * one line per phase, so a log stays short. stdout gets the path and the
 * metadata only, for scripts. Exit status: 0 downloaded, 1 refused or the
 * report failed, 2 usage, 3 no answer or still running at --timeout (the
 * report's id is printed so `taxctl get reports ID` can follow it). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "taxctl.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: taxctl report inventory-summary [--accounts FILE] [--format csv|jsonl] "
                 "-o FILE [--timeout SECONDS]\n"
                 "       taxctl report gains --tax-year YEAR [--accounts FILE] "
                 "[--format csv|jsonl] -o FILE [--timeout SECONDS]\n");
}

/* Appends the ids of path (one a line) to ids; false after printing why. */
static bool read_accounts(const char *path, json_t *ids)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (*line && json_array_append_new(ids, json_string(line)) != 0) {
            fprintf(stderr, "taxctl report: %s: an id is not UTF-8: %s\n", path, line);
            free(line);
            fclose(f);
            return false;
        }
    }
    free(line);
    fclose(f);
    if (json_array_size(ids) == 0) {
        fprintf(stderr, "taxctl report: %s holds no account id\n", path);
        return false;
    }
    return true;
}

typedef struct {
    bool tty;
    char last_phase[16];
    int polls;
} progress_line;

static bool on_progress(void *userdata, const char *phase, int64_t done, int64_t total)
{
    progress_line *p = userdata;
    bool changed = strcmp(p->last_phase, phase) != 0;
    snprintf(p->last_phase, sizeof p->last_phase, "%s", phase);
    bool downloading = strcmp(phase, "downloading") == 0;
    if (!downloading)
        p->polls++;
    if (p->tty) {
        if (downloading && total > 0)
            fprintf(stderr, "\r\033[Kreport: downloading %lld of %lld bytes (%lld%%)",
                    (long long)done, (long long)total, (long long)(done * 100 / total));
        else if (downloading)
            fprintf(stderr, "\r\033[Kreport: downloading %lld bytes", (long long)done);
        else
            fprintf(stderr, "\r\033[Kreport: %s (poll %d)", phase, p->polls);
        fflush(stderr);
    } else if (changed) {
        fprintf(stderr, "report: %s\n", phase);
    }
    return true;
}

/* The metadata of the completed status, one "key: value" line each; a
 * nested object's arrays (skipped_account_ids.*) as their count and ids. */
static void print_metadata(const char *status_json)
{
    json_error_t jerr;
    json_t *root = status_json ? json_loads(status_json, 0, &jerr) : NULL;
    json_t *meta = json_object_get(root, "metadata");
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (json_is_object(v)) {
            const char *sub;
            json_t *ids;
            json_object_foreach(v, sub, ids) {
                char *text = json_dumps(ids, JSON_COMPACT | JSON_ENCODE_ANY);
                printf("%s.%s: %zu %s\n", key, sub, json_array_size(ids), text ? text : "");
                free(text);
            }
        } else {
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            printf("%s: %s\n", key, text ? text : "");
            free(text);
        }
    }
    json_decref(root);
}

typedef struct {
    taxd_report_kind kind;
    const char *kind_name;
    const char *accounts, *format, *output;
    long timeout_s;
    long tax_year;
} report_args;

/* Parses argv into a; false after printing why. */
static bool parse_args(int argc, char **argv, report_args *a, bool *help)
{
    static const struct option opts[] = {
        {"accounts", required_argument, NULL, 'a'}, {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},   {"timeout", required_argument, NULL, 'T'},
        {"tax-year", required_argument, NULL, 'y'}, {"help", no_argument, NULL, 'h'},
        {0},
    };
    int o;
    char *end;
    optind = 1;
    while ((o = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        switch (o) {
        case 'a': a->accounts = optarg; break;
        case 'f': a->format = optarg; break;
        case 'o': a->output = optarg; break;
        case 'T':
            a->timeout_s = strtol(optarg, &end, 10);
            if (!*optarg || *end || a->timeout_s < 0)
                return fprintf(stderr, "taxctl report: --timeout takes seconds\n"), false;
            break;
        case 'y':
            a->tax_year = strtol(optarg, &end, 10);
            if (!*optarg || *end)
                return fprintf(stderr, "taxctl report: --tax-year takes a year\n"), false;
            break;
        case 'h': *help = true; return true;
        default: return false;
        }
    }
    if (optind + 1 != argc)
        return fprintf(stderr, "taxctl report: which report? (inventory-summary or gains)\n"),
               false;
    a->kind_name = argv[optind];
    if (strcmp(a->kind_name, "inventory-summary") == 0)
        a->kind = TAXD_REPORT_INVENTORY_SUMMARY;
    else if (strcmp(a->kind_name, "gains") == 0)
        a->kind = TAXD_REPORT_GAINS;
    else
        return fprintf(stderr, "taxctl report: no report %s\n", a->kind_name), false;
    if (a->kind == TAXD_REPORT_GAINS && !a->tax_year)
        return fprintf(stderr, "taxctl report gains: give --tax-year YEAR\n"), false;
    if (a->kind != TAXD_REPORT_GAINS && a->tax_year)
        return fprintf(stderr, "taxctl report: --tax-year is for gains\n"), false;
    if (a->format && strcmp(a->format, "csv") != 0 && strcmp(a->format, "jsonl") != 0)
        return fprintf(stderr, "taxctl report: --format is csv or jsonl\n"), false;
    if (!a->output)
        return fprintf(stderr, "taxctl report: give -o FILE\n"), false;
    return true;
}

/* The trigger's body, malloc'd; NULL after printing why. */
static char *trigger_body(const report_args *a)
{
    json_t *body = json_object();
    if (a->format)
        json_object_set_new(body, "format", json_string(a->format));
    if (a->tax_year)
        json_object_set_new(body, "tax_year", json_integer(a->tax_year));
    if (a->accounts) {
        json_t *ids = json_array();
        json_object_set_new(body, "account_ids", ids);
        if (!read_accounts(a->accounts, ids)) {
            json_decref(body);
            return NULL;
        }
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

static int failed(const char *what, taxd_error *err, progress_line *p)
{
    if (p->tty && p->last_phase[0])
        fputc('\n', stderr);
    taxctl_print_error(what, err);
    return taxctl_exit_for(err);
}

static int run(taxd_client *client, const report_args *a, const char *body)
{
    progress_line p = {.tty = isatty(STDERR_FILENO)};
    taxd_error err = {0};
    char *id = NULL, *status = NULL;
    int rc = TAXCTL_EXIT_OK;
    if (taxd_report_trigger(client, a->kind, body, &id, &err) != TAXD_OK) {
        rc = failed("report trigger", &err, &p);
        if (err.code == TAXD_E_TRANSPORT || err.code == TAXD_E_TIMEOUT)
            fprintf(stderr, "taxctl: the trigger's answer was lost: a report may have been "
                            "started; it is not triggered again\n");
        goto out;
    }
    fprintf(stderr, "report: %s %s triggered\n", a->kind_name, id);
    taxd_code w = taxd_report_wait(client, a->kind, id, a->timeout_s * 1000, on_progress, &p,
                                   &status, &err);
    if (w != TAXD_OK) {
        rc = failed("report", &err, &p);
        if (w == TAXD_E_TIMEOUT)
            fprintf(stderr, "taxctl: report %s is still running: `taxctl get %s %s`\n", id,
                    a->kind == TAXD_REPORT_GAINS ? "gains-reports" : "reports", id);
        goto out;
    }
    if (taxd_report_download(client, a->kind, id, a->output, on_progress, &p, &err) != TAXD_OK) {
        rc = failed("report download", &err, &p);
        goto out;
    }
    if (p.tty)
        fputc('\n', stderr);
    struct stat st;
    long long size = stat(a->output, &st) == 0 ? (long long)st.st_size : -1;
    printf("%s\nreport_id: %s\nbytes: %lld\n", a->output, id, size);
    print_metadata(status);
out:
    taxd_error_clear(&err);
    free(id);
    free(status);
    return rc;
}

int taxctl_report(const taxctl_globals *g, int argc, char **argv)
{
    report_args a = {0};
    bool help = false;
    if (!parse_args(argc, argv, &a, &help)) {
        usage(stderr);
        return TAXCTL_EXIT_USAGE;
    }
    if (help) {
        usage(stdout);
        return TAXCTL_EXIT_OK;
    }
    char *body = trigger_body(&a);
    if (!body)
        return TAXCTL_EXIT_USAGE;
    taxd_client *client = taxctl_client(g);
    int rc = client ? run(client, &a, body) : TAXCTL_EXIT_USAGE;
    taxd_client_free(client);
    free(body);
    return rc;
}
