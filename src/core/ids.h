/* ids: service identifiers. Version 4 UUIDs from the CSPRNG, and the random
 * tokens used for client ids and secrets. */
#ifndef TAXD_CORE_IDS_H
#define TAXD_CORE_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDS_UUID_LEN 37  /* 36 characters plus the NUL */
#define IDS_UUID_BYTES 16 /* the same UUID as stored: its 128 bits */

/* Writes a canonical lowercase version 4 UUID. Returns 0, or -1 when the
 * random source failed. */
int ids_uuid_v4(char out[IDS_UUID_LEN]);

/* The 16 bytes of a UUID written 8-4-4-4-12 in hex of either case; false
 * (out undefined) for anything else. Any version: stored ids are parsed. */
bool ids_uuid_parse(const char *s, uint8_t out[IDS_UUID_BYTES]);

/* The canonical lowercase text of 16 bytes: ids_uuid_parse's inverse for
 * lowercase input. */
void ids_uuid_format(const uint8_t b[IDS_UUID_BYTES], char out[IDS_UUID_LEN]);

/* True when s is a canonical version 4 UUID (lowercase or uppercase hex). */
bool ids_is_uuid_v4(const char *s);

/* Writes prefix followed by the base64url form of `bytes` random bytes into
 * out (cap bytes, NUL-terminated). Returns 0, or -1 when cap is too small or
 * the random source failed. */
int ids_random_token(const char *prefix, size_t bytes, char *out, size_t cap);

#endif
