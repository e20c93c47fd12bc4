/* tax_documents: GET /v1/tax-documents?account_id=&tax_year= (scope
 * tax-documents), the retrievable tax forms of one account for one tax year
 * (spec § Tax form status: Generated and Filed forms are retrievable, Deleted
 * ones are not), each with the content stored at its generation (a Filed
 * form's content never changes; forms/forms.h).
 *
 * account_id is the caller's account id, as on every other read route; an
 * unknown account answers 404 naming it (like /v1/inventory/summaries),
 * while a known account with no forms for the year answers 200 with an
 * empty list. tax_year is an integer in [DOMAIN_TAX_YEAR_MIN, DOMAIN_TAX_YEAR_MAX].
 * Forms are listed by form type; there are at most sixteen per account and
 * year, so the answer is not paged. */
#include <stdlib.h>

#include "api/api.h"
#include "forms/forms.h"
#include "store/inventory.h"

typedef struct list_ctx {
    json_t *items;
    bool bad;
} list_ctx_t;

static int collect_form(const store_form_t *form, void *arg)
{
    list_ctx_t *c = arg;
    json_t *item = forms_form_json(form);
    if (item == NULL || json_array_append_new(c->items, item) != 0)
        return c->bad = true;
    return 0;
}

void api_tax_documents_list(request_t *req)
{
    bool malformed = false, bad_year = false;
    int year = 0;
    json_t *issues = json_array();
    const char *account_id = api_query_text(req, "account_id", issues, &malformed);
    const char *year_text = request_query(req, "tax_year", &bad_year);
    if (!bad_year && !malformed)
        api_query_year(year_text, "tax_year", DOMAIN_TAX_YEAR_MIN, DOMAIN_TAX_YEAR_MAX, issues, &year);
    if (!api_query_ok(req, malformed || bad_year, issues))
        return;
    store_conn_t *db = api_db(req);
    if (db == NULL)
        return;
    store_inv_account_t account;
    store_status_t st = store_inv_account(db, req->claims.tenant_id, account_id, &account);
    if (st == STORE_NOT_FOUND) {
        reply_error(req, 404, "Account with id '%s' not found", account_id);
        return;
    }
    list_ctx_t c = {.items = json_array()};
    if (st == STORE_OK && c.items != NULL)
        st = store_form_list_live(db, account.uuid, year, collect_form, &c);
    if (st != STORE_OK || c.bad || c.items == NULL) {
        json_decref(c.items);
        api_fail(req, st, "tax documents: a stored form does not render, or memory ran out");
        return;
    }
    reply_data(req, 200, c.items);
}
