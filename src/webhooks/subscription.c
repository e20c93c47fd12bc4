/* webhooks/subscription: a leased subscription's configuration and opened
 * secrets (subscription.h). */
#include "webhooks/subscription.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "webhooks/vault.h"

webhook_sub_t *webhook_sub_new(const char *id)
{
    webhook_sub_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->last_used_us = clock_monotonic_us();
    return s;
}

/* Wipes and forgets the loaded configuration (the bucket stays). */
static void clear_config(webhook_sub_t *s)
{
    for (size_t i = 0; i < s->secret_count; i++) {
        webhook_vault_free(s->secrets[i]);
        crypto_hmac_key_free(s->keys[i]);
        s->keys[i] = NULL;
    }
    s->secret_count = 0;
    webhook_vault_free(s->auth_header);
    s->auth_header = NULL;
    s->loaded = false;
}

void webhook_sub_free(webhook_sub_t *s)
{
    if (s == NULL)
        return;
    clear_config(s);
    free(s);
}

/* "authorization: Basic base64(user:password)", malloc'd. */
static char *basic_header(const char *user, const char *password)
{
    size_t plain_len = strlen(user) + 1 + strlen(password);
    char *plain = malloc(plain_len + 1);
    size_t cap = 22 + CRYPTO_BASE64_LEN(plain_len);
    char *header = malloc(cap);
    if (plain == NULL || header == NULL) {
        free(plain);
        free(header);
        return NULL;
    }
    snprintf(plain, plain_len + 1, "%s:%s", user, password);
    int n = snprintf(header, cap, "authorization: Basic ");
    crypto_base64_encode(plain, plain_len, header + n, cap - (size_t)n);
    explicit_bzero(plain, plain_len);
    free(plain);
    return header;
}

static int open_secrets(webhook_sub_t *s, const uint8_t key[CRYPTO_AEAD_KEY_LEN],
                        const store_wh_secret_t *secrets, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        s->secrets[i] = webhook_vault_open(key, s->id, WEBHOOK_VAULT_SECRET, secrets[i].sealed,
                                           secrets[i].sealed_len);
        if (s->secrets[i] == NULL)
            return -1;
        s->secret_count = i + 1;
        s->keys[i] = crypto_hmac_key_new(s->secrets[i], strlen(s->secrets[i]));
        if (s->keys[i] == NULL)
            return -1;
    }
    return count > 0 ? 0 : -1;
}

static int open_basic(webhook_sub_t *s, const uint8_t key[CRYPTO_AEAD_KEY_LEN],
                      const store_subscription_t *row)
{
    if (!row->basic)
        return 0;
    char *password = webhook_vault_open(key, s->id, WEBHOOK_VAULT_BASIC_PASSWORD,
                                        row->basic_password_sealed,
                                        row->basic_password_sealed_len);
    if (password == NULL)
        return -1;
    s->auth_header = basic_header(row->basic_user, password);
    webhook_vault_free(password);
    return s->auth_header != NULL ? 0 : -1;
}

static void apply_row(webhook_sub_t *s, const store_subscription_t *row, const char *default_egress)
{
    snprintf(s->url, sizeof s->url, "%s", row->url);
    const char *egress = row->egress_address[0] ? row->egress_address : default_egress;
    if (egress[0] != '\0')
        snprintf(s->interface, sizeof s->interface, "host!%s", egress);
    else
        s->interface[0] = '\0';
    bool fresh = s->rate == 0;
    s->rate = row->rate_limit;
    s->retries = row->retry_attempts;
    s->window_s = row->retry_window_s;
    s->timeout_s = row->timeout_s;
    s->deauthorized = row->deauthorized;
    s->updated_at = row->updated_at;
    int64_t now_us = clock_monotonic_us();
    if (fresh)
        webhook_bucket_init(&s->bucket, s->rate, webhook_burst_of(s->rate), now_us);
    else
        webhook_bucket_set_rule(&s->bucket, s->rate, webhook_burst_of(s->rate), now_us);
}

void webhook_sub_load(webhook_sub_t *s, store_conn_t *conn,
                      const uint8_t vault_key[CRYPTO_AEAD_KEY_LEN], const char *default_egress)
{
    store_subscription_t row;
    store_wh_secret_t secrets[STORE_WH_SECRETS_MAX];
    size_t count = 0;
    store_status_t st = store_subscription_get(conn, s->id, &row);
    if (st == STORE_OK)
        st = store_subscription_secrets(conn, s->id, secrets, &count);
    if (st == STORE_NOT_FOUND) {
        s->leased = false; /* deleted */
        return;
    }
    if (st != STORE_OK)
        return; /* stays stale: tried again next step */
    clear_config(s);
    apply_row(s, &row, default_egress);
    bool opened = open_secrets(s, vault_key, secrets, count) == 0 &&
                  open_basic(s, vault_key, &row) == 0;
    explicit_bzero(secrets, sizeof secrets);
    s->stale = false;
    s->loaded = true;
    if (!opened && !s->broken)
        log_event(LOG_ERROR, "webhook secrets do not open (another key file?)",
                  json_pack("{s:s}", "subscription_id", s->id));
    s->broken = !opened;
}
