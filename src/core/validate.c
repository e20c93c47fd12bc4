/* validate: strict body parsing and declarative schema checks producing Zod v4
 * style issues (see validate.h).
 *
 * Design choices and their trade-offs:
 * - The walk follows the schema, never the input: recursion depth is bounded
 *   by how deeply schemas nest, so a deeply nested body cannot exhaust the
 *   stack here (jansson's own parser caps input depth).
 * - One working path array is pushed and popped during the walk and deep
 *   copied into each issue, so a body that validates allocates no paths.
 * - Every issue found is counted even when memory runs out while building it,
 *   and a failed path push counts as an issue too: callers test the count, so
 *   exhaustion fails closed instead of letting an unchecked body through.
 * - Messages and keys follow Zod v4's English locale ("Invalid input: expected
 *   string, received number", "Too small: expected string to have >=1
 *   characters", ...). Zod omits `received` from issues; so do we.
 * - Deliberate departures from Zod, each kept small:
 *   * V_ENUM reports every failure (missing, null, wrong type, unknown value)
 *     as invalid_value with `values`, as Zod's z.enum does; the spec wants
 *     `values` on every issue about a fixed-value field.
 *   * V_INTEGER: a non-number gives invalid_type expected "number"; a JSON
 *     real (1.5, and also 1.0, because handlers read json_integer_value)
 *     gives invalid_type expected "int" ("Invalid input: expected int,
 *     received number"), without Zod's extra `format` key. Range issues use
 *     origin "number".
 *   * String formats (decimal, datetime, date, and NUL refusal under format
 *     "string") carry origin "string" like Zod, without its `pattern` key.
 *   * A null given for a required field is reported as received null even
 *     when the field is nullable: nullable only makes null mean "absent",
 *     and absent is still wrong for a required field.
 *   * An array longer than max_items gets one too_big issue and its elements
 *     are not checked, which bounds the issue list (and the response) by the
 *     schema instead of by the body size.
 *   * String lengths count UTF-8 code points (Zod counts UTF-16 units), and a
 *     string holding NUL is refused outright: ids must never contain NUL.
 *   * V_DATETIME requires seconds and uppercase 'T'/'Z'; the offset is Z or
 *     +hh:mm/-hh:mm with hh < 24 and mm < 60.
 * - v_parse_body accepts any media type parameters after application/json
 *   (RFC 8259 JSON is UTF-8 regardless) and only objects or arrays at the top
 *   level (jansson's default), since no endpoint takes a bare scalar.
 * - v_parse_body_text also takes text/plain, whose charset must be UTF-8 or
 *   absent (a browser's fetch labels a string body text/plain;charset=UTF-8):
 *   bytes declared in another charset are refused rather than misread.
 */
#include "core/validate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/utf8.h"

#define V_DECIMAL_MAX_LEN 80
#define V_MEDIA_TYPE "application/json"
#define V_DATETIME_RANGE_MESSAGE                                                                  \
    "Invalid datetime: the instant must fall between 0001-01-01T00:00:00Z and "                  \
    "9999-12-31T23:59:59.999Z"
#define V_BIRTH_DATE_MIN "1900-01-01"

typedef struct v_ctx {
    json_t *issues; /* borrowed: the caller's array */
    json_t *path;   /* owned: the working path, pushed and popped */
    size_t count;   /* issues found, whether or not they could be appended */
} v_ctx;

static void v_check_field(v_ctx *ctx, const v_field *field, const json_t *value);

/* ---- issues ---------------------------------------------------------- */

json_t *v_issue(const char *code, const json_t *path, const char *message, json_t *extra)
{
    json_t *issue = json_object();
    json_t *path_copy = path != NULL ? json_deep_copy(path) : json_array();
    if (issue == NULL || path_copy == NULL)
        goto fail;
    if (json_object_set_new(issue, "code", json_string(code != NULL ? code : "custom")) != 0)
        goto fail;
    int rc = json_object_set_new(issue, "path", path_copy);
    path_copy = NULL; /* stolen even on failure */
    if (rc != 0)
        goto fail;
    if (json_object_set_new(issue, "message", json_string(message != NULL ? message : "")) != 0)
        goto fail;
    if (extra != NULL && json_object_update(issue, extra) != 0)
        goto fail;
    json_decref(extra);
    return issue;
fail:
    json_decref(issue);
    json_decref(path_copy);
    json_decref(extra);
    return NULL;
}

/* Counts the issue first so that an allocation failure still fails the body. */
static void v_ctx_add(v_ctx *ctx, const char *code, const char *message, json_t *extra)
{
    ctx->count++;
    json_t *issue = v_issue(code, ctx->path, message, extra);
    if (issue != NULL)
        json_array_append_new(ctx->issues, issue);
}

static const char *v_json_type_name(const json_t *value)
{
    if (value == NULL)
        return "undefined";
    switch (json_typeof(value)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL:
    default: return "null";
    }
}

static const char *v_expected_name(v_type_t type)
{
    switch (type) {
    case V_INTEGER: return "number";
    case V_BOOLEAN: return "boolean";
    case V_OBJECT: return "object";
    case V_ARRAY: return "array";
    default: return "string";
    }
}

static void v_add_invalid_type(v_ctx *ctx, const char *expected, const json_t *value)
{
    char message[96];
    snprintf(message, sizeof message, "Invalid input: expected %s, received %s", expected,
             v_json_type_name(value));
    v_ctx_add(ctx, "invalid_type", message, json_pack("{s:s}", "expected", expected));
}

static void v_add_format(v_ctx *ctx, const char *format, const char *message)
{
    v_ctx_add(ctx, "invalid_format", message,
              json_pack("{s:s,s:s}", "origin", "string", "format", format));
}

/* origin is "string", "array" or "number"; too_big when big, else too_small. */
static void v_add_size(v_ctx *ctx, const char *origin, bool big, int64_t bound)
{
    const char *unit = strcmp(origin, "string") == 0  ? " characters"
                       : strcmp(origin, "array") == 0 ? " items"
                                                      : NULL;
    char message[128];
    snprintf(message, sizeof message, "Too %s: expected %s %s %s%lld%s", big ? "big" : "small",
             origin, unit != NULL ? "to have" : "to be", big ? "<=" : ">=", (long long)bound,
             unit != NULL ? unit : "");
    v_ctx_add(ctx, big ? "too_big" : "too_small", message,
              json_pack("{s:s,s:I,s:b}", "origin", origin, big ? "maximum" : "minimum",
                        (json_int_t)bound, "inclusive", 1));
}

/* 'Invalid option: expected one of "A"|"B"', or 'Invalid input: expected "A"'
 * for a single value, as Zod words it. Returns a malloc'd string or NULL. */
static char *v_enum_message(const char *const *values)
{
    size_t count = 0, need = sizeof "Invalid option: expected one of ";
    for (; values != NULL && values[count] != NULL; count++)
        need += strlen(values[count]) + 3; /* quotes and separator */
    char *out = malloc(need);
    if (out == NULL)
        return NULL;
    size_t used = (size_t)snprintf(out, need, "%s",
                                   count == 1 ? "Invalid input: expected "
                                              : "Invalid option: expected one of ");
    for (size_t i = 0; i < count; i++)
        used += (size_t)snprintf(out + used, need - used, "%s\"%s\"", i > 0 ? "|" : "", values[i]);
    return out;
}

static void v_add_enum(v_ctx *ctx, const char *const *values)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && values != NULL && values[i] != NULL; i++)
        json_array_append_new(list, json_string(values[i]));
    json_t *extra = json_object();
    if (extra != NULL && list != NULL)
        json_object_set(extra, "values", list);
    json_decref(list);
    char *message = v_enum_message(values);
    v_ctx_add(ctx, "invalid_value", message != NULL ? message : "Invalid option", extra);
    free(message);
}

/* ---- path ------------------------------------------------------------ */

static bool v_path_push(v_ctx *ctx, json_t *segment)
{
    if (json_array_append_new(ctx->path, segment) == 0)
        return true;
    ctx->count++; /* could not check this child: fail closed */
    return false;
}

static void v_path_pop(v_ctx *ctx)
{
    json_array_remove(ctx->path, json_array_size(ctx->path) - 1);
}

/* ---- string formats -------------------------------------------------- */

/* Reads exactly n ASCII digits at s into *out. */
static bool v_read_digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int v_days_in_month(int year, int month)
{
    static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : DAYS[month - 1];
}

/* YYYY-MM-DD at s (at least 10 bytes), a real calendar date. */
static bool v_is_date_prefix(const char *s)
{
    int y, m, d;
    if (!v_read_digits(s, 4, &y) || s[4] != '-' || !v_read_digits(s + 5, 2, &m) || s[7] != '-' ||
        !v_read_digits(s + 8, 2, &d))
        return false;
    return m >= 1 && m <= 12 && d >= 1 && d <= v_days_in_month(y, m);
}

static bool v_is_date(const char *s, size_t len)
{
    return len == 10 && v_is_date_prefix(s);
}

/* hh:mm at s, hh < 24 and mm < 60. */
static bool v_is_hh_mm(const char *s)
{
    int h, m;
    return v_read_digits(s, 2, &h) && s[2] == ':' && v_read_digits(s + 3, 2, &m) && h < 24 &&
           m < 60;
}

/* Z or +hh:mm / -hh:mm, filling the rest of the string exactly. */
static bool v_is_zone(const char *s, size_t len)
{
    if (len == 1)
        return s[0] == 'Z';
    return len == 6 && (s[0] == '+' || s[0] == '-') && v_is_hh_mm(s + 1);
}

static bool v_is_datetime(const char *s, size_t len)
{
    /* 2024-01-02T03:04:05 is 19 bytes, plus at least a one-byte zone. */
    if (len < 20 || !v_is_date_prefix(s) || s[10] != 'T' || !v_is_hh_mm(s + 11) || s[16] != ':')
        return false;
    int sec;
    if (!v_read_digits(s + 17, 2, &sec) || sec >= 60)
        return false;
    size_t i = 19;
    if (s[i] == '.') {
        size_t start = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == start || i - start > 9)
            return false;
    }
    return v_is_zone(s + i, len - i);
}

/* Whether a well-formed datetime's UTC instant is one taxd can hold: the
 * offset can carry "9999-12-31T23:59:59-23:59" into year 10000, which no
 * four-digit year can write back. The bounds live in core/clock.h. */
static bool v_datetime_in_range(const char *s)
{
    int64_t ms;
    return clock_parse_rfc3339(s, &ms) == 0;
}

static bool v_is_decimal(const char *s, size_t len)
{
    if (len == 0 || len > V_DECIMAL_MAX_LEN)
        return false;
    size_t i = s[0] == '-' ? 1 : 0;
    size_t start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == start)
        return false;
    if (i == len)
        return true;
    if (s[i] != '.')
        return false;
    start = ++i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    return i > start && i == len;
}

/* ---- per-type checks (value is present and not null) ---------------- */

static void v_check_string(v_ctx *ctx, const v_field *field, const json_t *value)
{
    const char *s = json_string_value(value);
    size_t len = json_string_length(value);
    if (memchr(s, '\0', len) != NULL) {
        v_add_format(ctx, "string", "String must not contain NUL characters");
        return;
    }
    size_t chars = utf8_chars(s, len);
    if (field->min_len != 0 && chars < field->min_len)
        v_add_size(ctx, "string", false, (int64_t)field->min_len);
    else if (field->max_len != 0 && chars > field->max_len)
        v_add_size(ctx, "string", true, (int64_t)field->max_len);
}

static void v_check_enum(v_ctx *ctx, const v_field *field, const json_t *value)
{
    if (json_is_string(value)) {
        const char *s = json_string_value(value);
        size_t len = json_string_length(value);
        for (size_t i = 0; field->values != NULL && field->values[i] != NULL; i++) {
            if (strlen(field->values[i]) == len && memcmp(field->values[i], s, len) == 0)
                return;
        }
    }
    v_add_enum(ctx, field->values);
}

static void v_check_integer(v_ctx *ctx, const v_field *field, const json_t *value)
{
    if (json_is_real(value)) {
        v_add_invalid_type(ctx, "int", value);
        return;
    }
    if (!json_is_integer(value)) {
        v_add_invalid_type(ctx, "number", value);
        return;
    }
    json_int_t n = json_integer_value(value);
    if (!field->has_range)
        return;
    if (n < field->min_int)
        v_add_size(ctx, "number", false, field->min_int);
    else if (n > field->max_int)
        v_add_size(ctx, "number", true, field->max_int);
}

static void v_check_formatted(v_ctx *ctx, const v_field *field, const json_t *value)
{
    if (!json_is_string(value)) {
        v_add_invalid_type(ctx, "string", value);
        return;
    }
    const char *s = json_string_value(value);
    size_t len = json_string_length(value);
    if (field->type == V_DECIMAL && !v_is_decimal(s, len))
        v_add_format(ctx, "decimal",
                     "Invalid decimal: expected a plain decimal string such as \"12.50\"");
    else if (field->type == V_DATETIME && !v_is_datetime(s, len))
        v_add_format(ctx, "datetime", "Invalid ISO datetime");
    else if (field->type == V_DATETIME && !v_datetime_in_range(s))
        v_add_format(ctx, "datetime", V_DATETIME_RANGE_MESSAGE);
    else if (field->type == V_DATE && !v_is_date(s, len))
        v_add_format(ctx, "date", "Invalid ISO date");
}

static void v_check_fields(v_ctx *ctx, const v_schema *schema, const json_t *object)
{
    for (const v_field *f = schema->fields; f != NULL && f->name != NULL; f++) {
        if (!v_path_push(ctx, json_string(f->name)))
            continue;
        v_check_field(ctx, f, json_object_get(object, f->name));
        v_path_pop(ctx);
    }
}

static void v_check_array(v_ctx *ctx, const v_field *field, const json_t *value)
{
    size_t size = json_array_size(value);
    if (field->min_items != 0 && size < field->min_items)
        v_add_size(ctx, "array", false, (int64_t)field->min_items);
    if (field->max_items != 0 && size > field->max_items) {
        v_add_size(ctx, "array", true, (int64_t)field->max_items);
        return;
    }
    const v_field object_element = {.type = V_OBJECT, .object = field->object};
    const v_field *element = field->items != NULL ? field->items
                             : field->object != NULL ? &object_element
                                                     : NULL;
    if (element == NULL)
        return;
    for (size_t i = 0; i < size; i++) {
        if (!v_path_push(ctx, json_integer((json_int_t)i)))
            continue;
        v_check_field(ctx, element, json_array_get(value, i));
        v_path_pop(ctx);
    }
}

/* Presence and null rules first, then the type's own check. */
static void v_check_field(v_ctx *ctx, const v_field *field, const json_t *value)
{
    if (field->type == V_ANY)
        return;
    bool absent = value == NULL || (json_is_null(value) && field->nullable);
    if (absent && !field->required)
        return;
    if (value == NULL || json_is_null(value)) {
        if (field->type == V_ENUM)
            v_add_enum(ctx, field->values);
        else
            v_add_invalid_type(ctx, v_expected_name(field->type), value);
        return;
    }
    switch (field->type) {
    case V_STRING:
        if (json_is_string(value))
            v_check_string(ctx, field, value);
        else
            v_add_invalid_type(ctx, "string", value);
        return;
    case V_ENUM: v_check_enum(ctx, field, value); return;
    case V_INTEGER: v_check_integer(ctx, field, value); return;
    case V_BOOLEAN:
        if (!json_is_boolean(value))
            v_add_invalid_type(ctx, "boolean", value);
        return;
    case V_DECIMAL:
    case V_DATETIME:
    case V_DATE: v_check_formatted(ctx, field, value); return;
    case V_OBJECT:
        if (!json_is_object(value))
            v_add_invalid_type(ctx, "object", value);
        else if (field->object != NULL)
            v_check_fields(ctx, field->object, value);
        return;
    case V_ARRAY:
        if (!json_is_array(value))
            v_add_invalid_type(ctx, "array", value);
        else
            v_check_array(ctx, field, value);
        return;
    case V_ANY:
    default: return;
    }
}

/* ---- public checks --------------------------------------------------- */

size_t v_check_value(const v_field *field, const json_t *value, const json_t *path,
                     json_t *issues)
{
    v_ctx ctx = {.issues = issues, .path = path != NULL ? json_deep_copy(path) : json_array()};
    if (ctx.path == NULL)
        return 1; /* cannot check without a working path: fail closed */
    if (field != NULL)
        v_check_field(&ctx, field, value);
    json_decref(ctx.path);
    return ctx.count;
}

size_t v_check_object(const v_schema *schema, const json_t *value, const json_t *path,
                      json_t *issues)
{
    const v_field root = {.type = V_OBJECT, .required = true, .object = schema};
    return v_check_value(&root, value, path, issues);
}

/* ---- body parsing ---------------------------------------------------- */

static void v_set_msg(char *msg, size_t msg_cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void v_set_msg(char *msg, size_t msg_cap, const char *fmt, ...)
{
    if (msg == NULL || msg_cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_cap, fmt, ap);
    va_end(ap);
}

static const char *v_skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* application/json, any case, optionally followed by ;parameters. */
static bool v_is_json_media_type(const char *content_type)
{
    if (content_type == NULL)
        return false;
    const char *s = v_skip_space(content_type);
    if (strncasecmp(s, V_MEDIA_TYPE, sizeof V_MEDIA_TYPE - 1) != 0)
        return false;
    s = v_skip_space(s + sizeof V_MEDIA_TYPE - 1);
    return *s == '\0' || *s == ';';
}

/* The length of a media-type parameter's value at s (a token, or a quoted
 * string with its quotes), and in *inner and *inner_len the value itself. */
static size_t v_param_value(const char *s, const char **inner, size_t *inner_len)
{
    if (*s != '"') {
        size_t n = strcspn(s, "; \t");
        *inner = s;
        *inner_len = n;
        return n;
    }
    const char *close = strchr(s + 1, '"');
    if (close == NULL) { /* unterminated: the value is the raw rest, quote included */
        *inner = s;
        *inner_len = strlen(s);
        return *inner_len;
    }
    *inner = s + 1;
    *inner_len = (size_t)(close - s) - 1;
    return (size_t)(close - s) + 1;
}

typedef enum v_text_verdict { V_TEXT_NO, V_TEXT_UTF8, V_TEXT_OTHER_CHARSET } v_text_verdict;

/* text/plain, any case, whose charset parameters (if any) all say UTF-8, any
 * case, quoted or not: what a browser's fetch sends for a string body. */
static v_text_verdict v_text_media_type(const char *content_type)
{
    static const char text[] = "text/plain";
    if (content_type == NULL)
        return V_TEXT_NO;
    const char *s = v_skip_space(content_type);
    if (strncasecmp(s, text, sizeof text - 1) != 0)
        return V_TEXT_NO;
    s = v_skip_space(s + sizeof text - 1);
    if (*s != '\0' && *s != ';')
        return V_TEXT_NO;
    while (*s == ';') {
        s = v_skip_space(s + 1);
        size_t name_len = strcspn(s, "=; \t");
        const char *eq = v_skip_space(s + name_len);
        if (*eq != '=')
            return name_len == 0 && *eq == '\0' ? V_TEXT_UTF8 : V_TEXT_OTHER_CHARSET;
        const char *value;
        size_t value_len;
        size_t skip = v_param_value(v_skip_space(eq + 1), &value, &value_len);
        bool charset = name_len == 7 && strncasecmp(s, "charset", 7) == 0;
        if (charset && !(value_len == 5 && strncasecmp(value, "utf-8", 5) == 0))
            return V_TEXT_OTHER_CHARSET;
        s = v_skip_space(v_skip_space(eq + 1) + skip);
        if (*s != '\0' && *s != ';')
            return V_TEXT_OTHER_CHARSET;
    }
    return V_TEXT_UTF8;
}

/* Whether content_type may carry the body; writes the refusal into msg. */
static bool v_media_type_ok(const char *content_type, bool accept_text, char *msg,
                            size_t msg_cap)
{
    if (v_is_json_media_type(content_type))
        return true;
    if (!accept_text) {
        v_set_msg(msg, msg_cap, "Content-Type must be application/json");
        return false;
    }
    switch (v_text_media_type(content_type)) {
    case V_TEXT_UTF8:
        return true;
    case V_TEXT_OTHER_CHARSET:
        v_set_msg(msg, msg_cap, "Content-Type text/plain must have charset UTF-8 (or none)");
        return false;
    default:
        v_set_msg(msg, msg_cap, "Content-Type must be application/json or text/plain");
        return false;
    }
}

static json_t *v_parse(const char *body, size_t len, const char *content_type,
                       bool allow_empty, bool accept_text, size_t flags, char *msg,
                       size_t msg_cap)
{
    v_set_msg(msg, msg_cap, "%s", "");
    if (body == NULL || len == 0) {
        if (!allow_empty)
            v_set_msg(msg, msg_cap, "Request body is required");
        return NULL;
    }
    if (!v_media_type_ok(content_type, accept_text, msg, msg_cap))
        return NULL;
    json_error_t error;
    /* No JSON_DISABLE_EOF_CHECK: trailing bytes after the value are refused. */
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | flags, &error);
    if (root == NULL) {
        /* jansson quotes the input near the fault ("premature end of input
         * near '"123-45-6789'"): that excerpt could be a TIN or a secret, and
         * the message reaches the client and the access log. Only a duplicate
         * key keeps its quote, which names a key, never a value. */
        char *near = strstr(error.text, " near '");
        if (near != NULL && strstr(error.text, "duplicate object key") == NULL)
            *near = '\0';
        v_set_msg(msg, msg_cap, "Malformed JSON: %s at line %d, column %d", error.text,
                  error.line, error.column);
    }
    return root;
}

json_t *v_parse_body(const char *body, size_t len, const char *content_type, bool allow_empty,
                     char *msg, size_t msg_cap)
{
    return v_parse(body, len, content_type, allow_empty, false, 0, msg, msg_cap);
}

json_t *v_parse_body_text(const char *body, size_t len, const char *content_type,
                          bool allow_empty, char *msg, size_t msg_cap)
{
    return v_parse(body, len, content_type, allow_empty, true, 0, msg, msg_cap);
}

json_t *v_parse_body_any(const char *body, size_t len, const char *content_type, char *msg,
                         size_t msg_cap)
{
    return v_parse(body, len, content_type, false, false, JSON_DECODE_ANY, msg, msg_cap);
}

/* ---- dates of birth ---------------------------------------------------- */

/* ISO dates compare as strings, so the bounds are compared as text: no
 * calendar arithmetic, and "today" is the UTC day of now_ms. */
size_t v_check_birth_date(const json_t *object, const char *key, int64_t now_ms,
                          json_t *issues)
{
    const json_t *value = json_object_get(object, key);
    const char *s = json_string_value(value);
    if (s == NULL || !v_is_date(s, json_string_length(value)))
        return 0; /* absent, null or malformed: the schema's to report */
    char today[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(now_ms, today);
    today[10] = '\0';
    char message[96];
    if (strcmp(s, today) > 0)
        snprintf(message, sizeof message, "%s cannot be in the future", key);
    else if (strcmp(s, V_BIRTH_DATE_MIN) < 0)
        snprintf(message, sizeof message, "%s cannot be before " V_BIRTH_DATE_MIN, key);
    else
        return 0;
    json_t *path = json_pack("[s]", key);
    json_t *issue = path != NULL ? v_issue("custom", path, message, NULL) : NULL;
    json_decref(path);
    /* Out of memory: json_null() never fails, so the body is still refused. */
    json_array_append_new(issues, issue != NULL ? issue : json_null());
    return 1;
}
