/* forms: see forms.h. */
#include "forms/forms.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "inventory/recalc.h"
#include "core/domain.h"
#include "store/events.h"
#include "store/gains.h"
#include "store/transactions.h"

#define FORM_EVENT "FORM_STATUS_UPDATE"

static void outcome_fail(forms_outcome_t *o, forms_result_t result, store_status_t st,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void outcome_fail(forms_outcome_t *o, forms_result_t result, store_status_t st,
                         const char *fmt, ...)
{
    o->result = result;
    o->store = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->message, sizeof o->message, fmt, ap);
    va_end(ap);
}

/* ---- the event --------------------------------------------------------- */

/* FORM_STATUS_UPDATE for `form` now in `status`, appended in the caller's
 * transaction. Every account in taxd has a caller id, so
 * alternate_account_id is always present; it would be left out (never null)
 * for an account without one. */
static store_status_t append_event_in_tx(store_conn_t *conn, const store_form_t *form,
                                         const char *status, int64_t now)
{
    json_t *payload = json_pack("{s:s, s:s, s:s*, s:s, s:i, s:s}", "organization_id",
                                form->tenant_id, "account_id", form->account_uuid,
                                "alternate_account_id",
                                form->account_id[0] != '\0' ? form->account_id : NULL,
                                "form_type", form->form_type, "tax_year", form->tax_year,
                                "status", status);
    if (payload == NULL)
        return STORE_ERROR;
    store_status_t st = store_event_append_in_tx(conn, form->tenant_id, FORM_EVENT, payload, now);
    json_decref(payload);
    return st;
}

static forms_status_t status_of(const char *name)
{
    forms_status_t s = FORMS_NONE;
    return forms_status_parse(name, &s) ? s : FORMS_NONE;
}

/* ---- generate ---------------------------------------------------------- */

typedef struct generate_tx {
    const char *tenant_id;
    const store_inv_account_t *account;
    const char *form_type;
    int year;
    const char *content;
    int64_t source_version;     /* -1: none */
    int64_t expect_generated_at; /* regeneration: refresh only a form still generated
                                    then (0: any) */
    int64_t now;
    forms_outcome_t *out;
} generate_tx_t;

static store_status_t generate_in_tx(store_conn_t *conn, const void *arg)
{
    const generate_tx_t *g = arg;
    store_form_t form = {0};
    store_status_t st = store_form_live_in_tx(conn, g->account->uuid, g->form_type, g->year, &form);
    if (st != STORE_OK && st != STORE_NOT_FOUND)
        return st;
    forms_status_t next;
    forms_decision_t d =
        forms_decide(st == STORE_OK ? status_of(form.status) : FORMS_NONE, FORMS_GENERATE, &next);
    g->out->decision = d;
    if (g->expect_generated_at != 0 &&
        (d != FORMS_REFRESH || form.generated_at != g->expect_generated_at)) {
        store_form_clear(&form);
        g->out->decision = FORMS_REFUSED_MISSING;
        return STORE_CONFLICT; /* regenerated or moved by someone else meanwhile */
    }
    if (d == FORMS_CREATE) {
        store_form_clear(&form);
        if (ids_uuid_v4(form.id) != 0)
            return STORE_ERROR;
        snprintf(form.tenant_id, sizeof form.tenant_id, "%s", g->tenant_id);
        snprintf(form.account_uuid, sizeof form.account_uuid, "%s", g->account->uuid);
        snprintf(form.account_id, sizeof form.account_id, "%s", g->account->id);
        snprintf(form.form_type, sizeof form.form_type, "%s", g->form_type);
        form.tax_year = g->year;
        form.content = (char *)g->content; /* borrowed for the insert, not freed below */
        form.created_at = g->now;
        form.source_version = g->source_version;
        st = store_form_insert_in_tx(conn, &form);
        form.content = NULL;
    } else if (d == FORMS_REFRESH) {
        st = store_form_refresh_in_tx(conn, form.id, g->content, g->source_version, g->now);
    } else {
        st = STORE_CONFLICT; /* refused: roll back (nothing was written) */
    }
    snprintf(g->out->form_id, sizeof g->out->form_id, "%s", form.id);
    snprintf(g->out->status, sizeof g->out->status, "%s", forms_status_name(next));
    if (st == STORE_OK)
        st = append_event_in_tx(conn, &form, forms_status_name(next), g->now);
    store_form_clear(&form);
    return st;
}

/* ---- content ----------------------------------------------------------- */

typedef struct feed {
    forms_content_t *content;
    inv_line_t *lines;
    size_t cap;
    bool failed;
} feed_t;

/* One stored gains row, classified by the rules the Gains API answers
 * with (gains/gains.h), into the content. */
static int feed_gain(const store_gain_t *row, void *ctx)
{
    feed_t *f = ctx;
    gains_row_t g;
    if (gains_classify(row, &g) != GAINS_OK || forms_content_add_gain(f->content, &g) != DEC_OK)
        return f->failed = true;
    return 0;
}

static int feed_tx(const char *id, int64_t datetime_ms, const char *type,
                   const store_tx_line_t *lines, size_t count, void *ctx)
{
    feed_t *f = ctx;
    if (count > f->cap) {
        inv_line_t *grown = realloc(f->lines, count * sizeof *grown);
        if (grown == NULL)
            return f->failed = true;
        f->lines = grown;
        f->cap = count;
    }
    inv_tx_t tx;
    if (!inventory_tx_from_store(id, datetime_ms, type, lines, count, f->lines, &tx) ||
        forms_content_add_tx(f->content, &tx) != DEC_OK)
        return f->failed = true;
    return 0;
}

/* Brings the account's inventory up to date (the computed types only). */
static bool refresh(store_conn_t *db, const store_inv_account_t *account, forms_outcome_t *o)
{
    recalc_result_t r = inventory_refresh(db, account);
    if (r.store != STORE_OK)
        outcome_fail(o, FORMS_FAILED, r.store, "the inventory could not be read: %s",
                     store_status_name(r.store));
    else if (r.arithmetic != DEC_OK)
        outcome_fail(o, FORMS_FAILED, STORE_ERROR,
                     "the inventory cannot be computed: a total at transaction '%s' exceeds "
                     "the supported range",
                     r.failed_tx);
    return o->result == FORMS_OK;
}

/* The form's content as compact JSON text (malloc'd, caller frees), or NULL
 * with *o describing the failure. */
static char *content_text(store_conn_t *db, const store_inv_account_t *account,
                          forms_type_t type, int year, forms_outcome_t *o)
{
    feed_t f = {.content = forms_content_new(type, year)};
    if (f.content == NULL) {
        outcome_fail(o, FORMS_FAILED, STORE_ERROR, "out of memory");
        return NULL;
    }
    store_status_t st = STORE_OK;
    bool computed = forms_type_computed(type);
    if (computed && !refresh(db, account, o)) {
        forms_content_free(f.content);
        return NULL;
    }
    int64_t from, to;
    forms_year_bounds(year, &from, &to);
    if (type == FORMS_GAIN_LOSS_SUMMARY || type == FORMS_1099_DA)
        st = store_gains_each(db, account->uuid, from, to, NULL, feed_gain, &f);
    else if (type == FORMS_TRANSACTION_SUMMARY)
        st = store_tx_each_of_account(db, account->uuid, feed_tx, &f);
    json_t *doc = st == STORE_OK && !f.failed ? forms_content_render(f.content) : NULL;
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    free(f.lines);
    forms_content_free(f.content);
    if (text == NULL)
        outcome_fail(o, FORMS_FAILED, st != STORE_OK ? st : STORE_ERROR,
                     "the form's content could not be computed (%s)",
                     st != STORE_OK ? store_status_name(st) : "a sum exceeds the supported range");
    return text;
}

bool forms_type_computed(forms_type_t type)
{
    return type == FORMS_GAIN_LOSS_SUMMARY || type == FORMS_TRANSACTION_SUMMARY ||
           type == FORMS_1099_DA;
}

bool forms_type_allowed(const store_inv_account_t *account, forms_type_t type, int year,
                        char *why, size_t cap)
{
    if (type != FORMS_1099_DA)
        return true;
    if (year < DOMAIN_1099DA_FIRST_YEAR) {
        snprintf(why, cap, "a 1099_DA is derived from gains from tax year %d (asked: %d)",
                 DOMAIN_1099DA_FIRST_YEAR, year);
        return false;
    }
    if (strcmp(account->method, domain_method_name(DOMAIN_METHOD_AUSTRIA)) == 0) {
        snprintf(why, cap, "the account uses the AUSTRIA method: it never feeds a US form");
        return false;
    }
    return true;
}

static forms_outcome_t generate(store_conn_t *db, const char *tenant_id,
                                const store_inv_account_t *account, forms_type_t type, int year,
                                int64_t now, int64_t expect_generated_at)
{
    forms_outcome_t o = {.result = FORMS_OK, .store = STORE_OK};
    if (!forms_type_allowed(account, type, year, o.message, sizeof o.message)) {
        o.result = FORMS_REFUSED;
        o.decision = FORMS_REFUSED_MISSING;
        return o;
    }
    /* The version read with the account, before the content: a write that
     * lands meanwhile leaves the form older than its account, so it is
     * regenerated (or flagged) later rather than missed. */
    int64_t version = forms_type_computed(type) ? account->version : -1;
    char *content = content_text(db, account, type, year, &o);
    if (content == NULL)
        return o;
    generate_tx_t g = {.tenant_id = tenant_id, .account = account,
                       .form_type = forms_type_name(type), .year = year, .content = content,
                       .source_version = version, .expect_generated_at = expect_generated_at,
                       .now = now, .out = &o};
    store_status_t st = store_write(db, generate_in_tx, &g);
    free(content);
    if (expect_generated_at != 0 && st == STORE_CONFLICT)
        outcome_fail(&o, FORMS_NOT_FOUND, STORE_OK, "the form changed meanwhile");
    else if (forms_refused(o.decision))
        outcome_fail(&o, FORMS_REFUSED, STORE_OK, "%s",
                     forms_refusal_reason(o.decision, FORMS_GENERATE));
    else if (st != STORE_OK)
        outcome_fail(&o, FORMS_FAILED, st, "generating the form failed: %s",
                     store_status_name(st));
    return o;
}

forms_outcome_t forms_generate(store_conn_t *db, const char *tenant_id,
                               const store_inv_account_t *account, forms_type_t type, int year,
                               int64_t now)
{
    return generate(db, tenant_id, account, type, year, now, 0);
}

forms_outcome_t forms_regenerate(store_conn_t *db, const char *tenant_id,
                                 const store_inv_account_t *account, forms_type_t type,
                                 int year, int64_t generated_at, int64_t now)
{
    return generate(db, tenant_id, account, type, year, now, generated_at);
}

/* ---- file and delete --------------------------------------------------- */

typedef struct move_tx {
    const char *form_id;
    forms_action_t action;
    int64_t now;
    forms_outcome_t *out;
} move_tx_t;

static store_status_t move_in_tx(store_conn_t *conn, const void *arg)
{
    const move_tx_t *m = arg;
    store_form_t form;
    store_status_t st = store_form_get_in_tx(conn, m->form_id, &form);
    if (st != STORE_OK)
        return st;
    forms_status_t next;
    forms_decision_t d = forms_decide(status_of(form.status), m->action, &next);
    m->out->decision = d;
    snprintf(m->out->status, sizeof m->out->status, "%s", forms_status_name(next));
    if (d != FORMS_MOVE) {
        store_form_clear(&form);
        return STORE_CONFLICT; /* refused: nothing written */
    }
    st = store_form_move_in_tx(conn, form.id, forms_status_name(next), m->now);
    if (st == STORE_OK)
        st = append_event_in_tx(conn, &form, forms_status_name(next), m->now);
    store_form_clear(&form);
    return st;
}

forms_outcome_t forms_move(store_conn_t *db, const char *form_id, forms_action_t action,
                           int64_t now, store_form_t *after)
{
    forms_outcome_t o = {.result = FORMS_OK, .store = STORE_OK,
                         .decision = FORMS_REFUSED_MISSING};
    snprintf(o.form_id, sizeof o.form_id, "%s", form_id);
    move_tx_t m = {.form_id = form_id, .action = action, .now = now, .out = &o};
    store_status_t st = store_write(db, move_in_tx, &m);
    if (st == STORE_NOT_FOUND && o.decision == FORMS_REFUSED_MISSING)
        outcome_fail(&o, FORMS_NOT_FOUND, st, "no form with id '%s'", form_id);
    else if (st == STORE_CONFLICT && forms_refused(o.decision))
        outcome_fail(&o, FORMS_REFUSED, STORE_OK, "%s", forms_refusal_reason(o.decision, action));
    else if (st != STORE_OK)
        outcome_fail(&o, FORMS_FAILED, st, "changing the form failed: %s",
                     store_status_name(st));
    else if (after != NULL && (st = store_form_get(db, form_id, after)) != STORE_OK)
        outcome_fail(&o, FORMS_FAILED, st, "reading the form back failed: %s",
                     store_status_name(st));
    return o;
}

/* ---- the form as JSON -------------------------------------------------- */

json_t *forms_form_json(const store_form_t *form)
{
    json_t *content = json_loads(form->content, JSON_REJECT_DUPLICATES, NULL);
    if (content == NULL)
        return NULL;
    json_t *out = json_pack("{s:s, s:s, s:s, s:i, s:s, s:o, s:o, s:o}", "form_id", form->id,
                            "account_id", form->account_id, "form_type", form->form_type,
                            "tax_year", form->tax_year, "status", form->status, "created_at",
                            jsonval_time_or_null(form->created_at), "generated_at",
                            jsonval_time_or_null(form->generated_at), "filed_at",
                            jsonval_time_or_null(form->filed_at));
    if (out == NULL) {
        json_decref(content);
        return NULL;
    }
    bool ok = (form->deleted_at == 0 ||
               json_object_set_new(out, "deleted_at", jsonval_time(form->deleted_at)) == 0) &&
              json_object_set_new(out, "updated_at", jsonval_time_or_null(form->updated_at)) == 0 &&
              json_object_set_new(out, "correction_needed",
                                  json_boolean(form->correction_needed)) == 0;
    /* set_new takes content even when it fails, so it is handed over last. */
    if (!ok)
        json_decref(content);
    if (!ok || json_object_set_new(out, "content", content) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}
