/* domain: the words and limits of the tax data that every layer shares,
 * stated once. The API's schemas, the store's record sizes, the engines and
 * the reports take their numbers and names from here, so a limit changes in
 * one place (docs/decisions.md, Identifiers, says why each is what it is).
 * Pure: no allocation, no state; every string returned is static. */
#ifndef TAXD_CORE_DOMAIN_H
#define TAXD_CORE_DOMAIN_H

#include <stdbool.h>

/* A limit as a string literal, for messages that quote it:
 * "<=" DOMAIN_TEXT(DOMAIN_ID_MAX) " bytes" is "<=256 bytes". The limit must
 * be a plain number, not an expression. */
#define DOMAIN_TEXT(limit) DOMAIN_TEXT_(limit)
#define DOMAIN_TEXT_(limit) #limit

/* The index of name in names (NULL-terminated), matched exactly, or -1 (also
 * for a NULL name): the parse of every list of names in the vocabulary. */
int domain_name_index(const char *const *names, const char *name);

/* ---- identifiers. A caller id (accounts, account owners, filers,
 * transactions, report account ids, credentials' client ids) is 1 to 256
 * bytes, and so at most 256 characters. Service ids are uuids: IDS_UUID_LEN in core/ids.h. */
#define DOMAIN_ID_MAX 256
#define DOMAIN_ID_SIZE (DOMAIN_ID_MAX + 1) /* a buffer for one, with its NUL */

/* The filer every tenant has from its creation, and the one an account
 * names when its create omits filer_id. */
#define DOMAIN_DEFAULT_FILER_ID "default"

/* ---- names and short texts (of accounts, account owners, filers, TIN
 * checks; address lines; the reasons of tax documentation): 1 to 256
 * characters; a buffer holds 4 UTF-8 bytes a character. A postal code is 1
 * to 32 characters. */
#define DOMAIN_NAME_MAX 256
#define DOMAIN_NAME_SIZE (4 * DOMAIN_NAME_MAX + 1)
#define DOMAIN_POSTAL_CODE_MAX 32

/* A country code (ISO 3166-1 alpha-2, as tax residences and addresses
 * name them) is two letters A-Z. */
bool domain_country_code_valid(const char *code);

/* ---- assets. A code is 1 to 32 of A-Z a-z 0-9 . _ - (ASCII: characters
 * and bytes agree); uniqueness within a tenant is an exact match. */
#define DOMAIN_ASSET_CODE_MAX 32
#define DOMAIN_ASSET_CODE_SIZE (DOMAIN_ASSET_CODE_MAX + 1)
#define DOMAIN_ASSET_NAME_MAX 128 /* characters */
#define DOMAIN_ASSET_NAME_SIZE (4 * DOMAIN_ASSET_NAME_MAX + 1)
#define DOMAIN_ASSET_DECIMALS_MAX 36
#define DOMAIN_ASSET_TYPE_SIZE 16 /* the longest type, "security", with room */

/* True when code follows the asset-code rule above (false for NULL). */
bool domain_asset_code_valid(const char *code);

/* The asset types, as the contract lists them: "crypto", "fiat", "nft",
 * "security"; NULL-terminated (a validator's enum). */
extern const char *const DOMAIN_ASSET_TYPES[];

/* The reporting currency: every tenant holds it from its creation and cannot
 * delete it; every cost basis, proceeds value and rate is in it. */
#define DOMAIN_REPORTING_CURRENCY "USD"

/* ---- cost basis methods. FIFO relieves the earliest acquisitions first,
 * LIFO the latest, HIFO the highest unit cost first, LOFO the lowest,
 * AUSTRIA keeps a moving average per asset (inventory/engine.h has the
 * detail, ties and lots without basis included). There is no average cost
 * for US digital assets.
 *
 * Two places name a method. An account's own cost_basis_method (stored on
 * the account, DOMAIN_ACCOUNT_METHOD_NAMES) applies wherever no disposition
 * method record is in force: FIFO unless the account chose otherwise; it has
 * an austria_tax_year exactly when it is AUSTRIA. A disposition method record
 * (a standing order for specific identification, effective from a datetime:
 * DOMAIN_DISPOSITION_METHOD_NAMES) applies to the disposals from its
 * effective_from until the next record's. */
typedef enum domain_method {
    DOMAIN_METHOD_FIFO,
    DOMAIN_METHOD_HIFO,
    DOMAIN_METHOD_AUSTRIA,
    DOMAIN_METHOD_LIFO,
    DOMAIN_METHOD_LOFO,
} domain_method_t;

#define DOMAIN_METHOD_DEFAULT DOMAIN_METHOD_FIFO
#define DOMAIN_METHOD_COUNT 5
#define DOMAIN_METHOD_SIZE 16 /* the longest name, "AUSTRIA", with room */

/* Every method by enum value: "FIFO", "HIFO", "AUSTRIA", "LIFO", "LOFO",
 * NULL. */
extern const char *const DOMAIN_METHOD_NAMES[];
/* What an account may be set to: "FIFO", "HIFO", "AUSTRIA", NULL (a
 * validator's enum; the accounts table's CHECK holds the same three). */
extern const char *const DOMAIN_ACCOUNT_METHOD_NAMES[];
/* What a disposition method record may name: "FIFO", "HIFO", "LIFO",
 * "LOFO", NULL (a validator's enum). */
extern const char *const DOMAIN_DISPOSITION_METHOD_NAMES[];

/* The method named name (any of DOMAIN_METHOD_NAMES); false (out untouched)
 * for anything else or NULL. */
bool domain_method_parse(const char *name, domain_method_t *out);
/* The method's name ("FIFO"); "" for a value outside the enum. */
const char *domain_method_name(domain_method_t method);

/* ---- US reporting of digital assets. A lot acquired in the account on or
 * after this instant (2026-01-01T00:00:00Z) is a covered security for
 * Form 1099-DA basis reporting (Treas. Reg. 1.6045-1(a)(15)(i)(J)); every
 * other lot (earlier, transferred in, or with a customer-provided basis) is
 * noncovered. Gross proceeds of digital assets are reported from tax year
 * DOMAIN_1099DA_FIRST_YEAR. */
#define DOMAIN_COVERED_FROM_MS INT64_C(1767225600000)
#define DOMAIN_1099DA_FIRST_YEAR 2025

/* ---- transaction types, in the order an inventory processes them at equal
 * datetimes: what comes in before what goes out. */
typedef enum domain_tx_type {
    DOMAIN_TX_DEPOSIT = 0,
    DOMAIN_TX_INCOME,
    DOMAIN_TX_TRADE,
    DOMAIN_TX_WITHDRAW,
    DOMAIN_TX_EXPENSE,
} domain_tx_type_t;

#define DOMAIN_TX_TYPE_COUNT 5
#define DOMAIN_TX_TYPE_SIZE 16 /* the longest name, "withdraw", with room */

/* The names as the contract lists them (a validator's enum, whose message
 * quotes this order): "trade", "deposit", "withdraw", "income", "expense",
 * NULL. */
extern const char *const DOMAIN_TX_TYPE_NAMES[];

/* The type named name; false (out untouched) for anything else or NULL. */
bool domain_tx_type_parse(const char *name, domain_tx_type_t *out);
/* The type's name ("deposit"); "" for a value outside the enum. */
const char *domain_tx_type_name(domain_tx_type_t type);

/* ---- amounts and rates of transactions. A line item's amount and a rate
 * are exact decimals (core/decimal.h: 18 fractional digits) of at most
 * DOMAIN_AMOUNT_INT_DIGITS and DOMAIN_RATE_INT_DIGITS integer digits; an
 * amount is > 0, a rate >= 0. A transaction has at most DOMAIN_TX_LINES_MAX
 * line items in each of its three arrays (sent, received, fees) and each
 * line at most DOMAIN_TX_RATES_MAX rates. With an account history of fewer
 * than 2^DOMAIN_HISTORY_BITS transactions, these are the premises of the
 * proof (docs/decisions.md, Amounts and the range of totals) that no total,
 * product or quotient of the inventory engine leaves core/decimal's range:
 * change one and redo the proof. */
#define DOMAIN_AMOUNT_INT_DIGITS 20
#define DOMAIN_RATE_INT_DIGITS 20
#define DOMAIN_TX_LINES_MAX 100
#define DOMAIN_TX_RATES_MAX 10
#define DOMAIN_HISTORY_BITS 48

/* ---- tax years an account or a tax form may name. A query's tax_year
 * (gains, their breakdown and report) is narrower: from
 * DOMAIN_QUERY_TAX_YEAR_MIN to next year (the clock's). */
#define DOMAIN_TAX_YEAR_MIN 2000
#define DOMAIN_TAX_YEAR_MAX 2100
#define DOMAIN_QUERY_TAX_YEAR_MIN 2009

/* ---- a batch (POST of an array of assets or transactions): 1 to 1,000
 * elements. */
#define DOMAIN_BATCH_MAX 1000

#endif
