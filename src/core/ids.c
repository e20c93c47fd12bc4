/* ids: UUIDs and random tokens. See ids.h. */
#include "core/ids.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/crypto.h"

void ids_uuid_format(const uint8_t b[IDS_UUID_BYTES], char out[IDS_UUID_LEN])
{
    static const char HEX[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < IDS_UUID_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = HEX[b[i] >> 4];
        out[o++] = HEX[b[i] & 0x0f];
    }
    out[o] = '\0';
}

int ids_uuid_v4(char out[IDS_UUID_LEN])
{
    uint8_t b[16];
    if (crypto_random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    ids_uuid_format(b, out);
    return 0;
}


bool ids_uuid_parse(const char *s, uint8_t out[IDS_UUID_BYTES])
{
    if (s == NULL || strlen(s) != 36)
        return false;
    size_t o = 0;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
            continue;
        }
        int hi = crypto_hex_value(s[i]), lo = crypto_hex_value(s[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[o++] = (uint8_t)(hi << 4 | lo);
        i++;
    }
    return true;
}

bool ids_is_uuid_v4(const char *s)
{
    if (s == NULL || strlen(s) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : crypto_hex_value(s[i]) < 0)
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
