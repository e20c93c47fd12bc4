/* error: one taxd_error whatever the failure and whatever the body's shape.
 *
 * The contract (spec § Errors) has four error bodies and 5xx bodies of no
 * fixed shape, and a proxy in front of the service may answer HTML or
 * nothing at all. So the status decides and the body only informs:
 *   - `message` is read under any case ("message", "Message", ...);
 *   - `error` is kept only when it is a string (the transactions shape has
 *     an object there: then it is absent);
 *   - `issues` (validation) or `data` (transactions shape) become details,
 *     compact JSON text;
 *   - a body without a readable message (not JSON, empty, JSON without one)
 *     gets "HTTP <status>" plus a short sanitized excerpt of the body, so the
 *     caller always has something to print and nothing that breaks a
 *     terminal or a log line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include <taxd/client.h>

#include "internal.h"

enum { EXCERPT_MAX = 120, MESSAGE_MAX = 1024 };

void taxd_error_clear(taxd_error *err)
{
    if (err == NULL)
        return;
    free(err->error);
    free(err->message);
    free(err->details);
    free(err->request_id);
    free(err->body);
    memset(err, 0, sizeof *err);
    err->retry_after_ms = -1;
}

void taxd_response_clear(taxd_response *response)
{
    if (response == NULL)
        return;
    free(response->body);
    free(response->request_id);
    memset(response, 0, sizeof *response);
}

taxd_code tc_fail(taxd_error *err, taxd_code code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    int attempts = err->attempts;
    taxd_error_clear(err);
    err->code = code;
    err->attempts = attempts;
    char message[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    err->message = strdup(message);
    return code;
}

/* The value of the first key equal to "message" ignoring case whose value
 * is a non-empty string (an empty one would leave the caller nothing to
 * print: the fallback message says more). */
static const char *message_of(json_t *body)
{
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value) {
        if (strcasecmp(key, "message") == 0 && json_is_string(value) &&
            json_string_length(value) > 0)
            return json_string_value(value);
    }
    return NULL;
}

static char *details_of(json_t *body)
{
    json_t *list = json_object_get(body, "issues");
    if (!json_is_array(list))
        list = json_object_get(body, "data");
    if (!json_is_array(list))
        return NULL;
    return json_dumps(list, JSON_COMPACT | JSON_ENSURE_ASCII);
}

/* A short printable excerpt of a body that is not a JSON error: HTML tags
 * dropped, whitespace runs made one space, anything but printable ASCII
 * shown as '?', cut at EXCERPT_MAX characters. out holds EXCERPT_MAX + 4. */
static void excerpt(const char *body, size_t len, char *out)
{
    size_t n = 0;
    bool in_tag = false, space = true;
    for (size_t i = 0; i < len && n < EXCERPT_MAX; i++) {
        unsigned char ch = (unsigned char)body[i];
        if (ch == '<') {
            in_tag = true;
            continue;
        }
        if (in_tag) {
            if (ch == '>') {
                in_tag = false;
                if (!space)
                    out[n++] = ' ', space = true;
            }
            continue;
        }
        if (isspace(ch)) {
            if (!space)
                out[n++] = ' ', space = true;
            continue;
        }
        out[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
        space = false;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    if (n == EXCERPT_MAX)
        memcpy(out + n, "...", 3), n += 3;
    out[n] = '\0';
}

static char *fallback_message(int status, const char *body, size_t len)
{
    char cut[EXCERPT_MAX + 4];
    excerpt(body ? body : "", body ? len : 0, cut);
    char message[EXCERPT_MAX + 32];
    if (cut[0] != '\0')
        snprintf(message, sizeof message, "HTTP %d: %s", status, cut);
    else
        snprintf(message, sizeof message, "HTTP %d", status);
    return strdup(message);
}

taxd_code tc_error_from_answer(taxd_error *err, int status, const char *body, size_t len,
                               const char *request_id, long retry_after_ms)
{
    if (err == NULL)
        return TAXD_E_HTTP;
    int attempts = err->attempts;
    taxd_error_clear(err);
    err->code = TAXD_E_HTTP;
    err->status = status;
    err->attempts = attempts;
    err->retry_after_ms = retry_after_ms;
    if (request_id != NULL)
        err->request_id = strdup(request_id);
    if (body != NULL) {
        err->body = malloc(len + 1);
        if (err->body != NULL) {
            memcpy(err->body, body, len);
            err->body[len] = '\0';
        }
    }
    json_t *json = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    if (json_is_object(json)) {
        json_t *error = json_object_get(json, "error");
        if (json_is_string(error))
            err->error = strdup(json_string_value(error));
        const char *message = message_of(json);
        if (message != NULL)
            err->message = strdup(message);
        err->details = details_of(json);
    }
    json_decref(json);
    if (err->message == NULL)
        err->message = fallback_message(status, body, len);
    return TAXD_E_HTTP;
}
