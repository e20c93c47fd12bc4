/* tincheck/runner: see runner.h. One step = one check:
 *   1. claim the oldest pending check whose lease is absent or over;
 *   2. (test_pause_ms, given only with --test-hooks and --tin-test-pause-ms)
 *      hold it, so a test can kill the process while a check is claimed;
 *   3. open the sealed TIN (tenant id and check id as associated data),
 *      apply the rules, then the matcher; wipe the clear TIN;
 *   4. in one store_write: the fenced finish (nothing is written when the
 *      claim was lost or the check was superseded meanwhile) and the event,
 *      or the tax documentation's own update;
 *   5. wake the webhook dispatcher of this process (cfg.wake).
 * A matcher that asks to retry leaves the check claimed: it comes back when
 * the lease ends. Every step is safe to repeat: a result that was already
 * written is never written again (the finish is fenced on validated_at). */
#include "tincheck/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/log.h"
#include "core/tin.h"
#include "store/events.h"
#include "store/tinchecks.h"
#include "taxdocs/tin_result.h"
#include "tincheck/rules.h"

#define IDLE_WAIT_MS 500   /* no work: look again (other processes' checks) */
#define RETRY_WAIT_MS 1000 /* after a store failure or a matcher's retry */
#define PAUSE_SLICE_MS 50

struct tincheck_runner {
    tincheck_runner_config_t cfg;
    tincheck_matcher_t matcher; /* owned */
};

tincheck_runner_t *tincheck_runner_new_with(const tincheck_runner_config_t *cfg,
                                            tincheck_matcher_t matcher, char **err)
{
    tincheck_runner_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        tincheck_matcher_free(&matcher);
        *err = strdup("out of memory");
        return NULL;
    }
    r->cfg = *cfg;
    r->matcher = matcher;
    return r;
}

tincheck_runner_t *tincheck_runner_new(const tincheck_runner_config_t *cfg, char **err)
{
    tincheck_matcher_t m;
    if (tincheck_list_matcher_open(cfg->match_file, &m, err) != 0)
        return NULL;
    return tincheck_runner_new_with(cfg, m, err);
}

void tincheck_runner_free(tincheck_runner_t *runner)
{
    if (runner == NULL)
        return;
    tincheck_matcher_free(&runner->matcher);
    free(runner);
}

/* ---- the verdict ------------------------------------------------------ */

const char *tincheck_evaluate(const tincheck_matcher_t *matcher, const char *tin_type,
                              const char *tin, const char *name)
{
    char normal[TINCHECK_NORMAL_MAX];
    if (tincheck_rules_check(tin_type, tin, normal) != TINCHECK_RULE_OK)
        return TINCHECK_INVALID_FORMAT;
    if (tincheck_type_parse(tin_type) == TINCHECK_TYPE_FOREIGN) {
        explicit_bzero(normal, sizeof normal);
        return TINCHECK_FOREIGN;
    }
    tincheck_match_t m = matcher->match(matcher->ctx, tin_type, normal, name);
    explicit_bzero(normal, sizeof normal);
    if (m == TINCHECK_MATCH_RETRY)
        return NULL;
    return m == TINCHECK_MATCH_VALID ? TINCHECK_VALID : TINCHECK_MISMATCH;
}

/* The status of a claimed check; NULL to retry later. */
static const char *check_status(const tincheck_runner_t *r, const store_tin_check_t *c)
{
    char clear[TIN_MAX];
    if (tin_open(r->cfg.tin_key, c->tenant_id, c->id, c->tin_sealed, c->tin_sealed_len, clear) !=
        0) {
        log_event(LOG_ERROR, "tin check: sealed TIN does not open",
                  json_pack("{s:s}", "check_id", c->id));
        return TINCHECK_ERROR;
    }
    const char *status = tincheck_evaluate(&r->matcher, c->tin_type, clear, c->name);
    explicit_bzero(clear, sizeof clear);
    return status;
}

/* ---- recording the result --------------------------------------------- */

typedef struct record {
    const store_tin_check_t *check;
    const char *claim;
    const char *status;
    int64_t validated_at;
    int64_t now;
    bool subject_gone; /* set when the tax documentation no longer exists */
} record_t;

/* Appends event `type` with payload (stolen) for the check's tenant. */
static store_status_t raise(store_conn_t *conn, const record_t *r, const char *type,
                            json_t *payload)
{
    store_status_t st = payload != NULL
                            ? store_event_append_in_tx(conn, r->check->tenant_id, type, payload,
                                                       r->now)
                            : STORE_ERROR;
    json_decref(payload);
    return st;
}

static store_status_t record_rttm(store_conn_t *conn, const record_t *r, const char *date)
{
    store_status_t st =
        store_tin_check_finish_in_tx(conn, r->check->id, r->claim, r->status, r->validated_at);
    if (st != STORE_OK)
        return st;
    return raise(conn, r, "RTTM_TIN_VALIDATION",
                 json_pack("{s:s, s:s, s:s}", "validation_id", r->check->id, "status",
                           r->status, "validation_date", date));
}

/* An owner that is gone gets no event: the check ends STALE. */
static store_status_t record_owner(store_conn_t *conn, const record_t *r, const char *date)
{
    char owner_id[STORE_ID_MAX];
    const store_tin_check_t *c = r->check;
    store_status_t st = store_tin_check_owner_id_in_tx(conn, c->tenant_id, c->subject_id, owner_id);
    if (st == STORE_NOT_FOUND)
        return store_tin_check_finish_in_tx(conn, c->id, r->claim, STORE_TIN_CHECK_STALE,
                                            r->validated_at);
    if (st == STORE_OK)
        st = store_tin_check_finish_in_tx(conn, c->id, r->claim, r->status, r->validated_at);
    if (st != STORE_OK)
        return st;
    return raise(conn, r, "ACCOUNT_OWNER_TIN_VALIDATION",
                 json_pack("{s:s, s:s, s:s, s:s}", "account_owner_id", c->subject_id,
                           "account_owner_external_id", owner_id, "status", r->status,
                           "validation_date", date));
}

static store_status_t record_tx(store_conn_t *conn, const void *arg)
{
    record_t *r = (record_t *)arg; /* record() owns it, writable: subject_gone */
    char date[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(r->validated_at, date);
    switch (r->check->kind) {
    case STORE_TIN_CHECK_RTTM:
        return record_rttm(conn, r, date);
    case STORE_TIN_CHECK_ACCOUNT_OWNER:
        return record_owner(conn, r, date);
    case STORE_TIN_CHECK_TAX_DOCUMENTATION: {
        store_status_t st = store_tin_check_finish_in_tx(conn, r->check->id, r->claim, r->status,
                                                         r->validated_at);
        if (st != STORE_OK)
            return st;
        st = taxdocs_record_tin_result_in_tx(conn, r->check->tenant_id, r->check->subject_id,
                                             r->status, r->validated_at, r->now);
        r->subject_gone = st == STORE_NOT_FOUND;
        return st;
    }
    }
    return STORE_ERROR;
}

/* The tax documentation of a check vanished: end the check without a result. */
static store_status_t stale_tx(store_conn_t *conn, const void *arg)
{
    const record_t *r = arg;
    return store_tin_check_finish_in_tx(conn, r->check->id, r->claim, STORE_TIN_CHECK_STALE,
                                        r->validated_at);
}

static void record(const tincheck_runner_t *runner, store_conn_t *conn,
                   const store_tin_check_t *c, const char *claim, const char *status)
{
    int64_t now = clock_now_ms(runner->cfg.clock);
    record_t r = {c, claim, status, now, now, false};
    store_status_t st = store_write(conn, record_tx, &r);
    if (st == STORE_NOT_FOUND && r.subject_gone)
        st = store_write(conn, stale_tx, &r);
    if (st == STORE_OK) {
        if (runner->cfg.wake != NULL)
            runner->cfg.wake(runner->cfg.wake_arg);
        return;
    }
    if (st == STORE_NOT_FOUND) {
        log_event(LOG_INFO, "tin check: superseded or taken over, result dropped",
                  json_pack("{s:s}", "check_id", c->id));
        return;
    }
    log_event(LOG_ERROR, "tin check: result not recorded",
              json_pack("{s:s, s:s}", "check_id", c->id, "status", store_status_name(st)));
}

/* ---- the step ----------------------------------------------------------- */

/* The test hook: holds the claimed check; false when the process stops. */
static bool test_pause(const tincheck_runner_t *r)
{
    if (r->cfg.test_pause_ms <= 0)
        return true;
    int64_t until = clock_monotonic_ms() + r->cfg.test_pause_ms;
    while (clock_monotonic_ms() < until) {
        if (atomic_load(r->cfg.stopping))
            return false;
        clock_sleep_ms(PAUSE_SLICE_MS);
    }
    return true;
}

/* A claim token unique to this attempt: the fence of every later write. */
static int make_claim(const tincheck_runner_t *r, unsigned thread_index,
                      char out[STORE_TIN_CHECK_CLAIM_MAX])
{
    uint8_t nonce[8];
    if (crypto_random_bytes(nonce, sizeof nonce) != 0)
        return -1;
    int n = snprintf(out, STORE_TIN_CHECK_CLAIM_MAX, "%s-%u-", r->cfg.instance_id, thread_index);
    for (size_t i = 0; i < sizeof nonce && n > 0 && n + 2 < STORE_TIN_CHECK_CLAIM_MAX; i++)
        n += snprintf(out + n, (size_t)(STORE_TIN_CHECK_CLAIM_MAX - n), "%02x", nonce[i]);
    return n > 0 ? 0 : -1;
}

static int64_t step_with(const tincheck_runner_t *r, store_conn_t *conn, unsigned thread_index,
                         store_tin_check_t *c)
{
    char claim[STORE_TIN_CHECK_CLAIM_MAX];
    if (make_claim(r, thread_index, claim) != 0)
        return RETRY_WAIT_MS;
    int64_t lease_now = clock_now_ms(NULL);
    store_status_t st =
        store_tin_check_claim(conn, claim, lease_now, lease_now + r->cfg.lease_ms, c);
    if (st == STORE_NOT_FOUND)
        return IDLE_WAIT_MS;
    if (st != STORE_OK) {
        log_event(LOG_WARN, "tin check: claim failed",
                  json_pack("{s:s}", "status", store_status_name(st)));
        return RETRY_WAIT_MS;
    }
    log_event(LOG_INFO, "tin check claimed", json_pack("{s:s}", "check_id", c->id));
    if (!test_pause(r))
        return 0;
    const char *status = check_status(r, c);
    if (status == NULL)
        return RETRY_WAIT_MS; /* the lease brings it back */
    record(r, conn, c, claim, status);
    return 0;
}

int64_t tincheck_runner_step(tincheck_runner_t *runner, unsigned thread_index)
{
    store_conn_t *conn = store_acquire(runner->cfg.store);
    if (conn == NULL)
        return RETRY_WAIT_MS;
    store_tin_check_t *c = malloc(sizeof *c); /* ~1.3 KiB: kept off small thread stacks */
    int64_t wait = RETRY_WAIT_MS;
    if (c != NULL) {
        wait = step_with(runner, conn, thread_index, c);
        explicit_bzero(c, sizeof *c);
    }
    free(c);
    store_release(runner->cfg.store, conn);
    return wait;
}
