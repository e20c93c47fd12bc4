/* reports/links: signed download links, usable without a bearer token like
 * an object store's presigned URL. A link is
 *
 *   {base_url}/v1/reports/{kind}/{id}/download     (kind: inventory-summary, gains)
 *       ?expires=<unix seconds>&nonce=<16 random bytes, base64url>
 *       &signature=<base64url HMAC-SHA256(key, "<id>\n<expires>\n<nonce>")>
 *
 * The nonce makes every link different, even two made in the same second.
 * Verification needs no database: the signature is checked first, in
 * constant time, then the expiry, so an altered link is always "invalid"
 * even when it is also past its time, and only a genuine link can learn
 * that it expired. The kind is in the path, not under the signature: a
 * report id names one report of one kind, and the download route answers
 * 404 for an id of the other kind (api/reports.c). */
#ifndef TAXD_REPORTS_LINKS_H
#define TAXD_REPORTS_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"

#define REPORT_LINK_TTL_S 900 /* 15 minutes (spec § Limits) */
#define REPORT_LINK_NONCE_BYTES 16
#define REPORT_LINK_MAX 1024  /* base URL (at most 511 bytes) plus the rest */

typedef enum report_link_status {
    REPORT_LINK_OK = 0,
    REPORT_LINK_INVALID,   /* missing, malformed or altered: reason invalid_signature */
    REPORT_LINK_EXPIRED,   /* genuine but past its expiry: reason expired */
} report_link_status_t;

/* Writes the link for report_id of `kind` (the path segment), valid until now_s + REPORT_LINK_TTL_S
 * (*expires_s), into out (cap bytes). Returns 0, or -1 when out is too
 * small or the random source or the MAC failed. */
int report_link_make(const crypto_hmac_key_t *key, const char *base_url, const char *kind,
                     const char *report_id, int64_t now_s, char *out, size_t cap,
                     int64_t *expires_s);

/* The same link under another collection path: {base_url}{collection}/{id}/download?...
 * (collection such as "/v1/tax-documentation/document"). Ids of different
 * collections never collide (UUIDs), so one key serves them all. */
int report_link_make_at(const crypto_hmac_key_t *key, const char *base_url,
                        const char *collection, const char *id, int64_t now_s, char *out,
                        size_t cap, int64_t *expires_s);

/* Checks the query values of a link to report_id (any may be NULL when
 * absent). The link is valid while now_s < expires. */
report_link_status_t report_link_verify(const crypto_hmac_key_t *key, const char *report_id,
                                        const char *expires, const char *nonce,
                                        const char *signature, int64_t now_s);

#endif
