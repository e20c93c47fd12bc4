/* webhooks/payload: see payload.h. A recursive walk into a core/dbuf;
 * depth is bounded by the event shapes taxd builds (a few levels). */
#include "webhooks/payload.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/dbuf.h"
#include "core/utf8.h"

static void put_value(dbuf_t *o, const json_t *v);

static void put_object(dbuf_t *o, const json_t *v)
{
    dbuf_put(o, "{", 1);
    const char *key;
    json_t *child;
    bool first = true;
    json_object_foreach((json_t *)v, key, child) {
        if (!first)
            dbuf_put(o, ",", 1);
        first = false;
        size_t klen = strlen(key);
        if (!utf8_valid(key, klen))
            o->failed = true;
        dbuf_put_json_string(o, key, klen);
        dbuf_put(o, ":", 1);
        put_value(o, child);
    }
    dbuf_put(o, "}", 1);
}

static void put_value(dbuf_t *o, const json_t *v)
{
    char num[24];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(o, v);
        break;
    case JSON_ARRAY:
        dbuf_put(o, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i > 0)
                dbuf_put(o, ",", 1);
            put_value(o, json_array_get(v, i));
        }
        dbuf_put(o, "]", 1);
        break;
    case JSON_STRING:
        if (!utf8_valid(json_string_value(v), json_string_length(v)))
            o->failed = true;
        dbuf_put_json_string(o, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        dbuf_put(o, num, strlen(num));
        break;
    case JSON_TRUE:
        dbuf_put(o, "true", 4);
        break;
    case JSON_FALSE:
        dbuf_put(o, "false", 5);
        break;
    case JSON_NULL:
        dbuf_put(o, "null", 4);
        break;
    default: /* a real: JavaScript and Python disagree on how to write some */
        o->failed = true;
    }
}

char *payload_dump(const json_t *value, size_t *len)
{
    dbuf_t o = {0};
    put_value(&o, value);
    return dbuf_finish(&o, len);
}

char *payload_envelope_raw(const char *event, size_t event_len, int64_t dispatched_ms,
                           size_t *len)
{
    static const char HEAD[] = "{\"timestamp\":\"", MID[] = "\",\"data\":[", TAIL[] = "]}";
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(dispatched_ms, when);
    dbuf_t o; /* the whole envelope at once: no growing on the way */
    dbuf_init(&o, event_len + sizeof HEAD + sizeof when + sizeof MID + sizeof TAIL);
    dbuf_put(&o, HEAD, sizeof HEAD - 1);
    dbuf_put(&o, when, strlen(when)); /* digits, '-', ':', '.', 'T' and 'Z': nothing to escape */
    dbuf_put(&o, MID, sizeof MID - 1);
    dbuf_put(&o, event, event_len);
    dbuf_put(&o, TAIL, sizeof TAIL - 1);
    return dbuf_finish(&o, len);
}

char *payload_envelope(const json_t *event, int64_t dispatched_ms, size_t *len)
{
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(dispatched_ms, when);
    json_t *envelope = json_pack("{s:s, s:[O]}", "timestamp", when, "data", event);
    if (envelope == NULL)
        return NULL;
    char *text = payload_dump(envelope, len);
    json_decref(envelope);
    return text;
}
