/* engines: the table of background engines. See engines.h. Every engine's
 * configuration is filled in from the service here. The report runner's and
 * the janitor's live as long as the workers (copies the workers free); the
 * TIN check runner is the workers' too; the webhook dispatcher stays the
 * service's (svc->webhooks), which reads its metrics and wakes it. */
#include "app/engines.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "forms/regen.h"
#include "reports/janitor.h"
#include "reports/runner.h"
#include "store/listen.h"
#include "tincheck/runner.h"
#include "webhooks/engine.h"

/* ---- each engine's step over its own state (worker_step_fn) */

static int64_t reports_step(void *engine, unsigned thread_index)
{
    return report_runner_step(engine, thread_index);
}

static int64_t janitor_step(void *engine, unsigned thread_index)
{
    return report_janitor_step(engine, thread_index);
}

static int64_t forms_step(void *engine, unsigned thread_index)
{
    return forms_regen_step(engine, thread_index);
}

static int64_t webhooks_step(void *engine, unsigned thread_index)
{
    return webhook_engine_step(engine, thread_index);
}

static int64_t tinchecks_step(void *engine, unsigned thread_index)
{
    return tincheck_runner_step(engine, thread_index);
}

static void tinchecks_release(void *engine)
{
    tincheck_runner_free(engine);
}

/* The listener (PostgreSQL): one thread that waits for the notifications
 * other nodes' writes send (store/listen.h) and wakes this process's
 * engines, so work made on any node starts at once everywhere; the engines'
 * own polling stays the fallback while it has no session. */
enum { LISTEN_WAIT_MS = 200 }; /* bounds how long a stop waits for the thread */

typedef struct listen_engine {
    store_listener_t *listener;
    service_t *svc;
    workers_t *_Atomic workers; /* set once the workers run; NULL before */
} listen_engine_t;

static int64_t listen_step(void *engine, unsigned thread_index)
{
    (void)thread_index;
    listen_engine_t *le = engine;
    unsigned heard = 0;
    store_listener_wait(le->listener, LISTEN_WAIT_MS, &heard);
    if (heard != 0) { /* service_wake_workers, but svc->workers is set after we start */
        workers_wake(atomic_load(&le->workers));
        if (heard & STORE_CHANNEL_WEBHOOKS)
            webhook_engine_wake(le->svc->webhooks);
    }
    return 0; /* the wait above was the pause */
}

static void listen_release(void *engine)
{
    listen_engine_t *le = engine;
    store_listener_close(le->listener);
    free(le);
}

/* NULL when the store has no notifications (SQLite), --no-listen, or no memory. */
static listen_engine_t *new_listen(service_t *svc)
{
    if (svc->cfg.no_listen || !store_is_pg(svc->store))
        return NULL;
    listen_engine_t *le = calloc(1, sizeof *le);
    if (le == NULL)
        return NULL;
    le->svc = svc;
    if ((le->listener = store_listener_open(svc->store)) == NULL) {
        free(le);
        return NULL;
    }
    return le;
}

/* The TIN check runner committed a result with its events. */
static void wake_service(void *svc)
{
    service_wake_workers(svc);
}

/* ---- configurations */

static tincheck_runner_t *new_tinchecks(service_t *svc, char **err)
{
    tincheck_runner_config_t cfg = {
        .store = svc->store, .clock = &svc->clock, .tin_key = svc->tin_key,
        .instance_id = svc->instance_id, .match_file = svc->cfg.tin_match_file,
        .lease_ms = svc->cfg.tin_check_lease_ms,
        .test_pause_ms = svc->cfg.test_hooks ? svc->cfg.tin_check_test_pause_ms : 0,
        .stopping = &svc->stopping, .wake = wake_service, .wake_arg = svc};
    return tincheck_runner_new(&cfg, err);
}

static webhook_engine_t *new_webhooks(service_t *svc, char **err)
{
    webhook_engine_config_t cfg = {
        .store = svc->store, .clock = &svc->clock, .key_base = svc->key_base,
        .ca_file = svc->cfg.webhook_ca_file, .egress_address = svc->cfg.webhook_egress_address,
        .proxy = svc->cfg.test_hooks ? svc->cfg.webhook_test_proxy : NULL,
        .instance_id = svc->instance_id, .threads = 1};
    return webhook_engine_new(&cfg, err);
}

static report_runner_config_t *new_reports(service_t *svc)
{
    report_runner_config_t *cfg = malloc(sizeof *cfg);
    if (cfg != NULL)
        *cfg = (report_runner_config_t){
            .store = svc->store, .clock = &svc->clock, .lease_ms = svc->cfg.report_lease_ms,
            .max_leases = svc->cfg.report_max_leases, .test_hooks = svc->cfg.test_hooks,
            .stopping = &svc->stopping};
    return cfg;
}

static report_janitor_config_t *new_janitor(service_t *svc)
{
    report_janitor_config_t *cfg = malloc(sizeof *cfg);
    if (cfg != NULL)
        *cfg = (report_janitor_config_t){.store = svc->store, .clock = &svc->clock,
                                         .test_hooks = svc->cfg.test_hooks,
                                         .stopping = &svc->stopping};
    return cfg;
}

static forms_regen_config_t *new_forms(service_t *svc)
{
    forms_regen_config_t *cfg = malloc(sizeof *cfg);
    if (cfg != NULL)
        *cfg = (forms_regen_config_t){.store = svc->store, .clock = &svc->clock,
                                      .test_hooks = svc->cfg.test_hooks,
                                      .stopping = &svc->stopping};
    return cfg;
}

workers_t *engines_start(service_t *svc, char **err)
{
    tincheck_runner_t *tinchecks = new_tinchecks(svc, err);
    if (tinchecks == NULL)
        return NULL;
    svc->webhooks = new_webhooks(svc, err);
    report_runner_config_t *reports = new_reports(svc);
    report_janitor_config_t *janitor = new_janitor(svc);
    forms_regen_config_t *forms = new_forms(svc);
    if (svc->webhooks == NULL || reports == NULL || janitor == NULL || forms == NULL) {
        if (svc->webhooks != NULL)
            *err = strdup("engines: out of memory");
        tincheck_runner_free(tinchecks);
        free(reports);
        free(janitor);
        free(forms);
        return NULL;
    }
    listen_engine_t *listen = new_listen(svc);
    const worker_engine_t engines[] = {
        {"reports", reports_step, reports, free, svc->cfg.report_workers},
        {"janitor", janitor_step, janitor, free, 1},
        {"webhooks", webhooks_step, svc->webhooks, NULL, 1},
        {"tincheck", tinchecks_step, tinchecks, tinchecks_release, 1},
        {"forms", forms_step, forms, free, 1},
        {"listen", listen_step, listen, listen_release, 1}, /* last: may be absent */
    };
    size_t count = sizeof engines / sizeof engines[0] - (listen == NULL ? 1 : 0);
    workers_t *w = workers_start(engines, count, &svc->stopping, err);
    svc->workers = w;
    if (listen != NULL && w != NULL)
        atomic_store(&listen->workers, w);
    return w;
}
