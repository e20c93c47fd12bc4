/* test_store_webhooks: subscriptions, secrets and deliveries in the store
 * (store/webhooks.h, store/webhook_dispatch.h) against a real database file:
 * the outbox fan-out (one delivery per subscription listing the type,
 * pending or held), subscribing closes open INVENTORY_UPDATE events, the
 * two-secret rule, leases (one dispatcher at a time), beginning an attempt
 * claims its event, an outcome never overrides an operator's replay, the
 * backlog's count of each state, and an event's deliveries commit or roll
 * back with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/events.h"
#include "store/store.h"
#include "store/webhook_dispatch.h"
#include "store/webhooks.h"

#include "scratch_store.h"

#define TENANT "00000000-0000-4000-8000-0000000000a1"
#define OTHER "00000000-0000-4000-8000-0000000000a2"
#define NOW 1700000000000LL

typedef scratch_fixture_t fixture_t;

static void create_tenant(fixture_t *f, const char *id, char suffix)
{
    store_tenant_t tenant = {.created_at = 1000};
    snprintf(tenant.id, sizeof tenant.id, "%s", id);
    snprintf(tenant.name, sizeof tenant.name, "t");
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid,
             "00000000-0000-4000-8000-0000000000f%c", suffix);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid,
             "00000000-0000-4000-8000-0000000000e%c", suffix);
    assert_int_equal(store_tenant_create(f->conn, &tenant, &seed, NULL), STORE_OK);
}

static int setup(void **state)
{
    fixture_t *f = scratch_fixture_open();
    if (f == NULL)
        return -1;
    *state = f;
    create_tenant(f, TENANT, '1');
    create_tenant(f, OTHER, '2');
    return 0;
}

static int teardown(void **state)
{
    scratch_fixture_close(*state);
    return 0;
}

static int64_t count(fixture_t *f, const char *sql)
{
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(f->raw, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
}

static void exec(fixture_t *f, const char *sql)
{
    assert_int_equal(sqlite3_exec(f->raw, sql, NULL, NULL, NULL), SQLITE_OK);
}

static store_wh_secret_t secret_of(uint8_t byte)
{
    store_wh_secret_t s = {.sealed_len = 40, .created_at = NOW};
    memset(s.sealed, byte, s.sealed_len);
    return s;
}

static void subscribe(fixture_t *f, const char *id, const char *tenant, const char *events)
{
    store_subscription_t s = {.rate_limit = 300, .retry_attempts = 2, .retry_window_s = 3600,
                              .timeout_s = 10, .created_at = NOW, .updated_at = NOW};
    snprintf(s.id, sizeof s.id, "%s", id);
    snprintf(s.tenant_id, sizeof s.tenant_id, "%s", tenant);
    snprintf(s.url, sizeof s.url, "https://example.test/%s", id);
    snprintf(s.events, sizeof s.events, "%s", events);
    store_wh_secret_t first = secret_of(1);
    assert_int_equal(store_subscription_create(f->conn, &s, &first), STORE_OK);
}

static void event(fixture_t *f, const char *id, const char *tenant)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id,"
             " from_ms, latest_ms, has_ids) VALUES ('%s', '%s', 'INVENTORY_UPDATE', 1, 'acc',"
             " 'a1', 5, 6, 0)",
             id, tenant);
    exec(f, sql);
    assert_int_equal(
        store_deliveries_fan_out_in_tx(f->conn, tenant, id, "INVENTORY_UPDATE", NOW), STORE_OK);
}

static void test_fan_out_one_delivery_per_listing_subscription(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub_inv", TENANT, "INVENTORY_UPDATE");
    subscribe(f, "sub_forms", TENANT, "FORM_STATUS_UPDATE");
    subscribe(f, "sub_both", TENANT, "FORM_STATUS_UPDATE,INVENTORY_UPDATE");
    subscribe(f, "sub_other", OTHER, "INVENTORY_UPDATE");
    exec(f, "UPDATE subscriptions SET state = 'deauthorized' WHERE id = 'sub_both'");
    event(f, "e1", TENANT);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE event_id = 'e1'"), 2);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE subscription_id = 'sub_inv'"
                              " AND state = 'pending' AND next_attempt_at = 1700000000000"),
                     1);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE subscription_id ="
                              " 'sub_both' AND state = 'held'"),
                     1);
    assert_int_equal(count(f, "SELECT count(DISTINCT trace_id) FROM deliveries"
                              " WHERE trace_id LIKE 'trc\\_%' ESCAPE '\\'"),
                     2);
}

static void test_subscribing_closes_open_inventory_events(void **state)
{
    fixture_t *f = *state;
    exec(f, "INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id,"
            " from_ms, latest_ms, has_ids) VALUES ('open', '" TENANT "', 'INVENTORY_UPDATE', 1,"
            " 'acc', 'a1', 5, 6, 0), ('elsewhere', '" OTHER "', 'INVENTORY_UPDATE', 1, 'acc2',"
            " 'a1', 5, 6, 0)");
    subscribe(f, "sub_inv", TENANT, "INVENTORY_UPDATE");
    /* The open event stops being widened (a later change opens a new one,
     * which this subscription receives); it is not sent. */
    assert_int_equal(count(f, "SELECT claimed_at FROM events WHERE id = 'open'"), NOW);
    assert_int_equal(count(f, "SELECT claimed_at IS NULL FROM events WHERE id = 'elsewhere'"), 1);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries"), 0);
}

static void test_two_secrets_at_most_and_never_none(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    store_wh_secret_t second = secret_of(2), third = secret_of(3);
    assert_int_equal(store_subscription_secret_add(f->conn, "sub", &second, NOW + 1), STORE_OK);
    assert_int_equal(store_subscription_secret_add(f->conn, "sub", &third, NOW + 2),
                     STORE_CONFLICT);
    store_wh_secret_t got[STORE_WH_SECRETS_MAX];
    size_t n = 0;
    assert_int_equal(store_subscription_secrets(f->conn, "sub", got, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].sealed[0], 2); /* newest first */
    assert_int_equal(got[1].sealed[0], 1);
    assert_int_equal(store_subscription_secret_drop(f->conn, "sub", NOW + 3), STORE_OK);
    assert_int_equal(store_subscription_secret_drop(f->conn, "sub", NOW + 4), STORE_CONFLICT);
    assert_int_equal(store_subscription_secrets(f->conn, "sub", got, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(got[0].sealed[0], 2); /* the older one went */
    assert_int_equal(store_subscription_secret_drop(f->conn, "nope", NOW), STORE_NOT_FOUND);
}

static int note_lease(const char *id, int64_t updated_at, void *ctx)
{
    (void)updated_at;
    snprintf(ctx, STORE_WH_ID_MAX, "%s", id);
    return 0;
}

static void claim(fixture_t *f, const char *owner, int64_t now, char *leased)
{
    store_wh_claim_t c = {.owner = owner, .now = now, .lease_now = now,
                          .lease_until = now + 15000};
    int64_t next_due = 0;
    leased[0] = '\0';
    assert_int_equal(store_wh_claim(f->conn, &c, note_lease, leased, &next_due), STORE_OK);
}

static void test_one_dispatcher_at_a_time(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    char leased[STORE_WH_ID_MAX];
    claim(f, "a/0", NOW, leased);
    assert_string_equal(leased, ""); /* nothing due: no lease taken */
    event(f, "e1", TENANT);
    claim(f, "a/0", NOW, leased);
    assert_string_equal(leased, "sub");
    claim(f, "b/0", NOW + 1000, leased);
    assert_string_equal(leased, ""); /* a holds it */
    claim(f, "b/0", NOW + 15001, leased);
    assert_string_equal(leased, "sub"); /* a's lease ran out */
}

static void test_begin_claims_the_event_and_replay_wins_over_a_late_outcome(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    event(f, "e1", TENANT);
    char leased[STORE_WH_ID_MAX];
    claim(f, "a/0", NOW, leased);
    store_subscription_t sub;
    assert_int_equal(store_subscription_get(f->conn, "sub", &sub), STORE_OK);
    store_wh_begin_t req = {.subscription_id = "sub", .updated_at = sub.updated_at, .max = 10};
    store_wh_attempt_t *attempts = NULL;
    size_t n = 0;
    assert_int_equal(store_wh_begin_attempts(f->conn, "a/0", NOW, &req, 1, &attempts, &n),
                     STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(attempts[0].attempts, 1);
    assert_int_equal(attempts[0].window_ends_at, 0); /* it opens when the attempt is sent */
    assert_string_equal(attempts[0].event.type, "INVENTORY_UPDATE");
    assert_string_equal(attempts[0].event.account_id, "a1");
    assert_int_equal(count(f, "SELECT claimed_at FROM events WHERE id = 'e1'"), NOW);
    /* Another owner cannot begin it; a changed subscription is stale. */
    store_wh_begin_t other = req;
    store_wh_attempt_t *none = NULL;
    size_t zero = 0;
    assert_int_equal(store_wh_begin_attempts(f->conn, "b/0", NOW, &other, 1, &none, &zero),
                     STORE_OK);
    assert_true(other.lost);
    store_wh_attempts_free(none, zero);
    /* The operator replays while the attempt runs: its late outcome is ignored. */
    int64_t replayed = 0;
    assert_int_equal(store_delivery_replay(f->conn, "sub", "e1", 0, NOW + 5, &replayed),
                     STORE_OK);
    assert_int_equal(replayed, 1);
    store_wh_outcome_t late = {.subscription_id = "sub", .delivery_id = attempts[0].delivery_id,
                               .trace_id = attempts[0].trace_id, .attempts = 1,
                               .result = STORE_WH_FAILED, .status = 500, .at = NOW + 6};
    assert_int_equal(store_wh_record_outcomes(f->conn, &late, 1), STORE_OK);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE state = 'pending'"
                              " AND attempts = 0 AND last_status IS NULL"),
                     1);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM deliveries WHERE trace_id <> '%s'",
             attempts[0].trace_id);
    assert_int_equal(count(f, sql), 1); /* a replay has a new trace id */
    store_wh_attempts_free(attempts, n);
}

static void test_deauthorizing_outcome_holds_pending_deliveries(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    event(f, "e1", TENANT);
    event(f, "e2", TENANT);
    store_wh_outcome_t o = {.subscription_id = "sub", .attempts = 1, .result = STORE_WH_HELD,
                            .status = 401, .at = NOW + 1, .deauthorize = true};
    char delivery[STORE_WH_ID_MAX], trace[STORE_WH_ID_MAX];
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(f->raw, "SELECT id, trace_id FROM deliveries WHERE"
                                                " event_id = 'e1'",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    snprintf(delivery, sizeof delivery, "%s", (const char *)sqlite3_column_text(stmt, 0));
    snprintf(trace, sizeof trace, "%s", (const char *)sqlite3_column_text(stmt, 1));
    sqlite3_finalize(stmt);
    o.delivery_id = delivery;
    o.trace_id = trace;
    assert_int_equal(store_wh_record_outcomes(f->conn, &o, 1), STORE_OK);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE state = 'held'"), 2);
    assert_int_equal(count(f, "SELECT last_status FROM deliveries WHERE event_id = 'e1'"), 401);
    int64_t requeued = 0;
    assert_int_equal(store_subscription_reactivate(f->conn, "sub", NOW + 2, &requeued), STORE_OK);
    assert_int_equal(requeued, 2);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE state = 'pending'"
                              " AND attempts = 0 AND window_ends_at IS NULL"),
                     2);
}

/* The dispatcher begins a batch ahead of sending it. Beginning writes no
 * delivery row: what this dispatcher has begun and not recorded is left out
 * by `exclude` (due times included), and only an attempt's outcome counts
 * it, with the window it opened. The outcome's guard ignores a stale or a
 * second outcome of the same attempt. A later attempt reads the window of
 * the first. */
static void test_begun_attempt_is_written_only_by_its_outcome(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    event(f, "e1", TENANT);
    event(f, "e2", TENANT);
    char leased[STORE_WH_ID_MAX];
    claim(f, "a/0", NOW, leased);
    store_subscription_t sub;
    assert_int_equal(store_subscription_get(f->conn, "sub", &sub), STORE_OK);
    store_wh_begin_t req = {.subscription_id = "sub", .updated_at = sub.updated_at, .max = 10};
    store_wh_attempt_t *attempts = NULL;
    size_t n = 0;
    assert_int_equal(store_wh_begin_attempts(f->conn, "a/0", NOW, &req, 1, &attempts, &n),
                     STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(req.begun, 2);
    assert_int_equal(req.next_due, 0);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE claimed_at = %lld", NOW);
    assert_int_equal(count(f, sql), 2);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM deliveries WHERE state = 'pending'"
                              " AND attempts = 0 AND first_attempt_at IS NULL"
                              " AND last_attempt_at IS NULL AND next_attempt_at <= %lld", NOW);
    assert_int_equal(count(f, sql), 2);
    assert_true(attempts[0].rowid > 0 && attempts[1].rowid > 0);

    /* Begun here and not recorded: not begun again, and not due. */
    const int64_t begun[] = {attempts[0].rowid, attempts[1].rowid};
    store_wh_begin_t again = req;
    again.exclude = begun;
    again.exclude_count = 1;
    store_wh_attempt_t *more = NULL;
    size_t more_n = 0;
    assert_int_equal(store_wh_begin_attempts(f->conn, "a/0", NOW, &again, 1, &more, &more_n),
                     STORE_OK);
    assert_int_equal(more_n, 1);
    assert_int_equal(more[0].rowid, attempts[1].rowid);
    store_wh_attempts_free(more, more_n);
    again.exclude_count = 2;
    assert_int_equal(store_wh_begin_attempts(f->conn, "a/0", NOW, &again, 1, &more, &more_n),
                     STORE_OK);
    assert_int_equal(more_n, 0);
    assert_int_equal(again.next_due, 0);
    store_wh_attempts_free(more, more_n);

    store_wh_outcome_t o[2] = {
        {.subscription_id = "sub", .delivery_id = attempts[0].delivery_id,
         .delivery_rowid = attempts[0].rowid, .trace_id = attempts[0].trace_id, .attempts = 1,
         .first_attempt_at = NOW + 1, .window_ends_at = NOW + 60001, .sent_at = NOW + 1,
         .result = STORE_WH_DELIVERED, .status = 200, .at = NOW + 3},
        {.subscription_id = "sub", .delivery_id = attempts[1].delivery_id,
         .trace_id = attempts[1].trace_id, .attempts = 1, .first_attempt_at = NOW + 2,
         .window_ends_at = NOW + 60002, .sent_at = NOW + 2, .result = STORE_WH_RETRY,
         .status = 503, .next_attempt_at = NOW + 4, .at = NOW + 4},
    };
    store_wh_outcome_t stale = o[0];
    stale.attempts = 7;
    assert_int_equal(store_wh_record_outcomes(f->conn, &stale, 1), STORE_OK);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE state = 'delivered'"), 0);
    assert_int_equal(store_wh_record_outcomes(f->conn, o, 2), STORE_OK);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM deliveries WHERE state = 'delivered'"
                              " AND attempts = 1 AND delivered_at = %lld AND last_status = 200"
                              " AND first_attempt_at = %lld AND window_ends_at = %lld"
                              " AND last_attempt_at = %lld", NOW + 3, NOW + 1, NOW + 60001,
             NOW + 1);
    assert_int_equal(count(f, sql), 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM deliveries WHERE state = 'pending'"
                              " AND attempts = 1 AND last_status = 503 AND first_attempt_at = %lld"
                              " AND window_ends_at = %lld AND next_attempt_at = %lld",
             NOW + 2, NOW + 60002, NOW + 4);
    assert_int_equal(count(f, sql), 1);
    /* The same attempt's outcome again (another dispatcher sent it too after a
     * lease was lost) is ignored. */
    store_wh_outcome_t twice = o[0];
    twice.result = STORE_WH_FAILED;
    twice.status = 500;
    assert_int_equal(store_wh_record_outcomes(f->conn, &twice, 1), STORE_OK);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries WHERE state = 'delivered'"), 1);
    store_wh_attempts_free(attempts, n);

    /* The second attempt reads the window its first opened. */
    assert_int_equal(store_wh_begin_attempts(f->conn, "a/0", NOW + 4, &req, 1, &attempts, &n),
                     STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(attempts[0].attempts, 2);
    assert_int_equal(attempts[0].first_attempt_at, NOW + 2);
    assert_int_equal(attempts[0].window_ends_at, NOW + 60002);
    store_wh_attempts_free(attempts, n);
}

/* Each count of the backlog comes from its own index (v8): pending, held
 * and failed from partial ones, delivered as the rest of the total. */
static void test_backlog_counts_each_state(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub", TENANT, "INVENTORY_UPDATE");
    subscribe(f, "sub_other", TENANT, "INVENTORY_UPDATE");
    const char *ids[] = {"e1", "e2", "e3", "e4", "e5", "e6", "e7"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        event(f, ids[i], TENANT);
    exec(f, "UPDATE deliveries SET state = 'delivered' WHERE subscription_id = 'sub'"
            " AND event_id IN ('e1', 'e2', 'e3')");
    exec(f, "UPDATE deliveries SET state = 'held' WHERE subscription_id = 'sub'"
            " AND event_id = 'e4'");
    exec(f, "UPDATE deliveries SET state = 'failed' WHERE subscription_id = 'sub'"
            " AND event_id IN ('e5', 'e6')");
    store_wh_backlog_t b;
    assert_int_equal(store_subscription_backlog(f->conn, "sub", &b), STORE_OK);
    assert_int_equal(b.pending, 1);
    assert_int_equal(b.held, 1);
    assert_int_equal(b.delivered, 3);
    assert_int_equal(b.failed, 2);
    assert_int_equal(store_subscription_backlog(f->conn, "sub_other", &b), STORE_OK);
    assert_int_equal(b.pending, 7);
    assert_int_equal(b.held + b.delivered + b.failed, 0);
    assert_int_equal(store_subscription_backlog(f->conn, "sub_none", &b), STORE_OK);
    assert_int_equal(b.pending + b.held + b.delivered + b.failed, 0);
}

typedef struct append_arg {
    store_status_t then; /* what the change returns after raising its event */
} append_arg_t;

static store_status_t raise_then(store_conn_t *conn, const void *arg)
{
    const append_arg_t *a = arg;
    json_t *fields = json_pack("{s:s}", "organization_id", TENANT);
    store_status_t st = store_event_append_in_tx(conn, TENANT, "FORM_STATUS_UPDATE", fields, NOW);
    json_decref(fields);
    return st == STORE_OK ? a->then : st;
}

/* Delivery rows are written in the event's transaction: a change that rolls
 * back takes its event and their deliveries with it, one that commits keeps
 * all of them (so a committed event always has its deliveries, even across
 * a kill -9 right after the commit). */
static void test_deliveries_commit_or_roll_back_with_their_event(void **state)
{
    fixture_t *f = *state;
    subscribe(f, "sub_a", TENANT, "FORM_STATUS_UPDATE");
    subscribe(f, "sub_b", TENANT, "INVENTORY_UPDATE,FORM_STATUS_UPDATE");
    append_arg_t refused = {.then = STORE_CONFLICT};
    assert_int_equal(store_write(f->conn, raise_then, &refused), STORE_CONFLICT);
    assert_int_equal(count(f, "SELECT count(*) FROM events"), 0);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries"), 0);
    append_arg_t committed = {.then = STORE_OK};
    assert_int_equal(store_write(f->conn, raise_then, &committed), STORE_OK);
    assert_int_equal(count(f, "SELECT count(*) FROM events"), 1);
    assert_int_equal(count(f, "SELECT count(*) FROM deliveries d JOIN events e ON e.id ="
                              " d.event_id WHERE d.state = 'pending'"),
                     2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fan_out_one_delivery_per_listing_subscription,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribing_closes_open_inventory_events, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_two_secrets_at_most_and_never_none, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_one_dispatcher_at_a_time, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_begin_claims_the_event_and_replay_wins_over_a_late_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deauthorizing_outcome_holds_pending_deliveries,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_begun_attempt_is_written_only_by_its_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backlog_counts_each_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deliveries_commit_or_roll_back_with_their_event,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
