/* PLACEHOLDER until the tax documentation module lands: records nothing. */
#include "taxdocs/tin_result.h"

store_status_t taxdocs_record_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                               const char *tax_documentation_id,
                                               const char *status, int64_t validated_at,
                                               int64_t now)
{
    (void)conn, (void)tenant_id, (void)tax_documentation_id, (void)status, (void)validated_at,
        (void)now;
    return STORE_OK;
}
