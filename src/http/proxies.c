/* proxies: see proxies.h. Addresses are compared as 16 bytes: an IPv4
 * address is held as its IPv4-mapped IPv6 form, so one rule serves both. */
#include "http/proxies.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    uint8_t addr[16];
    unsigned prefix_bits; /* of the 128 */
} block_t;

struct proxies {
    size_t count;
    block_t blocks[];
};

static void map_v4(const void *v4, uint8_t out[16])
{
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, v4, 4);
}

/* Text to 16 bytes; *v4 tells which family it was. */
static bool parse_address(const char *text, uint8_t out[16], bool *v4)
{
    struct in_addr a4;
    if (inet_pton(AF_INET, text, &a4) == 1) {
        map_v4(&a4, out);
        *v4 = true;
        return true;
    }
    *v4 = false;
    return inet_pton(AF_INET6, text, out) == 1;
}

static bool parse_block(const char *entry, block_t *out)
{
    char text[64];
    size_t len = strlen(entry);
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, entry, len + 1);
    char *slash = strchr(text, '/');
    long bits = -1;
    if (slash != NULL) {
        char *end;
        *slash = '\0';
        bits = strtol(slash + 1, &end, 10);
        if (*end != '\0' || end == slash + 1 || bits < 0)
            return false;
    }
    bool v4;
    if (!parse_address(text, out->addr, &v4))
        return false;
    long max = v4 ? 32 : 128;
    if (bits > max)
        return false;
    out->prefix_bits = (unsigned)(bits < 0 ? max : bits) + (v4 ? 96 : 0);
    return true;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

proxies_t *proxies_parse(const char *list, char **err)
{
    size_t entries = 1;
    for (const char *p = list; *p; p++)
        entries += *p == ',';
    proxies_t *set = calloc(1, sizeof *set + entries * sizeof(block_t));
    char *copy = strdup(list);
    if (set == NULL || copy == NULL) {
        free(set);
        free(copy);
        *err = strdup("out of memory reading --trusted-proxies");
        return NULL;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *entry = trim(tok);
        if (*entry == '\0')
            continue;
        if (!parse_block(entry, &set->blocks[set->count])) {
            if (asprintf(err, "--trusted-proxies: '%s' is not an address or a CIDR block",
                         entry) < 0)
                *err = NULL;
            free(copy);
            free(set);
            return NULL;
        }
        set->count++;
    }
    free(copy);
    return set;
}

void proxies_free(proxies_t *set)
{
    free(set);
}

static bool in_block(const block_t *b, const uint8_t addr[16])
{
    unsigned whole = b->prefix_bits / 8, rest = b->prefix_bits % 8;
    if (memcmp(b->addr, addr, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (b->addr[whole] & mask) == (addr[whole] & mask);
}

static bool trust_bytes(const proxies_t *set, const uint8_t addr[16])
{
    for (size_t i = 0; set != NULL && i < set->count; i++)
        if (in_block(&set->blocks[i], addr))
            return true;
    return false;
}

bool proxies_trust(const proxies_t *set, const struct sockaddr *addr)
{
    uint8_t bytes[16];
    if (addr->sa_family == AF_INET)
        map_v4(&((const struct sockaddr_in *)addr)->sin_addr, bytes);
    else if (addr->sa_family == AF_INET6)
        memcpy(bytes, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
    else
        return false;
    return trust_bytes(set, bytes);
}

bool proxies_trust_text(const proxies_t *set, const char *addr)
{
    uint8_t bytes[16];
    bool v4;
    return parse_address(addr, bytes, &v4) && trust_bytes(set, bytes);
}

void proxies_address_text(const struct sockaddr *addr, char *out, size_t cap)
{
    out[0] = '\0';
    if (addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, out, (socklen_t)cap);
    else if (addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)addr)->sin6_addr, out,
                  (socklen_t)cap);
}

/* The entry of xff that ends at `end` (exclusive), trimmed, into out. */
static bool entry_before(const char *xff, size_t *end, char *out, size_t cap)
{
    size_t stop = *end, start = stop;
    while (start > 0 && xff[start - 1] != ',')
        start--;
    *end = start > 0 ? start - 1 : 0;
    while (start < stop && (xff[start] == ' ' || xff[start] == '\t'))
        start++;
    while (stop > start && (xff[stop - 1] == ' ' || xff[stop - 1] == '\t'))
        stop--;
    if (stop - start >= cap)
        return false;
    memcpy(out, xff + start, stop - start);
    out[stop - start] = '\0';
    return true;
}

void proxies_client_address(const proxies_t *set, const char *peer, const char *xff, char *out,
                            size_t cap)
{
    snprintf(out, cap, "%s", peer);
    if (xff == NULL || !proxies_trust_text(set, peer))
        return;
    size_t end = strlen(xff);
    char entry[64];
    uint8_t bytes[16];
    bool v4;
    while (end > 0) {
        if (!entry_before(xff, &end, entry, sizeof entry) ||
            !parse_address(entry, bytes, &v4))
            return; /* not an address: believe nothing further left */
        snprintf(out, cap, "%s", entry);
        if (!trust_bytes(set, bytes))
            return;
    }
}
