/* scopes: what a credential may reach, the domain's names for groups of
 * routes ("reports", "accounts", ...). A credential and the token minted
 * from it carry a bit set of them; the route table names the one each route
 * needs; the operator's commands parse and print them. Pure functions, no
 * allocation. */
#ifndef TAXD_CORE_SCOPES_H
#define TAXD_CORE_SCOPES_H

#include <stddef.h>

/* Scopes are a bit set. No scope at all means "every tenant route". */
enum scope {
    SCOPE_REPORTS = 1u << 0,        /* reports */
    SCOPE_ACCOUNTS = 1u << 1,       /* account owners, accounts, filers */
    SCOPE_ASSETS = 1u << 2,         /* assets */
    SCOPE_TRANSACTIONS = 1u << 3,   /* transactions */
    SCOPE_INVENTORY = 1u << 4,      /* inventory, transfer lots, withholding */
    SCOPE_TAX_DOCUMENTS = 1u << 5,  /* TIN validations, tax documentation, forms */
};
#define SCOPE_ALL 0x3fu

/* Parses "reports,accounts" or "reports accounts" (commas and/or spaces) into a
 * bit set. Returns 0, or -1 naming no known scope (then *bad points at the
 * unknown name inside the input, and *bad_len is its length). An empty string
 * gives 0 (no scope). */
int scopes_parse(const char *text, unsigned *scopes, const char **bad, size_t *bad_len);
/* Writes the names of the set bits, space-separated, in the order above. */
void scopes_format(unsigned scopes, char *dst, size_t dst_cap);

#endif
