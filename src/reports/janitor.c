/* reports/janitor: see janitor.h. Deletes in batches of PURGE_BATCH reports
 * per write transaction, so the write lock is never held for long however
 * much expired at once; the cascade removes each report's chunks in the
 * same transaction, so no file outlives its row. */
#include "reports/janitor.h"

#include "core/clock.h"
#include "core/log.h"
#include "store/reports.h"

#define PURGE_BATCH 16
#define INTERVAL_MS 60000
#define TEST_INTERVAL_MS 200

int64_t report_janitor_step(const report_janitor_config_t *cfg, unsigned thread_index)
{
    (void)thread_index;
    int64_t interval = cfg->test_hooks ? TEST_INTERVAL_MS : INTERVAL_MS;
    store_conn_t *conn = store_acquire(cfg->store);
    if (conn == NULL)
        return interval;
    size_t total = 0, deleted = PURGE_BATCH;
    store_status_t st = STORE_OK;
    while (st == STORE_OK && deleted == PURGE_BATCH && !atomic_load(cfg->stopping)) {
        st = store_report_purge(conn, clock_now_ms(cfg->clock), PURGE_BATCH, &deleted);
        total += st == STORE_OK ? deleted : 0;
    }
    store_release(cfg->store, conn);
    if (st != STORE_OK)
        log_event(LOG_WARN, "janitor: purge failed",
                  json_pack("{s:s}", "status", store_status_name(st)));
    if (total > 0)
        log_event(LOG_INFO, "janitor: expired reports deleted",
                  json_pack("{s:I}", "reports", (json_int_t)total));
    return interval;
}
