/* taxctl webhooks: receive taxd's deliveries locally, or check one.
 *
 *   listen  an HTTPS receiver (libmicrohttpd with TLS; taxd delivers only to
 *           https URLs) that verifies each delivery's signature over the raw
 *           body against the secrets it was given, prints one JSON line per
 *           delivery on stdout and answers 200 {"ok":true}. A missing or bad
 *           signature, a body that is not an envelope, or a body over 1 MiB
 *           is answered 400 (413 for the size) with a line on stderr, and a
 *           method other than POST 405: never 401, 403 or 407, which taxd
 *           takes as "deauthorize this subscription" (spec § Response rules
 *           for the customer endpoint) — the habit of `stripe listen`.
 *   verify  one body on stdin against --signature: "valid" (exit 0) or
 *           "invalid signature" (exit 1).
 *
 * Secrets come from --secret (repeatable: during a rotation give both) and
 * from TAXD_WEBHOOK_SECRETS (comma-separated), which keeps them out of the
 * process list where argv is visible to every user. They are never printed.
 * The library (taxd_webhook_verify, taxd_webhook_parse) does the checking;
 * this file is the HTTP and command-line shell around it. */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "taxctl.h"
#include "tls.h"

#define MAX_BODY (1u << 20)       /* 1 MiB: taxd's events are a few hundred bytes */
/* A declared body larger than this is refused before it is read (the
 * sender may see a reset); a smaller excess is read and dropped so that
 * the sender gets the 413 itself. */
#define MAX_DISCARD (16u << 20)
#define MAX_SECRETS 16
#define MAX_VERIFY_BODY (64u << 20)

/* ---- secrets --------------------------------------------------------------- */

typedef struct {
    const char *list[MAX_SECRETS];
    size_t count;
    char *env_copy; /* TAXD_WEBHOOK_SECRETS, split in place */
} secrets;

static bool secrets_add(secrets *s, const char *secret)
{
    if (secret[0] == '\0')
        return true;
    if (s->count == MAX_SECRETS) {
        fprintf(stderr, "taxctl webhooks: at most %d secrets\n", MAX_SECRETS);
        return false;
    }
    s->list[s->count++] = secret;
    return true;
}

/* Adds the secrets of TAXD_WEBHOOK_SECRETS (comma-separated, spaces around
 * each trimmed). */
static bool secrets_from_env(secrets *s)
{
    const char *env = getenv("TAXD_WEBHOOK_SECRETS");
    if (env == NULL || env[0] == '\0')
        return true;
    if ((s->env_copy = strdup(env)) == NULL)
        return false;
    char *save = NULL;
    for (char *t = strtok_r(s->env_copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ' || *t == '\t')
            t++;
        size_t n = strlen(t);
        while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
            t[--n] = '\0';
        if (!secrets_add(s, t))
            return false;
    }
    return true;
}

static void secrets_clear(secrets *s)
{
    free(s->env_copy);
    memset(s, 0, sizeof *s);
}

/* ---- usage ----------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: taxctl webhooks listen --port N --secret S [--secret S2] [--cert FILE --key FILE]\n"
            "                              [--dir DIR] [--bind ADDR] [--status CODE]\n"
            "       taxctl webhooks verify --secret S [--secret S2] --signature HEADER < body\n"
            "Secrets may also come from TAXD_WEBHOOK_SECRETS (comma-separated), out of sight of ps.\n"
            "See man taxctl-webhooks.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "taxctl webhooks: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return TAXCTL_EXIT_USAGE;
}

/* A whole number in [lo, hi], or -1. */
static long parse_number(const char *text, long lo, long hi)
{
    char *end;
    long v = strtol(text, &end, 10);
    return (text[0] != '\0' && *end == '\0' && v >= lo && v <= hi) ? v : -1;
}

/* ---- listen: one delivery ---------------------------------------------------- */

typedef struct {
    const secrets *secrets;
    int status;   /* the answer to a verified delivery */
    bool verbose;
    /* Event ids seen, so a repeat is marked (delivery is at least once).
     * MHD's one internal polling thread runs every handler: no lock. */
    taxd_dedup *seen;
} listener;

enum { SEEN_EVENT_IDS = 100000 }; /* about 10 MB of ids at most */

/* One request's body, read as it arrives (MHD calls the handler per chunk). */
typedef struct {
    char *body;
    size_t len, cap;
    size_t received; /* every byte of the body, kept or dropped */
    bool too_large;
} request;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *json)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "POST");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* A header value as a JSON string (or null), malloc'd. */
static char *json_text(const char *value)
{
    json_t *s = value != NULL ? json_string(value) : NULL;
    char *out = s != NULL ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    return out != NULL ? out : strdup("null");
}

static const char *trace_of(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-trace-id");
    return t != NULL ? t : "(no x-trace-id)";
}

/* Refuses a delivery: a line on stderr saying why, and status (400 or 413). */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *why)
{
    fprintf(stderr, "taxctl webhooks listen: delivery %s refused (%u): %s\n", trace_of(c), status,
            why);
    char *body = NULL;
    char *quoted = json_text(why);
    bool built = quoted != NULL && asprintf(&body, "{\"ok\":false,\"error\":%s}", quoted) >= 0;
    free(quoted);
    enum MHD_Result ok = reply(c, status, built ? body : "{\"ok\":false}");
    free(body);
    return ok;
}

static void now_iso(char out[32])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* Writes ,"repeated_event_ids":[...] for the events of d already seen
 * (and records the others); nothing when none was. */
static void put_repeats(FILE *f, taxd_dedup *seen, const taxd_webhook_delivery *d)
{
    size_t repeats = 0;
    for (size_t i = 0; i < d->count; i++) {
        if (d->events[i].event_id == NULL || !taxd_dedup_seen(seen, d->events[i].event_id))
            continue;
        char *id = json_text(d->events[i].event_id);
        fprintf(f, "%s%s", repeats++ == 0 ? ",\"repeated_event_ids\":[" : ",", id);
        free(id);
    }
    if (repeats > 0)
        fputc(']', f);
}

/* The line of a verified delivery:
 * {"received_at","trace_id","verified":true,"timestamp","events":[...]},
 * the events as the sender wrote them (taxd_webhook_parse keeps their bytes),
 * and "repeated_event_ids" when some event arrived before. */
static char *delivery_line(taxd_dedup *seen, const char *trace_id, const taxd_webhook_delivery *d)
{
    char received[32];
    now_iso(received);
    char *trace = json_text(trace_id), *stamp = json_text(d->timestamp);
    char *line = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&line, &size);
    if (f != NULL && trace != NULL && stamp != NULL) {
        fprintf(f, "{\"received_at\":\"%s\",\"trace_id\":%s,\"verified\":true,\"timestamp\":%s,"
                   "\"events\":[", received, trace, stamp);
        for (size_t i = 0; i < d->count; i++)
            fprintf(f, "%s%s", i > 0 ? "," : "", d->events[i].json);
        fputc(']', f);
        put_repeats(f, seen, d);
        fputs("}\n", f);
    }
    if (f != NULL && fclose(f) != 0) {
        free(line);
        line = NULL;
    }
    free(trace);
    free(stamp);
    return line;
}

static enum MHD_Result deliver(listener *l, struct MHD_Connection *c, const request *r)
{
    const char *signature = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-service-signature");
    if (signature == NULL || signature[0] == '\0')
        return refuse(c, MHD_HTTP_BAD_REQUEST, "no x-service-signature header");
    if (!taxd_webhook_verify(signature, l->secrets->list, l->secrets->count, r->body, r->len))
        return refuse(c, MHD_HTTP_BAD_REQUEST, "the signature matches none of the secrets");
    taxd_webhook_delivery d;
    taxd_error err = {0};
    if (taxd_webhook_parse(r->body, r->len, &d, &err) != TAXD_OK) {
        enum MHD_Result ok = refuse(c, MHD_HTTP_BAD_REQUEST,
                                    err.message != NULL ? err.message : "malformed body");
        taxd_error_clear(&err);
        return ok;
    }
    char *line = delivery_line(l->seen, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-trace-id"),
                               &d);
    taxd_webhook_delivery_clear(&d);
    if (line == NULL)
        return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "{\"ok\":false,\"error\":\"out of memory\"}");
    fputs(line, stdout);
    fflush(stdout); /* one line per delivery, at once, for a pipe too */
    free(line);
    if (l->status >= 200 && l->status < 300)
        return reply(c, (unsigned)l->status, "{\"ok\":true}");
    return reply(c, (unsigned)l->status, "{\"ok\":false,\"error\":\"--status\"}");
}

/* Keeps up to MAX_BODY bytes; beyond it the rest is read and dropped, and
 * the 413 is answered once the body has ended (an answer queued mid-body
 * reaches the sender as a reset, not a 413). */
static void take_chunk(request *r, const char *data, size_t n)
{
    r->received += n;
    if (r->too_large || n > MAX_BODY - r->len) {
        r->too_large = true;
        return;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap == 0 ? 4096 : r->cap;
        while (cap < r->len + n)
            cap *= 2;
        char *grown = realloc(r->body, cap);
        if (grown == NULL) {
            r->too_large = true;
            return;
        }
        r->body = grown;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
}

static bool declared_far_too_large(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl != NULL && strtoull(cl, NULL, 10) > MAX_DISCARD;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    (void)version;
    listener *l = cls;
    request *r = *state;
    if (r == NULL) { /* the first call: headers only */
        if (l->verbose)
            fprintf(stderr, "< %s %s x-trace-id: %s\n", method, url, trace_of(c));
        if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
            fprintf(stderr, "taxctl webhooks listen: %s %s refused (405): only POST\n", method, url);
            return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "{\"ok\":false,\"error\":\"only POST\"}");
        }
        if (declared_far_too_large(c))
            return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "the body is over 1 MiB");
        if ((r = calloc(1, sizeof *r)) == NULL)
            return MHD_NO;
        *state = r;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        take_chunk(r, upload, *upload_size);
        *upload_size = 0;
        return r->received <= MAX_DISCARD ? MHD_YES : MHD_NO; /* MHD_NO closes it */
    }
    if (r->too_large)
        return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "the body is over 1 MiB");
    return deliver(l, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    request *r = *state;
    if (r != NULL) {
        free(r->body);
        free(r);
        *state = NULL;
    }
}

/* ---- listen: the server ------------------------------------------------------ */

typedef struct {
    long port;
    const char *bind, *cert, *key, *dir;
    int status;
} listen_options;

static struct MHD_Daemon *start_daemon(const listen_options *o, listener *l, const tls_material *m,
                                       struct sockaddr_storage *sa)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG;
    if (sa->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, l,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)sa,
                            MHD_OPTION_HTTPS_MEM_KEY, m->key_pem,
                            MHD_OPTION_HTTPS_MEM_CERT, m->cert_pem,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                            MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                            MHD_OPTION_CONNECTION_LIMIT, 64u,
                            MHD_OPTION_END);
}

static bool bind_address(const char *text, long port, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        return true;
    }
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        return true;
    }
    return false;
}

static bool load_material(const listen_options *o, tls_material *m)
{
    char why[512];
    if (o->cert != NULL) {
        if (tls_from_files(o->cert, o->key, m, why, sizeof why))
            return true;
        fprintf(stderr, "taxctl webhooks listen: %s\n", why);
        return false;
    }
    char *dir = o->dir != NULL ? strdup(o->dir) : tls_default_dir();
    if (dir == NULL) {
        fprintf(stderr, "taxctl webhooks listen: no --dir, and neither XDG_CACHE_HOME nor HOME is set\n");
        return false;
    }
    bool ok = tls_local(dir, m, why, sizeof why);
    if (!ok)
        fprintf(stderr, "taxctl webhooks listen: %s\n", why);
    free(dir);
    return ok;
}

/* Runs until SIGINT or SIGTERM. They are blocked before MHD starts its
 * thread (which inherits the mask) and taken here with sigwait, so no
 * handler runs inside MHD or stdio. */
static int serve(const listen_options *o, listener *l)
{
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
        fprintf(stderr, "taxctl webhooks listen: this libmicrohttpd was built without TLS "
                        "(GnuTLS); use a build with HTTPS support\n");
        return TAXCTL_EXIT_INCOMPLETE;
    }
    struct sockaddr_storage sa;
    if (!bind_address(o->bind, o->port, &sa))
        return usage_error("--bind %s is not an IPv4 or IPv6 address", o->bind);
    tls_material m;
    if (!load_material(o, &m))
        return TAXCTL_EXIT_USAGE;
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *d = start_daemon(o, l, &m, &sa);
    if (d == NULL) {
        fprintf(stderr, "taxctl webhooks listen: cannot listen on %s port %ld (in use?)\n", o->bind,
                o->port);
        tls_material_clear(&m);
        return TAXCTL_EXIT_INCOMPLETE;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    bool v6 = sa.ss_family == AF_INET6;
    if (m.ca_path != NULL)
        fprintf(stderr, "taxctl webhooks listen: CA certificate %s (%s): give it to taxd as "
                        "--webhook-ca-file\n", m.ca_path, m.made ? "new" : "reused");
    fprintf(stderr, "taxctl webhooks listen: listening on https://%s%s%s:%u/ (any path), %zu secret(s)\n",
            v6 ? "[" : "", o->bind, v6 ? "]" : "", info != NULL ? info->port : (unsigned)o->port,
            l->secrets->count);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    tls_material_clear(&m);
    fprintf(stderr, "taxctl webhooks listen: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return TAXCTL_EXIT_OK;
}

static int cmd_listen(const taxctl_globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'}, {"secret", required_argument, NULL, 's'},
        {"cert", required_argument, NULL, 'c'}, {"key", required_argument, NULL, 'k'},
        {"dir", required_argument, NULL, 'd'},  {"bind", required_argument, NULL, 'b'},
        {"status", required_argument, NULL, 'S'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    listen_options o = {.port = -1, .bind = "127.0.0.1", .status = 200};
    secrets s = {0};
    int rc = TAXCTL_EXIT_USAGE, opt;
    const char *port_text = NULL, *status_text = NULL;
    optind = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'p': port_text = optarg; break;
        case 's': if (!secrets_add(&s, optarg)) goto out; break;
        case 'c': o.cert = optarg; break;
        case 'k': o.key = optarg; break;
        case 'd': o.dir = optarg; break;
        case 'b': o.bind = optarg; break;
        case 'S': status_text = optarg; break;
        case 'h': usage(stdout); rc = TAXCTL_EXIT_OK; goto out;
        default: usage(stderr); goto out;
        }
    }
    if (optind < argc) {
        rc = usage_error("unexpected argument %s", argv[optind]);
        goto out;
    }
    if (port_text == NULL || (o.port = parse_number(port_text, 0, 65535)) < 0) {
        rc = usage_error("--port N is required (0 to 65535; 0 picks a free port)");
        goto out;
    }
    if (status_text != NULL) {
        o.status = (int)parse_number(status_text, 200, 599);
        /* 401, 403 and 407 would deauthorize the subscription in taxd */
        if (o.status < 0 || o.status == 401 || o.status == 403 || o.status == 407) {
            rc = usage_error("--status %s: 200 to 599, never 401, 403 or 407", status_text);
            goto out;
        }
    }
    if ((o.cert == NULL) != (o.key == NULL)) {
        rc = usage_error("--cert and --key go together");
        goto out;
    }
    if (!secrets_from_env(&s))
        goto out;
    if (s.count == 0) {
        rc = usage_error("no secret: give --secret S or set TAXD_WEBHOOK_SECRETS");
        goto out;
    }
    listener l = {.secrets = &s, .status = o.status, .verbose = g->verbose,
                  .seen = taxd_dedup_new(SEEN_EVENT_IDS)};
    if (l.seen == NULL) {
        fprintf(stderr, "taxctl webhooks listen: out of memory\n");
        rc = TAXCTL_EXIT_INCOMPLETE;
        goto out;
    }
    rc = serve(&o, &l);
    taxd_dedup_free(l.seen);
out:
    secrets_clear(&s);
    return rc;
}

/* ---- verify ------------------------------------------------------------------ */

static char *read_stdin(size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n == cap) {
            char *grown = cap < MAX_VERIFY_BODY ? realloc(buf, cap * 2) : NULL;
            if (grown == NULL) {
                free(buf);
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) {
            if (ferror(stdin)) {
                free(buf);
                return NULL;
            }
            *len = n;
            return buf;
        }
    }
    return NULL;
}

static int cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {{"secret", required_argument, NULL, 's'},
                                         {"signature", required_argument, NULL, 'g'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    secrets s = {0};
    const char *signature = NULL;
    int rc = TAXCTL_EXIT_USAGE, opt;
    optind = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 's': if (!secrets_add(&s, optarg)) goto out; break;
        case 'g': signature = optarg; break;
        case 'h': usage(stdout); rc = TAXCTL_EXIT_OK; goto out;
        default: usage(stderr); goto out;
        }
    }
    if (optind < argc) {
        rc = usage_error("unexpected argument %s (the body comes on standard input)", argv[optind]);
        goto out;
    }
    if (signature == NULL) {
        rc = usage_error("--signature HEADER is required");
        goto out;
    }
    if (!secrets_from_env(&s))
        goto out;
    if (s.count == 0) {
        rc = usage_error("no secret: give --secret S or set TAXD_WEBHOOK_SECRETS");
        goto out;
    }
    size_t len = 0;
    char *body = read_stdin(&len);
    if (body == NULL) {
        fprintf(stderr, "taxctl webhooks verify: cannot read the body from standard input (over 64 MiB?)\n");
        goto out;
    }
    bool valid = taxd_webhook_verify(signature, s.list, s.count, body, len);
    free(body);
    puts(valid ? "valid" : "invalid signature");
    rc = valid ? TAXCTL_EXIT_OK : TAXCTL_EXIT_REFUSED;
out:
    secrets_clear(&s);
    return rc;
}

int taxctl_webhooks(const taxctl_globals *g, int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return TAXCTL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "listen") == 0)
        return cmd_listen(g, argc - 1, argv + 1);
    if (strcmp(argv[1], "verify") == 0)
        return cmd_verify(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return TAXCTL_EXIT_OK;
    }
    return usage_error("unknown subcommand %s (listen or verify)", argv[1]);
}
