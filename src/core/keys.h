/* keys: server key files that live beside the database (token signing, secret
 * hashing, TIN encryption). A key file is created on first use with mode 0600,
 * atomically: it is written to a temporary file and link(2)ed into place, so
 * when several processes start together exactly one file wins and all of them
 * read it. An existing key file is never overwritten. The operator must back
 * these files up with the database: without them tokens, secrets and TINs
 * cannot be verified or read. */
#ifndef TAXD_CORE_KEYS_H
#define TAXD_CORE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define KEYS_KEY_LEN 32
#define KEYS_KID_MAX 32     /* including the NUL */
#define KEYS_RING_MAX 2     /* the signing key and the one before it */

/* Path of the key file `name` from base (config_key_base): "<dir>/<name>.key"
 * when base ends with '/' (a key directory), else "<base>.<name>.key"
 * (beside a SQLite file). Returns a malloc'd string the caller frees, or
 * NULL on allocation failure. */
char *keys_path(const char *base, const char *name);

/* A single 32-byte key (secret hashing, TIN encryption). The file holds the
 * key in base64 on one line. Loads it, creating it first when it does not
 * exist. Returns 0; on failure -1 with *err set to a malloc'd message. */
int keys_load_or_create(const char *path, uint8_t key[KEYS_KEY_LEN], char **err);

/* A key ring (token signing): up to KEYS_RING_MAX keys, each with a key id.
 * The file holds one "<kid> <base64 key>" line per key, newest first; the
 * first key signs, every key verifies. */
typedef struct keys_ring {
    size_t count;
    char kid[KEYS_RING_MAX][KEYS_KID_MAX];
    uint8_t key[KEYS_RING_MAX][KEYS_KEY_LEN];
} keys_ring_t;

/* Loads the ring, creating a file with one fresh key when none exists. */
int keys_ring_load_or_create(const char *path, keys_ring_t *ring, char **err);

/* Rotation: writes a new file (temporary file + rename) whose first key is new
 * and whose second is the current signing key; older keys are dropped. */
int keys_ring_rotate(const char *path, keys_ring_t *ring, char **err);

#endif
