/* account_owners: being written (placeholder so the route table links). */
#include "api/api.h"

void api_owners_create(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_owners_list(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_owners_get(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_owners_update(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}
