/* errors: the only place that builds error bodies (see errors.h and spec
 * § Errors). Keeping every shape here means a handler cannot drift from the
 * contract by typing a key differently.
 *
 * Design choices and their trade-offs:
 * - Bodies are built key by key with json_object_set_new rather than with
 *   json_pack: the stolen `data`/`issues` arguments then have one obvious
 *   owner on every failure path, at the cost of a few more lines.
 * - A NULL message is replaced by the status name (or "") so a caller bug
 *   yields a well-formed body instead of a NULL that turns into a bare 500.
 * - The 504 body is fixed by the spec; the message argument is ignored there
 *   so timeouts never leak internal detail.
 * - The tenant 429 message always says "seconds", even for 1, matching the
 *   single wording clients are told to expect; the caller sends the same N
 *   in Retry-After.
 * - In the transactions shape, errBody is a deep copy of data rather than a
 *   second reference, so a later edit of one array cannot change the other.
 */
#include "http/errors.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define ERRORS_TIMEOUT_MESSAGE "Endpoint request timed out"
#define ERRORS_DENY_MESSAGE "User is not authorized to access this resource"
#define ERRORS_RATE_LIMIT_ERROR "rate_limit_exceeded"

const char *error_status_name(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
    }
}

/* Sets key to a new string; false when memory ran out. */
static bool errors_set_string(json_t *obj, const char *key, const char *value)
{
    return json_object_set_new(obj, key, json_string(value != NULL ? value : "")) == 0;
}

/* {"error": error, "message": message}, both plain strings. */
static json_t *errors_build_envelope(const char *error, const char *message)
{
    json_t *body = json_object();
    if (body == NULL)
        return NULL;
    if (!errors_set_string(body, "error", error) || !errors_set_string(body, "message", message)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

static json_t *errors_build_timeout(void)
{
    json_t *body = json_object();
    if (body == NULL)
        return NULL;
    if (!errors_set_string(body, "message", ERRORS_TIMEOUT_MESSAGE)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *error_body(int status, const char *message)
{
    if (status == 504)
        return errors_build_timeout();
    const char *name = error_status_name(status);
    return errors_build_envelope(name, message != NULL ? message : name);
}

json_t *error_bodyf(int status, const char *fmt, ...)
{
    if (status == 504)
        return errors_build_timeout();
    char *message = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&message, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    json_t *body = error_body(status, message);
    free(message);
    return body;
}

json_t *error_body_validation(const char *message, json_t *issues)
{
    if (issues == NULL)
        issues = json_array();
    if (issues == NULL)
        return NULL;
    json_t *body = error_body(400, message);
    if (body == NULL) {
        json_decref(issues);
        return NULL;
    }
    if (json_object_set_new(body, "issues", issues) != 0) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *error_body_gateway_deny(void)
{
    json_t *body = json_object();
    if (body == NULL)
        return NULL;
    if (!errors_set_string(body, "Message", ERRORS_DENY_MESSAGE)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *error_body_forbidden(void)
{
    return errors_build_envelope("Forbidden", "Forbidden");
}

json_t *error_body_rate_limited(error_limit_kind_t kind, unsigned retry_after_s)
{
    switch (kind) {
    case ERROR_LIMIT_TENANT: {
        char message[64];
        snprintf(message, sizeof message, "Rate limit exceeded. Retry in %u seconds.",
                 retry_after_s);
        return errors_build_envelope(ERRORS_RATE_LIMIT_ERROR, message);
    }
    case ERROR_LIMIT_ENDPOINT:
        return errors_build_envelope(ERRORS_RATE_LIMIT_ERROR, "Too many requests.");
    case ERROR_LIMIT_NODE:
    default:
        return errors_build_envelope("Too Many Requests", "Too Many Requests");
    }
}

/* {"errorType":..., "errBody":copy of data, "errorMessage":...}. */
static json_t *errors_build_transactions_detail(const char *message, const char *error_type,
                                                const json_t *data)
{
    json_t *detail = json_object();
    if (detail == NULL)
        return NULL;
    if (!errors_set_string(detail, "errorType", error_type) ||
        json_object_set_new(detail, "errBody", json_deep_copy(data)) != 0 ||
        !errors_set_string(detail, "errorMessage", message)) {
        json_decref(detail);
        return NULL;
    }
    return detail;
}

json_t *error_body_transactions(const char *message, const char *error_type, json_t *data)
{
    if (data == NULL)
        data = json_array();
    if (data == NULL)
        return NULL;
    json_t *body = json_object();
    json_t *detail = errors_build_transactions_detail(message, error_type, data);
    if (body == NULL || detail == NULL) {
        json_decref(body);
        json_decref(detail);
        json_decref(data);
        return NULL;
    }
    bool ok = errors_set_string(body, "status", "error") &&
              errors_set_string(body, "message", message);
    /* set_new steals even on failure, so each is attempted exactly once. */
    ok = json_object_set_new(body, "data", data) == 0 && ok;
    ok = json_object_set_new(body, "error", detail) == 0 && ok;
    if (!ok) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *error_body_lookup(const char *message)
{
    json_t *body = json_object();
    if (body == NULL)
        return NULL;
    if (!errors_set_string(body, "status", "error") || !errors_set_string(body, "message", message)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *error_body_forbidden_reason(const char *reason)
{
    json_t *body = error_body_forbidden();
    if (body != NULL)
        json_object_set_new(body, "reason", json_string(reason));
    return body;
}
