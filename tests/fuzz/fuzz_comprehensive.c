/* Fuzzes Taxbit's COMPREHENSIVE model (src/taxdocs/comprehensive.c): any
 * JSON body is refused with issues, or accepted and converted into a native
 * document that taxdocs_check accepts (an accepted body that converts badly
 * aborts: that is the conversion bug the API would answer 500), and the
 * reverse conversion and masking of what was built never crash or leak.
 * Input: a JSON body, as the SDK's POST submissions carries it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/validate.h"
#include "taxdocs/comprehensive.h"
#include "taxdocs/model.h"

#define NOW INT64_C(1795579200000) /* 2026-11-25T04:00:00Z */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[256];
    json_t *body = v_parse_body_any((const char *)data, size, "application/json", msg, sizeof msg);
    if (body == NULL)
        return 0;
    json_t *issues = json_array();
    taxdocs_comprehensive_t c;
    size_t n = taxdocs_comprehensive_check(body, NOW, issues, &c);
    if (n == TAXDOCS_COMPREHENSIVE_FAILED)
        abort(); /* a body that passed the rules must convert (memory aside) */
    if (n == 0) {
        json_t *back = taxdocs_comprehensive_from_native(c.type, c.native);
        if (back == NULL)
            abort();
        taxdocs_comprehensive_mask(back);
        json_decref(back);
        taxdocs_comprehensive_clear(&c);
    }
    taxdocs_comprehensive_mask(body);
    json_decref(issues);
    json_decref(body);
    return 0;
}
