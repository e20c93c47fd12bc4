/* store/webhooks.c: subscriptions, their secrets, the deliveries as the
 * operator sees them, and the outbox (store/webhooks.h). The dispatcher's
 * side of the deliveries is store/webhook_dispatch.c, whose header holds the
 * protocol both sides keep.
 *
 * Design and trade-offs:
 *  - Creating a subscription closes the tenant's open INVENTORY_UPDATE
 *    events (claims them, as beginning a first attempt does): an open event
 *    with no delivery would otherwise keep being widened and never reach the
 *    new subscription.
 *  - An operator's replay or a reactivation gives a delivery a new trace id
 *    or a fresh count, which is what makes a late outcome of an older
 *    attempt miss (see the outcome in store/webhook_dispatch.h).
 *  - Delivery and trace ids are made by SQLite's randomblob() inside the
 *    fan-out's single INSERT ... SELECT (one statement per event whatever the
 *    number of subscriptions); they are opaque identifiers, not secrets.
 *  - Event types are matched with instr() over ",TYPES," so the events column
 *    stays the operator's comma-separated list. */
#include "store/webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "store/listen.h"

#define SUB_COLUMNS                                                                          \
    "id, tenant_id, url, events, rate_limit, retry_attempts, retry_window_s, timeout_s,"     \
    " egress_address, auth_mode, basic_user, basic_password_sealed, state, deauthorized_at," \
    " created_at, updated_at"
#define NEW_TRACE_ID "'trc_' || lower(hex(randomblob(16)))"
/* PostgreSQL has no randomblob(): a v4 uuid's hex (122 random bits) */
#define PG_RANDOM_HEX "replace(gen_random_uuid()::text, '-', '')"
#define PG_NEW_TRACE_ID "'trc_' || " PG_RANDOM_HEX

static const store_sql_t Q_SUB_INSERT = {
    "wh_sub_insert",
    "INSERT INTO subscriptions (id, tenant_id, url, events, rate_limit, retry_attempts,"
    " retry_window_s, timeout_s, egress_address, auth_mode, basic_user, basic_password_sealed,"
    " state, created_at, updated_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'active', ?13, ?13)", NULL};
static const store_sql_t Q_SECRET_INSERT = {
    "wh_secret_insert",
    "INSERT INTO subscription_secrets (subscription_id, seq, secret_sealed, created_at)"
    " VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM subscription_secrets"
    " WHERE subscription_id = ?1), ?2, ?3)", NULL};
static const store_sql_t Q_EVENTS_CLOSE = {
    "wh_events_close", "UPDATE events SET claimed_at = ?2 WHERE claimed_at IS NULL"
                       " AND type = 'INVENTORY_UPDATE' AND tenant_id = ?1", NULL};
static const store_sql_t Q_SUB_GET = {"wh_sub_get",
                                      "SELECT " SUB_COLUMNS " FROM subscriptions WHERE id = ?1", NULL};
static const store_sql_t Q_SUB_ALL = {
    "wh_sub_all", "SELECT " SUB_COLUMNS " FROM subscriptions ORDER BY created_at, id", NULL};
static const store_sql_t Q_SUB_OF_TENANT = {
    "wh_sub_of_tenant",
    "SELECT " SUB_COLUMNS " FROM subscriptions WHERE tenant_id = ?1 ORDER BY created_at, id", NULL};
static const store_sql_t Q_SUB_UPDATE = {
    "wh_sub_update",
    "UPDATE subscriptions SET url = ?2, events = ?3, rate_limit = ?4, retry_attempts = ?5,"
    " retry_window_s = ?6, timeout_s = ?7, egress_address = ?8, updated_at = ?9 WHERE id = ?1"
    " RETURNING tenant_id", NULL};
static const store_sql_t Q_SUB_DELETE = {"wh_sub_delete",
                                         "DELETE FROM subscriptions WHERE id = ?1", NULL};
static const store_sql_t Q_SUB_EXISTS = {"wh_sub_exists",
                                         "SELECT 1 FROM subscriptions WHERE id = ?1", NULL};
static const store_sql_t Q_SUB_TOUCH = {"wh_sub_touch",
                                        "UPDATE subscriptions SET updated_at = ?2 WHERE id = ?1", NULL};
static const store_sql_t Q_SECRETS_OF = {
    "wh_secrets_of", "SELECT seq, secret_sealed, created_at FROM subscription_secrets"
                     " WHERE subscription_id = ?1 ORDER BY seq DESC", NULL};
static const store_sql_t Q_SECRET_COUNT = {
    "wh_secret_count", "SELECT count(*) FROM subscription_secrets WHERE subscription_id = ?1", NULL};
static const store_sql_t Q_SECRET_DROP = {
    "wh_secret_drop",
    "DELETE FROM subscription_secrets WHERE subscription_id = ?1 AND seq ="
    " (SELECT min(seq) FROM subscription_secrets WHERE subscription_id = ?1)", NULL};
static const store_sql_t Q_SUB_SET_AUTH = {
    "wh_sub_set_auth", "UPDATE subscriptions SET auth_mode = ?2, basic_user = ?3,"
                       " basic_password_sealed = ?4, updated_at = ?5 WHERE id = ?1", NULL};
static const store_sql_t Q_SUB_REACTIVATE = {
    "wh_sub_reactivate", "UPDATE subscriptions SET state = 'active', deauthorized_at = NULL,"
                         " updated_at = ?2 WHERE id = ?1", NULL};
static const store_sql_t Q_UNHOLD = {
    "wh_unhold", "UPDATE deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL,"
                 " window_ends_at = NULL, next_attempt_at = ?2"
                 " WHERE subscription_id = ?1 AND state = 'held'", NULL};
static const store_sql_t Q_BACKLOG = {
    "wh_backlog", /* each count from an index alone; delivered is the rest */
    "SELECT (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'pending'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'held'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'failed'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1)", NULL};
static const store_sql_t Q_DELIVERY_LIST = {
    "wh_delivery_list",
    "SELECT d.id, d.event_id, e.type, d.trace_id, d.state, d.attempts, d.first_attempt_at,"
    " d.window_ends_at, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error,"
    " d.created_at, d.delivered_at FROM deliveries d JOIN events e ON e.id = d.event_id"
    " WHERE d.subscription_id = ?1 AND (d.state = ?2 OR ?2 IS NULL) AND d.created_at >= ?3"
    " ORDER BY d.created_at, d.id", NULL};
#define REPLAY_SET                                                                        \
    "UPDATE deliveries SET state = (SELECT CASE state WHEN 'active' THEN 'pending'"       \
    " ELSE 'held' END FROM subscriptions WHERE id = ?1), trace_id = " NEW_TRACE_ID ","    \
    " attempts = 0, first_attempt_at = NULL, window_ends_at = NULL, next_attempt_at = ?3," \
    " delivered_at = NULL"
#define PG_REPLAY_SET                                                                     \
    "UPDATE deliveries SET state = (SELECT CASE state WHEN 'active' THEN 'pending'"       \
    " ELSE 'held' END FROM subscriptions WHERE id = $1), trace_id = " PG_NEW_TRACE_ID "," \
    " attempts = 0, first_attempt_at = NULL, window_ends_at = NULL, next_attempt_at = $3," \
    " delivered_at = NULL"
static const store_sql_t Q_REPLAY_EVENT = {
    "wh_replay_event", REPLAY_SET " WHERE subscription_id = ?1 AND event_id = ?2",
    PG_REPLAY_SET " WHERE subscription_id = $1 AND event_id = $2"};
static const store_sql_t Q_REPLAY_FAILED = {
    "wh_replay_failed",
    REPLAY_SET " WHERE subscription_id = ?1 AND state = 'failed' AND created_at >= ?2",
    PG_REPLAY_SET " WHERE subscription_id = $1 AND state = 'failed' AND created_at >= $2"};
static const store_sql_t Q_FAN_OUT = {
    "wh_fan_out",
    "INSERT INTO deliveries (id, subscription_id, event_id, trace_id, state, next_attempt_at,"
    " created_at) SELECT 'dlv_' || lower(hex(randomblob(16))), s.id, ?2, " NEW_TRACE_ID ","
    " CASE s.state WHEN 'active' THEN 'pending' ELSE 'held' END, ?4, ?4"
    " FROM subscriptions s WHERE s.tenant_id = ?1"
    " AND instr(',' || s.events || ',', ',' || ?3 || ',') > 0",
    /* PostgreSQL: no randomblob(), strpos() for instr() */
    "INSERT INTO deliveries (id, subscription_id, event_id, trace_id, state, next_attempt_at,"
    " created_at) SELECT 'dlv_' || " PG_RANDOM_HEX ", s.id, $2, " PG_NEW_TRACE_ID ","
    " CASE s.state WHEN 'active' THEN 'pending' ELSE 'held' END, $4, $4"
    " FROM subscriptions s WHERE s.tenant_id = $1"
    " AND strpos(',' || s.events || ',', ',' || $3 || ',') > 0"};

/* ---- small helpers */

/* Like run_bound, and reports how many rows the statement changed. */
static store_status_t run_counted(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                                  bool bound, int64_t *changes)
{
    store_status_t st = run_bound(conn, q, stmt, bound);
    if (st == STORE_OK && changes != NULL)
        *changes = conn_changes(conn);
    return st;
}

/* ---- subscriptions: rows */

static store_status_t sub_from_row(const store_sql_t *q, db_stmt_t *stmt,
                                   store_subscription_t *out)
{
    memset(out, 0, sizeof *out);
    char mode[16], state[16];
    bool ok = column_copy(stmt, 0, out->id, sizeof out->id) &&
              column_copy(stmt, 1, out->tenant_id, sizeof out->tenant_id) &&
              column_copy(stmt, 2, out->url, sizeof out->url) &&
              column_copy(stmt, 3, out->events, sizeof out->events) &&
              column_copy_or_empty(stmt, 8, out->egress_address, sizeof out->egress_address) &&
              column_copy(stmt, 9, mode, sizeof mode) &&
              column_copy_or_empty(stmt, 10, out->basic_user, sizeof out->basic_user) &&
              column_blob_copy(stmt, 11, out->basic_password_sealed,
                              sizeof out->basic_password_sealed,
                              &out->basic_password_sealed_len) &&
              column_copy(stmt, 12, state, sizeof state);
    if (!ok)
        return store_bad_row(q);
    out->rate_limit = (uint32_t)db_column_int(stmt, 4);
    out->retry_attempts = (uint32_t)db_column_int(stmt, 5);
    out->retry_window_s = (uint32_t)db_column_int(stmt, 6);
    out->timeout_s = (uint32_t)db_column_int(stmt, 7);
    out->basic = strcmp(mode, "basic") == 0;
    out->deauthorized = strcmp(state, "deauthorized") == 0;
    out->deauthorized_at = db_column_int(stmt, 13);
    out->created_at = db_column_int(stmt, 14);
    out->updated_at = db_column_int(stmt, 15);
    return STORE_OK;
}

static bool sub_valid(const store_subscription_t *s)
{
    return text_fits(s->id, sizeof s->id) && text_fits(s->tenant_id, sizeof s->tenant_id) &&
           text_fits(s->url, sizeof s->url) && text_fits(s->events, sizeof s->events) &&
           text_fits(s->egress_address, sizeof s->egress_address) &&
           text_fits(s->basic_user, sizeof s->basic_user) &&
           s->basic_password_sealed_len <= sizeof s->basic_password_sealed;
}

/* Stops the tenant's open INVENTORY_UPDATE events from being widened. */
static store_status_t close_open_events(store_conn_t *conn, const char *tenant_id, int64_t now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_EVENTS_CLOSE, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_EVENTS_CLOSE, stmt, bind_int(stmt, 2, now));
}

static store_status_t secret_insert(store_conn_t *conn, const char *id,
                                    const store_wh_secret_t *secret)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SECRET_INSERT, id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_blob_or_null(stmt, 2, secret->sealed, secret->sealed_len) &&
                 bind_int(stmt, 3, secret->created_at);
    return run_bound(conn, &Q_SECRET_INSERT, stmt, bound);
}

typedef struct create_args {
    const store_subscription_t *sub;
    const store_wh_secret_t *first;
} create_args_t;

static store_status_t create_tx(store_conn_t *conn, const void *arg)
{
    const create_args_t *a = arg;
    const store_subscription_t *s = a->sub;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_INSERT, s->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound =
        bind_text(stmt, 2, s->tenant_id) && bind_text(stmt, 3, s->url) &&
        bind_text(stmt, 4, s->events) && bind_int(stmt, 5, s->rate_limit) &&
        bind_int(stmt, 6, s->retry_attempts) && bind_int(stmt, 7, s->retry_window_s) &&
        bind_int(stmt, 8, s->timeout_s) && bind_text_or_null(stmt, 9, s->egress_address) &&
        bind_text(stmt, 10, s->basic ? "basic" : "source_marker") &&
        bind_text_or_null(stmt, 11, s->basic ? s->basic_user : NULL) &&
        bind_blob_or_null(stmt, 12, s->basic ? s->basic_password_sealed : NULL,
                          s->basic_password_sealed_len) &&
        bind_int(stmt, 13, s->created_at);
    if ((st = run_bound(conn, &Q_SUB_INSERT, stmt, bound)) != STORE_OK ||
        (st = secret_insert(conn, s->id, a->first)) != STORE_OK)
        return st;
    return close_open_events(conn, s->tenant_id, s->created_at);
}

store_status_t store_subscription_create(store_conn_t *conn, const store_subscription_t *sub,
                                         const store_wh_secret_t *first)
{
    if (!sub_valid(sub) || first->sealed_len == 0 || first->sealed_len > sizeof first->sealed)
        return store_bad_argument("store_subscription_create");
    create_args_t args = {sub, first};
    return conn_write(conn, create_tx, &args);
}

store_status_t store_subscription_get(store_conn_t *conn, const char *id,
                                      store_subscription_t *out)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_SUB_GET, id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW)
        st = sub_from_row(&Q_SUB_GET, stmt, out);
    else
        st = rc == DB_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_SUB_GET, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_subscription_each(store_conn_t *conn, const char *tenant_id,
                                       int (*each)(const store_subscription_t *sub, void *ctx),
                                       void *ctx)
{
    const store_sql_t *q = tenant_id != NULL ? &Q_SUB_OF_TENANT : &Q_SUB_ALL;
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = tenant_id != NULL ? conn_prepare_key(conn, q, tenant_id, &stmt)
                               : conn_prepare(conn, q, &stmt);
    if (st != STORE_OK)
        return st;
    int rc;
    store_subscription_t sub;
    while ((rc = db_step(stmt)) == DB_ROW) {
        if ((st = sub_from_row(q, stmt, &sub)) != STORE_OK || each(&sub, ctx) != 0)
            break;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t update_tx(store_conn_t *conn, const void *arg)
{
    const store_subscription_t *s = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_UPDATE, s->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, s->url) && bind_text(stmt, 3, s->events) &&
                 bind_int(stmt, 4, s->rate_limit) && bind_int(stmt, 5, s->retry_attempts) &&
                 bind_int(stmt, 6, s->retry_window_s) && bind_int(stmt, 7, s->timeout_s) &&
                 bind_text_or_null(stmt, 8, s->egress_address) &&
                 bind_int(stmt, 9, s->updated_at);
    if (!bound)
        return conn_bind_failed(conn, &Q_SUB_UPDATE, stmt);
    char tenant_id[STORE_UUID_LEN];
    int rc = db_step(stmt);
    bool found = rc == DB_ROW && column_copy(stmt, 0, tenant_id, sizeof tenant_id);
    if (rc == DB_ROW)
        rc = db_step(stmt);
    st = rc == DB_DONE ? STORE_OK : conn_fail(conn, &Q_SUB_UPDATE, rc);
    stmt_done(stmt);
    if (st != STORE_OK)
        return st;
    if (!found)
        return STORE_NOT_FOUND;
    return close_open_events(conn, tenant_id, s->updated_at); /* new types may be listed */
}

store_status_t store_subscription_update(store_conn_t *conn, const store_subscription_t *sub)
{
    if (!sub_valid(sub))
        return store_bad_argument("store_subscription_update");
    return conn_write(conn, update_tx, sub);
}

static store_status_t delete_tx(store_conn_t *conn, const void *arg)
{
    const char *id = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_DELETE, id, &stmt);
    int64_t changes = 0;
    if (st == STORE_OK)
        st = run_counted(conn, &Q_SUB_DELETE, stmt, true, &changes);
    if (st == STORE_OK && changes == 0)
        return STORE_NOT_FOUND;
    return st;
}

store_status_t store_subscription_delete(store_conn_t *conn, const char *id)
{
    return conn_write(conn, delete_tx, id);
}

/* ---- secrets and credentials */

static store_status_t secrets_read(store_conn_t *conn, const char *id, store_wh_secret_t *out,
                                   size_t *count)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SECRETS_OF, id, &stmt);
    if (st != STORE_OK)
        return st;
    *count = 0;
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW && *count < STORE_WH_SECRETS_MAX) {
        store_wh_secret_t *s = &out[*count];
        s->seq = db_column_int(stmt, 0);
        s->created_at = db_column_int(stmt, 2);
        if (!column_blob_copy(stmt, 1, s->sealed, sizeof s->sealed, &s->sealed_len) ||
            s->sealed_len == 0) {
            st = store_bad_row(&Q_SECRETS_OF);
            break;
        }
        (*count)++;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_SECRETS_OF, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_subscription_secrets(store_conn_t *conn, const char *id,
                                          store_wh_secret_t *out, size_t *count)
{
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    if ((st = conn_exists(conn, &Q_SUB_EXISTS, id)) != STORE_OK)
        return st;
    return secrets_read(conn, id, out, count);
}

static store_status_t secret_count(store_conn_t *conn, const char *id, int64_t *count)
{
    db_stmt_t *stmt;
    *count = 0;
    store_status_t st = conn_prepare_key(conn, &Q_SECRET_COUNT, id, &stmt);
    if (st == STORE_OK)
        st = conn_query_int(conn, &Q_SECRET_COUNT, stmt, count);
    return st;
}

static store_status_t touch(store_conn_t *conn, const char *id, int64_t now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_TOUCH, id, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_SUB_TOUCH, stmt, bind_int(stmt, 2, now));
}

typedef struct secret_args {
    const char *id;
    const store_wh_secret_t *secret; /* NULL: drop the oldest */
    int64_t now;
} secret_args_t;

static store_status_t secret_tx(store_conn_t *conn, const void *arg)
{
    const secret_args_t *a = arg;
    int64_t count = 0;
    store_status_t st = conn_exists(conn, &Q_SUB_EXISTS, a->id);
    if (st == STORE_OK)
        st = secret_count(conn, a->id, &count);
    if (st != STORE_OK)
        return st;
    if (a->secret != NULL && count >= STORE_WH_SECRETS_MAX)
        return STORE_CONFLICT;
    if (a->secret == NULL && count <= 1)
        return STORE_CONFLICT;
    if (a->secret != NULL) {
        st = secret_insert(conn, a->id, a->secret);
    } else {
        db_stmt_t *stmt;
        st = conn_prepare_key(conn, &Q_SECRET_DROP, a->id, &stmt);
        if (st == STORE_OK)
            st = conn_run(conn, &Q_SECRET_DROP, stmt);
    }
    if (st != STORE_OK)
        return st;
    return touch(conn, a->id, a->now);
}

store_status_t store_subscription_secret_add(store_conn_t *conn, const char *id,
                                             const store_wh_secret_t *secret, int64_t now)
{
    if (secret->sealed_len == 0 || secret->sealed_len > sizeof secret->sealed)
        return store_bad_argument("store_subscription_secret_add");
    secret_args_t args = {id, secret, now};
    return conn_write(conn, secret_tx, &args);
}

store_status_t store_subscription_secret_drop(store_conn_t *conn, const char *id, int64_t now)
{
    secret_args_t args = {id, NULL, now};
    return conn_write(conn, secret_tx, &args);
}

typedef struct auth_args {
    const char *id, *user;
    bool basic;
    const uint8_t *sealed;
    size_t sealed_len;
    int64_t now;
} auth_args_t;

static store_status_t auth_tx(store_conn_t *conn, const void *arg)
{
    const auth_args_t *a = arg;
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_SET_AUTH, a->id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, a->basic ? "basic" : "source_marker") &&
                 bind_text_or_null(stmt, 3, a->basic ? a->user : NULL) &&
                 bind_blob_or_null(stmt, 4, a->basic ? a->sealed : NULL, a->sealed_len) &&
                 bind_int(stmt, 5, a->now);
    int64_t changes = 0;
    st = run_counted(conn, &Q_SUB_SET_AUTH, stmt, bound, &changes);
    if (st == STORE_OK && changes == 0)
        return STORE_NOT_FOUND;
    return st;
}

store_status_t store_subscription_set_auth(store_conn_t *conn, const char *id, bool basic,
                                           const char *user, const uint8_t *sealed,
                                           size_t sealed_len, int64_t now)
{
    if (basic && (user == NULL || user[0] == '\0' || !text_fits(user, STORE_WH_USER_MAX) ||
                  sealed == NULL || sealed_len == 0 || sealed_len > STORE_WH_SEALED_MAX))
        return store_bad_argument("store_subscription_set_auth");
    auth_args_t args = {id, user, basic, sealed, sealed_len, now};
    return conn_write(conn, auth_tx, &args);
}

typedef struct reactivate_args {
    const char *id;
    int64_t now;
    int64_t *requeued;
} reactivate_args_t;

static store_status_t reactivate_tx(store_conn_t *conn, const void *arg)
{
    const reactivate_args_t *a = arg;
    db_stmt_t *stmt;
    int64_t changes = 0;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_REACTIVATE, a->id, &stmt);
    if (st == STORE_OK)
        st = run_counted(conn, &Q_SUB_REACTIVATE, stmt, bind_int(stmt, 2, a->now), &changes);
    if (st != STORE_OK)
        return st;
    if (changes == 0)
        return STORE_NOT_FOUND;
    if ((st = conn_prepare_key(conn, &Q_UNHOLD, a->id, &stmt)) != STORE_OK)
        return st;
    return run_counted(conn, &Q_UNHOLD, stmt, bind_int(stmt, 2, a->now), a->requeued);
}

store_status_t store_subscription_reactivate(store_conn_t *conn, const char *id, int64_t now,
                                             int64_t *requeued)
{
    *requeued = 0;
    reactivate_args_t args = {id, now, requeued};
    return conn_write(conn, reactivate_tx, &args);
}

store_status_t store_subscription_backlog(store_conn_t *conn, const char *id,
                                          store_wh_backlog_t *out)
{
    memset(out, 0, sizeof *out);
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_BACKLOG, id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        out->pending = db_column_int(stmt, 0);
        out->held = db_column_int(stmt, 1);
        out->failed = db_column_int(stmt, 2);
        out->delivered = db_column_int(stmt, 3) - out->pending - out->held - out->failed;
        rc = DB_DONE;
    }
    st = rc == DB_DONE ? STORE_OK : conn_fail(conn, &Q_BACKLOG, rc);
    stmt_done(stmt);
    return st;
}

/* ---- deliveries as the operator sees them */

static store_status_t delivery_from_row(db_stmt_t *stmt, store_delivery_t *d)
{
    memset(d, 0, sizeof *d);
    bool ok = column_copy(stmt, 0, d->id, sizeof d->id) &&
              column_copy(stmt, 1, d->event_id, sizeof d->event_id) &&
              column_copy(stmt, 2, d->event_type, sizeof d->event_type) &&
              column_copy(stmt, 3, d->trace_id, sizeof d->trace_id) &&
              column_copy(stmt, 4, d->state, sizeof d->state);
    if (!ok)
        return store_bad_row(&Q_DELIVERY_LIST);
    d->attempts = db_column_int(stmt, 5);
    d->first_attempt_at = db_column_int(stmt, 6);
    d->window_ends_at = db_column_int(stmt, 7);
    d->next_attempt_at = db_column_int(stmt, 8);
    d->last_attempt_at = db_column_int(stmt, 9);
    d->last_status = (int)db_column_int(stmt, 10);
    const char *err = db_column_text(stmt, 11);
    if (err != NULL)
        snprintf(d->last_error, sizeof d->last_error, "%s", (const char *)err);
    d->created_at = db_column_int(stmt, 12);
    d->delivered_at = db_column_int(stmt, 13);
    return STORE_OK;
}

store_status_t store_delivery_each(store_conn_t *conn, const char *subscription_id,
                                   const char *state, int64_t since_ms,
                                   int (*each)(const store_delivery_t *d, void *ctx), void *ctx)
{
    db_stmt_t *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_exists(conn, &Q_SUB_EXISTS, subscription_id);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_DELIVERY_LIST, subscription_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text_or_null(stmt, 2, state) || !bind_int(stmt, 3, since_ms))
        return conn_bind_failed(conn, &Q_DELIVERY_LIST, stmt);
    int rc;
    store_delivery_t d;
    while ((rc = db_step(stmt)) == DB_ROW) {
        if ((st = delivery_from_row(stmt, &d)) != STORE_OK || each(&d, ctx) != 0)
            break;
    }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_DELIVERY_LIST, rc);
    stmt_done(stmt);
    return st;
}

typedef struct replay_args {
    const char *subscription_id, *event_id;
    int64_t since_ms, now;
    int64_t *count;
} replay_args_t;

static store_status_t replay_tx(store_conn_t *conn, const void *arg)
{
    const replay_args_t *a = arg;
    store_status_t st = conn_exists(conn, &Q_SUB_EXISTS, a->subscription_id);
    if (st != STORE_OK)
        return st;
    const store_sql_t *q = a->event_id != NULL ? &Q_REPLAY_EVENT : &Q_REPLAY_FAILED;
    db_stmt_t *stmt;
    if ((st = conn_prepare_key(conn, q, a->subscription_id, &stmt)) != STORE_OK)
        return st;
    bool bound = (a->event_id != NULL ? bind_text(stmt, 2, a->event_id)
                                      : bind_int(stmt, 2, a->since_ms)) &&
                 bind_int(stmt, 3, a->now);
    st = run_counted(conn, q, stmt, bound, a->count);
    if (st != STORE_OK || *a->count == 0)
        return st;
    return store_notify_in_tx(conn, STORE_CHANNEL_WEBHOOKS);
}

store_status_t store_delivery_replay(store_conn_t *conn, const char *subscription_id,
                                     const char *event_id, int64_t since_ms, int64_t now,
                                     int64_t *count)
{
    *count = 0;
    replay_args_t args = {subscription_id, event_id, since_ms, now, count};
    return conn_write(conn, replay_tx, &args);
}

/* ---- the outbox */

store_status_t store_deliveries_fan_out_in_tx(store_conn_t *conn, const char *tenant_id,
                                              const char *event_id, const char *event_type,
                                              int64_t now)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FAN_OUT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, event_id) && bind_text(stmt, 3, event_type) &&
                 bind_int(stmt, 4, now);
    st = run_bound(conn, &Q_FAN_OUT, stmt, bound);
    /* No subscription wants it: nobody to wake (and no extra round trip). */
    if (st != STORE_OK || conn_changes(conn) == 0)
        return st;
    return store_notify_in_tx(conn, STORE_CHANNEL_WEBHOOKS);
}
