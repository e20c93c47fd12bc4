/* webhooks/engine: the dispatcher (engine.h).
 *
 * The protocol with the store (leases on whole subscriptions, attempts begun
 * without a write, fenced outcomes, at least once and how many duplicates at
 * most) is described once, at the top of store/webhook_dispatch.h. This
 * comment is what the engine adds.
 *
 * Design.
 *  - A lease lasts 15 s and is renewed every claim round. Each round names
 *    the subscriptions with nothing ready or in flight here (idle), whose
 *    leases the store gives back when nothing of theirs is due.
 *  - Two threads per dispatcher, so that the database and the network work
 *    at once. The sending thread (webhook_engine_step) waits on the network
 *    (curl_multi_poll), collects finished transfers, and sends ready
 *    attempts. Its store thread runs one transaction at a time (a job):
 *    the outcomes collected so far, then the next batch of attempts begun
 *    (store_wh_step), whose events it renders to canonical JSON before
 *    handing them back. Attempts are begun up to
 *    SUB_AHEAD beyond the concurrency bound so that transfers keep flowing
 *    while the next batch commits; a job is started when a subscription
 *    runs short of ready attempts, when outcomes pile up (JOB_OUTCOMES) or
 *    have waited JOB_DELAY_US, so batches are large and commits few. Claim
 *    rounds and subscription loads run on the sending thread while the
 *    store thread is idle, so they never overtake a job's outcomes.
 *  - An attempt is begun only when its subscription's bucket holds a token
 *    for it, and sent only when the bucket (webhooks/bucket.h) still gives
 *    one and there is a free slot under its concurrency bound: taxd
 *    bounds concurrency itself, and never lets libcurl queue a transfer
 *    (libcurl's timeout would count the time spent queued). Subscriptions
 *    are independent: a slow or dead endpoint only fills its own slots.
 *  - libcurl: one multi handle per dispatcher, whose cache keeps the
 *    connections; each transfer keeps its easy handle for reuse, and what a
 *    request sends and how its answer is read is webhooks/request.h (a
 *    proxy only for tests: --webhook-test-proxy with --test-hooks).
 *  - One log line per attempt, gathered during a step and written at its
 *    end (core/log.h's batch): one write(2) per step, not per delivery.
 *  - Outcomes: 2xx delivered; 401, 403, 407 (also a proxy's 407 on CONNECT)
 *    deauthorize the subscription at once: no attempt of it starts after
 *    that answer was processed, its other running attempts are aborted, and
 *    its pending deliveries are held. Any other answer, a redirect, a TLS or
 *    connection error or a timeout is a failed attempt, retried on the
 *    window-scaled schedule of webhooks/backoff.h (a 429's Retry-After
 *    honoured within the window) or failed for good.
 *  - The event is rendered when its attempt begins, from the row read in
 *    the transaction that claimed it; the envelope's timestamp is the
 *    dispatch time, so the envelope and its signature (keys prepared per
 *    subscription) are made when the attempt is sent.
 *  - A commit in this process wakes the dispatchers (webhook_engine_wake,
 *    curl_multi_wakeup), so a new event starts without polling delay; other
 *    processes' events are found by the claim round (every 250 ms while
 *    busy, every step while idle).
 *
 * Trade-offs. The engine's share of the protocol is to remember what it
 * began: the rowids of what is ready or in flight go with each job, and an
 * attempt begun but not sent is simply dropped. A lease handed to another
 * process starts with a full bucket, so at a handover a receiver may see
 * one extra burst. Secrets and Basic credentials of leased subscriptions
 * are held in memory (opened from the vault) and wiped when dropped. */
#include "webhooks/engine.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/dbuf.h"
#include "core/crypto.h"
#include "core/grow.h"
#include "core/log.h"
#include "store/webhook_dispatch.h"
#include "store/webhooks.h"
#include "webhooks/backoff.h"
#include "webhooks/bucket.h"
#include "webhooks/event.h"
#include "webhooks/payload.h"
#include "webhooks/request.h"
#include "webhooks/signature.h"
#include "webhooks/subscription.h"
#include "webhooks/vault.h"

#define LEASE_MS 15000          /* a subscription's lease; renewed every claim round */
#define CLAIM_BUSY_MS 250       /* claim rounds while transfers run */
#define IDLE_MAX_MS 500         /* longest sleep without work (a claim round each step) */
#define POLL_MAX_MS 100         /* longest network wait: bounds stop and claim latency */
#define STORE_RETRY_MS 200      /* after a store failure */
#define SUB_CONCURRENCY 64      /* attempts in flight per subscription */
#define DISPATCHER_TRANSFERS 1024 /* attempts in flight per dispatcher */
#define SUB_AHEAD 256           /* attempts begun ahead of sending, per subscription */
#define DISPATCHER_AHEAD 1024   /* attempts begun ahead of sending, per dispatcher */
#define BATCH_MAX 256           /* attempts begun per subscription per step */
#define JOB_READY_LOW 128       /* a subscription with fewer ready: begin more now */
#define JOB_OUTCOMES 128        /* this many outcomes: record them now */
#define JOB_DELAY_US 20000      /* an outcome waits at most this long to be recorded */
#define SUB_KEEP_US 5000000LL   /* an idle subscription's bucket is kept this long */
#define DRAIN_MS 2000           /* running attempts may finish at shutdown */
#define OWNER_MAX 64

static const double LATENCY_BOUNDS[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define LATENCY_BUCKETS (sizeof LATENCY_BOUNDS / sizeof LATENCY_BOUNDS[0])

/* ---- types */

typedef struct transfer {
    webhook_request_t req;     /* its easy handle lives as long as the transfer */
    webhook_sub_t *sub;        /* never freed while in_flight > 0 */
    char delivery_id[STORE_WH_ID_MAX];
    char event_id[STORE_UUID_LEN];
    char trace_id[STORE_WH_ID_MAX];
    int64_t rowid;             /* the delivery row's */
    int64_t attempts, first_attempt_at, window_ends_at;
    int64_t sent_at;           /* wall ms */
    int64_t started_us;
    struct transfer *prev, *next; /* the running list, or the free list (next only) */
} transfer_t;

typedef struct pending_outcome {
    char sub_id[STORE_WH_ID_MAX], delivery_id[STORE_WH_ID_MAX], trace_id[STORE_WH_ID_MAX];
    char error[STORE_WH_ERROR_MAX];
    store_wh_outcome_t o;      /* its strings point into this struct when flushed */
} pending_outcome_t;

/* An attempt begun in the database that waits for its turn to be sent:
 * the store thread begins the next batch while the current one is sent. */
typedef struct ready {
    webhook_sub_t *sub;        /* never freed while ready > 0 */
    store_wh_attempt_t a;      /* its event's strings were freed once rendered */
    char *event;               /* canonical JSON (webhook_event_text), owned; NULL: no render */
    size_t event_len;
} ready_t;

typedef enum job_state { JOB_IDLE, JOB_QUEUED, JOB_DONE } job_state_t;

/* One step transaction for the dispatcher's store thread: outcomes to record,
 * then attempts to begin. The dispatcher fills it while JOB_IDLE and reads
 * it back at JOB_DONE; in between only the store thread touches it. */
typedef struct store_job {
    pending_outcome_t *outcomes; /* moved from the dispatcher; owned by the job */
    size_t outcome_count, outcome_cap;
    store_wh_outcome_t *list;  /* views into outcomes */
    store_wh_begin_t *reqs;
    webhook_sub_t **subs;      /* reqs[i] is of subs[i]; none is freed while queued */
    int64_t *excluded;         /* every reqs[i].exclude, one allocation */
    size_t count;
    int64_t now;
    store_status_t status;
    store_wh_attempt_t *attempts;
    size_t attempt_count;
    char **events;             /* attempts[i]'s event rendered, or NULL: render at harvest */
    size_t *event_lens;
} store_job_t;

typedef struct dispatcher {
    struct webhook_engine *engine;
    char owner[OWNER_MAX];
    CURLM *multi;
    webhook_sub_t **subs;
    size_t sub_count, sub_cap;
    transfer_t *running, *free_list;
    unsigned running_count;
    pending_outcome_t *outcomes;
    size_t outcome_count, outcome_cap;
    int64_t outcomes_since_us; /* when the oldest pending outcome was collected */
    int64_t next_claim_us;
    int64_t next_due_any;      /* wall ms of the earliest due delivery we may take; 0 none */
    int64_t wait_ms;           /* from the last start phase: when to look again */
    int64_t ready_wait_ms;     /* from the last start of ready attempts */
    uint64_t seen_wakes;
    uint64_t rng;
    log_batch_t log;           /* the attempts' lines, written once per step */
    ready_t *ready;            /* ready[ready_first..ready_end): in the order begun */
    size_t ready_first, ready_end, ready_cap;
    /* the store thread and its one job (job_state under job_lock) */
    pthread_mutex_t job_lock;
    pthread_cond_t job_cond;
    bool sync_init, thread_started, store_stopping;
    pthread_t store_thread;
    job_state_t job_state;
    store_job_t job;
    int64_t next_job_us;       /* after a failed job: not before */
} dispatcher_t;

struct webhook_engine {
    store_t *store;
    const taxd_clock_t *clock;
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
    char ca_file[4096];
    char egress[STORE_WH_ADDR_MAX];
    char proxy[512];
    dispatcher_t *disp;
    unsigned threads;
    _Atomic uint64_t wakes;
    _Atomic uint64_t outcomes_total[4]; /* by store_wh_result_t */
    _Atomic uint64_t latency_buckets[LATENCY_BUCKETS];
    _Atomic uint64_t latency_count, latency_sum_us;
};

/* ---- small helpers */

static int64_t now_ms(const dispatcher_t *d)
{
    return clock_now_ms(d->engine->clock);
}

static uint64_t rng_next(dispatcher_t *d)
{
    uint64_t x = d->rng; /* xorshift64*: jitter only, not a secret */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    d->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static int64_t min_i64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- subscriptions held by a dispatcher */

static webhook_sub_t *sub_find(dispatcher_t *d, const char *id)
{
    for (size_t i = 0; i < d->sub_count; i++)
        if (strcmp(d->subs[i]->id, id) == 0)
            return d->subs[i];
    return NULL;
}

static webhook_sub_t *sub_add(dispatcher_t *d, const char *id)
{
    webhook_sub_t **grown =
        grow_array(d->subs, &d->sub_cap, d->sub_count + 1, sizeof *grown, 16);
    if (grown == NULL)
        return NULL;
    d->subs = grown;
    webhook_sub_t *s = webhook_sub_new(id);
    if (s == NULL)
        return NULL;
    d->subs[d->sub_count++] = s;
    return s;
}

/* Drops subscriptions that are neither leased nor busy once their bucket
 * would have refilled anyway: forgetting them changes nothing. */
static void subs_evict(dispatcher_t *d)
{
    int64_t now_us = clock_monotonic_us();
    size_t kept = 0;
    for (size_t i = 0; i < d->sub_count; i++) {
        webhook_sub_t *s = d->subs[i];
        if (!s->leased && s->in_flight == 0 && s->ready == 0 &&
            now_us - s->last_used_us > SUB_KEEP_US)
            webhook_sub_free(s);
        else
            d->subs[kept++] = s;
    }
    d->sub_count = kept;
}

/* ---- claim rounds */

static int on_leased(const char *id, int64_t updated_at, void *ctx)
{
    dispatcher_t *d = ctx;
    webhook_sub_t *s = sub_find(d, id);
    if (s == NULL && (s = sub_add(d, id)) == NULL)
        return 0;
    s->leased = true;
    s->next_due = 0; /* new deliveries may have been committed */
    if (!s->loaded || s->updated_at != updated_at)
        s->stale = true;
    return 0;
}

static bool claim_due(dispatcher_t *d, int64_t now_us)
{
    uint64_t wakes = atomic_load(&d->engine->wakes);
    return d->running_count == 0 || wakes != d->seen_wakes || now_us >= d->next_claim_us;
}

static void claim_round(dispatcher_t *d, store_conn_t *conn)
{
    int64_t now_us = clock_monotonic_us();
    d->seen_wakes = atomic_load(&d->engine->wakes);
    d->next_claim_us = now_us + CLAIM_BUSY_MS * 1000LL;
    const char **idle = calloc(d->sub_count + 1, sizeof *idle);
    if (idle == NULL)
        return;
    size_t idle_count = 0;
    for (size_t i = 0; i < d->sub_count; i++) {
        webhook_sub_t *s = d->subs[i];
        if (s->leased && s->in_flight == 0 && s->ready == 0)
            idle[idle_count++] = s->id;
    }
    int64_t wall = clock_now_ms(NULL); /* never the test offset: leases coordinate processes */
    store_wh_claim_t claim = {.owner = d->owner, .now = now_ms(d), .lease_now = wall,
                              .lease_until = wall + LEASE_MS, .idle = idle,
                              .idle_count = idle_count};
    bool *was_leased = calloc(d->sub_count + 1, sizeof *was_leased);
    if (was_leased == NULL) {
        free(idle);
        return;
    }
    for (size_t i = 0; i < d->sub_count; i++) {
        was_leased[i] = d->subs[i]->leased;
        d->subs[i]->leased = false;
    }
    size_t before = d->sub_count;
    store_status_t st = store_wh_claim(conn, &claim, on_leased, d, &d->next_due_any);
    free(idle);
    if (st != STORE_OK)
        for (size_t i = 0; i < before; i++) /* nothing changed in the database */
            d->subs[i]->leased = was_leased[i];
    free(was_leased);
    if (st == STORE_OK)
        return;
    log_event(LOG_WARN, "webhook claim round failed",
              json_pack("{s:s}", "status", store_status_name(st)));
}

/* ---- outcomes */

static pending_outcome_t *outcome_push(dispatcher_t *d)
{
    pending_outcome_t *grown =
        grow_array(d->outcomes, &d->outcome_cap, d->outcome_count + 1, sizeof *grown, 64);
    if (grown == NULL)
        return NULL;
    d->outcomes = grown;
    if (d->outcome_count == 0)
        d->outcomes_since_us = clock_monotonic_us();
    pending_outcome_t *p = &d->outcomes[d->outcome_count++];
    memset(p, 0, sizeof *p);
    return p;
}

/* Pending outcomes as the store takes them (pointing into `pending`); NULL
 * when there are none or no memory. */
static store_wh_outcome_t *outcomes_list(pending_outcome_t *pending, size_t count)
{
    if (count == 0)
        return NULL;
    store_wh_outcome_t *list = calloc(count, sizeof *list);
    for (size_t i = 0; list != NULL && i < count; i++) {
        pending_outcome_t *p = &pending[i];
        list[i] = p->o;
        list[i].subscription_id = p->sub_id;
        list[i].delivery_id = p->delivery_id;
        list[i].trace_id = p->trace_id;
        list[i].error = p->error[0] ? p->error : NULL;
    }
    return list;
}

/* After the store took (or refused) the pending outcomes. */
static void outcomes_done(dispatcher_t *d, store_status_t st)
{
    if (st == STORE_OK) {
        d->outcome_count = 0;
        return;
    }
    log_event(LOG_WARN, "webhook outcomes not recorded yet",
              json_pack("{s:s, s:I}", "status", store_status_name(st), "count",
                        (json_int_t)d->outcome_count));
}

static void outcomes_flush(dispatcher_t *d, store_conn_t *conn)
{
    store_wh_outcome_t *list = outcomes_list(d->outcomes, d->outcome_count);
    if (list == NULL)
        return;
    outcomes_done(d, store_wh_record_outcomes(conn, list, d->outcome_count));
    free(list);
}

static void count_outcome(webhook_engine_t *e, store_wh_result_t r, int64_t latency_us)
{
    atomic_fetch_add(&e->outcomes_total[r], 1);
    if (latency_us < 0)
        return;
    double seconds = (double)latency_us / 1e6;
    for (size_t i = 0; i < LATENCY_BUCKETS; i++)
        if (seconds <= LATENCY_BOUNDS[i])
            atomic_fetch_add(&e->latency_buckets[i], 1);
    atomic_fetch_add(&e->latency_count, 1);
    atomic_fetch_add(&e->latency_sum_us, (uint64_t)latency_us);
}

static const char *result_name(store_wh_result_t r)
{
    static const char *const NAMES[] = {"delivered", "retry", "failed", "held"};
    return NAMES[r];
}

/* One log line per attempt: subscription, event, trace id, status, latency.
 * A pre-serialized fragment, gathered in the dispatcher's batch: one per
 * delivery on the hot path, written by the step that collected it. */
static void log_attempt(dispatcher_t *d, const transfer_t *t, const store_wh_outcome_t *o,
                        int64_t latency_us)
{
    /* room for every field escaped at worst (6 bytes a character) */
    char line[6 * (STORE_WH_ERROR_MAX + 4 * STORE_WH_ID_MAX) + 256];
    buf_t b = buf_over(line, sizeof line);
    buf_puts(&b, "\"subscription_id\":");
    buf_put_json_string(&b, t->sub->id);
    buf_puts(&b, ",\"event_id\":");
    buf_put_json_string(&b, t->event_id);
    buf_puts(&b, ",\"trace_id\":");
    buf_put_json_string(&b, t->trace_id);
    buf_puts(&b, ",\"delivery_id\":");
    buf_put_json_string(&b, t->delivery_id);
    buf_puts(&b, ",\"attempt\":");
    buf_put_i64(&b, t->attempts);
    buf_puts(&b, ",\"status\":");
    if (o->status > 0)
        buf_put_i64(&b, o->status);
    else
        buf_puts(&b, "null");
    buf_puts(&b, ",\"error\":");
    buf_put_json_string(&b, o->error);
    buf_puts(&b, ",\"latency_us\":");
    buf_put_i64(&b, latency_us >= 0 ? latency_us : 0);
    buf_puts(&b, ",\"outcome\":\"");
    buf_puts(&b, result_name(o->result));
    buf_putc(&b, '"');
    if (!b.overflow) /* sized above: cannot happen */
        log_batch_add(&d->log, o->result == STORE_WH_DELIVERED ? LOG_INFO : LOG_WARN,
                      "webhook attempt", line);
}

/* Records the outcome of the attempt t (its transfer is over). */
static void outcome_record(dispatcher_t *d, const transfer_t *t, store_wh_outcome_t o,
                           const char *error, int64_t latency_us)
{
    o.attempts = t->attempts;
    o.delivery_rowid = t->rowid;
    o.first_attempt_at = t->first_attempt_at;
    o.window_ends_at = t->window_ends_at;
    o.sent_at = t->sent_at;
    o.at = now_ms(d);
    pending_outcome_t *p = outcome_push(d);
    if (p == NULL) { /* not counted: the next batch begins it again */
        log_msg(LOG_ERROR, "webhook outcome dropped: out of memory");
        return;
    }
    buf_copy(p->sub_id, sizeof p->sub_id, t->sub->id);
    buf_copy(p->delivery_id, sizeof p->delivery_id, t->delivery_id);
    buf_copy(p->trace_id, sizeof p->trace_id, t->trace_id);
    buf_copy(p->error, sizeof p->error, error);
    p->o = o;
    o.error = p->error[0] ? p->error : NULL;
    log_attempt(d, t, &o, latency_us);
    count_outcome(d->engine, o.result, latency_us);
    if (o.result == STORE_WH_RETRY && (t->sub->next_due == 0 || o.next_attempt_at <
                                                                     t->sub->next_due))
        t->sub->next_due = o.next_attempt_at;
}

/* A failed attempt: retried within the window, held when the subscription
 * is deauthorized, failed when nothing fits. */
static store_wh_outcome_t failure(dispatcher_t *d, const transfer_t *t, int status,
                                  int64_t min_delay_ms)
{
    store_wh_outcome_t o = {.status = status, .result = STORE_WH_FAILED};
    if (t->sub->deauthorized) {
        o.result = STORE_WH_HELD;
        return o;
    }
    int64_t window = t->window_ends_at - t->first_attempt_at;
    int64_t next = webhook_backoff_next(t->first_attempt_at, window, t->sub->retries,
                                        (unsigned)t->attempts, now_ms(d), min_delay_ms,
                                        rng_next(d));
    if (next >= 0) {
        o.result = STORE_WH_RETRY;
        o.next_attempt_at = next;
    }
    return o;
}

/* ---- transfers */

/* A transfer from the free list, or a new one with its easy handle. */
static transfer_t *transfer_get(dispatcher_t *d)
{
    transfer_t *t = d->free_list;
    if (t != NULL) {
        d->free_list = t->next;
        webhook_request_t req = t->req;
        memset(t, 0, sizeof *t);
        t->req = req;
        return t;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    const webhook_engine_t *e = d->engine;
    if (webhook_request_init(&t->req, e->ca_file, e->proxy, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

static void transfer_release(dispatcher_t *d, transfer_t *t)
{
    if (t->prev != NULL)
        t->prev->next = t->next;
    else if (d->running == t)
        d->running = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
    webhook_request_done(&t->req);
    t->prev = NULL;
    t->next = d->free_list;
    d->free_list = t;
}

/* An attempt that could not be sent at all (the event does not render, no
 * memory): recorded as a failed attempt without network time; `permanent`
 * when trying again cannot help. */
static void start_failed(dispatcher_t *d, transfer_t *t, const char *why, bool permanent)
{
    store_wh_outcome_t o = failure(d, t, 0, 0);
    if (permanent && o.result == STORE_WH_RETRY)
        o.result = STORE_WH_FAILED;
    outcome_record(d, t, o, why, -1);
    transfer_release(d, t);
}

/* Sends ready attempt r: the envelope around its rendered event, signed. */
static void start_transfer(dispatcher_t *d, const ready_t *r)
{
    webhook_sub_t *s = r->sub;
    const store_wh_attempt_t *a = &r->a;
    transfer_t *t = transfer_get(d);
    if (t == NULL)
        return; /* no longer ready here: the next batch begins it again */
    t->sub = s;
    buf_copy(t->delivery_id, sizeof t->delivery_id, a->delivery_id);
    buf_copy(t->event_id, sizeof t->event_id, a->event_id);
    buf_copy(t->trace_id, sizeof t->trace_id, a->trace_id);
    t->rowid = a->rowid;
    t->attempts = a->attempts;
    t->sent_at = now_ms(d);
    t->first_attempt_at = a->first_attempt_at;
    t->window_ends_at = a->window_ends_at;
    if (t->first_attempt_at == 0) { /* the window opens with the first attempt */
        t->first_attempt_at = t->sent_at;
        t->window_ends_at = t->sent_at + (int64_t)s->window_s * 1000;
    }
    t->next = d->running; /* on the list first, so a failure can release it */
    if (d->running != NULL)
        d->running->prev = t;
    d->running = t;
    size_t len = 0;
    if (r->event == NULL) {
        start_failed(d, t, "the event cannot be rendered", true);
        return;
    }
    char *body = payload_envelope_raw(r->event, r->event_len, t->sent_at, &len);
    if (body == NULL) {
        start_failed(d, t, "the request could not be prepared", false);
        return;
    }
    char *signature = signature_header_keyed((const crypto_hmac_key_t *const *)s->keys,
                                             s->secret_count, body, len);
    bool ready = webhook_request_prepare(&t->req, s, t->trace_id, signature, body, len);
    free(signature);
    if (!ready || curl_multi_add_handle(d->multi, t->req.easy) != CURLM_OK) {
        start_failed(d, t, "the request could not be prepared", false);
        return;
    }
    webhook_bucket_take(&s->bucket, clock_monotonic_us());
    t->started_us = clock_monotonic_us();
    s->in_flight++;
    s->last_used_us = t->started_us;
    d->running_count++;
}

/* ---- finishing transfers */

static bool deauthorizing(long status)
{
    return status == 401 || status == 403 || status == 407;
}

/* Aborts the other running attempts of a subscription just deauthorized. */
static void abort_subscription(dispatcher_t *d, webhook_sub_t *s)
{
    transfer_t *t = d->running;
    while (t != NULL) {
        transfer_t *next = t->next;
        if (t->sub == s) {
            curl_multi_remove_handle(d->multi, t->req.easy);
            store_wh_outcome_t o = {.result = STORE_WH_HELD};
            outcome_record(d, t, o, "aborted: the subscription was deauthorized",
                           clock_monotonic_us() - t->started_us);
            s->in_flight--;
            d->running_count--;
            transfer_release(d, t);
        }
        t = next;
    }
}

static store_wh_outcome_t classify(dispatcher_t *d, transfer_t *t, CURLcode res, char *error,
                                   size_t error_cap)
{
    webhook_answer_t answer;
    webhook_request_answer(&t->req, res, &answer);
    int status = answer.status;
    error[0] = '\0';
    if (deauthorizing(status) || answer.connect_status == 407) {
        int code = deauthorizing(status) ? status : 407;
        snprintf(error, error_cap, "HTTP %d: the subscription is deauthorized", code);
        return (store_wh_outcome_t){.status = code, .result = STORE_WH_HELD,
                                    .deauthorize = true};
    }
    if (answer.result != CURLE_OK) {
        snprintf(error, error_cap, "%s", answer.error);
        return failure(d, t, 0, 0);
    }
    if (status >= 200 && status <= 299)
        return (store_wh_outcome_t){.status = status, .result = STORE_WH_DELIVERED};
    int64_t min_delay = 0;
    if (status >= 300 && status <= 399) {
        snprintf(error, error_cap, "redirect not followed");
    } else if (status == 429 && answer.retry_after_s > 0) {
        min_delay = answer.retry_after_s * 1000;
        snprintf(error, error_cap, "rate limited: Retry-After %lld s",
                 (long long)answer.retry_after_s);
    }
    return failure(d, t, status, min_delay);
}

static void finish_transfer(dispatcher_t *d, CURL *easy, CURLcode res)
{
    transfer_t *t = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
    curl_multi_remove_handle(d->multi, easy);
    if (t == NULL)
        return;
    char error[STORE_WH_ERROR_MAX];
    store_wh_outcome_t o = classify(d, t, res, error, sizeof error);
    int64_t latency = clock_monotonic_us() - t->started_us;
    webhook_sub_t *s = t->sub;
    s->in_flight--;
    d->running_count--;
    if (o.deauthorize) {
        s->deauthorized = true; /* no attempt of it starts from here on */
        log_event(LOG_WARN, "webhook subscription deauthorized",
                  json_pack("{s:s, s:i}", "subscription_id", s->id, "status", o.status));
    }
    outcome_record(d, t, o, error, latency);
    transfer_release(d, t);
    if (o.deauthorize)
        abort_subscription(d, s);
}

static void collect(dispatcher_t *d)
{
    int still = 0;
    curl_multi_perform(d->multi, &still);
    CURLMsg *msg;
    int queued;
    while ((msg = curl_multi_info_read(d->multi, &queued)) != NULL)
        if (msg->msg == CURLMSG_DONE)
            finish_transfer(d, msg->easy_handle, msg->data.result);
}

static void transfers_poll(dispatcher_t *d, int64_t wait)
{
    if (wait > POLL_MAX_MS)
        wait = POLL_MAX_MS;
    if (wait < 0)
        wait = 0;
    curl_multi_poll(d->multi, NULL, 0, (int)wait, NULL);
    collect(d);
}

/* ---- attempts begun ahead of sending */

/* Attempt a's event as canonical JSON (malloc'd; NULL when it does not
 * render), and its strings freed: only the store thread's copy is needed. */
static char *render_event(store_wh_attempt_t *a, size_t *len)
{
    const store_wh_event_t *ev = &a->event;
    webhook_event_row_t row = {
        .id = a->event_id, .type = ev->type, .payload = ev->payload,
        .account_uuid = ev->account_uuid, .account_id = ev->account_id,
        .from_ms = ev->from_ms, .latest_ms = ev->latest_ms, .from_tx = ev->from_tx,
        .latest_tx = ev->latest_tx, .has_ids = ev->has_ids};
    char *text = webhook_event_text(&row, len);
    store_wh_event_free(&a->event);
    return text;
}

static size_t ready_count(const dispatcher_t *d)
{
    return d->ready_end - d->ready_first;
}

static bool ready_push(dispatcher_t *d, webhook_sub_t *s, store_wh_attempt_t *a, char *event,
                       size_t event_len)
{
    if (d->ready_end == d->ready_cap && d->ready_first > 0) { /* reuse the sent ones' room */
        memmove(d->ready, d->ready + d->ready_first, ready_count(d) * sizeof *d->ready);
        d->ready_end -= d->ready_first;
        d->ready_first = 0;
    }
    ready_t *grown = grow_array(d->ready, &d->ready_cap, d->ready_end + 1, sizeof *grown, 256);
    if (grown == NULL)
        return false;
    d->ready = grown;
    d->ready[d->ready_end++] = (ready_t){.sub = s, .a = *a, .event = event,
                                         .event_len = event_len};
    s->ready++;
    return true;
}

typedef enum ready_verdict { READY_KEEP, READY_START, READY_DROPPED } ready_verdict_t;

/* Whether ready attempt r may be sent now, must wait, or can no longer be
 * sent. A dropped attempt was never written: its delivery is still pending,
 * held by the deauthorization, failed by the next batch when its window
 * has closed, or begun again. */
static ready_verdict_t ready_check(dispatcher_t *d, ready_t *r, int64_t now, int64_t now_us)
{
    webhook_sub_t *s = r->sub;
    if (s->deauthorized || !s->leased || s->broken)
        return READY_DROPPED;
    if (r->a.window_ends_at > 0 && r->a.window_ends_at <= now)
        return READY_DROPPED;
    if (s->stale || !s->loaded) {
        d->ready_wait_ms = 1; /* the next step reloads it */
        return READY_KEEP;
    }
    if (s->in_flight >= SUB_CONCURRENCY || d->running_count >= DISPATCHER_TRANSFERS)
        return READY_KEEP; /* a finishing transfer wakes the poll */
    if (webhook_bucket_available(&s->bucket, now_us) == 0) {
        d->ready_wait_ms =
            min_i64(d->ready_wait_ms, webhook_bucket_wait_us(&s->bucket, now_us) / 1000 + 1);
        return READY_KEEP;
    }
    return READY_START;
}

/* Sends every ready attempt that may start now, in the order they were
 * begun; the others keep their place. Those that leave from the front only
 * move ready_first: with one busy subscription nothing is copied. */
static void start_ready(dispatcher_t *d)
{
    d->ready_wait_ms = IDLE_MAX_MS;
    int64_t now = now_ms(d), now_us = clock_monotonic_us();
    size_t kept = d->ready_first;
    for (size_t i = d->ready_first; i < d->ready_end; i++) {
        ready_t *r = &d->ready[i];
        ready_verdict_t v = ready_check(d, r, now, now_us);
        if (v == READY_KEEP) {
            if (kept != i)
                d->ready[kept] = *r;
            kept++;
            continue;
        }
        if (v == READY_START)
            start_transfer(d, r);
        r->sub->ready--;
        free(r->event);
        if (kept == d->ready_first) /* nothing kept yet: the front moves */
            d->ready_first = kept = i + 1;
    }
    d->ready_end = kept;
    if (d->ready_first == d->ready_end)
        d->ready_first = d->ready_end = 0;
}

/* At shutdown: nothing ready is sent any more; each stays due. */
static void ready_drop_all(dispatcher_t *d)
{
    for (size_t i = d->ready_first; i < d->ready_end; i++) {
        ready_t *r = &d->ready[i];
        r->sub->ready--;
        free(r->event);
    }
    d->ready_first = d->ready_end = 0;
}

/* ---- beginning attempts */

/* How many attempts of s may be begun now (sent now or soon: at most
 * SUB_AHEAD beyond its concurrency bound, and no more than its bucket holds
 * tokens for); sets *wait_ms when s waits. */
static size_t sub_capacity(dispatcher_t *d, webhook_sub_t *s, int64_t now, int64_t *wait_ms)
{
    if (!s->leased || s->deauthorized || s->broken || !s->loaded || s->stale)
        return 0;
    if (s->next_due > now) {
        *wait_ms = min_i64(*wait_ms, s->next_due - now);
        return 0;
    }
    size_t ahead = (size_t)s->in_flight + s->ready;
    size_t total = (size_t)d->running_count + ready_count(d);
    if (ahead >= SUB_CONCURRENCY + SUB_AHEAD || total >= DISPATCHER_TRANSFERS + DISPATCHER_AHEAD)
        return 0; /* a finishing transfer wakes the poll */
    int64_t now_us = clock_monotonic_us();
    size_t tokens = webhook_bucket_available(&s->bucket, now_us);
    if (tokens == 0) {
        *wait_ms = min_i64(*wait_ms, webhook_bucket_wait_us(&s->bucket, now_us) / 1000 + 1);
        return 0;
    }
    if (tokens <= s->ready)
        return 0; /* the ready ones take them */
    size_t n = SUB_CONCURRENCY + SUB_AHEAD - ahead;
    size_t room = DISPATCHER_TRANSFERS + DISPATCHER_AHEAD - total;
    tokens -= s->ready;
    n = n < tokens ? n : tokens;
    n = n < room ? n : room;
    return n < BATCH_MAX ? n : BATCH_MAX;
}

static void begin_results(dispatcher_t *d, store_wh_begin_t *reqs, webhook_sub_t **subs,
                          size_t count, int64_t now)
{
    for (size_t i = 0; i < count; i++) {
        webhook_sub_t *s = subs[i];
        if (reqs[i].lost)
            s->leased = false;
        if (reqs[i].stale) {
            s->stale = true;
            d->wait_ms = 0;
        }
        if (reqs[i].lost || reqs[i].stale)
            continue;
        s->next_due = reqs[i].next_due > 0 ? reqs[i].next_due : INT64_MAX;
        if (s->next_due > now && s->next_due != INT64_MAX)
            d->wait_ms = min_i64(d->wait_ms, s->next_due - now);
    }
}

/* ---- the store thread: a step's transaction off the thread that sends */

static job_state_t job_state_get(dispatcher_t *d)
{
    pthread_mutex_lock(&d->job_lock);
    job_state_t state = d->job_state;
    pthread_mutex_unlock(&d->job_lock);
    return state;
}

/* Renders the begun attempts' events here, off the thread that sends. */
static void job_render(store_job_t *j)
{
    if (j->attempt_count == 0)
        return;
    j->events = calloc(j->attempt_count, sizeof *j->events);
    j->event_lens = calloc(j->attempt_count, sizeof *j->event_lens);
    if (j->events == NULL || j->event_lens == NULL) { /* rendered at harvest instead */
        free(j->events);
        free(j->event_lens);
        j->events = NULL;
        j->event_lens = NULL;
        return;
    }
    for (size_t i = 0; i < j->attempt_count; i++)
        j->events[i] = render_event(&j->attempts[i], &j->event_lens[i]);
}

/* The store thread keeps one connection for its life: its page cache stays
 * warm, where connections taken from the pool in turn with the dispatcher
 * thread would each find the other's commits and drop their cache. */
static void *store_thread_main(void *arg)
{
    dispatcher_t *d = arg;
    store_t *store = d->engine->store;
    store_conn_t *conn = NULL;
    pthread_setname_np(pthread_self(), "webhooks-store");
    pthread_mutex_lock(&d->job_lock);
    for (;;) {
        while (d->job_state != JOB_QUEUED && !d->store_stopping)
            pthread_cond_wait(&d->job_cond, &d->job_lock);
        if (d->job_state != JOB_QUEUED)
            break;
        pthread_mutex_unlock(&d->job_lock);
        store_job_t *j = &d->job;
        if (conn == NULL)
            conn = store_acquire(store);
        j->status = STORE_ERROR;
        if (conn != NULL)
            j->status = store_wh_step(conn, j->list, j->list ? j->outcome_count : 0, d->owner,
                                      j->now, j->reqs, j->count, &j->attempts,
                                      &j->attempt_count);
        if (j->status == STORE_OK)
            job_render(j);
        pthread_mutex_lock(&d->job_lock);
        d->job_state = JOB_DONE;
        curl_multi_wakeup(d->multi); /* the dispatcher sends what was begun at once */
    }
    pthread_mutex_unlock(&d->job_lock);
    if (conn != NULL)
        store_release(store, conn);
    return NULL;
}

/* A failed job's outcomes go back in front of those collected meanwhile. */
static void job_outcomes_back(dispatcher_t *d, store_job_t *j)
{
    size_t total = j->outcome_count + d->outcome_count;
    if (total > j->outcome_cap) {
        pending_outcome_t *grown = realloc(j->outcomes, total * sizeof *grown);
        if (grown == NULL) { /* due again: their attempts may be repeated */
            log_msg(LOG_ERROR, "webhook outcomes dropped: out of memory");
            free(j->outcomes);
            return;
        }
        j->outcomes = grown;
        j->outcome_cap = total;
    }
    if (d->outcome_count > 0)
        memcpy(j->outcomes + j->outcome_count, d->outcomes,
               d->outcome_count * sizeof *d->outcomes);
    free(d->outcomes);
    d->outcomes = j->outcomes;
    d->outcome_count = total;
    d->outcome_cap = j->outcome_cap;
}

/* Takes back a finished job: its attempts join the ready list. */
static void job_harvest(dispatcher_t *d)
{
    if (job_state_get(d) != JOB_DONE)
        return;
    store_job_t *j = &d->job;
    if (j->status == STORE_OK) {
        if (d->outcomes == NULL) { /* keep the array for the next outcomes */
            d->outcomes = j->outcomes;
            d->outcome_cap = j->outcome_cap;
        } else {
            free(j->outcomes);
        }
        begin_results(d, j->reqs, j->subs, j->count, j->now);
        for (size_t i = 0; i < j->attempt_count; i++) {
            store_wh_attempt_t *a = &j->attempts[i];
            size_t len = 0;
            char *event = j->events != NULL ? j->events[i] : render_event(a, &len);
            if (j->events != NULL)
                len = j->event_lens[i];
            if (!ready_push(d, j->subs[a->request], a, event, len)) {
                free(event); /* due again at the next batch */
                store_wh_event_free(&a->event);
            }
        }
        free(j->attempts); /* the events moved to the ready list */
        free(j->events);
        free(j->event_lens);
    } else {
        job_outcomes_back(d, j);
        store_wh_attempts_free(j->attempts, j->attempt_count);
        d->next_job_us = clock_monotonic_us() + STORE_RETRY_MS * 1000LL;
        log_event(LOG_WARN, "webhook step not recorded yet",
                  json_pack("{s:s, s:I}", "status", store_status_name(j->status), "outcomes",
                            (json_int_t)d->outcome_count));
    }
    free(j->list);
    free(j->reqs);
    free(j->subs);
    free(j->excluded);
    memset(j, 0, sizeof *j);
    pthread_mutex_lock(&d->job_lock);
    d->job_state = JOB_IDLE;
    pthread_mutex_unlock(&d->job_lock);
}

static void exclude_add(webhook_sub_t *s, int64_t rowid)
{
    if (s->exclude_fill != NULL && s->exclude_fill < s->exclude_end)
        *s->exclude_fill++ = rowid;
}

/* Tells each request of j which of its subscription's deliveries not to
 * begin: those ready or in flight here, whose outcomes are not recorded
 * (the outcomes collected so far are recorded by j itself, first). */
static bool job_exclude(dispatcher_t *d, store_job_t *j)
{
    size_t total = 0;
    for (size_t i = 0; i < j->count; i++)
        total += (size_t)j->subs[i]->in_flight + j->subs[i]->ready;
    j->excluded = calloc(total + 1, sizeof *j->excluded);
    if (j->excluded == NULL)
        return false;
    int64_t *fill = j->excluded;
    for (size_t i = 0; i < j->count; i++) {
        webhook_sub_t *s = j->subs[i];
        j->reqs[i].exclude = s->exclude_fill = fill;
        fill += (size_t)s->in_flight + s->ready;
        s->exclude_end = fill;
    }
    for (size_t i = d->ready_first; i < d->ready_end; i++)
        exclude_add(d->ready[i].sub, d->ready[i].a.rowid);
    for (transfer_t *t = d->running; t != NULL; t = t->next)
        exclude_add(t->sub, t->rowid);
    for (size_t i = 0; i < j->count; i++) {
        j->reqs[i].exclude_count = (size_t)(j->subs[i]->exclude_fill - j->reqs[i].exclude);
        j->subs[i]->exclude_fill = j->subs[i]->exclude_end = NULL;
    }
    return true;
}

/* Fills the idle job with the pending outcomes and the attempts that may
 * begin, and hands it to the store thread (nothing when there is no work). */
static void job_prepare(dispatcher_t *d, store_conn_t *conn)
{
    int64_t now = now_ms(d);
    d->wait_ms = IDLE_MAX_MS;
    if (d->next_due_any > now) /* due ones are leased here, or by another dispatcher */
        d->wait_ms = min_i64(d->wait_ms, d->next_due_any - now);
    store_job_t *j = &d->job;
    j->reqs = calloc(d->sub_count + 1, sizeof *j->reqs);
    j->subs = calloc(d->sub_count + 1, sizeof *j->subs);
    for (size_t i = 0; j->reqs != NULL && j->subs != NULL && i < d->sub_count; i++) {
        webhook_sub_t *s = d->subs[i];
        if (s->leased && (s->stale || !s->loaded))
            webhook_sub_load(s, conn, d->engine->key, d->engine->egress);
        size_t n = sub_capacity(d, s, now, &d->wait_ms);
        if (n == 0)
            continue;
        j->reqs[j->count] = (store_wh_begin_t){.subscription_id = s->id,
                                               .updated_at = s->updated_at, .max = n};
        j->subs[j->count++] = s;
    }
    if (!job_exclude(d, j)) {
        free(j->reqs);
        free(j->subs);
        memset(j, 0, sizeof *j);
        return;
    }
    j->list = outcomes_list(d->outcomes, d->outcome_count);
    if (j->list != NULL) { /* the job owns them until it is harvested */
        j->outcomes = d->outcomes;
        j->outcome_count = d->outcome_count;
        j->outcome_cap = d->outcome_cap;
        d->outcomes = NULL;
        d->outcome_count = d->outcome_cap = 0;
    }
    if (j->count == 0 && j->list == NULL) {
        free(j->reqs);
        free(j->subs);
        free(j->excluded);
        memset(j, 0, sizeof *j);
        return;
    }
    j->now = now;
    pthread_mutex_lock(&d->job_lock);
    d->job_state = JOB_QUEUED;
    pthread_cond_signal(&d->job_cond);
    pthread_mutex_unlock(&d->job_lock);
}

/* Whether the idle store thread should run a transaction now. While
 * transfers run with enough attempts ready, waiting a little gathers a
 * larger batch: fewer commits and fewer pages written per delivery. */
static bool job_wanted(dispatcher_t *d, int64_t now_us)
{
    if (d->running_count == 0 || d->outcome_count >= JOB_OUTCOMES || claim_due(d, now_us))
        return true;
    if (d->outcome_count > 0 && now_us - d->outcomes_since_us >= JOB_DELAY_US)
        return true;
    int64_t now = now_ms(d), ignored = 0;
    for (size_t i = 0; i < d->sub_count; i++) { /* nobody waits behind a busy subscription */
        webhook_sub_t *s = d->subs[i];
        if (s->leased && (s->stale || !s->loaded))
            return true;
        if (s->ready < JOB_READY_LOW && sub_capacity(d, s, now, &ignored) > 0)
            return true;
    }
    return false;
}

/* With the store thread idle: a claim round when one is due, then the next
 * job. */
static void job_next(dispatcher_t *d)
{
    if (clock_monotonic_us() < d->next_job_us) {
        d->wait_ms = STORE_RETRY_MS;
        return;
    }
    store_t *store = d->engine->store;
    store_conn_t *conn = store_acquire(store);
    if (conn == NULL) {
        d->wait_ms = STORE_RETRY_MS;
        return;
    }
    if (claim_due(d, clock_monotonic_us())) {
        outcomes_flush(d, conn); /* a deauthorization is in force before leases move */
        claim_round(d, conn);
    }
    job_prepare(d, conn);
    store_release(store, conn);
}

/* ---- the step */

static int64_t step(dispatcher_t *d)
{
    job_harvest(d);
    start_ready(d);
    bool busy = job_state_get(d) == JOB_QUEUED;
    if (d->running_count > 0 || busy) {
        /* the store thread's wakeup ends the wait when its job is done */
        transfers_poll(d, busy ? POLL_MAX_MS : min_i64(d->wait_ms, d->ready_wait_ms));
        job_harvest(d);
        start_ready(d);
    }
    if (job_state_get(d) == JOB_IDLE && job_wanted(d, clock_monotonic_us())) {
        subs_evict(d); /* no job refers to a subscription now */
        job_next(d);
        start_ready(d);
    }
    if (d->running_count > 0 || job_state_get(d) != JOB_IDLE)
        return 0;
    if (d->outcome_count > 0)
        return STORE_RETRY_MS;
    int64_t wait = min_i64(d->wait_ms, d->ready_wait_ms);
    return wait > 0 ? wait : 1;
}

int64_t webhook_engine_step(webhook_engine_t *e, unsigned thread_index)
{
    if (e == NULL || thread_index >= e->threads)
        return IDLE_MAX_MS;
    dispatcher_t *d = &e->disp[thread_index];
    int64_t wait = step(d);
    log_batch_flush(&d->log); /* before the caller sleeps */
    return wait;
}

void webhook_engine_wake(webhook_engine_t *e)
{
    if (e == NULL)
        return;
    atomic_fetch_add(&e->wakes, 1);
    for (unsigned i = 0; i < e->threads; i++)
        if (e->disp[i].multi != NULL)
            curl_multi_wakeup(e->disp[i].multi);
}

/* ---- life cycle */

int webhook_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void webhook_global_cleanup(void)
{
    curl_global_cleanup();
}

static int dispatcher_init(webhook_engine_t *e, dispatcher_t *d, const char *instance,
                           unsigned index)
{
    d->engine = e;
    snprintf(d->owner, sizeof d->owner, "%s/%u", instance, index);
    if (crypto_random_bytes(&d->rng, sizeof d->rng) != 0)
        return -1;
    d->rng |= 1; /* xorshift must not start at 0 */
    if (pthread_mutex_init(&d->job_lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&d->job_cond, NULL) != 0) {
        pthread_mutex_destroy(&d->job_lock);
        return -1;
    }
    d->sync_init = true;
    d->multi = curl_multi_init();
    if (d->multi == NULL)
        return -1;
    curl_multi_setopt(d->multi, CURLMOPT_MAXCONNECTS, (long)DISPATCHER_TRANSFERS);
    if (pthread_create(&d->store_thread, NULL, store_thread_main, d) != 0)
        return -1;
    d->thread_started = true;
    return 0;
}

/* The lease owner prefix: the process's instance id, or a random one. */
static int instance_name(const char *given, char *out, size_t cap)
{
    if (given != NULL && given[0] != '\0') {
        buf_copy(out, cap, given);
        return 0;
    }
    uint8_t bytes[6];
    char hex[CRYPTO_HEX_LEN(sizeof bytes)];
    if (crypto_random_bytes(bytes, sizeof bytes) != 0)
        return -1;
    crypto_hex_encode(bytes, sizeof bytes, hex);
    buf_copy(out, cap, hex);
    return 0;
}

webhook_engine_t *webhook_engine_new(const webhook_engine_config_t *cfg, char **err)
{
    webhook_engine_t *e = calloc(1, sizeof *e);
    unsigned threads = cfg->threads > 0 ? cfg->threads : 1;
    if (e == NULL || (e->disp = calloc(threads, sizeof *e->disp)) == NULL) {
        free(e);
        *err = strdup("webhooks: out of memory");
        return NULL;
    }
    e->store = cfg->store;
    e->clock = cfg->clock;
    e->threads = threads;
    buf_copy(e->ca_file, sizeof e->ca_file, cfg->ca_file);
    buf_copy(e->egress, sizeof e->egress, cfg->egress_address);
    buf_copy(e->proxy, sizeof e->proxy, cfg->proxy);
    if (webhook_vault_key_load(cfg->key_base, e->key, err) != 0) {
        webhook_engine_free(e);
        return NULL;
    }
    char instance[24];
    if (instance_name(cfg->instance_id, instance, sizeof instance) != 0) {
        webhook_engine_free(e);
        *err = strdup("webhooks: no random source");
        return NULL;
    }
    for (unsigned i = 0; i < threads; i++)
        if (dispatcher_init(e, &e->disp[i], instance, i) != 0) {
            webhook_engine_free(e);
            *err = strdup("webhooks: cannot create a libcurl multi handle");
            return NULL;
        }
    return e;
}

/* Lets running attempts finish for a moment, then aborts the rest: an
 * aborted attempt is due again at once (or failed when it cannot be). */
static void dispatcher_drain(dispatcher_t *d)
{
    int64_t until = clock_monotonic_ms() + DRAIN_MS;
    while (d->running_count > 0 && clock_monotonic_ms() < until)
        transfers_poll(d, 50);
    while (d->running != NULL) {
        transfer_t *t = d->running;
        curl_multi_remove_handle(d->multi, t->req.easy);
        store_wh_outcome_t o = failure(d, t, 0, 0);
        if (o.result == STORE_WH_RETRY)
            o.next_attempt_at = now_ms(d);
        outcome_record(d, t, o, "interrupted: taxd stopped", -1);
        t->sub->in_flight--;
        d->running_count--;
        transfer_release(d, t);
    }
}

/* Lets the store thread finish its job, then stops it. */
static void store_thread_stop(dispatcher_t *d)
{
    if (!d->thread_started)
        return;
    pthread_mutex_lock(&d->job_lock);
    d->store_stopping = true;
    pthread_cond_signal(&d->job_cond);
    pthread_mutex_unlock(&d->job_lock);
    pthread_join(d->store_thread, NULL);
    d->thread_started = false;
    job_harvest(d);
}

static void dispatcher_close(webhook_engine_t *e, dispatcher_t *d)
{
    store_thread_stop(d);
    if (d->sync_init) {
        pthread_cond_destroy(&d->job_cond);
        pthread_mutex_destroy(&d->job_lock);
        d->sync_init = false;
    }
    if (d->multi == NULL)
        return;
    dispatcher_drain(d);
    ready_drop_all(d);
    store_conn_t *conn = store_acquire(e->store);
    if (conn != NULL) {
        outcomes_flush(d, conn);
        store_wh_release_all(conn, d->owner);
        store_release(e->store, conn);
    }
    while (d->free_list != NULL) {
        transfer_t *t = d->free_list;
        d->free_list = t->next;
        webhook_request_free(&t->req);
        free(t);
    }
    for (size_t i = 0; i < d->sub_count; i++)
        webhook_sub_free(d->subs[i]);
    free(d->subs);
    free(d->outcomes);
    free(d->ready);
    log_batch_free(&d->log);
    curl_multi_cleanup(d->multi);
    d->multi = NULL;
}

void webhook_engine_free(webhook_engine_t *e)
{
    if (e == NULL)
        return;
    for (unsigned i = 0; e->disp != NULL && i < e->threads; i++)
        dispatcher_close(e, &e->disp[i]);
    free(e->disp);
    explicit_bzero(e->key, sizeof e->key);
    free(e);
}

/* ---- metrics */

static int put_backlog(const char *id, int64_t pending, void *ctx)
{
    dbuf_printf(ctx, "taxd_webhook_backlog{subscription=\"%s\"} %lld\n", id, (long long)pending);
    return 0;
}

static void metrics_store(webhook_engine_t *e, dbuf_t *b)
{
    store_conn_t *conn = store_acquire(e->store);
    if (conn == NULL)
        return;
    int64_t deauthorized = 0;
    dbuf_puts(b, "# TYPE taxd_webhook_backlog gauge\n");
    store_status_t st = store_wh_backlog_each(conn, put_backlog, b, &deauthorized);
    store_release(e->store, conn);
    if (st != STORE_OK)
        return;
    dbuf_printf(b, "# TYPE taxd_webhook_deauthorized_subscriptions gauge\n"
                   "taxd_webhook_deauthorized_subscriptions %lld\n",
                (long long)deauthorized);
}

char *webhook_engine_metrics(webhook_engine_t *e)
{
    if (e == NULL)
        return NULL;
    dbuf_t b;
    dbuf_init(&b, 1024);
    dbuf_puts(&b, "# TYPE taxd_webhook_deliveries_total counter\n");
    for (int r = STORE_WH_DELIVERED; r <= STORE_WH_HELD; r++)
        dbuf_printf(&b, "taxd_webhook_deliveries_total{outcome=\"%s\"} %llu\n",
                    result_name((store_wh_result_t)r),
                    (unsigned long long)atomic_load(&e->outcomes_total[r]));
    dbuf_puts(&b, "# TYPE taxd_webhook_attempt_duration_seconds histogram\n");
    for (size_t i = 0; i < LATENCY_BUCKETS; i++)
        dbuf_printf(&b, "taxd_webhook_attempt_duration_seconds_bucket{le=\"%g\"} %llu\n",
                    LATENCY_BOUNDS[i], (unsigned long long)atomic_load(&e->latency_buckets[i]));
    unsigned long long count = atomic_load(&e->latency_count);
    dbuf_printf(&b, "taxd_webhook_attempt_duration_seconds_bucket{le=\"+Inf\"} %llu\n", count);
    dbuf_printf(&b, "taxd_webhook_attempt_duration_seconds_sum %.6f\n",
                (double)atomic_load(&e->latency_sum_us) / 1e6);
    dbuf_printf(&b, "taxd_webhook_attempt_duration_seconds_count %llu\n", count);
    metrics_store(e, &b);
    return dbuf_finish(&b, NULL);
}
