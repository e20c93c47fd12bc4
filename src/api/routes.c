/* routes: the one table of every endpoint. Matching does not depend on the
 * order (literal segments beat parameters); the order is that of the metrics
 * labels. scopes = 0 marks a route that needs no token. The test-only routes
 * come last so that without --test-hooks the table simply ends before them. */
#include "api/api.h"

#include "http/token.h"

/* 50,000 account ids of 256 ASCII characters, quoted and comma-separated. */
#define REPORT_TRIGGER_MAX_BODY (16u * 1024 * 1024)
/* A batch of 1,000 transactions (docs/decisions.md, Batch upserts). */
#define TX_UPSERT_MAX_BODY (16u * 1024 * 1024)
/* Taxbit's SDK routes: the owner comes from an owner token, browsers call by CORS */
#define SDK_ROUTE (ROUTE_OWNER | ROUTE_OWNER_ONLY | ROUTE_CORS)

static const route_t ROUTES[] = {
    {"POST", "/v1/oauth/token", 0, 0, (void *)api_oauth_token, 0, 0},
    {"POST", "/v1/oauth/account-owner-token", 0, 0, (void *)api_oauth_owner_token, 0, 0},
    {"GET", "/healthz", 0, 0, (void *)api_healthz, 0, ROUTE_INLINE},
    {"GET", "/livez", 0, 0, (void *)api_livez, 0, ROUTE_INLINE},
    /* not inline: it reads (and may probe) the database, under a 1 s deadline */
    {"GET", "/readyz", 0, 0, (void *)api_readyz, 0, 0},
    {"GET", "/metrics", 0, 0, (void *)api_metrics, 0, ROUTE_INLINE},
    {"POST", "/v1/account-owners", SCOPE_ACCOUNTS, 0, (void *)api_owners_create, 0, 0},
    {"GET", "/v1/account-owners", SCOPE_ACCOUNTS, 0, (void *)api_owners_list, 0, 0},
    {"GET", "/v1/account-owners/{accountOwnerId}", SCOPE_ACCOUNTS, 0, (void *)api_owners_get, 0,
     ROUTE_OWNER},
    {"PATCH", "/v1/account-owners/{accountOwnerId}", SCOPE_ACCOUNTS, 0,
     (void *)api_owners_update, 0, ROUTE_OWNER},
    {"POST", "/v1/accounts", SCOPE_ACCOUNTS, 0, (void *)api_accounts_create, 0, 0},
    {"GET", "/v1/accounts", SCOPE_ACCOUNTS, 0, (void *)api_accounts_list, 0, 0},
    {"GET", "/v1/accounts/{accountId}", SCOPE_ACCOUNTS, 0, (void *)api_accounts_get, 0, 0},
    {"PATCH", "/v1/accounts/{accountId}", SCOPE_ACCOUNTS, 0, (void *)api_accounts_update, 0, 0},
    {"POST", "/v1/assets", SCOPE_ASSETS, 0, (void *)api_assets_create, 0, 0},
    {"GET", "/v1/assets", SCOPE_ASSETS, 0, (void *)api_assets_list, 0, 0},
    {"GET", "/v1/assets/{assetId}", SCOPE_ASSETS, 0, (void *)api_assets_get, 0, 0},
    {"DELETE", "/v1/assets/{assetId}", SCOPE_ASSETS, 0, (void *)api_assets_delete, 0, 0},
    {"POST", "/v1/filers", SCOPE_ACCOUNTS, 0, (void *)api_filers_create, 0, 0},
    {"GET", "/v1/filers", SCOPE_ACCOUNTS, 0, (void *)api_filers_list, 0, 0},
    {"GET", "/v1/filers/{filerId}", SCOPE_ACCOUNTS, 0, (void *)api_filers_get, 0, 0},
    {"PATCH", "/v1/filers/{filerId}", SCOPE_ACCOUNTS, 0, (void *)api_filers_update, 0, 0},
    {"DELETE", "/v1/filers/{filerId}", SCOPE_ACCOUNTS, 0, (void *)api_filers_delete, 0, 0},
    {"POST", "/v1/transactions/external-id", SCOPE_TRANSACTIONS, TX_UPSERT_MAX_BODY,
     (void *)api_transactions_upsert, 0, 0},
    {"GET", "/v1/transactions/external-id/{transactionId}", SCOPE_TRANSACTIONS, 0,
     (void *)api_transactions_get, 0, 0},
    {"DELETE", "/v1/transactions/external-id/{transactionId}", SCOPE_TRANSACTIONS, 0,
     (void *)api_transactions_delete, 0, 0},
    {"GET", "/v1/inventory/summaries", SCOPE_INVENTORY, 0, (void *)api_inventory_summaries, 0, 0},
    {"GET", "/v1/inventory", SCOPE_INVENTORY, 0, (void *)api_inventory_lots, 0, 0},
    {"GET", "/v1/transfer-lots/transactions/{transactionId}", SCOPE_INVENTORY, 0,
     (void *)api_transfer_lots, 0, 0},
    /* issue 16: disposition method records and customer-provided transfer lots */
    {"POST", "/v1/accounts/{accountId}/disposition-methods-history", SCOPE_INVENTORY, 0,
     (void *)api_dispositions_create, 0, 0},
    {"GET", "/v1/accounts/{accountId}/disposition-methods-history", SCOPE_INVENTORY, 0,
     (void *)api_dispositions_list, 0, 0},
    {"PATCH", "/v1/accounts/{accountId}/disposition-methods-history/{recordId}", SCOPE_INVENTORY,
     0, (void *)api_dispositions_update, 0, 0},
    {"DELETE", "/v1/accounts/{accountId}/disposition-methods-history/{recordId}",
     SCOPE_INVENTORY, 0, (void *)api_dispositions_delete, 0, 0},
    {"POST", "/v1/transfer-lots/transactions/{transactionId}", SCOPE_INVENTORY, 0,
     (void *)api_transfer_lots_set, 0, 0},
    {"DELETE", "/v1/transfer-lots/transactions/{transactionId}", SCOPE_INVENTORY, 0,
     (void *)api_transfer_lots_clear, 0, 0},
    {"GET", "/v1/withholding/austria", SCOPE_INVENTORY, 0, (void *)api_withholding_austria, 0, 0},
    {"GET", "/v1/gains", SCOPE_INVENTORY, 0, (void *)api_gains_list, 0, 0},
    {"GET", "/v1/gains/breakdown", SCOPE_INVENTORY, 0, (void *)api_gains_breakdown, 0, 0},
    {"GET", "/v1/gains/summary", SCOPE_INVENTORY, 0, (void *)api_gains_summary, 0, 0},
    {"GET", "/v1/accounts/{accountId}/transactions", SCOPE_TRANSACTIONS, 0,
     (void *)api_account_transactions, 0, 0},
    {"GET", "/v1/accounts/{accountId}/income", SCOPE_TRANSACTIONS, 0,
     (void *)api_account_income, 0, 0},
    {"POST", "/v1/reports/inventory-summary", SCOPE_REPORTS, REPORT_TRIGGER_MAX_BODY,
     (void *)api_reports_trigger, 0, 0},
    {"GET", "/v1/reports/inventory-summary/{reportId}", SCOPE_REPORTS, 0,
     (void *)api_reports_get, 0, 0},
    /* no token: the signed link is the credential */
    {"GET", "/v1/reports/inventory-summary/{reportId}/download", 0, 0,
     (void *)api_reports_download, 0, 0},
    {"POST", "/v1/reports/gains", SCOPE_REPORTS, REPORT_TRIGGER_MAX_BODY,
     (void *)api_reports_gains_trigger, 0, 0},
    {"GET", "/v1/reports/gains/{reportId}", SCOPE_REPORTS, 0, (void *)api_reports_gains_get, 0, 0},
    /* no token: the signed link is the credential */
    {"GET", "/v1/reports/gains/{reportId}/download", 0, 0, (void *)api_reports_gains_download,
     0, 0},
    {"POST", "/v1/tin-validations", SCOPE_TAX_DOCUMENTS, 0, (void *)api_tin_validations_create, 0, 0},
    {"GET", "/v1/tin-validations/{validationId}", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_tin_validations_get, 0, 0},
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_tax_documentation_submit, 0, ROUTE_OWNER},
    {"GET", "/v1/account-owners/{accountOwnerId}/tax-documentation", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_tax_documentation_get, 0, ROUTE_OWNER},
    {"GET", "/v1/tax-documents", SCOPE_TAX_DOCUMENTS, 0, (void *)api_tax_documents_list, 0, 0},
    /* Taxbit's SDK (issue 19): an owner token names the owner; browsers by CORS */
    {"GET", "/v1/tax-documentation-status", SCOPE_TAX_DOCUMENTS, 0, (void *)api_sdk_status_get, 0,
     SDK_ROUTE},
    {"POST", "/v1/tax-documentation/submissions", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_sdk_submission_create, 0, SDK_ROUTE | ROUTE_TEXT_JSON},
    {"GET", "/v1/tax-documentation/submissions", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_sdk_submissions_get, 0, SDK_ROUTE},
    {"POST", "/v1/tax-documentation/document", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_sdk_document_create, 0, SDK_ROUTE | ROUTE_TEXT_JSON},
    {"GET", "/v1/tax-documentation/document/{documentId}", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_sdk_document_get, 0, SDK_ROUTE},
    /* no token: the signed link is the credential */
    {"GET", "/v1/tax-documentation/document/{documentId}/download", 0, 0,
     (void *)api_tax_documentation_download, 0, ROUTE_CORS},
    /* Taxbit's server-side routes for the same data (tenant token, or the owner's own) */
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/w-9", SCOPE_TAX_DOCUMENTS,
     0, (void *)api_tdd_submit_w9, 0, ROUTE_OWNER},
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/w-8ben",
     SCOPE_TAX_DOCUMENTS, 0, (void *)api_tdd_submit_w8ben, 0, ROUTE_OWNER},
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/w-8ben-e",
     SCOPE_TAX_DOCUMENTS, 0, (void *)api_tdd_submit_w8bene, 0, ROUTE_OWNER},
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/self-certification",
     SCOPE_TAX_DOCUMENTS, 0, (void *)api_tdd_submit_self_certification, 0, ROUTE_OWNER},
    {"GET", "/v1/account-owners/{accountOwnerId}/tax-documentation-data", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_tdd_data_get, 0, ROUTE_OWNER},
    {"GET", "/v1/account-owners/{accountOwnerId}/tax-documentation-status", SCOPE_TAX_DOCUMENTS, 0,
     (void *)api_tdd_status_get, 0, ROUTE_OWNER},
    {"POST", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/document",
     SCOPE_TAX_DOCUMENTS, 0, (void *)api_tdd_document_create, 0, ROUTE_OWNER},
    {"GET", "/v1/account-owners/{accountOwnerId}/tax-documentation-data/document/{documentId}",
     SCOPE_TAX_DOCUMENTS, 0, (void *)api_tdd_document_get, 0, ROUTE_OWNER},
    /* test hooks */
    {"POST", "/_test/clock", 0, 0, (void *)api_test_clock, 0, 0},
    {"GET", "/_test/pause", 0, 0, (void *)api_test_pause, 0, 0},
    {"POST", "/_test/store-fault", 0, 0, (void *)api_test_store_fault, 0, 0},
};

#define TEST_ROUTE_COUNT 3

const route_t *api_routes(bool test_hooks, size_t *count)
{
    size_t all = sizeof ROUTES / sizeof ROUTES[0];
    *count = test_hooks ? all : all - TEST_ROUTE_COUNT;
    return ROUTES;
}
