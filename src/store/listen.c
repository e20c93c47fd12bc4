/* store/listen.c: see listen.h.
 *
 * Notifying is one statement in the writer's transaction, pg_notify(), run
 * only on PostgreSQL: the server delivers it at COMMIT and drops it at
 * ROLLBACK, and folds identical notifications of one transaction into one
 * (a batch that fans out a thousand deliveries wakes each listener once).
 *
 * Listening needs a session that stays open and outside the pool, so the
 * listener has its own libpq connection to the store's URL (the pool's
 * sessions come and go, and a pooled one would be handed to a request with
 * LISTENs the request knows nothing of). Its wait is poll() on the socket;
 * a lost session (the server restarted) is dropped, and the next wait opens
 * a new one and LISTENs again, answering every channel at once because
 * what was announced in between was heard by nobody. Failures are logged
 * once per loss, with the server's host and port, never the URL. */
#include "store/listen.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/backend.h"
#include "store/internal.h"

enum { LISTEN_CONNECT_TIMEOUT_S = 2 };

static const struct {
    store_channel_t bit;
    const char *name;
    store_sql_t notify;
} CHANNELS[] = {
    /* SQLite never runs these (store_notify_in_tx returns first); its text
     * is a harmless statement so that the table has one. */
    {STORE_CHANNEL_REPORTS, "taxd_reports",
     {"notify_reports", "SELECT 1", "SELECT pg_notify('taxd_reports', '')"}},
    {STORE_CHANNEL_WEBHOOKS, "taxd_webhooks",
     {"notify_webhooks", "SELECT 1", "SELECT pg_notify('taxd_webhooks', '')"}},
    {STORE_CHANNEL_TINCHECKS, "taxd_tinchecks",
     {"notify_tinchecks", "SELECT 1", "SELECT pg_notify('taxd_tinchecks', '')"}},
    {STORE_CHANNEL_FORMS, "taxd_forms",
     {"notify_forms", "SELECT 1", "SELECT pg_notify('taxd_forms', '')"}},
};
#define CHANNEL_COUNT (sizeof CHANNELS / sizeof CHANNELS[0])

store_status_t store_notify_in_tx(store_conn_t *conn, store_channel_t channel)
{
    if (!conn_is_pg(conn))
        return STORE_OK;
    for (size_t i = 0; i < CHANNEL_COUNT; i++)
        if (CHANNELS[i].bit == channel) {
            db_stmt_t *stmt;
            store_status_t st = conn_prepare(conn, &CHANNELS[i].notify, &stmt);
            return st == STORE_OK ? conn_run(conn, &CHANNELS[i].notify, stmt) : st;
        }
    return store_bad_argument("store_notify_in_tx: unknown channel");
}

struct store_listener {
    store_t *store;
    PGconn *pg;        /* NULL while there is no session */
    bool lost_logged;  /* the current outage was logged */
};

store_listener_t *store_listener_open(store_t *store)
{
    if (!store_is_pg(store))
        return NULL;
    store_listener_t *l = calloc(1, sizeof *l);
    if (l != NULL)
        l->store = store;
    return l;
}

static void drop_session(store_listener_t *l, const char *why)
{
    if (!l->lost_logged)
        log_event(LOG_WARN, "listener: no session; the engines poll until it is back",
                  json_pack("{s:s, s:s, s:s}", "reason", why, "host",
                            l->pg != NULL && PQhost(l->pg) != NULL ? PQhost(l->pg) : "",
                            "port", l->pg != NULL && PQport(l->pg) != NULL ? PQport(l->pg) : ""));
    l->lost_logged = true;
    if (l->pg != NULL)
        PQfinish(l->pg);
    l->pg = NULL;
}

/* Opens the session and LISTENs on every channel. */
static bool open_session(store_listener_t *l)
{
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", LISTEN_CONNECT_TIMEOUT_S);
    const char *const keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *const values[] = {store_target(l->store), timeout, "taxd-listen", NULL};
    l->pg = PQconnectdbParams(keys, values, 1);
    if (l->pg == NULL || PQstatus(l->pg) != CONNECTION_OK) {
        drop_session(l, "cannot connect");
        return false;
    }
    char sql[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < CHANNEL_COUNT; i++)
        len += (size_t)snprintf(sql + len, sizeof sql - len, "LISTEN %s;", CHANNELS[i].name);
    PGresult *res = PQexec(l->pg, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        drop_session(l, "LISTEN failed");
        return false;
    }
    if (l->lost_logged)
        log_event(LOG_INFO, "listener: listening again", NULL);
    l->lost_logged = false;
    return true;
}

static unsigned take_notifications(PGconn *pg)
{
    unsigned heard = 0;
    PGnotify *n;
    while ((n = PQnotifies(pg)) != NULL) {
        for (size_t i = 0; i < CHANNEL_COUNT; i++)
            if (strcmp(n->relname, CHANNELS[i].name) == 0)
                heard |= CHANNELS[i].bit;
        PQfreemem(n);
    }
    return heard;
}

store_status_t store_listener_wait(store_listener_t *l, int timeout_ms, unsigned *channels)
{
    *channels = 0;
    if (l->pg == NULL) {
        int64_t began = clock_monotonic_ms();
        if (!open_session(l)) {
            int64_t left = timeout_ms - (clock_monotonic_ms() - began);
            if (left > 0)
                clock_sleep_ms(left);
            return STORE_UNAVAILABLE;
        }
        *channels = STORE_CHANNELS_ALL; /* whatever was announced meanwhile */
        return STORE_OK;
    }
    struct pollfd pfd = {.fd = PQsocket(l->pg), .events = POLLIN};
    int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0)
        return STORE_OK; /* a signal: the caller waits again */
    if (ready > 0 && (!PQconsumeInput(l->pg) || PQstatus(l->pg) != CONNECTION_OK)) {
        drop_session(l, "the session was lost");
        return STORE_UNAVAILABLE;
    }
    *channels = take_notifications(l->pg);
    return STORE_OK;
}

void store_listener_close(store_listener_t *l)
{
    if (l == NULL)
        return;
    if (l->pg != NULL)
        PQfinish(l->pg);
    free(l);
}
