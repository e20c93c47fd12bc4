/* taxdocs/document: a stored submission opened again, in both models.
 * The sealed document is opened with the TIN key (and a native W-9's TIN,
 * sealed apart, put back), then whichever model it was not submitted in is
 * derived: a COMPREHENSIVE body gives its native document through
 * taxdocs_comprehensive_check (the rules as of its own submission time), a
 * native one gives the COMPREHENSIVE model through
 * taxdocs_comprehensive_from_native. The SDK's read-back, the server-side
 * GET and the PDF all start here. Clear TINs live only in the returned JSON:
 * close it as soon as it is answered. */
#ifndef TAXD_TAXDOCS_DOCUMENT_H
#define TAXD_TAXDOCS_DOCUMENT_H

#include <stdint.h>

#include <jansson.h>

#include "core/domain.h"
#include "store/store.h"
#include "store/taxdocs.h"
#include "taxdocs/model.h"

typedef struct taxdocs_document {
    store_taxdoc_t row;
    taxdocs_type_t type;
    json_t *native;         /* owned: the native document, TINs in clear */
    json_t *comprehensive;  /* owned: Taxbit's model, TINs in clear */
    char signature[DOMAIN_NAME_SIZE]; /* the typed signature; "" for a native submission */
} taxdocs_document_t;

/* Opens submission id of the tenant into *out (close it with
 * taxdocs_document_close, also after a failure). STORE_NOT_FOUND when the
 * tenant has no such submission; STORE_ERROR (logged without any value)
 * when it cannot be opened or converted. Outside a transaction. */
store_status_t taxdocs_document_open(store_conn_t *conn, const uint8_t *tin_key,
                                     const char *tenant_id, const char *id,
                                     taxdocs_document_t *out);

void taxdocs_document_close(taxdocs_document_t *d);

#endif
