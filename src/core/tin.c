/* tin: sealing and masking. See tin.h. The associated data is
 * "<tenant_id>\n<record_uuid>": both are fixed-format ids without newlines,
 * so two different records can never produce the same associated data. */
#include "core/tin.h"

#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

const char *const TIN_TYPE_NAMES[] = {"SSN", "EIN", "ITIN", "ATIN", "FOREIGN", NULL};

static int make_aad(const char *tenant_id, const char *record_uuid, char *aad, size_t cap)
{
    int n = snprintf(aad, cap, "%s\n%s", tenant_id, record_uuid);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int tin_seal(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *tenant_id,
             const char *record_uuid, const char *tin, uint8_t *sealed, size_t *sealed_len)
{
    size_t len = strlen(tin);
    char aad[160];
    int aad_len = make_aad(tenant_id, record_uuid, aad, sizeof aad);
    if (len == 0 || len >= TIN_MAX || aad_len < 0)
        return -1;
    if (crypto_aead_seal(key, aad, (size_t)aad_len, tin, len, sealed) != 0)
        return -1;
    *sealed_len = len + CRYPTO_AEAD_OVERHEAD;
    return 0;
}

int tin_open(const uint8_t key[CRYPTO_AEAD_KEY_LEN], const char *tenant_id,
             const char *record_uuid, const uint8_t *sealed, size_t sealed_len, char *tin)
{
    char aad[160];
    int aad_len = make_aad(tenant_id, record_uuid, aad, sizeof aad);
    if (aad_len < 0 || sealed_len <= CRYPTO_AEAD_OVERHEAD ||
        sealed_len - CRYPTO_AEAD_OVERHEAD >= TIN_MAX)
        return -1;
    if (crypto_aead_open(key, aad, (size_t)aad_len, sealed, sealed_len, (uint8_t *)tin) != 0)
        return -1;
    tin[sealed_len - CRYPTO_AEAD_OVERHEAD] = '\0';
    return 0;
}

void tin_mask(const char *tin, char *out)
{
    size_t chars = utf8_chars(tin, strlen(tin));
    size_t hide = chars > 4 ? chars - 4 : 0;
    size_t o = 0;
    const char *p = tin;
    for (size_t seen = 0; *p != '\0' && seen < hide && o < TIN_MAX - 1; seen++) {
        out[o++] = '*';
        p++;
        while (((unsigned char)*p & 0xc0) == 0x80) /* the rest of this character */
            p++;
    }
    size_t rest = strlen(p);
    if (o + rest >= TIN_MAX)
        rest = TIN_MAX - 1 - o;
    memcpy(out + o, p, rest);
    out[o + rest] = '\0';
}
