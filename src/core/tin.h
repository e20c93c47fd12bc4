/* tin: taxpayer identification numbers at rest and on the wire. A TIN is
 * stored only sealed with AES-256-GCM under the TIN key (a key file beside
 * the database), with the tenant id and the record's uuid as associated data,
 * so a sealed TIN copied onto another record or tenant does not open. It is
 * answered masked: every character but the last four replaced by '*'.
 * Nothing here logs; callers must never log a TIN either. */
#ifndef TAXD_CORE_TIN_H
#define TAXD_CORE_TIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"

#define TIN_MAX 64 /* characters of a TIN, including the NUL */
#define TIN_INPUT_MAX 40 /* characters of a TIN as a client sends it (the schemas' limit) */
#define TIN_SEALED_MAX (TIN_MAX + CRYPTO_AEAD_OVERHEAD)

/* The TIN types a record may name: "SSN", "EIN", "ITIN", "ATIN", "FOREIGN",
 * NULL (a validator's enum; tincheck/rules.h parses them in this order). */
extern const char *const TIN_TYPE_NAMES[];

/* Seals tin (NUL-terminated, shorter than TIN_MAX) for the record
 * (tenant_id, record_uuid). sealed needs TIN_SEALED_MAX bytes; *sealed_len
 * receives the length used. Returns 0 or -1. */
int tin_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *tenant_id,
             const char *record_uuid, const char *tin, uint8_t *sealed, size_t *sealed_len);

/* Opens what tin_seal made for the same record into tin (TIN_MAX bytes,
 * NUL-terminated). Returns 0, or -1 when the data was altered, belongs to
 * another record, or the key is not the one it was sealed with. The caller
 * should clear tin when done with it. */
int tin_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *tenant_id,
             const char *record_uuid, const uint8_t *sealed, size_t sealed_len, char *tin);

/* Writes tin with every character but the last four replaced by '*' (a TIN
 * of four characters or fewer is shown as is). Characters are UTF-8 code
 * points, so a multibyte character is masked by one '*'. out needs TIN_MAX
 * bytes. */
void tin_mask(const char *tin, char *out);

#endif
