/* core/validate: the JSON body checker, a pure module (no I/O, no HTTP: the
 * transport hands it the body and its content type). Parses JSON strictly
 * (duplicate keys refused, content-type checked) and checks it against a
 * declarative schema, producing issues in the Zod v4 format that the spec's
 * validation shape follows:
 *   {"code":"invalid_type","expected":"string","path":["name"],"message":"..."}
 * codes: invalid_type, invalid_value (with "values"), too_small, too_big
 * (with "minimum"/"maximum" and "origin"), invalid_format (with "format"),
 * unrecognized_keys is never produced (unknown fields are ignored: the
 * contract is additive), custom.
 *
 * Schemas are static const data written next to each handler:
 *
 *   static const char *const TYPES[] = {"individual", "entity", NULL};
 *   static const v_field OWNER_FIELDS[] = {
 *       {"id", V_STRING, .required = true, .min_len = 1, .max_len = 256},
 *       {"account_owner_type", V_ENUM, .required = true, .values = TYPES},
 *       {NULL}};
 *   static const v_schema OWNER = {OWNER_FIELDS};
 */
#ifndef TAXD_CORE_VALIDATE_H
#define TAXD_CORE_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef enum v_type {
    V_STRING,   /* min_len/max_len in characters (UTF-8 code points) when non-zero */
    V_ENUM,     /* a string among values (NULL-terminated) */
    V_INTEGER,  /* a JSON integer within [min_int, max_int] when has_range */
    V_BOOLEAN,
    V_DECIMAL,  /* a string holding a plain decimal: -?digits(.digits)?; numbers refused */
    V_DATETIME, /* a string in RFC 3339 with a time zone: 2024-01-02T03:04:05(.sss)?(Z|+hh:mm),
                 * whose UTC instant is in 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z */
    V_DATE,     /* a string YYYY-MM-DD that is a real calendar date */
    V_OBJECT,   /* checked against .object */
    V_ARRAY,    /* min_items/max_items when non-zero; each element checked against .items */
    V_ANY,      /* anything, present or not */
} v_type_t;

typedef struct v_schema v_schema;
typedef struct v_field v_field;

struct v_field {
    const char *name;             /* NULL ends a field list */
    v_type_t type;
    bool required;
    bool nullable;                /* JSON null accepted (and treated as absent) */
    size_t min_len, max_len;      /* V_STRING */
    size_t min_items, max_items;  /* V_ARRAY */
    bool has_range;               /* V_INTEGER */
    int64_t min_int, max_int;
    const char *const *values;    /* V_ENUM */
    const v_schema *object;       /* V_OBJECT, or the element of an array of objects */
    const v_field *items;         /* V_ARRAY: the element (its name is ignored) */
};

struct v_schema {
    const v_field *fields;
};

/* Appends to `issues` (a JSON array) every issue of `value` against `schema`,
 * with paths relative to `path` (a JSON array, may be NULL for the root; array
 * indexes appear as numbers). Returns the number of issues added. */
size_t v_check_object(const v_schema *schema, const json_t *value, const json_t *path,
                      json_t *issues);

/* Checks one value against one field description (used for top-level arrays). */
size_t v_check_value(const v_field *field, const json_t *value, const json_t *path,
                     json_t *issues);

/* Parses a request body. content_type must be application/json (parameters such
 * as charset allowed, case-insensitive); the body must be one JSON value with
 * no duplicate keys. On failure returns NULL and writes a message naming what
 * is wrong ("Request body must be application/json", "Malformed JSON: duplicate
 * object key 'id' at line 1, column 20", "Request body is required") into
 * msg. allow_empty: an empty body (len 0) parses as NULL with msg[0] == 0. */
json_t *v_parse_body(const char *body, size_t len, const char *content_type, bool allow_empty,
                     char *msg, size_t msg_cap);

/* v_parse_body that also reads a text/plain body as JSON when its charset
 * parameter is UTF-8 (any case, quoted or not) or absent: what a browser
 * sends for a string body without a Content-Type of its own (routes flagged
 * ROUTE_TEXT_JSON). text/plain with another charset is refused with "Content-Type
 * text/plain must have charset UTF-8 (or none)"; another type with "Content-Type
 * must be application/json or text/plain". */
json_t *v_parse_body_text(const char *body, size_t len, const char *content_type,
                          bool allow_empty, char *msg, size_t msg_cap);

/* v_parse_body (a body is required) that also takes a scalar at the top
 * level, for a handler that names the problem as an issue on []. */
json_t *v_parse_body_any(const char *body, size_t len, const char *content_type, char *msg,
                         size_t msg_cap);

/* The date-of-birth rule, kept here so every field that holds one agrees:
 * when object's `key` holds a well-formed date (V_DATE) before 1900-01-01 or
 * after the UTC day of now_ms (the service clock the request sees), appends
 * one "custom" issue on path [key] ("<key> cannot be in the future", "<key>
 * cannot be before 1900-01-01") and returns 1; otherwise returns 0 and leaves
 * absent, null or malformed values to the schema. */
size_t v_check_birth_date(const json_t *object, const char *key, int64_t now_ms,
                          json_t *issues);

/* Builds one issue (used by handlers for rules a schema cannot state, with
 * code "custom"). path is copied; extra may be NULL and is merged (stolen). */
json_t *v_issue(const char *code, const json_t *path, const char *message, json_t *extra);

#endif
