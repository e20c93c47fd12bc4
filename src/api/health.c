/* health: GET /healthz for load balancers and GET /metrics for Prometheus.
 * Neither needs a token; neither reveals tenant data. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "webhooks/engine.h"

void api_healthz(request_t *req)
{
    store_conn_t *db = api_request_db(req);
    store_status_t rc = db ? store_ping(db) : STORE_ERROR;
    if (rc != STORE_OK) {
        reply_error(req, 503, "The database does not answer");
        return;
    }
    reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
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
        reply_error(req, 500, "Metrics could not be rendered");
        return;
    }
    reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
}
