/* app: the process modes, wired from their parts. See app.h.
 *
 * `serve` builds the service, starts the engines unless --no-workers, then
 * hands the HTTP server its own configuration and the API's context as the
 * dispatch callback's user pointer; the server and the API never see the
 * service. A stop signal drains the server first (requests in progress
 * finish), then stops the engines, then closes the service. */
#include "app/app.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/gateway.h"
#include "app/engines.h"
#include "app/service.h"
#include "core/log.h"
#include "http/server.h"
#include "taxdocs/pdf.h"
#include "webhooks/engine.h"

#define MALLOC_MMAP_THRESHOLD (256 * 1024) /* see tune_malloc */

#define DRAIN_MS 10000

int app_global_init(void)
{
    if (webhook_global_init() != 0) {
        fprintf(stderr, "taxd: cannot initialise libcurl\n");
        return -1;
    }
    return 0;
}

void app_global_cleanup(void)
{
    webhook_global_cleanup();
}

/* Blocks the stop signals in every thread (threads inherit the mask), so
 * only sigwait in the main thread sees them. */
static void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int start_failed(service_t *svc, char *err)
{
    log_event(LOG_ERROR, "cannot start", json_pack("{s:s}", "detail", err ? err : "unknown"));
    free(err);
    if (svc != NULL)
        service_close(svc);
    return 1;
}

/* Loads the configuration of `serve` or `worker`; returns -1 on a usage
 * error (reported), 1 after --help, 0 to go on. */
static int load_config(const char *command, int argc, char **argv, taxd_config_t *cfg)
{
    char msg[256];
    if (config_load_env(cfg, msg, sizeof msg) != 0) {
        fprintf(stderr, "taxd %s: %s\n", command, msg);
        return -1;
    }
    int rc = config_parse_serve_args(cfg, argc, argv, msg, sizeof msg);
    if (rc < 0)
        fprintf(stderr, "taxd %s: %s\n", command, msg);
    return rc;
}

static int wait_for_stop(sigset_t *stop)
{
    int sig = 0;
    sigwait(stop, &sig);
    log_event(LOG_INFO, "stopping",
              json_pack("{s:s}", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM"));
    return sig;
}

/* Large buffers go back to the system when freed. glibc serves a block
 * above its mmap threshold with mmap and unmaps it at free, but raises the
 * threshold (up to 32 MiB) to the size of each such block freed: after one
 * report trigger (13 MB of ids) every later one comes from the per-thread
 * heaps, where freed megabytes stay resident beside small live blocks. With
 * 4 triggers at once the peak went from 450 MB to ... (docs/decisions.md,
 * "Report triggers are bounded"). A fixed threshold also fixes the trim
 * threshold, so a heap's free top is given back too. */
static void tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
}

/* What `serve` and `worker` start alike: the command's configuration, the
 * stop signals blocked (before any thread exists), the service opened and
 * started. Returns -1 when *svc runs; otherwise the command's exit code (0
 * after --help, 2 for a usage error, 1 when it could not start, reported). */
static int start_service(const char *command, int argc, char **argv, sigset_t *stop,
                         service_t *svc)
{
    taxd_config_t cfg;
    int rc = load_config(command, argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    block_stop_signals(stop);
    tune_malloc();
    char *err = NULL;
    if (service_open(svc, &cfg, &err) != 0)
        return start_failed(NULL, err);
    if (service_start(svc, &err) != 0)
        return start_failed(svc, err);
    return -1;
}

int app_worker(int argc, char **argv)
{
    sigset_t stop;
    service_t svc;
    int rc = start_service("worker", argc, argv, &stop, &svc);
    if (rc >= 0)
        return rc;
    char *err = NULL;
    if (engines_start(&svc, &err) == NULL)
        return start_failed(&svc, err);
    char db[sizeof svc.cfg.db_path];
    config_db_display(svc.cfg.db_path, db, sizeof db);
    log_event(LOG_INFO, "worker running", json_pack("{s:s}", "db", db));
    wait_for_stop(&stop);
    workers_stop(svc.workers);
    service_close(&svc);
    log_event(LOG_INFO, "stopped", NULL);
    return 0;
}

/* The server's own configuration: the listen address and limits from the
 * service's configuration, the route table's parts, and the API's gateway as
 * the dispatch callback over api (which must outlive the server). origins
 * (CONFIG_MAX_CORS_ORIGINS entries) receives the allowed CORS origins and
 * must outlive the server too. */
static http_server_config_t server_config(service_t *svc, api_context_t *api,
                                          const char **origins)
{
    const taxd_config_t *cfg = &svc->cfg;
    for (size_t i = 0; i < cfg->cors_origin_count; i++)
        origins[i] = cfg->cors_origins[i];
    return (http_server_config_t){
        .listen_host = cfg->listen_host,
        .listen_port = cfg->listen_port,
        .threads = cfg->threads,
        .connection_limit = cfg->connection_limit,
        .per_ip_connection_limit = cfg->per_ip_connection_limit,
        .connection_timeout_s = cfg->connection_timeout_s,
        .header_timeout_ms = cfg->header_timeout_ms,
        .max_large_bodies = cfg->max_large_bodies,
        .trusted_proxies = cfg->trusted_proxies,
        .max_in_flight = cfg->max_in_flight,
        .request_timeout_ms = cfg->request_timeout_ms,
        .max_body = cfg->max_body,
        .drain_ms = DRAIN_MS,
        .instance_id = svc->instance_id,
        .router = svc->router,
        .route_labels = svc->route_labels,
        .metrics = svc->metrics,
        .base_url = svc->cfg.base_url,
        .base_url_cap = sizeof svc->cfg.base_url,
        .cors_origins = origins,
        .cors_origin_count = cfg->cors_origin_count,
        .dispatch = api_gateway_dispatch,
        .user = api,
    };
}

int app_serve(int argc, char **argv)
{
    sigset_t stop;
    service_t svc;
    int rc = start_service("serve", argc, argv, &stop, &svc);
    if (rc >= 0)
        return rc;
    char *err = NULL;
    if (!taxdocs_pdf_font_usable(svc.cfg.pdf_font)) /* tax-form PDFs need it (--pdf-font) */
        return start_failed(&svc, strdup("--pdf-font: not a TrueType font taxd can load"));
    if (!svc.cfg.no_workers && engines_start(&svc, &err) == NULL)
        return start_failed(&svc, err);
    api_context_t api;
    service_api_context(&svc, &api);
    const char *origins[CONFIG_MAX_CORS_ORIGINS];
    http_server_config_t server_cfg = server_config(&svc, &api, origins);
    http_server_t *server = http_server_start(&server_cfg, &err);
    if (server == NULL) {
        workers_stop(svc.workers);
        return start_failed(&svc, err);
    }
    char db[sizeof svc.cfg.db_path];
    config_db_display(svc.cfg.db_path, db, sizeof db);
    log_event(LOG_INFO, "listening",
              json_pack("{s:s, s:i, s:s, s:s, s:i, s:b}", "address", svc.cfg.listen_host, "port",
                        (json_int_t)http_server_port(server), "base_url", svc.cfg.base_url,
                        "db", db, "threads", (json_int_t)svc.cfg.threads,
                        "test_hooks", svc.cfg.test_hooks));

    wait_for_stop(&stop);
    http_server_stop(server);
    workers_stop(svc.workers);
    service_close(&svc);
    log_event(LOG_INFO, "stopped", NULL);
    return 0;
}
