/* engines: the table of background engines. See engines.h. */
#include "app/engines.h"

#include "reports/runner.h"

workers_t *engines_start(service_t *svc, char **err)
{
    const worker_engine_t engines[] = {
        {"reports", report_runner_step, svc->cfg.report_workers},
    };
    workers_t *w = workers_start(svc, engines, sizeof engines / sizeof engines[0], err);
    svc->workers = w;
    return w;
}
