/* taxdocs/taxbit_map: taxd's stored state of tax documentation in the words
 * of Taxbit's SDK (docs/taxbit-sdk.md § 4). Only the SDK's routes and the
 * server-side tax-documentation-status route answer these; the webhook
 * events and the native GET keep taxd's values, so webhook payloads do not
 * change. The mapping table is written here once, and in docs/decisions.md.
 * Pure: no SQL, no clock. */
#ifndef TAXD_TAXDOCS_TAXBIT_MAP_H
#define TAXD_TAXDOCS_TAXBIT_MAP_H

#include <jansson.h>

#include "store/taxdocs.h"

/* Taxbit's tin_status of a W-form row: PENDING, VALID_SSN_MATCH,
 * VALID_EIN_MATCH, INVALID_DATA, MISMATCH or ERROR for a W-9 (its tin_type
 * tells SSN from EIN matches), FOREIGN for a W-8. */
const char *taxbit_tin_status(const store_taxdoc_t *row);

/* Taxbit's vat_status of a DPS row: VALID, INVALID, NON_EU, NOT_REQUIRED or
 * INSUFFICIENT_DATA. */
const char *taxbit_vat_status(const store_taxdoc_t *row);

/* The SDK's status answer from an owner's current rows (any order; rows
 * other than DPS and W-forms are left out): {"dps_questionnaire"?,
 * "w_form_questionnaire"?}, {} when neither is on file. Dates are RFC 3339.
 * New reference, or NULL when out of memory. */
json_t *taxbit_status_json(const store_taxdoc_t *rows, size_t count);

#endif
