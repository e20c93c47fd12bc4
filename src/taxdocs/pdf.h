/* taxdocs/pdf: a W-9, W-8BEN or W-8BEN-E as a PDF (issue 19), drawn with
 * cairo from the native document (taxdocs/model.h) as submitted. The page
 * shows the form's title, every submitted field, the certification text of
 * the form in taxd's own words, and the electronic signature with its date.
 * The given TrueType font is embedded (subset, with a ToUnicode map), so names
 * in any script the font covers print and extract correctly. Pure: document
 * in, bytes out; no SQL, no clock, no log of any value. Thread-safe.
 * US Letter; a W-9's TIN is printed in full, since handing it to the payer
 * is the form's purpose: the bytes are for the owner's download only, never
 * stored or logged. The same input always gives the same bytes. */
#ifndef TAXD_TAXDOCS_PDF_H
#define TAXD_TAXDOCS_PDF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "taxdocs/model.h"

#define TAXDOCS_PDF_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

typedef struct taxdocs_pdf_input {
    taxdocs_type_t type;    /* TAXDOCS_W9, TAXDOCS_W8BEN or TAXDOCS_W8BENE */
    const json_t *native;   /* the document as submitted, W-9 TIN included */
    const char *signature;  /* the typed signature; NULL or "": the document's name */
    const char *signed_at;  /* as printed: the submission's signature_date */
    const char *document_id; /* printed in the footer */
} taxdocs_pdf_input_t;

/* Whether font_path is a TrueType font cairo can load. Checked at start. */
bool taxdocs_pdf_font_usable(const char *font_path);

/* Renders the PDF into *out (malloc'd, caller frees) of *len bytes.
 * Returns 0, or -1 when the type has no form, the font cannot be loaded or
 * memory ran out. */
int taxdocs_pdf_render(const char *font_path, const taxdocs_pdf_input_t *in, uint8_t **out,
                       size_t *len);

#endif
