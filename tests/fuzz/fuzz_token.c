/* Fuzzes bearer-header parsing and JWT verification: arbitrary input must be
 * refused cleanly, and nothing but a correctly signed token may verify. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static token_signer_t *signer;
    if (signer == NULL) {
        keys_ring_t ring = {.count = 1};
        strcpy(ring.kid[0], "kfuzz");
        memset(ring.key[0], 7, sizeof ring.key[0]);
        signer = token_signer_new(&ring);
    }
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *token;
    size_t len;
    if (token_parse_bearer(text, &token, &len)) {
        token_claims_t claims;
        if (token_verify(signer, token, len, 1700000000, &claims) == TOKEN_OK)
            abort(); /* a forged token verified */
    }
    token_claims_t claims;
    if (token_verify(signer, (const char *)data, size, 1700000000, &claims) == TOKEN_OK)
        abort();
    free(text);
    return 0;
}
