/* taxctl post / patch / delete: a raw write for what taxctl has no command
 * of its own (creating account owners and accounts before an import, most
 * of all). The body is JSON from the argument, from @FILE, or from standard
 * input; the answer's body is printed as it came. A POST is a create: it is
 * never sent twice blindly. For the collections whose records are keyed by
 * a field of the body (READBACKS), a lost answer is read back from the
 * record's own route and a 404 there lets the create go again; elsewhere a
 * lost answer is reported (exit 3). PATCH and DELETE are sent again only
 * when nothing reached the service. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "taxctl.h"

/* Creates whose record can be read back at COLLECTION/<the body's KEY>. */
static const struct {
    const char *collection, *key;
} READBACKS[] = {
    {"/v1/accounts", "id"},
    {"/v1/account-owners", "id"},
    {"/v1/filers", "id"},
    {"/v1/assets", "code"},
};

/* The readback path of a create of body at path, malloc'd; NULL when the
 * route has none (or the body names no key). */
static char *readback_path(const char *path, const char *body)
{
    const char *key = NULL;
    for (size_t i = 0; i < sizeof READBACKS / sizeof READBACKS[0]; i++)
        if (strcmp(path, READBACKS[i].collection) == 0)
            key = READBACKS[i].key;
    if (!key)
        return NULL;
    json_t *doc = json_loads(body, 0, NULL);
    const char *id = json_string_value(json_object_get(doc, key));
    char *escaped = id && *id ? taxd_escape(id) : NULL;
    char *out = NULL;
    if (escaped && asprintf(&out, "%s/%s", path, escaped) < 0)
        out = NULL;
    free(escaped);
    json_decref(doc);
    return out;
}

static void usage(FILE *out, const char *method)
{
    fprintf(out, "usage: taxctl %s /v1/PATH [JSON | @FILE | -]\n"
                 "The body defaults to standard input for post and patch; delete sends none.\n",
            method);
}

/* The whole of f, malloc'd and NUL-terminated; NULL on error (errno set). */
static char *slurp(FILE *f)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (ferror(f)) {
            free(buf);
            return NULL;
        }
        if (feof(f))
            break;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static char *read_body(const char *arg)
{
    if (arg && arg[0] != '@' && strcmp(arg, "-") != 0)
        return strdup(arg);
    if (!arg || strcmp(arg, "-") == 0)
        return slurp(stdin);
    FILE *f = fopen(arg + 1, "r");
    if (!f)
        return NULL;
    char *body = slurp(f);
    fclose(f);
    return body;
}

static int write_request(const taxctl_globals *g, const char *method, int argc, char **argv)
{
    bool wants_body = strcmp(method, "DELETE") != 0;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout, argv[0]);
        return TAXCTL_EXIT_OK;
    }
    if (argc < 2 || argv[1][0] != '/' || argc > (wants_body ? 3 : 2)) {
        usage(stderr, argv[0]);
        return TAXCTL_EXIT_USAGE;
    }
    char *body = wants_body ? read_body(argc == 3 ? argv[2] : NULL) : NULL;
    if (wants_body && !body) {
        fprintf(stderr, "taxctl %s: cannot read the body: %s\n", argv[0], strerror(errno));
        return TAXCTL_EXIT_USAGE;
    }
    taxd_client *client = taxctl_client(g);
    if (!client) {
        free(body);
        return TAXCTL_EXIT_USAGE;
    }
    bool create = strcmp(method, "POST") == 0;
    char *readback = create ? readback_path(argv[1], body) : NULL;
    taxd_request req = {.method = method, .path = argv[1], .body = body,
                        .flags = create ? TAXD_CREATE : 0, .readback_path = readback};
    taxd_response resp = {0};
    taxd_error err = {0};
    int status = TAXCTL_EXIT_OK;
    if (taxd_send(client, &req, &resp, &err) == TAXD_OK) {
        if (resp.body_len)
            printf("%s\n", resp.body);
    } else {
        taxctl_print_error(argv[0], &err);
        status = taxctl_exit_for(&err);
    }
    taxd_response_clear(&resp);
    taxd_error_clear(&err);
    taxd_client_free(client);
    free(readback);
    free(body);
    return status;
}

int taxctl_post(const taxctl_globals *g, int argc, char **argv)
{
    return write_request(g, "POST", argc, argv);
}

int taxctl_patch(const taxctl_globals *g, int argc, char **argv)
{
    return write_request(g, "PATCH", argc, argv);
}

int taxctl_delete(const taxctl_globals *g, int argc, char **argv)
{
    return write_request(g, "DELETE", argc, argv);
}
