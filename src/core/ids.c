/* ids: UUIDs and random tokens. See ids.h. */
#include "core/ids.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/crypto.h"

int ids_uuid_v4(char out[IDS_UUID_LEN])
{
    uint8_t b[16];
    if (crypto_random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, IDS_UUID_LEN,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return 0;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool ids_is_uuid_v4(const char *s)
{
    if (s == NULL || strlen(s) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    char variant = s[19];
    return s[14] == '4' && strchr("89abAB", variant) != NULL;
}

int ids_random_token(const char *prefix, size_t bytes, char *out, size_t cap)
{
    uint8_t raw[64];
    size_t plen = strlen(prefix);
    if (bytes > sizeof raw || plen >= cap)
        return -1;
    if (crypto_random_bytes(raw, bytes) != 0)
        return -1;
    memcpy(out, prefix, plen);
    if (crypto_base64url_encode(raw, bytes, out + plen, cap - plen) == 0)
        return -1;
    return 0;
}
