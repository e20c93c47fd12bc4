/* test_comprehensive: Taxbit's COMPREHENSIVE model (src/taxdocs/comprehensive.c).
 * The four bodies observed from the real SDK (docs/taxbit-sdk.md § 1.3: DPS DE,
 * W-9, W-8BEN with a mixed-script name, W-8BEN-E GR with ftin ""), two
 * disregarded entities (a US SM_LLC without election, a foreign
 * DISREGARDED_ENTITY): each is accepted, its form derived, and its native
 * document built exactly per § 6.3 and passing taxdocs_check. Then one
 * refused body per rule of § 3, with the issue's path; the reverse
 * conversion of native documents; masking. JSON in this file is written
 * with ' for " (see J()). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/validate.h"
#include "taxdocs/comprehensive.h"
#include "taxdocs/model.h"

static int64_t NOW; /* 2026-11-25T04:00:00Z, set in main */

/* Parses test JSON written with ' for ". */
static json_t *J(const char *text)
{
    char *copy = strdup(text);
    for (char *p = copy; *p != '\0'; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t err;
    json_t *v = json_loads(copy, JSON_DECODE_ANY, &err);
    free(copy);
    if (v == NULL)
        fail_msg("bad test JSON: %s (%s)", err.text, text);
    return v;
}

/* RFC 7386 merge patch: null removes a key. */
static void merge(json_t *target, const json_t *patch)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)patch, key, value) {
        json_t *cur = json_object_get(target, key);
        if (json_is_null(value))
            json_object_del(target, key);
        else if (json_is_object(value) && json_is_object(cur))
            merge(cur, value);
        else
            json_object_set(target, key, value);
    }
}

static const char *DPS_DE =
    "{'account_holder':{'address':{'city':'Berlin','country':'DE','first_line':'Hauptstr. 1',"
    "'postal_code':'10115'},'date_of_birth':'03/14/1980','name':'J\xc3\xbcrgen M\xc3\xbcller',"
    "'ftin_not_legally_required':false,'tax_residences':[{'country':'DE','tin':'12345678901',"
    "'tin_not_required':false}],'vatin_not_required':true,'is_individual':true},"
    "'document_type':'COMPREHENSIVE','is_not_subject_backup_withholding':false,"
    "'is_confirmed_correct_complete':true,'questionnaire':'DPS','schema_version':'1.0',"
    "'signature_date':'2026-11-25T03:01:36.705Z','source':'Taxbit React SDK v1.0.0-beta.6'}";

static const char *W9_BODY =
    "{'account_holder':{'address':{'city':'Seattle','country':'US','state_or_province':'WA',"
    "'first_line':'1 Main St','postal_code':'98101'},'name':'Jane Q Public',"
    "'ftin_not_legally_required':false,'tin':'231456789','is_us_person':true,"
    "'us_account_type':'INDIVIDUAL'},'document_type':'COMPREHENSIVE','has_certified':true,"
    "'is_not_subject_backup_withholding':true,'questionnaire':'W-FORM','schema_version':'1.0',"
    "'signature':'Jane Q Public','signature_date':'2026-11-25T03:01:58.212Z',"
    "'source':'Taxbit React SDK v1.0.0-beta.6'}";

#define LUKASZ "\xc5\x81ukasz Dvo\xc5\x99\xc3\xa1k \xd0\x98\xd0\xb2\xd0\xb0\xd0\xbd\xd0\xbe\xd0\xb2"
static const char *W8BEN_BODY =
    "{'account_holder':{'address':{'city':'Warszawa','country':'PL','first_line':'ul. Prosta 1'},"
    "'country_of_citizenship':'PL','date_of_birth':'07/02/1975','name':'" LUKASZ "',"
    "'ftin':'44051401359','ftin_not_legally_required':false,'is_us_person':false,"
    "'foreign_account_type':'INDIVIDUAL'},'document_type':'COMPREHENSIVE','has_certified':true,"
    "'is_not_subject_backup_withholding':false,'questionnaire':'W-FORM','schema_version':'1.0',"
    "'signature':'" LUKASZ "','signature_date':'2026-11-25T03:02:10.000Z',"
    "'source':'Taxbit React SDK v1.0.0-beta.6'}";

static const char *W8BENE_BODY =
    "{'account_holder':{'address':{'city':'Athens','country':'GR','first_line':'Odos 1',"
    "'postal_code':'10558'},'country_of_citizenship':'GR','name':'Alpha AE','ftin':'',"
    "'ftin_not_legally_required':true,'is_us_person':false,'foreign_account_type':'CORPORATION'},"
    "'document_type':'COMPREHENSIVE','has_certified':true,'is_not_subject_backup_withholding':false,"
    "'questionnaire':'W-FORM','schema_version':'1.0','signature':'Maria Papadopoulou',"
    "'signature_date':'2026-11-25T03:03:00.000Z','source':'Taxbit React SDK v1.0.0-beta.6'}";

/* An SM_LLC without election is disregarded: the form is its owner's W-9. */
static const char *DRE_US_BODY =
    "{'account_holder':{'is_us_person':true,'us_account_type':'SM_LLC','us_smllc_election':false},"
    "'regarded_owner':{'name':'Pat Owner','dba_name':'Pat LLC','address':{'city':'Austin',"
    "'country':'US','state_or_province':'TX','first_line':'2 Oak Rd','postal_code':'78701-1234'},"
    "'tin':'912-70-1234','is_us_person':true,'us_account_type':'INDIVIDUAL'},"
    "'document_type':'COMPREHENSIVE','has_certified':true,'is_not_subject_backup_withholding':true,"
    "'questionnaire':'W-FORM','schema_version':'1.0','signature':'Pat Owner',"
    "'signature_date':'2026-11-25T03:04:00.000Z'}";

/* A foreign disregarded entity owned by a foreign trust: W-8BEN-E. */
static const char *DRE_FOREIGN_BODY =
    "{'account_holder':{'is_us_person':false,'foreign_account_type':'DISREGARDED_ENTITY'},"
    "'regarded_owner':{'name':'Family Trust','dba_name':'Trust Holdings ULC',"
    "'address':{'city':'Toronto','country':'CA',"
    "'state_or_province':'ON','first_line':'1 Bay St','postal_code':'M5J 2N8'},"
    "'country_of_citizenship':'CA','ftin':'123456789','is_us_person':false,"
    "'foreign_account_type':'TRUST','foreign_trust_classification':'GRANTOR_TRUST',"
    "'mailing_address_is_different':true,'mailing_address':{'city':'Vancouver','country':'CA',"
    "'state_or_province':'BC','first_line':'PO Box 9','postal_code':'V6B1A1'}},"
    "'document_type':'COMPREHENSIVE','has_certified':true,'questionnaire':'W-FORM',"
    "'schema_version':'1.0','signature':'Any Signer','signature_date':'2026-11-25T03:05:00Z'}";

/* Checks body; on success compares the native document with `native`. */
static void accepts(const char *body_text, taxdocs_type_t type, const char *native_text,
                    const char *tin_type, const char *vat_note)
{
    json_t *body = J(body_text);
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
    if (n != 0) {
        char *dump = json_dumps(issues, JSON_COMPACT);
        fail_msg("refused (%zu): %s", n, dump);
    }
    assert_int_equal(c.type, type);
    assert_string_equal(c.questionnaire, type == TAXDOCS_DPS ? "DPS" : "W-FORM");
    assert_string_equal(c.tin_type, tin_type);
    assert_string_equal(c.vat_note, vat_note);
    json_t *want = J(native_text);
    if (!json_equal(c.native, want)) {
        char *got = json_dumps(c.native, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("native differs: %s", got);
    }
    /* what the submit path will do next */
    json_t *again = json_array();
    taxdocs_type_t t;
    assert_int_equal(taxdocs_check(c.native, NOW, again, &t), 0);
    taxdocs_state_t st;
    assert_int_equal(taxdocs_assess(t, c.native, NOW, &st), 0);
    json_decref(again);
    json_decref(want);
    taxdocs_comprehensive_clear(&c);
    assert_null(c.native);
    json_decref(issues);
    json_decref(body);
}

static void test_observed_dps_de(void **state)
{
    (void)state;
    accepts(DPS_DE, TAXDOCS_DPS,
            "{'document_type':'DPS','name':'J\xc3\xbcrgen M\xc3\xbcller','seller_type':'INDIVIDUAL',"
            "'address':{'line1':'Hauptstr. 1','city':'Berlin','postal_code':'10115',"
            "'country_code':'DE'},'date_of_birth':'1980-03-14','tax_residences':[{'country_code':"
            "'DE','tin':'12345678901'}],'certified':true,'signature_date':'2026-11-25'}",
            "", "NOT_REQUIRED");
}

static void test_observed_w9(void **state)
{
    (void)state;
    accepts(W9_BODY, TAXDOCS_W9,
            "{'document_type':'W-9','name':'Jane Q Public','entity_classification':'INDIVIDUAL',"
            "'tin_type':'SSN','tin':'231456789','address':{'line1':'1 Main St','city':'Seattle',"
            "'state':'WA','postal_code':'98101','country_code':'US'},'certified':true,"
            "'signature_date':'2026-11-25'}",
            "SSN", "");
    json_t *body = J(W9_BODY);
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    assert_int_equal(taxdocs_comprehensive_check(body, NOW, issues, &c), 0);
    assert_string_equal(c.signature, "Jane Q Public");
    taxdocs_comprehensive_clear(&c);
    json_decref(issues);
    json_decref(body);
}

static void test_observed_w8ben_mixed_script(void **state)
{
    (void)state;
    accepts(W8BEN_BODY, TAXDOCS_W8BEN,
            "{'document_type':'W-8BEN','name':'" LUKASZ "','country_of_citizenship':'PL',"
            "'permanent_residence_address':{'line1':'ul. Prosta 1','city':'Warszawa',"
            "'country_code':'PL'},'foreign_tin':'44051401359','date_of_birth':'1975-07-02',"
            "'certified':true,'signature_date':'2026-11-25'}",
            "", "");
}

static void test_observed_w8bene_gr_without_ftin(void **state)
{
    (void)state;
    accepts(W8BENE_BODY, TAXDOCS_W8BENE,
            "{'document_type':'W-8BEN-E','name':'Alpha AE','country_of_organization':'GR',"
            "'chapter3_status':'CORPORATION','permanent_residence_address':{'line1':'Odos 1',"
            "'city':'Athens','postal_code':'10558','country_code':'GR'},"
            "'foreign_tin_not_required_reason':'Not legally required (certified in the Taxbit "
            "questionnaire)','certified':true,'signature_date':'2026-11-25'}",
            "", "");
}

static void test_dre_us_sm_llc_is_the_owners_w9(void **state)
{
    (void)state;
    accepts(DRE_US_BODY, TAXDOCS_W9,
            "{'document_type':'W-9','name':'Pat Owner','business_name':'Pat LLC',"
            "'entity_classification':'INDIVIDUAL','tin_type':'ITIN','tin':'912701234',"
            "'address':{'line1':'2 Oak Rd','city':'Austin','state':'TX','postal_code':'78701-1234',"
            "'country_code':'US'},'certified':true,'signature_date':'2026-11-25'}",
            "ITIN", "");
}

static void test_dre_foreign_is_the_owners_w8bene(void **state)
{
    (void)state;
    accepts(DRE_FOREIGN_BODY, TAXDOCS_W8BENE,
            "{'document_type':'W-8BEN-E','name':'Family Trust','country_of_organization':'CA',"
            "'chapter3_status':'GRANTOR_TRUST','permanent_residence_address':{'line1':'1 Bay St',"
            "'city':'Toronto','state':'ON','postal_code':'M5J 2N8','country_code':'CA'},"
            "'mailing_address':{'line1':'PO Box 9','city':'Vancouver','state':'BC',"
            "'postal_code':'V6B1A1','country_code':'CA'},'foreign_tin':'123456789',"
            "'certified':true,'signature_date':'2026-11-25'}",
            "", "");
}

/* A regarded owner that is a trust answers no EIN question: its TIN is an
 * EIN (§ 6.3), and the SDK does not ask for us_trust_estate_ein there. */
static void test_dre_owner_trust_needs_no_ein_answer(void **state)
{
    (void)state;
    json_t *body = J(DRE_US_BODY);
    json_t *patch = J("{'regarded_owner':{'us_account_type':'TRUST_ESTATE','tin':'12-3456780'},"
                      "'signature':'Trustee'}");
    merge(body, patch);
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
    if (n != 0)
        fail_msg("refused: %s", json_dumps(issues, JSON_COMPACT));
    assert_string_equal(c.tin_type, "EIN");
    assert_string_equal(json_string_value(json_object_get(c.native, "business_name")), "Pat LLC");
    taxdocs_comprehensive_clear(&c);
    json_decref(issues);
    json_decref(patch);
    json_decref(body);
}

/* W-9 classifications and TIN types of § 6.3. */
static void test_w9_classifications_and_tin_types(void **state)
{
    (void)state;
    static const struct {
        const char *patch, *classification, *tin_type;
    } CASES[] = {
        {"{'us_account_type':'SOLE_PROPRIETOR','us_sole_proprietor_ein':false,'dba_name':'Shop'}",
         "SOLE_PROPRIETOR", "SSN"},
        {"{'us_account_type':'SOLE_PROPRIETOR','us_sole_proprietor_ein':true}", "SOLE_PROPRIETOR",
         "EIN"},
        {"{'us_account_type':'TRUST_ESTATE','us_trust_estate_ein':false,'dba_name':'T'}",
         "TRUST_ESTATE", "SSN"},
        {"{'us_account_type':'LLC','us_llc_classification':'S_CORPORATION'}", "LLC_S", "EIN"},
        {"{'us_account_type':'SM_LLC','us_smllc_election':true,'us_llc_classification':"
         "'PARTNERSHIP'}", "LLC_P", "EIN"},
        {"{'us_account_type':'C_CORPORATION'}", "C_CORPORATION", "EIN"},
        {"{'us_account_type':'OTHER','us_other_classification':'Cooperative'}", "OTHER", "EIN"},
        {"{'tin':'912-70-1234'}", "INDIVIDUAL", "ITIN"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        json_t *body = J(W9_BODY);
        json_t *patch = J(CASES[i].patch);
        merge(json_object_get(body, "account_holder"), patch);
        json_object_set_new(body, "signature", json_string("Someone Else"));
        if (strcmp(CASES[i].classification, "INDIVIDUAL") == 0)
            json_object_set_new(body, "signature", json_string("Jane Q Public"));
        json_t *issues = json_array();
        taxdocs_comprehensive_t c;
        size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
        if (n != 0)
            fail_msg("case %zu refused: %s", i, json_dumps(issues, JSON_COMPACT));
        assert_string_equal(json_string_value(json_object_get(c.native, "entity_classification")),
                            CASES[i].classification);
        assert_string_equal(c.tin_type, CASES[i].tin_type);
        assert_string_equal(json_string_value(json_object_get(c.native, "tin_type")),
                            CASES[i].tin_type);
        taxdocs_comprehensive_clear(&c);
        json_decref(issues);
        json_decref(patch);
        json_decref(body);
    }
}

/* VAT numbers get their country's prefix (EL for Greece); outside the EU
 * they are not checked and noted NON_EU. */
static void test_dps_vat_prefix_and_notes(void **state)
{
    (void)state;
    static const struct {
        const char *patch, *vat_number, *note;
    } CASES[] = {
        {"{'vatin_not_required':false,'vatin':'123456789','vatin_country':'DE'}", "DE123456789", ""},
        {"{'vatin_not_required':false,'vatin':'DE123456789','vatin_country':'DE'}", "DE123456789",
         ""},
        {"{'vatin_not_required':false,'vatin':'094019245','vatin_country':'GR','tax_residences':"
         "[{'country':'DE','tin':'12345678901'},{'country':'GR','tin':'123456789'}]}",
         "EL094019245", ""},
        {"{'vatin_not_required':false,'vatin':'GR094019245','vatin_country':'GR','tax_residences':"
         "[{'country':'DE','tin':'12345678901'},{'country':'GR','tin_not_required':true}]}",
         "EL094019245", ""},
        {"{'vatin_not_required':false,'vatin':'CHE123456789','vatin_country':'CH','tax_residences':"
         "[{'country':'DE','tin':'12345678901'},{'country':'CH','tin':'7561234567'}]}",
         NULL, "NON_EU"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        json_t *body = J(DPS_DE);
        json_t *patch = J(CASES[i].patch);
        merge(json_object_get(body, "account_holder"), patch);
        json_t *issues = json_array();
        taxdocs_comprehensive_t c;
        size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
        if (n != 0)
            fail_msg("case %zu refused: %s", i, json_dumps(issues, JSON_COMPACT));
        const char *vat = json_string_value(json_object_get(c.native, "vat_number"));
        if (CASES[i].vat_number == NULL)
            assert_null(vat);
        else
            assert_string_equal(vat, CASES[i].vat_number);
        assert_string_equal(c.vat_note, CASES[i].note);
        taxdocs_comprehensive_clear(&c);
        json_decref(issues);
        json_decref(patch);
        json_decref(body);
    }
}

/* A client clock up to a day ahead is fine; the native date is ours. */
static void test_signature_date_ahead_by_hours(void **state)
{
    (void)state;
    json_t *body = J(W9_BODY);
    json_object_set_new(body, "signature_date", json_string("2026-11-26T01:00:00.000Z"));
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    assert_int_equal(taxdocs_comprehensive_check(body, NOW, issues, &c), 0);
    assert_string_equal(json_string_value(json_object_get(c.native, "signature_date")),
                        "2026-11-25");
    taxdocs_comprehensive_clear(&c);
    json_decref(issues);
    json_decref(body);
}

/* A minor is accepted (no 18+ rule: the SDK has none in use), and so is
 * someone born exactly 120 years ago by year. */
static void test_no_minimum_age_and_120_years(void **state)
{
    (void)state;
    const char *ok[] = {"01/01/2026", "11/25/2026", "01/01/1906", "12/31/1906"};
    for (size_t i = 0; i < 4; i++) {
        json_t *body = J(W8BEN_BODY);
        json_object_set_new(json_object_get(body, "account_holder"), "date_of_birth",
                            json_string(ok[i]));
        json_t *issues = json_array();
        taxdocs_comprehensive_t c;
        size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
        if (n != 0)
            fail_msg("%s refused: %s", ok[i], json_dumps(issues, JSON_COMPACT));
        taxdocs_comprehensive_clear(&c);
        json_decref(issues);
        json_decref(body);
    }
}

/* ---- one refusal per rule */

typedef struct bad {
    const char *name;
    const char **base;
    const char *patch; /* merge patch of the whole body */
    const char *path;  /* the expected issue's path */
} bad_t;

static const bad_t BAD[] = {
    {"not an object", &W9_BODY, NULL, "[]"},
    {"document type", &W9_BODY, "{'document_type':'W-9'}", "['document_type']"},
    {"questionnaire", &W9_BODY, "{'questionnaire':'W-8'}", "['questionnaire']"},
    {"schema version", &W9_BODY, "{'schema_version':'2.0'}", "['schema_version']"},
    {"no account holder", &W9_BODY, "{'account_holder':null}", "['account_holder']"},
    {"holder key of the wrong type", &W9_BODY, "{'account_holder':{'tin':231456789}}",
     "['account_holder','tin']"},
    {"enum value", &W9_BODY, "{'account_holder':{'us_account_type':'LLP'}}",
     "['account_holder','us_account_type']"},
    {"signature date not a datetime", &W9_BODY, "{'signature_date':'2026-11-25'}",
     "['signature_date']"},
    {"signature date over a day ahead", &W9_BODY, "{'signature_date':'2026-11-26T05:00:01Z'}",
     "['signature_date']"},
    /* classification */
    {"W-FORM without account type", &W9_BODY,
     "{'account_holder':{'us_account_type':null,'is_us_person':null}}",
     "['account_holder','us_account_type']"},
    {"both account types", &W9_BODY, "{'account_holder':{'foreign_account_type':'INDIVIDUAL'}}",
     "['account_holder','foreign_account_type']"},
    {"is_us_person contradicts", &W9_BODY, "{'account_holder':{'is_us_person':false}}",
     "['account_holder','is_us_person']"},
    {"DRE without regarded owner", &DRE_US_BODY, "{'regarded_owner':null}", "['regarded_owner']"},
    {"regarded owner without the entity's name", &DRE_FOREIGN_BODY,
     "{'regarded_owner':{'dba_name':null}}", "['regarded_owner','dba_name']"},
    {"US regarded owner entity with a birth date", &DRE_US_BODY,
     "{'regarded_owner':{'us_account_type':'TRUST_ESTATE','date_of_birth':'01/01/1980'}}",
     "['regarded_owner','date_of_birth']"},
    {"regarded owner a DRE", &DRE_FOREIGN_BODY,
     "{'regarded_owner':{'foreign_account_type':'DISREGARDED_ENTITY'}}",
     "['regarded_owner','foreign_account_type']"},
    {"DPS without is_individual", &DPS_DE, "{'account_holder':{'is_individual':null}}",
     "['account_holder','is_individual']"},
    /* W-9 */
    {"W-9 without name", &W9_BODY, "{'account_holder':{'name':'  '}}", "['account_holder','name']"},
    {"W-9 without TIN", &W9_BODY, "{'account_holder':{'tin':null}}", "['account_holder','tin']"},
    {"W-9 TIN of 8 digits", &W9_BODY, "{'account_holder':{'tin':'23145678'}}",
     "['account_holder','tin']"},
    {"W-9 TIN dashes misplaced", &W9_BODY, "{'account_holder':{'tin':'2314-56789'}}",
     "['account_holder','tin']"},
    {"W-9 TIN deny-listed", &W9_BODY, "{'account_holder':{'tin':'123-45-6789'}}",
     "['account_holder','tin']"},
    {"W-9 TIN 00000", &W9_BODY, "{'account_holder':{'tin':'000001234'}}",
     "['account_holder','tin']"},
    {"W-9 LLC without classification", &W9_BODY,
     "{'account_holder':{'us_account_type':'LLC'},'signature':'x'}",
     "['account_holder','us_llc_classification']"},
    {"W-9 SM_LLC without election", &W9_BODY,
     "{'account_holder':{'us_account_type':'SM_LLC'},'signature':'x'}",
     "['account_holder','us_smllc_election']"},
    {"W-9 sole proprietor without EIN answer", &W9_BODY,
     "{'account_holder':{'us_account_type':'SOLE_PROPRIETOR'},'signature':'x'}",
     "['account_holder','us_sole_proprietor_ein']"},
    {"W-9 OTHER without text", &W9_BODY,
     "{'account_holder':{'us_account_type':'OTHER'},'signature':'x'}",
     "['account_holder','us_other_classification']"},
    {"W-9 corporation with a birth date", &W9_BODY,
     "{'account_holder':{'us_account_type':'C_CORPORATION','date_of_birth':'01/01/1980'},"
     "'signature':'x'}",
     "['account_holder','date_of_birth']"},
    {"W-9 without signature", &W9_BODY, "{'signature':null}", "['signature']"},
    {"W-9 individual signs another name", &W9_BODY, "{'signature':'jane q public'}",
     "['signature']"},
    {"DRE signature not the owner's name", &DRE_US_BODY, "{'signature':'Pat LLC'}",
     "['signature']"},
    /* addresses */
    {"address without country", &W9_BODY, "{'account_holder':{'address':{'country':null}}}",
     "['account_holder','address','country']"},
    {"address country not ISO", &W9_BODY, "{'account_holder':{'address':{'country':'XX'}}}",
     "['account_holder','address','country']"},
    {"address without street", &W9_BODY, "{'account_holder':{'address':{'first_line':null}}}",
     "['account_holder','address','first_line']"},
    {"address without city", &W8BEN_BODY, "{'account_holder':{'address':{'city':''}}}",
     "['account_holder','address','city']"},
    {"US address without state", &W9_BODY,
     "{'account_holder':{'address':{'state_or_province':null}}}",
     "['account_holder','address','state_or_province']"},
    {"US state unknown", &W9_BODY, "{'account_holder':{'address':{'state_or_province':'AA'}}}",
     "['account_holder','address','state_or_province']"},
    {"US ZIP", &W9_BODY, "{'account_holder':{'address':{'postal_code':'9810'}}}",
     "['account_holder','address','postal_code']"},
    {"US territory without ZIP", &W9_BODY,
     "{'account_holder':{'address':{'state_or_province':'PR','postal_code':null}}}",
     "['account_holder','address','postal_code']"},
    {"CA province", &DRE_FOREIGN_BODY,
     "{'regarded_owner':{'address':{'state_or_province':'PQ'}}}",
     "['regarded_owner','address','state_or_province']"},
    {"CA postal code", &DRE_FOREIGN_BODY, "{'regarded_owner':{'address':{'postal_code':'D5J 2N8'}}}",
     "['regarded_owner','address','postal_code']"},
    {"mailing address when different", &DRE_FOREIGN_BODY,
     "{'regarded_owner':{'mailing_address':null}}", "['regarded_owner','mailing_address']"},
    /* W-8 */
    {"W-8BEN without birth date", &W8BEN_BODY, "{'account_holder':{'date_of_birth':null}}",
     "['account_holder','date_of_birth']"},
    {"birth date as YYYY-MM-DD", &W8BEN_BODY, "{'account_holder':{'date_of_birth':'1975-07-02'}}",
     "['account_holder','date_of_birth']"},
    {"birth date not a real date", &W8BEN_BODY,
     "{'account_holder':{'date_of_birth':'02/30/1975'}}", "['account_holder','date_of_birth']"},
    {"birth date in the future", &W8BEN_BODY, "{'account_holder':{'date_of_birth':'11/26/2026'}}",
     "['account_holder','date_of_birth']"},
    {"born 121 years ago", &W8BEN_BODY, "{'account_holder':{'date_of_birth':'12/31/1905'}}",
     "['account_holder','date_of_birth']"},
    {"W-8BEN signature not the name", &W8BEN_BODY, "{'signature':'Lukasz Dvorak'}",
     "['signature']"},
    {"W-8 citizenship missing", &W8BENE_BODY, "{'account_holder':{'country_of_citizenship':null}}",
     "['account_holder','country_of_citizenship']"},
    {"W-8 citizenship not ISO", &W8BENE_BODY, "{'account_holder':{'country_of_citizenship':'EL'}}",
     "['account_holder','country_of_citizenship']"},
    {"W-8BEN-E trust without class", &W8BENE_BODY,
     "{'account_holder':{'foreign_account_type':'TRUST'}}",
     "['account_holder','foreign_trust_classification']"},
    {"W-8BEN-E other without class", &W8BENE_BODY,
     "{'account_holder':{'foreign_account_type':'OTHER'}}",
     "['account_holder','foreign_other_classification']"},
    /* DPS */
    {"DPS without residences", &DPS_DE, "{'account_holder':{'tax_residences':[]}}",
     "['account_holder','tax_residences']"},
    {"DPS six residences", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'12'},{'country':'FR','tin':'12'},"
     "{'country':'IT','tin':'12'},{'country':'ES','tin':'12'},{'country':'AT','tin':'12'},"
     "{'country':'BE','tin':'12'}]}}",
     "['account_holder','tax_residences']"},
    {"DPS residence country not ISO", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'12345678901'},{'country':'XK',"
     "'tin':'12345'}]}}",
     "['account_holder','tax_residences',1,'country']"},
    {"DPS residence without TIN", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE'}]}}",
     "['account_holder','tax_residences',0,'tin']"},
    {"DPS residence TIN repeated", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'11111111111'}]}}",
     "['account_holder','tax_residences',0,'tin']"},
    {"DPS residence TIN too long", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'12345678901234567890123'}]}}",
     "['account_holder','tax_residences',0,'tin']"},
    {"DPS US residence TIN", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'12345678901'},{'country':'US',"
     "'tin':'987654321'}]}}",
     "['account_holder','tax_residences',1,'tin']"},
    {"DPS GB NINO of an individual", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin':'12345678901'},{'country':'GB',"
     "'tin':'GB123456A'}]}}",
     "['account_holder','tax_residences',1,'tin']"},
    {"DPS residences miss the address country", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'FR','tin':'1234567890123'}]}}",
     "['account_holder','tax_residences']"},
    {"DPS residences miss the VAT country", &DPS_DE,
     "{'account_holder':{'vatin_not_required':false,'vatin':'123456789','vatin_country':'AT'}}",
     "['account_holder','tax_residences']"},
    {"DPS residence TIN is the VAT number", &DPS_DE,
     "{'account_holder':{'vatin_not_required':false,'vatin':'12345678901','vatin_country':'DE'}}",
     "['account_holder','tax_residences',0,'tin']"},
    {"DPS VAT too short", &DPS_DE,
     "{'account_holder':{'vatin_not_required':false,'vatin':'1234567','vatin_country':'DE'}}",
     "['account_holder','vatin']"},
    {"DPS VAT without country", &DPS_DE,
     "{'account_holder':{'vatin_not_required':false,'vatin':'123456789'}}",
     "['account_holder','vatin_country']"},
    {"DPS VAT country not ISO", &DPS_DE,
     "{'account_holder':{'vatin_not_required':false,'vatin':'123456789','vatin_country':'EL'}}",
     "['account_holder','vatin_country']"},
    {"DPS account identifier without name", &DPS_DE,
     "{'account_holder':{'financial_account_identifier':'ACC-1'}}",
     "['account_holder','financial_account_name']"},
    {"DPS account identifier repeated", &DPS_DE,
     "{'account_holder':{'financial_account_identifier':'aaaa','financial_account_name':'Main'}}",
     "['account_holder','financial_account_identifier']"},
    {"DPS registration number repeated", &DPS_DE,
     "{'account_holder':{'is_individual':false,'date_of_birth':null,"
     "'business_registration_number':'0000'}}",
     "['account_holder','business_registration_number']"},
    {"DPS registration number is the VAT number", &DPS_DE,
     "{'account_holder':{'is_individual':false,'date_of_birth':null,'vatin_not_required':false,"
     "'business_registration_number':'123456789','vatin':'123456789','vatin_country':'DE'}}",
     "['account_holder','business_registration_number']"},
    {"DPS registration country not ISO", &DPS_DE,
     "{'account_holder':{'is_individual':false,'date_of_birth':null,"
     "'business_registration_country':'ZZ'}}",
     "['account_holder','business_registration_country']"},
    {"DPS EU individual without birth date", &DPS_DE, "{'account_holder':{'date_of_birth':null}}",
     "['account_holder','date_of_birth']"},
    {"DPS EU individual without TIN: city of birth", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin_not_required':true}]}}",
     "['account_holder','city_of_birth']"},
    {"DPS EU individual without TIN: country of birth", &DPS_DE,
     "{'account_holder':{'tax_residences':[{'country':'DE','tin_not_required':true}],"
     "'city_of_birth':'Bonn','country_of_birth':'XX'}}",
     "['account_holder','country_of_birth']"},
};

static bool has_path(const json_t *issues, const json_t *path)
{
    size_t i;
    const json_t *issue;
    json_array_foreach(issues, i, issue) {
        if (json_equal(json_object_get(issue, "path"), path))
            return true;
    }
    return false;
}

static void test_one_refusal_per_rule(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        json_t *body = J(*BAD[i].base);
        if (BAD[i].patch == NULL) {
            json_decref(body);
            body = J("['not', 'an', 'object']");
        } else {
            json_t *patch = J(BAD[i].patch);
            merge(body, patch);
            json_decref(patch);
        }
        json_t *issues = json_array();
        taxdocs_comprehensive_t c;
        size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
        json_t *path = J(BAD[i].path);
        if (n == 0 || n == TAXDOCS_COMPREHENSIVE_FAILED || !has_path(issues, path))
            fail_msg("%s: n=%zu, issues %s", BAD[i].name, n, json_dumps(issues, JSON_COMPACT));
        assert_int_equal(json_array_size(issues), n);
        assert_null(c.native);
        /* never a submitted value in a message */
        char *text = json_dumps(issues, 0);
        assert_null(strstr(text, "231456789"));
        assert_null(strstr(text, "12345678901"));
        free(text);
        json_decref(path);
        json_decref(issues);
        json_decref(body);
    }
}

/* Unknown keys are ignored, as by the native schemas (additive contract). */
static void test_unknown_keys_ignored(void **state)
{
    (void)state;
    json_t *body = J(W9_BODY);
    json_object_set_new(body, "future_field", json_true());
    json_object_set_new(json_object_get(body, "account_holder"), "nickname", json_string("J"));
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    assert_int_equal(taxdocs_comprehensive_check(body, NOW, issues, &c), 0);
    assert_null(json_object_get(c.native, "future_field"));
    taxdocs_comprehensive_clear(&c);
    json_decref(issues);
    json_decref(body);
}

/* ---- from_native: each accepted body converted there and back keeps
 * what the native form holds. */

static void round_trip(const char *body_text)
{
    json_t *body = J(body_text);
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    assert_int_equal(taxdocs_comprehensive_check(body, NOW, issues, &c), 0);
    json_t *back = taxdocs_comprehensive_from_native(c.type, c.native);
    assert_non_null(back);
    json_object_set_new(back, "signature", json_string(c.signature));
    if (c.type == TAXDOCS_W8BEN)
        json_object_set_new(back, "signature",
                            json_incref(json_object_get(json_object_get(back, "account_holder"),
                                                        "name")));
    json_t *issues2 = json_array();
    taxdocs_comprehensive_t c2;
    size_t n = taxdocs_comprehensive_check(back, NOW, issues2, &c2);
    if (n != 0)
        fail_msg("back refused: %s in %s", json_dumps(issues2, JSON_COMPACT),
                 json_dumps(back, JSON_COMPACT));
    assert_int_equal(c2.type, c.type);
    assert_true(json_equal(c2.native, c.native));
    taxdocs_comprehensive_clear(&c2);
    taxdocs_comprehensive_clear(&c);
    json_decref(issues2);
    json_decref(back);
    json_decref(issues);
    json_decref(body);
}

static void test_from_native_round_trips(void **state)
{
    (void)state;
    round_trip(DPS_DE);
    round_trip(W9_BODY);
    round_trip(W8BEN_BODY);
    round_trip(W8BENE_BODY);
    round_trip(DRE_FOREIGN_BODY); /* comes back as the owner's own W-8BEN-E */
}

static void test_from_native_shapes(void **state)
{
    (void)state;
    json_t *w8 = J("{'document_type':'W-8BEN','name':'Karl','country_of_citizenship':'DE',"
                   "'permanent_residence_address':{'line1':'Str 1','city':'Berlin','country_code':"
                   "'DE'},'foreign_tin_not_required_reason':'none','date_of_birth':'1980-02-29',"
                   "'certified':true,'signature_date':'2024-05-10'}");
    json_t *doc = taxdocs_comprehensive_from_native(TAXDOCS_W8BEN, w8);
    json_t *h = json_object_get(doc, "account_holder");
    assert_string_equal(json_string_value(json_object_get(doc, "questionnaire")), "W-FORM");
    assert_string_equal(json_string_value(json_object_get(doc, "document_type")), "COMPREHENSIVE");
    assert_string_equal(json_string_value(json_object_get(doc, "signature_date")),
                        "2024-05-10T00:00:00.000Z");
    assert_string_equal(json_string_value(json_object_get(h, "date_of_birth")), "02/29/1980");
    assert_string_equal(json_string_value(json_object_get(h, "ftin")), "");
    assert_true(json_is_true(json_object_get(h, "ftin_not_legally_required")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(h, "address"), "country")),
                        "DE");
    json_decref(doc);
    json_decref(w8);

    json_t *self = J("{'document_type':'SELF_CERTIFICATION','name':'Karl','account_holder_type':"
                     "'INDIVIDUAL','address':{'line1':'Str 1','city':'Berlin','country_code':'DE'},"
                     "'tax_residences':[{'country_code':'DE','tin':'12345678901'},{'country_code':"
                     "'FR','tin_not_required_reason':'x'}],'certified':false,"
                     "'signature_date':'2025-01-01'}");
    doc = taxdocs_comprehensive_from_native(TAXDOCS_SELF_CERT, self);
    h = json_object_get(doc, "account_holder");
    assert_string_equal(json_string_value(json_object_get(doc, "questionnaire")), "DPS");
    assert_true(json_is_true(json_object_get(h, "is_individual")));
    assert_true(json_is_false(json_object_get(doc, "is_confirmed_correct_complete")));
    json_t *r1 = json_array_get(json_object_get(h, "tax_residences"), 1);
    assert_true(json_is_true(json_object_get(r1, "tin_not_required")));
    json_decref(doc);
    json_decref(self);

    json_t *dps = J("{'document_type':'DPS','name':'A AE','seller_type':'ENTITY','address':"
                    "{'line1':'Odos 1','city':'Athens','country_code':'GR'},'tax_residences':"
                    "[{'country_code':'GR','tin':'123456789'}],'vat_number':'EL094019245',"
                    "'certified':true,'signature_date':'2025-01-01'}");
    doc = taxdocs_comprehensive_from_native(TAXDOCS_DPS, dps);
    h = json_object_get(doc, "account_holder");
    assert_string_equal(json_string_value(json_object_get(h, "vatin_country")), "GR");
    assert_true(json_is_false(json_object_get(h, "is_individual")));
    json_decref(doc);
    json_decref(dps);
    assert_null(taxdocs_comprehensive_from_native(TAXDOCS_W9, NULL));
}

static void test_mask(void **state)
{
    (void)state;
    json_t *doc = J(DRE_US_BODY);
    json_t *patch = J("{'account_holder':{'tin':'98-7654321','ftin':'','vatin':'DE123456789',"
                      "'tax_residences':[{'country':'DE','tin':'12345678901'}]}}");
    merge(doc, patch);
    json_decref(patch);
    taxdocs_comprehensive_mask(doc);
    json_t *h = json_object_get(doc, "account_holder");
    assert_string_equal(json_string_value(json_object_get(h, "tin")), "******4321");
    assert_string_equal(json_string_value(json_object_get(h, "ftin")), "");
    assert_string_equal(json_string_value(json_object_get(h, "vatin")), "*******6789");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(h, "tax_residences"), 0),
                                          "tin")),
        "*******8901");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "regarded_owner"), "tin")),
        "*******1234");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "regarded_owner"), "name")),
        "Pat Owner");
    json_decref(doc);
}

/* A value longer than any TIN (a body that was never checked) is masked
 * all the same, never overflowing tin_mask's buffer (found by fuzzing). */
static void test_mask_long_values(void **state)
{
    (void)state;
    char big[301];
    memset(big, '7', 300);
    big[300] = '\0';
    memcpy(big + 296, "WXYZ", 4);
    json_t *doc = json_pack("{s:{s:s, s:[{s:s}]}}", "account_holder", "ftin", big,
                            "tax_residences", "tin", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    taxdocs_comprehensive_mask(doc);
    const char *m = json_string_value(json_object_get(json_object_get(doc, "account_holder"), "ftin"));
    assert_int_equal(strlen(m), 300);
    assert_int_equal(strspn(m, "*"), 296);
    assert_string_equal(m + 296, "WXYZ");
    const char *r = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(doc, "account_holder"), "tax_residences"), 0),
        "tin"));
    assert_string_equal(r, "*\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    json_decref(doc);
}

int main(void)
{
    if (clock_parse_rfc3339("2026-11-25T04:00:00Z", &NOW) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observed_dps_de),
        cmocka_unit_test(test_observed_w9),
        cmocka_unit_test(test_observed_w8ben_mixed_script),
        cmocka_unit_test(test_observed_w8bene_gr_without_ftin),
        cmocka_unit_test(test_dre_us_sm_llc_is_the_owners_w9),
        cmocka_unit_test(test_dre_foreign_is_the_owners_w8bene),
        cmocka_unit_test(test_w9_classifications_and_tin_types),
        cmocka_unit_test(test_dre_owner_trust_needs_no_ein_answer),
        cmocka_unit_test(test_dps_vat_prefix_and_notes),
        cmocka_unit_test(test_signature_date_ahead_by_hours),
        cmocka_unit_test(test_no_minimum_age_and_120_years),
        cmocka_unit_test(test_one_refusal_per_rule),
        cmocka_unit_test(test_unknown_keys_ignored),
        cmocka_unit_test(test_from_native_round_trips),
        cmocka_unit_test(test_from_native_shapes),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_mask_long_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
