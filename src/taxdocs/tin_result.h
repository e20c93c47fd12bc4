/* taxdocs/tin_result: what a W-9's TIN check result does to the owner's tax
 * documentation. The TIN check engine (src/tincheck/) calls it inside the
 * write transaction that records the check's result, so the W-9's
 * tin_status, the TAX_DOCUMENTATION_TIN_VALIDATION event and the
 * ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS event commit together. */
#ifndef TAXD_TAXDOCS_TIN_RESULT_H
#define TAXD_TAXDOCS_TIN_RESULT_H

#include <stdint.h>

#include "store/store.h"

/* status: the TIN verification result (src/tincheck/ documents the values);
 * validated_at: ms since the epoch. Runs inside store_write. */
store_status_t taxdocs_record_tin_result_in_tx(store_conn_t *conn, const char *tenant_id,
                                               const char *tax_documentation_id,
                                               const char *status, int64_t validated_at,
                                               int64_t now);

#endif
