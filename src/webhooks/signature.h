/* webhooks/signature: layer 1 of webhook authentication (spec §
 * Authentication → Webhook deliveries): HMAC-SHA256 of the exact body sent,
 * keyed with the secret's bytes exactly as handed to the customer, base64
 * (not hex), prefixed "v1=". While a rotation is under way a subscription
 * has two secrets and the header carries both signatures, newest first,
 * comma-separated without spaces. Signing cannot be disabled: there is
 * always at least one secret. */
#ifndef TAXD_WEBHOOKS_SIGNATURE_H
#define TAXD_WEBHOOKS_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/crypto.h"

/* The header value for body under secrets[0..count) (newest first), as a
 * malloc'd string the caller frees; NULL when count is 0 or on failure. */
char *signature_header(const char *const *secrets, size_t count, const void *body, size_t len);

/* The same with the secrets already prepared as keys (crypto_hmac_key_new
 * over each secret's bytes), so that a key is set up once per subscription
 * instead of once per delivery. */
char *signature_header_keyed(const crypto_hmac_key_t *const *keys, size_t count,
                             const void *body, size_t len);

/* True when any v1= signature in header matches body under secret: what a
 * receiver does. Lengths are compared first, then bytes in constant time. */
bool signature_verify(const char *header, const char *secret, const void *body, size_t len);

#endif
