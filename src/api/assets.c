/* assets: being written (placeholder so the route table links). */
#include "api/api.h"

void api_assets_create(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_assets_list(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_assets_get(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_assets_delete(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}
