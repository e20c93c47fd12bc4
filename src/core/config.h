/* config: the settings of one taxd process, from defaults, then environment
 * variables (TAXD_*), then command-line flags, in that order of precedence.
 * A taxd_config_t is filled once at start and read-only afterwards. */
#ifndef TAXD_CORE_CONFIG_H
#define TAXD_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_DB "./var/taxd.db"
#define CONFIG_DEFAULT_LISTEN "127.0.0.1:8080"
#define CONFIG_DEFAULT_PDF_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
/* --cors-origin: at most this many origins, each shorter than
 * CONFIG_ORIGIN_MAX bytes (a browser's Origin: scheme://host[:port]). */
#define CONFIG_MAX_CORS_ORIGINS 16
#define CONFIG_ORIGIN_MAX 256

typedef struct taxd_config {
    char listen_host[256];
    unsigned listen_port;       /* 0: the kernel picks one */
    char db_path[4096];         /* a SQLite file path, or a postgres:// URL */
    char key_dir[4096];         /* "" : key files beside the SQLite file */
    char base_url[512];         /* "" until resolved: http:// + the bound address */
    unsigned threads;           /* request handler threads (http/workpool.h) */
    size_t max_body;            /* default request body limit in bytes */
    int64_t request_timeout_ms; /* the deadline of a request (504 after it) */
    unsigned max_in_flight;     /* load shedding beyond this many requests */
    unsigned connection_timeout_s;
    unsigned connection_limit;
    unsigned per_ip_connection_limit;
    int64_t header_timeout_ms;  /* a request's head must arrive within this (slowloris) */
    unsigned max_large_bodies;  /* bodies over 1 MiB at once, per process */
    char trusted_proxies[1024]; /* addresses/CIDR blocks whose X-Forwarded-For is believed */
    uint32_t default_rate;      /* spec § Limits: 100/s, burst 1,000 */
    uint32_t default_burst;
    bool test_hooks;            /* test-only routes and the clock offset */
    bool test_fail_migration;   /* test hooks only: a migration that fails at its end */
    bool no_workers;            /* serve the API only; engines run in `taxd worker` */
    char rate_limits[16];       /* "" (auto: shared on PostgreSQL), "shared" or "local" */
    bool no_listen;             /* PostgreSQL: no LISTEN; the engines' polling alone finds work */
    unsigned report_workers;    /* report runner threads */
    int64_t report_lease_ms;    /* a claimed report's lease */
    unsigned report_max_leases; /* expired leases before a report is failed */
    uint32_t report_trigger_rate;  /* the trigger's own default rule (per tenant) */
    uint32_t report_trigger_burst;
    unsigned report_max_active; /* reports pending or processing at once per tenant */
    char webhook_ca_file[4096]; /* trust only this CA bundle for deliveries ("" = system) */
    char webhook_egress_address[64]; /* default source address of deliveries ("" = any) */
    char tin_match_file[4096];  /* the list matcher's TIN,name list ("" = none) */
    int64_t tin_check_lease_ms; /* a claimed TIN check's lease */
    int64_t tin_check_test_pause_ms; /* test hooks only: hold each claimed check this long */
    char webhook_test_proxy[512]; /* test hooks only: deliveries through this HTTP proxy */
    /* Browser origins allowed on the ROUTE_CORS routes (issue 19): each
     * exactly scheme://host[:port] as a browser serializes it, compared
     * byte for byte with the Origin header. None by default. */
    char cors_origins[CONFIG_MAX_CORS_ORIGINS][CONFIG_ORIGIN_MAX];
    size_t cors_origin_count;
    char pdf_font[4096];        /* the TrueType font embedded in tax-form PDFs */
} taxd_config_t;

/* Fills cfg with defaults, then TAXD_* environment variables. Returns 0, or
 * -1 with a message in err (err_cap bytes) for a malformed value. */
int config_load_env(taxd_config_t *cfg, char *err, size_t err_cap);

/* Applies `serve` flags from argv[0..argc) (argv[0] is the first flag).
 * Returns 0, 1 when --help was asked (usage printed), or -1 with err set. */
int config_parse_serve_args(taxd_config_t *cfg, int argc, char **argv, char *err, size_t err_cap);

/* Parses "HOST:PORT" ("[::1]:8080" for IPv6). Returns 0 or -1. */
int config_parse_listen(const char *text, char *host, size_t host_cap, unsigned *port);

/* True when db names a PostgreSQL database (postgres:// or postgresql://). */
bool config_db_is_url(const char *db);

/* db as a log line may show it: a URL's password replaced by "***". */
void config_db_display(const char *db, char *out, size_t cap);

/* The prefix key files are named from (keys_path): "<key_dir>/" when a key
 * directory is set, else the SQLite file's path. 0, or -1 with err set for
 * a PostgreSQL URL without a key directory: every node must read the same
 * key files, so their place is the operator's explicit choice. */
int config_key_base(const taxd_config_t *cfg, char *out, size_t cap, char *err, size_t err_cap);

/* Prints the serve flags and their environment variables. */
void config_print_serve_usage(void);

#endif
