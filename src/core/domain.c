/* domain: the rules and names of domain.h. Names are matched exactly (case
 * matters): what the contract spells is what is accepted and stored. */
#include "core/domain.h"

#include <stddef.h>
#include <string.h>

int domain_name_index(const char *const *names, const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

bool domain_country_code_valid(const char *code)
{
    return code != NULL && strlen(code) == 2 && code[0] >= 'A' && code[0] <= 'Z' &&
           code[1] >= 'A' && code[1] <= 'Z';
}

bool domain_asset_code_valid(const char *code)
{
    if (code == NULL)
        return false;
    size_t len = 0;
    for (; code[len] != '\0'; len++) {
        unsigned char c = (unsigned char)code[len];
        if (len == DOMAIN_ASSET_CODE_MAX)
            return false;
        /* isalnum is locale-dependent: spell the ASCII classes out. */
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return len > 0;
}

const char *const DOMAIN_ASSET_TYPES[] = {"crypto", "fiat", "nft", "security", NULL};

/* Indexed by domain_method_t. */
const char *const DOMAIN_METHOD_NAMES[] = {"FIFO", "HIFO", "AUSTRIA", "LIFO", "LOFO", NULL};
const char *const DOMAIN_ACCOUNT_METHOD_NAMES[] = {"FIFO", "HIFO", "AUSTRIA", NULL};
const char *const DOMAIN_DISPOSITION_METHOD_NAMES[] = {"FIFO", "HIFO", "LIFO", "LOFO", NULL};

bool domain_method_parse(const char *name, domain_method_t *out)
{
    int i = domain_name_index(DOMAIN_METHOD_NAMES, name);
    if (i < 0)
        return false;
    *out = (domain_method_t)i;
    return true;
}

const char *domain_method_name(domain_method_t method)
{
    return (unsigned)method < DOMAIN_METHOD_COUNT ? DOMAIN_METHOD_NAMES[method] : "";
}

#define TX_DEPOSIT "deposit"
#define TX_INCOME "income"
#define TX_TRADE "trade"
#define TX_WITHDRAW "withdraw"
#define TX_EXPENSE "expense"

const char *const DOMAIN_TX_TYPE_NAMES[] = {TX_TRADE, TX_DEPOSIT, TX_WITHDRAW, TX_INCOME,
                                            TX_EXPENSE, NULL};

_Static_assert(DOMAIN_TX_EXPENSE + 1 == DOMAIN_TX_TYPE_COUNT, "a type for every name");

/* Indexed by domain_tx_type_t (processing order), unlike the contract's list. */
static const char *const TX_TYPE_BY_VALUE[DOMAIN_TX_TYPE_COUNT + 1] = {
    [DOMAIN_TX_DEPOSIT] = TX_DEPOSIT, [DOMAIN_TX_INCOME] = TX_INCOME,
    [DOMAIN_TX_TRADE] = TX_TRADE,     [DOMAIN_TX_WITHDRAW] = TX_WITHDRAW,
    [DOMAIN_TX_EXPENSE] = TX_EXPENSE, [DOMAIN_TX_TYPE_COUNT] = NULL};

bool domain_tx_type_parse(const char *name, domain_tx_type_t *out)
{
    int i = domain_name_index(TX_TYPE_BY_VALUE, name);
    if (i < 0)
        return false;
    *out = (domain_tx_type_t)i;
    return true;
}

const char *domain_tx_type_name(domain_tx_type_t type)
{
    return (unsigned)type < DOMAIN_TX_TYPE_COUNT ? TX_TYPE_BY_VALUE[type] : "";
}
