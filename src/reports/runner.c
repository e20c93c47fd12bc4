/* reports/runner: the engine that produces reports, inventory-summary and
 * gains (the kind is the report row's; both take the same steps, and differ
 * only in the rows of step 5). See runner.h for the contract; this is how.
 *
 * One step = one report:
 *   1. claim (store_report_claim): the oldest pending report, or one whose
 *      lease expired because its worker died; a report whose lease expired
 *      --report-max-leases times is failed there instead (lease_expired), so
 *      a report that crashes its worker cannot cycle forever;
 *   2. the test directive, only with --test-hooks: "fail" fails it
 *      (test_failure), "pause=<ms>" holds it in processing on its first
 *      claim (the kill -9 test), renewing the lease like real work;
 *   3. chunks left by an interrupted earlier claim are deleted;
 *   4. the included accounts that are dirty are recalculated (paged by
 *      uuid, so memory does not grow with the account count): every
 *      transaction acknowledged before the trigger is in the results;
 *   5. the rows are read in one read snapshot (a gains report: each
 *      included account's gains rows of the tax year, store/gains.h, in
 *      caller-id then seq order, classified by gains/gains.h) (store_report_read) on a
 *      second connection and written as they come, 256 KiB at a time, into
 *      report_chunks through the first one: one chunk and one row in memory,
 *      whatever the report's size;
 *   6. the last chunk, the metadata, the skipped bitmap and status completed
 *      are written in one transaction.
 * The requested ids stay in the database: every statement reads them there
 * (json_each over report_ids), and the ids found to be no account of the
 * tenant become a bitmap over their positions (reports/idlist.h), one bit
 * per requested id, never a second list.
 * Every write after the claim is fenced by the claim token (store/reports.h):
 * a worker that lost its lease stops at its next write and leaves the report
 * to whoever holds it now.
 *
 * Stopping. The step checks cfg->stopping between pieces of work (accounts,
 * chunks, pause slices); a stopping process gives its report back (pending
 * again, no expiry counted) so another worker starts it at once.
 *
 * Accounts whose inventory cannot be computed (the recalculation reports
 * an arithmetic failure: only rows past the input limits can cause one) do
 * not fail the report: they are left out of its rows and of
 * total_accounts_included and listed, sorted, in
 * metadata.skipped_account_ids.inventory_not_computable (the reason is
 * logged), so one account never takes its tenant's reports down.
 *
 * Failures: a store error fails the report (report_failed; the detail is
 * logged, the message names no internals). A store timeout (the database
 * stayed locked) gives the report back to be tried again. */
#include "reports/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/log.h"
#include "inventory/recalc.h"
#include "reports/format.h"
#include "reports/gain_line.h"
#include "reports/idlist.h"
#include "store/reports.h"

#define IDLE_WAIT_MS 500        /* no work: look again (other processes' triggers) */
#define RETRY_WAIT_MS 1000      /* after a lock timeout */
#define CHUNK_BYTES STORE_REPORT_CHUNK_BYTES
#define DIRTY_PAGE 64
#define PAUSE_SLICE_MS 50
#define PAUSE_MAX_MS 600000

#define CODE_INTERNAL "report_failed"
#define CODE_TEST "test_failure"
#define MESSAGE_INTERNAL "The report could not be produced"
#define MESSAGE_TEST "The report was failed on purpose (test hook)"

typedef enum outcome {
    OUTCOME_DONE,     /* completed or failed: the step is over */
    OUTCOME_LOST,     /* the claim was lost: someone else has the report */
    OUTCOME_STOPPED,  /* the process is stopping: give the report back */
    OUTCOME_RETRY,    /* a lock timeout: give it back, try later */
} outcome_t;

typedef struct job {
    const report_runner_config_t *cfg;
    store_conn_t *conn;          /* claims, recalculation, chunk writes */
    store_report_t report;
    report_format_t format;
    char claim[STORE_REPORT_CLAIM_LEN];
    int64_t renewed_ms;          /* monotonic time of the last lease renewal */
    int64_t refreshed;           /* accounts recalculated */
    json_t *not_computable;      /* a set (object) of the caller ids of accounts left out */
    char failure[STORE_REPORT_MESSAGE_MAX]; /* the message of a report_failed */
} job_t;

/* ---- small helpers ---------------------------------------------------- */

static bool stopping(const job_t *job)
{
    return atomic_load(job->cfg->stopping);
}

static int64_t lease_until(const job_t *job)
{
    return clock_now_ms(NULL) + job->cfg->lease_ms;
}

/* Maps a store status of a fenced write to what the step does next. */
static outcome_t outcome_of(job_t *job, store_status_t st, const char *what)
{
    if (st == STORE_NOT_FOUND)
        return OUTCOME_LOST;
    if (st == STORE_TIMEOUT)
        return OUTCOME_RETRY;
    log_event(LOG_ERROR, "report: store failure",
              json_pack("{s:s, s:s, s:s}", "report_id", job->report.id, "step", what, "status",
                        store_status_name(st)));
    snprintf(job->failure, sizeof job->failure, "%s", MESSAGE_INTERNAL);
    return OUTCOME_DONE; /* failed by the caller (finish) */
}

/* Renews the lease once a third of it has passed. */
static store_status_t keep_lease(job_t *job)
{
    int64_t now = clock_monotonic_ms();
    if (now - job->renewed_ms < job->cfg->lease_ms / 3)
        return STORE_OK;
    store_status_t st = store_report_renew(job->conn, job->report.id, job->claim, lease_until(job));
    if (st == STORE_OK)
        job->renewed_ms = now;
    return st;
}

/* ---- the test directive ----------------------------------------------- */

/* "pause=<ms>": the pause in ms, or -1 for anything else. */
static int64_t directive_pause(const char *directive)
{
    if (strncmp(directive, "pause=", 6) != 0)
        return -1;
    char *end;
    long long ms = strtoll(directive + 6, &end, 10);
    return *end == '\0' && ms >= 0 && ms <= PAUSE_MAX_MS ? (int64_t)ms : -1;
}

/* Holds the report in processing for ms, keeping its lease. */
static store_status_t pause_processing(job_t *job, int64_t ms, bool *stopped)
{
    int64_t until = clock_monotonic_ms() + ms;
    for (int64_t now = clock_monotonic_ms(); now < until; now = clock_monotonic_ms()) {
        if (stopping(job)) {
            *stopped = true;
            return STORE_OK;
        }
        store_status_t st = keep_lease(job);
        if (st != STORE_OK)
            return st;
        clock_sleep_ms(until - now < PAUSE_SLICE_MS ? until - now : PAUSE_SLICE_MS);
    }
    return STORE_OK;
}

/* The report's id when account_ids scope it (store/reports.h), else NULL. */
static const char *scoped_report(const job_t *job)
{
    return job->report.scoped ? job->report.id : NULL;
}

/* ---- step 4: recalculation -------------------------------------------- */

/* Recalculates one account; an account that cannot be computed is noted
 * and left out, not a failure of the report. */
static bool refresh_one(job_t *job, const store_inv_account_t *account, store_status_t *st)
{
    recalc_result_t r = inventory_refresh(job->conn, account);
    *st = r.store;
    if (r.store != STORE_OK)
        return false;
    if (r.arithmetic != DEC_OK) {
        char reason[STORE_ID_MAX + 96];
        recalc_describe_failure(&r, reason, sizeof reason);
        log_event(LOG_WARN, "report: an account's inventory cannot be computed; left out",
                  json_pack("{s:s, s:s, s:s}", "report_id", job->report.id, "account_uuid",
                            account->uuid, "reason", reason));
        if (json_object_set_new(job->not_computable, account->id, json_true()) != 0) {
            *st = STORE_ERROR; /* out of memory */
            return false;
        }
        return true;
    }
    job->refreshed++;
    return true;
}

/* Recalculates every dirty included account, a page at a time. */
static outcome_t refresh_accounts(job_t *job)
{
    store_inv_account_t page[DIRTY_PAGE];
    char after[STORE_UUID_LEN] = "";
    for (;;) {
        size_t n = 0;
        store_status_t st = store_report_dirty_accounts(job->conn, job->report.tenant_id,
                                                        scoped_report(job), after, page,
                                                        DIRTY_PAGE, &n);
        if (st != STORE_OK)
            return outcome_of(job, st, "dirty accounts");
        for (size_t i = 0; i < n; i++) {
            if (stopping(job))
                return OUTCOME_STOPPED;
            if (!refresh_one(job, &page[i], &st))
                return job->failure[0] != '\0' ? OUTCOME_DONE : outcome_of(job, st, "refresh");
            if ((st = keep_lease(job)) != STORE_OK)
                return outcome_of(job, st, "renew");
        }
        if (n < DIRTY_PAGE)
            return OUTCOME_DONE;
        memcpy(after, page[n - 1].uuid, sizeof after);
    }
}

/* ---- step 5: rows into chunks ----------------------------------------- */

typedef struct writer {
    job_t *job;
    char *chunk;                 /* CHUNK_BYTES */
    size_t len;
    int64_t seq;
    int64_t rows;
    uint64_t bytes;
    const store_report_reader_t *reader; /* its requested count sizes the bitmap */
    uint8_t *skipped;            /* malloc'd bitmap of the ids not found; NULL = none */
    size_t skipped_len;
    store_status_t status;       /* of the first failed chunk write */
    bool bad_row;                /* a stored decimal that is not one */
    bool stopped;
    char account[STORE_ID_MAX];  /* gains: the account of the last row */
    bool skip_account;           /* gains: that account cannot be computed */
} writer_t;

/* Appends bytes, storing each chunk as soon as it is full. */
static bool writer_put(writer_t *w, const char *data, size_t n)
{
    while (n > 0) {
        size_t room = CHUNK_BYTES - w->len;
        size_t take = n < room ? n : room;
        memcpy(w->chunk + w->len, data, take);
        w->len += take;
        w->bytes += take;
        data += take;
        n -= take;
        if (w->len < CHUNK_BYTES)
            break;
        job_t *job = w->job;
        w->status = store_report_put_chunk(job->conn, job->report.id, job->claim, w->seq,
                                           w->chunk, w->len, lease_until(job));
        if (w->status != STORE_OK)
            return false;
        job->renewed_ms = clock_monotonic_ms();
        w->seq++;
        w->len = 0;
        if (stopping(job)) {
            w->stopped = true;
            return false;
        }
    }
    return true;
}

/* The canonical form of a stored decimal (NULL stays NULL). */
static bool canonical(const char *text, char out[DEC_TEXT_MAX], const char **result)
{
    *result = NULL;
    if (text == NULL)
        return true;
    dec_t d;
    if (dec_parse(text, strlen(text), &d) != DEC_OK)
        return false;
    dec_format(d, out);
    *result = out;
    return true;
}

static int on_row(const store_report_row_t *in, void *ctx)
{
    writer_t *w = ctx;
    if (in->account_id != NULL && json_object_get(w->job->not_computable, in->account_id) != NULL)
        return 0; /* stale rows of an account that cannot be computed */
    char q[DEC_TEXT_MAX], c[DEC_TEXT_MAX], avg[DEC_TEXT_MAX], qb[DEC_TEXT_MAX];
    char line[REPORT_ROW_MAX];
    report_row_t row = {.account_id = in->account_id, .asset_code = in->asset_code,
                        .asset_type = in->asset_type, .fiat_currency = DOMAIN_REPORTING_CURRENCY};
    if (in->total_quantity == NULL || in->total_cost == NULL ||
        !canonical(in->total_quantity, q, &row.total_quantity) ||
        !canonical(in->total_cost, c, &row.total_cost) ||
        !canonical(in->average_unit_cost, avg, &row.average_unit_cost) ||
        !canonical(in->quantity_with_basis, qb, &row.total_quantity_with_cost_basis) ||
        row.total_quantity_with_cost_basis == NULL) {
        w->bad_row = true;
        return 1;
    }
    buf_t b = buf_over(line, sizeof line);
    if (!report_format_row(w->job->format, &row, &b)) {
        w->bad_row = true;
        return 1;
    }
    w->rows++;
    return writer_put(w, b.data, b.len) ? 0 : 1;
}

/* A gains report's row (kind gains): classified and written by
 * reports/gain_line.h. A row the classification refuses (a stored value the
 * engine never writes) fails the report like a bad summary row. The last
 * account seen is remembered so the not-computable set is looked up once
 * per account, not once per row. */
static int on_gain(const char *account_id, const store_gain_t *row, void *ctx)
{
    writer_t *w = ctx;
    if (strcmp(account_id, w->account) != 0) {
        snprintf(w->account, sizeof w->account, "%s", account_id);
        w->skip_account = json_object_get(w->job->not_computable, account_id) != NULL;
    }
    if (w->skip_account)
        return 0;
    char line[REPORT_GAIN_ROW_MAX];
    buf_t b = buf_over(line, sizeof line);
    bool fits = true;
    if (report_gain_line(w->job->format, account_id, row, &b, &fits) != GAINS_OK || !fits) {
        w->bad_row = true;
        return 1;
    }
    w->rows++;
    return writer_put(w, b.data, b.len) ? 0 : 1;
}

/* Marks the first position of an id that is no account (the counts were
 * read before, so the bitmap's size is known). */
static int on_skipped(int64_t position, void *ctx)
{
    writer_t *w = ctx;
    if (w->skipped == NULL) {
        w->skipped_len = report_skipped_size(w->reader->requested);
        w->skipped = calloc(w->skipped_len > 0 ? w->skipped_len : 1, 1);
        if (w->skipped == NULL) {
            w->bad_row = true; /* fails the report as a store error would */
            return 1;
        }
    }
    report_skipped_set(w->skipped, w->skipped_len, position);
    return 0;
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The ids of the set, sorted bytewise, as a new array; NULL when memory ran out. */
static json_t *sorted_ids(json_t *set)
{
    size_t n = json_object_size(set), i = 0;
    const char **ids = malloc((n ? n : 1) * sizeof *ids);
    json_t *out = json_array();
    if (ids == NULL || out == NULL) {
        free(ids);
        json_decref(out);
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach(set, key, value) ids[i++] = key;
    qsort(ids, n, sizeof *ids, compare_ids);
    for (i = 0; i < n; i++)
        if (json_array_append_new(out, json_string(ids[i])) != 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    free(ids);
    return out;
}

/* spec § metadata: with account_ids, requested (duplicates included) and
 * included (distinct found, less those that cannot be computed); without,
 * included only; skipped_account_ids.inventory_not_computable when some
 * account cannot be computed. The ids not found are not here: they are the
 * bitmap stored beside the metadata, which the status GET lists under
 * skipped_account_ids.not_found_in_organization. Each list is present only
 * when it is not empty. NULL when memory ran out. */
static char *metadata_text(const job_t *job, const store_report_reader_t *reader)
{
    bool scoped = job->report.scoped;
    size_t left_out = json_object_size(job->not_computable);
    json_t *meta = json_object(), *skips = json_object();
    json_t *not_computable = left_out > 0 ? sorted_ids(job->not_computable) : NULL;
    if (meta == NULL || skips == NULL || (left_out > 0 && not_computable == NULL)) {
        json_decref(meta);
        json_decref(skips);
        return NULL;
    }
    if (scoped)
        json_object_set_new(meta, "total_accounts_requested",
                            json_integer((json_int_t)reader->requested));
    json_object_set_new(meta, "total_accounts_included",
                        json_integer((json_int_t)reader->included - (json_int_t)left_out));
    if (not_computable != NULL)
        json_object_set_new(skips, "inventory_not_computable", not_computable);
    if (json_object_size(skips) > 0)
        json_object_set(meta, "skipped_account_ids", skips);
    json_decref(skips);
    char *text = json_dumps(meta, JSON_COMPACT);
    json_decref(meta);
    return text;
}

static outcome_t complete(job_t *job, writer_t *w, const store_report_reader_t *reader)
{
    char *metadata = metadata_text(job, reader);
    if (metadata == NULL)
        return outcome_of(job, STORE_ERROR, "metadata");
    store_report_done_t done = {
        .last_chunk = w->len > 0 ? w->chunk : NULL, .last_len = w->len, .last_seq = w->seq,
        .metadata = metadata, .skipped = w->skipped, .skipped_len = w->skipped_len,
        .row_count = w->rows, .size_bytes = (int64_t)w->bytes,
        .finished_at = clock_now_ms(job->cfg->clock)};
    store_status_t st = store_report_complete(job->conn, job->report.id, job->claim, &done);
    free(metadata);
    return st == STORE_OK ? OUTCOME_DONE : outcome_of(job, st, "complete");
}

/* Reads the snapshot through a second connection and writes the file. */
static outcome_t write_file(job_t *job, writer_t *w)
{
    bool gains = strcmp(job->report.kind, STORE_REPORT_KIND_GAINS) == 0;
    char header[512];
    buf_t b = buf_over(header, sizeof header);
    if (gains)
        report_format_gains_header(job->format, &b);
    else
        report_format_header(job->format, &b);
    if (!writer_put(w, b.data, b.len))
        return w->stopped ? OUTCOME_STOPPED : outcome_of(job, w->status, "chunk");
    store_conn_t *reader_conn = store_acquire(job->cfg->store);
    if (reader_conn == NULL)
        return outcome_of(job, STORE_ERROR, "reader connection");
    store_report_reader_t reader = {.skipped = on_skipped, .row = on_row, .ctx = w};
    if (gains) {
        reader.gain = on_gain;
        gains_year_range(job->report.tax_year, &reader.from_ms, &reader.to_ms);
    }
    w->reader = &reader;
    store_status_t st = store_report_read(reader_conn, job->report.tenant_id,
                                          scoped_report(job), &reader);
    store_release(job->cfg->store, reader_conn);
    if (st != STORE_OK)
        return outcome_of(job, st, "read");
    if (w->stopped)
        return OUTCOME_STOPPED;
    if (w->status != STORE_OK)
        return outcome_of(job, w->status, "chunk");
    if (w->bad_row)
        return outcome_of(job, STORE_ERROR, "row");
    return complete(job, w, &reader);
}

/* ---- one claimed report ----------------------------------------------- */

static outcome_t produce_file(job_t *job, int64_t *refresh_ms, writer_t *w)
{
    int64_t began = clock_monotonic_ms();
    store_status_t st = store_report_reset_chunks(job->conn, job->report.id, job->claim);
    if (st != STORE_OK)
        return outcome_of(job, st, "reset");
    outcome_t o = refresh_accounts(job);
    *refresh_ms = clock_monotonic_ms() - began;
    if (o != OUTCOME_DONE || job->failure[0] != '\0')
        return o;
    return write_file(job, w);
}

static void log_completed(const job_t *job, const writer_t *w, int64_t refresh_ms,
                          int64_t total_ms)
{
    log_event(LOG_INFO, "report completed",
              json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "report_id", job->report.id,
                        "tenant_id", job->report.tenant_id, "format",
                        report_format_name(job->format), "rows", (json_int_t)w->rows, "bytes",
                        (json_int_t)w->bytes, "accounts_refreshed", (json_int_t)job->refreshed,
                        "refresh_ms", (json_int_t)refresh_ms, "total_ms", (json_int_t)total_ms));
}

static outcome_t produce(job_t *job)
{
    int64_t began = clock_monotonic_ms(), refresh_ms = 0;
    writer_t w = {.job = job, .chunk = malloc(CHUNK_BYTES)};
    outcome_t o;
    if (w.chunk == NULL)
        o = outcome_of(job, STORE_ERROR, "memory");
    else
        o = produce_file(job, &refresh_ms, &w);
    if (o == OUTCOME_DONE && job->failure[0] == '\0')
        log_completed(job, &w, refresh_ms, clock_monotonic_ms() - began);
    free(w.chunk);
    free(w.skipped);
    return o;
}

/* Fails the report with code and message (fenced). */
static outcome_t fail_report(job_t *job, const char *code, const char *message)
{
    log_event(LOG_WARN, "report failed",
              json_pack("{s:s, s:s, s:s}", "report_id", job->report.id, "code", code, "message",
                        message));
    store_status_t st = store_report_fail(job->conn, job->report.id, job->claim, code, message,
                                          clock_now_ms(job->cfg->clock));
    return st == STORE_OK ? OUTCOME_DONE : OUTCOME_LOST;
}

static outcome_t run_claimed(job_t *job)
{
    const char *directive = job->report.test_directive;
    if (!job->cfg->test_hooks)
        directive = "";
    if (strcmp(directive, "fail") == 0)
        return fail_report(job, CODE_TEST, MESSAGE_TEST);
    int64_t pause = directive_pause(directive);
    if (pause > 0 && job->report.expired_leases == 0) {
        bool stopped = false;
        store_status_t st = pause_processing(job, pause, &stopped);
        if (st != STORE_OK)
            return outcome_of(job, st, "pause");
        if (stopped)
            return OUTCOME_STOPPED;
    }
    outcome_t o = produce(job);
    if (o == OUTCOME_DONE && job->failure[0] != '\0')
        return fail_report(job, CODE_INTERNAL, job->failure);
    return o;
}

/* A fresh random claim token: no two claims ever share one. */
static bool new_claim(char out[STORE_REPORT_CLAIM_LEN])
{
    uint8_t bytes[(STORE_REPORT_CLAIM_LEN - 1) / 2];
    if (crypto_random_bytes(bytes, sizeof bytes) != 0)
        return false;
    crypto_hex_encode(bytes, sizeof bytes, out);
    return true;
}

/* Claims a report; false when there is none (or the store failed). */
static bool claim(job_t *job)
{
    if (!new_claim(job->claim))
        return false;
    store_report_lease_t lease = {
        .claim = job->claim, .now_ms = clock_now_ms(NULL),
        .service_now_ms = clock_now_ms(job->cfg->clock),
        .lease_ms = job->cfg->lease_ms, .max_leases = job->cfg->max_leases};
    store_status_t st = store_report_claim(job->conn, &lease, &job->report);
    if (st != STORE_OK) {
        if (st != STORE_NOT_FOUND)
            log_event(LOG_WARN, "report: claim failed",
                      json_pack("{s:s}", "status", store_status_name(st)));
        return false;
    }
    job->renewed_ms = clock_monotonic_ms();
    /* Operators (and the multi-node tests) see which process ran a report. */
    log_event(LOG_INFO, "report claimed",
              json_pack("{s:s, s:I}", "report_id", job->report.id, "expired_leases",
                        (json_int_t)job->report.expired_leases));
    if (!report_format_parse(job->report.format, &job->format))
        job->format = REPORT_FORMAT_CSV;
    return true;
}

/* Gives the report back to the queue (stopping, or a lock timeout). */
static void give_back(job_t *job)
{
    store_status_t st = store_report_release(job->conn, job->report.id, job->claim);
    if (st != STORE_OK && st != STORE_NOT_FOUND)
        log_event(LOG_WARN, "report: cannot give the report back; its lease will expire",
                  json_pack("{s:s, s:s}", "report_id", job->report.id, "status",
                            store_status_name(st)));
}

int64_t report_runner_step(const report_runner_config_t *cfg, unsigned thread_index)
{
    (void)thread_index;
    job_t job = {.cfg = cfg};
    job.conn = store_acquire(cfg->store);
    if (job.conn == NULL)
        return IDLE_WAIT_MS;
    job.not_computable = json_object();
    if (job.not_computable == NULL) {
        store_release(cfg->store, job.conn);
        return IDLE_WAIT_MS;
    }
    if (!claim(&job)) {
        json_decref(job.not_computable);
        store_release(cfg->store, job.conn);
        return IDLE_WAIT_MS;
    }
    outcome_t o = run_claimed(&job);
    if (o == OUTCOME_STOPPED || o == OUTCOME_RETRY)
        give_back(&job);
    if (o == OUTCOME_LOST)
        log_event(LOG_WARN, "report: claim lost (the lease expired, or the report was deleted)",
                  json_pack("{s:s}", "report_id", job.report.id));
    store_report_clear(&job.report);
    json_decref(job.not_computable);
    store_release(cfg->store, job.conn);
    return o == OUTCOME_RETRY ? RETRY_WAIT_MS : o == OUTCOME_STOPPED ? IDLE_WAIT_MS : 0;
}
