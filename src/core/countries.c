/* countries: see countries.h.
 *
 * The tables are sorted, so a lookup is a binary search over two-letter
 * codes. The ISO list is the one Taxbit's client offers (@taxbit/utilities
 * 0.2.2 countryCodes: the 249 officially assigned ISO 3166-1 alpha-2 codes),
 * so what its country selects can produce and what taxd accepts are the same
 * set. The US list is its usStateCodes (60: the 50 states, DC and the nine
 * territories and freely associated states; no military AA/AE/AP, which the
 * client never offers). */
#include "core/countries.h"

#include <stdlib.h>
#include <string.h>

typedef char code_t[3];

static const code_t ISO[] = {
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX",
    "AZ", "BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ",
    "BR", "BS", "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK",
    "CL", "CM", "CN", "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM",
    "DO", "DZ", "EC", "EE", "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR",
    "GA", "GB", "GD", "GE", "GF", "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS",
    "GT", "GU", "GW", "GY", "HK", "HM", "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN",
    "IO", "IQ", "IR", "IS", "IT", "JE", "JM", "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN",
    "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT", "LU", "LV",
    "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ",
    "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA", "NC", "NE", "NF", "NG", "NI",
    "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM",
    "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW", "SA", "SB", "SC",
    "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS", "ST", "SV",
    "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO", "TR",
    "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
    "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW"
};

/* The EU 27, by ISO code. */
static const code_t EU[] = {
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU",
    "IE", "IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
};

static const code_t US_STATES[] = {
    "AK", "AL", "AR", "AS", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "FM", "GA", "GU", "HI",
    "IA", "ID", "IL", "IN", "KS", "KY", "LA", "MA", "MD", "ME", "MH", "MI", "MN", "MO", "MP",
    "MS", "MT", "NC", "ND", "NE", "NH", "NJ", "NM", "NV", "NY", "OH", "OK", "OR", "PA", "PR",
    "PW", "RI", "SC", "SD", "TN", "TX", "UM", "UT", "VA", "VI", "VT", "WA", "WI", "WV", "WY"
};

static const code_t CA_PROVINCES[] = {
    "AB", "BC", "MB", "NB", "NL", "NS", "NT", "NU", "ON", "PE", "QC", "SK", "YT",
};

static const code_t US_TERRITORIES[] = {"AS", "FM", "GU", "MH", "MP", "PR", "PW", "UM", "VI"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int compare_code(const void *key, const void *element)
{
    return strcmp((const char *)key, (const char *)element);
}

/* Exactly two characters found in table (sorted). */
static bool in_table(const code_t *table, size_t n, const char *code)
{
    if (code == NULL || strlen(code) != 2)
        return false;
    return bsearch(code, table, n, sizeof(code_t), compare_code) != NULL;
}

bool country_is_iso(const char *code)
{
    return in_table(ISO, COUNT(ISO), code);
}

bool country_is_eu(const char *code)
{
    return in_table(EU, COUNT(EU), code);
}

const char *country_vat_prefix(const char *code)
{
    if (!country_is_eu(code))
        return NULL;
    /* Greece is GR in ISO 3166 but EL (from Ellas) in the EU's VAT numbers. */
    if (strcmp(code, "GR") == 0)
        return "EL";
    const code_t *found = bsearch(code, EU, COUNT(EU), sizeof(code_t), compare_code);
    return *found;
}

bool country_us_state_valid(const char *code)
{
    return in_table(US_STATES, COUNT(US_STATES), code);
}

bool country_ca_province_valid(const char *code)
{
    return in_table(CA_PROVINCES, COUNT(CA_PROVINCES), code);
}

bool country_is_us_territory(const char *code)
{
    return in_table(US_TERRITORIES, COUNT(US_TERRITORIES), code);
}
