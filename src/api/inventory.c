/* inventory: being written (placeholder so the route table links). */
#include "api/api.h"

void api_inventory_summaries(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_inventory_lots(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_transfer_lots(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}

void api_withholding_austria(request_t *req)
{
    reply_error(req, 501, "Not implemented yet");
}
