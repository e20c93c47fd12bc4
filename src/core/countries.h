/* countries: the country and subdivision codes taxd accepts, defined once.
 * ISO 3166-1 alpha-2 membership (the 249 codes Taxbit's client lists: no XK,
 * EL, XI or EU), the EU member states and their VAT prefixes, and the
 * subdivisions an address is checked against (US states and territories,
 * Canadian provinces). Pure tables; every function takes a NUL-terminated
 * code and is safe to call from any thread. */
#ifndef TAXD_CORE_COUNTRIES_H
#define TAXD_CORE_COUNTRIES_H

#include <stdbool.h>

/* An assigned ISO 3166-1 alpha-2 code (upper case, exactly two letters). */
bool country_is_iso(const char *code);

/* One of the 27 EU member states (by ISO code: GR, not EL). */
bool country_is_eu(const char *code);

/* The VAT prefix of an EU member state: the ISO code, except "EL" for GR.
 * NULL for a country outside the EU. */
const char *country_vat_prefix(const char *code);

/* A US state, DC or territory code of Taxbit's list (usStateCodes, 60
 * codes: the 50 states, DC, AS, GU, MP, PR, VI, UM, FM, MH, PW; the
 * military AA AE AP are not in it, so an APO address is refused as the
 * client refuses it). */
bool country_us_state_valid(const char *code);

/* A Canadian province or territory code (13 codes). */
bool country_ca_province_valid(const char *code);

/* US territories with their own address rules: AS GU MP PR VI (street, city,
 * ZIP) and FM MH PW UM (street only). */
bool country_is_us_territory(const char *code);

#endif
