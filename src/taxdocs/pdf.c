/* taxdocs/pdf: see pdf.h.
 *
 * The page is US Letter (612 x 792 pt), the paper of the IRS forms it
 * stands for, with 0.75 in margins. It reads like a form: the form's name and
 * title at the top, then parts with shaded headings, each field a row with
 * its label on the left and the value on the right, the certification in
 * taxd's own words (a paraphrase of the IRS text, never the IRS text itself),
 * the electronic signature and its date, and the document id in the footer
 * of every page. Content that does not fit one page flows onto more pages.
 *
 * The TIN of a W-9 is printed in full: the PDF is the form itself, and a
 * W-9 exists to hand a payer the payee's TIN (the IRS forms carry it in
 * full). That is why the PDF is only ever drawn for a signed, short-lived
 * download and never stored or logged.
 *
 * Text: every value is cleaned first (invalid UTF-8 becomes U+FFFD, control
 * characters become spaces, so cairo never refuses a string) and wrapped by
 * the glyph advances cairo_show_text itself uses, breaking at spaces, or
 * inside a word longer than the column. The font is loaded by cairo from the
 * file (a fontconfig pattern naming FC_FILE, no font lookup) so cairo owns
 * the FreeType face and its lifetime across threads; the PDF surface embeds a
 * subset of it with a ToUnicode map. No synthetic bold or italic is used:
 * cairo would draw those glyphs as Type 3 fonts, which extract badly.
 *
 * Determinism: no clock (the CreationDate cairo would stamp is removed), no
 * locale (cairo writes numbers in its own locale-independent way, and this
 * file formats no number with printf but the page number). */
#include "taxdocs/pdf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo-ft.h>
#include <cairo-pdf.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <ft2build.h>
#include FT_FREETYPE_H

#include "core/utf8.h"

/* ---- page geometry (points) */

#define PAGE_W 612.0
#define PAGE_H 792.0
#define MARGIN 54.0
#define CONTENT_W (PAGE_W - 2 * MARGIN)
#define FOOTER_Y (PAGE_H - 30.0)
#define BOTTOM (PAGE_H - 52.0)    /* content stops here; the footer lies below */
#define LABEL_W 168.0             /* the label column of a field row */
#define GAP 10.0                  /* between label and value */
#define VALUE_X (MARGIN + LABEL_W + GAP)
#define VALUE_W (CONTENT_W - LABEL_W - GAP)
#define ROW_PAD 4.0

#define SIZE_FORM 20.0
#define SIZE_TITLE 11.5
#define SIZE_HEADING 10.5
#define SIZE_LABEL 8.5
#define SIZE_VALUE 10.0
#define SIZE_TEXT 9.0
#define SIZE_FOOTER 7.5
#define LEADING 1.32 /* line height as a multiple of the font size */

/* ---- cleaned text */

/* A copy of s that cairo always accepts: each invalid byte becomes U+FFFD,
 * each control character (C0, DEL, C1) a space. malloc'd, NULL when out of
 * memory. */
static char *clean_text(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1); /* U+FFFD is 3 bytes for 1 bad byte */
    if (out == NULL)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;
    while (i < n) {
        size_t len = utf8_sequence(p + i, n - i);
        if (len == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        bool c0 = len == 1 && (p[i] < 0x20 || p[i] == 0x7F);
        bool c1 = len == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0;
        if (c0 || c1) {
            out[o++] = ' ';
        } else {
            memcpy(out + o, p + i, len);
            o += len;
        }
        i += len;
    }
    out[o] = '\0';
    return out;
}

/* ---- the pen: where the next line goes, across pages */

typedef struct pen {
    cairo_t *cr;
    double y;        /* baseline area top of the next row */
    int page;        /* 1-based */
    bool failed;     /* out of memory somewhere: the render answers -1 */
    const char *form; /* "Form W-9", repeated on continuation pages */
    const char *document_id; /* cleaned */
} pen_t;

static void set_grey(cairo_t *cr, double g)
{
    cairo_set_source_rgb(cr, g, g, g);
}

/* Shows the n bytes at s (a whole number of characters) at x, baseline y. */
static void show_n(pen_t *pen, double x, double y, const char *s, size_t n)
{
    char stack[512];
    char *buf = n < sizeof stack ? stack : malloc(n + 1);
    if (buf == NULL) {
        pen->failed = true;
        return;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    cairo_move_to(pen->cr, x, y);
    cairo_show_text(pen->cr, buf);
    if (buf != stack)
        free(buf);
}

static void show(pen_t *pen, double x, double y, const char *s)
{
    show_n(pen, x, y, s, strlen(s));
}

static double advance(cairo_t *cr, const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* ---- wrapping */

typedef struct span {
    size_t start, len;
} span_t;

typedef struct lines {
    span_t *v;
    size_t count, cap;
} lines_t;

static bool lines_push(lines_t *l, size_t start, size_t len)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        span_t *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->count++] = (span_t){start, len};
    return true;
}

/* The advance of the one character of len bytes at s, as cairo_show_text
 * will place it (it adds glyph advances; no kerning). */
static double char_advance(cairo_t *cr, const char *s, size_t len)
{
    char one[8];
    memcpy(one, s, len);
    one[len] = '\0';
    return advance(cr, one);
}

/* Splits cleaned text s into lines no wider than width at the current font:
 * at the last space that fits, or inside a word that alone is wider. Spaces
 * at a break are dropped. An empty s gives one empty line. */
static bool wrap(cairo_t *cr, const char *s, double width, lines_t *out)
{
    size_t n = strlen(s), start = 0;
    while (start < n && s[start] == ' ')
        start++;
    if (start == n)
        return lines_push(out, 0, 0);
    while (start < n) {
        double w = 0;
        size_t i = start, last_space = 0, end = n;
        while (i < n) {
            size_t len = utf8_sequence((const unsigned char *)s + i, n - i);
            if (len == 0)
                len = 1; /* cannot happen on cleaned text */
            double a = char_advance(cr, s + i, len);
            if (w + a > width && i > start) {
                end = (s[i] == ' ' || last_space == 0) ? i : last_space;
                break;
            }
            if (s[i] == ' ')
                last_space = i;
            w += a;
            i += len;
        }
        size_t stop = end;
        while (stop > start && s[stop - 1] == ' ')
            stop--;
        if (!lines_push(out, start, stop - start))
            return false;
        start = end;
        while (start < n && s[start] == ' ')
            start++;
    }
    return true;
}

/* ---- page furniture */

static void draw_footer(pen_t *pen)
{
    cairo_t *cr = pen->cr;
    set_grey(cr, 0.55);
    cairo_set_line_width(cr, 0.5);
    cairo_move_to(cr, MARGIN, FOOTER_Y - 10);
    cairo_line_to(cr, PAGE_W - MARGIN, FOOTER_Y - 10);
    cairo_stroke(cr);
    cairo_set_font_size(cr, SIZE_FOOTER);
    set_grey(cr, 0.3);
    char page[32];
    snprintf(page, sizeof page, "Page %d", pen->page);
    double pw = advance(cr, page);
    show(pen, PAGE_W - MARGIN - pw, FOOTER_Y, page);
    /* The id is taxd's own; a foreign one is cut rather than wrapped. */
    static const char prefix[] = "Document ";
    lines_t l = {0};
    if (!wrap(cr, pen->document_id, CONTENT_W - pw - 24 - advance(cr, prefix), &l)) {
        pen->failed = true;
        free(l.v);
        return;
    }
    show(pen, MARGIN, FOOTER_Y, prefix);
    show_n(pen, MARGIN + advance(cr, prefix), FOOTER_Y, pen->document_id + l.v[0].start,
           l.v[0].len);
    free(l.v);
    set_grey(cr, 0);
}

static void draw_continuation_header(pen_t *pen)
{
    cairo_set_font_size(pen->cr, SIZE_HEADING);
    set_grey(pen->cr, 0.3);
    show(pen, MARGIN, MARGIN + SIZE_HEADING, pen->form);
    show(pen, MARGIN + advance(pen->cr, pen->form) + 6, MARGIN + SIZE_HEADING, "(continued)");
    set_grey(pen->cr, 0);
    pen->y = MARGIN + SIZE_HEADING + 14;
}

/* Makes room for h points: a new page when the row would run into the
 * footer (unless the page is still empty, where nothing better exists). */
static void need(pen_t *pen, double h)
{
    if (pen->y + h <= BOTTOM)
        return;
    draw_footer(pen);
    cairo_show_page(pen->cr);
    pen->page++;
    draw_continuation_header(pen);
}

/* ---- building blocks */

static void heading(pen_t *pen, const char *text)
{
    double h = SIZE_HEADING * LEADING + 6;
    need(pen, h + 3 * SIZE_VALUE * LEADING); /* never a heading alone at a page end */
    pen->y += 6;
    set_grey(pen->cr, 0.88);
    cairo_rectangle(pen->cr, MARGIN, pen->y, CONTENT_W, h);
    cairo_fill(pen->cr);
    set_grey(pen->cr, 0);
    cairo_set_font_size(pen->cr, SIZE_HEADING);
    show(pen, MARGIN + 5, pen->y + h - 6, text);
    pen->y += h;
}

static void rule(pen_t *pen)
{
    set_grey(pen->cr, 0.75);
    cairo_set_line_width(pen->cr, 0.5);
    cairo_move_to(pen->cr, MARGIN, pen->y);
    cairo_line_to(pen->cr, PAGE_W - MARGIN, pen->y);
    cairo_stroke(pen->cr);
    set_grey(pen->cr, 0);
}

/* A field row: the label in the left column, the value lines (each already
 * cleaned) wrapped in the right one, a rule below. */
static void row_lines(pen_t *pen, const char *label, char *const *values, size_t nvalues)
{
    cairo_t *cr = pen->cr;
    lines_t ll = {0}, vl = {0};
    cairo_set_font_size(cr, SIZE_LABEL);
    bool ok = wrap(cr, label, LABEL_W, &ll);
    cairo_set_font_size(cr, SIZE_VALUE);
    size_t *from = NULL; /* which value each value line comes from */
    for (size_t i = 0; ok && i < nvalues; i++) {
        size_t before = vl.count;
        ok = wrap(cr, values[i], VALUE_W, &vl);
        size_t *f = ok ? realloc(from, (vl.count + 1) * sizeof *f) : NULL;
        if (f == NULL) {
            ok = false;
            break;
        }
        from = f;
        for (size_t k = before; k < vl.count; k++)
            from[k] = i;
    }
    if (!ok) {
        pen->failed = true;
        free(ll.v);
        free(vl.v);
        free(from);
        return;
    }
    double lh = SIZE_VALUE * LEADING, llh = SIZE_LABEL * LEADING;
    size_t count = vl.count > ll.count ? vl.count : ll.count;
    double height = (double)count * lh + 2 * ROW_PAD;
    if (height <= BOTTOM - MARGIN - 40)
        need(pen, height); /* keep a row on one page when it can be */
    pen->y += ROW_PAD;
    for (size_t k = 0; k < count; k++) {
        need(pen, lh + ROW_PAD);
        double base = pen->y + SIZE_VALUE;
        if (k < ll.count) {
            cairo_set_font_size(cr, SIZE_LABEL);
            set_grey(cr, 0.35);
            show_n(pen, MARGIN, pen->y + SIZE_LABEL + (lh - llh), label + ll.v[k].start,
                   ll.v[k].len);
            set_grey(cr, 0);
        }
        if (k < vl.count) {
            cairo_set_font_size(cr, SIZE_VALUE);
            show_n(pen, VALUE_X, base, values[from[k]] + vl.v[k].start, vl.v[k].len);
        }
        pen->y += lh;
    }
    pen->y += ROW_PAD;
    rule(pen);
    free(ll.v);
    free(vl.v);
    free(from);
}

/* A row of one value (raw, cleaned here). */
static void row(pen_t *pen, const char *label, const char *value)
{
    char *v = clean_text(value);
    if (v == NULL) {
        pen->failed = true;
        return;
    }
    row_lines(pen, label, &v, 1);
    free(v);
}

/* A paragraph over the full width at size. */
static void paragraph(pen_t *pen, const char *text, double size)
{
    char *t = clean_text(text);
    lines_t l = {0};
    cairo_set_font_size(pen->cr, size);
    if (t == NULL || !wrap(pen->cr, t, CONTENT_W, &l)) {
        pen->failed = true;
        free(t);
        free(l.v);
        return;
    }
    double lh = size * LEADING;
    for (size_t k = 0; k < l.count; k++) {
        need(pen, lh);
        cairo_set_font_size(pen->cr, size);
        show_n(pen, MARGIN, pen->y + size, t + l.v[k].start, l.v[k].len);
        pen->y += lh;
    }
    free(t);
    free(l.v);
}

/* ---- reading the document */

static const char *str_at(const json_t *object, const char *key)
{
    const json_t *v = json_object_get(object, key);
    return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

typedef struct label_of {
    const char *value, *label;
} label_of_t;

/* The printed name of an enum value; an unknown value prints as sent. */
static const char *label_for(const label_of_t *table, const char *value)
{
    for (const label_of_t *t = table; t->value != NULL; t++)
        if (strcmp(t->value, value) == 0)
            return t->label;
    return value;
}

static const label_of_t W9_CLASSIFICATIONS[] = {
    {"INDIVIDUAL", "Individual"},
    {"SOLE_PROPRIETOR", "Sole proprietor"},
    {"C_CORPORATION", "C corporation"},
    {"S_CORPORATION", "S corporation"},
    {"PARTNERSHIP", "Partnership"},
    {"TRUST_ESTATE", "Trust or estate"},
    {"LLC_C", "Limited liability company taxed as a C corporation"},
    {"LLC_S", "Limited liability company taxed as an S corporation"},
    {"LLC_P", "Limited liability company taxed as a partnership"},
    {"OTHER", "Other"},
    {NULL, NULL}};

static const label_of_t TIN_TYPES[] = {
    {"SSN", "Social security number (SSN)"},
    {"EIN", "Employer identification number (EIN)"},
    {"ITIN", "Individual taxpayer identification number (ITIN)"},
    {"ATIN", "Adoption taxpayer identification number (ATIN)"},
    {NULL, NULL}};

static const label_of_t CHAPTER3_STATUSES[] = {
    {"CORPORATION", "Corporation"},
    {"PARTNERSHIP", "Partnership"},
    {"SIMPLE_TRUST", "Simple trust"},
    {"GRANTOR_TRUST", "Grantor trust"},
    {"COMPLEX_TRUST", "Complex trust"},
    {"ESTATE", "Estate"},
    {"GOVERNMENT", "Foreign government"},
    {"CENTRAL_BANK", "Central bank of issue"},
    {"TAX_EXEMPT_ORGANIZATION", "Tax-exempt organization"},
    {"PRIVATE_FOUNDATION", "Private foundation"},
    {"INTERNATIONAL_ORGANIZATION", "International organization"},
    {"DISREGARDED_ENTITY", "Disregarded entity"},
    {NULL, NULL}};

static void row_if(pen_t *pen, const json_t *doc, const char *key, const char *label)
{
    const char *v = str_at(doc, key);
    if (v != NULL)
        row(pen, label, v);
}

static void row_enum(pen_t *pen, const json_t *doc, const char *key, const char *label,
                     const label_of_t *table)
{
    const char *v = str_at(doc, key);
    if (v != NULL)
        row(pen, label, label_for(table, v));
}

/* Joins the present parts with sep into a malloc'd string ("" when none). */
static char *join(const char *const *parts, size_t n, const char *sep)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        if (parts[i] != NULL)
            total += strlen(parts[i]) + strlen(sep);
    char *s = malloc(total);
    if (s == NULL)
        return NULL;
    s[0] = '\0';
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (parts[i] == NULL)
            continue;
        if (!first)
            strcat(s, sep);
        strcat(s, parts[i]);
        first = false;
    }
    return s;
}

/* An address as up to four lines: line1, line2, "city, state postal", the
 * country code. */
static void row_address(pen_t *pen, const json_t *doc, const char *key, const char *label)
{
    const json_t *a = json_object_get(doc, key);
    if (!json_is_object(a))
        return;
    const char *place[] = {str_at(a, "state"), str_at(a, "postal_code")};
    char *tail = join(place, 2, " ");
    const char *city[] = {str_at(a, "city"), tail != NULL && tail[0] ? tail : NULL};
    char *locality = tail != NULL ? join(city, 2, ", ") : NULL;
    const char *raw[] = {str_at(a, "line1"), str_at(a, "line2"), locality,
                         str_at(a, "country_code")};
    char *lines[4];
    size_t n = 0;
    bool ok = locality != NULL;
    for (size_t i = 0; ok && i < 4; i++) {
        if (raw[i] == NULL || raw[i][0] == '\0')
            continue;
        lines[n] = clean_text(raw[i]);
        ok = lines[n] != NULL;
        n += ok;
    }
    if (ok)
        row_lines(pen, label, lines, n);
    else
        pen->failed = true;
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(tail);
    free(locality);
}

/* The foreign TIN, or the reason none is given. */
static void rows_foreign_tin(pen_t *pen, const json_t *doc)
{
    row_if(pen, doc, "foreign_tin", "Foreign tax identifying number");
    row_if(pen, doc, "foreign_tin_not_required_reason",
           "Foreign tax identifying number not required because");
}

static void rows_treaty(pen_t *pen, const json_t *doc)
{
    const json_t *claim = json_object_get(doc, "treaty_claim");
    if (!json_is_object(claim))
        return;
    heading(pen, "Part II  Claim of tax treaty benefits");
    row_if(pen, claim, "country_code", "Treaty country of residence");
    row_if(pen, claim, "article", "Treaty article and paragraph");
    const char *rate = str_at(claim, "withholding_rate");
    if (rate != NULL) {
        const char *parts[] = {rate, "%"};
        char *text = join(parts, 2, "");
        if (text == NULL)
            pen->failed = true;
        else
            row(pen, "Rate of withholding claimed", text);
        free(text);
    }
    row_if(pen, claim, "income_type", "Type of income");
}

/* ---- the three forms */

typedef struct form {
    const char *short_name; /* "Form W-9" */
    const char *title;
    const char *certification; /* taxd's wording */
    void (*fields)(pen_t *pen, const json_t *doc);
} form_t;

static void w9_fields(pen_t *pen, const json_t *doc)
{
    heading(pen, "Part I  Identification of the payee");
    row_if(pen, doc, "name", "Name (as shown on the income tax return)");
    row_if(pen, doc, "business_name", "Business name or disregarded entity name");
    row_enum(pen, doc, "entity_classification", "Federal tax classification",
             W9_CLASSIFICATIONS);
    row_if(pen, doc, "exempt_payee_code", "Exempt payee code");
    row_address(pen, doc, "address", "Address");
    heading(pen, "Part II  Taxpayer identification number");
    row_enum(pen, doc, "tin_type", "Type of number", TIN_TYPES);
    row_if(pen, doc, "tin", "Taxpayer identification number");
}

static void w8ben_fields(pen_t *pen, const json_t *doc)
{
    heading(pen, "Part I  Identification of the beneficial owner");
    row_if(pen, doc, "name", "Name of the individual who is the beneficial owner");
    row_if(pen, doc, "country_of_citizenship", "Country of citizenship");
    row_address(pen, doc, "permanent_residence_address", "Permanent residence address");
    row_address(pen, doc, "mailing_address", "Mailing address");
    rows_foreign_tin(pen, doc);
    row_if(pen, doc, "date_of_birth", "Date of birth (YYYY-MM-DD)");
    rows_treaty(pen, doc);
}

static void w8bene_fields(pen_t *pen, const json_t *doc)
{
    heading(pen, "Part I  Identification of the beneficial owner");
    row_if(pen, doc, "name", "Name of the organization that is the beneficial owner");
    row_if(pen, doc, "country_of_organization", "Country of incorporation or organization");
    row_enum(pen, doc, "chapter3_status", "Chapter 3 status (entity type)", CHAPTER3_STATUSES);
    row_if(pen, doc, "chapter4_status", "Chapter 4 status (FATCA status)");
    row_address(pen, doc, "permanent_residence_address", "Permanent residence address");
    row_address(pen, doc, "mailing_address", "Mailing address");
    rows_foreign_tin(pen, doc);
    rows_treaty(pen, doc);
}

/* The certifications paraphrase what each IRS form asks its signer to
 * certify; they are taxd's sentences, not the IRS wording. */
static const form_t FORMS[] = {
    [TAXDOCS_W9] = {
        "Form W-9", "Request for Taxpayer Identification Number and Certification",
        "By signing this form electronically, the signer declares under penalties of perjury "
        "that: (1) the taxpayer identification number shown above is the signer's correct "
        "number, or the signer is waiting for one to be issued; (2) the signer is not subject to "
        "backup withholding, because the signer is exempt from it, or the Internal Revenue "
        "Service has not notified the signer of backup withholding for failing to report all "
        "interest or dividends, or has notified the signer that it no longer applies; (3) the "
        "signer is a U.S. citizen or another U.S. person; and (4) any exemption from FATCA "
        "reporting claimed on this form is correct.",
        w9_fields},
    [TAXDOCS_W8BEN] = {
        "Form W-8BEN",
        "Certificate of Foreign Status of Beneficial Owner for United States Tax Withholding "
        "and Reporting (Individuals)",
        "By signing this form electronically, the signer declares under penalties of perjury "
        "that the information on this form is, to the signer's knowledge, true, correct and "
        "complete, and that: (1) the individual named above is the beneficial owner of the "
        "income this form relates to, or the signer is authorized to sign for that individual; "
        "(2) the beneficial owner is not a U.S. person; (3) the income is not effectively "
        "connected with a trade or business in the United States, or is so connected but not "
        "taxed under an income tax treaty, or is a partner's share of a partnership's "
        "effectively connected income; (4) where treaty benefits are claimed, the beneficial "
        "owner is a resident of the treaty country as the treaty defines residence; and (5) "
        "for broker transactions and barter exchanges, the beneficial owner is an exempt "
        "foreign person. The signer allows this form to be given to any withholding agent that "
        "pays or controls the income, and will give a new form within 30 days if any statement "
        "on it becomes incorrect.",
        w8ben_fields},
    [TAXDOCS_W8BENE] = {
        "Form W-8BEN-E",
        "Certificate of Status of Beneficial Owner for United States Tax Withholding and "
        "Reporting (Entities)",
        "By signing this form electronically, the signer declares under penalties of perjury "
        "that the information on this form is, to the signer's knowledge, true, correct and "
        "complete, that the signer is authorized to sign for the entity named above, and that: "
        "(1) the entity is the beneficial owner of the income this form relates to, or uses "
        "this form to document itself for chapter 4 purposes; (2) the entity is not a U.S. "
        "person; (3) the income is not effectively connected with a trade or business in the "
        "United States, or is so connected but not taxed under an income tax treaty, or is a "
        "partner's share of a partnership's effectively connected income; and (4) for broker "
        "transactions and barter exchanges, the entity is an exempt foreign person. The signer "
        "allows this form to be given to any withholding agent that pays or controls the "
        "income, and will give a new form within 30 days if any statement on it becomes "
        "incorrect.",
        w8bene_fields},
};

/* ---- top and bottom of the form */

static void draw_top(pen_t *pen, const form_t *form)
{
    cairo_t *cr = pen->cr;
    cairo_set_font_size(cr, SIZE_FORM);
    show(pen, MARGIN, MARGIN + SIZE_FORM, form->short_name);
    cairo_set_font_size(cr, SIZE_FOOTER);
    set_grey(cr, 0.35);
    static const char *const note = "Electronic submission, drawn by taxd";
    show(pen, PAGE_W - MARGIN - advance(cr, note), MARGIN + 8, note);
    set_grey(cr, 0);
    pen->y = MARGIN + SIZE_FORM + 8;
    paragraph(pen, form->title, SIZE_TITLE);
    pen->y += 4;
    cairo_set_line_width(cr, 1.2);
    cairo_move_to(cr, MARGIN, pen->y);
    cairo_line_to(cr, PAGE_W - MARGIN, pen->y);
    cairo_stroke(cr);
    pen->y += 4;
}

static void draw_signature(pen_t *pen, const form_t *form, const json_t *doc,
                           const taxdocs_pdf_input_t *in)
{
    heading(pen, form == &FORMS[TAXDOCS_W9] ? "Part III  Certification" : "Certification");
    pen->y += 4;
    paragraph(pen, form->certification, SIZE_TEXT);
    pen->y += 8;
    const char *who = in->signature != NULL && in->signature[0] != '\0' ? in->signature
                                                                          : str_at(doc, "name");
    const char *when = in->signed_at != NULL ? in->signed_at : str_at(doc, "signature_date");
    bool certified = json_is_true(json_object_get(doc, "certified"));
    rule(pen);
    if (certified) {
        const char *parts[] = {"Electronically signed by ", who != NULL ? who : ""};
        char *line = join(parts, 2, "");
        if (line == NULL) {
            pen->failed = true;
            return;
        }
        row(pen, "Signature", line);
        free(line);
    } else {
        row(pen, "Signature",
            "Not certified: the signer did not confirm the statements above.");
    }
    row(pen, "Date signed", when != NULL ? when : "");
}

/* ---- output */

typedef struct outbuf {
    uint8_t *data;
    size_t len, cap;
} outbuf_t;

static cairo_status_t write_out(void *closure, const unsigned char *data, unsigned int n)
{
    outbuf_t *b = closure;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap - b->len < n)
            cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (d == NULL)
            return CAIRO_STATUS_WRITE_ERROR;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return CAIRO_STATUS_SUCCESS;
}

bool taxdocs_pdf_font_usable(const char *font_path)
{
    if (font_path == NULL || font_path[0] == '\0')
        return false;
    FT_Library lib;
    if (FT_Init_FreeType(&lib) != 0)
        return false;
    FT_Face face;
    bool ok = false;
    if (FT_New_Face(lib, font_path, 0, &face) == 0) {
        /* An outline font with a Unicode map that has Latin letters: cairo
         * embeds it as a TrueType (or CFF) subset, never as Type 3. */
        ok = FT_IS_SFNT(face) && FT_IS_SCALABLE(face) && face->charmap != NULL &&
             face->charmap->encoding == FT_ENCODING_UNICODE && FT_Get_Char_Index(face, 'A') != 0;
        FT_Done_Face(face);
    }
    FT_Done_FreeType(lib);
    return ok;
}

/* A font face for the file, loaded and owned by cairo. NULL on failure. */
static cairo_font_face_t *face_for(const char *font_path)
{
    FcPattern *p = FcPatternCreate();
    if (p == NULL)
        return NULL;
    if (!FcPatternAddString(p, FC_FILE, (const FcChar8 *)font_path) ||
        !FcPatternAddInteger(p, FC_INDEX, 0)) {
        FcPatternDestroy(p);
        return NULL;
    }
    cairo_font_face_t *face = cairo_ft_font_face_create_for_pattern(p);
    FcPatternDestroy(p);
    if (cairo_font_face_status(face) != CAIRO_STATUS_SUCCESS) {
        cairo_font_face_destroy(face);
        return NULL;
    }
    return face;
}

static bool has_form(const taxdocs_pdf_input_t *in)
{
    return in != NULL && json_is_object(in->native) &&
           (in->type == TAXDOCS_W9 || in->type == TAXDOCS_W8BEN || in->type == TAXDOCS_W8BENE);
}

/* Draws the whole form on the surface; false when anything failed. */
static bool draw(cairo_surface_t *surface, cairo_font_face_t *face, const taxdocs_pdf_input_t *in)
{
    const form_t *form = &FORMS[in->type];
    char *id = clean_text(in->document_id != NULL ? in->document_id : "");
    cairo_t *cr = cairo_create(surface);
    pen_t pen = {.cr = cr, .page = 1, .form = form->short_name, .document_id = id};
    pen.failed = id == NULL;
    if (!pen.failed) {
        cairo_set_font_face(cr, face);
        set_grey(cr, 0);
        draw_top(&pen, form);
        form->fields(&pen, in->native);
        draw_signature(&pen, form, in->native, in);
        draw_footer(&pen);
        cairo_show_page(cr);
    }
    bool ok = !pen.failed && cairo_status(cr) == CAIRO_STATUS_SUCCESS;
    cairo_destroy(cr);
    free(id);
    return ok;
}

int taxdocs_pdf_render(const char *font_path, const taxdocs_pdf_input_t *in, uint8_t **out,
                       size_t *len)
{
    if (out == NULL || len == NULL || !has_form(in) || !taxdocs_pdf_font_usable(font_path))
        return -1;
    cairo_font_face_t *face = face_for(font_path);
    if (face == NULL)
        return -1;
    outbuf_t buf = {0};
    cairo_surface_t *surface = cairo_pdf_surface_create_for_stream(write_out, &buf, PAGE_W, PAGE_H);
    /* No clock in the output: cairo would stamp the time of drawing. */
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATE_DATE, NULL);
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE,
                                   FORMS[in->type].short_name);
    bool ok = draw(surface, face, in);
    cairo_surface_finish(surface);
    ok = ok && cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(surface);
    cairo_font_face_destroy(face);
    if (!ok) {
        free(buf.data);
        return -1;
    }
    *out = buf.data;
    *len = buf.len;
    return 0;
}
