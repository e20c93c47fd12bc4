/* core/jsonval: JSON values in the service's formats (jsonval.h). */
#include "core/jsonval.h"

#include "core/clock.h"

json_t *jsonval_time(int64_t ms)
{
    char text[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(ms, text);
    return json_string(text);
}

json_t *jsonval_time_or_null(int64_t ms)
{
    return ms > 0 ? jsonval_time(ms) : json_null();
}
