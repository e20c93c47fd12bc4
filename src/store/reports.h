/* store/reports.h: inventory-summary reports and their files. A report row
 * is created pending, claimed by a worker with a lease, and ends completed
 * (its file in report_chunks) or failed; the janitor deletes it with its file
 * once its retention (expires_at) has passed.
 *
 * Fencing. Every write a worker makes after its claim names the claim token
 * it was given (a fresh random value per claim) and changes nothing when the
 * report was claimed again meanwhile: a worker whose lease expired while it
 * was still alive can never overwrite the work of the worker that took over.
 * Those calls answer STORE_NOT_FOUND when the claim is lost.
 *
 * Times: created_at and expires_at come from the service clock (tests move
 * it); leases from the wall clock, because they coordinate processes that
 * must agree on them. Strings in structs are owned by the struct; the
 * malloc'd ones are released with store_report_clear.
 *
 * Account ids. A report scoped by account_ids keeps them once, as the JSON
 * array it was given (report_ids, written at the trigger, never rewritten).
 * The ids it skipped are no second copy: at completion, a bitmap over the
 * positions of that array marks the first appearance of each id that is no
 * account of the tenant (store_report_done_t.skipped); the status GET lists
 * them from the array and the bitmap. */
#ifndef TAXD_STORE_REPORTS_H
#define TAXD_STORE_REPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/gains.h"
#include "store/inventory.h"
#include "store/store.h"

#define STORE_REPORT_CHUNK_BYTES (256u * 1024) /* every chunk but the last is this full */
#define STORE_REPORT_CLAIM_LEN 33     /* 32 hex characters plus the NUL */
#define STORE_REPORT_CODE_MAX 32
#define STORE_REPORT_MESSAGE_MAX 512
#define STORE_REPORT_DIRECTIVE_MAX 64
#define STORE_REPORT_KIND_MAX 24
/* reports.kind (schema v13): what a report holds. An inventory-summary
 * report has no tax year; a gains report has one. */
#define STORE_REPORT_KIND_INVENTORY "inventory-summary"
#define STORE_REPORT_KIND_GAINS "gains"

typedef struct store_report {
    char id[STORE_UUID_LEN];
    char tenant_id[STORE_UUID_LEN];
    char status[16];                  /* pending, processing, completed, failed */
    char format[8];                   /* csv, jsonl */
    int64_t created_at;
    int64_t expires_at;               /* retention: deleted from then on */
    int64_t expired_leases;
    int64_t row_count;                /* completed only */
    int64_t size_bytes;               /* completed only */
    char error_code[STORE_REPORT_CODE_MAX];          /* failed only */
    char error_message[STORE_REPORT_MESSAGE_MAX];    /* failed only */
    char test_directive[STORE_REPORT_DIRECTIVE_MAX]; /* "" = none */
    char kind[STORE_REPORT_KIND_MAX]; /* STORE_REPORT_KIND_*; "" at create = inventory */
    int tax_year;                     /* gains reports; 0 = none */
    bool scoped;                      /* account_ids were given (report_ids holds them) */
    char *metadata;                   /* malloc'd JSON object text; NULL until completed */
    uint8_t *skipped;                 /* malloc'd bitmap (bit i = byte i/8, 1 << i%8) over
                                         the requested positions; NULL = none skipped */
    size_t skipped_len;               /* bytes */
} store_report_t;

/* Frees the malloc'd members (safe on a zeroed struct). */
void store_report_clear(store_report_t *report);

/* Inserts a pending report (id, tenant_id, format, created_at, expires_at,
 * test_directive, kind and tax_year are used) with its requested ids, account_ids: the
 * compact JSON array text of strings, ids_len bytes (NULL: every account),
 * borrowed. In the same
 * transaction, counts the tenant's reports pending or processing: when
 * there are max_active or more already, inserts nothing and sets *admitted
 * false (STORE_OK). */
store_status_t store_report_create(store_conn_t *conn, const store_report_t *report,
                                   const char *account_ids, size_t ids_len,
                                   unsigned max_active, bool *admitted);

/* Which malloc'd members store_report_get loads. */
enum {
    STORE_REPORT_WITH_METADATA = 1u << 1, /* metadata and skipped */
};

/* The report by id, whatever its tenant (the caller compares). Members not
 * asked for are left NULL. */
store_status_t store_report_get(store_conn_t *conn, const char *id, unsigned texts,
                                store_report_t *out);

/* The requested ids of a scoped report, as stored (a JSON array of strings,
 * compact): *text is malloc'd (NUL-terminated, the caller frees), *len its
 * bytes. Read in one piece straight into that buffer (incremental blob I/O),
 * so the only copy in memory is the caller's. STORE_NOT_FOUND when the
 * report has none (or was deleted). */
store_status_t store_report_requested(store_conn_t *conn, const char *id, char **text,
                                      size_t *len);

/* ---- the runner */

typedef struct store_report_lease {
    const char *claim;       /* this worker's token for this claim */
    int64_t now_ms;          /* wall clock */
    int64_t service_now_ms;  /* service clock: finished_at of reports failed here */
    int64_t lease_ms;
    unsigned max_leases;     /* expired leases after which a report is failed */
} store_report_lease_t;

/* In one transaction: fails the processing reports whose lease expired for
 * the max_leases-th time (error lease_expired, their chunks deleted), then
 * claims the oldest pending report, or a processing one whose lease expired
 * (counting that expiry), for lease->claim until now + lease_ms.
 * STORE_NOT_FOUND when there is nothing to claim. out gets the report
 * (status "processing", expired_leases as counted; no metadata). */
store_status_t store_report_claim(store_conn_t *conn, const store_report_lease_t *lease,
                                  store_report_t *out);
/* Extends the lease to lease_until. */
store_status_t store_report_renew(store_conn_t *conn, const char *id, const char *claim,
                                  int64_t lease_until);
/* Gives the report back (pending, no lease, expiry count unchanged): the
 * process is stopping; another worker starts it again from the beginning. */
store_status_t store_report_release(store_conn_t *conn, const char *id, const char *claim);
/* Marks it failed with code and message and deletes its chunks. */
store_status_t store_report_fail(store_conn_t *conn, const char *id, const char *claim,
                                 const char *code, const char *message, int64_t now_ms);
/* Deletes the chunks an earlier, interrupted claim wrote. */
store_status_t store_report_reset_chunks(store_conn_t *conn, const char *id, const char *claim);
/* Stores chunk seq of the file and extends the lease, in one transaction. */
store_status_t store_report_put_chunk(store_conn_t *conn, const char *id, const char *claim,
                                      int64_t seq, const void *data, size_t len,
                                      int64_t lease_until);

typedef struct store_report_done {
    const void *last_chunk;  /* the final chunk, stored in the same transaction; NULL = none */
    size_t last_len;
    int64_t last_seq;
    const char *metadata;    /* JSON object text */
    const uint8_t *skipped;  /* the skipped bitmap (see store_report_t); NULL = none */
    size_t skipped_len;
    int64_t row_count;
    int64_t size_bytes;
    int64_t finished_at;     /* service clock */
} store_report_done_t;

/* Stores the last chunk, the metadata and the skipped bitmap and marks the
 * report completed, in one transaction. */
store_status_t store_report_complete(store_conn_t *conn, const char *id, const char *claim,
                                     const store_report_done_t *done);

/* Up to `cap` accounts that are dirty among those a report includes (every
 * account of the tenant when scoped_report is NULL, else those whose caller
 * ids the requested ids of the report with that id name), in uuid order
 * after after_uuid ("" from the start). *count receives how many were
 * written to out. */
store_status_t store_report_dirty_accounts(store_conn_t *conn, const char *tenant_id,
                                           const char *scoped_report, const char *after_uuid,
                                           store_inv_account_t *out, size_t cap, size_t *count);

/* One row of the report: borrowed strings, valid during the callback. */
typedef struct store_report_row {
    const char *account_id;
    const char *asset_code;
    const char *asset_type;        /* "" when the asset row is missing */
    const char *total_quantity;
    const char *total_cost;
    const char *average_unit_cost; /* NULL: none */
    const char *quantity_with_basis;
} store_report_row_t;

typedef struct store_report_reader {
    /* A gains report (kind gains): with gain set, the rows are each
     * included account's gains rows dated in [from_ms, to_ms)
     * (store/gains.h), accounts in caller-id order, each account's rows in
     * seq order, and row is not called. */
    int (*gain)(const char *account_id, const store_gain_t *row, void *ctx);
    int64_t from_ms, to_ms;
    store_conn_t *conn;            /* internal: the reading connection */
    store_status_t status;         /* internal: a failure of a gains read */
    /* The position in the requested array of each supplied id that is no
     * account of the tenant, at its first appearance, in increasing order
     * (only for a scoped report). */
    int (*skipped)(int64_t position, void *ctx);
    /* Each held (account, asset), ordered by account id then asset code. */
    int (*row)(const store_report_row_t *row, void *ctx);
    void *ctx;
    int64_t requested;             /* out: elements of account_ids (duplicates too), or 0 */
    int64_t included;              /* out: distinct accounts included */
} store_report_reader_t;

/* Reads everything a report holds inside one read transaction (one
 * snapshot): the counts of requested and included accounts, the skipped
 * positions, then the rows of every (account, asset) whose total quantity
 * is not zero. scoped_report: the id of the report whose requested ids
 * scope it, or NULL for every account of the tenant. A non-zero return from
 * a callback stops the read (not an error: the caller knows why). Callbacks
 * must not use this connection (another one may). */
store_status_t store_report_read(store_conn_t *conn, const char *tenant_id,
                                 const char *scoped_report, store_report_reader_t *reader);

/* ---- downloads and the janitor */

/* Copies chunk seq of a report into buf (cap bytes). STORE_NOT_FOUND when it
 * does not exist (the report was deleted meanwhile). */
store_status_t store_report_chunk(store_conn_t *conn, const char *id, int64_t seq, void *buf,
                                  size_t cap, size_t *len);

/* Deletes up to `limit` reports whose expires_at <= now_ms, with their
 * chunks; *deleted receives how many. */
store_status_t store_report_purge(store_conn_t *conn, int64_t now_ms, size_t limit,
                                  size_t *deleted);

#endif
