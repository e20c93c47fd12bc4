/* taxctl/journal: what an import has had acknowledged, so a rerun skips it.
 *
 * A text file, append-only, beside the imported file (FILE.taxctl-journal):
 *   taxctl-journal 1
 *   file <size in bytes> <SHA-256 of the whole file, hex>
 *   then one line per answered batch, written and fsync'd before the batch's
 *   ids are released (so before a later payload of one of its ids is sent):
 *   space-separated runs "<o><first>[-<last>]" of line numbers with their
 *   outcome o: c created, u updated, n unchanged, r refused.
 * A torn last line (a crash mid-write) is cut off when the journal is
 * opened again. The file's identity is its size and the hash of all its
 * bytes: any edit, even one that keeps the size, makes it another file. */
#ifndef TAXCTL_JOURNAL_H
#define TAXCTL_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t size;
    char sha256[65];
} journal_identity;

/* What earlier runs recorded: done[line] for every line answered. */
typedef struct {
    uint8_t *done;      /* a bitmap over line numbers, NULL when none */
    long max_line;      /* the bitmap covers 0..max_line */
    long created, updated, unchanged, refused;
} journal_prior;

bool journal_prior_done(const journal_prior *p, long line);
void journal_prior_free(journal_prior *p);

typedef struct journal journal;

/* Opens (or creates) the journal at path for the file of identity id. An
 * existing journal of another file is refused (NULL, why in msg) unless
 * restart, which starts it over; one of this file fills prior. */
journal *journal_open(const char *path, const journal_identity *id, bool restart,
                      journal_prior *prior, char *msg, size_t msg_len);

/* Notes one answered line of the current batch (in memory). */
void journal_note(journal *j, long line, char outcome);

/* Writes the noted lines as one record and fsyncs it; false when the disk
 * refused (errno set). */
bool journal_commit(journal *j);

void journal_close(journal *j);

/* The identity of data[0..len). */
void journal_identity_of(const void *data, size_t len, journal_identity *id);

#endif
