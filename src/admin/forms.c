/* admin/forms: see forms.h.
 *
 * generate validates every flag (tenant, tax year, form type, account)
 * before it writes anything. With --account it generates that account's
 * form, and a refusal (the form is Filed) exits non-zero. Without it, it
 * walks every account of the tenant in caller-id order: each account is its
 * own transaction, a Filed form is skipped and listed under "skipped" (one
 * filed form must not stop a tenant-wide run), and a database failure stops
 * the run with an error naming the account it stopped at (the accounts
 * before it have their forms; running the command again finishes the job).
 * account_id in the output is the account's caller id (what the operator and
 * the tenant know it by); the events carry the service uuid as the spec
 * says. A 1099_DA before tax year DOMAIN_1099DA_FIRST_YEAR is refused
 * before anything is read; an AUSTRIA account's 1099_DA is refused (with
 * --account) or skipped with its reason (tenant-wide): never a US form. */
#include "admin/forms.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/domain.h"
#include "forms/forms.h"
#include "store/accounts.h"

#define ACCOUNT_PAGE 100

static const char *const GENERATE_FLAGS[] = {"--tenant", "--tax-year", "--form-type",
                                             "--account", NULL};
static const char *const FORM_FLAGS[] = {"--form", NULL};

typedef struct generate_req {
    const char *tenant_id;
    int year;
    forms_type_t type;
} generate_req_t;

static int parse_year(const char *text, int *year)
{
    char *end;
    long v = text != NULL && text[0] >= '0' && text[0] <= '9' ? strtol(text, &end, 10) : -1;
    if (v < DOMAIN_TAX_YEAR_MIN || v > DOMAIN_TAX_YEAR_MAX || *end != '\0')
        return admin_fail(EXIT_REFUSED, "--tax-year must be an integer from %d to %d",
                          DOMAIN_TAX_YEAR_MIN, DOMAIN_TAX_YEAR_MAX);
    *year = (int)v;
    return 0;
}

static int check_generate(store_conn_t *db, const args_t *a, generate_req_t *g)
{
    int code = admin_check_flags(a, GENERATE_FLAGS, NULL);
    if (code != 0)
        return code;
    g->tenant_id = admin_flag(a, "--tenant");
    const char *type = admin_flag(a, "--form-type");
    if (g->tenant_id == NULL || type == NULL || admin_flag(a, "--tax-year") == NULL)
        return admin_fail(EXIT_USAGE, "forms generate needs --tenant, --tax-year and --form-type");
    if ((code = parse_year(admin_flag(a, "--tax-year"), &g->year)) != 0)
        return code;
    if (!forms_type_parse(type, &g->type))
        return admin_fail(EXIT_REFUSED, "unknown form type '%s' (known: %s)", type,
                          forms_type_list());
    if (g->type == FORMS_1099_DA && g->year < DOMAIN_1099DA_FIRST_YEAR)
        return admin_fail(EXIT_REFUSED,
                          "a 1099_DA is derived from gains from tax year %d; use --tax-year %d "
                          "or later",
                          DOMAIN_1099DA_FIRST_YEAR, DOMAIN_1099DA_FIRST_YEAR);
    store_tenant_t tenant;
    store_status_t st = store_tenant_get(db, g->tenant_id, &tenant);
    if (st == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", g->tenant_id);
    return st == STORE_OK ? 0 : admin_store_failed(st, "reading the tenant");
}

/* {"form_id", "account_id", "status"} of one generated (or skipped) form. */
static json_t *form_line(const forms_outcome_t *o, const char *account_id)
{
    return json_pack("{s:s, s:s, s:s}", "form_id", o->form_id, "account_id", account_id,
                     "status", o->status);
}

/* One account's form; a refusal is in o->result (not an error here). */
static int generate_one(const admin_context_t *ctx, store_conn_t *db, const generate_req_t *g,
                        const char *account_id, forms_outcome_t *o)
{
    store_inv_account_t account;
    store_status_t st = store_inv_account(db, g->tenant_id, account_id, &account);
    if (st == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no account with id '%s' in tenant '%s'", account_id,
                          g->tenant_id);
    if (st != STORE_OK)
        return admin_store_failed(st, "reading the account");
    *o = forms_generate(db, g->tenant_id, &account, g->type, g->year, clock_now_ms(ctx->clock));
    if (o->result == FORMS_FAILED)
        return admin_fail(EXIT_REFUSED, "account '%s': %s", account_id, o->message);
    return 0;
}

static int print_forms(json_t *forms, json_t *skipped)
{
    json_t *out = json_pack("{s:o}", "forms", forms);
    if (out != NULL && skipped != NULL)
        json_object_set_new(out, "skipped", skipped);
    else
        json_decref(skipped);
    return out ? admin_print_json(out) : admin_fail(EXIT_REFUSED, "out of memory");
}

static int generate_single(const admin_context_t *ctx, store_conn_t *db, const generate_req_t *g,
                           const char *account_id)
{
    forms_outcome_t o;
    int code = generate_one(ctx, db, g, account_id, &o);
    if (code != 0)
        return code;
    if (o.result == FORMS_REFUSED && o.form_id[0] == '\0')
        return admin_fail(EXIT_REFUSED, "account '%s' (%s %d): %s", account_id,
                          forms_type_name(g->type), g->year, o.message);
    if (o.result == FORMS_REFUSED)
        return admin_fail(EXIT_REFUSED, "form %s of account '%s' (%s %d): %s", o.form_id,
                          account_id, forms_type_name(g->type), g->year, o.message);
    json_t *forms = json_array();
    json_array_append_new(forms, form_line(&o, account_id));
    return print_forms(forms, NULL);
}

/* A page of caller ids, copied out because the list callback must not use
 * the connection that generation needs. */
typedef struct id_page {
    char (*ids)[STORE_ID_MAX];
    size_t count;
} id_page_t;

static int collect_id(const store_account_t *account, void *ctx)
{
    id_page_t *p = ctx;
    memcpy(p->ids[p->count++], account->id, sizeof account->id);
    return 0;
}

typedef struct run {
    json_t *forms, *skipped;
} run_t;

static int generate_page(const admin_context_t *ctx, store_conn_t *db, const generate_req_t *g,
                         const id_page_t *page, run_t *r)
{
    for (size_t i = 0; i < page->count; i++) {
        forms_outcome_t o;
        int code = generate_one(ctx, db, g, page->ids[i], &o);
        if (code != 0)
            return code; /* the accounts before this one (caller-id order) are done */
        json_t *line = form_line(&o, page->ids[i]);
        if (o.result == FORMS_REFUSED && line != NULL)
            json_object_set_new(line, "reason", json_string(o.message));
        json_array_append_new(o.result == FORMS_REFUSED ? r->skipped : r->forms, line);
    }
    return 0;
}

static int generate_all(const admin_context_t *ctx, store_conn_t *db, const generate_req_t *g)
{
    run_t r = {json_array(), json_array()};
    id_page_t page = {malloc(ACCOUNT_PAGE * sizeof *page.ids), 0};
    char after[STORE_ID_MAX] = "";
    int code = r.forms && r.skipped && page.ids ? 0 : admin_fail(EXIT_REFUSED, "out of memory");
    for (bool more = true; code == 0 && more;) {
        page.count = 0;
        store_status_t st = store_account_list(db, g->tenant_id, NULL, after, ACCOUNT_PAGE,
                                               collect_id, &page, &more);
        if (st != STORE_OK) {
            code = admin_store_failed(st, "listing the accounts");
            break;
        }
        code = generate_page(ctx, db, g, &page, &r);
        if (page.count > 0)
            memcpy(after, page.ids[page.count - 1], sizeof after);
    }
    free(page.ids);
    if (code != 0) {
        json_decref(r.forms);
        json_decref(r.skipped);
        return code;
    }
    return print_forms(r.forms, r.skipped);
}

int admin_forms_generate(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    generate_req_t g;
    int code = check_generate(db, a, &g);
    if (code != 0)
        return code;
    const char *account_id = admin_flag(a, "--account");
    return account_id != NULL ? generate_single(ctx, db, &g, account_id)
                              : generate_all(ctx, db, &g);
}

/* ---- one form by id ---------------------------------------------------- */

static int print_form(store_form_t *form)
{
    json_t *doc = forms_form_json(form);
    store_form_clear(form);
    return doc ? admin_print_json(doc) : admin_fail(EXIT_REFUSED, "the form cannot be printed");
}

/* The --form of a command about one form; 0, or the exit code of the refusal. */
static int form_flag(const args_t *a, const char **form_id)
{
    int code = admin_check_flags(a, FORM_FLAGS, NULL);
    if (code != 0)
        return code;
    *form_id = admin_flag(a, "--form");
    return *form_id != NULL ? 0 : admin_fail(EXIT_USAGE, "--form ID is required");
}

static int move(const admin_context_t *ctx, store_conn_t *db, const args_t *a,
                forms_action_t action)
{
    const char *form_id = NULL;
    int code = form_flag(a, &form_id);
    if (code != 0)
        return code;
    store_form_t form;
    forms_outcome_t o = forms_move(db, form_id, action, clock_now_ms(ctx->clock), &form);
    if (o.result == FORMS_REFUSED)
        return admin_fail(EXIT_REFUSED, "form %s: %s", form_id, o.message);
    if (o.result != FORMS_OK)
        return admin_fail(EXIT_REFUSED, "%s", o.message);
    return print_form(&form);
}

int admin_forms_file(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    return move(ctx, db, a, FORMS_FILE);
}

int admin_forms_delete(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    return move(ctx, db, a, FORMS_DELETE);
}

int admin_forms_show(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    const char *form_id = NULL;
    int code = form_flag(a, &form_id);
    if (code != 0)
        return code;
    store_form_t form;
    store_status_t st = store_form_get(db, form_id, &form);
    if (st == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no form with id '%s'", form_id);
    if (st != STORE_OK)
        return admin_store_failed(st, "reading the form");
    return print_form(&form);
}
