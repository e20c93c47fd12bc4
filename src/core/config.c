/* config: defaults < TAXD_* environment < flags. Every setting has exactly one
 * table entry naming its flag, its variable and its parser, so the usage text,
 * the environment and the flags can never disagree. */
#include "core/config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    OPT_LISTEN, OPT_PATH, OPT_URL, OPT_UINT, OPT_U32, OPT_SIZE, OPT_MS, OPT_BOOL, OPT_ORIGINS
} opt_kind_t;

typedef struct option_def {
    const char *flag;
    const char *env;
    opt_kind_t kind;
    size_t offset;
    uint64_t max;
    const char *help;
} option_def_t;

#define OFF(field) offsetof(taxd_config_t, field)
#define CONFIG_STR_(x) #x
#define CONFIG_STR(x) CONFIG_STR_(x)

static const option_def_t OPTIONS[] = {
    {"--listen", "TAXD_LISTEN", OPT_LISTEN, 0, 0, "HOST:PORT to listen on (port 0: any free port)"},
    {"--db", "TAXD_DB", OPT_PATH, OFF(db_path), sizeof(((taxd_config_t *)0)->db_path),
     "database: a SQLite file path, or a postgres:// URL (PostgreSQL)"},
    {"--key-dir", "TAXD_KEY_DIR", OPT_PATH, OFF(key_dir), sizeof(((taxd_config_t *)0)->key_dir),
     "directory of the key files (default: beside a SQLite file; required with PostgreSQL)"},
    {"--base-url", "TAXD_BASE_URL", OPT_URL, OFF(base_url),
     sizeof(((taxd_config_t *)0)->base_url), "absolute URL clients reach this service at"},
    {"--threads", "TAXD_THREADS", OPT_UINT, OFF(threads), 1024, "HTTP worker threads"},
    {"--max-body", "TAXD_MAX_BODY", OPT_SIZE, OFF(max_body), 1u << 30,
     "default request body limit in bytes"},
    {"--request-timeout-ms", "TAXD_REQUEST_TIMEOUT_MS", OPT_MS, OFF(request_timeout_ms),
     3600000, "request deadline in milliseconds (504 after it)"},
    {"--max-in-flight", "TAXD_MAX_IN_FLIGHT", OPT_UINT, OFF(max_in_flight), 1000000,
     "reads, and writes, in progress each before shedding load (429)"},
    {"--connection-timeout", "TAXD_CONNECTION_TIMEOUT", OPT_UINT, OFF(connection_timeout_s),
     86400, "idle connection timeout in seconds"},
    {"--connection-limit", "TAXD_CONNECTION_LIMIT", OPT_UINT, OFF(connection_limit), 1000000,
     "open connections at most"},
    {"--per-ip-connections", "TAXD_PER_IP_CONNECTIONS", OPT_UINT,
     OFF(per_ip_connection_limit), 1000000, "open connections per client address at most"},
    {"--header-timeout-ms", "TAXD_HEADER_TIMEOUT_MS", OPT_MS, OFF(header_timeout_ms), 600000,
     "a request's headers must be complete this long after its first byte"},
    {"--max-large-bodies", "TAXD_MAX_LARGE_BODIES", OPT_UINT, OFF(max_large_bodies), 1024,
     "request bodies over 1 MiB received or handled at once at most (429 beyond)"},
    {"--trusted-proxies", "TAXD_TRUSTED_PROXIES", OPT_PATH, OFF(trusted_proxies),
     sizeof(((taxd_config_t *)0)->trusted_proxies),
     "addresses or CIDR blocks of proxies whose X-Forwarded-For is believed"},
    {"--no-workers", "TAXD_NO_WORKERS", OPT_BOOL, OFF(no_workers), 0,
     "run no background engines here (run `taxd worker` elsewhere)"},
    {"--rate-limits", "TAXD_RATE_LIMITS", OPT_PATH, OFF(rate_limits),
     sizeof(((taxd_config_t *)0)->rate_limits),
     "shared (leased from the database: one limit for all nodes) or local (per process);"
     " default shared on PostgreSQL, local on SQLite"},
    {"--no-listen", "TAXD_NO_LISTEN", OPT_BOOL, OFF(no_listen), 0,
     "PostgreSQL: engines poll only, without LISTEN (a pooler in transaction mode)"},
    {"--report-workers", "TAXD_REPORT_WORKERS", OPT_UINT, OFF(report_workers), 64,
     "report runner threads"},
    {"--report-lease-ms", "TAXD_REPORT_LEASE_MS", OPT_MS, OFF(report_lease_ms), 86400000,
     "lease of a claimed report; another worker takes it after expiry"},
    {"--report-max-leases", "TAXD_REPORT_MAX_LEASES", OPT_UINT, OFF(report_max_leases), 100,
     "expired leases after which a report is marked failed"},
    {"--report-trigger-rate", "TAXD_REPORT_TRIGGER_RATE", OPT_U32, OFF(report_trigger_rate),
     1000000, "report triggers per second per tenant (the trigger's default rule)"},
    {"--report-trigger-burst", "TAXD_REPORT_TRIGGER_BURST", OPT_U32, OFF(report_trigger_burst),
     1000000, "report triggers at once per tenant (the trigger's default rule)"},
    {"--report-max-active", "TAXD_REPORT_MAX_ACTIVE", OPT_UINT, OFF(report_max_active), 100000,
     "reports pending or processing at once per tenant (429 beyond)"},
    {"--webhook-ca-file", "TAXD_WEBHOOK_CA_FILE", OPT_PATH, OFF(webhook_ca_file),
     sizeof(((taxd_config_t *)0)->webhook_ca_file),
     "trust only this CA bundle for webhook deliveries (default: the system's)"},
    {"--webhook-egress-address", "TAXD_WEBHOOK_EGRESS_ADDRESS", OPT_PATH,
     OFF(webhook_egress_address), sizeof(((taxd_config_t *)0)->webhook_egress_address),
     "default source address of webhook deliveries"},
    {"--tin-match-file", "TAXD_TIN_MATCH_FILE", OPT_PATH, OFF(tin_match_file),
     sizeof(((taxd_config_t *)0)->tin_match_file),
     "TIN_TYPE,TIN,NAME list the TIN checks match against (default: none, all MISMATCH)"},
    {"--tin-check-lease-ms", "TAXD_TIN_CHECK_LEASE_MS", OPT_MS, OFF(tin_check_lease_ms),
     86400000, "lease of a claimed TIN check; another worker takes it after expiry"},
    {"--tin-test-pause-ms", "TAXD_TIN_TEST_PAUSE_MS", OPT_MS,
     OFF(tin_check_test_pause_ms), 600000,
     "with --test-hooks only: hold each claimed TIN check this long (kill tests)"},
    {"--webhook-test-proxy", "TAXD_WEBHOOK_TEST_PROXY", OPT_PATH, OFF(webhook_test_proxy),
     sizeof(((taxd_config_t *)0)->webhook_test_proxy),
     "with --test-hooks only: send webhook deliveries through this HTTP proxy (407 tests)"},
    {"--cors-origin", "TAXD_CORS_ORIGIN", OPT_ORIGINS, 0, 0,
     "let browser pages of this origin (scheme://host[:port], exact) call the SDK routes;"
     " repeatable, the variable takes a comma list (default: none)"},
    {"--pdf-font", "TAXD_PDF_FONT", OPT_PATH, OFF(pdf_font),
     sizeof(((taxd_config_t *)0)->pdf_font),
     "TrueType font embedded in tax-form PDFs (default " CONFIG_DEFAULT_PDF_FONT ")"},
    {"--test-fail-migration", "TAXD_TEST_FAIL_MIGRATION", OPT_BOOL, OFF(test_fail_migration), 0,
     "with --test-hooks only: run every pending migration, then roll back and fail"},
    {"--test-hooks", "TAXD_TEST_HOOKS", OPT_BOOL, OFF(test_hooks), 0,
     "enable test-only routes and clock offset (never in production)"},
};

#define OPTION_COUNT (sizeof OPTIONS / sizeof OPTIONS[0])

static void config_defaults(taxd_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    config_parse_listen(CONFIG_DEFAULT_LISTEN, cfg->listen_host, sizeof cfg->listen_host,
                        &cfg->listen_port);
    snprintf(cfg->db_path, sizeof cfg->db_path, "%s", CONFIG_DEFAULT_DB);
    cfg->threads = 16; /* handlers block on the database: well above the core count */
    cfg->max_body = 1024 * 1024;
    cfg->request_timeout_ms = 29000;
    cfg->max_in_flight = 512;
    cfg->connection_timeout_s = 60;
    cfg->connection_limit = 16384;
    cfg->per_ip_connection_limit = 512;
    cfg->header_timeout_ms = 10000;
    cfg->max_large_bodies = 2;
    cfg->report_workers = 2;
    cfg->report_lease_ms = 60000;
    cfg->report_max_leases = 3;
    /* A trigger may carry 13 MB of ids and is kept 30 days: its own rule is
     * far below the API's 100/s (docs/decisions.md, "Report triggers are
     * bounded"); 1/s is the slowest a rule can refill. */
    cfg->report_trigger_rate = 1;
    cfg->report_trigger_burst = 10;
    cfg->report_max_active = 4;
    cfg->tin_check_lease_ms = 60000;
    cfg->default_rate = 100;
    cfg->default_burst = 1000;
    snprintf(cfg->pdf_font, sizeof cfg->pdf_font, "%s", CONFIG_DEFAULT_PDF_FONT);
}

int config_parse_listen(const char *text, char *host, size_t host_cap, unsigned *port)
{
    const char *colon = strrchr(text, ':');
    if (colon == NULL || colon == text)
        return -1;
    const char *h = text;
    size_t hlen = (size_t)(colon - text);
    if (h[0] == '[') { /* [::1]:8080 */
        if (hlen < 3 || h[hlen - 1] != ']')
            return -1;
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= host_cap)
        return -1;
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || end == colon + 1 || p > 65535)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (unsigned)p;
    return 0;
}

static int parse_uint(const char *text, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] == '-' || text[0] == '\0')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

/* An absolute http(s) URL with a host. Trailing slashes are dropped: links
 * append paths that begin with one ("https://x/api/" + "/v1/..."). */
static int parse_base_url(const char *value, char *out, size_t cap)
{
    size_t scheme = 0;
    if (strncmp(value, "http://", 7) == 0)
        scheme = 7;
    else if (strncmp(value, "https://", 8) == 0)
        scheme = 8;
    size_t len = strlen(value);
    while (len > scheme && value[len - 1] == '/')
        len--;
    if (scheme == 0 || len == scheme || len >= cap)
        return -1;
    memcpy(out, value, len);
    out[len] = '\0';
    return 0;
}

/* ---- CORS origins -------------------------------------------------------
 *
 * An allowed origin is compared byte for byte with the request's Origin
 * header, so it must be written exactly as a browser serializes an origin:
 * scheme "http" or "https", "://", the host in lower case (a name, an IPv4
 * address, or an IPv6 address in brackets), and a port only when it is not
 * the scheme's default. Anything else could never match, so it is refused at
 * start rather than failing silently in a browser: a path or trailing slash,
 * a wildcard (each origin is named: a wildcard would let any page spend a
 * user's token), upper case, userinfo, a default or malformed port. */

static bool origin_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static bool origin_ipv6_char(char c)
{
    return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9') || c == ':' || c == '.';
}

/* Where the host of the authority [p, end) ends, or NULL with *why set. */
static const char *origin_host_end(const char *p, const char *end, const char **why)
{
    const char *h = p;
    if (h < end && *h == '[') {
        for (h++; h < end && *h != ']'; h++)
            if (!origin_ipv6_char(*h)) {
                *why = "an IPv6 host is lower-case hex digits, ':' and '.' in brackets";
                return NULL;
            }
        if (h == end || h == p + 1) {
            *why = "an IPv6 host needs its closing bracket";
            return NULL;
        }
        return h + 1;
    }
    for (; h < end && *h != ':'; h++) {
        if (*h >= 'A' && *h <= 'Z') {
            *why = "the host must be lower case, as browsers send it";
            return NULL;
        }
        if (!origin_host_char(*h)) {
            *why = "the host may hold only letters, digits, '-' and '.'";
            return NULL;
        }
    }
    if (h == p)
        *why = "the host is missing";
    return h == p ? NULL : h;
}

static const char *origin_port_problem(const char *p, const char *end, bool https)
{
    size_t n = (size_t)(end - p);
    if (n == 0 || n > 5 || *p == '0')
        return "the port must be a number from 1 to 65535 without leading zeros";
    unsigned port = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return "the port must be a number from 1 to 65535 without leading zeros";
        port = port * 10 + (unsigned)(*p - '0');
    }
    if (port > 65535)
        return "the port must be a number from 1 to 65535 without leading zeros";
    if (port == (https ? 443u : 80u))
        return "leave out the scheme's default port: browsers do";
    return NULL;
}

/* NULL when [o, o+len) is an origin as a browser sends it; else why not. */
static const char *origin_problem(const char *o, size_t len)
{
    if (len == 0)
        return "an origin is empty";
    if (memchr(o, '*', len) != NULL)
        return "wildcards are not allowed: name each origin";
    if (len >= CONFIG_ORIGIN_MAX)
        return "the origin is too long";
    bool https = len > 8 && memcmp(o, "https://", 8) == 0;
    bool http = len > 7 && memcmp(o, "http://", 7) == 0;
    if (!https && !http)
        return "an origin is http:// or https:// followed by a host";
    const char *end = o + len;
    const char *p = o + (https ? 8 : 7);
    for (const char *c = p; c < end; c++)
        if (*c == '/' || *c == '?' || *c == '#')
            return "an origin is scheme://host[:port]: no path, query or trailing slash";
    const char *why = NULL;
    const char *host_end = origin_host_end(p, end, &why);
    if (host_end == NULL)
        return why;
    if (host_end == end)
        return NULL;
    if (*host_end != ':')
        return "the host may hold only letters, digits, '-' and '.'";
    return origin_port_problem(host_end + 1, end, https);
}

static bool origin_known(const taxd_config_t *cfg, const char *o, size_t len)
{
    for (size_t i = 0; i < cfg->cors_origin_count; i++)
        if (strlen(cfg->cors_origins[i]) == len && memcmp(cfg->cors_origins[i], o, len) == 0)
            return true;
    return false;
}

/* Adds each origin of a comma list (spaces around items ignored); a
 * repeated origin is kept once. */
static int apply_origins(taxd_config_t *cfg, const option_def_t *opt, const char *value,
                         char *err, size_t err_cap)
{
    const char *p = value;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *next = p[len] == ',' ? p + len + 1 : NULL;
        while (len > 0 && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        const char *why = origin_problem(p, len);
        if (why == NULL && !origin_known(cfg, p, len) &&
            cfg->cors_origin_count == CONFIG_MAX_CORS_ORIGINS)
            why = "too many origins (at most " CONFIG_STR(CONFIG_MAX_CORS_ORIGINS) ")";
        if (why != NULL) {
            snprintf(err, err_cap, "invalid value for %s (%s): '%.*s': %s", opt->flag, opt->env,
                     (int)(len < CONFIG_ORIGIN_MAX ? len : CONFIG_ORIGIN_MAX), p, why);
            return -1;
        }
        if (!origin_known(cfg, p, len)) {
            memcpy(cfg->cors_origins[cfg->cors_origin_count], p, len);
            cfg->cors_origins[cfg->cors_origin_count++][len] = '\0';
        }
        if (next == NULL)
            return 0;
        p = next;
    }
}

static int apply_option(taxd_config_t *cfg, const option_def_t *opt, const char *value,
                        char *err, size_t err_cap)
{
    char *base = (char *)cfg;
    uint64_t n = 0;
    switch (opt->kind) {
    case OPT_ORIGINS:
        return apply_origins(cfg, opt, value, err, err_cap);
    case OPT_LISTEN:
        if (config_parse_listen(value, cfg->listen_host, sizeof cfg->listen_host,
                                &cfg->listen_port) == 0)
            return 0;
        break;
    case OPT_PATH:
        if (opt->offset == OFF(rate_limits) && strcmp(value, "shared") != 0 &&
            strcmp(value, "local") != 0)
            break;
        if (value[0] != '\0' && strlen(value) < opt->max) {
            snprintf(base + opt->offset, opt->max, "%s", value);
            return 0;
        }
        break;
    case OPT_URL:
        if (parse_base_url(value, base + opt->offset, opt->max) == 0)
            return 0;
        break;
    case OPT_BOOL:
        if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "0") == 0 ||
            strcmp(value, "false") == 0) {
            *(bool *)(base + opt->offset) = value[0] == '1' || value[0] == 't';
            return 0;
        }
        break;
    case OPT_UINT:
        if (parse_uint(value, opt->max, &n) == 0 && n > 0) {
            *(unsigned *)(base + opt->offset) = (unsigned)n;
            return 0;
        }
        break;
    case OPT_U32:
        if (parse_uint(value, opt->max, &n) == 0 && n > 0 && n <= UINT32_MAX) {
            *(uint32_t *)(base + opt->offset) = (uint32_t)n;
            return 0;
        }
        break;
    case OPT_SIZE:
        if (parse_uint(value, opt->max, &n) == 0 && n > 0) {
            *(size_t *)(base + opt->offset) = (size_t)n;
            return 0;
        }
        break;
    case OPT_MS:
        if (parse_uint(value, opt->max, &n) == 0 && n > 0) {
            *(int64_t *)(base + opt->offset) = (int64_t)n;
            return 0;
        }
        break;
    }
    snprintf(err, err_cap, "invalid value for %s (%s): '%s'", opt->flag, opt->env, value);
    return -1;
}

bool config_db_is_url(const char *db)
{
    return strncmp(db, "postgres://", 11) == 0 || strncmp(db, "postgresql://", 13) == 0;
}

void config_db_display(const char *db, char *out, size_t cap)
{
    const char *scheme_end = strstr(db, "://");
    const char *at = scheme_end != NULL ? strchr(scheme_end + 3, '@') : NULL;
    const char *colon = at != NULL ? memchr(scheme_end + 3, ':', (size_t)(at - scheme_end - 3)) : NULL;
    if (!config_db_is_url(db) || colon == NULL) {
        snprintf(out, cap, "%s", db);
        return;
    }
    snprintf(out, cap, "%.*s:***%s", (int)(colon - db), db, at);
}

int config_key_base(const taxd_config_t *cfg, char *out, size_t cap, char *err, size_t err_cap)
{
    int n;
    if (cfg->key_dir[0] != '\0') {
        size_t len = strlen(cfg->key_dir);
        bool slash = cfg->key_dir[len - 1] == '/';
        n = snprintf(out, cap, "%s%s", cfg->key_dir, slash ? "" : "/");
    } else if (config_db_is_url(cfg->db_path)) {
        snprintf(err, err_cap, "a PostgreSQL database needs --key-dir (TAXD_KEY_DIR): every"
                               " node must read the same key files");
        return -1;
    } else {
        n = snprintf(out, cap, "%s", cfg->db_path);
    }
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, err_cap, "the key directory's path is too long");
        return -1;
    }
    return 0;
}

int config_load_env(taxd_config_t *cfg, char *err, size_t err_cap)
{
    config_defaults(cfg);
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const char *value = getenv(OPTIONS[i].env);
        if (value != NULL && value[0] != '\0' &&
            apply_option(cfg, &OPTIONS[i], value, err, err_cap) != 0)
            return -1;
    }
    return 0;
}

static const option_def_t *find_option(const char *flag, size_t flag_len)
{
    for (size_t i = 0; i < OPTION_COUNT; i++)
        if (strlen(OPTIONS[i].flag) == flag_len && memcmp(OPTIONS[i].flag, flag, flag_len) == 0)
            return &OPTIONS[i];
    return NULL;
}

int config_parse_serve_args(taxd_config_t *cfg, int argc, char **argv, char *err, size_t err_cap)
{
    bool origins_from_flags = false; /* the first --cors-origin replaces the environment's list */
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            config_print_serve_usage();
            return 1;
        }
        const char *eq = strchr(arg, '=');
        size_t flag_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const option_def_t *opt = find_option(arg, flag_len);
        if (opt == NULL) {
            snprintf(err, err_cap, "unknown option '%s' (see taxd serve --help)", arg);
            return -1;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (value == NULL && opt->kind == OPT_BOOL)
            value = "1";
        if (value == NULL) {
            if (i + 1 >= argc) {
                snprintf(err, err_cap, "option %s needs a value", opt->flag);
                return -1;
            }
            value = argv[++i];
        }
        if (opt->kind == OPT_ORIGINS && !origins_from_flags) {
            cfg->cors_origin_count = 0;
            origins_from_flags = true;
        }
        if (apply_option(cfg, opt, value, err, err_cap) != 0)
            return -1;
    }
    return 0;
}

void config_print_serve_usage(void)
{
    printf("usage: taxd serve [options]\n\noptions (each also set by its environment variable):\n");
    for (size_t i = 0; i < OPTION_COUNT; i++)
        printf("  %-24s %-26s %s\n", OPTIONS[i].flag, OPTIONS[i].env, OPTIONS[i].help);
}
