/* store/internal.h: what the store's files share and nothing outside
 * src/store/ may include. store.c owns the pool, transactions and health,
 * stmt.c the statement helpers, and sqlite.c and pg.c are the two backends
 * (backend.h). Each resource's file (tenants.c, filers.c, ...) defines its
 * statements as static store_sql_t and uses these helpers, never a
 * backend's own API: it does not know which database it runs on.
 *
 * Conventions every store file follows:
 *  - a public function starts with conn_enter (reads) or conn_write (writes:
 *    one transaction, rolled back on any failure);
 *  - a prepared statement is always finished with stmt_done (or conn_run,
 *    which steps to DB_DONE and resets), so none holds a lock or a
 *    binding past its function;
 *  - text and blobs are bound by reference: the caller's strings outlive
 *    the step;
 *  - failures go through conn_fail, which maps constraint errors to
 *    STORE_CONFLICT / STORE_NOT_FOUND, lock waits past the deadline to
 *    STORE_TIMEOUT, a lost server to STORE_UNAVAILABLE, and logs the
 *    statement's name, never bound values. */
#ifndef TAXD_STORE_INTERNAL_H
#define TAXD_STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* A statement: a name for logs, SQLite's text (parameters ?N) and, when
 * PostgreSQL needs other words, PostgreSQL's twin (parameters $N) written
 * beside it; NULL when the same text runs on both (the PostgreSQL backend
 * then rewrites ?N to $N). Defined static const in the file of its
 * resource; connections cache the prepared form by its address. */
typedef struct store_sql {
    const char *name;
    const char *sql;
    const char *pg;
} store_sql_t;

/* A prepared statement of one connection, whichever the backend. */
typedef struct db_stmt db_stmt_t;

/* db_step's answers: a row, or the statement ran to its end. Any other
 * answer is a failure, one of db_error_t. */
enum { DB_ROW = 100, DB_DONE = 101 };

/* Failures, in the words both backends share (backend.h maps their codes). */
typedef enum db_error {
    DB_OK = 0,
    DB_ERR_OTHER,       /* anything below does not name it */
    DB_ERR_UNIQUE,      /* a primary or unique key is taken */
    DB_ERR_FOREIGN_KEY, /* a referenced row is missing (or a referencing one present) */
    DB_ERR_CONSTRAINT,  /* a CHECK or NOT NULL refused the row */
    DB_ERR_BUSY,        /* a lock wait gave up */
    DB_ERR_INTERRUPTED, /* the deadline stopped the statement */
    DB_ERR_RETRY,       /* deadlock or serialization failure: run the transaction again */
    DB_ERR_UNAVAILABLE, /* the database server cannot be reached or the connection was lost */
    DB_ERR_FULL,        /* the disk is full */
    DB_ERR_READONLY,    /* the database refuses writes */
    DB_ERR_PERM,        /* the database file cannot be opened or written */
    DB_ERR_CORRUPT,     /* the database file is not a sound database */
    DB_ERR_IO,          /* the storage failed */
    DB_ERR_NOMEM,
    DB_ERR_BAD_TEXT,    /* a bound text the database cannot hold (not UTF-8): it names no row */
} db_error_t;

#define STMT_CACHE_SLOTS 256 /* a power of two, well above the statement count */

typedef struct stmt_slot {
    const store_sql_t *key;
    db_stmt_t *stmt;
} stmt_slot_t;

struct store_backend;

struct store_conn {
    const struct store_backend *be;
    void *native;              /* the backend's connection (sqlite3 *, or pg.c's state) */
    stmt_slot_t stmts[STMT_CACHE_SLOTS]; /* prepared on first use, owned here */
    int64_t deadline_ms;       /* monotonic; 0 = none */
    int64_t wait_began_ms;     /* start of the current lock wait */
    bool timed_out;            /* a handler gave up since the last conn_enter */
    bool in_cleanup;           /* ROLLBACK must not be interrupted */
    bool broken;               /* the connection was lost: dropped at release, never reused */
    bool retire;               /* it holds buffers sized for one huge statement: closed at release */
    const _Atomic bool *fault; /* the store's injected fault, see store_set_fault */
    struct commit_queue *commits; /* the store's group commit (commit.c); NULL: none */
    struct commit_queue *health;  /* the store's write health (commit.c), on both backends */
    int last_rc;               /* db_error_t of the last failure (conn_fail); 0 none */
    int last_errno;            /* the system errno the backend saw with it */
    store_conn_t *next_idle;
};

/* Every public read starts here: a call made after its deadline, or while a
 * fault is injected, does no database work at all. */
store_status_t conn_enter(store_conn_t *conn);

typedef store_status_t (*tx_body_t)(store_conn_t *conn, const void *arg);
/* Runs body inside BEGIN IMMEDIATE ... COMMIT; any failure rolls back. The
 * body may run on another connection of the pool than conn (group commit:
 * it gets the connection to use as its argument) and in one transaction with
 * other writers' bodies, each in its own savepoint. */
store_status_t conn_write(store_conn_t *conn, tx_body_t body, const void *arg);
/* A claim of leased work (reports, TIN checks, webhook subscriptions):
 * conn_write on SQLite; on PostgreSQL a transaction of its own at READ
 * COMMITTED, whose statements must be exclusive by row locks alone (FOR
 * UPDATE SKIP LOCKED twins, UPDATEs whose WHERE re-checks the lease), so
 * that concurrent claimers of different rows never abort each other. */
store_status_t conn_write_claim(store_conn_t *conn, tx_body_t body, const void *arg);
/* A write whose body locks what it reads before relying on it (the
 * transaction writes: the accounts' rows FOR UPDATE, in key order, before
 * their rows, events and marks are read and written): conn_write on SQLite,
 * whose single writer already serialises them (group commit unchanged); on
 * PostgreSQL a transaction of its own at READ COMMITTED, where writers of
 * one account queue on its row lock instead of aborting each other, and a
 * deadlock (40P01) runs the transaction again. */
store_status_t conn_write_locking(store_conn_t *conn, tx_body_t body, const void *arg);
/* Inside a body of conn_write*: ends it with STORE_ERROR and has the whole
 * transaction run again from its start (as after a deadlock), for a race
 * that only a fresh run resolves (a key another transaction took first).
 * why names the statement, for the log. */
store_status_t conn_retry(store_conn_t *conn, const char *why);
/* conn_write's transaction on conn itself, without group commit. */
store_status_t conn_write_alone(store_conn_t *conn, tx_body_t body, const void *arg);
/* The group commit's writer connection: opened like a pooled one, with a
 * 64 MiB page cache, owned by the caller. NULL (logged) on failure. */
store_conn_t *conn_open_writer(store_t *store);
void conn_close_writer(store_conn_t *conn);
/* Rolls back the open transaction, if SQLite has not already ended it. */
void conn_rollback(store_conn_t *conn);

/* Group commit (commit.c): one queue per store, with a writer connection of
 * its own (outside the pool, a larger page cache) that runs every batch. */
typedef struct commit_queue commit_queue_t;
commit_queue_t *commit_queue_new(store_t *store);
void commit_queue_free(commit_queue_t *q);
/* Runs body in a batch with the writes queued meanwhile (see commit.c). */
store_status_t commit_queue_run(commit_queue_t *q, store_conn_t *conn, tx_body_t body,
                                const void *arg);
/* A write committed (or failed) on its own connection, outside any batch
 * (PostgreSQL): counts in the queue's health as a batch of one would. */
void commit_queue_note_alone(commit_queue_t *q, const store_conn_t *conn, store_status_t status);
/* The queue's view of write health (store_health). */
void commit_queue_health(commit_queue_t *q, int64_t now_ms, store_health_t *out);
/* A write refused before it reached the queue as storage would refuse it
 * (the injected fault): counts as a failed commit with code rc (db_error_t). */
void commit_queue_note_failure(commit_queue_t *q, int rc, int sys_errno);
/* True (and the probe's time taken) when a recovery probe is due at now_ms. */
bool commit_queue_probe_due(commit_queue_t *q, int64_t now_ms);
/* Bumps the settings version (inside a write): running processes reload. */
store_status_t conn_bump_settings(store_conn_t *conn);

/* The connection's prepared statement for q. */
store_status_t conn_prepare(store_conn_t *conn, const store_sql_t *q, db_stmt_t **out);
/* Prepares q and binds key as parameter 1; nothing stays bound on failure. */
store_status_t conn_prepare_key(store_conn_t *conn, const store_sql_t *q, const char *key,
                                db_stmt_t **out);
/* Steps a bound statement to SQLITE_DONE (skipping RETURNING rows) and resets it. */
store_status_t conn_run(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt);
/* Runs a statement without parameters. */
store_status_t conn_exec(store_conn_t *conn, const store_sql_t *q);
/* STORE_OK when q keyed by key returns a row, else STORE_NOT_FOUND. */
store_status_t conn_exists(store_conn_t *conn, const store_sql_t *q, const char *key);
/* Steps a bound single-value query and finishes it: *value receives its
 * column when it returns a row (a NULL reads as 0), and is left as it was
 * when it returns none. */
store_status_t conn_query_int(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                              int64_t *value);
/* Maps a failed result code of q to a status (see the conventions above). */
store_status_t conn_fail(store_conn_t *conn, const store_sql_t *q, int rc);
/* A bind failed: a programming error, logged; the statement is reset. */
store_status_t conn_bind_failed(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt);
/* A row that does not fit its C struct (corrupt or foreign database). */
store_status_t store_bad_row(const store_sql_t *q);
/* A caller passed something a struct cannot hold (unterminated string). */
store_status_t store_bad_argument(const char *op);

/* Keyset pagination, the one adapter of every list function: a page reads
 * limit + 1 rows, so it can tell whether more follow the last one it hands
 * over, and each row is decoded into the resource's own struct for the
 * caller's typed callback:
 *
 *     store_page_t page;
 *     page_open(&page, conn, &Q_LIST_FIRST, &Q_LIST_AFTER, tenant_id, after, limit);
 *     store_thing_t thing;
 *     while (page_next(&page, thing_from_row, &thing))
 *         if (each(&thing, ctx) != 0)
 *             break;
 *     return page_close(&page, more);
 *
 * A row that does not decode ends the page with STORE_ERROR (the decoder
 * logged it). */
typedef struct store_page {
    store_conn_t *conn;
    const store_sql_t *q;
    db_stmt_t *stmt; /* NULL when the page could not start */
    size_t limit;
    size_t delivered;
    store_status_t status;
    bool ended;         /* no row will be handed over any more */
    bool more;          /* a row follows the last one handed over */
} store_page_t;

/* Decodes the statement's current row (of q) into record, the resource's struct. */
typedef store_status_t (*row_decode_fn)(const store_sql_t *q, db_stmt_t *stmt, void *record);

/* Steps a bound statement for the one row it selects: decode(q, stmt,
 * record) on a row (decode NULL: only whether there is one),
 * STORE_NOT_FOUND when there is none. Finishes the statement. */
store_status_t conn_read_row(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                             row_decode_fn decode, void *record);

/* Starts a page of the rows keyed by key (a tenant): conn_enter, then
 * q_first (?1 key, ?2 window) when after is NULL or "", else q_after (?1
 * key, ?2 after, ?3 window), the window being limit + 1. A failure is kept
 * for page_close. */
void page_open(store_page_t *page, store_conn_t *conn, const store_sql_t *q_first,
               const store_sql_t *q_after, const char *key, const char *after, size_t limit);
/* Starts a page over a statement the caller entered, prepared and bound
 * itself (its window limit + 1); status is how that went, kept for
 * page_close when it is not STORE_OK (stmt is then ignored). */
void page_start(store_page_t *page, store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                size_t limit, store_status_t status);
/* Decodes the page's next row into record: false at the end of the page
 * (limit rows handed over, no more rows, or a failure). */
bool page_next(store_page_t *page, row_decode_fn decode, void *record);
/* Finishes the statement and returns the page's status; *more (may be NULL)
 * tells whether a row follows the last one handed over, also when the
 * caller stopped early. */
store_status_t page_close(store_page_t *page, bool *more);

/* ---- the statement layer both backends implement (backend.h) */

/* Runs or advances the statement: DB_ROW with a row to read, DB_DONE at its
 * end, or a db_error_t (conn_fail turns it into a status). */
int db_step(db_stmt_t *stmt);
/* Columns of the current row, numbered from 0. A text or blob stays valid
 * until the next db_step or stmt_done on the statement. */
bool db_column_is_null(db_stmt_t *stmt, int col);
int64_t db_column_int(db_stmt_t *stmt, int col);           /* NULL reads as 0 */
const char *db_column_text(db_stmt_t *stmt, int col);      /* NULL for SQL NULL */
size_t db_column_bytes(db_stmt_t *stmt, int col);          /* of the text or blob */
/* A blob (or the bytes of a text), NULL for SQL NULL; len may be NULL. */
const void *db_column_blob(db_stmt_t *stmt, int col, size_t *len);
bool bind_null(db_stmt_t *stmt, int index);
/* Binds len bytes of text (not NUL-terminated). */
bool bind_text_len(db_stmt_t *stmt, int index, const char *text, size_t len);
/* Binds a blob, also an empty one (bind_blob_or_null stores none as NULL). */
bool bind_blob(db_stmt_t *stmt, int index, const void *blob, size_t len);
/* Rows the last INSERT, UPDATE or DELETE of conn changed. */
int64_t conn_changes(store_conn_t *conn);
/* True while conn has a transaction open (also one a failure left open). */
bool conn_in_transaction(store_conn_t *conn);
/* Which backend conn speaks: true for PostgreSQL. */
bool conn_is_pg(const store_conn_t *conn);

void stmt_done(db_stmt_t *stmt);
/* Binds text; a NULL pointer binds SQL NULL. */
bool bind_text(db_stmt_t *stmt, int index, const char *text);
bool bind_int(db_stmt_t *stmt, int index, int64_t value);
/* Binds text, or SQL NULL when text is NULL or "" (an absent optional value). */
bool bind_text_or_null(db_stmt_t *stmt, int index, const char *text);
/* Runs a statement the caller bound (bound: every bind succeeded). */
store_status_t run_bound(store_conn_t *conn, const store_sql_t *q, db_stmt_t *stmt,
                         bool bound);
/* Binds a blob, or SQL NULL when blob is NULL or len is 0 (none). */
bool bind_blob_or_null(db_stmt_t *stmt, int index, const uint8_t *blob, size_t len);
/* Copies a TEXT column into a fixed buffer; false when it does not fit. */
bool column_copy(db_stmt_t *stmt, int col, char *out, size_t cap);
/* column_copy, with NULL read as "" (an absent optional value). */
bool column_copy_or_empty(db_stmt_t *stmt, int col, char *out, size_t cap);
/* Copies a BLOB column into out[cap] and *len; NULL reads as none (*len 0).
 * False for an empty blob or one longer than cap: no writer stores those. */
bool column_blob_copy(db_stmt_t *stmt, int col, uint8_t *out, size_t cap, size_t *len);
/* True when a caller's fixed-size field holds a NUL-terminated string. */
bool text_fits(const char *text, size_t cap);

/* ---- what store files share about an account's inventory inputs ------- */

/* Lowers the account's dirty watermark to from_ms (never raises it) and
 * bumps its inventory_version, inside the caller's write transaction: every
 * write that changes what the inventory computes calls it (transactions.c,
 * dispositions.c, provided_lots.c). */
store_status_t store_mark_dirty_in_tx(store_conn_t *conn, const char *account_uuid,
                                      int64_t from_ms);
/* A transaction's stored lines column decoded (transactions.c has the
 * format): *lines grown as needed (*cap its capacity; the caller frees);
 * false for text that does not decode or when memory ran out. */
struct store_tx_line;
bool store_tx_lines_decode(const char *text, struct store_tx_line **lines, size_t *count,
                           size_t *cap);
/* Deletes the provided lots of the transaction with seq tx_seq (an edit of
 * a deposit drops them in the same write; transactions.c). */
store_status_t store_provided_lots_drop_in_tx(store_conn_t *conn, int64_t tx_seq);

#endif
