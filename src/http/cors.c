/* cors: the CORS headers of an answer. See cors.h. */
#include "http/cors.h"

#include <string.h>

const char *cors_allowed_origin(const char *const *origins, size_t count, const char *origin)
{
    if (origin == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++)
        if (strcmp(origins[i], origin) == 0)
            return origins[i];
    return NULL;
}

size_t cors_headers(const char *allowed, bool preflight, const char *methods,
                    cors_header_t out[CORS_MAX_HEADERS])
{
    size_t n = 0;
    out[n++] = (cors_header_t){"Vary", "Origin"};
    if (allowed == NULL)
        return n;
    out[n++] = (cors_header_t){"Access-Control-Allow-Origin", allowed};
    if (!preflight) {
        out[n++] = (cors_header_t){"Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS};
        return n;
    }
    out[n++] = (cors_header_t){"Access-Control-Allow-Methods", methods != NULL ? methods : ""};
    out[n++] = (cors_header_t){"Access-Control-Allow-Headers", CORS_ALLOW_HEADERS};
    out[n++] = (cors_header_t){"Access-Control-Max-Age", CORS_MAX_AGE};
    return n;
}
