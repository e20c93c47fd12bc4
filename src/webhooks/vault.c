/* webhooks/vault: see vault.h. The associated data is
 * "taxd-webhook\0<purpose>\0<subscription id>". */
#include "webhooks/vault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys.h"

#define AAD_MAX 160

int webhook_vault_key_load(const char *key_base, uint8_t key[CRYPTO_AEAD_KEY_LEN], char **err)
{
    char *path = keys_path(key_base, "webhook");
    if (path == NULL) {
        *err = strdup("webhook key: out of memory");
        return -1;
    }
    int rc = keys_load_or_create(path, key, err);
    free(path);
    return rc;
}

static size_t make_aad(const char *subscription_id, webhook_vault_purpose_t purpose,
                       char aad[AAD_MAX])
{
    const char *what = purpose == WEBHOOK_VAULT_SECRET ? "secret" : "basic-password";
    int n = snprintf(aad, AAD_MAX, "taxd-webhook%c%s%c%s", '\0', what, '\0', subscription_id);
    return n > 0 && n < AAD_MAX ? (size_t)n : 0;
}

int webhook_vault_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *subscription_id,
                       webhook_vault_purpose_t purpose, const char *plain, uint8_t *out,
                       size_t cap, size_t *out_len)
{
    char aad[AAD_MAX];
    size_t aad_len = make_aad(subscription_id, purpose, aad);
    size_t len = strlen(plain);
    if (aad_len == 0 || len > WEBHOOK_VAULT_MAX_PLAIN || cap < len + CRYPTO_AEAD_OVERHEAD)
        return -1;
    if (crypto_aead_seal(key, aad, aad_len, plain, len, out) != 0)
        return -1;
    *out_len = len + CRYPTO_AEAD_OVERHEAD;
    return 0;
}

char *webhook_vault_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *subscription_id,
                         webhook_vault_purpose_t purpose, const uint8_t *sealed, size_t len)
{
    char aad[AAD_MAX];
    size_t aad_len = make_aad(subscription_id, purpose, aad);
    if (aad_len == 0 || len < CRYPTO_AEAD_OVERHEAD ||
        len - CRYPTO_AEAD_OVERHEAD > WEBHOOK_VAULT_MAX_PLAIN)
        return NULL;
    size_t plain_len = len - CRYPTO_AEAD_OVERHEAD;
    char *plain = malloc(plain_len + 1);
    if (plain == NULL)
        return NULL;
    if (crypto_aead_open(key, aad, aad_len, sealed, len, (uint8_t *)plain) != 0 ||
        memchr(plain, '\0', plain_len) != NULL) {
        explicit_bzero(plain, plain_len + 1);
        free(plain);
        return NULL;
    }
    plain[plain_len] = '\0';
    return plain;
}

void webhook_vault_free(char *plain)
{
    if (plain == NULL)
        return;
    explicit_bzero(plain, strlen(plain));
    free(plain);
}
