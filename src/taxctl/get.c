/* taxctl get / list: print resources as JSON (default) or a table.
 *
 *   taxctl get RESOURCE ID [--table]      one object (GET /v1/.../ID)
 *   taxctl get /v1/ANY/PATH [--table]     any route, as given
 *   taxctl list RESOURCE [ID] [--limit N] [--param K=V]... [--table]
 *
 * Resource names map to routes in one table (RESOURCES below); a name is
 * accepted singular or plural. `get` prints the answer's body as the
 * service sent it. `list` prints one JSON array of every item across
 * pages, written page by page as they arrive (each item's own bytes are
 * copied, never re-serialized, so no value is rewritten), never holding
 * more than one page. --table prints the items' scalar fields (table.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "table.h"
#include "taxctl.h"

typedef struct {
    const char *name;     /* plural, as in the API's paths */
    const char *singular;
    const char *get;      /* printf format with one %s (the escaped id), or NULL */
    const char *list;     /* a path, or a format with %s when the list needs an id; or NULL */
} resource;

static const resource RESOURCES[] = {
    {"accounts", "account", "/v1/accounts/%s", "/v1/accounts"},
    {"account-owners", "account-owner", "/v1/account-owners/%s", "/v1/account-owners"},
    {"owners", "owner", "/v1/account-owners/%s", "/v1/account-owners"},
    {"assets", "asset", "/v1/assets/%s", "/v1/assets"},
    {"filers", "filer", "/v1/filers/%s", "/v1/filers"},
    {"transactions", "transaction", "/v1/transactions/external-id/%s",
     "/v1/accounts/%s/transactions"},
    {"transfer-lots", "transfer-lot", "/v1/transfer-lots/transactions/%s", NULL},
    {"tin-validations", "tin-validation", "/v1/tin-validations/%s", NULL},
    {"tax-documentation", "tax-documentation",
     "/v1/account-owners/%s/tax-documentation", NULL},
    {"reports", "report", "/v1/reports/inventory-summary/%s", NULL},
    {"gains-reports", "gains-report", "/v1/reports/gains/%s", NULL},
    {"disposition-methods", "disposition-method", NULL,
     "/v1/accounts/%s/disposition-methods-history"},
    {"gains", "gain", NULL, "/v1/gains"},
    {"inventory", "inventory", NULL, "/v1/inventory"},
    {"inventory-summaries", "inventory-summary", NULL, "/v1/inventory/summaries"},
    {"tax-documents", "tax-document", NULL, "/v1/tax-documents"},
};
#define N_RESOURCES (sizeof RESOURCES / sizeof RESOURCES[0])

static const resource *find_resource(const char *name)
{
    for (size_t i = 0; i < N_RESOURCES; i++)
        if (strcmp(name, RESOURCES[i].name) == 0 || strcmp(name, RESOURCES[i].singular) == 0)
            return &RESOURCES[i];
    return NULL;
}

static void usage(FILE *out, const char *cmd)
{
    if (strcmp(cmd, "get") == 0)
        fprintf(out, "usage: taxctl get RESOURCE ID [--table]\n"
                     "       taxctl get /v1/PATH [--table]\nresources:");
    else
        fprintf(out, "usage: taxctl list RESOURCE [ID] [--limit N] [--param KEY=VALUE]... "
                     "[--table]\nresources:");
    for (size_t i = 0; i < N_RESOURCES; i++) {
        const resource *r = &RESOURCES[i];
        const char *fmt = strcmp(cmd, "get") == 0 ? r->get : r->list;
        if (fmt)
            fprintf(out, " %s%s", r->name, strcmp(cmd, "list") == 0 && strstr(fmt, "%s")
                                               ? " ID" : "");
    }
    fprintf(out, "\n");
}

/* fmt with the escaped id in place of its %s (or fmt as is); malloc'd. */
static char *route_for(const char *fmt, const char *id)
{
    if (!strstr(fmt, "%s"))
        return strdup(fmt);
    char *esc = taxd_escape(id);
    if (!esc)
        return NULL;
    size_t n = strlen(fmt) + strlen(esc) + 1;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, fmt, esc);
    free(esc);
    return path;
}

/* Appends "KEY=VALUE" (both escaped) to *path with ? or &. */
static bool append_param(char **path, const char *key, size_t key_len, const char *value)
{
    char *k = strndup(key, key_len);
    char *ek = k ? taxd_escape(k) : NULL, *ev = taxd_escape(value);
    size_t n = strlen(*path) + (ek ? strlen(ek) : 0) + (ev ? strlen(ev) : 0) + 3;
    char *grown = ek && ev ? malloc(n) : NULL;
    if (grown)
        snprintf(grown, n, "%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', ek, ev);
    free(k);
    free(ek);
    free(ev);
    if (!grown)
        return false;
    free(*path);
    *path = grown;
    return true;
}

static int failed(const char *what, taxd_error *err)
{
    taxctl_print_error(what, err);
    int status = taxctl_exit_for(err);
    taxd_error_clear(err);
    return status;
}

/* ---- get ------------------------------------------------------------------ */

static int print_object(const char *body, bool table)
{
    if (!table) {
        fputs(body, stdout);
        if (!*body || body[strlen(body) - 1] != '\n')
            fputc('\n', stdout);
        return TAXCTL_EXIT_OK;
    }
    json_error_t jerr;
    json_t *root = json_loads(body, 0, &jerr);
    /* most answers wrap the resource in {"data": ...}: the table shows it */
    json_t *data = json_object_get(root, "data");
    if (json_is_object(data) || json_is_array(data)) {
        json_incref(data);
        json_decref(root);
        root = data;
    }
    if (json_is_object(root)) {
        taxctl_table_object(stdout, root);
    } else if (json_is_array(root)) {
        taxctl_table *t = taxctl_table_new(stdout);
        if (t)
            taxctl_table_rows(t, root);
        taxctl_table_free(t);
    } else {
        fputs(body, stdout);
        fputc('\n', stdout);
    }
    json_decref(root);
    return TAXCTL_EXIT_OK;
}

static const struct option GET_OPTS[] = {
    {"table", no_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

int taxctl_get(const taxctl_globals *g, int argc, char **argv)
{
    bool table = false;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", GET_OPTS, NULL)) != -1) {
        switch (o) {
        case 't': table = true; break;
        case 'h': usage(stdout, "get"); return TAXCTL_EXIT_OK;
        default: usage(stderr, "get"); return TAXCTL_EXIT_USAGE;
        }
    }
    char *path = NULL;
    int left = argc - optind;
    if (left == 1 && argv[optind][0] == '/') {
        path = strdup(argv[optind]);
    } else if (left == 2) {
        const resource *r = find_resource(argv[optind]);
        if (!r || !r->get) {
            fprintf(stderr, "taxctl get: no resource %s to get\n", argv[optind]);
            usage(stderr, "get");
            return TAXCTL_EXIT_USAGE;
        }
        path = route_for(r->get, argv[optind + 1]);
    } else {
        usage(stderr, "get");
        return TAXCTL_EXIT_USAGE;
    }
    taxd_client *client = path ? taxctl_client(g) : NULL;
    if (!client) {
        free(path);
        return TAXCTL_EXIT_USAGE;
    }
    taxd_error err = {0};
    char *body = NULL;
    int status = taxd_get(client, path, &body, &err) == TAXD_OK ? print_object(body, table)
                                                                 : failed("get", &err);
    free(body);
    free(path);
    taxd_client_free(client);
    return status;
}

/* ---- list ------------------------------------------------------------------ */

typedef struct {
    long limit;          /* items still to print; -1: no limit */
    long printed;
    taxctl_table *table; /* NULL: JSON */
    bool broken;         /* out of memory or an unreadable page */
} lister;

/* JSON mode: each item's own bytes, found by parsing it in place (the
 * parser reports where the item ended), so nothing is re-serialized and no
 * number goes through a double. Returns the items printed, -1 when data is
 * not an array of JSON values. */
static long splice_items(lister *l, const char *data)
{
    size_t len = strlen(data), at = strspn(data, " \t\r\n");
    if (data[at] != '[')
        return -1;
    at++;
    long n = 0;
    for (;;) {
        at += strspn(data + at, " \t\r\n");
        if (data[at] == ']')
            return n;
        if (n > 0) {
            if (data[at] != ',')
                return -1;
            at++;
            at += strspn(data + at, " \t\r\n");
        }
        if (l->limit >= 0 && n >= l->limit)
            return n;
        json_error_t jerr;
        json_t *item = json_loadb(data + at, len - at, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY,
                                  &jerr);
        if (!item)
            return -1;
        json_decref(item);
        fprintf(stdout, "%s%.*s", l->printed ? ",\n" : "\n", (int)jerr.position, data + at);
        at += (size_t)jerr.position;
        l->printed++;
        n++;
    }
}

/* Prints the items of data, at most l->limit of them. */
static bool on_page(void *userdata, const char *data_json)
{
    lister *l = userdata;
    long n;
    if (l->table) {
        json_error_t jerr;
        json_t *items = json_loads(data_json, 0, &jerr);
        if (!json_is_array(items)) {
            json_decref(items);
            l->broken = true;
            return false;
        }
        while (l->limit >= 0 && json_array_size(items) > (size_t)l->limit)
            json_array_remove(items, json_array_size(items) - 1);
        l->broken = !taxctl_table_rows(l->table, items);
        n = (long)json_array_size(items);
        json_decref(items);
    } else {
        n = splice_items(l, data_json);
        l->broken = n < 0;
    }
    if (l->limit >= 0 && n > 0)
        l->limit -= n;
    fflush(stdout);
    return !l->broken && l->limit != 0;
}

static const struct option LIST_OPTS[] = {
    {"limit", required_argument, NULL, 'l'},
    {"param", required_argument, NULL, 'p'},
    {"table", no_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* The list's path from the positional arguments; NULL after printing why. */
static char *list_path(int argc, char **argv)
{
    int left = argc - optind;
    const resource *r = left >= 1 ? find_resource(argv[optind]) : NULL;
    if (!r || !r->list) {
        fprintf(stderr, "taxctl list: %s\n", left < 1 ? "which resource?" : "no such list");
        usage(stderr, "list");
        return NULL;
    }
    bool needs_id = strstr(r->list, "%s") != NULL;
    if (left != (needs_id ? 2 : 1)) {
        fprintf(stderr, "taxctl list %s: %s\n", r->name,
                needs_id ? "give the account id" : "unexpected argument");
        return NULL;
    }
    return route_for(r->list, needs_id ? argv[optind + 1] : "");
}

int taxctl_list(const taxctl_globals *g, int argc, char **argv)
{
    lister l = {.limit = -1};
    bool table = false;
    const char *params[32];
    size_t n_params = 0;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", LIST_OPTS, NULL)) != -1) {
        char *end = NULL;
        switch (o) {
        case 'l':
            l.limit = strtol(optarg, &end, 10);
            if (!*optarg || *end || l.limit < 1) {
                fprintf(stderr, "taxctl list: --limit takes a positive number\n");
                return TAXCTL_EXIT_USAGE;
            }
            break;
        case 'p':
            if (!strchr(optarg, '=') || n_params == sizeof params / sizeof params[0]) {
                fprintf(stderr, "taxctl list: --param takes KEY=VALUE\n");
                return TAXCTL_EXIT_USAGE;
            }
            params[n_params++] = optarg;
            break;
        case 't': table = true; break;
        case 'h': usage(stdout, "list"); return TAXCTL_EXIT_OK;
        default: usage(stderr, "list"); return TAXCTL_EXIT_USAGE;
        }
    }
    char *path = list_path(argc, argv);
    if (!path)
        return TAXCTL_EXIT_USAGE;
    bool ok = true;
    for (size_t i = 0; ok && i < n_params; i++) {
        const char *eq = strchr(params[i], '=');
        ok = append_param(&path, params[i], (size_t)(eq - params[i]), eq + 1);
    }
    if (ok && l.limit > 0) {
        char page[24];
        snprintf(page, sizeof page, "%ld", l.limit < 100 ? l.limit : 100);
        ok = append_param(&path, "limit", 5, page);
    }
    taxd_client *client = ok ? taxctl_client(g) : NULL;
    if (!client) {
        free(path);
        return ok ? TAXCTL_EXIT_USAGE : TAXCTL_EXIT_INCOMPLETE;
    }
    if (table && !(l.table = taxctl_table_new(stdout))) {
        free(path);
        taxd_client_free(client);
        return TAXCTL_EXIT_INCOMPLETE;
    }
    if (!table)
        fputc('[', stdout);
    taxd_error err = {0};
    taxd_code rc = taxd_list(client, path, on_page, &l, &err);
    int status = TAXCTL_EXIT_OK;
    if (!table)
        fputs(l.printed ? "\n]\n" : "]\n", stdout);
    if (l.broken) {
        fprintf(stderr, "taxctl list: a page could not be read\n");
        status = TAXCTL_EXIT_INCOMPLETE;
    } else if (rc != TAXD_OK && !(rc == TAXD_E_ABORTED && l.limit == 0)) {
        status = failed("list", &err);
    }
    taxd_error_clear(&err);
    taxctl_table_free(l.table);
    free(path);
    taxd_client_free(client);
    return status;
}
