/* store/keyprints: the fingerprints of the key files the nodes sharing a
 * database must all hold (secret hashing, TIN sealing, report links,
 * webhook secrets). A fingerprint is a one-way value the caller derives
 * from a key (never the key): the first node to start records it; every
 * later node compares. */
#ifndef TAXD_STORE_KEYPRINTS_H
#define TAXD_STORE_KEYPRINTS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_KEYPRINT_MAX 65 /* hex of a SHA-256, with its NUL */

/* Records fingerprint for the key called name when none is recorded yet
 * (at now), in one write; *same tells whether the recorded fingerprint
 * (the one just written, or an earlier node's) equals it. */
store_status_t store_keyprint_check(store_conn_t *conn, const char *name, const char *fingerprint,
                                    int64_t now, bool *same);

#endif
