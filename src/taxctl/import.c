/* taxctl import transactions FILE: a CSV or JSONL file into taxd.
 *
 * Two passes over the mapped file:
 *   1. every line is checked locally (txconv) and the file's identity is
 *      hashed; any bad line is listed with its number and nothing is sent
 *      (exit 2);
 *   2. the lines the journal does not already hold as answered go to a
 *      taxd_sender (batches over several connections; a repeated id waits
 *      for its earlier payload's batch). Each answered batch is journaled
 *      and fsync'd before its ids are released (the sender's on_batch).
 * SIGINT / SIGTERM stop the adding; what was queued is still sent, answered
 * and journaled, then the command exits 3 (a second signal kills it).
 * Exit: 0 all written, 1 some refused (now or in an earlier run), 2 usage or
 * bad file, 3 incomplete (run it again: the journal skips what was done). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "csv.h"
#include "journal.h"
#include "progress.h"
#include "taxctl.h"
#include "txconv.h"

#define FIRST_REFUSALS 5

typedef struct {
    long line;
    int status;
    char *message;
} refusal;

typedef struct import_run import_run;
/* One line of the file: its transaction (id, json) or its problems. */
typedef bool (*line_fn)(import_run *run, long line, const char *id, const char *json,
                        const char *problems);

struct import_run {
    /* options */
    const char *path, *journal_path;
    bool jsonl, dry_run, quiet, restart;
    size_t batch_size;
    int connections;
    /* the file */
    const char *data;
    size_t len;
    /* pass 1 */
    long lines, bad;
    /* pass 2 (the callbacks run one at a time, on the sender's threads) */
    taxd_sender *sender;
    journal *journal;
    journal_prior prior;
    FILE *refused_out;
    char *refused_path;
    progress progress;
    long created, updated, unchanged, refused, failed, answered, skipped, added;
    refusal first[FIRST_REFUSALS];
    int n_first;
    bool journal_failed;
    taxd_code stop_code;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- the passes over the file */

static bool each_csv(import_run *run, line_fn fn)
{
    csv_reader r;
    csv_open(&r, run->data, run->len);
    char msg[256];
    long line = 0;
    txconv_header h;
    int rc = csv_next(&r, &line, msg, sizeof msg);
    bool ok = true;
    if (rc == 0) {
        csv_close(&r);
        return true; /* an empty file: nothing to do */
    }
    if (rc < 0 || !txconv_header_read(&h, r.fields, r.n, msg, sizeof msg)) {
        fprintf(stderr, "taxctl import: %s:%ld: the header row: %s\n", run->path, line,
                rc == -2 ? "out of memory" : msg);
        csv_close(&r);
        run->bad++;
        return false;
    }
    txconv_buf json = {0}, problems = {0};
    while (ok && (rc = csv_next(&r, &line, msg, sizeof msg)) != 0) {
        const char *id = NULL;
        if (rc == -2) {
            fprintf(stderr, "taxctl import: out of memory\n");
            ok = false;
        } else if (rc < 0) {
            ok = fn(run, line, NULL, NULL, msg);
        } else if (txconv_csv(&h, r.fields, r.n, &json, &id, &problems)) {
            ok = fn(run, line, id, json.s, NULL);
        } else {
            ok = fn(run, line, NULL, NULL, problems.s);
        }
    }
    txconv_buf_free(&json);
    txconv_buf_free(&problems);
    csv_close(&r);
    return ok;
}

static bool each_jsonl(import_run *run, line_fn fn)
{
    const char *p = run->data, *end = run->data + run->len;
    txconv_buf problems = {0};
    char *copy = NULL;
    size_t copy_cap = 0;
    bool ok = true;
    for (long line = 1; ok && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end, *a = p;
        p = nl ? nl + 1 : end;
        while (a < stop && strchr(" \t\r", *a))
            a++;
        const char *b = stop;
        while (b > a && strchr(" \t\r", b[-1]))
            b--;
        if (a == b)
            continue; /* a blank line */
        size_t n = (size_t)(b - a);
        if (n + 1 > copy_cap) {
            char *c = realloc(copy, n + 1);
            if (!c) {
                fprintf(stderr, "taxctl import: out of memory\n");
                ok = false;
                break;
            }
            copy = c;
            copy_cap = n + 1;
        }
        memcpy(copy, a, n);
        copy[n] = '\0';
        char *id = NULL;
        if (memchr(copy, '\0', n))
            ok = fn(run, line, NULL, NULL, "a NUL byte in the line");
        else if (txconv_jsonl(copy, n, &id, &problems))
            ok = fn(run, line, id, copy, NULL);
        else
            ok = fn(run, line, NULL, NULL, problems.s);
        free(id);
    }
    free(copy);
    txconv_buf_free(&problems);
    return ok;
}

static bool each_line(import_run *run, line_fn fn)
{
    return run->jsonl ? each_jsonl(run, fn) : each_csv(run, fn);
}

/* Pass 1: every bad line, listed. */
static bool check_line(import_run *run, long line, const char *id, const char *json,
                       const char *problems)
{
    (void)id;
    (void)json;
    run->lines++;
    if (problems) {
        run->bad++;
        fprintf(stderr, "taxctl import: %s:%ld: %s\n", run->path, line, problems);
    }
    return true;
}

/* Pass 2: what the journal does not hold, to the sender. */
static bool send_line(import_run *run, long line, const char *id, const char *json,
                      const char *problems)
{
    if (problems) /* the file changed under us since pass 1 */
        return false;
    if (journal_prior_done(&run->prior, line))
        return true;
    if (interrupted || run->journal_failed)
        return false;
    taxd_code code = taxd_sender_add(run->sender, id, json, (uint64_t)line);
    if (code != TAXD_OK) {
        run->stop_code = code;
        return false;
    }
    run->added++;
    return true;
}

/* ---- the sender's callbacks (one at a time) */

static const char OUTCOME_LETTER[] = {[TAXD_TX_CREATED] = 'c', [TAXD_TX_UPDATED] = 'u',
                                      [TAXD_TX_UNCHANGED] = 'n', [TAXD_TX_REFUSED] = 'r'};

static void write_refused(import_run *run, long line, const taxd_tx_result *r)
{
    if (run->n_first < FIRST_REFUSALS) {
        refusal *f = &run->first[run->n_first++];
        f->line = line;
        f->status = r->http_status;
        f->message = strdup(r->message ? r->message : "refused");
    }
    if (!run->refused_out)
        return;
    json_t *details = r->details ? json_loads(r->details, 0, NULL) : NULL;
    json_t *rec = json_pack("{s:I,s:i,s:s?,s:o*}", "line", (json_int_t)line, "http_status",
                            r->http_status, "message", r->message, "details", details);
    if (rec) {
        json_dumpf(rec, run->refused_out, JSON_COMPACT);
        fputc('\n', run->refused_out);
    }
    json_decref(rec);
}

static void on_result(void *userdata, uint64_t tag, const taxd_tx_result *r)
{
    import_run *run = userdata;
    long line = (long)tag;
    switch (r->outcome) {
    case TAXD_TX_CREATED: run->created++; break;
    case TAXD_TX_UPDATED: run->updated++; break;
    case TAXD_TX_UNCHANGED: run->unchanged++; break;
    default: run->refused++; write_refused(run, line, r); break;
    }
    run->answered++;
    journal_note(run->journal, line, OUTCOME_LETTER[r->outcome <= TAXD_TX_REFUSED ? r->outcome : TAXD_TX_REFUSED]);
}

static void on_failure(void *userdata, uint64_t tag, const taxd_error *err)
{
    (void)tag;
    (void)err;
    import_run *run = userdata;
    run->failed++;
}

static void on_batch(void *userdata, size_t count)
{
    (void)count;
    import_run *run = userdata;
    if (run->refused_out)
        fflush(run->refused_out);
    if (!journal_commit(run->journal) && !run->journal_failed) {
        run->journal_failed = true;
        fprintf(stderr, "%staxctl import: cannot write the journal: %s; stopping\n",
                run->progress.tty ? "\n" : "", strerror(errno));
    }
    progress_update(&run->progress, run->skipped + run->answered);
}

/* ---- the command */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: taxctl import transactions FILE [--format csv|jsonl] [--batch-size N]\n"
            "                                       [--connections N] [--journal PATH] [--restart]\n"
            "                                       [--dry-run] [--no-progress]\n"
            "CSV columns: id,account_id,datetime,type,subtype, and for sent_, received_, fee_:\n"
            "asset, amount, usd_rate (any order; see taxctl-import(1)).\n");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* Options into run; -1 to go on, else the exit status. */
static int parse_options(import_run *run, int argc, char **argv)
{
    static const struct option LONG[] = {
        {"format", required_argument, NULL, 'f'},  {"batch-size", required_argument, NULL, 'b'},
        {"connections", required_argument, NULL, 'c'}, {"journal", required_argument, NULL, 'j'},
        {"restart", no_argument, NULL, 'r'},       {"dry-run", no_argument, NULL, 'n'},
        {"no-progress", no_argument, NULL, 'q'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format = NULL;
    long batch = 1000, conns = 4;
    char *end;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", LONG, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'b': batch = strtol(optarg, &end, 10); if (*end || batch < 1 || batch > 1000) batch = -1; break;
        case 'c': conns = strtol(optarg, &end, 10); if (*end || conns < 1 || conns > 64) conns = -1; break;
        case 'j': run->journal_path = optarg; break;
        case 'r': run->restart = true; break;
        case 'n': run->dry_run = true; break;
        case 'q': run->quiet = true; break;
        case 'h': usage(stdout); return TAXCTL_EXIT_OK;
        default: usage(stderr); return TAXCTL_EXIT_USAGE;
        }
    }
    if (batch < 0 || conns < 0) {
        fprintf(stderr, "taxctl import: --batch-size is 1 to 1000 and --connections 1 to 64\n");
        return TAXCTL_EXIT_USAGE;
    }
    if (argc - optind != 2 || strcmp(argv[optind], "transactions") != 0) {
        usage(stderr);
        return TAXCTL_EXIT_USAGE;
    }
    run->path = argv[optind + 1];
    run->batch_size = (size_t)batch;
    run->connections = (int)conns;
    if (!format)
        format = ends_with(run->path, ".csv") ? "csv"
               : ends_with(run->path, ".jsonl") || ends_with(run->path, ".ndjson") ? "jsonl" : NULL;
    if (!format || (strcmp(format, "csv") != 0 && strcmp(format, "jsonl") != 0)) {
        fprintf(stderr, "taxctl import: %s: say --format csv or --format jsonl\n", run->path);
        return TAXCTL_EXIT_USAGE;
    }
    run->jsonl = strcmp(format, "jsonl") == 0;
    return -1;
}

static bool map_file(import_run *run)
{
    int fd = open(run->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "taxctl import: %s: %s\n", run->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    run->len = (size_t)st.st_size;
    run->data = "";
    if (run->len > 0) {
        void *m = mmap(NULL, run->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "taxctl import: %s: %s\n", run->path, strerror(errno));
            close(fd);
            return false;
        }
        madvise(m, run->len, MADV_SEQUENTIAL);
        run->data = m;
    }
    close(fd);
    return true;
}

static void print_summary(import_run *run, const char *refused_path)
{
    long not_sent = run->lines - run->skipped - run->answered;
    printf("taxctl import: %s\n", run->path);
    printf("  lines read: %ld\n", run->lines);
    printf("  written: %ld (created %ld, updated %ld, unchanged %ld)\n",
           run->created + run->updated + run->unchanged, run->created, run->updated, run->unchanged);
    printf("  refused: %ld%s%s\n", run->refused, run->refused ? ", all in " : "",
           run->refused ? refused_path : "");
    for (int i = 0; i < run->n_first; i++)
        printf("    line %ld (%d): %s\n", run->first[i].line, run->first[i].status, run->first[i].message);
    printf("  skipped: %ld (answered in an earlier run: %ld written, %ld refused)\n", run->skipped,
           run->prior.created + run->prior.updated + run->prior.unchanged, run->prior.refused);
    printf("  not sent: %ld%s\n", not_sent, not_sent > 0 ? " (incomplete: run the same command again)" : "");
    fflush(stdout);
}

static int exit_status(const import_run *run)
{
    if (run->lines - run->skipped - run->answered > 0)
        return TAXCTL_EXIT_INCOMPLETE;
    return run->refused + run->prior.refused > 0 ? TAXCTL_EXIT_REFUSED : TAXCTL_EXIT_OK;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = (int)SA_RESETHAND; /* a second signal ends the process at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Opens the journal and the refused file; false after saying why. */
static bool open_outputs(import_run *run, char **journal_path)
{
    journal_identity id;
    journal_identity_of(run->data, run->len, &id);
    if (!run->journal_path && asprintf(journal_path, "%s.taxctl-journal", run->path) < 0)
        return false;
    char msg[512];
    run->journal = journal_open(run->journal_path ? run->journal_path : *journal_path, &id,
                                run->restart, &run->prior, msg, sizeof msg);
    if (!run->journal) {
        fprintf(stderr, "taxctl import: %s\n", msg);
        return false;
    }
    if (asprintf(&run->refused_path, "%s.taxctl-refused.jsonl", run->path) < 0)
        return false;
    bool resumed = run->prior.done != NULL;
    run->refused_out = fopen(run->refused_path, resumed ? "a" : "w");
    if (!run->refused_out)
        fprintf(stderr, "taxctl import: %s: %s (refusals are still counted)\n", run->refused_path,
                strerror(errno));
    return true;
}

/* Pass 2 and the wait for every answer. */
static void send_all(import_run *run, taxd_client *client)
{
    taxd_sender_options so = {
        .connections = run->connections, .batch_size = run->batch_size,
        .on_result = on_result, .on_failure = on_failure, .on_batch = on_batch, .userdata = run,
    };
    taxd_error err = {0};
    run->sender = taxd_sender_new(client, &so, &err);
    if (!run->sender) {
        taxctl_print_error("import", &err);
        taxd_error_clear(&err);
        return;
    }
    for (long l = 0; l <= run->prior.max_line; l++)
        run->skipped += journal_prior_done(&run->prior, l);
    progress_start(&run->progress, stderr, "import", run->lines, run->skipped, run->quiet);
    install_signals();
    each_line(run, send_line);
    taxd_code code = taxd_sender_finish(run->sender, &err);
    progress_end(&run->progress);
    if (interrupted)
        fprintf(stderr, "taxctl import: interrupted: what was sent is journaled; run the same command again\n");
    if (code != TAXD_OK)
        taxctl_print_error("import stopped", &err);
    taxd_error_clear(&err);
    taxd_sender_free(run->sender);
    run->sender = NULL;
}

static void remove_if_empty(const char *path)
{
    struct stat st;
    if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
}

static void run_free(import_run *run)
{
    for (int i = 0; i < run->n_first; i++)
        free(run->first[i].message);
    journal_close(run->journal);
    journal_prior_free(&run->prior);
    if (run->refused_out) {
        fclose(run->refused_out);
        remove_if_empty(run->refused_path); /* no refusal in any run: no file to look at */
    }
    free(run->refused_path);
    if (run->len > 0)
        munmap((void *)run->data, run->len);
}

int taxctl_import(const taxctl_globals *g, int argc, char **argv)
{
    import_run run = {0};
    int status = parse_options(&run, argc, argv);
    if (status >= 0)
        return status;
    if (!map_file(&run))
        return TAXCTL_EXIT_USAGE;
    each_line(&run, check_line);
    if (run.bad > 0) {
        fprintf(stderr, "taxctl import: %s: %ld bad line%s; nothing was sent\n", run.path, run.bad,
                run.bad == 1 ? "" : "s");
        run_free(&run);
        return TAXCTL_EXIT_USAGE;
    }
    if (run.dry_run) {
        printf("taxctl import: %s: %ld transactions, all valid; nothing was sent (--dry-run)\n",
               run.path, run.lines);
        run_free(&run);
        return TAXCTL_EXIT_OK;
    }
    taxd_client *client = taxctl_client(g);
    char *journal_path = NULL;
    if (!client || !open_outputs(&run, &journal_path)) {
        taxd_client_free(client);
        free(journal_path);
        run_free(&run);
        return TAXCTL_EXIT_USAGE;
    }
    send_all(&run, client);
    print_summary(&run, run.refused_path);
    status = exit_status(&run);
    taxd_client_free(client);
    free(journal_path);
    run_free(&run);
    return status;
}
