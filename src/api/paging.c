/* paging: the cursor pagination every list shares (?limit=1..100, default
 * 25; ?cursor= an opaque token from meta.next_cursor). */
#include <errno.h>
#include <stdlib.h>

#include "api/api.h"
#include "http/validate.h"

#define PAGE_DEFAULT 25
#define PAGE_MAX 100

static json_t *path_of(const char *name)
{
    return json_pack("[s]", name);
}

static bool refuse(request_t *req, const char *code, const char *name, const char *message,
                   json_t *extra)
{
    json_t *path = path_of(name);
    json_t *issues = json_array();
    json_array_append_new(issues, v_issue(code, path, message, extra));
    json_decref(path);
    reply_invalid(req, "Invalid query parameters", issues);
    return false;
}

bool api_page_params(request_t *req, size_t *limit, const char **cursor)
{
    bool malformed = false;
    const char *text = request_query(req, "limit", &malformed);
    if (!malformed)
        *cursor = request_query(req, "cursor", &malformed);
    if (malformed) {
        reply_error(req, 400, "The query string is not validly percent-encoded");
        return false;
    }
    *limit = PAGE_DEFAULT;
    if (text == NULL)
        return true;
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno != 0)
        return refuse(req, "invalid_type", "limit", "Invalid input: expected int",
                      json_pack("{s:s}", "expected", "int"));
    if (n < 1)
        return refuse(req, "too_small", "limit", "Too small: expected number to be >=1",
                      json_pack("{s:s, s:i, s:b}", "origin", "number", "minimum", 1,
                                "inclusive", 1));
    if (n > PAGE_MAX)
        return refuse(req, "too_big", "limit", "Too big: expected number to be <=100",
                      json_pack("{s:s, s:i, s:b}", "origin", "number", "maximum", PAGE_MAX,
                                "inclusive", 1));
    *limit = (size_t)n;
    return true;
}
