/* taxdocs/comprehensive: see comprehensive.h.
 *
 * Three passes over a body, in the order a reader would check a form:
 *  1. the schema (core/validate.h data, like the native schemas): types,
 *     enums and lengths, all fields optional but the envelope's. Unknown
 *     keys are ignored as everywhere in the API (the contract is additive:
 *     a later SDK may send a field this version does not know, and a 400
 *     its UI cannot show would strand the user). When the schema finds
 *     anything, nothing else is judged.
 *  2. the rules of Taxbit's client (docs/taxbit-sdk.md § 3) on the
 *     effective person P: the account holder, or for a disregarded entity
 *     the regarded owner. Required fields depend on the derived form, so
 *     they are checked here, not by the schema. Blank strings (only
 *     spaces) count as absent, as in the client.
 *  3. the conversion into the native document (§ 6.3), which must pass
 *     taxdocs_check. If it does not, the conversion is wrong, not the
 *     client: that is reported as TAXDOCS_COMPREHENSIVE_FAILED (a 500),
 *     never as issues.
 *
 * Where taxd is stricter than the client (the US TIN ranges of the TIN
 * check, the VAT structure per state, a city in every address) or looser
 * (a W-8 foreign TIN stays a soft issue, no Latin-letter rule on names),
 * docs/decisions.md says why. No message quotes a submitted value. */
#include "taxdocs/comprehensive.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/countries.h"
#include "core/domain.h"
#include "core/tin.h"
#include "core/utf8.h"
#include "core/validate.h"

/* ---- schema */

static const char *const DOCUMENT_TYPES[] = {"COMPREHENSIVE", NULL};
static const char *const QUESTIONNAIRES[] = {"DPS", "W-FORM", NULL};
static const char *const SCHEMA_VERSIONS[] = {"1.0", NULL};
static const char *const US_ACCOUNT_TYPES[] = {
    "INDIVIDUAL", "SOLE_PROPRIETOR", "LLC", "SM_LLC", "C_CORPORATION", "S_CORPORATION",
    "PARTNERSHIP", "TRUST_ESTATE", "OTHER", "DISREGARDED_ENTITY", NULL};
static const char *const US_RO_ACCOUNT_TYPES[] = {
    "INDIVIDUAL", "LLC", "C_CORPORATION", "S_CORPORATION", "PARTNERSHIP", "TRUST_ESTATE",
    "OTHER", NULL};
static const char *const US_LLC_CLASSIFICATIONS[] = {"C_CORPORATION", "S_CORPORATION",
                                                     "PARTNERSHIP", NULL};
static const char *const FOREIGN_ACCOUNT_TYPES[] = {
    "INDIVIDUAL", "CORPORATION", "PARTNERSHIP", "TRUST", "OTHER", "DISREGARDED_ENTITY", NULL};
static const char *const FOREIGN_TRUST_CLASSIFICATIONS[] = {"SIMPLE_TRUST", "COMPLEX_TRUST",
                                                            "GRANTOR_TRUST", NULL};
static const char *const FOREIGN_OTHER_CLASSIFICATIONS[] = {
    "TAX_EXEMPT_ORGANIZATION", "PRIVATE_FOUNDATION", "INTERNATIONAL_ORGANIZATION",
    "CENTRAL_BANK_OF_ISSUE", "FOREIGN_GOVERNMENT_CONTROLLED_ENTITY",
    "FOREIGN_GOVERNMENT_INTEGRAL_PART", "ESTATE", NULL};
static const char *const EXEMPT_PAYEE_CODES[] = {"1", "2", "3", "4", "5", "6", "7",
                                                 "8", "9", "10", "11", "12", "13", NULL};
static const char *const EXEMPT_FATCA_CODES[] = {"A", "B", "C", "D", "E", "F", "G",
                                                 "H", "I", "J", "K", "L", "M", NULL};

/* Strings may be empty (the client sends ftin "" and blank fields); the
 * rules decide what is required. The limits are the native schemas', so a
 * value that passes here fits the native document. */
#define TEXT(key, max) {key, V_STRING, .nullable = true, .max_len = (max)}
#define FLAG(key) {key, V_BOOLEAN, .nullable = true}
#define CHOICE(key, list) {key, V_ENUM, .nullable = true, .values = (list)}

static const v_field ADDRESS_FIELDS[] = {
    TEXT("first_line", DOMAIN_NAME_MAX),   TEXT("second_line", DOMAIN_NAME_MAX),
    TEXT("city", DOMAIN_NAME_MAX),         TEXT("state_or_province", DOMAIN_NAME_MAX),
    TEXT("postal_code", DOMAIN_POSTAL_CODE_MAX), TEXT("country", 2),
    {.name = NULL}};
static const v_schema ADDRESS = {ADDRESS_FIELDS};

static const v_field RESIDENCE_FIELDS[] = {
    TEXT("country", 2), TEXT("tin", TIN_INPUT_MAX), FLAG("tin_not_required"), {.name = NULL}};
static const v_schema RESIDENCE = {RESIDENCE_FIELDS};
static const v_field RESIDENCE_ITEM = {"", V_OBJECT, .object = &RESIDENCE};

static const v_field HOLDER_FIELDS[] = {
    TEXT("name", DOMAIN_NAME_MAX),
    TEXT("dba_name", DOMAIN_NAME_MAX),
    {"address", V_OBJECT, .nullable = true, .object = &ADDRESS},
    {"mailing_address", V_OBJECT, .nullable = true, .object = &ADDRESS},
    FLAG("mailing_address_is_different"),
    TEXT("date_of_birth", 10),
    TEXT("city_of_birth", DOMAIN_NAME_MAX),
    TEXT("country_of_birth", 2),
    TEXT("country_of_citizenship", 2),
    TEXT("tin", TIN_INPUT_MAX),
    TEXT("ftin", TIN_INPUT_MAX),
    FLAG("ftin_not_legally_required"),
    {"tax_residences", V_ARRAY, .nullable = true, .max_items = 5, .items = &RESIDENCE_ITEM},
    TEXT("vatin", 32),
    TEXT("vatin_country", 2),
    FLAG("vatin_not_required"),
    TEXT("business_registration_number", 64),
    TEXT("business_registration_country", 2),
    TEXT("financial_account_identifier", DOMAIN_NAME_MAX),
    TEXT("financial_account_name", DOMAIN_NAME_MAX),
    FLAG("is_individual"),
    FLAG("is_us_person"),
    CHOICE("us_account_type", US_ACCOUNT_TYPES),
    CHOICE("us_llc_classification", US_LLC_CLASSIFICATIONS),
    TEXT("us_other_classification", DOMAIN_NAME_MAX),
    FLAG("us_smllc_election"),
    FLAG("us_sole_proprietor_ein"),
    FLAG("us_trust_estate_ein"),
    CHOICE("foreign_account_type", FOREIGN_ACCOUNT_TYPES),
    CHOICE("foreign_trust_classification", FOREIGN_TRUST_CLASSIFICATIONS),
    CHOICE("foreign_other_classification", FOREIGN_OTHER_CLASSIFICATIONS),
    CHOICE("exempt_payee_code", EXEMPT_PAYEE_CODES),
    CHOICE("exempt_fatca_code", EXEMPT_FATCA_CODES),
    {.name = NULL}};
static const v_schema HOLDER = {HOLDER_FIELDS};

static const v_field BODY_FIELDS[] = {
    {"document_type", V_ENUM, .required = true, .values = DOCUMENT_TYPES},
    {"questionnaire", V_ENUM, .required = true, .values = QUESTIONNAIRES},
    {"schema_version", V_ENUM, .required = true, .values = SCHEMA_VERSIONS},
    {"account_holder", V_OBJECT, .required = true, .object = &HOLDER},
    {"regarded_owner", V_OBJECT, .nullable = true, .object = &HOLDER},
    TEXT("signature", DOMAIN_NAME_MAX),
    {"signature_date", V_DATETIME, .required = true},
    TEXT("source", DOMAIN_NAME_MAX),
    FLAG("has_certified"),
    FLAG("is_confirmed_correct_complete"),
    FLAG("is_not_subject_backup_withholding"),
    {.name = NULL}};
static const v_schema BODY = {BODY_FIELDS};

/* ---- small readers and issue builders */

typedef struct ctx {
    json_t *issues;
    int64_t now;
} ctx_t;

/* A string that is not blank (the client's "present"), else NULL. */
static const char *text_at(const json_t *object, const char *key)
{
    const json_t *v = json_object_get(object, key);
    const char *s = json_string_value(v);
    if (s == NULL || memchr(s, '\0', json_string_length(v)) != NULL)
        return NULL;
    for (const char *p = s; *p != '\0'; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return s;
    return NULL;
}

static bool is_true(const json_t *object, const char *key)
{
    return json_is_true(json_object_get(object, key));
}

static bool is_eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* base + key (a new path; base is not changed). */
static json_t *sub(const json_t *base, const char *key)
{
    json_t *p = json_copy((json_t *)base);
    if (p != NULL)
        json_array_append_new(p, json_string(key));
    return p;
}

static json_t *sub_i(const json_t *base, size_t i, const char *key)
{
    json_t *p = json_copy((json_t *)base);
    if (p != NULL) {
        json_array_append_new(p, json_integer((json_int_t)i));
        if (key != NULL)
            json_array_append_new(p, json_string(key));
    }
    return p;
}

/* Appends a "custom" issue on path (stolen). */
static void fail(ctx_t *c, json_t *path, const char *message)
{
    json_t *issue = path != NULL ? v_issue("custom", path, message, NULL) : NULL;
    /* Out of memory: json_null() never fails, so the body is still refused. */
    json_array_append_new(c->issues, issue != NULL ? issue : json_null());
    json_decref(path);
}

/* The schema's own "missing" issue for a required field (path stolen). */
static void missing(ctx_t *c, json_t *path, v_type_t type)
{
    const v_field field = {"", type, .required = true};
    if (path == NULL || v_check_value(&field, NULL, path, c->issues) == 0)
        json_array_append_new(c->issues, json_null());
    json_decref(path);
}

/* A required string of `object`: reports it missing and returns NULL. */
static const char *need_text(ctx_t *c, const json_t *object, const json_t *base, const char *key)
{
    const char *s = text_at(object, key);
    if (s == NULL)
        missing(c, sub(base, key), V_STRING);
    return s;
}

/* An optional (or, with required, mandatory) ISO 3166-1 country code. */
static void check_country(ctx_t *c, const json_t *object, const json_t *base, const char *key,
                          bool required)
{
    const char *s = required ? need_text(c, object, base, key) : text_at(object, key);
    if (s != NULL && !country_is_iso(s))
        fail(c, sub(base, key), TAXDOCS_COUNTRY_NOT_ISO);
}

/* ---- value rules (pure predicates; each is one rule of § 3) */

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* One character repeated (/^(.)\1+$/): "1111", "ßß". */
static bool one_char_repeated(const char *s)
{
    size_t len = strlen(s);
    size_t first = utf8_sequence((const unsigned char *)s, len);
    if (first == 0 || first >= len || len % first != 0)
        return false;
    for (size_t i = first; i < len; i += first)
        if (memcmp(s, s + i, first) != 0)
            return false;
    return true;
}

/* The client's "special number" (residence TINs, business registration,
 * financial account): 2..22 characters, not one character repeated. */
static bool special_number_ok(const char *s)
{
    size_t chars = utf8_chars(s, strlen(s));
    return chars >= 2 && chars <= 22 && !one_char_repeated(s);
}

/* Nine digits, or 123-45-6789, or 12-3456789; out gets the nine digits. */
static bool us_tin_shape(const char *s, char out[10])
{
    size_t len = strlen(s);
    bool ok = (len == 9 && all_digits(s, 9)) ||
              (len == 11 && s[3] == '-' && s[6] == '-' && all_digits(s, 3) &&
               all_digits(s + 4, 2) && all_digits(s + 7, 4)) ||
              (len == 10 && s[2] == '-' && all_digits(s, 2) && all_digits(s + 3, 7));
    if (!ok)
        return false;
    size_t n = 0;
    for (const char *p = s; *p != '\0'; p++)
        if (*p != '-')
            out[n++] = *p;
    out[n] = '\0';
    return true;
}

/* The client's deny list (numbers people type to get past a form) and the
 * 00000 prefix; the TIN check's SSA/IRS ranges come later and are stricter. */
static bool us_tin_denied(const char *digits)
{
    static const char *const DENIED[] = {
        "000000000", "111111111", "222222222", "333333333", "444444444", "555555555",
        "666666666", "777777777", "888888888", "999999999", "012345678", "123456789",
        "234567890", "876543210", "987654321", "098765432", NULL};
    for (int i = 0; DENIED[i] != NULL; i++)
        if (strcmp(digits, DENIED[i]) == 0)
            return true;
    return strncmp(digits, "00000", 5) == 0;
}

/* Reports a US TIN that is not nine digits or is deny-listed. */
static void check_us_tin(ctx_t *c, const char *tin, json_t *path)
{
    char digits[10];
    if (!us_tin_shape(tin, digits))
        fail(c, path, "Invalid TIN: expected 9 digits, dashes allowed");
    else if (us_tin_denied(digits))
        fail(c, path, "Invalid TIN: not a number that can be issued");
    else
        json_decref(path);
}

static bool in_set(char ch, const char *set)
{
    return ch != '\0' && strchr(set, ch) != NULL;
}

/* A UK National Insurance number: two letters (from HMRC's allowed sets,
 * not one of the prefixes never issued), six digits, A to D. */
static bool gb_nino_ok(const char *s)
{
    static const char *const NEVER[] = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ", NULL};
    if (strlen(s) != 9 || !in_set(s[0], "ABCEGHJKLMNOPRSTWXYZ") ||
        !in_set(s[1], "ABCEGHJKLMNPRSTWXYZ") || !all_digits(s + 2, 6) || !in_set(s[8], "ABCD"))
        return false;
    for (int i = 0; NEVER[i] != NULL; i++)
        if (strncmp(s, NEVER[i], 2) == 0)
            return false;
    return true;
}

static bool us_zip_ok(const char *s)
{
    size_t len = strlen(s);
    return (len == 5 && all_digits(s, 5)) || (len == 9 && all_digits(s, 9)) ||
           (len == 10 && (s[5] == '-' || s[5] == ' ') && all_digits(s, 5) && all_digits(s + 6, 4));
}

/* A Canadian postal code (A1A 1A1; the letters Canada Post uses). */
static bool ca_postal_ok(const char *s)
{
    char u[8];
    size_t n = 0;
    size_t len = strlen(s);
    if (len < 6 || len > 7)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (i == 3 && len == 7 && (s[i] == ' ' || s[i] == '-'))
            continue;
        char ch = s[i];
        u[n++] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
    }
    if (n != 6)
        return false;
    static const char *const FIRST = "ABCEGHJKLMNPRSTVXY";
    static const char *const OTHER = "ABCEGHJKLMNPRSTVWXYZ";
    return in_set(u[0], FIRST) && all_digits(u + 1, 1) && in_set(u[2], OTHER) &&
           all_digits(u + 3, 1) && in_set(u[4], OTHER) && all_digits(u + 5, 1);
}

/* MM/DD/YYYY, a real date: out gets YYYY-MM-DD. */
static bool dob_parse(const char *s, char out[TAXDOCS_DATE_LEN])
{
    if (strlen(s) != 10 || s[2] != '/' || s[5] != '/' || !all_digits(s, 2) ||
        !all_digits(s + 3, 2) || !all_digits(s + 6, 4))
        return false;
    char text[32];
    snprintf(text, sizeof text, "%.4s-%.2s-%.2sT00:00:00Z", s + 6, s, s + 3);
    int64_t ms;
    if (clock_parse_rfc3339(text, &ms) != 0)
        return false;
    memcpy(out, text, 10);
    out[10] = '\0';
    return true;
}

/* ---- rules on groups of fields */

/* A date of birth as the client writes it, not in the future and at most
 * TAXDOCS_BIRTH_YEARS_MAX years back by year difference (UTC). No minimum
 * age: the client has none in use (docs/decisions.md). */
static void check_dob(ctx_t *c, const json_t *p, const json_t *base, bool required)
{
    const char *s = required ? need_text(c, p, base, "date_of_birth")
                             : text_at(p, "date_of_birth");
    if (s == NULL)
        return;
    char iso[TAXDOCS_DATE_LEN];
    if (!dob_parse(s, iso)) {
        fail(c, sub(base, "date_of_birth"), "Invalid date: expected a real date as MM/DD/YYYY");
        return;
    }
    char today[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(c->now, today);
    today[10] = '\0';
    if (strcmp(iso, today) > 0)
        fail(c, sub(base, "date_of_birth"), "date_of_birth cannot be in the future");
    else if (atoi(today) - atoi(iso) > TAXDOCS_BIRTH_YEARS_MAX)
        fail(c, sub(base, "date_of_birth"), "date_of_birth cannot be more than 120 years ago");
}

/* FM MH PW UM: an address there needs a street only (no ZIP). */
static bool is_small_territory(const char *code)
{
    static const char *const SMALL[] = {"FM", "MH", "PW", "UM", NULL};
    return code != NULL && domain_name_index(SMALL, code) >= 0;
}

/* The client's address rules per country (§ 3), plus a city everywhere
 * (the native documents require one). */
static void check_address(ctx_t *c, const json_t *a, const json_t *base)
{
    const char *country = need_text(c, a, base, "country");
    need_text(c, a, base, "first_line");
    need_text(c, a, base, "city");
    if (country == NULL)
        return;
    if (!country_is_iso(country))
        fail(c, sub(base, "country"), TAXDOCS_COUNTRY_NOT_ISO);
    const char *state = text_at(a, "state_or_province");
    const char *postal = text_at(a, "postal_code");
    bool us = strcmp(country, "US") == 0;
    bool ca = strcmp(country, "CA") == 0;
    bool territory = country_is_us_territory(country) ||
                     (us && state != NULL && country_is_us_territory(state));
    bool small = territory && (is_small_territory(country) ||
                               (us && is_small_territory(state)));
    if ((us && !territory) || ca) {
        if (state == NULL)
            missing(c, sub(base, "state_or_province"), V_STRING);
        else if (us ? !country_us_state_valid(state) : !country_ca_province_valid(state))
            fail(c, sub(base, "state_or_province"),
                 us ? "Invalid US state code" : "Invalid Canadian province code");
    }
    bool zip = (us || territory) && !small;
    if ((zip || ca) && postal == NULL)
        missing(c, sub(base, "postal_code"), V_STRING);
    else if (zip && !us_zip_ok(postal))
        fail(c, sub(base, "postal_code"), "Invalid ZIP code: expected 5 or 9 digits");
    else if (ca && !ca_postal_ok(postal))
        fail(c, sub(base, "postal_code"), "Invalid Canadian postal code");
}

/* A required address object of p. */
static void need_address(ctx_t *c, const json_t *p, const json_t *base, const char *key)
{
    const json_t *a = json_object_get(p, key);
    json_t *path = sub(base, key);
    if (!json_is_object(a))
        missing(c, json_incref(path), V_OBJECT);
    else
        check_address(c, a, path);
    json_decref(path);
}

/* The signature of a W-FORM: required, and the exact name (case included,
 * as the client compares) when P signs for itself as an individual. */
static void check_signature(ctx_t *c, const json_t *body, const json_t *p, bool individual)
{
    const char *sig = text_at(body, "signature");
    if (sig == NULL) {
        missing(c, json_pack("[s]", "signature"), V_STRING);
        return;
    }
    const char *name = text_at(p, "name");
    if (individual && name != NULL && strcmp(sig, name) != 0)
        fail(c, json_pack("[s]", "signature"), "signature must be the name exactly as given");
}

/* Whether the account holder is a disregarded entity (its form is the
 * regarded owner's). */
static bool is_dre(const json_t *h)
{
    const char *us = text_at(h, "us_account_type");
    return is_eq(us, "DISREGARDED_ENTITY") || is_eq(text_at(h, "foreign_account_type"),
                                                    "DISREGARDED_ENTITY") ||
           (is_eq(us, "SM_LLC") && json_is_false(json_object_get(h, "us_smllc_election")));
}

static bool in_list(const char *const *list, const char *s)
{
    return domain_name_index(list, s) >= 0;
}

/* The classification of P (account holder or regarded owner): sets *type
 * to the derived form, or reports why none can be. */
static bool classify(ctx_t *c, const json_t *p, const json_t *base, bool owner,
                     taxdocs_type_t *type)
{
    const char *us = text_at(p, "us_account_type");
    const char *foreign = text_at(p, "foreign_account_type");
    const json_t *us_person = json_object_get(p, "is_us_person");
    if (us != NULL && foreign != NULL) {
        fail(c, sub(base, "foreign_account_type"),
             "foreign_account_type cannot be given with us_account_type");
        return false;
    }
    if (us == NULL && foreign == NULL) {
        const char *key = json_is_false(us_person) ? "foreign_account_type" : "us_account_type";
        fail(c, sub(base, key), json_is_boolean(us_person)
                                    ? "An account type is required"
                                    : "us_account_type or foreign_account_type is required");
        return false;
    }
    if (json_is_boolean(us_person) && json_is_true(us_person) != (us != NULL)) {
        fail(c, sub(base, "is_us_person"), "is_us_person contradicts the account type");
        return false;
    }
    if (owner && ((us != NULL && !in_list(US_RO_ACCOUNT_TYPES, us)) ||
                  is_eq(foreign, "DISREGARDED_ENTITY"))) {
        fail(c, sub(base, us != NULL ? "us_account_type" : "foreign_account_type"),
             "A regarded owner cannot be a disregarded entity or a sole proprietor");
        return false;
    }
    *type = us != NULL ? TAXDOCS_W9 : is_eq(foreign, "INDIVIDUAL") ? TAXDOCS_W8BEN
                                                                    : TAXDOCS_W8BENE;
    return true;
}

static void need_flag(ctx_t *c, const json_t *p, const json_t *base, const char *key)
{
    if (!json_is_boolean(json_object_get(p, key)))
        missing(c, sub(base, key), V_BOOLEAN);
}

static void refuse_dob(ctx_t *c, const json_t *p, const json_t *base)
{
    if (text_at(p, "date_of_birth") != NULL)
        fail(c, sub(base, "date_of_birth"), "date_of_birth is only for individuals");
}

/* The W-9 rules on P. A regarded owner answers fewer questions (no EIN
 * answers, no SM_LLC) and has no date of birth unless an individual. */
static void check_w9(ctx_t *c, const json_t *body, const json_t *p, const json_t *base,
                     bool owner)
{
    const char *t = text_at(p, "us_account_type");
    bool election = is_true(p, "us_smllc_election");
    if (owner && !is_eq(t, "INDIVIDUAL"))
        refuse_dob(c, p, base);
    if (is_eq(t, "LLC") || (is_eq(t, "SM_LLC") && election)) {
        if (text_at(p, "us_llc_classification") == NULL)
            missing(c, sub(base, "us_llc_classification"), V_ENUM);
    } else if (is_eq(t, "SM_LLC")) {
        need_flag(c, p, base, "us_smllc_election");
    } else if (!owner && (is_eq(t, "SOLE_PROPRIETOR") || is_eq(t, "TRUST_ESTATE"))) {
        const char *flag = t[0] == 'S' ? "us_sole_proprietor_ein" : "us_trust_estate_ein";
        need_flag(c, p, base, flag);
        if (json_is_false(json_object_get(p, flag)))
            need_text(c, p, base, "dba_name");
    } else if (is_eq(t, "OTHER")) {
        need_text(c, p, base, "us_other_classification");
    } else if (!owner && (is_eq(t, "C_CORPORATION") || is_eq(t, "S_CORPORATION") ||
                          is_eq(t, "PARTNERSHIP"))) {
        refuse_dob(c, p, base);
    }
    const char *tin = need_text(c, p, base, "tin");
    if (tin != NULL)
        check_us_tin(c, tin, sub(base, "tin"));
    check_signature(c, body, p, is_eq(t, "INDIVIDUAL"));
}

static void check_w8(ctx_t *c, const json_t *body, const json_t *p, const json_t *base)
{
    const char *t = text_at(p, "foreign_account_type");
    if (is_eq(t, "INDIVIDUAL"))
        check_dob(c, p, base, true);
    else
        refuse_dob(c, p, base);
    if (is_eq(t, "TRUST") && text_at(p, "foreign_trust_classification") == NULL)
        missing(c, sub(base, "foreign_trust_classification"), V_ENUM);
    if (is_eq(t, "OTHER") && text_at(p, "foreign_other_classification") == NULL)
        missing(c, sub(base, "foreign_other_classification"), V_ENUM);
    check_country(c, p, base, "country_of_citizenship", true);
    if (is_true(p, "mailing_address_is_different"))
        need_address(c, p, base, "mailing_address");
    /* A missing foreign TIN stays taxd's soft MISSING_FOREIGN_TIN issue. */
    check_signature(c, body, p, is_eq(t, "INDIVIDUAL"));
}

/* The W-FORM rules; *type gets the derived form. Returns P, or NULL after
 * reporting why there is none. */
static const json_t *check_w_form(ctx_t *c, const json_t *body, taxdocs_type_t *type)
{
    const json_t *h = json_object_get(body, "account_holder");
    bool dre = is_dre(h);
    const json_t *p = dre ? json_object_get(body, "regarded_owner") : h;
    if (dre && !json_is_object(p)) {
        missing(c, json_pack("[s]", "regarded_owner"), V_OBJECT);
        return NULL;
    }
    json_t *base = json_pack("[s]", dre ? "regarded_owner" : "account_holder");
    if (base == NULL) {
        json_array_append_new(c->issues, json_null());
        return NULL;
    }
    if (!classify(c, p, base, dre, type)) {
        json_decref(base);
        return NULL;
    }
    need_text(c, p, base, "name");
    /* A regarded owner's dba_name is the disregarded entity's own name. */
    if (dre)
        need_text(c, p, base, "dba_name");
    need_address(c, p, base, "address");
    if (*type == TAXDOCS_W9)
        check_w9(c, body, p, base, dre);
    else
        check_w8(c, body, p, base);
    json_decref(base);
    return p;
}

/* A residence's TIN: US, GB NINO for individuals, else the special-number
 * rule; never the VAT number of the VAT country. */
static void check_residence_tin(ctx_t *c, const json_t *h, const json_t *r, json_t *path)
{
    const char *country = text_at(r, "country");
    const char *tin = text_at(r, "tin");
    if (is_true(r, "tin_not_required") || country == NULL) {
        json_decref(path);
        return;
    }
    if (tin == NULL) {
        missing(c, path, V_STRING);
        return;
    }
    if (strcmp(country, "US") == 0) {
        check_us_tin(c, tin, path);
        return;
    }
    const char *vatin = text_at(h, "vatin");
    if (strcmp(country, "GB") == 0 && is_true(h, "is_individual") && !gb_nino_ok(tin))
        fail(c, path, "Invalid TIN: expected a National Insurance number (AB123456C)");
    else if (!special_number_ok(tin))
        fail(c, path, "Invalid TIN: expected 2 to 22 characters, not one repeated");
    else if (is_eq(country, text_at(h, "vatin_country")) && is_eq(tin, vatin))
        fail(c, path, "A residence TIN cannot be the VAT number");
    else
        json_decref(path);
}

/* Whether any residence is in the EU (and, with_tin, has a TIN there). */
static bool eu_residence(const json_t *list, bool with_tin)
{
    size_t i;
    const json_t *r;
    json_array_foreach(list, i, r) {
        if (country_is_eu(text_at(r, "country")) && (!with_tin || text_at(r, "tin") != NULL))
            return true;
    }
    return false;
}

static bool has_residence(const json_t *list, const char *country)
{
    size_t i;
    const json_t *r;
    json_array_foreach(list, i, r) {
        if (is_eq(text_at(r, "country"), country))
            return true;
    }
    return false;
}

static void check_residences(ctx_t *c, const json_t *h, const json_t *base)
{
    const json_t *list = json_object_get(h, "tax_residences");
    json_t *path = sub(base, "tax_residences");
    if (json_array_size(list) == 0) {
        fail(c, path, "At least one tax residence is required");
        return;
    }
    size_t i;
    const json_t *r;
    json_array_foreach(list, i, r) {
        json_t *item = sub_i(path, i, NULL);
        check_country(c, r, item, "country", true);
        check_residence_tin(c, h, r, sub(item, "tin"));
        json_decref(item);
    }
    const char *address_country = text_at(json_object_get(h, "address"), "country");
    const char *vat_country = text_at(h, "vatin_country");
    if (address_country != NULL && !has_residence(list, address_country))
        fail(c, json_incref(path), "The tax residences must include the address country");
    if (vat_country != NULL && !is_true(h, "vatin_not_required") &&
        !has_residence(list, vat_country))
        fail(c, json_incref(path), "The tax residences must include the VAT country");
    json_decref(path);
}

static void check_vat(ctx_t *c, const json_t *h, const json_t *base)
{
    if (is_true(h, "vatin_not_required") ||
        (text_at(h, "vatin") == NULL && text_at(h, "vatin_country") == NULL))
        return;
    check_country(c, h, base, "vatin_country", true);
    const char *vatin = need_text(c, h, base, "vatin");
    if (vatin == NULL)
        return;
    size_t chars = utf8_chars(vatin, strlen(vatin));
    if (chars < 8 || chars > 14 || one_char_repeated(vatin))
        fail(c, sub(base, "vatin"), "Invalid VAT number: expected 8 to 14 characters, not one "
                                    "repeated");
}

static void check_dps(ctx_t *c, const json_t *h)
{
    json_t *base = json_pack("[s]", "account_holder");
    if (base == NULL) {
        json_array_append_new(c->issues, json_null());
        return;
    }
    const json_t *individual = json_object_get(h, "is_individual");
    if (!json_is_boolean(individual))
        missing(c, sub(base, "is_individual"), V_BOOLEAN);
    need_text(c, h, base, "name");
    need_address(c, h, base, "address");
    check_residences(c, h, base);
    check_vat(c, h, base);
    const char *account = text_at(h, "financial_account_identifier");
    if (account != NULL) {
        need_text(c, h, base, "financial_account_name");
        if (!special_number_ok(account))
            fail(c, sub(base, "financial_account_identifier"),
                 "Invalid account identifier: expected 2 to 22 characters, not one repeated");
    }
    if (json_is_true(individual)) {
        const json_t *list = json_object_get(h, "tax_residences");
        bool eu = eu_residence(list, false);
        check_dob(c, h, base, eu);
        if (eu && !eu_residence(list, true)) {
            need_text(c, h, base, "city_of_birth");
            check_country(c, h, base, "country_of_birth", true);
        }
    } else if (json_is_false(individual)) {
        const char *brn = text_at(h, "business_registration_number");
        if (brn != NULL && !special_number_ok(brn))
            fail(c, sub(base, "business_registration_number"),
                 "Invalid registration number: expected 2 to 22 characters, not one repeated");
        else if (brn != NULL && is_eq(brn, text_at(h, "vatin")))
            fail(c, sub(base, "business_registration_number"),
                 "The registration number cannot be the VAT number");
        check_country(c, h, base, "business_registration_country", false);
    }
    json_decref(base);
}

/* signature_date: the client's clock; at most a day ahead of ours. */
static void check_signature_date(ctx_t *c, const json_t *body, int64_t *ms)
{
    const char *s = json_string_value(json_object_get(body, "signature_date"));
    if (s == NULL || clock_parse_rfc3339(s, ms) != 0)
        return; /* the schema reported it */
    if (*ms > c->now + INT64_C(86400000))
        fail(c, json_pack("[s]", "signature_date"),
             "signature_date cannot be more than 1 day in the future");
}

/* ---- the native document (§ 6.3) */

/* Sets key to a string copy of p's src when present (not blank). */
static int copy_text(json_t *out, const char *key, const json_t *p, const char *src)
{
    const char *s = text_at(p, src);
    return s == NULL ? 0 : json_object_set_new(out, key, json_string(s));
}

/* An address's members in both models: Taxbit's name, then taxd's. */
enum { TAXBIT_NAME, NATIVE_NAME };
static const char *const ADDRESS_MEMBERS[][2] = {
    {"first_line", "line1"}, {"second_line", "line2"},       {"city", "city"},
    {"state_or_province", "state"}, {"postal_code", "postal_code"}, {"country", "country_code"},
};

/* The address a in the other model: its members named by column `from`
 * are written under the names of the other column. */
static json_t *address_to(const json_t *a, int from)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int rc = 0;
    for (size_t i = 0; i < sizeof ADDRESS_MEMBERS / sizeof ADDRESS_MEMBERS[0]; i++)
        rc |= copy_text(o, ADDRESS_MEMBERS[i][1 - from], a, ADDRESS_MEMBERS[i][from]);
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Sets out[key] to p[src], an address of the model named by `from`, in the other model. */
static int set_address_from(json_t *out, const char *key, const json_t *p, const char *src,
                            int from)
{
    const json_t *a = json_object_get(p, src);
    if (!json_is_object(a))
        return 0;
    json_t *o = address_to(a, from);
    return o == NULL ? -1 : json_object_set_new(out, key, o);
}

static int set_address(json_t *out, const char *key, const json_t *p, const char *src)
{
    return set_address_from(out, key, p, src, TAXBIT_NAME);
}

static int set_dob(json_t *out, const json_t *p)
{
    const char *s = text_at(p, "date_of_birth");
    char iso[TAXDOCS_DATE_LEN];
    if (s == NULL || !dob_parse(s, iso))
        return 0;
    return json_object_set_new(out, "date_of_birth", json_string(iso));
}

/* W-9 entity_classification of P. */
static const char *w9_classification(const json_t *p)
{
    const char *t = text_at(p, "us_account_type");
    if (is_eq(t, "LLC") || is_eq(t, "SM_LLC")) {
        const char *llc = text_at(p, "us_llc_classification");
        return is_eq(llc, "C_CORPORATION")   ? "LLC_C"
               : is_eq(llc, "S_CORPORATION") ? "LLC_S"
                                             : "LLC_P";
    }
    return t;
}

/* SSN for an individual and for a sole proprietor or trust without an EIN
 * (ITIN when such a number starts with 9); EIN otherwise. */
static const char *w9_tin_type(const json_t *p, const char *digits)
{
    const char *t = text_at(p, "us_account_type");
    bool person = is_eq(t, "INDIVIDUAL") ||
                  (is_eq(t, "SOLE_PROPRIETOR") &&
                   json_is_false(json_object_get(p, "us_sole_proprietor_ein"))) ||
                  (is_eq(t, "TRUST_ESTATE") &&
                   json_is_false(json_object_get(p, "us_trust_estate_ein")));
    if (!person)
        return "EIN";
    return digits[0] == '9' ? "ITIN" : "SSN";
}

/* chapter3_status of a W-8BEN-E's P. */
static const char *chapter3_of(const json_t *p)
{
    const char *t = text_at(p, "foreign_account_type");
    if (is_eq(t, "TRUST"))
        return text_at(p, "foreign_trust_classification");
    if (!is_eq(t, "OTHER"))
        return t;
    const char *o = text_at(p, "foreign_other_classification");
    if (is_eq(o, "CENTRAL_BANK_OF_ISSUE"))
        return "CENTRAL_BANK";
    if (o != NULL && strncmp(o, "FOREIGN_GOVERNMENT_", 19) == 0)
        return "GOVERNMENT";
    return o;
}

#define FTIN_REASON "Not legally required (certified in the Taxbit questionnaire)"
#define RESIDENCE_TIN_REASON "Not required (certified in the Taxbit questionnaire)"

static int build_w9(json_t *n, const json_t *p, taxdocs_comprehensive_t *out)
{
    char digits[10];
    if (!us_tin_shape(text_at(p, "tin"), digits))
        return -1;
    snprintf(out->tin_type, sizeof out->tin_type, "%s", w9_tin_type(p, digits));
    return copy_text(n, "business_name", p, "dba_name") |
           json_object_set_new(n, "entity_classification", json_string(w9_classification(p))) |
           json_object_set_new(n, "tin_type", json_string(out->tin_type)) |
           json_object_set_new(n, "tin", json_string(digits)) |
           set_address(n, "address", p, "address") |
           copy_text(n, "exempt_payee_code", p, "exempt_payee_code");
}

static int build_w8(json_t *n, const json_t *p, taxdocs_type_t type)
{
    int rc = set_address(n, "permanent_residence_address", p, "address");
    if (is_true(p, "mailing_address_is_different"))
        rc |= set_address(n, "mailing_address", p, "mailing_address");
    rc |= copy_text(n, type == TAXDOCS_W8BEN ? "country_of_citizenship" : "country_of_organization",
                    p, "country_of_citizenship") |
          copy_text(n, "foreign_tin", p, "ftin");
    if (text_at(p, "ftin") == NULL && is_true(p, "ftin_not_legally_required"))
        rc |= json_object_set_new(n, "foreign_tin_not_required_reason", json_string(FTIN_REASON));
    if (type == TAXDOCS_W8BEN)
        return rc | set_dob(n, p);
    return rc | json_object_set_new(n, "chapter3_status", json_string(chapter3_of(p)));
}

/* The VAT number with its country's prefix (GR numbers carry EL); NULL for
 * none or a country outside the EU (not checked: vat_note NON_EU). */
static bool prefixed_vat(const json_t *h, char *out, size_t cap)
{
    const char *vatin = text_at(h, "vatin");
    const char *prefix = country_vat_prefix(text_at(h, "vatin_country"));
    if (vatin == NULL || prefix == NULL)
        return false;
    char head[3] = {0};
    for (int i = 0; i < 2 && vatin[i] != '\0'; i++)
        head[i] = (vatin[i] >= 'a' && vatin[i] <= 'z') ? (char)(vatin[i] - 'a' + 'A') : vatin[i];
    bool has = strcmp(head, prefix) == 0 || (strcmp(prefix, "EL") == 0 && strcmp(head, "GR") == 0);
    snprintf(out, cap, "%s%s", prefix, has ? vatin + 2 : vatin);
    return true;
}

static int build_residences(json_t *n, const json_t *h)
{
    json_t *list = json_array();
    if (list == NULL || json_object_set_new(n, "tax_residences", list) != 0)
        return -1;
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(h, "tax_residences"), i, r) {
        json_t *o = json_object();
        int rc = json_array_append_new(list, o) | copy_text(o, "country_code", r, "country");
        if (is_true(r, "tin_not_required"))
            rc |= json_object_set_new(o, "tin_not_required_reason",
                                      json_string(RESIDENCE_TIN_REASON));
        else
            rc |= copy_text(o, "tin", r, "tin");
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int build_dps(json_t *n, const json_t *h, taxdocs_comprehensive_t *out)
{
    bool individual = is_true(h, "is_individual");
    const char *seller = individual ? "INDIVIDUAL" : "ENTITY";
    int rc = json_object_set_new(n, "seller_type", json_string(seller)) |
             set_address(n, "address", h, "address") | build_residences(n, h);
    if (individual)
        rc |= set_dob(n, h);
    else
        rc |= copy_text(n, "business_registration_number", h, "business_registration_number");
    char vat[48];
    if (is_true(h, "vatin_not_required") && text_at(h, "vatin") == NULL)
        snprintf(out->vat_note, sizeof out->vat_note, "NOT_REQUIRED");
    else if (prefixed_vat(h, vat, sizeof vat))
        rc |= json_object_set_new(n, "vat_number", json_string(vat));
    else if (text_at(h, "vatin") != NULL)
        snprintf(out->vat_note, sizeof out->vat_note, "NON_EU");
    return rc;
}

/* The signature date as the native form holds it: the UTC day, but never
 * after ours (the client's clock may run ahead by up to a day). */
static void signed_on(int64_t signed_ms, int64_t now, char out[TAXDOCS_DATE_LEN])
{
    char text[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(signed_ms < now ? signed_ms : now, text);
    memcpy(out, text, 10);
    out[10] = '\0';
}

static json_t *build_native(const json_t *body, const json_t *p, int64_t signed_ms, int64_t now,
                            taxdocs_comprehensive_t *out)
{
    json_t *n = json_object();
    if (n == NULL)
        return NULL;
    bool dps = out->type == TAXDOCS_DPS;
    char day[TAXDOCS_DATE_LEN];
    signed_on(signed_ms, now, day);
    int rc = json_object_set_new(n, "document_type", json_string(taxdocs_type_name(out->type))) |
             copy_text(n, "name", p, "name") |
             json_object_set_new(n, "certified",
                                 json_boolean(is_true(body, dps ? "is_confirmed_correct_complete"
                                                                : "has_certified"))) |
             json_object_set_new(n, "signature_date", json_string(day));
    if (out->type == TAXDOCS_W9)
        rc |= build_w9(n, p, out);
    else if (dps)
        rc |= build_dps(n, p, out);
    else
        rc |= build_w8(n, p, out->type);
    if (rc != 0) {
        json_decref(n);
        return NULL;
    }
    return n;
}

size_t taxdocs_comprehensive_check(const json_t *body, int64_t now, json_t *issues,
                                   taxdocs_comprehensive_t *out)
{
    memset(out, 0, sizeof *out);
    size_t before = json_array_size(issues);
    if (v_check_object(&BODY, body, NULL, issues) > 0)
        return json_array_size(issues) - before;
    ctx_t c = {.issues = issues, .now = now};
    int64_t signed_ms = 0;
    check_signature_date(&c, body, &signed_ms);
    const char *questionnaire = json_string_value(json_object_get(body, "questionnaire"));
    const json_t *p = json_object_get(body, "account_holder");
    if (strcmp(questionnaire, "DPS") == 0) {
        out->type = TAXDOCS_DPS;
        check_dps(&c, p);
    } else {
        p = check_w_form(&c, body, &out->type);
    }
    if (json_array_size(issues) > before)
        return json_array_size(issues) - before;
    snprintf(out->questionnaire, sizeof out->questionnaire, "%s", questionnaire);
    const char *sig = text_at(body, "signature");
    if (out->type != TAXDOCS_DPS && sig != NULL)
        snprintf(out->signature, sizeof out->signature, "%s", sig);
    out->native = build_native(body, p, signed_ms, now, out);
    json_t *native_issues = json_array();
    taxdocs_type_t type;
    if (out->native == NULL || native_issues == NULL ||
        taxdocs_check(out->native, now, native_issues, &type) != 0 || type != out->type) {
        /* A body that passed every rule above converts cleanly; anything
         * else is a bug here (or memory ran out): the caller answers 500. */
        json_decref(native_issues);
        taxdocs_comprehensive_clear(out);
        return TAXDOCS_COMPREHENSIVE_FAILED;
    }
    json_decref(native_issues);
    return 0;
}

void taxdocs_comprehensive_clear(taxdocs_comprehensive_t *c)
{
    json_decref(c->native);
    memset(c, 0, sizeof *c);
}

/* ---- from the native model (documents submitted on the native route) */

/* YYYY-MM-DD -> MM/DD/YYYY, as the client's date selects write it. */
static int set_dob_back(json_t *out, const json_t *native)
{
    const char *s = text_at(native, "date_of_birth");
    if (s == NULL || strlen(s) != 10)
        return 0;
    char dob[11];
    snprintf(dob, sizeof dob, "%.2s/%.2s/%.4s", s + 5, s + 8, s);
    return json_object_set_new(out, "date_of_birth", json_string(dob));
}

static int set_address_back(json_t *out, const char *key, const json_t *native, const char *src)
{
    return set_address_from(out, key, native, src, NATIVE_NAME);
}

/* W-9 entity_classification -> us_account_type (+ its detail fields). */
static int w9_back(json_t *h, const json_t *native)
{
    const char *ec = text_at(native, "entity_classification");
    const char *tin_type = text_at(native, "tin_type");
    int rc = json_object_set_new(h, "is_us_person", json_true()) |
             copy_text(h, "dba_name", native, "business_name") |
             copy_text(h, "tin", native, "tin") |
             copy_text(h, "exempt_payee_code", native, "exempt_payee_code");
    if (ec != NULL && strncmp(ec, "LLC_", 4) == 0) {
        const char *llc = ec[4] == 'C' ? "C_CORPORATION" : ec[4] == 'S' ? "S_CORPORATION"
                                                                       : "PARTNERSHIP";
        return rc | json_object_set_new(h, "us_account_type", json_string("LLC")) |
               json_object_set_new(h, "us_llc_classification", json_string(llc));
    }
    if (ec == NULL)
        return -1;
    rc |= json_object_set_new(h, "us_account_type", json_string(ec));
    bool ein = is_eq(tin_type, "EIN");
    if (strcmp(ec, "SOLE_PROPRIETOR") == 0)
        rc |= json_object_set_new(h, "us_sole_proprietor_ein", json_boolean(ein));
    if (strcmp(ec, "TRUST_ESTATE") == 0)
        rc |= json_object_set_new(h, "us_trust_estate_ein", json_boolean(ein));
    if (strcmp(ec, "OTHER") == 0) /* the native W-9 has no text for it */
        rc |= json_object_set_new(h, "us_other_classification", json_string("OTHER"));
    return rc;
}

/* chapter3_status -> foreign_account_type (+ classification). A W-8BEN-E
 * of a disregarded entity keeps its data on the account holder: the native
 * form has no regarded owner. */
static int w8bene_back(json_t *h, const char *ch3)
{
    static const char *const TRUSTS[] = {"SIMPLE_TRUST", "GRANTOR_TRUST", "COMPLEX_TRUST", NULL};
    if (ch3 == NULL)
        return -1;
    if (domain_name_index(TRUSTS, ch3) >= 0)
        return json_object_set_new(h, "foreign_account_type", json_string("TRUST")) |
               json_object_set_new(h, "foreign_trust_classification", json_string(ch3));
    if (strcmp(ch3, "CORPORATION") == 0 || strcmp(ch3, "PARTNERSHIP") == 0 ||
        strcmp(ch3, "DISREGARDED_ENTITY") == 0)
        return json_object_set_new(h, "foreign_account_type", json_string(ch3));
    const char *other = strcmp(ch3, "CENTRAL_BANK") == 0 ? "CENTRAL_BANK_OF_ISSUE"
                        : strcmp(ch3, "GOVERNMENT") == 0 ? "FOREIGN_GOVERNMENT_INTEGRAL_PART"
                                                         : ch3;
    return json_object_set_new(h, "foreign_account_type", json_string("OTHER")) |
           json_object_set_new(h, "foreign_other_classification", json_string(other));
}

static int w8_back(json_t *h, taxdocs_type_t type, const json_t *native)
{
    const json_t *mailing = json_object_get(native, "mailing_address");
    const char *ftin = text_at(native, "foreign_tin");
    int rc = json_object_set_new(h, "is_us_person", json_false()) |
             copy_text(h, "country_of_citizenship", native,
                       type == TAXDOCS_W8BEN ? "country_of_citizenship"
                                             : "country_of_organization") |
             json_object_set_new(h, "mailing_address_is_different",
                                 json_boolean(json_is_object(mailing))) |
             set_address_back(h, "mailing_address", native, "mailing_address") |
             json_object_set_new(h, "ftin", json_string(ftin != NULL ? ftin : "")) |
             json_object_set_new(h, "ftin_not_legally_required",
                                 json_boolean(ftin == NULL &&
                                              text_at(native, "foreign_tin_not_required_reason")));
    if (type == TAXDOCS_W8BEN)
        return rc | json_object_set_new(h, "foreign_account_type", json_string("INDIVIDUAL")) |
               set_dob_back(h, native);
    return rc | w8bene_back(h, text_at(native, "chapter3_status"));
}

/* DPS and SELF_CERTIFICATION: the DPS questionnaire's holder. */
static int dps_back(json_t *h, taxdocs_type_t type, const json_t *native)
{
    const char *kind = text_at(native, type == TAXDOCS_DPS ? "seller_type" : "account_holder_type");
    json_t *list = json_array();
    int rc = json_object_set_new(h, "is_individual", json_boolean(is_eq(kind, "INDIVIDUAL"))) |
             set_dob_back(h, native) | json_object_set_new(h, "tax_residences", list) |
             copy_text(h, "business_registration_number", native, "business_registration_number");
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(native, "tax_residences"), i, r) {
        json_t *o = json_object();
        rc |= json_array_append_new(list, o) | copy_text(o, "country", r, "country_code") |
              copy_text(o, "tin", r, "tin") |
              json_object_set_new(o, "tin_not_required",
                                  json_boolean(text_at(r, "tin") == NULL &&
                                               text_at(r, "tin_not_required_reason") != NULL));
    }
    const char *vat = text_at(native, "vat_number");
    if (vat == NULL)
        return rc | json_object_set_new(h, "vatin_not_required", json_false());
    rc |= copy_text(h, "vatin", native, "vat_number");
    /* The country from the prefix: EL is Greece; XI (Northern Ireland) is GB. */
    char prefix[3] = {vat[0], vat[0] != '\0' ? vat[1] : '\0', '\0'};
    const char *country = strcmp(prefix, "EL") == 0   ? "GR"
                          : strcmp(prefix, "XI") == 0 ? "GB"
                          : country_is_eu(prefix)     ? prefix
                                                      : NULL;
    if (country != NULL)
        rc |= json_object_set_new(h, "vatin_country", json_string(country));
    return rc | json_object_set_new(h, "vatin_not_required", json_false());
}

/* "YYYY-MM-DD" -> "YYYY-MM-DDT00:00:00.000Z" (the SDK's datetime). */
static json_t *date_back(const char *day)
{
    char text[CLOCK_RFC3339_LEN];
    snprintf(text, sizeof text, "%.10sT00:00:00.000Z", day != NULL ? day : "");
    return json_string(text);
}

json_t *taxdocs_comprehensive_from_native(taxdocs_type_t type, const json_t *native)
{
    if ((unsigned)type >= TAXDOCS_TYPE_COUNT || !json_is_object(native))
        return NULL;
    bool dps = type == TAXDOCS_DPS || type == TAXDOCS_SELF_CERT;
    json_t *h = json_object();
    json_t *doc = json_pack("{s:s, s:s, s:s, s:o}", "document_type", "COMPREHENSIVE",
                            "questionnaire", dps ? "DPS" : "W-FORM", "schema_version", "1.0",
                            "account_holder", h);
    if (doc == NULL)
        return NULL;
    const char *address_key = (type == TAXDOCS_W8BEN || type == TAXDOCS_W8BENE)
                                  ? "permanent_residence_address"
                                  : "address";
    bool certified = json_is_true(json_object_get(native, "certified"));
    int rc = copy_text(h, "name", native, "name") |
             set_address_back(h, "address", native, address_key) |
             json_object_set_new(doc, dps ? "is_confirmed_correct_complete" : "has_certified",
                                 json_boolean(certified)) |
             json_object_set_new(doc, "signature_date",
                                 date_back(text_at(native, "signature_date")));
    if (type == TAXDOCS_W9)
        rc |= w9_back(h, native);
    else if (dps)
        rc |= dps_back(h, type, native);
    else
        rc |= w8_back(h, type, native);
    if (rc != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* ---- masking */

/* tin_mask's rule (core/tin.h) for a string of any length: a stored body
 * holds only checked TINs, but the mask must not trust that (tin_mask's
 * buffer holds TIN_MAX bytes). Out of memory: the value is dropped, never
 * left in clear. */
static void mask_key(json_t *object, const char *key)
{
    const json_t *v = json_object_get(object, key);
    const char *s = json_string_value(v);
    if (s == NULL || s[0] == '\0')
        return;
    size_t len = json_string_length(v);
    if (len < TIN_MAX && memchr(s, '\0', len) == NULL) {
        char masked[TIN_MAX];
        tin_mask(s, masked);
        json_object_set_new(object, key, json_string(masked));
        return;
    }
    size_t chars = utf8_chars(s, len);
    size_t hide = chars > 4 ? chars - 4 : 0;
    const char *tail = s;
    for (size_t seen = 0; seen < hide && tail < s + len; seen++) {
        size_t step = utf8_sequence((const unsigned char *)tail, (size_t)(s + len - tail));
        tail += step > 0 ? step : 1;
    }
    size_t rest = (size_t)(s + len - tail);
    char *masked = malloc(hide + rest + 1);
    if (masked == NULL) {
        json_object_del(object, key);
        return;
    }
    memset(masked, '*', hide);
    memcpy(masked + hide, tail, rest);
    masked[hide + rest] = '\0';
    if (json_object_set_new(object, key, json_stringn(masked, hide + rest)) != 0)
        json_object_del(object, key);
    free(masked);
}

static void mask_person(json_t *p)
{
    if (!json_is_object(p))
        return;
    mask_key(p, "tin");
    mask_key(p, "ftin");
    mask_key(p, "vatin");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(p, "tax_residences"), i, r) {
        if (json_is_object(r))
            mask_key(r, "tin");
    }
}

void taxdocs_comprehensive_mask(json_t *doc)
{
    mask_person(json_object_get(doc, "account_holder"));
    mask_person(json_object_get(doc, "regarded_owner"));
}
