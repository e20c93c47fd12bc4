/* taxd: the command line. `serve` runs the HTTP API, `admin` the operator
 * commands, `version` prints the version. main() only dispatches; each mode
 * lives in its own module. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/admin.h"
#include "app/engines.h"
#include "app/service.h"
#include "core/log.h"
#include "http/server.h"
#include "webhooks/engine.h"

#define TAXD_VERSION "0.1.0"
#define DRAIN_MS 10000

static void print_usage(FILE *out)
{
    fprintf(out,
            "usage: taxd COMMAND [options]\n\n"
            "commands:\n"
            "  serve     run the HTTP API and the background engines (taxd serve --help)\n"
            "  worker    run only the background engines (same options as serve)\n"
            "  admin     operator commands on the database (taxd admin --help)\n"
            "  version   print the version\n");
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

static int serve_fail(service_t *svc, char *err)
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

/* `taxd worker`: the background engines alone, for deployments where API
 * processes run with --no-workers. */
static int worker(int argc, char **argv)
{
    taxd_config_t cfg;
    int rc = load_config("worker", argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    sigset_t stop;
    block_stop_signals(&stop);
    service_t svc;
    char *err = NULL;
    if (service_open(&svc, &cfg, &err) != 0)
        return serve_fail(NULL, err);
    if (service_start(&svc, &err) != 0 || engines_start(&svc, &err) == NULL)
        return serve_fail(&svc, err);
    log_event(LOG_INFO, "worker running", json_pack("{s:s}", "db", svc.cfg.db_path));
    wait_for_stop(&stop);
    workers_stop(svc.workers);
    service_close(&svc);
    log_event(LOG_INFO, "stopped", NULL);
    return 0;
}

static int serve(int argc, char **argv)
{
    taxd_config_t cfg;
    int rc = load_config("serve", argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    sigset_t stop;
    block_stop_signals(&stop);

    service_t svc;
    char *err = NULL;
    if (service_open(&svc, &cfg, &err) != 0)
        return serve_fail(NULL, err);
    if (service_start(&svc, &err) != 0)
        return serve_fail(&svc, err);
    if (!cfg.no_workers && engines_start(&svc, &err) == NULL)
        return serve_fail(&svc, err);
    http_server_t *server = http_server_start(&svc, &err);
    if (server == NULL) {
        workers_stop(svc.workers);
        return serve_fail(&svc, err);
    }
    log_event(LOG_INFO, "listening",
              json_pack("{s:s, s:i, s:s, s:s, s:i, s:b}", "address", svc.cfg.listen_host, "port",
                        (json_int_t)http_server_port(server), "base_url", svc.cfg.base_url,
                        "db", svc.cfg.db_path, "threads", (json_int_t)svc.cfg.threads,
                        "test_hooks", svc.cfg.test_hooks));

    wait_for_stop(&stop);
    http_server_stop(server, DRAIN_MS);
    workers_stop(svc.workers);
    service_close(&svc);
    log_event(LOG_INFO, "stopped", NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (webhook_global_init() != 0) { /* libcurl, once, before any thread */
        fprintf(stderr, "taxd: cannot initialise libcurl\n");
        return 1;
    }
    atexit(webhook_global_cleanup);
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0)
        return serve(argc - 2, argv + 2);
    if (strcmp(cmd, "worker") == 0)
        return worker(argc - 2, argv + 2);
    if (strcmp(cmd, "admin") == 0)
        return app_admin_main(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("taxd %s\n", TAXD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    fprintf(stderr, "taxd: unknown command '%s'\n", cmd);
    print_usage(stderr);
    return 2;
}
