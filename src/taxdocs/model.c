/* taxdocs/model: see model.h.
 *
 * Two kinds of problems, decided once here so the API and the docs agree:
 *  - hard: the body cannot be read as the document it claims to be (wrong
 *    JSON types, unknown document_type, a required field missing, a date in
 *    the future, a W-9 TIN that is not nine digits). The client gets a 400
 *    and nothing is recorded.
 *  - soft: the document is readable but would not stand as valid tax
 *    documentation (not certified, a W-8 with US indicia or already expired,
 *    a foreign TIN missing without a reason, a treaty claimed with a country
 *    that is not the residence). It is recorded with `issues`, so the owner's
 *    state says what to fix, and needs_resubmission is true.
 *
 * The schemas are core/validate.h data (a pure JSON checker), so a 400 has
 * the same issue shape as every other endpoint. */
#include "taxdocs/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/countries.h"
#include "core/decimal.h"
#include "core/domain.h"
#include "core/jsonval.h"
#include "core/tin.h"
#include "core/utf8.h"
#include "core/validate.h"

static const char *const TYPE_NAMES[TAXDOCS_TYPE_COUNT] = {"W-9", "W-8BEN", "W-8BEN-E", "DPS",
                                                          "SELF_CERTIFICATION"};
static const char *const TYPE_VALUES[] = {"W-9", "W-8BEN", "W-8BEN-E", "DPS",
                                          "SELF_CERTIFICATION", NULL};
static const char *const OBJECT_NAMES[TAXDOCS_OBJECT_COUNT] = {
    "w_form_questionnaire", "dps_questionnaire", "self_certification"};

const char *taxdocs_type_name(taxdocs_type_t type)
{
    return (unsigned)type < TAXDOCS_TYPE_COUNT ? TYPE_NAMES[type] : "";
}

bool taxdocs_type_parse(const char *name, taxdocs_type_t *out)
{
    for (int i = 0; i < TAXDOCS_TYPE_COUNT; i++)
        if (strcmp(name, TYPE_NAMES[i]) == 0) {
            *out = (taxdocs_type_t)i;
            return true;
        }
    return false;
}

taxdocs_object_t taxdocs_object_of(taxdocs_type_t type)
{
    if (type == TAXDOCS_DPS)
        return TAXDOCS_OBJ_DPS;
    if (type == TAXDOCS_SELF_CERT)
        return TAXDOCS_OBJ_SELF;
    return TAXDOCS_OBJ_W_FORM;
}

const char *taxdocs_object_name(taxdocs_object_t object)
{
    return (unsigned)object < TAXDOCS_OBJECT_COUNT ? OBJECT_NAMES[object] : "";
}

bool taxdocs_object_parse(const char *name, taxdocs_object_t *out)
{
    for (int i = 0; i < TAXDOCS_OBJECT_COUNT; i++)
        if (strcmp(name, OBJECT_NAMES[i]) == 0) {
            *out = (taxdocs_object_t)i;
            return true;
        }
    return false;
}

static bool is_w8(taxdocs_type_t type)
{
    return type == TAXDOCS_W8BEN || type == TAXDOCS_W8BENE;
}

/* ---- schemas (fields as the IRS forms and the OECD / DAC7 questionnaires
 * ask for them; unknown fields are ignored, as everywhere in the API) */

#define NAME_FIELD(key, req)                                                                   \
    {key, V_STRING, .required = req, .min_len = 1, .max_len = DOMAIN_NAME_MAX}

static const v_field ADDRESS_FIELDS[] = {
    NAME_FIELD("line1", true),
    {"line2", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    NAME_FIELD("city", true),
    {"state", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"postal_code", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_POSTAL_CODE_MAX},
    {"country_code", V_STRING, .required = true, .min_len = 2, .max_len = 2},
    {.name = NULL}};
static const v_schema ADDRESS = {ADDRESS_FIELDS};

static const v_field TREATY_FIELDS[] = {
    {"country_code", V_STRING, .required = true, .min_len = 2, .max_len = 2},
    {"article", V_STRING, .required = true, .min_len = 1, .max_len = 64},
    {"withholding_rate", V_DECIMAL, .required = true},
    {"income_type", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {.name = NULL}};
static const v_schema TREATY = {TREATY_FIELDS};

static const v_field RESIDENCE_FIELDS[] = {
    {"country_code", V_STRING, .required = true, .min_len = 2, .max_len = 2},
    {"tin", V_STRING, .nullable = true, .min_len = 1, .max_len = TIN_INPUT_MAX},
    {"tin_not_required_reason", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {.name = NULL}};
static const v_schema RESIDENCE = {RESIDENCE_FIELDS};
static const v_field RESIDENCE_ITEM = {"", V_OBJECT, .object = &RESIDENCE};

static const char *const TIN_TYPES[] = {"SSN", "EIN", "ITIN", "ATIN", NULL};
static const char *const W9_CLASSIFICATIONS[] = {
    "INDIVIDUAL", "SOLE_PROPRIETOR", "C_CORPORATION", "S_CORPORATION", "PARTNERSHIP",
    "TRUST_ESTATE", "LLC_C", "LLC_S", "LLC_P", "OTHER", NULL};
static const char *const CHAPTER3_STATUSES[] = {
    "CORPORATION", "PARTNERSHIP", "SIMPLE_TRUST", "GRANTOR_TRUST", "COMPLEX_TRUST", "ESTATE",
    "GOVERNMENT", "CENTRAL_BANK", "TAX_EXEMPT_ORGANIZATION", "PRIVATE_FOUNDATION",
    "INTERNATIONAL_ORGANIZATION", "DISREGARDED_ENTITY", NULL};
static const char *const HOLDER_TYPES[] = {"INDIVIDUAL", "ENTITY", NULL};

#define COMMON_HEAD {"document_type", V_ENUM, .required = true, .values = TYPE_VALUES}
#define COMMON_TAIL                                                                            \
    {"certified", V_BOOLEAN, .required = true}, {"signature_date", V_DATE, .required = true},  \
    {.name = NULL}
#define FOREIGN_TIN_FIELDS                                                                     \
    {"foreign_tin", V_STRING, .nullable = true, .min_len = 1, .max_len = TIN_INPUT_MAX},       \
    {"foreign_tin_not_required_reason", V_STRING, .nullable = true, .min_len = 1,            \
     .max_len = DOMAIN_NAME_MAX}
#define RESIDENCES_FIELD                                                                       \
    {"tax_residences", V_ARRAY, .required = true, .min_items = 1, .max_items = 10,            \
     .items = &RESIDENCE_ITEM}

static const v_field W9_FIELDS[] = {
    COMMON_HEAD,
    NAME_FIELD("name", true),
    {"business_name", V_STRING, .nullable = true, .min_len = 1, .max_len = DOMAIN_NAME_MAX},
    {"entity_classification", V_ENUM, .required = true, .values = W9_CLASSIFICATIONS},
    {"tin_type", V_ENUM, .required = true, .values = TIN_TYPES},
    {"tin", V_STRING, .required = true, .min_len = 1, .max_len = TIN_INPUT_MAX},
    {"address", V_OBJECT, .required = true, .object = &ADDRESS},
    {"exempt_payee_code", V_STRING, .nullable = true, .min_len = 1, .max_len = 4},
    COMMON_TAIL};
static const v_field W8BEN_FIELDS[] = {
    COMMON_HEAD,
    NAME_FIELD("name", true),
    {"country_of_citizenship", V_STRING, .required = true, .min_len = 2, .max_len = 2},
    {"permanent_residence_address", V_OBJECT, .required = true, .object = &ADDRESS},
    {"mailing_address", V_OBJECT, .nullable = true, .object = &ADDRESS},
    FOREIGN_TIN_FIELDS,
    {"date_of_birth", V_DATE, .required = true},
    {"treaty_claim", V_OBJECT, .nullable = true, .object = &TREATY},
    COMMON_TAIL};
static const v_field W8BENE_FIELDS[] = {
    COMMON_HEAD,
    NAME_FIELD("name", true),
    {"country_of_organization", V_STRING, .required = true, .min_len = 2, .max_len = 2},
    {"chapter3_status", V_ENUM, .required = true, .values = CHAPTER3_STATUSES},
    {"chapter4_status", V_STRING, .nullable = true, .min_len = 1, .max_len = 64},
    {"permanent_residence_address", V_OBJECT, .required = true, .object = &ADDRESS},
    {"mailing_address", V_OBJECT, .nullable = true, .object = &ADDRESS},
    FOREIGN_TIN_FIELDS,
    {"treaty_claim", V_OBJECT, .nullable = true, .object = &TREATY},
    COMMON_TAIL};
static const v_field DPS_FIELDS[] = {
    COMMON_HEAD,
    NAME_FIELD("name", true),
    {"seller_type", V_ENUM, .required = true, .values = HOLDER_TYPES},
    {"address", V_OBJECT, .required = true, .object = &ADDRESS},
    {"date_of_birth", V_DATE, .nullable = true},
    RESIDENCES_FIELD,
    {"vat_number", V_STRING, .nullable = true, .min_len = 1, .max_len = 32},
    {"business_registration_number", V_STRING, .nullable = true, .min_len = 1, .max_len = 64},
    COMMON_TAIL};
static const v_field SELF_CERT_FIELDS[] = {
    COMMON_HEAD,
    NAME_FIELD("name", true),
    {"account_holder_type", V_ENUM, .required = true, .values = HOLDER_TYPES},
    {"address", V_OBJECT, .required = true, .object = &ADDRESS},
    {"date_of_birth", V_DATE, .nullable = true},
    RESIDENCES_FIELD,
    COMMON_TAIL};

static const v_schema SCHEMAS[TAXDOCS_TYPE_COUNT] = {
    {W9_FIELDS}, {W8BEN_FIELDS}, {W8BENE_FIELDS}, {DPS_FIELDS}, {SELF_CERT_FIELDS}};

static const v_field TYPE_ONLY_FIELDS[] = {COMMON_HEAD, {.name = NULL}};
static const v_schema TYPE_ONLY = {TYPE_ONLY_FIELDS};

/* ---- small readers (each returns NULL for a value the schema refused, so
 * rules never pile onto a type issue) */

static const char *str_at(const json_t *object, const char *key)
{
    const json_t *v = json_object_get(object, key);
    if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
        return NULL;
    return json_string_value(v);
}

static const char *str_in(const json_t *object, const char *outer, const char *key)
{
    return str_at(json_object_get(object, outer), key);
}

static bool has_text(const json_t *object, const char *key)
{
    const char *s = str_at(object, key);
    return s != NULL && s[0] != '\0';
}

static void today_of(int64_t now, char out[TAXDOCS_DATE_LEN])
{
    time_t t = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (strftime(out, TAXDOCS_DATE_LEN, "%Y-%m-%d", &tm) == 0)
        out[0] = '\0'; /* a year past 9999: nothing compares as later */
}

/* ---- hard rules a schema cannot state */

static void add_issue(json_t *issues, json_t *path, const char *code, const char *message)
{
    json_t *issue = v_issue(code, path, message, NULL);
    /* Out of memory: json_null() never fails, so the body is still refused. */
    json_array_append_new(issues, issue != NULL ? issue : json_null());
    json_decref(path);
}

static json_t *path_of(const char *a, const char *b)
{
    return b != NULL ? json_pack("[s, s]", a, b) : json_pack("[s]", a);
}

/* Two uppercase ASCII letters that are an assigned ISO 3166-1 code (the
 * list Taxbit's client offers: "EL", "XK" or "ZZ" are not countries); a
 * length issue is the schema's to report. */
static void check_country(json_t *issues, const json_t *object, const char *key, json_t *path)
{
    const char *s = str_at(object, key);
    if (s == NULL || utf8_chars(s, strlen(s)) != 2 || country_is_iso(s)) {
        json_decref(path);
        return;
    }
    if (!domain_country_code_valid(s))
        add_issue(issues, path, "invalid_format", "Invalid string: must match pattern /^[A-Z]{2}$/");
    else
        add_issue(issues, path, "custom", TAXDOCS_COUNTRY_NOT_ISO);
}

/* The year of a real calendar date YYYY-MM-DD, or -1 for anything else
 * (the schema reports it). */
static int year_of_date(const char *s)
{
    char text[32];
    int64_t ms;
    if (s == NULL || strlen(s) != 10 ||
        snprintf(text, sizeof text, "%sT00:00:00Z", s) >= (int)sizeof text ||
        clock_parse_rfc3339(text, &ms) != 0)
        return -1;
    return atoi(s);
}

/* At most TAXDOCS_BIRTH_YEARS_MAX years back, by year difference in UTC as
 * Taxbit's client counts it (born in 1906 is fine all through 2026). */
size_t taxdocs_check_birth_years(const json_t *object, const char *key, int64_t now,
                                 json_t *issues)
{
    int year = year_of_date(str_at(object, key));
    if (year < 0)
        return 0;
    time_t t = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (tm.tm_year + 1900 - year <= TAXDOCS_BIRTH_YEARS_MAX)
        return 0;
    char message[96];
    snprintf(message, sizeof message, "%s cannot be more than %d years ago", key,
             TAXDOCS_BIRTH_YEARS_MAX);
    add_issue(issues, path_of(key, NULL), "custom", message);
    return 1;
}

static void check_not_future(json_t *issues, const json_t *body, const char *key,
                             const char *today)
{
    const char *s = str_at(body, key);
    if (s == NULL || strlen(s) != 10 || strcmp(s, today) <= 0)
        return;
    char message[80];
    snprintf(message, sizeof message, "%s cannot be in the future", key);
    add_issue(issues, path_of(key, NULL), "custom", message);
}

/* A US TIN is nine digits; dashes are allowed where people write them. The
 * message never quotes the value. */
static void check_w9_tin(json_t *issues, const json_t *body)
{
    const char *s = str_at(body, "tin");
    if (s == NULL)
        return;
    int digits = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p >= '0' && *p <= '9')
            digits++;
        else if (*p != '-')
            digits = -100;
    }
    if (digits != 9)
        add_issue(issues, path_of("tin", NULL), "custom",
                  "Invalid TIN: expected 9 digits, dashes allowed");
}

static void check_treaty(json_t *issues, const json_t *body)
{
    const json_t *claim = json_object_get(body, "treaty_claim");
    if (!json_is_object(claim))
        return;
    check_country(issues, claim, "country_code", path_of("treaty_claim", "country_code"));
    const char *rate = str_at(claim, "withholding_rate");
    dec_t value;
    if (rate == NULL || dec_parse(rate, strlen(rate), &value) != DEC_OK)
        return; /* the schema reported it */
    if (dec_is_negative(value) || dec_cmp(value, dec_from_int(100)) > 0)
        add_issue(issues, path_of("treaty_claim", "withholding_rate"), "custom",
                  "withholding_rate must be between 0 and 100 (a percentage)");
}

static void check_residences(json_t *issues, const json_t *body)
{
    const json_t *list = json_object_get(body, "tax_residences");
    size_t i;
    const json_t *r;
    json_array_foreach(list, i, r) {
        if (json_is_object(r))
            check_country(issues, r, "country_code",
                          json_pack("[s, I, s]", "tax_residences", (json_int_t)i,
                                    "country_code"));
    }
}

/* Whether key is a field of the type's schema: unknown fields are ignored,
 * so the rules below must not judge a field the type does not have. */
static bool in_schema(taxdocs_type_t type, const char *key)
{
    for (const v_field *f = SCHEMAS[type].fields; f->name != NULL; f++)
        if (strcmp(f->name, key) == 0)
            return true;
    return false;
}

static void check_addresses(json_t *issues, taxdocs_type_t type, const json_t *body)
{
    static const char *const KEYS[] = {"address", "permanent_residence_address",
                                       "mailing_address", NULL};
    for (const char *const *k = KEYS; *k != NULL; k++) {
        const json_t *a = json_object_get(body, *k);
        if (in_schema(type, *k) && json_is_object(a))
            check_country(issues, a, "country_code", path_of(*k, "country_code"));
    }
}

static void check_top_countries(json_t *issues, taxdocs_type_t type, const json_t *body)
{
    static const char *const KEYS[] = {"country_of_citizenship", "country_of_organization", NULL};
    for (const char *const *k = KEYS; *k != NULL; k++)
        if (in_schema(type, *k))
            check_country(issues, body, *k, path_of(*k, NULL));
}

size_t taxdocs_check(const json_t *body, int64_t now, json_t *issues, taxdocs_type_t *type)
{
    size_t before = json_array_size(issues);
    if (v_check_object(&TYPE_ONLY, body, NULL, issues) > 0)
        return json_array_size(issues) - before; /* nothing else can be judged */
    const char *name = str_at(body, "document_type");
    if (name == NULL || !taxdocs_type_parse(name, type))
        return json_array_size(issues) - before;
    v_check_object(&SCHEMAS[*type], body, NULL, issues);
    char today[TAXDOCS_DATE_LEN];
    today_of(now, today);
    check_not_future(issues, body, "signature_date", today);
    /* One issue per date: the window only when the older rules (not in the
     * future, not before 1900) found nothing. */
    if (in_schema(*type, "date_of_birth") &&
        v_check_birth_date(body, "date_of_birth", now, issues) == 0)
        taxdocs_check_birth_years(body, "date_of_birth", now, issues);
    check_addresses(issues, *type, body);
    check_top_countries(issues, *type, body);
    if (*type == TAXDOCS_W9)
        check_w9_tin(issues, body);
    if (is_w8(*type))
        check_treaty(issues, body);
    if (*type == TAXDOCS_DPS || *type == TAXDOCS_SELF_CERT)
        check_residences(issues, body);
    return json_array_size(issues) - before;
}

/* ---- dates */

bool taxdocs_expiration_date(const char *signed_on, char out[TAXDOCS_DATE_LEN])
{
    int y, m, d;
    char tail;
    if (signed_on == NULL || strlen(signed_on) != 10 ||
        sscanf(signed_on, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || y < 1 || y > 9996 ||
        m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    snprintf(out, TAXDOCS_DATE_LEN, "%04u-12-31", (unsigned)(y + 3) % 10000u);
    return true;
}

/* ---- VAT numbers: the structure of each EU member state's number (and
 * XI for Northern Ireland). A pattern is 'd' (digit), 'L' (letter), 'a'
 * (letter or digit), anything else itself; '|' separates alternatives. */

typedef struct vat_rule {
    const char *prefix;
    const char *patterns;
} vat_rule_t;

static const vat_rule_t VAT_RULES[] = {
    {"AT", "Udddddddd"},
    {"BE", "dddddddddd"},
    {"BG", "ddddddddd|dddddddddd"},
    {"CY", "ddddddddL"},
    {"CZ", "dddddddd|ddddddddd|dddddddddd"},
    {"DE", "ddddddddd"},
    {"DK", "dddddddd"},
    {"EE", "ddddddddd"},
    {"EL", "ddddddddd"},
    {"ES", "addddddda"},
    {"FI", "dddddddd"},
    {"FR", "aaddddddddd"},
    {"HR", "ddddddddddd"},
    {"HU", "dddddddd"},
    {"IE", "dddddddL|dddddddLL|dLdddddL"},
    {"IT", "ddddddddddd"},
    {"LT", "ddddddddd|dddddddddddd"},
    {"LU", "dddddddd"},
    {"LV", "ddddddddddd"},
    {"MT", "dddddddd"},
    {"NL", "dddddddddBdd"},
    {"PL", "dddddddddd"},
    {"PT", "ddddddddd"},
    {"RO", "dd|ddd|dddd|ddddd|dddddd|ddddddd|dddddddd|ddddddddd|dddddddddd"},
    {"SE", "dddddddddddd"},
    {"SI", "dddddddd"},
    {"SK", "dddddddddd"},
    {"XI", "ddddddddd|dddddddddddd|GDddd|HAddd"},
};

static bool vat_class_ok(char pattern, char c)
{
    bool digit = c >= '0' && c <= '9';
    bool letter = c >= 'A' && c <= 'Z';
    if (pattern == 'd')
        return digit;
    if (pattern == 'L')
        return letter;
    if (pattern == 'a')
        return digit || letter;
    return c == pattern;
}

/* Whether number matches one alternative of patterns. */
static bool vat_matches(const char *patterns, const char *number)
{
    const char *alt = patterns;
    while (*alt != '\0') {
        size_t len = strcspn(alt, "|");
        bool ok = strlen(number) == len;
        for (size_t i = 0; ok && i < len; i++)
            ok = vat_class_ok(alt[i], number[i]);
        if (ok)
            return true;
        alt += len + (alt[len] == '|');
    }
    return false;
}

bool taxdocs_vat_number_valid(const char *vat)
{
    char clean[40];
    size_t n = 0;
    for (const char *p = vat; *p != '\0'; p++) {
        if (*p == ' ' || *p == '.' || *p == '-')
            continue;
        if (n + 1 >= sizeof clean)
            return false;
        clean[n++] = *p;
    }
    clean[n] = '\0';
    if (n < 3)
        return false;
    for (size_t i = 0; i < sizeof VAT_RULES / sizeof VAT_RULES[0]; i++)
        if (memcmp(clean, VAT_RULES[i].prefix, 2) == 0)
            return vat_matches(VAT_RULES[i].patterns, clean + 2);
    return false;
}

/* ---- assessment (soft problems become issues) */

static int set_text(char *out, size_t cap, const char *s)
{
    size_t len = strlen(s);
    if (len >= cap)
        return -1;
    memcpy(out, s, len + 1);
    return 0;
}

#define SET(field, s) set_text((field), sizeof(field), (s))

/* Appends {issue_type, created_at, details:[{field, description}]}. */
static void add_soft(json_t *issues, const char *issue_type, int64_t at, const char *field,
                     const char *description)
{
    char when[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(at, when);
    json_array_append_new(issues,
                          json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "issue_type", issue_type,
                                    "created_at", when, "details", "field", field,
                                    "description", description));
}

/* A second detail for the last issue (US indicia found in two fields). */
static void add_detail(json_t *issues, const char *field, const char *description)
{
    json_t *last = json_array_get(issues, json_array_size(issues) - 1);
    json_array_append_new(json_object_get(last, "details"),
                          json_pack("{s:s, s:s}", "field", field, "description", description));
}

static void assess_certified(json_t *issues, const json_t *body, int64_t now)
{
    if (json_is_true(json_object_get(body, "certified")))
        return;
    add_soft(issues, "MISSING_CERTIFICATION", now, "certified",
             "The form must be certified under penalties of perjury");
}

/* The country whose residence the W-8 certifies. */
static const char *w8_residence(taxdocs_type_t type, const json_t *body)
{
    if (type == TAXDOCS_W8BENE)
        return str_at(body, "country_of_organization");
    return str_in(body, "permanent_residence_address", "country_code");
}

static void assess_us_indicia(json_t *issues, taxdocs_type_t type, const json_t *body,
                              int64_t now)
{
    const char *key = type == TAXDOCS_W8BENE ? "country_of_organization"
                                             : "country_of_citizenship";
    bool first = true;
    const char *country = str_at(body, key);
    if (country != NULL && strcmp(country, "US") == 0) {
        add_soft(issues, "US_INDICIA", now, key,
                 "A US person certifies its status on a W-9, not a W-8");
        first = false;
    }
    const char *residence = str_in(body, "permanent_residence_address", "country_code");
    if (residence == NULL || strcmp(residence, "US") != 0)
        return;
    static const char *const FIELD = "permanent_residence_address.country_code";
    static const char *const WHY = "A W-8 needs a permanent residence outside the United States";
    if (first)
        add_soft(issues, "US_INDICIA", now, FIELD, WHY);
    else
        add_detail(issues, FIELD, WHY);
}

static void assess_foreign_tin(json_t *issues, const json_t *body, int64_t now)
{
    if (has_text(body, "foreign_tin") || has_text(body, "foreign_tin_not_required_reason"))
        return;
    add_soft(issues, "MISSING_FOREIGN_TIN", now, "foreign_tin",
             "A foreign TIN is required unless foreign_tin_not_required_reason explains why "
             "none is given");
}

/* NOT_CLAIMED without a claim; VALID when the treaty country is the
 * certified residence (and not the US itself); INVALID otherwise. */
static const char *assess_treaty(json_t *issues, taxdocs_type_t type, const json_t *body,
                                 int64_t now)
{
    const char *country = str_in(body, "treaty_claim", "country_code");
    if (country == NULL)
        return "NOT_CLAIMED";
    const char *residence = w8_residence(type, body);
    if (residence != NULL && strcmp(country, residence) == 0 && strcmp(country, "US") != 0)
        return "VALID";
    add_soft(issues, "TREATY_COUNTRY_MISMATCH", now, "treaty_claim.country_code",
             "A treaty can be claimed only with the country of residence certified on the form");
    return "INVALID";
}

static void assess_expiry(json_t *issues, const char *expiration, int64_t now)
{
    char today[TAXDOCS_DATE_LEN];
    today_of(now, today);
    if (strcmp(expiration, today) >= 0)
        return;
    char why[96];
    snprintf(why, sizeof why, "The form expired on %s; a new one must be signed", expiration);
    add_soft(issues, "EXPIRED", now, "signature_date", why);
}

/* MISSING_TIN for each residence with neither a TIN nor a reason. Returns
 * how many were found (DPS, which has no issues, only counts them). */
static size_t assess_residences(json_t *issues, const json_t *body, int64_t now)
{
    const json_t *list = json_object_get(body, "tax_residences");
    size_t i, missing = 0;
    const json_t *r;
    json_array_foreach(list, i, r) {
        if (has_text(r, "tin") || has_text(r, "tin_not_required_reason"))
            continue;
        missing++;
        char field[48];
        snprintf(field, sizeof field, "tax_residences[%zu].tin", i);
        if (issues != NULL)
            add_soft(issues, "MISSING_TIN", now, field,
                     "A TIN is required for each jurisdiction of residence unless "
                     "tin_not_required_reason explains why none is given");
    }
    return missing;
}

/* Issues whose fix is supplying what is missing make the collection
 * INCOMPLETE; the others (indicia, mismatch, expiry) do not. */
static bool is_missing_kind(const char *issue_type)
{
    return strncmp(issue_type, "MISSING_", 8) == 0;
}

/* Sets the three statuses that follow from the issues and stores them. */
static int settle(taxdocs_state_t *st, json_t *issues)
{
    bool incomplete = false;
    size_t i;
    json_t *issue;
    json_array_foreach(issues, i, issue) {
        const char *t = json_string_value(json_object_get(issue, "issue_type"));
        incomplete = incomplete || (t != NULL && is_missing_kind(t));
    }
    st->needs_resubmission = json_array_size(issues) > 0;
    char *text = json_dumps(issues, JSON_COMPACT);
    int rc = text == NULL ? -1 : SET(st->issues, text);
    free(text);
    if (rc != 0)
        return -1;
    if (SET(st->tax_documentation_status, st->needs_resubmission ? "INVALID" : "VALID") != 0)
        return -1;
    /* The data collected does not change after submission: keep what the
     * submission established once it is set. */
    if (st->data_collection_status[0] == '\0')
        return SET(st->data_collection_status, incomplete ? "INCOMPLETE" : "COMPLETE");
    return 0;
}

static int assess_dps(const json_t *body, int64_t now, taxdocs_state_t *st)
{
    bool incomplete = !json_is_true(json_object_get(body, "certified")) ||
                      assess_residences(NULL, body, now) > 0;
    const char *seller = str_at(body, "seller_type");
    if (seller != NULL && strcmp(seller, "INDIVIDUAL") == 0 && !has_text(body, "date_of_birth"))
        incomplete = true;
    const char *vat = str_at(body, "vat_number");
    const char *vat_status = "NOT_PROVIDED";
    if (vat != NULL) {
        vat_status = taxdocs_vat_number_valid(vat) ? "VALID" : "INVALID";
        st->vat_validated_at = now;
    }
    if (!taxdocs_expiration_date(str_at(body, "signature_date"), st->expiration_date))
        return -1;
    return SET(st->data_collection_status, incomplete ? "INCOMPLETE" : "COMPLETE") |
           SET(st->vat_status, vat_status);
}

int taxdocs_assess(taxdocs_type_t type, const json_t *body, int64_t now, taxdocs_state_t *out)
{
    memset(out, 0, sizeof *out);
    out->type = type;
    if (type == TAXDOCS_DPS)
        return assess_dps(body, now, out);
    json_t *issues = json_array();
    if (issues == NULL)
        return -1;
    int rc = 0;
    assess_certified(issues, body, now);
    if (type == TAXDOCS_W9)
        rc = SET(out->tin_status, "PENDING");
    if (is_w8(type)) {
        assess_us_indicia(issues, type, body, now);
        assess_foreign_tin(issues, body, now);
        rc = SET(out->treaty_claim_status, assess_treaty(issues, type, body, now));
        if (!taxdocs_expiration_date(str_at(body, "signature_date"), out->expiration_date))
            rc = -1;
        else
            assess_expiry(issues, out->expiration_date, now);
    }
    if (type == TAXDOCS_SELF_CERT)
        assess_residences(issues, body, now);
    if (rc == 0)
        rc = settle(out, issues);
    json_decref(issues);
    return rc;
}

int taxdocs_apply_tin_result(taxdocs_state_t *st, const char *status, int64_t validated_at)
{
    if (st->type != TAXDOCS_W9)
        return -1;
    /* An opaque status longer than the column is cut, never refused: the
     * engine's result must be recordable. */
    snprintf(st->tin_status, sizeof st->tin_status, "%s", status);
    st->tin_validated_at = validated_at;
    const char *issue_type = strcmp(status, "MISMATCH") == 0         ? "TIN_MISMATCH"
                             : strcmp(status, "INVALID_FORMAT") == 0 ? "TIN_INVALID_FORMAT"
                                                                     : NULL;
    json_t *issues = json_loads(st->issues, 0, NULL);
    if (!json_is_array(issues)) {
        json_decref(issues);
        return -1;
    }
    /* The latest result speaks for the TIN: an earlier result's issue goes. */
    for (size_t i = json_array_size(issues); i-- > 0;) {
        const char *t = json_string_value(json_object_get(json_array_get(issues, i), "issue_type"));
        if (t != NULL && strncmp(t, "TIN_", 4) == 0)
            json_array_remove(issues, i);
    }
    if (issue_type != NULL)
        add_soft(issues, issue_type, validated_at, "tin",
                 strcmp(status, "MISMATCH") == 0
                     ? "The name and TIN do not match the tax authority's records"
                     : "The TIN is not a valid number of its type");
    int rc = settle(st, issues);
    json_decref(issues);
    return rc;
}

/* ---- the objects as answered */

static json_t *dps_json(const taxdocs_state_t *st)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "data_collection_status",
                          st->data_collection_status, "expiration_date", st->expiration_date,
                          "vat_status", st->vat_status);
    if (o != NULL && st->vat_validated_at != 0 &&
        json_object_set_new(o, "vat_validation_date", jsonval_time(st->vat_validated_at)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *taxdocs_object_json(const taxdocs_state_t *st)
{
    if (st->type == TAXDOCS_DPS)
        return dps_json(st);
    json_t *issues = json_loads(st->issues, 0, NULL);
    if (!json_is_array(issues)) {
        json_decref(issues);
        return NULL;
    }
    json_t *o = json_object();
    int rc = json_object_set_new(o, "data_collection_status",
                                 json_string(st->data_collection_status));
    if (st->type != TAXDOCS_SELF_CERT)
        rc |= json_object_set_new(o, "type", json_string(taxdocs_type_name(st->type)));
    rc |= json_object_set_new(o, "needs_resubmission", json_boolean(st->needs_resubmission)) |
          json_object_set_new(o, "tax_documentation_status",
                              json_string(st->tax_documentation_status)) |
          json_object_set_new(o, "issues", issues);
    if (st->type == TAXDOCS_W9) {
        rc |= json_object_set_new(o, "tin_status", json_string(st->tin_status));
        if (st->tin_validated_at != 0)
            rc |= json_object_set_new(o, "tin_validation_date", jsonval_time(st->tin_validated_at));
    }
    if (is_w8(st->type))
        rc |= json_object_set_new(o, "expiration_date", json_string(st->expiration_date)) |
              json_object_set_new(o, "treaty_claim_status", json_string(st->treaty_claim_status));
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *taxdocs_status_json(const char *owner_uuid,
                            const taxdocs_state_t *const objects[TAXDOCS_OBJECT_COUNT])
{
    json_t *status = json_pack("{s:s}", "account_owner_id", owner_uuid);
    if (status == NULL)
        return NULL;
    for (int i = 0; i < TAXDOCS_OBJECT_COUNT; i++) {
        if (objects[i] == NULL)
            continue;
        json_t *o = taxdocs_object_json(objects[i]);
        if (o == NULL || json_object_set_new(status, OBJECT_NAMES[i], o) != 0) {
            json_decref(status);
            return NULL;
        }
    }
    return status;
}
