/* test_pdf: the W-9 / W-8BEN / W-8BEN-E PDFs (src/taxdocs/pdf.c), read back
 * the way a person's PDF reader would: poppler's pdftotext (plain for running
 * text, -layout for "label  value" rows, -bbox for where words sit) and
 * pdffonts. Each form from a native document with every field present, names
 * in Latin, Latin Extended, Cyrillic and Greek; the font embedded (never Type
 * 3); a missing font; the types that have no form; odd and maximal input
 * (wrapped inside the margins, no crash); no clock in the bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "taxdocs/pdf.h"

#define FONT TAXDOCS_PDF_DEFAULT_FONT
#define RIGHT_EDGE (612.0 - 54.0) /* the page's right margin */
#define CONTENT_BOTTOM (792.0 - 52.0) /* where the footer band begins */

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, 0, &err);
    if (v == NULL)
        fail_msg("bad test JSON: %s", err.text);
    return v;
}

static const char *W9 =
    "{\"document_type\":\"W-9\",\"name\":\"Jane Q Public\",\"business_name\":\"Public Widgets "
    "LLC\",\"entity_classification\":\"LLC_P\",\"tin_type\":\"EIN\",\"tin\":\"12-3456789\","
    "\"address\":{\"line1\":\"123 Main Street\",\"line2\":\"Suite 400\",\"city\":\"Springfield\","
    "\"state\":\"IL\",\"postal_code\":\"62701\",\"country_code\":\"US\"},"
    "\"exempt_payee_code\":\"13\",\"certified\":true,\"signature_date\":\"2025-05-10\"}";
static const char *W8BEN =
    "{\"document_type\":\"W-8BEN\",\"name\":\"Łukasz Dvořák Иванов\","
    "\"country_of_citizenship\":\"PL\",\"permanent_residence_address\":{\"line1\":\"ul. Długa "
    "7\",\"city\":\"Kraków\",\"postal_code\":\"31-147\",\"country_code\":\"PL\"},"
    "\"mailing_address\":{\"line1\":\"Postfach 12\",\"city\":\"Zürich\",\"state\":\"ZH\","
    "\"postal_code\":\"8001\",\"country_code\":\"CH\"},\"foreign_tin\":\"PL-44051401359\","
    "\"date_of_birth\":\"1980-02-29\",\"treaty_claim\":{\"country_code\":\"PL\",\"article\":"
    "\"Article 11(2)\",\"withholding_rate\":\"5.5\",\"income_type\":\"Interest on bonds\"},"
    "\"certified\":true,\"signature_date\":\"2024-05-10\"}";
static const char *W8BENE =
    "{\"document_type\":\"W-8BEN-E\",\"name\":\"Αθηναϊκή Εμπορική Α.Ε.\","
    "\"country_of_organization\":\"GR\",\"chapter3_status\":\"PRIVATE_FOUNDATION\","
    "\"chapter4_status\":\"Active NFFE\",\"permanent_residence_address\":{\"line1\":\"Οδός "
    "Ερμού 5\",\"city\":\"Αθήνα\",\"postal_code\":\"105 63\",\"country_code\":\"GR\"},"
    "\"mailing_address\":{\"line1\":\"PO Box 99\",\"city\":\"Piraeus\",\"country_code\":\"GR\"},"
    "\"foreign_tin_not_required_reason\":\"The jurisdiction does not issue TINs to foundations\","
    "\"treaty_claim\":{\"country_code\":\"GR\",\"article\":\"Article VIII\",\"withholding_rate\":"
    "\"0\"},\"certified\":true,\"signature_date\":\"2024-06-01\"}";

/* ---- running poppler */

typedef struct pdf {
    uint8_t *bytes;
    size_t len;
    char path[64];
} pdf_t;

static int render(taxdocs_type_t type, const json_t *doc, const char *signature,
                  const char *signed_at, pdf_t *out)
{
    taxdocs_pdf_input_t in = {.type = type, .native = doc, .signature = signature,
                              .signed_at = signed_at, .document_id = "doc_0f3c9a7e-5b1d"};
    memset(out, 0, sizeof *out);
    return taxdocs_pdf_render(FONT, &in, &out->bytes, &out->len);
}

static void to_file(pdf_t *p)
{
    snprintf(p->path, sizeof p->path, "/tmp/taxd-test-pdf-XXXXXX");
    int fd = mkstemp(p->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p->bytes, p->len), (ssize_t)p->len);
    close(fd);
}

/* Renders or fails, and writes the bytes to a temporary file. */
static void render_file(taxdocs_type_t type, const char *text, const char *signature,
                        const char *signed_at, pdf_t *out)
{
    json_t *doc = parse(text);
    assert_int_equal(render(type, doc, signature, signed_at, out), 0);
    json_decref(doc);
    assert_true(out->len > 1000);
    assert_memory_equal(out->bytes, "%PDF-", 5);
    to_file(out);
}

static void pdf_free(pdf_t *p)
{
    if (p->path[0] != '\0')
        unlink(p->path);
    free(p->bytes);
}

/* The standard output of `cmd path` (malloc'd), which must exit 0. */
static char *run(const char *cmd, const char *path)
{
    char line[512];
    snprintf(line, sizeof line, "%s '%s' - 2>/dev/null", cmd, path);
    if (strncmp(cmd, "pdffonts", 8) == 0)
        snprintf(line, sizeof line, "%s '%s' 2>/dev/null", cmd, path);
    FILE *f = popen(line, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n;
    while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    assert_int_equal(pclose(f), 0);
    return out;
}

/* s with every whitespace run made one space (wrapped lines join up). */
static char *squash(char *s)
{
    char *w = s;
    bool space = false;
    for (char *r = s; *r != '\0'; r++) {
        if (*r == ' ' || *r == '\n' || *r == '\t' || *r == '\f' || *r == '\r') {
            space = true;
            continue;
        }
        if (space && w != s)
            *w++ = ' ';
        space = false;
        *w++ = *r;
    }
    *w = '\0';
    return s;
}

static char *text_of(const pdf_t *p)
{
    return squash(run("pdftotext -enc UTF-8", p->path));
}

static void assert_has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("the PDF's text lacks \"%s\"", needle);
}

/* A line of the -layout text holds label and then value: the row reads as
 * one. */
static void assert_row(const char *layout, const char *label, const char *value)
{
    const char *line = layout;
    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, n);
        char *l = strstr(copy, label);
        bool found = l != NULL && strstr(l + strlen(label), value) != NULL;
        free(copy);
        if (found)
            return;
        line = end != NULL ? end + 1 : NULL;
    }
    fail_msg("no row \"%s\" ... \"%s\"", label, value);
}

/* A form of usual length fits one page. */
static void assert_one_page(const char *text)
{
    assert_has(text, "Page 1");
    assert_null(strstr(text, "Page 2"));
}

/* The certification's first words, the same for the three forms. */
static const char *CERTIFIES =
    "By signing this form electronically, the signer declares under penalties of perjury that";

/* ---- the three forms */

static void test_w9_every_field(void **state)
{
    (void)state;
    pdf_t p;
    render_file(TAXDOCS_W9, W9, "Jane Q Public", "2025-05-10", &p);
    char *text = text_of(&p);
    assert_has(text, "Form W-9");
    assert_has(text, "Request for Taxpayer Identification Number and Certification");
    const char *values[] = {"Jane Q Public", "Public Widgets LLC",
                            "Limited liability company taxed as a partnership",
                            "Employer identification number (EIN)", "12-3456789",
                            "123 Main Street", "Suite 400", "Springfield, IL 62701", NULL};
    for (const char **v = values; *v != NULL; v++)
        assert_has(text, *v);
    assert_has(text, CERTIFIES);
    assert_has(text, "the taxpayer identification number shown above is the signer's correct "
                     "number");
    assert_has(text, "Electronically signed by Jane Q Public");
    assert_one_page(text);
    assert_has(text, "Document doc_0f3c9a7e-5b1d");
    free(text);
    char *layout = run("pdftotext -layout -enc UTF-8", p.path);
    assert_row(layout, "Exempt payee code", "13");
    assert_row(layout, "Taxpayer identification number", "12-3456789");
    assert_row(layout, "Date signed", "2025-05-10");
    assert_row(layout, "Name (as shown", "Jane Q Public");
    free(layout);
    pdf_free(&p);
}

static void test_w8ben_every_field_latin_extended_and_cyrillic(void **state)
{
    (void)state;
    pdf_t p;
    /* No signature given: the document's name signs. */
    render_file(TAXDOCS_W8BEN, W8BEN, NULL, "2024-05-10", &p);
    char *text = text_of(&p);
    assert_has(text, "Form W-8BEN");
    assert_has(text, "Certificate of Foreign Status of Beneficial Owner for United States Tax "
                     "Withholding and Reporting (Individuals)");
    const char *values[] = {"Łukasz Dvořák Иванов", "ul. Długa 7", "Kraków, 31-147", "Postfach 12",
                            "Zürich, ZH 8001", "CH", "PL-44051401359", "1980-02-29",
                            "Article 11(2)", "5.5%", "Interest on bonds", NULL};
    for (const char **v = values; *v != NULL; v++)
        assert_has(text, *v);
    assert_has(text, CERTIFIES);
    assert_has(text, "the beneficial owner is not a U.S. person");
    assert_has(text, "Electronically signed by Łukasz Dvořák Иванов");
    assert_one_page(text);
    free(text);
    char *layout = run("pdftotext -layout -enc UTF-8", p.path);
    assert_row(layout, "Country of citizenship", "PL");
    assert_row(layout, "Treaty country of residence", "PL");
    assert_row(layout, "Date signed", "2024-05-10");
    free(layout);
    pdf_free(&p);
}

static void test_w8bene_every_field_greek(void **state)
{
    (void)state;
    pdf_t p;
    render_file(TAXDOCS_W8BENE, W8BENE, "Γεώργιος Παπαδόπουλος", "2024-06-01", &p);
    char *text = text_of(&p);
    assert_has(text, "Form W-8BEN-E");
    assert_has(text, "Certificate of Status of Beneficial Owner for United States Tax "
                     "Withholding and Reporting (Entities)");
    const char *values[] = {"Αθηναϊκή Εμπορική Α.Ε.", "Private foundation", "Active NFFE",
                            "Οδός Ερμού 5", "Αθήνα, 105 63", "PO Box 99", "Piraeus",
                            "The jurisdiction does not issue TINs to foundations",
                            "Article VIII", "0%", NULL};
    for (const char **v = values; *v != NULL; v++)
        assert_has(text, *v);
    assert_has(text, CERTIFIES);
    assert_has(text, "the signer is authorized to sign for the entity named above");
    assert_has(text, "Electronically signed by Γεώργιος Παπαδόπουλος");
    assert_one_page(text);
    free(text);
    char *layout = run("pdftotext -layout -enc UTF-8", p.path);
    assert_row(layout, "Country of incorporation", "GR");
    assert_row(layout, "Date signed", "2024-06-01");
    free(layout);
    pdf_free(&p);
}

/* pdffonts: at least one font, every one embedded, none Type 3. */
static void test_font_embedded_never_type3(void **state)
{
    (void)state;
    const char *docs[] = {W9, W8BEN, W8BENE};
    taxdocs_type_t types[] = {TAXDOCS_W9, TAXDOCS_W8BEN, TAXDOCS_W8BENE};
    for (int i = 0; i < 3; i++) {
        pdf_t p;
        render_file(types[i], docs[i], "Jane Q Public", "2025-05-10", &p);
        char *fonts = run("pdffonts", p.path);
        int count = 0;
        char *save = NULL;
        for (char *line = strtok_r(fonts, "\n", &save); line != NULL;
             line = strtok_r(NULL, "\n", &save)) {
            if (strncmp(line, "name ", 5) == 0 || strncmp(line, "----", 4) == 0)
                continue;
            count++;
            if (strstr(line, "Type 3") != NULL)
                fail_msg("a Type 3 font: %s", line);
            char name[128], type[64];
            /* name, type (one or more words), encoding, emb, sub, uni, ... */
            assert_int_equal(sscanf(line, "%127s %63s", name, type), 2);
            assert_non_null(strstr(name, "DejaVuSans"));
            char *yes = strstr(line, " yes ");
            if (yes == NULL)
                fail_msg("a font not embedded: %s", line);
        }
        assert_true(count >= 1);
        free(fonts);
        pdf_free(&p);
    }
}

/* A bitmap font FreeType opens: a font, but no outlines to embed. */
static const char BDF[] =
    "STARTFONT 2.1\nFONT -misc-test-medium-r-normal--8-80-75-75-c-80-iso10646-1\n"
    "SIZE 8 75 75\nFONTBOUNDINGBOX 8 8 0 0\nSTARTPROPERTIES 4\nFONT_ASCENT 8\n"
    "FONT_DESCENT 0\nCHARSET_REGISTRY \"ISO10646\"\nCHARSET_ENCODING \"1\"\nENDPROPERTIES\n"
    "CHARS 1\nSTARTCHAR A\nENCODING 65\nSWIDTH 500 0\nDWIDTH 8 0\nBBX 8 8 0 0\nBITMAP\n"
    "FF\n81\n81\nFF\n81\n81\n81\n81\nENDCHAR\nENDFONT\n";

static void test_missing_font(void **state)
{
    (void)state;
    pdf_t bdf = {.bytes = (uint8_t *)strdup(BDF), .len = strlen(BDF)};
    to_file(&bdf);
    assert_false(taxdocs_pdf_font_usable(bdf.path));
    pdf_free(&bdf);
    assert_true(taxdocs_pdf_font_usable(FONT));
    assert_false(taxdocs_pdf_font_usable("/nonexistent/DejaVuSans.ttf"));
    assert_false(taxdocs_pdf_font_usable("/etc/hostname")); /* a file, not a font */
    assert_false(taxdocs_pdf_font_usable(""));
    assert_false(taxdocs_pdf_font_usable(NULL));
    json_t *doc = parse(W9);
    taxdocs_pdf_input_t in = {.type = TAXDOCS_W9, .native = doc, .signed_at = "2025-05-10",
                              .document_id = "d"};
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(taxdocs_pdf_render("/nonexistent/DejaVuSans.ttf", &in, &bytes, &len), -1);
    assert_null(bytes);
    json_decref(doc);
}

static void test_types_without_form(void **state)
{
    (void)state;
    json_t *doc = parse(W9);
    taxdocs_type_t none[] = {TAXDOCS_DPS, TAXDOCS_SELF_CERT, (taxdocs_type_t)99};
    for (int i = 0; i < 3; i++) {
        pdf_t p;
        assert_int_equal(render(none[i], doc, NULL, "2025-05-10", &p), -1);
        assert_null(p.bytes);
    }
    json_t *not_object = json_string("W-9");
    pdf_t p;
    assert_int_equal(render(TAXDOCS_W9, not_object, NULL, NULL, &p), -1);
    json_decref(not_object);
    json_decref(doc);
}

/* ---- odd and maximal input */

static char *repeat(const char *unit, size_t times)
{
    size_t n = strlen(unit);
    char *s = malloc(n * times + 1);
    assert_non_null(s);
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * n, unit, n);
    s[n * times] = '\0';
    return s;
}

static void set_str(json_t *o, const char *key, const char *value)
{
    assert_int_equal(json_object_set_new(o, key, json_string(value)), 0);
}

static json_t *max_address(void)
{
    json_t *a = json_object();
    char *wide = repeat("W", 256), *words = repeat("Straße ", 36);
    set_str(a, "line1", wide);
    set_str(a, "line2", words);
    set_str(a, "city", wide);
    set_str(a, "state", words);
    char *postal = repeat("9", 32);
    set_str(a, "postal_code", postal);
    set_str(a, "country_code", "DE");
    free(wide);
    free(words);
    free(postal);
    return a;
}

static double attr(const char *word, const char *name)
{
    const char *a = strstr(word, name);
    assert_non_null(a);
    return strtod(a + strlen(name), NULL);
}

/* Every word's box (pdftotext -bbox) ends inside the right margin, and
 * above the footer band unless it is the footer (its rule at 752 pt, its
 * text from 755 to 764 pt). */
static void assert_inside_margins(const pdf_t *p)
{
    char *html = run("pdftotext -bbox -enc UTF-8", p->path);
    int words = 0;
    for (const char *w = strstr(html, "<word "); w != NULL; w = strstr(w + 1, "<word ")) {
        double x_max = attr(w, "xMax=\""), y_min = attr(w, "yMin=\""), y_max = attr(w, "yMax=\"");
        if (x_max > RIGHT_EDGE + 1.0)
            fail_msg("a word ends at x=%.1f, beyond the margin at %.1f", x_max, RIGHT_EDGE);
        bool body = y_max <= CONTENT_BOTTOM + 1.0, footer = y_min >= 753.0 && y_max <= 766.0;
        if (!body && !footer)
            fail_msg("a word at y=%.1f..%.1f runs into the footer", y_min, y_max);
        words++;
    }
    assert_true(words > 50);
    free(html);
}

/* Every string at its schema's limit, the widest glyphs, one 256-character
 * word: the text wraps inside the margins, nothing is lost, and the form
 * flows onto continuation pages (three at these limits, never more than
 * four). */
static void test_maximal_w8bene_wraps_inside_margins(void **state)
{
    (void)state;
    json_t *doc = parse(W8BENE);
    char *wide = repeat("W", 256), *cyr = repeat("Ж", 256), *words = repeat("Ελλάδα ", 36);
    set_str(doc, "name", cyr);
    set_str(doc, "chapter4_status", wide + 192); /* 64 */
    json_object_set_new(doc, "permanent_residence_address", max_address());
    json_object_set_new(doc, "mailing_address", max_address());
    char *tin = repeat("7", 40);
    set_str(doc, "foreign_tin", tin);
    free(tin);
    set_str(doc, "foreign_tin_not_required_reason", words);
    json_t *claim = json_object_get(doc, "treaty_claim");
    set_str(claim, "article", wide + 192); /* 64 */
    set_str(claim, "income_type", words);
    pdf_t p;
    assert_int_equal(render(TAXDOCS_W8BENE, doc, wide, "2024-06-01", &p), 0);
    to_file(&p);
    assert_inside_margins(&p);
    char *text = run("pdftotext -enc UTF-8", p.path);
    /* The unbroken words come back whole once the line breaks are removed. */
    char *joined = strdup(text);
    size_t w = 0;
    for (size_t r = 0; joined[r] != '\0'; r++)
        if (joined[r] != '\n' && joined[r] != ' ' && joined[r] != '\f')
            joined[w++] = joined[r];
    joined[w] = '\0';
    assert_has(joined, cyr);
    assert_has(joined, wide);
    assert_non_null(strstr(text, "Form W-8BEN-E (continued)"));
    assert_non_null(strstr(text, "Page 2"));
    assert_null(strstr(text, "Page 5"));
    free(joined);
    free(text);
    pdf_free(&p);
    free(wide);
    free(cyr);
    free(words);
    json_decref(doc);
}

/* Control characters, invalid UTF-8, an embedded NUL, non-string values
 * and empty strings: rendered, never refused or crashed on. */
static void test_odd_strings(void **state)
{
    (void)state;
    json_t *doc = parse(W9);
    set_str(doc, "name", "Jane\tQ\nPublic\r\x01\x7f\xc2\x85!");
    json_object_set_new(doc, "business_name", json_stringn_nocheck("Bad \xff\xfe bytes", 12));
    json_object_set_new(doc, "tin", json_stringn("12\0-34", 6));
    json_object_set_new(doc, "exempt_payee_code", json_integer(5));
    set_str(doc, "entity_classification", "SOMETHING_NEW");
    json_object_set_new(json_object_get(doc, "address"), "line2", json_null());
    set_str(json_object_get(doc, "address"), "city", "");
    pdf_t p;
    assert_int_equal(render(TAXDOCS_W9, doc, "\xe2\x80", "", &p), 0);
    to_file(&p);
    char *text = text_of(&p);
    assert_has(text, "Jane Q Public !"); /* each control character a space */
    assert_has(text, "Bad \xef\xbf\xbd\xef\xbf\xbd bytes"); /* U+FFFD twice */
    assert_has(text, "SOMETHING_NEW"); /* an unknown value prints as sent */
    free(text);
    pdf_free(&p);
    json_decref(doc);
}

static void test_not_certified_is_not_signed(void **state)
{
    (void)state;
    json_t *doc = parse(W9);
    json_object_set_new(doc, "certified", json_false());
    pdf_t p;
    assert_int_equal(render(TAXDOCS_W9, doc, "Jane Q Public", "2025-05-10", &p), 0);
    to_file(&p);
    char *text = text_of(&p);
    assert_has(text, "Not certified: the signer did not confirm the statements above.");
    assert_null(strstr(text, "Electronically signed by"));
    free(text);
    pdf_free(&p);
    json_decref(doc);
}

/* The same document gives the same bytes: no creation time, no locale. */
static void test_same_document_same_bytes(void **state)
{
    (void)state;
    json_t *doc = parse(W8BEN);
    pdf_t a, b;
    assert_int_equal(render(TAXDOCS_W8BEN, doc, NULL, "2024-05-10", &a), 0);
    assert_int_equal(render(TAXDOCS_W8BEN, doc, NULL, "2024-05-10", &b), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.bytes, b.bytes, a.len);
    assert_null(memmem(a.bytes, a.len, "/CreationDate", 13));
    assert_null(memmem(a.bytes, a.len, "/ModDate", 8));
    free(a.bytes);
    free(b.bytes);
    json_decref(doc);
}

/* Thread-safe (pdf.h): four threads drawing at once each get the bytes a
 * lone render gives. */
typedef struct job {
    const json_t *doc;
    pdf_t out;
    int rc;
} job_t;

static void *render_job(void *arg)
{
    job_t *j = arg;
    j->rc = render(TAXDOCS_W8BEN, j->doc, "Łukasz", "2024-05-10", &j->out);
    return NULL;
}

static void test_threads_draw_the_same_bytes(void **state)
{
    (void)state;
    json_t *doc = parse(W8BEN);
    pdf_t alone;
    assert_int_equal(render(TAXDOCS_W8BEN, doc, "Łukasz", "2024-05-10", &alone), 0);
    job_t jobs[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job_t){.doc = doc};
        assert_int_equal(pthread_create(&threads[i], NULL, render_job, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(jobs[i].rc, 0);
        assert_int_equal(jobs[i].out.len, alone.len);
        assert_memory_equal(jobs[i].out.bytes, alone.bytes, alone.len);
        free(jobs[i].out.bytes);
    }
    free(alone.bytes);
    json_decref(doc);
}

int main(void)
{
    const char *filter = getenv("TEST_FILTER");
    if (filter != NULL)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_w9_every_field),
        cmocka_unit_test(test_w8ben_every_field_latin_extended_and_cyrillic),
        cmocka_unit_test(test_w8bene_every_field_greek),
        cmocka_unit_test(test_font_embedded_never_type3),
        cmocka_unit_test(test_missing_font),
        cmocka_unit_test(test_types_without_form),
        cmocka_unit_test(test_maximal_w8bene_wraps_inside_margins),
        cmocka_unit_test(test_odd_strings),
        cmocka_unit_test(test_not_certified_is_not_signed),
        cmocka_unit_test(test_same_document_same_bytes),
        cmocka_unit_test(test_threads_draw_the_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
