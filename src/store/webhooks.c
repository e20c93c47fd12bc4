/* store/webhooks.c: subscriptions, secrets and deliveries (store/webhooks.h).
 *
 * Design and trade-offs:
 *  - A delivery row is the unit of work: state pending / held / delivered /
 *    failed, its attempts, its retry window (set at the first attempt) and
 *    next_attempt_at. Deliveries are never locked row by row: a dispatcher
 *    leases a whole subscription (lease_owner, lease_until), so one process
 *    sends a subscription's deliveries at a time and its rate and concurrency
 *    bounds hold globally. A dispatcher that dies leaves a lease that runs
 *    out; another takes the subscription and sends again what had no
 *    recorded outcome (at least once).
 *  - A delivery row is written once per attempt, by its outcome (attempts,
 *    the window the first attempt opened, the result), in batches: one
 *    transaction per dispatcher job, so a commit's fsync is shared by every
 *    delivery of the job. Beginning an attempt writes nothing to its row:
 *    the dispatcher passes the rowids it has begun and not recorded (a JSON
 *    array, json_each) and they are left out of what is due, and the
 *    subscription's lease keeps other processes away. An attempt begun but
 *    never sent thus needs no undoing, and after a crash what was in flight
 *    is due as soon as the lease runs out. An outcome finds its row by the
 *    rowid its attempt began with.
 *  - The event is claimed (events.claimed_at) in the transaction that begins
 *    its first attempt and read there: an INVENTORY_UPDATE is never widened
 *    after its range was sent. Creating a subscription closes the tenant's
 *    open INVENTORY_UPDATE events the same way, because an open event with no
 *    delivery would otherwise keep being widened and never reach the new
 *    subscription.
 *  - An outcome applies only while the delivery still has the trace id and
 *    attempt count its attempt began with: an operator's replay or a
 *    reactivation meanwhile wins over a late answer, and a second outcome
 *    of the same attempt (sent by two processes after a lost lease) is
 *    ignored.
 *  - Delivery and trace ids are made by SQLite's randomblob() inside the
 *    fan-out's single INSERT ... SELECT (one statement per event whatever the
 *    number of subscriptions); they are opaque identifiers, not secrets.
 *  - Event types are matched with instr() over ",TYPES," so the events column
 *    stays the operator's comma-separated list. */
#include "store/webhooks.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "store/internal.h"

#define SUB_COLUMNS                                                                          \
    "id, tenant_id, url, events, rate_limit, retry_attempts, retry_window_s, timeout_s,"     \
    " egress_address, auth_mode, basic_user, basic_password_sealed, state, deauthorized_at," \
    " created_at, updated_at"
#define NEW_TRACE_ID "'trc_' || lower(hex(randomblob(16)))"

static const store_sql_t Q_SUB_INSERT = {
    "wh_sub_insert",
    "INSERT INTO subscriptions (id, tenant_id, url, events, rate_limit, retry_attempts,"
    " retry_window_s, timeout_s, egress_address, auth_mode, basic_user, basic_password_sealed,"
    " state, created_at, updated_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'active', ?13, ?13)"};
static const store_sql_t Q_SECRET_INSERT = {
    "wh_secret_insert",
    "INSERT INTO subscription_secrets (subscription_id, seq, secret_sealed, created_at)"
    " VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM subscription_secrets"
    " WHERE subscription_id = ?1), ?2, ?3)"};
static const store_sql_t Q_EVENTS_CLOSE = {
    "wh_events_close", "UPDATE events SET claimed_at = ?2 WHERE claimed_at IS NULL"
                       " AND type = 'INVENTORY_UPDATE' AND tenant_id = ?1"};
static const store_sql_t Q_SUB_GET = {"wh_sub_get",
                                      "SELECT " SUB_COLUMNS " FROM subscriptions WHERE id = ?1"};
static const store_sql_t Q_SUB_ALL = {
    "wh_sub_all", "SELECT " SUB_COLUMNS " FROM subscriptions ORDER BY created_at, id"};
static const store_sql_t Q_SUB_OF_TENANT = {
    "wh_sub_of_tenant",
    "SELECT " SUB_COLUMNS " FROM subscriptions WHERE tenant_id = ?1 ORDER BY created_at, id"};
static const store_sql_t Q_SUB_UPDATE = {
    "wh_sub_update",
    "UPDATE subscriptions SET url = ?2, events = ?3, rate_limit = ?4, retry_attempts = ?5,"
    " retry_window_s = ?6, timeout_s = ?7, egress_address = ?8, updated_at = ?9 WHERE id = ?1"
    " RETURNING tenant_id"};
static const store_sql_t Q_SUB_DELETE = {"wh_sub_delete",
                                         "DELETE FROM subscriptions WHERE id = ?1"};
static const store_sql_t Q_SUB_EXISTS = {"wh_sub_exists",
                                         "SELECT 1 FROM subscriptions WHERE id = ?1"};
static const store_sql_t Q_SUB_TOUCH = {"wh_sub_touch",
                                        "UPDATE subscriptions SET updated_at = ?2 WHERE id = ?1"};
static const store_sql_t Q_SECRETS_OF = {
    "wh_secrets_of", "SELECT seq, secret_sealed, created_at FROM subscription_secrets"
                     " WHERE subscription_id = ?1 ORDER BY seq DESC"};
static const store_sql_t Q_SECRET_COUNT = {
    "wh_secret_count", "SELECT count(*) FROM subscription_secrets WHERE subscription_id = ?1"};
static const store_sql_t Q_SECRET_DROP = {
    "wh_secret_drop",
    "DELETE FROM subscription_secrets WHERE subscription_id = ?1 AND seq ="
    " (SELECT min(seq) FROM subscription_secrets WHERE subscription_id = ?1)"};
static const store_sql_t Q_SUB_SET_AUTH = {
    "wh_sub_set_auth", "UPDATE subscriptions SET auth_mode = ?2, basic_user = ?3,"
                       " basic_password_sealed = ?4, updated_at = ?5 WHERE id = ?1"};
static const store_sql_t Q_SUB_REACTIVATE = {
    "wh_sub_reactivate", "UPDATE subscriptions SET state = 'active', deauthorized_at = NULL,"
                         " updated_at = ?2 WHERE id = ?1"};
static const store_sql_t Q_UNHOLD = {
    "wh_unhold", "UPDATE deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL,"
                 " window_ends_at = NULL, next_attempt_at = ?2"
                 " WHERE subscription_id = ?1 AND state = 'held'"};
static const store_sql_t Q_BACKLOG = {
    "wh_backlog", /* each count from an index alone; delivered is the rest */
    "SELECT (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'pending'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'held'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1 AND state = 'failed'),"
    " (SELECT count(*) FROM deliveries WHERE subscription_id = ?1)"};
static const store_sql_t Q_DELIVERY_LIST = {
    "wh_delivery_list",
    "SELECT d.id, d.event_id, e.type, d.trace_id, d.state, d.attempts, d.first_attempt_at,"
    " d.window_ends_at, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error,"
    " d.created_at, d.delivered_at FROM deliveries d JOIN events e ON e.id = d.event_id"
    " WHERE d.subscription_id = ?1 AND (?2 IS NULL OR d.state = ?2) AND d.created_at >= ?3"
    " ORDER BY d.created_at, d.id"};
#define REPLAY_SET                                                                        \
    "UPDATE deliveries SET state = (SELECT CASE state WHEN 'active' THEN 'pending'"       \
    " ELSE 'held' END FROM subscriptions WHERE id = ?1), trace_id = " NEW_TRACE_ID ","    \
    " attempts = 0, first_attempt_at = NULL, window_ends_at = NULL, next_attempt_at = ?3," \
    " delivered_at = NULL"
static const store_sql_t Q_REPLAY_EVENT = {
    "wh_replay_event", REPLAY_SET " WHERE subscription_id = ?1 AND event_id = ?2"};
static const store_sql_t Q_REPLAY_FAILED = {
    "wh_replay_failed",
    REPLAY_SET " WHERE subscription_id = ?1 AND state = 'failed' AND created_at >= ?2"};
static const store_sql_t Q_FAN_OUT = {
    "wh_fan_out",
    "INSERT INTO deliveries (id, subscription_id, event_id, trace_id, state, next_attempt_at,"
    " created_at) SELECT 'dlv_' || lower(hex(randomblob(16))), s.id, ?2, " NEW_TRACE_ID ","
    " CASE s.state WHEN 'active' THEN 'pending' ELSE 'held' END, ?4, ?4"
    " FROM subscriptions s WHERE s.tenant_id = ?1"
    " AND instr(',' || s.events || ',', ',' || ?3 || ',') > 0"};

/* The dispatcher's statements. */
#define DUE_EXISTS(sub)                                                                 \
    "EXISTS (SELECT 1 FROM deliveries d WHERE d.subscription_id = " sub                \
    " AND d.state = 'pending' AND d.next_attempt_at <= ?3)"
static const store_sql_t Q_LEASE_RELEASE_IDLE = {
    "wh_lease_release_idle",
    "UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL"
    " WHERE id = ?2 AND lease_owner = ?1 AND NOT " DUE_EXISTS("?2")};
static const store_sql_t Q_LEASE_CLAIM = {
    "wh_lease_claim",
    "UPDATE subscriptions SET lease_owner = ?1, lease_until = ?2 WHERE state = 'active'"
    " AND (lease_owner = ?1 OR ((lease_owner IS NULL OR lease_until < ?4)"
    " AND " DUE_EXISTS("subscriptions.id") "))"
    " RETURNING id, updated_at"};
static const store_sql_t Q_NEXT_DUE_ALL = {
    "wh_next_due_all",
    "SELECT min((SELECT min(d.next_attempt_at) FROM deliveries d"
    " WHERE d.subscription_id = s.id AND d.state = 'pending')) FROM subscriptions s"
    " WHERE s.state = 'active' AND (s.lease_owner IS NULL OR s.lease_owner = ?1"
    " OR s.lease_until < ?2)"};
static const store_sql_t Q_LEASE_RELEASE_ALL = {
    "wh_lease_release_all",
    "UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?1"};
static const store_sql_t Q_SUB_CHECK = {
    "wh_sub_check", "SELECT updated_at, state = 'active' AND lease_owner IS ?2"
                    " FROM subscriptions WHERE id = ?1"};
static const store_sql_t Q_DUE = {
    "wh_due", "SELECT d.id, d.event_id, d.trace_id, d.window_ends_at, e.type, e.payload,"
              " e.account_uuid, e.account_id, e.from_ms, e.from_tx, e.latest_ms, e.latest_tx,"
              " e.has_ids, e.claimed_at IS NULL, d.rowid, e.rowid, d.attempts, d.first_attempt_at"
              " FROM deliveries d JOIN events e ON e.id = d.event_id"
              " WHERE d.subscription_id = ?1 AND d.state = 'pending' AND d.next_attempt_at <= ?2"
              " AND d.rowid NOT IN (SELECT value FROM json_each(?4))"
              " ORDER BY d.next_attempt_at LIMIT ?3"};
/* The set-based statements of a batch: ?1 is a JSON array of rowids. */
static const store_sql_t Q_WINDOWS_CLOSED = {
    "wh_windows_closed",
    "UPDATE deliveries SET state = 'failed',"
    " last_error = coalesce(last_error, 'retry window closed before the next attempt')"
    " WHERE rowid IN (SELECT value FROM json_each(?1))"};
static const store_sql_t Q_NEXT_DUE = {
    "wh_next_due", "SELECT min(next_attempt_at) FROM deliveries"
                   " WHERE subscription_id = ?1 AND state = 'pending'"
                   " AND rowid NOT IN (SELECT value FROM json_each(?2))"};
static const store_sql_t Q_EVENTS_CLAIM = {
    "wh_events_claim", "UPDATE events SET claimed_at = ?2"
                       " WHERE rowid IN (SELECT value FROM json_each(?1)) AND claimed_at IS NULL"};
/* An attempt's outcome counts it (attempts = ?3), guarded by the count
 * before it and the trace id. */
#define OUTCOME_SET                                                          \
    "UPDATE deliveries SET state = ?4, last_status = ?5, last_error = ?6,"   \
    " next_attempt_at = ?7, delivered_at = ?8, attempts = ?3,"               \
    " first_attempt_at = ?10, window_ends_at = ?11, last_attempt_at = ?12"
static const store_sql_t Q_OUTCOME = {
    "wh_outcome", OUTCOME_SET " WHERE id = ?1 AND trace_id = ?2 AND attempts = ?3 - 1"};
/* The same by the rowid the attempt began with: no lookup in the id index,
 * whose random keys make each lookup touch another page. */
static const store_sql_t Q_OUTCOME_ROWID = {
    "wh_outcome_rowid",
    OUTCOME_SET " WHERE rowid = ?9 AND id = ?1 AND trace_id = ?2 AND attempts = ?3 - 1"};
static const store_sql_t Q_DEAUTHORIZE = {
    "wh_deauthorize",
    "UPDATE subscriptions SET state = 'deauthorized', deauthorized_at = ?2, updated_at = ?2,"
    " lease_owner = NULL, lease_until = NULL WHERE id = ?1 AND state = 'active'"};
static const store_sql_t Q_HOLD_PENDING = {
    "wh_hold_pending",
    "UPDATE deliveries SET state = 'held' WHERE subscription_id = ?1 AND state = 'pending'"};
static const store_sql_t Q_BACKLOG_ALL = {
    "wh_backlog_all", "SELECT s.id, (SELECT count(*) FROM deliveries d"
                      " WHERE d.subscription_id = s.id AND d.state = 'pending'),"
                      " s.state = 'deauthorized' FROM subscriptions s ORDER BY s.id"};

/* ---- small helpers */

/* Like run_bound, and reports how many rows the statement changed. */
static store_status_t run_counted(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                                  bool bound, int64_t *changes)
{
    store_status_t st = run_bound(conn, q, stmt, bound);
    if (st == STORE_OK && changes != NULL)
        *changes = sqlite3_changes(conn->db);
    return st;
}

static char *column_strdup(sqlite3_stmt *stmt, int col)
{
    const unsigned char *text = sqlite3_column_text(stmt, col);
    return text != NULL ? strdup((const char *)text) : NULL;
}

/* Steps a keyed single-value query; *found false when it returned no row. */
static store_status_t query_int(store_conn_t *conn, const store_sql_t *q, sqlite3_stmt *stmt,
                                int64_t *value, bool *found)
{
    int rc = sqlite3_step(stmt);
    store_status_t st = STORE_OK;
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW)
        *value = sqlite3_column_int64(stmt, 0);
    else if (rc != SQLITE_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

/* ---- subscriptions: rows */

static store_status_t sub_from_row(const store_sql_t *q, sqlite3_stmt *stmt,
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
    out->rate_limit = (uint32_t)sqlite3_column_int64(stmt, 4);
    out->retry_attempts = (uint32_t)sqlite3_column_int64(stmt, 5);
    out->retry_window_s = (uint32_t)sqlite3_column_int64(stmt, 6);
    out->timeout_s = (uint32_t)sqlite3_column_int64(stmt, 7);
    out->basic = strcmp(mode, "basic") == 0;
    out->deauthorized = strcmp(state, "deauthorized") == 0;
    out->deauthorized_at = sqlite3_column_int64(stmt, 13);
    out->created_at = sqlite3_column_int64(stmt, 14);
    out->updated_at = sqlite3_column_int64(stmt, 15);
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_EVENTS_CLOSE, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    return run_bound(conn, &Q_EVENTS_CLOSE, stmt, bind_int(stmt, 2, now));
}

static store_status_t secret_insert(store_conn_t *conn, const char *id,
                                    const store_wh_secret_t *secret)
{
    sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_SUB_GET, id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        st = sub_from_row(&Q_SUB_GET, stmt, out);
    else
        st = rc == SQLITE_DONE ? STORE_NOT_FOUND : conn_fail(conn, &Q_SUB_GET, rc);
    stmt_done(stmt);
    return st;
}

store_status_t store_subscription_each(store_conn_t *conn, const char *tenant_id,
                                       int (*each)(const store_subscription_t *sub, void *ctx),
                                       void *ctx)
{
    const store_sql_t *q = tenant_id != NULL ? &Q_SUB_OF_TENANT : &Q_SUB_ALL;
    sqlite3_stmt *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = tenant_id != NULL ? conn_prepare_key(conn, q, tenant_id, &stmt)
                               : conn_prepare(conn, q, &stmt);
    if (st != STORE_OK)
        return st;
    int rc;
    store_subscription_t sub;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if ((st = sub_from_row(q, stmt, &sub)) != STORE_OK || each(&sub, ctx) != 0)
            break;
    }
    if (st == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = conn_fail(conn, q, rc);
    stmt_done(stmt);
    return st;
}

static store_status_t update_tx(store_conn_t *conn, const void *arg)
{
    const store_subscription_t *s = arg;
    sqlite3_stmt *stmt;
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
    int rc = sqlite3_step(stmt);
    bool found = rc == SQLITE_ROW && column_copy(stmt, 0, tenant_id, sizeof tenant_id);
    if (rc == SQLITE_ROW)
        rc = sqlite3_step(stmt);
    st = rc == SQLITE_DONE ? STORE_OK : conn_fail(conn, &Q_SUB_UPDATE, rc);
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
    sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SECRETS_OF, id, &stmt);
    if (st != STORE_OK)
        return st;
    *count = 0;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW && *count < STORE_WH_SECRETS_MAX) {
        store_wh_secret_t *s = &out[*count];
        s->seq = sqlite3_column_int64(stmt, 0);
        s->created_at = sqlite3_column_int64(stmt, 2);
        if (!column_blob_copy(stmt, 1, s->sealed, sizeof s->sealed, &s->sealed_len) ||
            s->sealed_len == 0) {
            st = store_bad_row(&Q_SECRETS_OF);
            break;
        }
        (*count)++;
    }
    if (st == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SECRET_COUNT, id, &stmt);
    bool found;
    if (st == STORE_OK)
        st = query_int(conn, &Q_SECRET_COUNT, stmt, count, &found);
    return st;
}

static store_status_t touch(store_conn_t *conn, const char *id, int64_t now)
{
    sqlite3_stmt *stmt;
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
        sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_BACKLOG, id, &stmt);
    if (st != STORE_OK)
        return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        out->pending = sqlite3_column_int64(stmt, 0);
        out->held = sqlite3_column_int64(stmt, 1);
        out->failed = sqlite3_column_int64(stmt, 2);
        out->delivered = sqlite3_column_int64(stmt, 3) - out->pending - out->held - out->failed;
        rc = SQLITE_DONE;
    }
    st = rc == SQLITE_DONE ? STORE_OK : conn_fail(conn, &Q_BACKLOG, rc);
    stmt_done(stmt);
    return st;
}

/* ---- deliveries as the operator sees them */

static store_status_t delivery_from_row(sqlite3_stmt *stmt, store_delivery_t *d)
{
    memset(d, 0, sizeof *d);
    bool ok = column_copy(stmt, 0, d->id, sizeof d->id) &&
              column_copy(stmt, 1, d->event_id, sizeof d->event_id) &&
              column_copy(stmt, 2, d->event_type, sizeof d->event_type) &&
              column_copy(stmt, 3, d->trace_id, sizeof d->trace_id) &&
              column_copy(stmt, 4, d->state, sizeof d->state);
    if (!ok)
        return store_bad_row(&Q_DELIVERY_LIST);
    d->attempts = sqlite3_column_int64(stmt, 5);
    d->first_attempt_at = sqlite3_column_int64(stmt, 6);
    d->window_ends_at = sqlite3_column_int64(stmt, 7);
    d->next_attempt_at = sqlite3_column_int64(stmt, 8);
    d->last_attempt_at = sqlite3_column_int64(stmt, 9);
    d->last_status = (int)sqlite3_column_int64(stmt, 10);
    const unsigned char *err = sqlite3_column_text(stmt, 11);
    if (err != NULL)
        snprintf(d->last_error, sizeof d->last_error, "%s", (const char *)err);
    d->created_at = sqlite3_column_int64(stmt, 12);
    d->delivered_at = sqlite3_column_int64(stmt, 13);
    return STORE_OK;
}

store_status_t store_delivery_each(store_conn_t *conn, const char *subscription_id,
                                   const char *state, int64_t since_ms,
                                   int (*each)(const store_delivery_t *d, void *ctx), void *ctx)
{
    sqlite3_stmt *stmt;
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
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if ((st = delivery_from_row(stmt, &d)) != STORE_OK || each(&d, ctx) != 0)
            break;
    }
    if (st == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
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
    sqlite3_stmt *stmt;
    if ((st = conn_prepare_key(conn, q, a->subscription_id, &stmt)) != STORE_OK)
        return st;
    bool bound = (a->event_id != NULL ? bind_text(stmt, 2, a->event_id)
                                      : bind_int(stmt, 2, a->since_ms)) &&
                 bind_int(stmt, 3, a->now);
    return run_counted(conn, q, stmt, bound, a->count);
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
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_FAN_OUT, tenant_id, &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = bind_text(stmt, 2, event_id) && bind_text(stmt, 3, event_type) &&
                 bind_int(stmt, 4, now);
    return run_bound(conn, &Q_FAN_OUT, stmt, bound);
}

/* ---- the dispatcher: leases */

typedef struct leased {
    char id[STORE_WH_ID_MAX];
    int64_t updated_at;
} leased_t;

typedef struct claim_args {
    const store_wh_claim_t *claim;
    leased_t *rows;
    size_t count, cap;
    int64_t *next_due;
} claim_args_t;

static store_status_t release_idle(store_conn_t *conn, const store_wh_claim_t *c)
{
    for (size_t i = 0; i < c->idle_count; i++) {
        sqlite3_stmt *stmt;
        store_status_t st = conn_prepare_key(conn, &Q_LEASE_RELEASE_IDLE, c->owner, &stmt);
        if (st != STORE_OK)
            return st;
        bool bound = bind_text(stmt, 2, c->idle[i]) && bind_int(stmt, 3, c->now);
        if ((st = run_bound(conn, &Q_LEASE_RELEASE_IDLE, stmt, bound)) != STORE_OK)
            return st;
    }
    return STORE_OK;
}

static bool leased_push(claim_args_t *a, sqlite3_stmt *stmt)
{
    leased_t *grown = grow_array(a->rows, &a->cap, a->count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return false;
    a->rows = grown;
    leased_t *row = &a->rows[a->count];
    if (!column_copy(stmt, 0, row->id, sizeof row->id))
        return false;
    row->updated_at = sqlite3_column_int64(stmt, 1);
    a->count++;
    return true;
}

static store_status_t next_due_all(store_conn_t *conn, const store_wh_claim_t *c,
                                   int64_t *next_due)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_NEXT_DUE_ALL, c->owner, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, c->lease_now))
        return conn_bind_failed(conn, &Q_NEXT_DUE_ALL, stmt);
    bool found;
    *next_due = 0;
    return query_int(conn, &Q_NEXT_DUE_ALL, stmt, next_due, &found);
}

static store_status_t claim_tx(store_conn_t *conn, const void *arg)
{
    claim_args_t *a = (claim_args_t *)arg;
    const store_wh_claim_t *c = a->claim;
    a->count = 0;
    store_status_t st = release_idle(conn, c);
    sqlite3_stmt *stmt;
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_LEASE_CLAIM, c->owner, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, c->lease_until) || !bind_int(stmt, 3, c->now) ||
        !bind_int(stmt, 4, c->lease_now))
        return conn_bind_failed(conn, &Q_LEASE_CLAIM, stmt);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        if (!leased_push(a, stmt)) {
            st = store_bad_row(&Q_LEASE_CLAIM);
            break;
        }
    if (st == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = conn_fail(conn, &Q_LEASE_CLAIM, rc);
    if (st == STORE_OK && rc == SQLITE_ROW) /* stopped early: finish the UPDATE anyway */
        while (sqlite3_step(stmt) == SQLITE_ROW) {
        }
    stmt_done(stmt);
    if (st != STORE_OK)
        return st;
    return next_due_all(conn, c, a->next_due);
}

store_status_t store_wh_claim(store_conn_t *conn, const store_wh_claim_t *claim,
                              int (*each)(const char *id, int64_t updated_at, void *ctx),
                              void *ctx, int64_t *next_due)
{
    claim_args_t args = {.claim = claim, .next_due = next_due};
    store_status_t st = conn_write(conn, claim_tx, &args);
    for (size_t i = 0; st == STORE_OK && i < args.count; i++)
        if (each(args.rows[i].id, args.rows[i].updated_at, ctx) != 0)
            break;
    free(args.rows);
    return st;
}

static store_status_t release_all_tx(store_conn_t *conn, const void *arg)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_LEASE_RELEASE_ALL, arg, &stmt);
    if (st != STORE_OK)
        return st;
    return conn_run(conn, &Q_LEASE_RELEASE_ALL, stmt);
}

store_status_t store_wh_release_all(store_conn_t *conn, const char *owner)
{
    return conn_write(conn, release_all_tx, owner);
}

/* ---- the dispatcher: outcomes */

static const char *result_state(store_wh_result_t r)
{
    switch (r) {
    case STORE_WH_DELIVERED: return "delivered";
    case STORE_WH_RETRY: return "pending";
    case STORE_WH_FAILED: return "failed";
    case STORE_WH_HELD: return "held";
    }
    return "failed";
}

static store_status_t deauthorize(store_conn_t *conn, const char *sub_id, int64_t at)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_DEAUTHORIZE, sub_id, &stmt);
    if (st != STORE_OK)
        return st;
    if ((st = run_bound(conn, &Q_DEAUTHORIZE, stmt, bind_int(stmt, 2, at))) != STORE_OK)
        return st;
    if ((st = conn_prepare_key(conn, &Q_HOLD_PENDING, sub_id, &stmt)) != STORE_OK)
        return st;
    return conn_run(conn, &Q_HOLD_PENDING, stmt);
}

static store_status_t record_one(store_conn_t *conn, const store_wh_outcome_t *o)
{
    store_status_t st;
    if (o->deauthorize && (st = deauthorize(conn, o->subscription_id, o->at)) != STORE_OK)
        return st;
    sqlite3_stmt *stmt;
    const store_sql_t *q = o->delivery_rowid > 0 ? &Q_OUTCOME_ROWID : &Q_OUTCOME;
    if ((st = conn_prepare_key(conn, q, o->delivery_id, &stmt)) != STORE_OK)
        return st;
    bool delivered = o->result == STORE_WH_DELIVERED;
    int64_t next = o->result == STORE_WH_RETRY ? o->next_attempt_at : o->at;
    bool bound =
        bind_text(stmt, 2, o->trace_id) && bind_int(stmt, 3, o->attempts) &&
        bind_text(stmt, 4, result_state(o->result)) &&
        (o->status > 0 ? bind_int(stmt, 5, o->status)
                       : sqlite3_bind_null(stmt, 5) == SQLITE_OK) &&
        bind_text_or_null(stmt, 6, o->error) && bind_int(stmt, 7, next) &&
        (delivered ? bind_int(stmt, 8, o->at) : sqlite3_bind_null(stmt, 8) == SQLITE_OK) &&
        (o->delivery_rowid <= 0 || bind_int(stmt, 9, o->delivery_rowid)) &&
        bind_int(stmt, 10, o->first_attempt_at) && bind_int(stmt, 11, o->window_ends_at) &&
        bind_int(stmt, 12, o->sent_at);
    return run_bound(conn, q, stmt, bound);
}

/* Every outcome, one prepared statement each, in their order (a
 * deauthorization before what follows it). */
static store_status_t record_all(store_conn_t *conn, const store_wh_outcome_t *outcomes,
                                 size_t count)
{
    store_status_t st = STORE_OK;
    for (size_t i = 0; st == STORE_OK && i < count; i++)
        st = record_one(conn, &outcomes[i]);
    return st;
}

store_status_t store_wh_record_outcomes(store_conn_t *conn, const store_wh_outcome_t *outcomes,
                                        size_t count)
{
    store_wh_attempt_t *none = NULL;
    size_t zero = 0;
    return store_wh_step(conn, outcomes, count, NULL, 0, NULL, 0, &none, &zero);
}

/* ---- the dispatcher: beginning attempts */

typedef struct attempts_out {
    store_wh_attempt_t *rows;
    size_t count, cap;
} attempts_out_t;

void store_wh_event_free(store_wh_event_t *e)
{
    free(e->payload);
    free(e->account_uuid);
    free(e->account_id);
    free(e->from_tx);
    free(e->latest_tx);
    memset(e, 0, sizeof *e);
}

void store_wh_attempts_free(store_wh_attempt_t *attempts, size_t count)
{
    for (size_t i = 0; attempts != NULL && i < count; i++)
        store_wh_event_free(&attempts[i].event);
    free(attempts);
}

static store_wh_attempt_t *attempt_push(attempts_out_t *out)
{
    store_wh_attempt_t *grown = grow_array(out->rows, &out->cap, out->count + 1, sizeof *grown, 32);
    if (grown == NULL)
        return NULL;
    out->rows = grown;
    store_wh_attempt_t *a = &out->rows[out->count++];
    memset(a, 0, sizeof *a);
    return a;
}

/* Is the subscription still ours and unchanged? */
static store_status_t check_sub(store_conn_t *conn, const char *owner, store_wh_begin_t *r)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_CHECK, r->subscription_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, owner))
        return conn_bind_failed(conn, &Q_SUB_CHECK, stmt);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        r->stale = sqlite3_column_int64(stmt, 0) != r->updated_at;
        r->lost = sqlite3_column_int64(stmt, 1) == 0;
    } else if (rc == SQLITE_DONE) {
        r->lost = true;
    } else {
        st = conn_fail(conn, &Q_SUB_CHECK, rc);
    }
    stmt_done(stmt);
    return st;
}

/* A JSON array of rowids for the set-based statements (json_each): one
 * statement per batch instead of one per delivery. */
typedef struct idlist {
    char *text;
    size_t len, cap, count;
} idlist_t;

static bool idlist_init(idlist_t *l, size_t max)
{
    l->cap = max * 22 + 3; /* a sign, 19 digits and a comma each, the brackets */
    l->text = malloc(l->cap);
    l->len = l->count = 0;
    if (l->text == NULL)
        return false;
    l->text[l->len++] = '[';
    l->text[l->len] = '\0';
    return true;
}

static void idlist_add(idlist_t *l, int64_t id)
{
    l->len += (size_t)snprintf(l->text + l->len, l->cap - l->len, "%s%lld",
                               l->count > 0 ? "," : "", (long long)id);
    l->count++;
}

/* The list as JSON; more ids may be added after. */
static const char *idlist_text(idlist_t *l)
{
    l->text[l->len] = ']';
    l->text[l->len + 1] = '\0';
    return l->text;
}

/* Runs q over the rowids of l (?1) with up to three integer parameters. */
static store_status_t run_set(store_conn_t *conn, const store_sql_t *q, idlist_t *l,
                              const int64_t *params, int param_count)
{
    if (l->count == 0)
        return STORE_OK;
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, q, idlist_text(l), &stmt);
    if (st != STORE_OK)
        return st;
    bool bound = true;
    for (int i = 0; i < param_count; i++)
        bound = bound && bind_int(stmt, i + 2, params[i]);
    return run_bound(conn, q, stmt, bound);
}

/* What the batch needs of a due row beyond its attempt. */
typedef struct due_row {
    int64_t rowid, event_rowid, window_ends_at;
    bool unclaimed;
} due_row_t;

/* A due row with its event (columns of Q_DUE); the attempt it begins. */
static bool due_from_row(sqlite3_stmt *stmt, store_wh_attempt_t *a, due_row_t *due)
{
    store_wh_event_t *e = &a->event;
    due->window_ends_at = sqlite3_column_int64(stmt, 3);
    e->payload = column_strdup(stmt, 5);
    e->account_uuid = column_strdup(stmt, 6);
    e->account_id = column_strdup(stmt, 7);
    e->from_ms = sqlite3_column_int64(stmt, 8);
    e->from_tx = column_strdup(stmt, 9);
    e->latest_ms = sqlite3_column_int64(stmt, 10);
    e->latest_tx = column_strdup(stmt, 11);
    e->has_ids = sqlite3_column_int64(stmt, 12) != 0;
    due->unclaimed = sqlite3_column_int64(stmt, 13) != 0;
    due->rowid = a->rowid = sqlite3_column_int64(stmt, 14);
    due->event_rowid = sqlite3_column_int64(stmt, 15);
    a->attempts = sqlite3_column_int64(stmt, 16) + 1;
    a->first_attempt_at = sqlite3_column_int64(stmt, 17); /* NULL reads as 0 */
    a->window_ends_at = due->window_ends_at;
    return column_copy(stmt, 0, a->delivery_id, sizeof a->delivery_id) &&
           column_copy(stmt, 1, a->event_id, sizeof a->event_id) &&
           column_copy(stmt, 2, a->trace_id, sizeof a->trace_id) &&
           column_copy(stmt, 4, e->type, sizeof e->type);
}

/* The due deliveries of one request with their events, but those of
 * `skip` (a JSON array of rowids). The SELECT is finished before any of its
 * rows is updated. dues[i] describes the i-th attempt pushed. */
static store_status_t select_due(store_conn_t *conn, const store_wh_begin_t *r, int64_t now,
                                 const char *skip, attempts_out_t *out, due_row_t *dues)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_DUE, r->subscription_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, now) || !bind_int(stmt, 3, (int64_t)r->max) ||
        !bind_text(stmt, 4, skip))
        return conn_bind_failed(conn, &Q_DUE, stmt);
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW && n < r->max) {
        store_wh_attempt_t *a = attempt_push(out);
        if (a == NULL) {
            st = store_bad_argument("store_wh_step: out of memory");
            break;
        }
        if (!due_from_row(stmt, a, &dues[n])) {
            st = store_bad_row(&Q_DUE);
            break;
        }
        n++;
    }
    if (st == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = conn_fail(conn, &Q_DUE, rc);
    stmt_done(stmt);
    return st;
}

/* The earliest due time of the subscription's pending deliveries but
 * those of `skip` (a JSON array of rowids); 0 when none. */
static store_status_t next_due_of(store_conn_t *conn, const char *sub_id, const char *skip,
                                  int64_t *next_due)
{
    sqlite3_stmt *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_NEXT_DUE, sub_id, &stmt);
    bool found;
    *next_due = 0;
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, skip))
        return conn_bind_failed(conn, &Q_NEXT_DUE, stmt);
    return query_int(conn, &Q_NEXT_DUE, stmt, next_due, &found);
}

/* Drops attempt i of out (a delivery whose window closed), keeping order. */
static void attempt_drop(attempts_out_t *out, size_t i)
{
    store_wh_event_free(&out->rows[i].event);
    memmove(&out->rows[i], &out->rows[i + 1], (out->count - i - 1) * sizeof out->rows[i]);
    out->count--;
}

/* The selected rows of one request: windows closed are failed, the
 * others' events claimed, each set in one statement. The events were read in
 * this same write transaction, so no change can widen them in between. */
static store_status_t begin_selected(store_conn_t *conn, int64_t now, size_t index,
                                     attempts_out_t *out, size_t first, const due_row_t *dues)
{
    idlist_t closed, claims;
    size_t selected = out->count - first;
    bool ok = idlist_init(&closed, selected);
    ok = idlist_init(&claims, selected) && ok;
    store_status_t st = ok ? STORE_OK : store_bad_argument("store_wh_step: out of memory");
    for (size_t k = 0, i = first; st == STORE_OK && k < selected; k++) {
        if (dues[k].window_ends_at != 0 && dues[k].window_ends_at <= now) {
            idlist_add(&closed, dues[k].rowid);
            attempt_drop(out, i);
            continue;
        }
        out->rows[i++].request = index;
        if (dues[k].unclaimed)
            idlist_add(&claims, dues[k].event_rowid);
    }
    if (st == STORE_OK)
        st = run_set(conn, &Q_WINDOWS_CLOSED, &closed, NULL, 0);
    if (st == STORE_OK)
        st = run_set(conn, &Q_EVENTS_CLAIM, &claims, &now, 1);
    free(closed.text);
    free(claims.text);
    return st;
}

/* The deliveries begun here and not recorded yet, then those selected now:
 * neither is due again for this dispatcher. */
static bool skip_list(const store_wh_begin_t *r, idlist_t *skip)
{
    if (!idlist_init(skip, r->exclude_count + r->max))
        return false;
    for (size_t i = 0; i < r->exclude_count; i++)
        idlist_add(skip, r->exclude[i]);
    return true;
}

static store_status_t begin_request(store_conn_t *conn, const char *owner, int64_t now,
                                    store_wh_begin_t *r, size_t index, attempts_out_t *out)
{
    store_status_t st = check_sub(conn, owner, r);
    if (st != STORE_OK || r->lost || r->stale || r->max == 0)
        return st;
    idlist_t skip;
    due_row_t *dues = calloc(r->max, sizeof *dues);
    if (dues == NULL || !skip_list(r, &skip)) {
        free(dues);
        return store_bad_argument("store_wh_step: out of memory");
    }
    size_t first = out->count;
    st = select_due(conn, r, now, idlist_text(&skip), out, dues);
    size_t selected = out->count - first;
    for (size_t k = 0; k < selected; k++)
        idlist_add(&skip, dues[k].rowid);
    if (st == STORE_OK)
        st = begin_selected(conn, now, index, out, first, dues);
    free(dues);
    if (st == STORE_OK)
        r->begun = out->count - first;
    if (st == STORE_OK && selected >= r->max)
        r->next_due = now; /* a full batch: more may be due */
    else if (st == STORE_OK)
        st = next_due_of(conn, r->subscription_id, idlist_text(&skip), &r->next_due);
    free(skip.text);
    return st;
}

typedef struct step_args {
    const store_wh_outcome_t *outcomes;
    size_t outcome_count;
    const char *owner;
    int64_t now;
    store_wh_begin_t *requests;
    size_t count;
    attempts_out_t *out;
} step_args_t;

static store_status_t step_tx(store_conn_t *conn, const void *arg)
{
    const step_args_t *b = arg;
    for (size_t i = 0; i < b->out->count; i++)
        store_wh_event_free(&b->out->rows[i].event); /* a retried transaction starts over */
    b->out->count = 0;
    store_status_t recorded = record_all(conn, b->outcomes, b->outcome_count);
    if (recorded != STORE_OK)
        return recorded;
    for (size_t i = 0; i < b->count; i++) {
        store_wh_begin_t *r = &b->requests[i];
        r->lost = r->stale = false;
        r->begun = 0;
        r->next_due = 0;
        store_status_t st = begin_request(conn, b->owner, b->now, r, i, b->out);
        if (st != STORE_OK)
            return st;
    }
    return STORE_OK;
}

store_status_t store_wh_step(store_conn_t *conn, const store_wh_outcome_t *outcomes,
                             size_t outcome_count, const char *owner, int64_t now,
                             store_wh_begin_t *requests, size_t count, store_wh_attempt_t **out,
                             size_t *out_count)
{
    attempts_out_t rows = {0};
    *out = NULL;
    *out_count = 0;
    if (outcome_count == 0 && count == 0)
        return STORE_OK;
    for (size_t i = 0; i < count; i++) /* room for every attempt at once: no regrowth */
        rows.cap += requests[i].max;
    if (rows.cap > 0 && (rows.rows = calloc(rows.cap, sizeof *rows.rows)) == NULL)
        return store_bad_argument("store_wh_step: out of memory");
    step_args_t args = {outcomes, outcome_count, owner, now, requests, count, &rows};
    store_status_t st = conn_write(conn, step_tx, &args);
    if (st != STORE_OK) {
        store_wh_attempts_free(rows.rows, rows.count);
        return st;
    }
    *out = rows.rows;
    *out_count = rows.count;
    return STORE_OK;
}

store_status_t store_wh_begin_attempts(store_conn_t *conn, const char *owner, int64_t now,
                                       store_wh_begin_t *requests, size_t count,
                                       store_wh_attempt_t **out, size_t *out_count)
{
    return store_wh_step(conn, NULL, 0, owner, now, requests, count, out, out_count);
}

store_status_t store_wh_backlog_each(store_conn_t *conn,
                                     int (*each)(const char *id, int64_t pending, void *ctx),
                                     void *ctx, int64_t *deauthorized)
{
    sqlite3_stmt *stmt;
    *deauthorized = 0;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_BACKLOG_ALL, &stmt);
    if (st != STORE_OK)
        return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(stmt, 0);
        *deauthorized += sqlite3_column_int64(stmt, 2) != 0;
        if (id != NULL && each(id, sqlite3_column_int64(stmt, 1), ctx) != 0)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = conn_fail(conn, &Q_BACKLOG_ALL, rc);
    stmt_done(stmt);
    return st;
}
