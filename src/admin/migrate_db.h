/* admin/migrate_db: `taxd admin migrate-db --from PATH --to URL [--key-dir DIR]`,
 * the move from SQLite to PostgreSQL (store/copy.h does the copy and its
 * verification). It opens no service: the source and the target are named
 * by its flags, never by --db, so it cannot create a stray database.
 *
 * Key files stay files. With --key-dir DIR the source's key files
 * (<PATH>.<name>.key) are copied to DIR/<name>.key (mode 0600, DIR made
 * 0700 when missing) before the database is: a file already there with
 * other bytes refuses the whole command, since a node must never start
 * with keys the copied rows were not sealed with. Without --key-dir the
 * output lists the files the operator must copy. Prints one JSON object:
 * target (host:port/db, never the password), schema_version, elapsed_ms,
 * tables [{table, rows, sha256}], rows, key_files. */
#ifndef TAXD_ADMIN_MIGRATE_DB_H
#define TAXD_ADMIN_MIGRATE_DB_H

#include "admin/cli.h"

/* Returns the process exit status (0, EXIT_REFUSED, EXIT_USAGE). */
int admin_migrate_db(const args_t *a);

#endif
