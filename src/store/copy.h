/* store/copy: moves a whole SQLite database into an empty PostgreSQL
 * database (`taxd admin migrate-db`), verified table by table, in one
 * transaction on the target: the target ends with every row or none.
 *
 * The checksum of a table (the same on both sides, so a reader can redo it:
 * tests/api/test_migrate_db.py does in Python) is the lowercase hex SHA-256
 * of its rows in primary-key order (bytewise for text), each row the
 * concatenation of its columns in the target's column order, then "\n";
 * each column rendered as
 *     NULL     N;
 *     integer  I<decimal>;
 *     text     T<byte length>:<bytes>;
 *     blob     B<byte length>:<lowercase hex>;
 * where the kind is the value's own on the SQLite side (its storage class)
 * and the column's type on PostgreSQL (bigint, text, bytea), so a value
 * that changed kind on the way is a mismatch, not a silent conversion. The
 * `rowid` columns PostgreSQL's schema adds (tenants, events, deliveries)
 * are read from SQLite's rowid. */
#ifndef TAXD_STORE_COPY_H
#define TAXD_STORE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_COPY_TABLES_MAX 64
#define STORE_COPY_NAME_MAX 64

typedef struct store_copy_table {
    char name[STORE_COPY_NAME_MAX];
    int64_t rows;      /* read from SQLite, and the same read back from PostgreSQL */
    char sha256[65];   /* the checksum above, equal on both sides */
} store_copy_table_t;

/* What a successful copy moved, tables in the order they were copied
 * (every table before the ones that reference it). */
typedef struct store_copy_report {
    char target[256];  /* "host:port/dbname": the URL without its password */
    int schema_version;
    int64_t elapsed_ms;
    size_t count;
    store_copy_table_t tables[STORE_COPY_TABLES_MAX];
} store_copy_report_t;

/* Copies the SQLite database at from_path (an existing file; it is first
 * brought to this build's schema, as store_open does) into the PostgreSQL
 * database to_url. In one transaction on the target, under the migration's
 * advisory lock: refuses a target that is not empty ("the target database
 * is not empty: ..."), creates the schema when it is absent, copies every
 * table (COPY FROM STDIN), moves every identity past the copied maximum,
 * reads every table back and compares its count and checksum, and commits
 * only when all agree. Returns true with *out filled; false with *err a
 * malloc'd one-line message (naming the table when a table failed; never
 * the URL's password) and nothing left on the target. */
bool store_copy_sqlite_to_pg(const char *from_path, const char *to_url, store_copy_report_t *out,
                             char **err);

#endif
