/* admin/forms: `taxd admin forms ...`, the operator's tax forms (spec § Tax
 * form status): generate, file, delete and show. The state machine is
 * forms/state.h and the operations forms/forms.h; this file parses flags,
 * names the records involved and prints JSON (a refused transition exits
 * non-zero with {"error": ...} on stderr and changes nothing). */
#ifndef TAXD_ADMIN_FORMS_H
#define TAXD_ADMIN_FORMS_H

#include "admin/cli.h"

/* Each returns the process exit status (0, EXIT_REFUSED, EXIT_USAGE). */
int admin_forms_generate(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_forms_file(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_forms_delete(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
int admin_forms_show(const admin_context_t *ctx, store_conn_t *db, const args_t *a);

#endif
