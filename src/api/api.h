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
#include "core/domain.h"
#include "http/request.h"
#include "http/router.h"
#include "core/validate.h"

/* The route table. Test-only routes are included only when test_hooks is on.
 * The returned array is static and read-only. */
const route_t *api_routes(bool test_hooks, size_t *count);

/* src/api/oauth.c */
void api_oauth_token(request_t *req);
void api_oauth_owner_token(request_t *req);
/* src/api/health.c */
void api_healthz(request_t *req);
void api_livez(request_t *req);
void api_readyz(request_t *req);
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
/* src/api/gains.c */
void api_gains_list(request_t *req);
void api_gains_breakdown(request_t *req);
void api_gains_summary(request_t *req);
/* src/api/activity.c */
void api_account_transactions(request_t *req);
void api_account_income(request_t *req);
/* src/api/dispositions.c (issue 16: disposition method records) */
void api_dispositions_create(request_t *req);
void api_dispositions_list(request_t *req);
void api_dispositions_update(request_t *req);
void api_dispositions_delete(request_t *req);
/* src/api/transfer_lots.c (issue 16: customer-provided lots of a deposit).
 * api_transfer_lots_deposit answers GET /v1/transfer-lots/transactions/{id}
 * for a deposit (inventory.c routes the GET). */
void api_transfer_lots_set(request_t *req);
void api_transfer_lots_clear(request_t *req);
void api_transfer_lots_deposit(request_t *req, store_conn_t *db, const char *tx_id);
/* src/api/reports.c. The trigger's route key, under which app/ gives it a
 * default rate limit of its own (docs/decisions.md, "Report triggers are
 * bounded"). */
#define API_REPORTS_TRIGGER_ROUTE "POST /v1/reports/inventory-summary"
void api_reports_trigger(request_t *req);
void api_reports_get(request_t *req);
void api_reports_download(request_t *req);
/* The gains report (issue 16): the same mechanics, its own routes. */
#define API_REPORTS_GAINS_TRIGGER_ROUTE "POST /v1/reports/gains"
void api_reports_gains_trigger(request_t *req);
void api_reports_gains_get(request_t *req);
void api_reports_gains_download(request_t *req);
/* src/api/tin_validations.c */
void api_tin_validations_create(request_t *req);
void api_tin_validations_get(request_t *req);
/* src/api/tax_documentation.c */
void api_tax_documentation_submit(request_t *req);
void api_tax_documentation_get(request_t *req);

/* src/api/taxbit_sdk.c: Taxbit's SDK routes (an owner token names the owner) */
void api_sdk_status_get(request_t *req);
void api_sdk_submission_create(request_t *req);
void api_sdk_submissions_get(request_t *req);
void api_sdk_document_create(request_t *req);
void api_sdk_document_get(request_t *req);
void api_tax_documentation_download(request_t *req);

/* src/api/tax_documentation_data.c: Taxbit's server-side routes */
void api_tdd_submit_w9(request_t *req);
void api_tdd_submit_w8ben(request_t *req);
void api_tdd_submit_w8bene(request_t *req);
void api_tdd_submit_self_certification(request_t *req);
void api_tdd_data_get(request_t *req);
void api_tdd_status_get(request_t *req);
void api_tdd_document_create(request_t *req);
void api_tdd_document_get(request_t *req);
/* src/api/tax_documents.c */
void api_tax_documents_list(request_t *req);
/* src/api/testhooks.c (only routed with --test-hooks) */
void api_test_clock(request_t *req);
void api_test_pause(request_t *req);
void api_test_store_fault(request_t *req);

/* ---- src/api/common.c: shared by every resource handler */

/* The issue of a caller id over DOMAIN_ID_MAX bytes that the schema let
 * through (it counts characters). */
#define API_ID_TOO_BIG "Too big: expected id to have <=" DOMAIN_TEXT(DOMAIN_ID_MAX) " bytes"

/* A paged list (GET /v1/account-owners, /v1/accounts, /v1/assets,
 * /v1/filers): ?limit= (1..100, default 25) and ?cursor= (an opaque token
 * from meta.next_cursor) are read by api_list, and the resource's fetch
 * fills the page from the store. */
typedef struct api_page {
    request_t *req;
    size_t limit;
    const char *after; /* the key the page starts after; "" for the first page */
    json_t *items;     /* owned by api_list */
    bool more;         /* set by the fetch: records follow the page */
    bool failed;       /* an item could not be made (api_page_add) */
    /* Set by a fetch whose key is not a member of its items (the gains'
     * relief seq, a transaction list's datetime and id): the last item's
     * key, request-arena memory; NULL: key_field of the last item. */
    const char *last_key;
    bool bad_cursor;   /* set by the fetch: `after` is no key it made (400) */
} api_page_t;

/* Adds item (stolen) to the page: 0 to go on, or 1 (the page failed) when
 * item is NULL or cannot be added; the return value of a store list's
 * callback. */
int api_page_add(api_page_t *page, json_t *item);

/* Lists page->limit records of the request's tenant after page->after,
 * adding each with api_page_add and setting page->more; returns the
 * store's status. arg is api_list's. */
typedef store_status_t (*api_page_fetch_fn)(store_conn_t *db, api_page_t *page, const void *arg);

/* Answers a paged list: 400 for an invalid ?limit= or ?cursor=, the store's
 * failure, 500 (api_internal_error) when an item could not be made, else
 * 200 {"data": items, "meta": {"next_cursor": ...}}, the cursor naming the
 * last item's string member key_field ("id", "code"). */
void api_list(request_t *req, const char *key_field, api_page_fetch_fn fetch, const void *arg);
/* Parses the JSON body and checks it against schema; on failure answers 400
 * ("Invalid <what>" with issues, or the parse error) and returns NULL. The
 * value belongs to the request. */
json_t *api_read_body(request_t *req, const v_schema *schema, const char *what);
/* A string, or null for NULL or "" (absent optional values answer null). */
json_t *api_string_or_null(const char *s);
/* Maps a failed store call: STORE_TIMEOUT -> 504, anything else ->
 * reply_internal_error (the store logged the detail). */
void reply_store_failure(request_t *req, store_status_t status);
/* A failure that is not the store's (memory ran out, no uuid could be made,
 * a stored value that does not parse): request_log_failure(req, what), then
 * the 500 a store failure answers (reply_internal_error). A route whose 500
 * has a shape of its own (POST /v1/transactions) logs the same line and
 * answers its own body. */
void api_internal_error(request_t *req, const char *what);
/* A step that failed in the store (st is not STORE_OK: reply_store_failure)
 * or, with st STORE_OK, outside it (api_internal_error(req, what)). */
void api_fail(request_t *req, store_status_t st, const char *what);
/* The request's database connection, or NULL after answering 500. */
store_conn_t *api_db(request_t *req);
/* Whether the signed link (?expires, ?nonce, ?signature) names the path
 * parameter id_param; false after answering 403 (reason expired or
 * invalid_signature). Touches no database. */
bool api_link_ok(request_t *req, const char *id_param);
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
/* A date query parameter YYYY-MM-DD (a real calendar date): true with *ms
 * its 00:00:00Z when present and valid; an issue when it is invalid, or
 * absent and required. */
bool api_query_date(request_t *req, const char *name, bool required, json_t *issues,
                    bool *malformed, int64_t *ms);
/* ?start_date= and ?end_date= (both inclusive UTC days) as [*from_ms,
 * *to_ms); an absent optional end is open. An issue on start_date when it
 * is after end_date (false). */
bool api_query_period(request_t *req, bool required, json_t *issues, bool *malformed,
                      int64_t *from_ms, int64_t *to_ms);

#endif
