/* store/webhook_dispatch.c: the dispatcher's statements. The protocol they
 * implement, and why, is at the top of store/webhook_dispatch.h; this file
 * is how: each round or batch is one write transaction, and what a batch
 * does to many rows is one statement over a JSON array of rowids. */
#include "store/webhook_dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "store/internal.h"

#define DUE_EXISTS(sub)                                                                 \
    "EXISTS (SELECT 1 FROM deliveries d WHERE d.subscription_id = " sub                \
    " AND d.state = 'pending' AND d.next_attempt_at <= ?3)"
/* PostgreSQL's twin of `value FROM json_each(param)` over a JSON array of
 * rowids: the rowids as bigints. */
#define ROWIDS_PG(param) "json_array_elements_text(" param "::json)::bigint"

static const store_sql_t Q_LEASE_RELEASE_IDLE = {
    "wh_lease_release_idle",
    "UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL"
    " WHERE id = ?2 AND lease_owner = ?1 AND NOT " DUE_EXISTS("?2"), NULL};
static const store_sql_t Q_LEASE_CLAIM = {
    "wh_lease_claim",
    "UPDATE subscriptions SET lease_owner = ?1, lease_until = ?2 WHERE state = 'active'"
    " AND (lease_owner = ?1 OR ((lease_owner IS NULL OR lease_until < ?4)"
    " AND " DUE_EXISTS("subscriptions.id") "))"
    " RETURNING id, updated_at",
    /* PostgreSQL (READ COMMITTED, conn_write_claim): the rows to lease are
     * locked with SKIP LOCKED, so a dispatcher never waits for another's
     * claim or renewal, and the outer WHERE re-checks the lease on each row
     * as it now is (taken and committed meanwhile: left alone). */
    "UPDATE subscriptions SET lease_owner = $1, lease_until = $2 WHERE id IN ("
    " SELECT id FROM subscriptions WHERE state = 'active'"
    " AND (lease_owner = $1 OR ((lease_owner IS NULL OR lease_until < $4)"
    " AND EXISTS (SELECT 1 FROM deliveries d WHERE d.subscription_id = subscriptions.id"
    " AND d.state = 'pending' AND d.next_attempt_at <= $3)))"
    " FOR UPDATE SKIP LOCKED)"
    " AND state = 'active' AND (lease_owner = $1 OR lease_owner IS NULL OR lease_until < $4)"
    " RETURNING id, updated_at"};
static const store_sql_t Q_NEXT_DUE_ALL = {
    "wh_next_due_all",
    "SELECT min((SELECT min(d.next_attempt_at) FROM deliveries d"
    " WHERE d.subscription_id = s.id AND d.state = 'pending')) FROM subscriptions s"
    " WHERE s.state = 'active' AND (s.lease_owner IS NULL OR s.lease_owner = ?1"
    " OR s.lease_until < ?2)", NULL};
static const store_sql_t Q_LEASE_RELEASE_ALL = {
    "wh_lease_release_all",
    "UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?1", NULL};
static const store_sql_t Q_SUB_CHECK = {
    "wh_sub_check", "SELECT updated_at, state = 'active' AND lease_owner IS ?2"
                    " FROM subscriptions WHERE id = ?1",
    "SELECT updated_at, state = 'active' AND lease_owner IS NOT DISTINCT FROM ?2::text"
    " FROM subscriptions WHERE id = ?1"};
static const store_sql_t Q_DUE = {
    "wh_due", "SELECT d.id, d.event_id, d.trace_id, d.window_ends_at, e.type, e.payload,"
              " e.account_uuid, e.account_id, e.from_ms, e.from_tx, e.latest_ms, e.latest_tx,"
              " e.has_ids, e.claimed_at IS NULL, d.rowid, e.rowid, d.attempts, d.first_attempt_at"
              " FROM deliveries d JOIN events e ON e.id = d.event_id"
              " WHERE d.subscription_id = ?1 AND d.state = 'pending' AND d.next_attempt_at <= ?2"
              " AND d.rowid NOT IN (SELECT value FROM json_each(?4))"
              " ORDER BY d.next_attempt_at LIMIT ?3",
    "SELECT d.id, d.event_id, d.trace_id, d.window_ends_at, e.type, e.payload,"
    " e.account_uuid, e.account_id, e.from_ms, e.from_tx, e.latest_ms, e.latest_tx,"
    " e.has_ids, e.claimed_at IS NULL, d.rowid, e.rowid, d.attempts, d.first_attempt_at"
    " FROM deliveries d JOIN events e ON e.id = d.event_id"
    " WHERE d.subscription_id = ?1 AND d.state = 'pending' AND d.next_attempt_at <= ?2"
    " AND d.rowid NOT IN (SELECT " ROWIDS_PG("?4") ")"
    " ORDER BY d.next_attempt_at LIMIT ?3"};
/* The set-based statements of a batch: ?1 is a JSON array of rowids. */
static const store_sql_t Q_WINDOWS_CLOSED = {
    "wh_windows_closed",
    "UPDATE deliveries SET state = 'failed',"
    " last_error = coalesce(last_error, 'retry window closed before the next attempt')"
    " WHERE rowid IN (SELECT value FROM json_each(?1))",
    "UPDATE deliveries SET state = 'failed',"
    " last_error = coalesce(last_error, 'retry window closed before the next attempt')"
    " WHERE rowid IN (SELECT " ROWIDS_PG("?1") ")"};
static const store_sql_t Q_NEXT_DUE = {
    "wh_next_due", "SELECT min(next_attempt_at) FROM deliveries"
                   " WHERE subscription_id = ?1 AND state = 'pending'"
                   " AND rowid NOT IN (SELECT value FROM json_each(?2))",
    "SELECT min(next_attempt_at) FROM deliveries WHERE subscription_id = ?1"
    " AND state = 'pending' AND rowid NOT IN (SELECT " ROWIDS_PG("?2") ")"};
static const store_sql_t Q_EVENTS_CLAIM = {
    "wh_events_claim", "UPDATE events SET claimed_at = ?2"
                       " WHERE rowid IN (SELECT value FROM json_each(?1)) AND claimed_at IS NULL",
    "UPDATE events SET claimed_at = ?2"
    " WHERE rowid IN (SELECT " ROWIDS_PG("?1") ") AND claimed_at IS NULL"};
/* An attempt's outcome counts it (attempts = ?3), guarded by the count
 * before it and the trace id. */
#define OUTCOME_SET                                                          \
    "UPDATE deliveries SET state = ?4, last_status = ?5, last_error = ?6,"   \
    " next_attempt_at = ?7, delivered_at = ?8, attempts = ?3,"               \
    " first_attempt_at = ?10, window_ends_at = ?11, last_attempt_at = ?12"
static const store_sql_t Q_OUTCOME = {
    "wh_outcome", OUTCOME_SET " WHERE id = ?1 AND trace_id = ?2 AND attempts = ?3 - 1", NULL};
/* The same by the rowid the attempt began with: no lookup in the id index,
 * whose random keys make each lookup touch another page. */
static const store_sql_t Q_OUTCOME_ROWID = {
    "wh_outcome_rowid",
    OUTCOME_SET " WHERE rowid = ?9 AND id = ?1 AND trace_id = ?2 AND attempts = ?3 - 1", NULL};
static const store_sql_t Q_DEAUTHORIZE = {
    "wh_deauthorize",
    "UPDATE subscriptions SET state = 'deauthorized', deauthorized_at = ?2, updated_at = ?2,"
    " lease_owner = NULL, lease_until = NULL WHERE id = ?1 AND state = 'active'", NULL};
static const store_sql_t Q_HOLD_PENDING = {
    "wh_hold_pending",
    "UPDATE deliveries SET state = 'held' WHERE subscription_id = ?1 AND state = 'pending'", NULL};
static const store_sql_t Q_BACKLOG_ALL = {
    "wh_backlog_all", "SELECT s.id, (SELECT count(*) FROM deliveries d"
                      " WHERE d.subscription_id = s.id AND d.state = 'pending'),"
                      " s.state = 'deauthorized' FROM subscriptions s ORDER BY s.id", NULL};

/* ---- small helpers */

static char *column_strdup(db_stmt_t *stmt, int col)
{
    const char *text = db_column_text(stmt, col);
    return text != NULL ? strdup((const char *)text) : NULL;
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
        db_stmt_t *stmt;
        store_status_t st = conn_prepare_key(conn, &Q_LEASE_RELEASE_IDLE, c->owner, &stmt);
        if (st != STORE_OK)
            return st;
        bool bound = bind_text(stmt, 2, c->idle[i]) && bind_int(stmt, 3, c->now);
        if ((st = run_bound(conn, &Q_LEASE_RELEASE_IDLE, stmt, bound)) != STORE_OK)
            return st;
    }
    return STORE_OK;
}

static bool leased_push(claim_args_t *a, db_stmt_t *stmt)
{
    leased_t *grown = grow_array(a->rows, &a->cap, a->count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return false;
    a->rows = grown;
    leased_t *row = &a->rows[a->count];
    if (!column_copy(stmt, 0, row->id, sizeof row->id))
        return false;
    row->updated_at = db_column_int(stmt, 1);
    a->count++;
    return true;
}

static store_status_t next_due_all(store_conn_t *conn, const store_wh_claim_t *c,
                                   int64_t *next_due)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_NEXT_DUE_ALL, c->owner, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, c->lease_now))
        return conn_bind_failed(conn, &Q_NEXT_DUE_ALL, stmt);
    *next_due = 0;
    return conn_query_int(conn, &Q_NEXT_DUE_ALL, stmt, next_due);
}

static store_status_t claim_tx(store_conn_t *conn, const void *arg)
{
    claim_args_t *a = (claim_args_t *)arg;
    const store_wh_claim_t *c = a->claim;
    a->count = 0;
    store_status_t st = release_idle(conn, c);
    db_stmt_t *stmt;
    if (st == STORE_OK)
        st = conn_prepare_key(conn, &Q_LEASE_CLAIM, c->owner, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, c->lease_until) || !bind_int(stmt, 3, c->now) ||
        !bind_int(stmt, 4, c->lease_now))
        return conn_bind_failed(conn, &Q_LEASE_CLAIM, stmt);
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW)
        if (!leased_push(a, stmt)) {
            st = store_bad_row(&Q_LEASE_CLAIM);
            break;
        }
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_LEASE_CLAIM, rc);
    if (st == STORE_OK && rc == DB_ROW) /* stopped early: finish the UPDATE anyway */
        while (db_step(stmt) == DB_ROW) {
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
    store_status_t st = conn_write_claim(conn, claim_tx, &args);
    for (size_t i = 0; st == STORE_OK && i < args.count; i++)
        if (each(args.rows[i].id, args.rows[i].updated_at, ctx) != 0)
            break;
    free(args.rows);
    return st;
}

static store_status_t release_all_tx(store_conn_t *conn, const void *arg)
{
    db_stmt_t *stmt;
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
    db_stmt_t *stmt;
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
    db_stmt_t *stmt;
    const store_sql_t *q = o->delivery_rowid > 0 ? &Q_OUTCOME_ROWID : &Q_OUTCOME;
    if ((st = conn_prepare_key(conn, q, o->delivery_id, &stmt)) != STORE_OK)
        return st;
    bool delivered = o->result == STORE_WH_DELIVERED;
    int64_t next = o->result == STORE_WH_RETRY ? o->next_attempt_at : o->at;
    bool bound =
        bind_text(stmt, 2, o->trace_id) && bind_int(stmt, 3, o->attempts) &&
        bind_text(stmt, 4, result_state(o->result)) &&
        (o->status > 0 ? bind_int(stmt, 5, o->status)
                       : bind_null(stmt, 5)) &&
        bind_text_or_null(stmt, 6, o->error) && bind_int(stmt, 7, next) &&
        (delivered ? bind_int(stmt, 8, o->at) : bind_null(stmt, 8)) &&
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
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_SUB_CHECK, r->subscription_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, owner))
        return conn_bind_failed(conn, &Q_SUB_CHECK, stmt);
    int rc = db_step(stmt);
    if (rc == DB_ROW) {
        r->stale = db_column_int(stmt, 0) != r->updated_at;
        r->lost = db_column_int(stmt, 1) == 0;
    } else if (rc == DB_DONE) {
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
    db_stmt_t *stmt;
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
static bool due_from_row(db_stmt_t *stmt, store_wh_attempt_t *a, due_row_t *due)
{
    store_wh_event_t *e = &a->event;
    due->window_ends_at = db_column_int(stmt, 3);
    e->payload = column_strdup(stmt, 5);
    e->account_uuid = column_strdup(stmt, 6);
    e->account_id = column_strdup(stmt, 7);
    e->from_ms = db_column_int(stmt, 8);
    e->from_tx = column_strdup(stmt, 9);
    e->latest_ms = db_column_int(stmt, 10);
    e->latest_tx = column_strdup(stmt, 11);
    e->has_ids = db_column_int(stmt, 12) != 0;
    due->unclaimed = db_column_int(stmt, 13) != 0;
    due->rowid = a->rowid = db_column_int(stmt, 14);
    due->event_rowid = db_column_int(stmt, 15);
    a->attempts = db_column_int(stmt, 16) + 1;
    a->first_attempt_at = db_column_int(stmt, 17); /* NULL reads as 0 */
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
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_DUE, r->subscription_id, &stmt);
    if (st != STORE_OK)
        return st;
    if (!bind_int(stmt, 2, now) || !bind_int(stmt, 3, (int64_t)r->max) ||
        !bind_text(stmt, 4, skip))
        return conn_bind_failed(conn, &Q_DUE, stmt);
    size_t n = 0;
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW && n < r->max) {
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
    if (st == STORE_OK && rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_DUE, rc);
    stmt_done(stmt);
    return st;
}

/* The earliest due time of the subscription's pending deliveries but
 * those of `skip` (a JSON array of rowids); 0 when none. */
static store_status_t next_due_of(store_conn_t *conn, const char *sub_id, const char *skip,
                                  int64_t *next_due)
{
    db_stmt_t *stmt;
    store_status_t st = conn_prepare_key(conn, &Q_NEXT_DUE, sub_id, &stmt);
    *next_due = 0;
    if (st != STORE_OK)
        return st;
    if (!bind_text(stmt, 2, skip))
        return conn_bind_failed(conn, &Q_NEXT_DUE, stmt);
    return conn_query_int(conn, &Q_NEXT_DUE, stmt, next_due);
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
    db_stmt_t *stmt;
    *deauthorized = 0;
    store_status_t st = conn_enter(conn);
    if (st == STORE_OK)
        st = conn_prepare(conn, &Q_BACKLOG_ALL, &stmt);
    if (st != STORE_OK)
        return st;
    int rc;
    while ((rc = db_step(stmt)) == DB_ROW) {
        const char *id = db_column_text(stmt, 0);
        *deauthorized += db_column_int(stmt, 2) != 0;
        if (id != NULL && each(id, db_column_int(stmt, 1), ctx) != 0)
            break;
    }
    if (rc != DB_ROW && rc != DB_DONE)
        st = conn_fail(conn, &Q_BACKLOG_ALL, rc);
    stmt_done(stmt);
    return st;
}
