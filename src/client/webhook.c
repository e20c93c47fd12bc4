/* client/webhook: what a receiver of taxd's deliveries needs (spec §
 * Webhook deliveries, layer 1, and § Delivery rules), with no client.
 *
 *   - taxd_webhook_verify: the header holds one or more "v1=<base64 HMAC-
 *     SHA256 of the raw body>" separated by commas (taxd writes none, other
 *     senders a space, after a comma: both are read). During a rotation the
 *     sender signs with two secrets and the receiver may know one or both,
 *     so any (signature, secret) pair that matches passes. An entry that is
 *     not "v1=" plus 44 base64 characters is skipped, never fatal: a future
 *     "v2=" must not break today's receivers. Lengths are compared before
 *     bytes, bytes with CRYPTO_memcmp, and every pair is compared (no early
 *     exit) so the time says nothing about which entry came close.
 *   - taxd_webhook_parse: the envelope {"timestamp", "data": [event...]}.
 *     Each event's JSON is the event's own bytes cut from the body (made
 *     compact), not jansson's re-serialization: jansson would turn a number
 *     into a double and write control characters as \u001F where the
 *     sender signed \u001f. When the slicing cannot find the array (a key
 *     written with escapes, "d\u0061ta"), it falls back to jansson's dump.
 *   - taxd_dedup: delivery is at least once, so a receiver remembers the
 *     last N event ids: a ring of N slots in arrival order (the FIFO) whose
 *     slots are also the nodes of a chained hash table, so seen/insert/evict
 *     are O(1) on average and memory is fixed at creation. The hash is
 *     seeded per table so that ids chosen by an attacker cannot aim at one
 *     chain of another process's table. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "internal.h"

/* ---- signatures ------------------------------------------------------------ */

#define SIG_MAC_LEN 32  /* SHA-256 */
#define SIG_B64_LEN 44  /* base64 of 32 bytes, padding included */

/* The base64 HMAC-SHA256 of body under secret into out (SIG_B64_LEN + NUL). */
static bool sign_b64(const char *secret, const void *body, size_t len, char out[SIG_B64_LEN + 1])
{
    size_t key_len = strlen(secret);
    if (key_len == 0 || key_len > INT_MAX)
        return false;
    unsigned char mac[SIG_MAC_LEN];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), secret, (int)key_len, body, len, mac, &mac_len) == NULL ||
        mac_len != SIG_MAC_LEN)
        return false;
    return EVP_EncodeBlock((unsigned char *)out, mac, SIG_MAC_LEN) == SIG_B64_LEN;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* 1 when the entry header[0..n) (spaces around it already trimmed) is
 * "v1=" + a signature equal to expected, else 0. */
static int entry_matches(const char *entry, size_t n, const char *expected)
{
    if (n != 3 + SIG_B64_LEN || memcmp(entry, "v1=", 3) != 0)
        return 0;
    return CRYPTO_memcmp(entry + 3, expected, SIG_B64_LEN) == 0;
}

/* How many entries of header match expected (all are compared). */
static int header_matches(const char *header, const char *expected)
{
    int matches = 0;
    for (const char *p = header;;) {
        while (is_ows(*p))
            p++;
        const char *end = strchr(p, ',');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        size_t trimmed = n;
        while (trimmed > 0 && is_ows(p[trimmed - 1]))
            trimmed--;
        matches += entry_matches(p, trimmed, expected);
        if (end == NULL)
            return matches;
        p = end + 1;
    }
}

bool taxd_webhook_verify(const char *header, const char *const *secrets, size_t count,
                         const void *body, size_t len)
{
    if (header == NULL || header[0] == '\0' || secrets == NULL || count == 0 || body == NULL ||
        len == 0)
        return false;
    int matches = 0;
    for (size_t i = 0; i < count; i++) {
        char expected[SIG_B64_LEN + 1];
        if (secrets[i] == NULL || !sign_b64(secrets[i], body, len, expected))
            continue;
        matches += header_matches(header, expected);
        OPENSSL_cleanse(expected, sizeof expected);
    }
    return matches > 0;
}

/* ---- the envelope ---------------------------------------------------------- */

/* A copy of the JSON text body[0..len) without the whitespace between
 * tokens (strings are copied as they are). The text is known valid (jansson
 * parsed it). malloc'd, NUL-terminated; *out_len its length. */
static char *compact_copy(const char *body, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        if (in_string) {
            out[n++] = c;
            if (c == '\\' && i + 1 < len)
                out[n++] = body[++i];
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
            out[n++] = c;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out[n++] = c;
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* The end of the compact JSON value starting at p (one past its last byte). */
static const char *skip_value(const char *p)
{
    int depth = 0;
    bool in_string = false;
    for (;; p++) {
        char c = *p;
        if (c == '\0')
            return p;
        if (in_string) {
            if (c == '\\')
                p++;
            else if (c == '"') {
                in_string = false;
                if (depth == 0)
                    return p + 1;
            }
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (depth == 0)
                return p; /* the end of a scalar that was last in its container */
            if (--depth == 0)
                return p + 1;
        } else if (c == ',' && depth == 0)
            return p;
    }
}

/* In the compact text of an object, the start of the value of the member
 * whose key is written exactly "data"; NULL when there is none. */
static const char *find_data(const char *text)
{
    if (*text != '{')
        return NULL;
    const char *p = text + 1;
    while (*p == '"') {
        const char *key_end = skip_value(p);
        if (*key_end != ':')
            return NULL;
        if (key_end - p == 6 && memcmp(p, "\"data\"", 6) == 0)
            return key_end + 1;
        p = skip_value(key_end + 1);
        if (*p != ',')
            return NULL;
        p++;
    }
    return NULL;
}

/* Fills events[i].json with the i-th element of the compact envelope's
 * "data" array, for i < count; false when the text does not have exactly
 * count elements there (the caller falls back to jansson). */
static bool slice_events(const char *text, taxd_webhook_event *events, size_t count)
{
    const char *p = find_data(text);
    if (p == NULL || *p != '[')
        return false;
    p++;
    for (size_t i = 0; i < count; i++) {
        const char *end = skip_value(p);
        if (*p != '{' || end[-1] != '}')
            return false;
        events[i].json = strndup(p, (size_t)(end - p));
        if (events[i].json == NULL)
            return false;
        p = end;
        if (*p == ',')
            p++;
    }
    return *p == ']';
}

static char *dup_string_member(json_t *object, const char *key)
{
    const char *s = json_string_value(json_object_get(object, key));
    return s != NULL ? strdup(s) : NULL;
}

static taxd_code parse_event(json_t *e, size_t i, taxd_webhook_event *out, taxd_error *err)
{
    if (!json_is_object(e))
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: data[%zu] is not an object", i);
    if (!json_is_string(json_object_get(e, "event_type")))
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: data[%zu] has no string event_type",
                       i);
    out->event_type = dup_string_member(e, "event_type");
    out->event_id = dup_string_member(e, "event_id");
    if (out->event_type == NULL || (out->event_id == NULL && json_is_string(json_object_get(e, "event_id"))))
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    return TAXD_OK;
}

/* Each event's JSON: cut from the body, else (see the top) jansson's dump. */
static taxd_code fill_event_json(const void *body, size_t len, json_t *data,
                                 taxd_webhook_delivery *d, taxd_error *err)
{
    size_t text_len;
    char *text = compact_copy(body, len, &text_len);
    if (text == NULL)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    bool sliced = slice_events(text, d->events, d->count);
    free(text);
    if (sliced)
        return TAXD_OK;
    for (size_t i = 0; i < d->count; i++) {
        free(d->events[i].json);
        d->events[i].json = json_dumps(json_array_get(data, i),
                                       JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (d->events[i].json == NULL)
            return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    }
    return TAXD_OK;
}

static taxd_code parse_envelope(json_t *root, const void *body, size_t len,
                                taxd_webhook_delivery *d, taxd_error *err)
{
    if (!json_is_object(root))
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: the body is not a JSON object");
    json_t *data = json_object_get(root, "data");
    if (!json_is_array(data))
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: no \"data\" array");
    json_t *ts = json_object_get(root, "timestamp");
    if (ts != NULL && !json_is_string(ts))
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: \"timestamp\" is not a string");
    if (ts != NULL && (d->timestamp = strdup(json_string_value(ts))) == NULL)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    size_t n = json_array_size(data);
    if (n > 0 && (d->events = calloc(n, sizeof *d->events)) == NULL)
        return tc_fail(err, TAXD_E_NOMEM, "out of memory");
    d->count = n;
    for (size_t i = 0; i < n; i++) {
        taxd_code rc = parse_event(json_array_get(data, i), i, &d->events[i], err);
        if (rc != TAXD_OK)
            return rc;
    }
    return fill_event_json(body, len, data, d, err);
}

taxd_code taxd_webhook_parse(const void *body, size_t len, taxd_webhook_delivery *delivery,
                             taxd_error *err)
{
    if (delivery == NULL || (body == NULL && len > 0))
        return tc_fail(err, TAXD_E_INVALID, "taxd_webhook_parse: no body or no delivery");
    memset(delivery, 0, sizeof *delivery);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return tc_fail(err, TAXD_E_PROTOCOL, "webhook delivery: not JSON (%s at byte %d)", jerr.text,
                       jerr.position);
    taxd_code rc = parse_envelope(root, body, len, delivery, err);
    json_decref(root);
    if (rc != TAXD_OK)
        taxd_webhook_delivery_clear(delivery);
    return rc;
}

void taxd_webhook_delivery_clear(taxd_webhook_delivery *delivery)
{
    if (delivery == NULL)
        return;
    for (size_t i = 0; i < delivery->count; i++) {
        free(delivery->events[i].event_type);
        free(delivery->events[i].event_id);
        free(delivery->events[i].json);
    }
    free(delivery->events);
    free(delivery->timestamp);
    memset(delivery, 0, sizeof *delivery);
}

/* ---- deduplication --------------------------------------------------------- */

#define NO_SLOT SIZE_MAX

struct dedup_slot {
    char *id;        /* NULL while the slot was never used */
    uint64_t hash;
    size_t next;     /* the next slot in the same bucket's chain, or NO_SLOT */
};

struct taxd_dedup {
    struct dedup_slot *slots; /* the ring: capacity slots, oldest at `oldest` once full */
    size_t capacity, used, oldest;
    size_t *buckets;          /* heads of the chains; a power of two >= 2 * capacity */
    size_t mask;
    uint64_t seed;
};

/* FNV-1a, seeded. */
static uint64_t dedup_hash(const taxd_dedup *d, const char *id)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ d->seed;
    for (const unsigned char *p = (const unsigned char *)id; *p != '\0'; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}

taxd_dedup *taxd_dedup_new(size_t capacity)
{
    if (capacity == 0 || capacity > SIZE_MAX / 4 / sizeof(struct dedup_slot))
        return NULL;
    taxd_dedup *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    size_t nb = 16;
    while (nb < 2 * capacity)
        nb *= 2;
    d->slots = calloc(capacity, sizeof *d->slots);
    d->buckets = malloc(nb * sizeof *d->buckets);
    if (d->slots == NULL || d->buckets == NULL) {
        taxd_dedup_free(d);
        return NULL;
    }
    for (size_t i = 0; i < nb; i++)
        d->buckets[i] = NO_SLOT;
    d->capacity = capacity;
    d->mask = nb - 1;
    if (getrandom(&d->seed, sizeof d->seed, GRND_NONBLOCK) != (ssize_t)sizeof d->seed)
        d->seed = (uint64_t)(uintptr_t)d * 0x9e3779b97f4a7c15ULL;
    return d;
}

static bool dedup_contains(const taxd_dedup *d, const char *id, uint64_t h)
{
    for (size_t s = d->buckets[h & d->mask]; s != NO_SLOT; s = d->slots[s].next)
        if (d->slots[s].hash == h && strcmp(d->slots[s].id, id) == 0)
            return true;
    return false;
}

/* Unlinks slot s from its chain and frees its id. */
static void dedup_evict(taxd_dedup *d, size_t s)
{
    size_t *link = &d->buckets[d->slots[s].hash & d->mask];
    while (*link != s)
        link = &d->slots[*link].next;
    *link = d->slots[s].next;
    free(d->slots[s].id);
    d->slots[s].id = NULL;
}

bool taxd_dedup_seen(taxd_dedup *dedup, const char *event_id)
{
    if (dedup == NULL || event_id == NULL)
        return false;
    uint64_t h = dedup_hash(dedup, event_id);
    if (dedup_contains(dedup, event_id, h))
        return true;
    char *copy = strdup(event_id);
    if (copy == NULL)
        return false; /* not remembered: at worst a later copy is handled twice */
    size_t s;
    if (dedup->used < dedup->capacity) {
        s = dedup->used++;
    } else {
        s = dedup->oldest;
        dedup->oldest = (dedup->oldest + 1) % dedup->capacity;
        dedup_evict(dedup, s);
    }
    size_t *head = &dedup->buckets[h & dedup->mask];
    dedup->slots[s] = (struct dedup_slot){.id = copy, .hash = h, .next = *head};
    *head = s;
    return false;
}

void taxd_dedup_free(taxd_dedup *dedup)
{
    if (dedup == NULL)
        return;
    if (dedup->slots != NULL)
        for (size_t i = 0; i < dedup->capacity; i++)
            free(dedup->slots[i].id);
    free(dedup->slots);
    free(dedup->buckets);
    free(dedup);
}
