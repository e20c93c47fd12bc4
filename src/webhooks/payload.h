/* webhooks/payload: the exact bytes of a delivery. A receiver may verify the
 * signature over the raw body or over the body parsed and re-serialized
 * (spec § Authentication → Webhook deliveries: "the parsed body re-serialized
 * as JSON"), so the body is written in the one form that JavaScript's
 * JSON.stringify and Python's json.dumps(separators=(",", ":"),
 * ensure_ascii=False) both reproduce byte for byte: no whitespace, keys in
 * insertion order (event fields are fixed names, never integer-like keys,
 * which JavaScript would reorder), non-ASCII as raw UTF-8, and only the
 * escapes those libraries write: \" \\ \b \f \n \r \t, and \u00xx in
 * lowercase for the other control characters. jansson writes uppercase
 * hex, so this serializer is taxd's own. Only strings, integers, booleans,
 * null, arrays and objects are allowed: events carry no floating point. */
#ifndef TAXD_WEBHOOKS_PAYLOAD_H
#define TAXD_WEBHOOKS_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Serializes value canonically into a malloc'd NUL-terminated string (the
 * caller frees) and its length. NULL when the value holds a real number or
 * a string that is not valid UTF-8, or when memory ran out. */
char *payload_dump(const json_t *value, size_t *len);

/* The delivery envelope {"timestamp":"<dispatched_ms as RFC 3339 ms>",
 * "data":[event]}, canonical. event is borrowed. */
char *payload_envelope(const json_t *event, int64_t dispatched_ms, size_t *len);

/* The same around an event already serialized by payload_dump (event_len
 * bytes): byte for byte what payload_envelope writes, without walking the
 * event again. */
char *payload_envelope_raw(const char *event, size_t event_len, int64_t dispatched_ms,
                           size_t *len);

#endif
