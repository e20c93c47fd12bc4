/* store/pg.c: the PostgreSQL backend (backend.h) on libpq.
 *
 * Connections. One PGconn per store_conn_t (libpq connections are not
 * thread-safe; the pool hands each to one thread at a time). The URL is
 * given to libpq as it is (postgres:// and postgresql:// both work), with
 * connect_timeout and TCP keepalives as defaults the URL may override and
 * application_name 'taxd'. Every session then gets UTC, a 5 s bound on lock
 * waits (SQLite's default), a 60 s bound on idle transactions and hex bytea
 * output (pg_session_setup), again after every reconnection.
 *
 * Statements. A store_sql_t runs as its `pg` twin when it has one, else as
 * its SQLite text with ?N rewritten to $N outside literals, identifiers and
 * comments (a bare ? numbered as SQLite numbers it: one more than the
 * largest number before it, as the batch inserts write "(?1, ?, ?)"). Each is
 * prepared once per session under a name of its own ("s1", "s2", ...), with
 * the parameter types left to the server to infer. Parameters travel in
 * text format (ints formatted into the statement's buffers, text copied
 * into one buffer so the caller's length need not end at a NUL) except
 * blobs, which go in binary (no escaping). Results come in text format and
 * are fetched whole on the first step; later steps walk the rows.
 *
 * Deadlines. A statement is sent, then its result awaited with poll() on
 * the socket, bounded by conn->deadline_ms. When the deadline passes the
 * statement is cancelled (PQcancel), its result drained (bounded), timed_out
 * set, and the step answers DB_ERR_INTERRUPTED, which conn_fail turns into
 * STORE_TIMEOUT. A statement that finished before the cancel arrived keeps
 * its result: its work is done and must not be reported as undone.
 *
 * Lost connections. Before a statement is sent, the socket is checked for
 * an end of stream (the server restarted, or the session was terminated
 * while idle). Outside a transaction the session is re-established once
 * (PQreset): nothing was lost, and the statements the connection had
 * prepared are prepared again on their next use (a generation counter tells
 * which are stale). Inside a transaction, or when a statement is under way,
 * the transaction is gone: the step answers DB_ERR_UNAVAILABLE, the
 * connection is marked broken (the pool drops it at release) and the
 * caller must not think anything was written.
 *
 * Errors. SQLSTATE codes map onto db_error_t (pg_error_from_state). The
 * message kept for logs is the server's primary message only, never its
 * DETAIL (a unique violation's DETAIL holds the key's value), and for data
 * exceptions (class 22) only the words before the first colon (they quote
 * the offending input). Connect failures name host, port and database from
 * libpq's parsed options, never the URL, and the password is scrubbed from
 * any text libpq gives back. */
#include <errno.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/errmsg.h"
#include "core/log.h"
#include "store/backend.h"
#include "store/internal.h"
#include "store/pg_session.h"
#include "store/schema_pg.h"

enum {
    PG_CANCEL_DRAIN_MS = 5000, /* after a cancel: how long the server may take to stop */
    PG_ERRMSG_MAX = 256,
    PG_INT_TEXT = 24,          /* "-9223372036854775808" and a NUL */
    PG_BYTEA_OID = 17,         /* pg_type.oid of bytea (catalog/pg_type_d.h) */
    PG_BOOL_OID = 16,
    PG_TEXT_OID = 25,
    PG_PARAMS_MAX = 1024,      /* parameters of one statement (taxd binds at most ~20) */
};

/* conn->native: a session and what the statements of it share. */
typedef struct pg_native {
    PGconn *pg;
    unsigned next_name;  /* the last statement name handed out ("s<n>") */
    unsigned generation; /* bumped by every reconnection: older statements are gone */
    int64_t changes;     /* rows the last INSERT, UPDATE or DELETE changed */
    char errmsg[PG_ERRMSG_MAX];
} pg_native_t;

/* A parameter's value as libpq takes it. */
typedef struct pg_param {
    const char *value;  /* NULL: SQL NULL */
    int length;         /* blobs only */
    int format;         /* 0 text, 1 binary */
    size_t text_at;     /* copied text: its offset in the statement's text buffer */
    bool copied;
    char num[PG_INT_TEXT];
} pg_param_t;

/* A decoded bytea column of the current row. */
typedef struct pg_blob {
    uint8_t *data;
    size_t cap;
} pg_blob_t;

typedef struct pg_stmt {
    db_stmt_t base; /* first: backend.h's contract */
    char name[16];
    unsigned generation; /* the session it was prepared in */
    char *text;          /* the text sent to the server ($N parameters) */
    int nparams;
    bool *unused;        /* per parameter: no $N in the text (see pg_send_prepare) */
    pg_param_t *params;
    const char **values; /* rebuilt from params at each send */
    int *lengths;
    int *formats;
    char *texts;         /* copies of bound text, NUL-terminated, back to back */
    size_t texts_len, texts_cap;
    PGresult *res;       /* rows of the current run */
    int row;             /* the current row of res */
    int outcome;         /* 0: not yet run; else what the run ended with */
    pg_blob_t *blobs;    /* per column of res */
    int nblobs;
} pg_stmt_t;

static pg_native_t *native_of(store_conn_t *conn)
{
    return conn->native;
}

static pg_stmt_t *pg_stmt(db_stmt_t *stmt)
{
    return (pg_stmt_t *)stmt;
}

/* ---- messages */

/* Copies the first line of text into out (cap bytes). */
static void first_line(char *out, size_t cap, const char *text)
{
    if (text == NULL)
        text = "";
    size_t n = strcspn(text, "\r\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, text, n);
    out[n] = '\0';
}

static void pg_set_errmsg(pg_native_t *pc, const char *text)
{
    first_line(pc->errmsg, sizeof pc->errmsg, text);
}

/* Replaces every occurrence of secret in text (in place) with "***". */
static void scrub(char *text, const char *secret)
{
    if (secret == NULL || secret[0] == '\0')
        return;
    size_t n = strlen(secret);
    char *hit;
    while ((hit = strstr(text, secret)) != NULL) {
        memmove(hit + 3, hit + n, strlen(hit + n) + 1);
        memcpy(hit, "***", 3);
    }
}

/* The password as written in the URL's user info ("postgres://u:PW@h/..."),
 * percent-encoded as it appears; NULL when there is none. Found by hand
 * because a URL libpq cannot parse still must not have it echoed. */
static char *url_password_raw(const char *url)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return NULL;
    p += 3;
    size_t auth = strcspn(p, "/?");
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
        if (p[i] == '@')
            at = p + i;
    if (at == NULL)
        return NULL;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon == NULL || colon + 1 == at)
        return NULL;
    return strndup(colon + 1, (size_t)(at - colon - 1));
}

/* A query parameter's value (`password=...`) as written, or NULL. */
static char *url_query_value(const char *url, const char *key)
{
    const char *q = strchr(url, '?');
    size_t klen = strlen(key);
    while (q != NULL) {
        q++;
        if (strncmp(q, key, klen) == 0 && q[klen] == '=') {
            const char *v = q + klen + 1;
            return strndup(v, strcspn(v, "&"));
        }
        q = strchr(q, '&');
    }
    return NULL;
}

/* Removes the URL's password, as written in its user info or its query,
 * from msg (libpq echoes a malformed token of the URL as written). */
static void scrub_password(char *msg, const char *url)
{
    char *raw = url_password_raw(url);
    char *query = url_query_value(url, "password");
    scrub(msg, raw);
    scrub(msg, query);
    free(raw);
    free(query);
}

/* ---- SQLSTATE to db_error_t */

static int pg_error_from_state(const char *state)
{
    if (state == NULL || strlen(state) != 5)
        return DB_ERR_OTHER;
    static const struct {
        const char *state;
        int rc;
    } map[] = {
        {"23505", DB_ERR_UNIQUE},      {"23503", DB_ERR_FOREIGN_KEY},
        {"23502", DB_ERR_CONSTRAINT},  {"23514", DB_ERR_CONSTRAINT},
        {"40001", DB_ERR_RETRY},       {"40P01", DB_ERR_RETRY},
        {"55P03", DB_ERR_BUSY},        {"57014", DB_ERR_INTERRUPTED},
        {"57P01", DB_ERR_UNAVAILABLE}, {"57P02", DB_ERR_UNAVAILABLE},
        {"57P03", DB_ERR_UNAVAILABLE}, {"53100", DB_ERR_FULL},
        {"25006", DB_ERR_READONLY},    {"42501", DB_ERR_PERM},
        {"53200", DB_ERR_NOMEM},       {"XX001", DB_ERR_CORRUPT},
        {"XX002", DB_ERR_CORRUPT},     {"58030", DB_ERR_IO},
        {"22021", DB_ERR_BAD_TEXT},    {"22P05", DB_ERR_BAD_TEXT},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(state, map[i].state) == 0)
            return map[i].rc;
    if (strncmp(state, "08", 2) == 0) /* connection exceptions */
        return DB_ERR_UNAVAILABLE;
    return DB_ERR_OTHER;
}

/* The connection is gone: the pool must drop it, and the caller learns that
 * nothing of its transaction survived. */
static int pg_lost(store_conn_t *conn, const char *why)
{
    conn->broken = true;
    pg_set_errmsg(native_of(conn), why);
    return DB_ERR_UNAVAILABLE;
}

/* The failure res reports (NULL: no result at all), kept for errmsg. */
static int pg_error(store_conn_t *conn, const PGresult *res)
{
    pg_native_t *pc = native_of(conn);
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    int rc = pg_error_from_state(state);
    /* No result at all, or one without a SQLSTATE: libpq itself failed, which
     * it does only when the connection cannot carry the command (sent into a
     * closed socket, closed mid-answer): the server is away, not the SQL. */
    if (state == NULL && !conn->timed_out)
        rc = DB_ERR_UNAVAILABLE;
    if (primary != NULL) {
        pg_set_errmsg(pc, primary);
        /* data exceptions quote the input ("invalid input syntax for type
         * bigint: \"...\""): the input may be a secret */
        if (state != NULL && strncmp(state, "22", 2) == 0)
            pc->errmsg[strcspn(pc->errmsg, ":")] = '\0';
    } else {
        pg_set_errmsg(pc, PQerrorMessage(pc->pg));
    }
    if (rc == DB_ERR_INTERRUPTED)
        return rc;
    if (rc == DB_ERR_UNAVAILABLE || PQstatus(pc->pg) == CONNECTION_BAD) {
        conn->broken = true;
        return DB_ERR_UNAVAILABLE;
    }
    return rc;
}

/* ---- waiting for a result */

/* libpq's notices (a NOTICE from the server, a WARNING) would go to stderr
 * as plain text beside the JSON log lines. */
static void pg_notice(void *arg, const char *message)
{
    (void)arg;
    char line[PG_ERRMSG_MAX];
    first_line(line, sizeof line, message);
    log_event(LOG_INFO, "store: postgresql notice", json_pack("{s:s}", "message", line));
}

static void pg_cancel(pg_native_t *pc)
{
    PGcancel *cancel = PQgetCancel(pc->pg);
    char why[PG_ERRMSG_MAX];
    if (cancel == NULL || !PQcancel(cancel, why, sizeof why))
        log_event(LOG_WARN, "store: cannot cancel a statement past its deadline",
                  json_pack("{s:s}", "error", cancel != NULL ? why : "no cancel handle"));
    PQfreeCancel(cancel);
}

/* poll()'s timeout for the next wait: -1 none, 0 the bound has passed. */
static int pg_wait_ms(int64_t until_ms)
{
    if (until_ms == 0)
        return -1;
    int64_t left = until_ms - clock_monotonic_ms();
    if (left <= 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

/* Waits until libpq holds the whole result of what was sent, within the
 * connection's deadline (cancelling the statement when it passes). false
 * when the connection failed (libpq then has an error result ready) or,
 * with conn->broken set, when waiting longer is pointless (the cancel went
 * unanswered, the socket failed): PQgetResult would block. */
static bool pg_await(store_conn_t *conn)
{
    pg_native_t *pc = native_of(conn);
    int64_t until = conn->in_cleanup ? 0 : conn->deadline_ms; /* a ROLLBACK is never cut short */
    bool cancelled = false;
    while (PQisBusy(pc->pg)) {
        int wait = pg_wait_ms(until);
        if (wait == 0) {
            if (cancelled) { /* the server did not stop: the session is unusable */
                conn->broken = true;
                return false;
            }
            pg_cancel(pc);
            cancelled = true;
            conn->timed_out = true;
            until = clock_monotonic_ms() + PG_CANCEL_DRAIN_MS;
            continue;
        }
        struct pollfd p = {.fd = PQsocket(pc->pg), .events = POLLIN};
        int n = p.fd >= 0 ? poll(&p, 1, wait) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            conn->broken = true;
            return false;
        }
        if (n > 0 && !PQconsumeInput(pc->pg))
            return false;
    }
    return true;
}

/* The outcome of what was sent: the first result (an error one wins over a
 * success), the rest drained. NULL when there was none. */
static PGresult *pg_collect(store_conn_t *conn)
{
    pg_native_t *pc = native_of(conn);
    PGresult *keep = NULL;
    for (;;) {
        if (!pg_await(conn) && PQstatus(pc->pg) != CONNECTION_BAD) {
            conn->broken = true; /* the session is mid-statement: unusable */
            break;
        }
        PGresult *r = PQgetResult(pc->pg);
        if (r == NULL)
            break;
        bool r_failed = PQresultStatus(r) == PGRES_FATAL_ERROR;
        bool keep_ok = keep != NULL && PQresultStatus(keep) != PGRES_FATAL_ERROR;
        if (keep_ok && r_failed) {
            /* The server completed the statement (its result came whole) and
             * then the session ended (a shutdown's FATAL): the statement's
             * outcome stands (a COMMIT did commit), the session does not. */
            conn->broken = true;
            PQclear(r);
        } else if (keep == NULL) {
            keep = r;
        } else {
            PQclear(r);
        }
        if (PQstatus(pc->pg) == CONNECTION_BAD)
            break;
    }
    return keep;
}

/* Runs a statement without parameters or rows on the session (setup). */
static bool pg_exec_plain(pg_native_t *pc, const char *sql, char *why, size_t cap)
{
    PGresult *res = PQexec(pc->pg, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        const char *m = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        first_line(why, cap, m != NULL ? m : PQerrorMessage(pc->pg));
    }
    PQclear(res);
    return ok;
}

/* Settings every session of taxd runs with: UTC, SQLite's 5 s bound on lock
 * waits (a deadline may cut it shorter), no transaction left idle for more
 * than a minute (a stuck node must not hold locks forever), and bytea in
 * hex, which pg_column_blob decodes. */
static bool pg_session_setup(pg_native_t *pc, char *why, size_t cap)
{
    PQsetNoticeProcessor(pc->pg, pg_notice, NULL);
    return pg_exec_plain(pc,
                         "SET TIME ZONE 'UTC';"
                         " SET lock_timeout = '5s';"
                         " SET idle_in_transaction_session_timeout = '60s';"
                         " SET bytea_output = 'hex';"
                         " SET client_encoding = 'UTF8'",
                         why, cap);
}

/* True when the idle session's socket already says the server hung up
 * (a restart, pg_terminate_backend): reading it makes libpq see it. */
static bool pg_hung_up(pg_native_t *pc)
{
    for (int i = 0; i < 4 && PQstatus(pc->pg) == CONNECTION_OK; i++) {
        struct pollfd p = {.fd = PQsocket(pc->pg), .events = POLLIN};
        if (p.fd < 0 || poll(&p, 1, 0) <= 0)
            break;
        if (!PQconsumeInput(pc->pg))
            break;
    }
    return PQstatus(pc->pg) != CONNECTION_OK;
}

/* Makes sure a statement can be sent: a session found dead outside a
 * transaction is re-established once (see the top of the file). */
static int pg_ready(store_conn_t *conn)
{
    pg_native_t *pc = native_of(conn);
    if (conn->broken)
        return DB_ERR_UNAVAILABLE;
    PGTransactionStatusType before = PQtransactionStatus(pc->pg);
    if (!pg_hung_up(pc))
        return DB_OK;
    if (before != PQTRANS_IDLE)
        return pg_lost(conn, "connection lost inside a transaction");
    PQreset(pc->pg);
    char why[PG_ERRMSG_MAX] = "";
    if (PQstatus(pc->pg) != CONNECTION_OK)
        return pg_lost(conn, PQerrorMessage(pc->pg));
    if (!pg_session_setup(pc, why, sizeof why))
        return pg_lost(conn, why);
    pc->generation++;
    log_event(LOG_WARN, "store: reconnected to PostgreSQL", NULL);
    return DB_OK;
}

/* ---- ?N to $N */

/* Skips a quoted run starting at s[i] == quote (a doubled quote stays
 * inside); returns the index just past it. */
static size_t skip_quoted(const char *s, size_t i, char quote)
{
    for (i++; s[i] != '\0'; i++) {
        if (s[i] != quote)
            continue;
        if (s[i + 1] != quote)
            return i + 1;
        i++;
    }
    return i;
}

/* Skips a comment at s[i] ("--" to the line's end, or a block); returns
 * the index past it, or i when none starts there. */
static size_t skip_comment(const char *s, size_t i)
{
    if (s[i] == '-' && s[i + 1] == '-')
        return i + strcspn(s + i, "\n");
    if (s[i] == '/' && s[i + 1] == '*') {
        const char *end = strstr(s + i + 2, "*/");
        return end != NULL ? (size_t)(end - s) + 2 : strlen(s);
    }
    return i;
}

/* Copies sql, turning each parameter ?N (or SQLite's bare ?) into $N
 * outside literals, identifiers and comments, and keeping $N as it is,
 * counting the highest N into *nparams and marking seen[N - 1] (for N up
 * to seen_cap). The same for SQLite's text and a twin: a twin may reuse
 * SQLite's row macros ("(?1, ?, ?)"), so it cannot use PostgreSQL's jsonb ?
 * operator (jsonb_exists() says the same). NULL (with *why) for a number
 * out of range or no memory. */
static char *pg_rewrite(const char *sql, int *nparams, bool *seen, size_t seen_cap,
                        const char **why)
{
    size_t len = strlen(sql);
    char *out = malloc(len * 6 + 1); /* a bare ? (1 byte) may become $65535 (6) */
    if (out == NULL) {
        *why = "out of memory";
        return NULL;
    }
    *nparams = 0;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t next = i;
        if (sql[i] == '\'' || sql[i] == '"')
            next = skip_quoted(sql, i, sql[i]);
        else
            next = skip_comment(sql, i);
        if (next != i) {
            memcpy(out + o, sql + i, next - i);
            o += next - i;
            i = next;
            continue;
        }
        if (sql[i] != '?' && sql[i] != '$') {
            out[o++] = sql[i++];
            continue;
        }
        char *end;
        long n = strtol(sql + i + 1, &end, 10);
        bool digits = sql[i + 1] >= '0' && sql[i + 1] <= '9';
        if (!digits && sql[i] == '$') { /* $$ quoting or an identifier's $: not a parameter */
            out[o++] = sql[i++];
            continue;
        }
        if (!digits) /* SQLite's bare ?: one more than the largest number so far */
            n = *nparams + 1;
        if (n < 1 || n > 65535) {
            free(out);
            *why = "a parameter number out of range";
            return NULL;
        }
        o += (size_t)sprintf(out + o, "$%ld", n);
        i = digits ? (size_t)(end - sql) : i + 1;
        if (n > *nparams)
            *nparams = (int)n;
        if ((size_t)n <= seen_cap)
            seen[n - 1] = true;
    }
    out[o] = '\0';
    return out;
}

/* ---- statements */

/* Prepares st's text in the current session, awaiting the answer within the
 * deadline. Types are left to the server, except for a parameter the text
 * never names (SQLite's text may skip a number its callers still bind):
 * the server cannot infer one, so it is declared text and always sent as
 * NULL. */
static int pg_send_prepare(store_conn_t *conn, pg_stmt_t *st)
{
    pg_native_t *pc = native_of(conn);
    Oid types[PG_PARAMS_MAX];
    bool gaps = false;
    for (int i = 0; i < st->nparams; i++) {
        types[i] = st->unused[i] ? PG_TEXT_OID : 0;
        gaps = gaps || st->unused[i];
    }
    if (!PQsendPrepare(pc->pg, st->name, st->text, gaps ? st->nparams : 0, gaps ? types : NULL))
        return pg_error(conn, NULL);
    PGresult *res = pg_collect(conn);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? DB_OK : pg_error(conn, res);
    PQclear(res);
    if (rc == DB_OK)
        st->generation = pc->generation;
    return rc;
}

static void pg_free_stmt(pg_stmt_t *st)
{
    if (st == NULL)
        return;
    PQclear(st->res);
    for (int i = 0; i < st->nblobs; i++)
        free(st->blobs[i].data);
    free(st->blobs);
    free(st->text);
    free(st->params);
    free(st->unused);
    free(st->values);
    free(st->lengths);
    free(st->formats);
    free(st->texts);
    free(st);
}

static db_stmt_t *pg_prepare(store_conn_t *conn, const store_sql_t *q, int *rc)
{
    pg_native_t *pc = native_of(conn);
    pg_stmt_t *st = calloc(1, sizeof *st);
    if (st == NULL) {
        *rc = DB_ERR_NOMEM;
        return NULL;
    }
    st->base.conn = conn;
    st->base.q = q;
    const char *why = NULL;
    bool seen[PG_PARAMS_MAX] = {false};
    st->text = pg_rewrite(q->pg != NULL ? q->pg : q->sql, &st->nparams, seen, PG_PARAMS_MAX, &why);
    if (st->text == NULL || st->nparams > PG_PARAMS_MAX) {
        pg_set_errmsg(pc, st->text == NULL ? why : "too many parameters");
        pg_free_stmt(st);
        *rc = DB_ERR_OTHER;
        return NULL;
    }
    size_t n = st->nparams > 0 ? (size_t)st->nparams : 1;
    st->unused = calloc(n, sizeof *st->unused);
    for (int i = 0; st->unused != NULL && i < st->nparams; i++)
        st->unused[i] = !seen[i];
    st->params = calloc(n, sizeof *st->params);
    st->values = calloc(n, sizeof *st->values);
    st->lengths = calloc(n, sizeof *st->lengths);
    st->formats = calloc(n, sizeof *st->formats);
    if (st->unused == NULL || st->params == NULL || st->values == NULL || st->lengths == NULL || st->formats == NULL) {
        pg_free_stmt(st);
        *rc = DB_ERR_NOMEM;
        return NULL;
    }
    snprintf(st->name, sizeof st->name, "s%u", ++pc->next_name);
    *rc = pg_ready(conn);
    if (*rc == DB_OK)
        *rc = pg_send_prepare(conn, st);
    if (*rc != DB_OK) {
        pg_free_stmt(st);
        return NULL;
    }
    return &st->base;
}

/* Prepared statements live as long as their session, and the connection's
 * cache never drops one before closing: nothing to tell the server. */
static void pg_finalize(db_stmt_t *stmt)
{
    pg_free_stmt(pg_stmt(stmt));
}

static void pg_clear_run(pg_stmt_t *st)
{
    PQclear(st->res);
    st->res = NULL;
    st->row = 0;
    st->outcome = 0;
}

static void pg_reset(db_stmt_t *stmt)
{
    pg_stmt_t *st = pg_stmt(stmt);
    pg_clear_run(st);
    for (int i = 0; i < st->nparams; i++) {
        st->params[i].value = NULL;
        st->params[i].copied = false;
    }
    st->texts_len = 0;
}

static pg_param_t *pg_param(pg_stmt_t *st, int index)
{
    if (index < 1 || index > st->nparams)
        return NULL;
    pg_param_t *p = &st->params[index - 1];
    p->copied = false;
    p->length = 0;
    p->format = 0;
    return p;
}

static bool pg_bind_null(db_stmt_t *stmt, int index)
{
    pg_param_t *p = pg_param(pg_stmt(stmt), index);
    if (p == NULL)
        return false;
    p->value = NULL;
    return true;
}

static bool pg_bind_int(db_stmt_t *stmt, int index, int64_t value)
{
    pg_param_t *p = pg_param(pg_stmt(stmt), index);
    if (p == NULL)
        return false;
    snprintf(p->num, sizeof p->num, "%lld", (long long)value);
    p->value = p->num;
    return true;
}

/* Text is copied: libpq's text parameters end at a NUL, and the caller's
 * length need not. A NUL inside the text cannot be stored in PostgreSQL's
 * text at all: refused as a bind failure. */
static bool pg_bind_text(db_stmt_t *stmt, int index, const char *text, size_t len)
{
    pg_stmt_t *st = pg_stmt(stmt);
    pg_param_t *p = pg_param(st, index);
    if (p == NULL || text == NULL || memchr(text, '\0', len) != NULL)
        return false;
    if (st->texts_len + len + 1 > st->texts_cap) {
        size_t cap = st->texts_cap != 0 ? st->texts_cap : 256;
        while (cap < st->texts_len + len + 1)
            cap *= 2;
        char *grown = realloc(st->texts, cap);
        if (grown == NULL)
            return false;
        st->texts = grown;
        st->texts_cap = cap;
    }
    memcpy(st->texts + st->texts_len, text, len);
    st->texts[st->texts_len + len] = '\0';
    p->text_at = st->texts_len;
    p->copied = true;
    p->value = "";
    st->texts_len += len + 1;
    return true;
}

/* Blobs go in binary format by reference: the caller's bytes outlive the
 * step (internal.h). */
static bool pg_bind_blob(db_stmt_t *stmt, int index, const void *blob, size_t len)
{
    pg_param_t *p = pg_param(pg_stmt(stmt), index);
    if (p == NULL || len > INT_MAX)
        return false;
    p->value = len > 0 ? blob : "";
    p->length = (int)len;
    p->format = 1;
    return true;
}

/* Records how many rows the command changed (INSERT, UPDATE, DELETE, also
 * with RETURNING); other commands leave the count as it was, as SQLite's
 * sqlite3_changes does. */
static void pg_note_changes(pg_native_t *pc, PGresult *res)
{
    const char *tag = PQcmdStatus(res);
    const char *n = PQcmdTuples(res);
    bool counted = strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 ||
                   strncmp(tag, "DELETE", 6) == 0 || strncmp(tag, "MERGE", 5) == 0;
    if (counted && n[0] != '\0')
        pc->changes = strtoll(n, NULL, 10);
}

/* A statement whose parameters or result pass this many bytes or rows
 * leaves libpq's buffers grown to its size for the connection's lifetime
 * (libpq never shrinks them): such a connection is retired at release
 * rather than kept in the pool with them. */
enum { PG_RETIRE_BYTES = 1 << 20, PG_RETIRE_ROWS = 10000 };

static void pg_note_size(store_conn_t *conn, const pg_stmt_t *st, const PGresult *res)
{
    size_t sent = st->texts_len; /* the texts' copies (their lengths are not passed) */
    for (int i = 0; i < st->nparams; i++)
        sent += st->values[i] != NULL ? (size_t)st->lengths[i] : 0;
    bool many = res != NULL && PQntuples(res) > PG_RETIRE_ROWS;
    bool wide = false;
    if (res != NULL && PQntuples(res) == 1)
        for (int c = 0; c < PQnfields(res) && !wide; c++)
            wide = PQgetlength(res, 0, c) > PG_RETIRE_BYTES;
    if (sent > PG_RETIRE_BYTES || many || wide)
        conn->retire = true;
}

/* Sends st's run with its bindings and takes its whole result. */
static int pg_run(store_conn_t *conn, pg_stmt_t *st)
{
    pg_native_t *pc = native_of(conn);
    int rc = pg_ready(conn);
    if (rc == DB_OK && st->generation != pc->generation)
        rc = pg_send_prepare(conn, st);
    if (rc != DB_OK)
        return rc;
    for (int i = 0; i < st->nparams; i++) {
        const pg_param_t *p = &st->params[i];
        st->values[i] = st->unused[i] ? NULL : p->copied ? st->texts + p->text_at : p->value;
        st->lengths[i] = p->length;
        st->formats[i] = p->format;
    }
    if (!PQsendQueryPrepared(pc->pg, st->name, st->nparams, st->values, st->lengths,
                             st->formats, 0))
        return pg_error(conn, NULL);
    PGresult *res = pg_collect(conn);
    pg_note_size(conn, st, res);
    switch (PQresultStatus(res)) {
    case PGRES_TUPLES_OK:
        pg_note_changes(pc, res);
        st->res = res;
        return PQntuples(res) > 0 ? DB_ROW : DB_DONE;
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY:
        pg_note_changes(pc, res);
        PQclear(res);
        return DB_DONE;
    default:
        break;
    }
    rc = res == NULL && conn->timed_out ? DB_ERR_INTERRUPTED : pg_error(conn, res);
    PQclear(res);
    return rc;
}

static int pg_step(db_stmt_t *stmt)
{
    pg_stmt_t *st = pg_stmt(stmt);
    if (st->outcome == DB_ROW && st->res != NULL && ++st->row < PQntuples(st->res))
        return DB_ROW;
    if (st->outcome != 0) {
        st->outcome = st->outcome == DB_ROW ? DB_DONE : st->outcome;
        return st->outcome;
    }
    st->row = 0;
    st->outcome = pg_run(stmt->conn, st);
    return st->outcome;
}

/* ---- columns */

static bool pg_has_value(pg_stmt_t *st, int col)
{
    return st->res != NULL && st->row < PQntuples(st->res) && col >= 0 &&
           col < PQnfields(st->res) && !PQgetisnull(st->res, st->row, col);
}

static bool pg_column_is_null(db_stmt_t *stmt, int col)
{
    return !pg_has_value(pg_stmt(stmt), col);
}

/* Integers arrive as text. SUM over BIGINT is NUMERIC on PostgreSQL, whose
 * text of a whole number ("123") parses the same; a boolean ("t", "f")
 * reads as SQLite's 1 and 0. Anything else (a fraction, a value past
 * int64) cannot be what the caller expects: logged as a bad row, read as 0. */
static int64_t pg_column_int(db_stmt_t *stmt, int col)
{
    pg_stmt_t *st = pg_stmt(stmt);
    if (!pg_has_value(st, col))
        return 0;
    const char *text = PQgetvalue(st->res, st->row, col);
    if (PQftype(st->res, col) == PG_BOOL_OID)
        return text[0] == 't' ? 1 : 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        store_bad_row(stmt->q);
        return 0;
    }
    return v;
}

static const char *pg_column_text(db_stmt_t *stmt, int col, size_t *len)
{
    pg_stmt_t *st = pg_stmt(stmt);
    if (!pg_has_value(st, col)) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = (size_t)PQgetlength(st->res, st->row, col);
    return PQgetvalue(st->res, st->row, col);
}

/* The column's blob buffer, grown to hold n bytes. */
static uint8_t *pg_blob_buffer(pg_stmt_t *st, int col, size_t n)
{
    int ncols = PQnfields(st->res);
    if (st->nblobs < ncols) {
        pg_blob_t *grown = realloc(st->blobs, (size_t)ncols * sizeof *grown);
        if (grown == NULL)
            return NULL;
        memset(grown + st->nblobs, 0, (size_t)(ncols - st->nblobs) * sizeof *grown);
        st->blobs = grown;
        st->nblobs = ncols;
    }
    pg_blob_t *b = &st->blobs[col];
    if (b->cap < n || b->data == NULL) {
        uint8_t *data = realloc(b->data, n > 0 ? n : 1);
        if (data == NULL)
            return NULL;
        b->data = data;
        b->cap = n > 0 ? n : 1;
    }
    return b->data;
}

/* bytea arrives hex-encoded ("\x0a1b"): decoded into a buffer of the
 * statement's, one per column, valid until the next step or reset (the
 * rows are all in memory, so the buffers are simply reused). Another type
 * reads as its text's bytes, as SQLite reads a TEXT as a blob. */
static const void *pg_column_blob(db_stmt_t *stmt, int col, size_t *len)
{
    pg_stmt_t *st = pg_stmt(stmt);
    *len = 0;
    if (!pg_has_value(st, col))
        return NULL;
    const char *text = PQgetvalue(st->res, st->row, col);
    size_t tlen = (size_t)PQgetlength(st->res, st->row, col);
    if (PQftype(st->res, col) != PG_BYTEA_OID) {
        *len = tlen;
        return text;
    }
    if (tlen < 2 || text[0] != '\\' || text[1] != 'x' || tlen % 2 != 0) {
        store_bad_row(stmt->q);
        return NULL;
    }
    size_t n = (tlen - 2) / 2;
    uint8_t *out = pg_blob_buffer(st, col, n);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi = crypto_hex_value(text[2 + 2 * i]), lo = crypto_hex_value(text[3 + 2 * i]);
        if (hi < 0 || lo < 0) {
            store_bad_row(stmt->q);
            return NULL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n;
    return out;
}

/* ---- the connection */

static int64_t pg_changes(store_conn_t *conn)
{
    return native_of(conn)->changes;
}

/* A lost session has no transaction left on the server (UNKNOWN: false). */
static bool pg_in_transaction(store_conn_t *conn)
{
    switch (PQtransactionStatus(native_of(conn)->pg)) {
    case PQTRANS_ACTIVE:
    case PQTRANS_INTRANS:
    case PQTRANS_INERROR:
        return true;
    default:
        return false;
    }
}

static const char *pg_errmsg(store_conn_t *conn)
{
    pg_native_t *pc = native_of(conn);
    if (pc->errmsg[0] == '\0')
        pg_set_errmsg(pc, PQerrorMessage(pc->pg));
    return pc->errmsg;
}

/* Nothing to arm: every wait reads conn->deadline_ms when it starts. */
static void pg_deadline_changed(store_conn_t *conn)
{
    (void)conn;
}

/* "host:port/dbname" of the target, from libpq's parse of it (never the
 * URL itself, which may hold a password). */
static void pg_describe(const char *target, char *out, size_t cap)
{
    const char *host = NULL, *port = NULL, *db = NULL;
    PQconninfoOption *opts = PQconninfoParse(target, NULL);
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "dbname") == 0)
            db = o->val;
    }
    snprintf(out, cap, "%s:%s/%s", host != NULL && host[0] ? host : "localhost",
             port != NULL && port[0] ? port : "5432", db != NULL && db[0] ? db : "(default)");
    PQconninfoFree(opts);
}

/* *err = "<what>: <reason>", the reason's first line, without the password. */
static void pg_connect_error(char **err, const char *target, const char *what, const char *reason)
{
    char line[PG_ERRMSG_MAX];
    first_line(line, sizeof line, reason);
    /* libpq starts its reasons with a prefix of its own in some versions */
    const char *r = strncmp(line, "connection to server ", 21) == 0 && strstr(line, " failed: ")
                        ? strstr(line, " failed: ") + 9
                        : line;
    char msg[PG_ERRMSG_MAX * 2];
    snprintf(msg, sizeof msg, "%s: %s", what, r);
    scrub_password(msg, target);
    errmsg_set(err, "%s", msg);
}

static bool pg_connect(store_conn_t *conn, const char *target, char **err)
{
    char *why = NULL;
    PQconninfoOption *parsed = PQconninfoParse(target, &why);
    PQconninfoFree(parsed);
    if (parsed == NULL) {
        pg_connect_error(err, target, "malformed PostgreSQL URL", why ? why : "out of memory");
        PQfreemem(why);
        return false;
    }
    pg_native_t *pc = calloc(1, sizeof *pc);
    if (pc == NULL) {
        errmsg_set(err, "out of memory");
        return false;
    }
    /* Defaults first (the URL may override them), application_name last. */
    const char *const keys[] = {"connect_timeout", "keepalives_idle", "keepalives_interval",
                                "keepalives_count", "dbname", "application_name", NULL};
    const char *const values[] = {"10", "30", "10", "3", target, "taxd", NULL};
    pc->pg = PQconnectdbParams(keys, values, 1);
    char where[PG_ERRMSG_MAX];
    pg_describe(target, where, sizeof where);
    char what[PG_ERRMSG_MAX + 64];
    snprintf(what, sizeof what, "cannot connect to PostgreSQL %s", where);
    if (pc->pg == NULL || PQstatus(pc->pg) != CONNECTION_OK) {
        pg_connect_error(err, target, what, pc->pg ? PQerrorMessage(pc->pg) : "out of memory");
        PQfinish(pc->pg);
        free(pc);
        return false;
    }
    char setup[PG_ERRMSG_MAX] = "";
    if (!pg_session_setup(pc, setup, sizeof setup)) {
        pg_connect_error(err, target, what, setup);
        PQfinish(pc->pg);
        free(pc);
        return false;
    }
    conn->native = pc;
    return true;
}

static void pg_disconnect(store_conn_t *conn)
{
    pg_native_t *pc = native_of(conn);
    if (pc == NULL)
        return;
    PQfinish(pc->pg);
    free(pc);
    conn->native = NULL;
}

static bool pg_migrate(store_conn_t *conn, bool fail_on_purpose, char **err)
{
    (void)fail_on_purpose; /* PostgreSQL's schema is one script: nothing to fail midway */
    return store_pg_migrate(native_of(conn)->pg, err);
}

static const store_sql_t Q_PG_BEGIN = {"begin", "BEGIN ISOLATION LEVEL SERIALIZABLE", NULL};
static const store_sql_t Q_PG_BEGIN_READ = {"begin_read",
                                            "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", NULL};

const store_backend_t store_pg_backend = {
    .name = "postgresql",
    .is_pg = true,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .migrate = pg_migrate,
    .tune_writer = NULL, /* no group commit: the server groups WAL flushes itself */
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .step = pg_step,
    .reset = pg_reset,
    .bind_null = pg_bind_null,
    .bind_int = pg_bind_int,
    .bind_text = pg_bind_text,
    .bind_blob = pg_bind_blob,
    .column_is_null = pg_column_is_null,
    .column_int = pg_column_int,
    .column_text = pg_column_text,
    .column_blob = pg_column_blob,
    .changes = pg_changes,
    .in_transaction = pg_in_transaction,
    .errmsg = pg_errmsg,
    .deadline_changed = pg_deadline_changed,
    .begin_write = &Q_PG_BEGIN,
    .begin_read = &Q_PG_BEGIN_READ,
    .tune_bulk = NULL,
    .checkpoint = NULL,
};

/* ---- bare sessions (pg_session.h) */

PGconn *store_pg_session_open(const char *url, char **err)
{
    store_conn_t conn = {.be = &store_pg_backend};
    if (!pg_connect(&conn, url, err))
        return NULL;
    pg_native_t *pc = conn.native;
    PGconn *pg = pc->pg;
    free(pc);
    return pg;
}

void store_pg_describe(const char *url, char *out, size_t cap)
{
    pg_describe(url, out, cap);
}

void store_pg_scrub(char *msg, const char *url)
{
    scrub_password(msg, url);
}
