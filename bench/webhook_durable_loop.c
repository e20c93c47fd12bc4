/* webhook_durable_loop: the durable floor of `make bench-webhooks`. The bare
 * libcurl loop (webhook_curl_loop.c: same endpoint, body, headers and
 * concurrency) whose requests come from taxd's database and whose outcomes
 * go back to it, with the least SQL an at-least-once dispatcher on SQLite
 * does per delivery, on a second thread as in taxd:
 *   - read the due delivery with its event (the columns copied out),
 *   - claim the event (so a later change cannot widen what was sent),
 *   - record the outcome,
 * in transactions of up to BATCH deliveries, on a connection set up as
 * taxd's store connections are (WAL, synchronous=FULL, foreign keys on).
 * None of taxd's other work: no signing, no rendering, no log line, no rate
 * limit, no lease; the batch is read with a rowid cursor instead of
 * skipping what is in flight. So taxd can come near it but pass it only by
 * a round's noise, and the gap between it and the bare loop is what
 * durability alone costs on this machine.
 *
 * usage: webhook_durable_loop URL CA_FILE DB SUBSCRIPTION CONCURRENCY BODY_FILE
 * Delivers every pending delivery of SUBSCRIPTION, then prints
 * "requests N seconds S rps R failed F store_us_per_delivery U
 * send_us_per_delivery V" (each thread's CPU time over the deliveries). */
#include <curl/curl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "webhook_loop.h"

#define BATCH 256     /* deliveries read per transaction, as taxd's BATCH_MAX */
#define READY_LOW 128 /* fewer ready than this: read the next batch, as taxd */

static const char *const SQL_DUE =
    "SELECT d.rowid, d.id, d.event_id, d.trace_id, d.attempts, d.first_attempt_at,"
    " d.window_ends_at, e.rowid, e.claimed_at IS NULL, e.type, e.payload, e.account_uuid,"
    " e.account_id, e.from_ms, e.from_tx, e.latest_ms, e.latest_tx, e.has_ids"
    " FROM deliveries d JOIN events e ON e.id = d.event_id"
    " WHERE d.subscription_id = ?1 AND d.state = 'pending' AND d.next_attempt_at <= ?2"
    " AND d.rowid > ?3 ORDER BY d.next_attempt_at, d.rowid LIMIT ?4";
static const char *const SQL_CLAIM =
    "UPDATE events SET claimed_at = ?2 WHERE rowid = ?1 AND claimed_at IS NULL";
static const char *const SQL_OUTCOME =
    "UPDATE deliveries SET state = 'delivered', last_status = 200, last_error = NULL,"
    " next_attempt_at = ?2, delivered_at = ?2, attempts = attempts + 1,"
    " first_attempt_at = coalesce(first_attempt_at, ?3), window_ends_at ="
    " coalesce(window_ends_at, ?3 + 3600000), last_attempt_at = ?3 WHERE rowid = ?1";

typedef struct sent {
    int64_t rowid, sent_ms, done_ms;
} sent_t;

typedef struct shared {
    pthread_mutex_t lock;
    pthread_cond_t wanted;
    CURLM *multi;            /* woken when a batch is ready */
    int64_t *ready;          /* rowids read, not sent yet */
    size_t ready_first, ready_end;
    sent_t *outcomes;        /* answered, not recorded yet */
    size_t outcome_count;
    bool want, busy, exhausted, stop;
    int64_t store_cpu_us;
} shared_t;

typedef struct store {
    sqlite3 *db;
    sqlite3_stmt *due, *claim, *outcome;
    const char *subscription;
    int64_t cursor;
} store_t;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK)
        return true;
    fprintf(stderr, "webhook_durable_loop: %s: %s\n", sql, err ? err : "?");
    sqlite3_free(err);
    return false;
}

static bool store_open(store_t *s, const char *path, const char *subscription)
{
    s->subscription = subscription;
    return sqlite3_open(path, &s->db) == SQLITE_OK &&
           exec(s->db, "PRAGMA busy_timeout = 10000") &&
           exec(s->db, "PRAGMA journal_mode = WAL") &&
           exec(s->db, "PRAGMA synchronous = FULL") &&
           exec(s->db, "PRAGMA foreign_keys = ON") &&
           exec(s->db, "PRAGMA journal_size_limit = 67108864") &&
           sqlite3_prepare_v2(s->db, SQL_DUE, -1, &s->due, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(s->db, SQL_CLAIM, -1, &s->claim, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(s->db, SQL_OUTCOME, -1, &s->outcome, NULL) == SQLITE_OK;
}

static bool run(sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE;
}

static bool record(store_t *s, const sent_t *o)
{
    sqlite3_bind_int64(s->outcome, 1, o->rowid);
    sqlite3_bind_int64(s->outcome, 2, o->done_ms);
    sqlite3_bind_int64(s->outcome, 3, o->sent_ms);
    return run(s->outcome);
}

/* Reads up to BATCH due deliveries with their events, copying the columns
 * out as a dispatcher must, and claims the events. Returns how many. */
static long read_due(store_t *s, int64_t *rowids)
{
    int64_t now = wall_ms(), events[BATCH];
    bool unclaimed[BATCH];
    sqlite3_bind_text(s->due, 1, s->subscription, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->due, 2, now);
    sqlite3_bind_int64(s->due, 3, s->cursor);
    sqlite3_bind_int64(s->due, 4, BATCH);
    long n = 0;
    while (n < BATCH && sqlite3_step(s->due) == SQLITE_ROW) {
        rowids[n] = sqlite3_column_int64(s->due, 0);
        events[n] = sqlite3_column_int64(s->due, 7);
        unclaimed[n] = sqlite3_column_int(s->due, 8) != 0;
        for (int col = 1; col < sqlite3_column_count(s->due); col++) {
            const unsigned char *text = sqlite3_column_text(s->due, col);
            free(text != NULL ? strdup((const char *)text) : NULL);
        }
        n++;
    }
    sqlite3_reset(s->due);
    for (long i = 0; i < n; i++) {
        if (!unclaimed[i])
            continue;
        sqlite3_bind_int64(s->claim, 1, events[i]);
        sqlite3_bind_int64(s->claim, 2, now);
        if (!run(s->claim))
            return -1;
    }
    if (n > 0)
        s->cursor = rowids[n - 1];
    return n;
}

/* One transaction: the outcomes handed over, then the next batch. */
static long store_job(store_t *s, const sent_t *outcomes, size_t count, bool read,
                      int64_t *rowids)
{
    if (!exec(s->db, "BEGIN IMMEDIATE"))
        return -1;
    for (size_t i = 0; i < count; i++)
        if (!record(s, &outcomes[i])) {
            exec(s->db, "ROLLBACK");
            return -1;
        }
    long n = read ? read_due(s, rowids) : 0;
    if (n < 0 || !exec(s->db, "COMMIT")) {
        exec(s->db, "ROLLBACK");
        return -1;
    }
    return n;
}

typedef struct store_args {
    shared_t *sh;
    store_t *store;
    size_t total;
} store_args_t;

static void *store_main(void *arg)
{
    store_args_t *a = arg;
    shared_t *sh = a->sh;
    sent_t *taken = calloc(a->total + 1, sizeof *taken);
    int64_t rowids[BATCH];
    pthread_mutex_lock(&sh->lock);
    for (;;) {
        while (!sh->want && !sh->stop)
            pthread_cond_wait(&sh->wanted, &sh->lock);
        if (!sh->want && sh->outcome_count == 0)
            break; /* stopped with every outcome recorded */
        size_t count = sh->outcome_count;
        memcpy(taken, sh->outcomes, count * sizeof *taken);
        sh->outcome_count = 0;
        bool read = !sh->exhausted && !sh->stop && sh->ready_end - sh->ready_first < READY_LOW;
        sh->want = false;
        sh->busy = true;
        pthread_mutex_unlock(&sh->lock);
        int64_t cpu0 = thread_cpu_us();
        long n = store_job(a->store, taken, count, read, rowids);
        int64_t cpu = thread_cpu_us() - cpu0;
        pthread_mutex_lock(&sh->lock);
        sh->store_cpu_us += cpu;
        if (n < 0) { /* the bench fails: nothing is retried here */
            sh->stop = sh->exhausted = true;
        } else {
            memcpy(sh->ready + sh->ready_end, rowids, (size_t)n * sizeof *rowids);
            sh->ready_end += (size_t)n;
            sh->exhausted = sh->exhausted || (read && n == 0);
        }
        sh->busy = false;
        curl_multi_wakeup(sh->multi);
    }
    pthread_mutex_unlock(&sh->lock);
    free(taken);
    return NULL;
}

/* With the lock held: asks for a job when the store thread is idle and
 * there are outcomes to record or too few deliveries ready. */
static void maybe_want(shared_t *sh, bool flush)
{
    size_t ready = sh->ready_end - sh->ready_first;
    bool low = !sh->exhausted && ready < READY_LOW;
    if (!sh->busy && !sh->want && (low || sh->outcome_count >= BATCH / 2 ||
                                   (flush && sh->outcome_count > 0))) {
        sh->want = true;
        pthread_cond_signal(&sh->wanted);
    }
}

typedef struct request {
    CURL *easy;
    sent_t sent;
} request_t;

static void setup(request_t *r, const char *url, const char *ca, const char *body, long len,
                  struct curl_slist *headers)
{
    r->easy = curl_easy_init();
    loop_setup(r->easy, url, ca, body, len, headers);
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
}

static size_t pending_count(const char *db_path, const char *subscription)
{
    sqlite3 *db;
    sqlite3_stmt *stmt;
    size_t n = 0;
    if (sqlite3_open(db_path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM deliveries WHERE subscription_id = ?1"
                               " AND state = 'pending'", -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, subscription, -1, SQLITE_STATIC);
        if (sqlite3_step(stmt) == SQLITE_ROW)
            n = (size_t)sqlite3_column_int64(stmt, 0);
        sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s URL CA_FILE DB SUBSCRIPTION CONCURRENCY BODY_FILE\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *ca = argv[2];
    long conc = atol(argv[5]), len = 0;
    char *body = loop_read_file(argv[6], &len);
    size_t total = pending_count(argv[3], argv[4]);
    store_t store = {0};
    if (body == NULL || conc <= 0 || total == 0 || !store_open(&store, argv[3], argv[4]) ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return 1;
    shared_t sh = {.ready = calloc(total + BATCH, sizeof(int64_t)),
                   .outcomes = calloc(total + 1, sizeof(sent_t)),
                   .multi = curl_multi_init()};
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.wanted, NULL);
    curl_multi_setopt(sh.multi, CURLMOPT_MAXCONNECTS, conc);
    struct curl_slist *headers = loop_headers();
    request_t *reqs = calloc((size_t)conc, sizeof *reqs);
    request_t **idle = calloc((size_t)conc, sizeof *idle);
    size_t idle_count = 0;
    for (long i = 0; i < conc; i++) {
        setup(&reqs[i], url, ca, body, len, headers);
        idle[idle_count++] = &reqs[i];
    }
    store_args_t args = {&sh, &store, total};
    pthread_t thread;
    pthread_create(&thread, NULL, store_main, &args);

    size_t done = 0, failed = 0;
    long running = 0;
    double t0 = 0; /* from the first request sent, as taxd's figure */
    int64_t send_cpu0 = thread_cpu_us();
    pthread_mutex_lock(&sh.lock);
    maybe_want(&sh, false);
    pthread_mutex_unlock(&sh.lock);
    while (done < total) {
        pthread_mutex_lock(&sh.lock);
        if (sh.stop) {
            pthread_mutex_unlock(&sh.lock);
            break;
        }
        while (idle_count > 0 && sh.ready_first < sh.ready_end) {
            request_t *r = idle[--idle_count];
            r->sent = (sent_t){.rowid = sh.ready[sh.ready_first++], .sent_ms = wall_ms()};
            if (t0 == 0)
                t0 = loop_now_s();
            curl_multi_add_handle(sh.multi, r->easy);
            running++;
        }
        maybe_want(&sh, running == 0);
        pthread_mutex_unlock(&sh.lock);
        int still = 0;
        curl_multi_perform(sh.multi, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(sh.multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            request_t *r = NULL;
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            failed += msg->data.result != CURLE_OK || status != 200;
            curl_multi_remove_handle(sh.multi, r->easy);
            r->sent.done_ms = wall_ms();
            pthread_mutex_lock(&sh.lock);
            sh.outcomes[sh.outcome_count++] = r->sent;
            pthread_mutex_unlock(&sh.lock);
            idle[idle_count++] = r;
            running--;
            done++;
        }
        pthread_mutex_lock(&sh.lock);
        bool startable = idle_count > 0 && sh.ready_first < sh.ready_end;
        pthread_mutex_unlock(&sh.lock);
        if (done < total && !startable) /* the store thread's wakeup ends the wait */
            curl_multi_poll(sh.multi, NULL, 0, 100, NULL);
    }
    double seconds = loop_now_s() - t0;
    int64_t send_cpu = thread_cpu_us() - send_cpu0;
    pthread_mutex_lock(&sh.lock); /* the last outcomes are recorded outside the timing */
    sh.stop = true;
    pthread_cond_signal(&sh.wanted);
    pthread_mutex_unlock(&sh.lock);
    pthread_join(thread, NULL);
    double per = (double)(done ? done : 1);
    printf("requests %zu seconds %.3f rps %.1f failed %zu store_us_per_delivery %.1f"
           " send_us_per_delivery %.1f\n",
           done, seconds, (double)done / seconds, failed + (total - done),
           (double)sh.store_cpu_us / per, (double)send_cpu / per);
    for (long i = 0; i < conc; i++)
        curl_easy_cleanup(reqs[i].easy);
    curl_multi_cleanup(sh.multi);
    curl_slist_free_all(headers);
    sqlite3_finalize(store.due);
    sqlite3_finalize(store.claim);
    sqlite3_finalize(store.outcome);
    sqlite3_close(store.db);
    free(reqs);
    free(idle);
    free(sh.ready);
    free(sh.outcomes);
    free(body);
    curl_global_cleanup();
    return failed || done < total ? 1 : 0;
}
