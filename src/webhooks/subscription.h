/* webhooks/subscription: a subscription as a dispatcher holds it while it
 * leases it: its configuration loaded from the store, its secrets opened
 * from the vault and prepared as HMAC keys, its Basic header, its rate
 * bucket, and the dispatcher's counts of its attempts. One dispatcher
 * thread owns each; nothing here locks.
 *
 * The secrets, keys and Basic header are wiped when the configuration is
 * cleared (webhook_sub_load replacing it, or webhook_sub_free). Never log
 * them. */
#ifndef TAXD_WEBHOOKS_SUBSCRIPTION_H
#define TAXD_WEBHOOKS_SUBSCRIPTION_H

#include <stdbool.h>
#include <stdint.h>

#include "core/crypto.h"
#include "store/store.h"
#include "store/webhooks.h"
#include "webhooks/bucket.h"

typedef struct webhook_sub {
    char id[STORE_WH_ID_MAX];
    /* the configuration (webhook_sub_load) */
    int64_t updated_at;        /* of the loaded configuration */
    bool loaded, deauthorized;
    bool broken;               /* loaded, but its secrets do not open */
    char url[STORE_WH_URL_MAX];
    char interface[STORE_WH_ADDR_MAX + 8]; /* "host!<ip>" for CURLOPT_INTERFACE, or "" */
    char *auth_header;         /* "authorization: Basic ..." or NULL: the source marker */
    char *secrets[STORE_WH_SECRETS_MAX]; /* newest first */
    crypto_hmac_key_t *keys[STORE_WH_SECRETS_MAX]; /* the same, prepared for signing */
    size_t secret_count;
    uint32_t rate, retries, window_s, timeout_s;
    webhook_bucket_t bucket;   /* kept across reloads; its rule follows the rate */
    /* the dispatcher's bookkeeping */
    bool stale, leased;
    unsigned in_flight;
    unsigned ready;            /* begun, waiting to be sent */
    int64_t *exclude_fill, *exclude_end; /* job_prepare only: where its unrecorded rowids go */
    int64_t next_due;          /* wall ms; 0: look now */
    int64_t last_used_us;
} webhook_sub_t;

/* A subscription not loaded yet (calloc'd; free with webhook_sub_free), or
 * NULL when out of memory. */
webhook_sub_t *webhook_sub_new(const char *id);

/* (Re)loads s's configuration from the store and opens its secrets with
 * the vault key. default_egress ("" for none) is the source address when
 * the subscription names none. A deleted subscription is no longer leased;
 * a store failure leaves s stale, to be loaded again; secrets that do not
 * open leave it broken (logged once). */
void webhook_sub_load(webhook_sub_t *s, store_conn_t *conn,
                      const uint8_t vault_key[CRYPTO_AEAD_KEY_LEN], const char *default_egress);

/* Wipes the configuration's secrets and frees s. NULL is a no-op. */
void webhook_sub_free(webhook_sub_t *s);

#endif
