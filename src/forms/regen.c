/* forms/regen: see regen.h. */
#include "forms/regen.h"

#include "core/log.h"
#include "forms/forms.h"
#include "store/forms.h"
#include "store/inventory.h"

#define BATCH 32
#define WAIT_MS 30000
#define WAIT_TEST_MS 200

static void flag_corrections(store_conn_t *db)
{
    size_t flagged = 0;
    store_status_t st = store_form_flag_corrections(db, &flagged);
    if (st != STORE_OK)
        log_event(LOG_WARN, "forms: flagging filed forms for correction failed",
                  json_pack("{s:s}", "status", store_status_name(st)));
    else if (flagged > 0)
        log_event(LOG_INFO, "forms: filed forms need a correction",
                  json_pack("{s:I}", "forms", (json_int_t)flagged));
}

/* Regenerates one stale form; false when the store failed (stop the pass). */
static bool regenerate_one(const forms_regen_config_t *cfg, store_conn_t *db,
                           const store_form_stale_t *f)
{
    forms_type_t type;
    if (!forms_type_parse(f->form_type, &type))
        return true; /* the query names known types only */
    store_inv_account_t account;
    store_status_t st = store_inv_account(db, f->tenant_id, f->account_id, &account);
    if (st != STORE_OK)
        return st == STORE_NOT_FOUND;
    forms_outcome_t o = forms_regenerate(db, f->tenant_id, &account, type, f->tax_year,
                                         f->generated_at, clock_now_ms(cfg->clock));
    if (o.result == FORMS_OK)
        log_event(LOG_INFO, "forms: regenerated",
                  json_pack("{s:s, s:s, s:i}", "form_id", f->id, "form_type", f->form_type,
                            "tax_year", f->tax_year));
    else if (o.result == FORMS_FAILED)
        log_event(LOG_WARN, "forms: regeneration failed",
                  json_pack("{s:s, s:s}", "form_id", f->id, "message", o.message));
    return o.result != FORMS_FAILED || o.store == STORE_OK || o.store == STORE_ERROR;
}

int64_t forms_regen_step(const forms_regen_config_t *cfg, unsigned thread_index)
{
    (void)thread_index;
    int64_t wait = cfg->test_hooks ? WAIT_TEST_MS : WAIT_MS;
    store_conn_t *db = store_acquire(cfg->store);
    if (db == NULL)
        return wait;
    flag_corrections(db);
    store_form_stale_t batch[BATCH];
    size_t n = 0;
    int64_t before = clock_now_ms(cfg->clock) - FORMS_REGEN_MIN_INTERVAL_MS;
    store_status_t st = store_form_stale(db, before, BATCH, batch, &n);
    for (size_t i = 0; st == STORE_OK && i < n && !atomic_load(cfg->stopping); i++)
        if (!regenerate_one(cfg, db, &batch[i]))
            break;
    store_release(cfg->store, db);
    /* A full batch: more may be due; go on at once. */
    return st == STORE_OK && n == BATCH ? 0 : wait;
}
