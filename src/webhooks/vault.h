/* webhooks/vault: signing secrets and basic passwords at rest. They must be
 * recoverable (taxd signs with the secret itself), so they are sealed with
 * AES-256-GCM under the key file "<db>.webhook.key" beside the database,
 * bound to the subscription id and to their purpose as associated data: a
 * sealed value copied to another subscription or column does not open.
 * Never log what these functions return. */
#ifndef TAXD_WEBHOOKS_VAULT_H
#define TAXD_WEBHOOKS_VAULT_H

#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"

#define WEBHOOK_VAULT_MAX_PLAIN 320 /* longest value sealed (a basic password is at most 256) */

typedef enum webhook_vault_purpose {
    WEBHOOK_VAULT_SECRET = 0,
    WEBHOOK_VAULT_BASIC_PASSWORD,
} webhook_vault_purpose_t;

/* Loads the key file "webhook" (keys_path(key_base)), creating it on first use. 0, or -1 with
 * *err malloc'd. */
int webhook_vault_key_load(const char *key_base, uint8_t key[CRYPTO_AEAD_KEY_LEN], char **err);

/* Seals the NUL-terminated plain (at most WEBHOOK_VAULT_MAX_PLAIN bytes)
 * into out (cap >= strlen(plain) + CRYPTO_AEAD_OVERHEAD). 0 or -1. */
int webhook_vault_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *subscription_id,
                       webhook_vault_purpose_t purpose, const char *plain, uint8_t *out,
                       size_t cap, size_t *out_len);

/* Opens a sealed value into a malloc'd NUL-terminated string (free it with
 * webhook_vault_free, which wipes it). NULL when it does not open. */
char *webhook_vault_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *subscription_id,
                         webhook_vault_purpose_t purpose, const uint8_t *sealed, size_t len);
void webhook_vault_free(char *plain);

#endif
