/* health: the probes of load balancers and orchestrators, and GET /metrics
 * for Prometheus. None needs a token; none reveals tenant data.
 *
 *   /livez   the process runs and serves HTTP: nothing else is looked at,
 *            so a restart is never triggered by the database's state;
 *   /healthz the write path, as this process's group commit last saw it
 *            (store_health): atomics only, no connection, no lock a writer
 *            holds, so it answers at once whatever holds SQLite's lock;
 *   /readyz  it can serve and commit: /healthz's verdict, and a cheap read
 *            on a connection under a short deadline. While the last commit
 *            has failed it also probes the write path (at most once a
 *            second), so an instance whose disk came back turns ready again
 *            without waiting for a client's write that a balancer would
 *            never route to it. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "webhooks/engine.h"

#define READYZ_DEADLINE_MS 1000 /* the read (and probe) of /readyz */

static void reply_ok(request_t *req)
{
    reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

void api_livez(request_t *req)
{
    reply_ok(req);
}

void api_healthz(request_t *req)
{
    store_health_t health;
    store_health(api_ctx(req)->store, clock_monotonic_ms(), &health);
    if (!health.ok) {
        reply_error(req, 503, "%s", health.reason);
        return;
    }
    reply_ok(req);
}

void api_readyz(request_t *req)
{
    store_conn_t *db = api_request_db(req);
    if (db == NULL) {
        reply_error(req, 503, "The database does not answer");
        return;
    }
    int64_t now = clock_monotonic_ms();
    int64_t deadline = now + READYZ_DEADLINE_MS;
    if (req->deadline_ms != 0 && req->deadline_ms < deadline)
        deadline = req->deadline_ms;
    store_set_deadline(db, deadline);
    store_health_t health;
    store_health(api_ctx(req)->store, now, &health);
    if (health.commit_failed) {
        store_health_probe(db, now); /* its outcome lands in the health below */
        store_health(api_ctx(req)->store, clock_monotonic_ms(), &health);
    }
    if (!health.ok) {
        reply_error(req, 503, "%s", health.reason);
        return;
    }
    if (store_ping(db) != STORE_OK) {
        reply_error(req, 503, "The database does not answer");
        return;
    }
    reply_ok(req);
}

void api_metrics(request_t *req)
{
    char *text = metrics_render(api_ctx(req)->metrics);
    char *hooks = webhook_engine_metrics(api_ctx(req)->webhooks); /* NULL without the engines */
    size_t len = text ? strlen(text) : 0, more = hooks ? strlen(hooks) : 0;
    char *both = text && hooks ? realloc(text, len + more + 1) : NULL;
    if (both != NULL) {
        memcpy(both + len, hooks, more + 1);
        text = both;
    }
    free(hooks);
    if (text == NULL) {
        request_log_failure(req, "metrics: out of memory rendering them");
        reply_error(req, 500, "Metrics could not be rendered");
        return;
    }
    reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
}
