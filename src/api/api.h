/* api: the resource handlers, one file per resource group, and the route
 * table that maps each "METHOD /template" to its handler and token scopes.
 * A handler runs after the gateway's phases (api/gateway.h), speaks HTTP and
 * JSON through src/http/request.h, reaches what the service shares through
 * its api_context_t (api_ctx(req)) and the database only through src/store/. */
#ifndef TAXD_API_API_H
#define TAXD_API_API_H

#include <stdbool.h>
#include <stddef.h>

#include "api/context.h"
#include "api/gateway.h"
#include "http/request.h"
#include "http/router.h"
#include "core/validate.h"

/* The route table. Test-only routes are included only when test_hooks is on.
 * The returned array is static and read-only. */
const route_t *api_routes(bool test_hooks, size_t *count);

/* src/api/oauth.c */
void api_oauth_token(request_t *req);
/* src/api/health.c */
void api_healthz(request_t *req);
void api_metrics(request_t *req);
/* src/api/account_owners.c */
void api_owners_create(request_t *req);
void api_owners_list(request_t *req);
void api_owners_get(request_t *req);
void api_owners_update(request_t *req);
/* src/api/accounts.c */
void api_accounts_create(request_t *req);
void api_accounts_list(request_t *req);
void api_accounts_get(request_t *req);
void api_accounts_update(request_t *req);
/* src/api/assets.c */
void api_assets_create(request_t *req);
void api_assets_list(request_t *req);
void api_assets_get(request_t *req);
void api_assets_delete(request_t *req);
/* src/api/filers.c */
void api_filers_create(request_t *req);
void api_filers_get(request_t *req);
void api_filers_list(request_t *req);
void api_filers_update(request_t *req);
void api_filers_delete(request_t *req);
/* src/api/transactions.c */
void api_transactions_upsert(request_t *req);
void api_transactions_get(request_t *req);
void api_transactions_delete(request_t *req);
/* src/api/inventory.c */
void api_inventory_summaries(request_t *req);
void api_inventory_lots(request_t *req);
void api_transfer_lots(request_t *req);
void api_withholding_austria(request_t *req);
/* src/api/reports.c */
void api_reports_trigger(request_t *req);
void api_reports_get(request_t *req);
void api_reports_download(request_t *req);
/* src/api/tin_validations.c */
void api_tin_validations_create(request_t *req);
void api_tin_validations_get(request_t *req);
/* src/api/tax_documentation.c */
void api_tax_documentation_submit(request_t *req);
void api_tax_documentation_get(request_t *req);
/* src/api/tax_documents.c */
void api_tax_documents_list(request_t *req);
/* src/api/testhooks.c (only routed with --test-hooks) */
void api_test_clock(request_t *req);
void api_test_pause(request_t *req);
void api_test_store_fault(request_t *req);

/* ---- src/api/common.c: shared by every resource handler */

/* Parses ?limit= (1..100, default 25) and ?cursor=; *after receives the
 * decoded key the page starts after ("" for the first page, arena-owned).
 * On invalid input answers 400 itself and returns false. */
bool api_page_params(request_t *req, size_t *limit, const char **after);
/* meta.next_cursor: the opaque cursor after last_key, or null when !more. */
json_t *api_next_cursor(const char *last_key, bool more);
/* Answers 200 {"data": items, "meta": {"next_cursor": ...}} (items stolen). */
void api_reply_page(request_t *req, json_t *items, const char *last_key, bool more);
/* Parses the JSON body and checks it against schema; on failure answers 400
 * ("Invalid <what>" with issues, or the parse error) and returns NULL. The
 * value belongs to the request. */
json_t *api_read_body(request_t *req, const v_schema *schema, const char *what);
/* A string, or null for NULL or "" (absent optional values answer null). */
json_t *api_string_or_null(const char *s);
/* Maps a failed store call: STORE_TIMEOUT -> 504, anything else -> 500. */
void reply_store_failure(request_t *req, store_status_t status);
/* The request's database connection, or NULL after answering 500. */
store_conn_t *api_db(request_t *req);
/* The outcome of reading the record `what` ("Filer") with caller id `id`:
 * true for STORE_OK; otherwise answers 404 "<what> with id '<id>' not
 * found" for STORE_NOT_FOUND, or the store failure's status, and returns
 * false. */
bool api_found(request_t *req, store_status_t rc, const char *what, const char *id);
/* Query parameters of the read routes: each problem is added to issues
 * (an array) in the validation shape, and api_query_ok answers 400 for a
 * malformed query string or any issue (issues stolen) and returns false.
 * api_query_text: a required non-empty string (NULL when it is not one;
 * *malformed set when the query string cannot be decoded). api_query_year:
 * text (NULL when absent) as a base-10 integer in [min, max]. */
const char *api_query_text(request_t *req, const char *name, json_t *issues, bool *malformed);
bool api_query_year(const char *text, const char *name, int min, int max, json_t *issues,
                    int *year);
bool api_query_ok(request_t *req, bool malformed, json_t *issues);

#endif
