/* engines: the table of background engines. See engines.h. The webhook
 * dispatcher keeps state across steps (its libcurl multi handle and the
 * transfers in flight), so it is built here and its step is adapted. */
#include "app/engines.h"

#include "reports/janitor.h"
#include "reports/runner.h"
#include "tincheck/runner.h"
#include "webhooks/engine.h"

static int64_t webhooks_step(service_t *svc, unsigned thread_index)
{
    return webhook_engine_step(svc->webhooks, thread_index);
}

workers_t *engines_start(service_t *svc, char **err)
{
    webhook_engine_config_t hooks = {
        .store = svc->store, .clock = &svc->clock, .db_path = svc->cfg.db_path,
        .ca_file = svc->cfg.webhook_ca_file, .egress_address = svc->cfg.webhook_egress_address,
        .proxy = svc->cfg.test_hooks ? svc->cfg.webhook_test_proxy : NULL,
        .instance_id = svc->instance_id, .threads = 1};
    svc->tinchecks = tincheck_runner_new(&svc->cfg, err);
    if (svc->tinchecks == NULL)
        return NULL;
    svc->webhooks = webhook_engine_new(&hooks, err);
    if (svc->webhooks == NULL)
        return NULL;
    const worker_engine_t engines[] = {
        {"reports", report_runner_step, svc->cfg.report_workers},
        {"janitor", report_janitor_step, 1},
        {"webhooks", webhooks_step, 1},
        {"tincheck", tincheck_runner_step, 1},
    };
    workers_t *w = workers_start(svc, engines, sizeof engines / sizeof engines[0], err);
    svc->workers = w;
    return w;
}
