/* accounts: being written (placeholder so the route table links). */
#include "api/api.h"

void api_accounts_create(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_accounts_list(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_accounts_get(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_accounts_update(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}
