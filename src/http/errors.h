/* errors: every error body the API answers is built here and nowhere else
 * (spec § Errors → Body shapes). Handlers pick a shape; they never write error
 * JSON themselves. Every function returns a new json_t reference the caller
 * owns (NULL only when memory ran out). */
#ifndef TAXD_HTTP_ERRORS_H
#define TAXD_HTTP_ERRORS_H

#include <jansson.h>

/* The standard envelope's `error` string for a status: 400 "Bad Request",
 * 401 "Unauthorized", 403 "Forbidden", 404 "Not Found", 405 "Method Not
 * Allowed", 408 "Request Timeout", 409 "Conflict", 413 "Payload Too Large", 415
 * "Unsupported Media Type", 429 "Too Many Requests", 431 "Request Header Fields
 * Too Large", 500 "Internal Server Error", 501 "Not Implemented", 503 "Service
 * Unavailable", 504 "Gateway Timeout"; "Error" for anything else. */
const char *error_status_name(int status);

/* {"error": error_status_name(status), "message": message}. For 504 it is the
 * spec's {"message":"Endpoint request timed out"} whatever message says. */
json_t *error_body(int status, const char *message);

/* printf-style message. */
json_t *error_bodyf(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 400 with validation issues: {"error":"Bad Request","message":message,
 * "issues":issues}. issues is stolen (an array built by the validator). */
json_t *error_body_validation(const char *message, json_t *issues);

/* The gateway deny (403): {"Message":"User is not authorized to access this resource"}. */
json_t *error_body_gateway_deny(void);

/* 403 tenant mismatch: {"error":"Forbidden","message":"Forbidden"}. */
json_t *error_body_forbidden(void);

/* 403 of a signed download link: {"error":"Forbidden","message":"Forbidden",
 * "reason":reason} with reason "expired" or "invalid_signature". */
json_t *error_body_forbidden_reason(const char *reason);

/* The three 429 bodies, one per layer (spec § Errors 5):
 *   ERROR_LIMIT_TENANT:   {"error":"rate_limit_exceeded","message":"Rate limit exceeded. Retry in N seconds."}
 *   ERROR_LIMIT_ENDPOINT: {"error":"rate_limit_exceeded","message":"Too many requests."}
 *   ERROR_LIMIT_NODE:     {"error":"Too Many Requests","message":"Too Many Requests"} */
typedef enum error_limit_kind {
    ERROR_LIMIT_TENANT,
    ERROR_LIMIT_ENDPOINT,
    ERROR_LIMIT_NODE,
} error_limit_kind_t;
json_t *error_body_rate_limited(error_limit_kind_t kind, unsigned retry_after_s);

/* The transactions shape (POST /v1/transactions/external-id):
 * {"status":"error","message":message,"data":data,
 *  "error":{"errorType":error_type,"errBody":data-or-message,"errorMessage":message}}
 * data (array of {"code","message","path"}) is stolen; NULL gives []. */
json_t *error_body_transactions(const char *message, const char *error_type, json_t *data);

/* The transactions lookup shape: {"status":"error","message":message}. */
json_t *error_body_lookup(const char *message);

#endif
