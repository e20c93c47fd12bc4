/* test_store_forms: the tax forms' store and operations (store/forms.h,
 * forms/forms.h) against a real database file in a mkdtemp directory. One
 * tenant with one account (made through the accounts store; its owner
 * seeded with a raw connection).
 *
 * What they prove: one live form per (account, form type, tax year) through
 * the partial unique index, while a Deleted form stays as history; each
 * transition writes its FORM_STATUS_UPDATE row in the outbox with the exact
 * payload, and a refused one writes neither a change nor an event; the
 * SQL guard refuses to move a form that is no longer Generated; the live
 * list leaves Deleted forms out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forms/forms.h"
#include "store/accounts.h"
#include "store/store.h"

#include "scratch_store.h"

#define TENANT "00000000-0000-4000-8000-00000000000a"
#define ACCOUNT_UUID "00000000-0000-4000-9000-000000000001"
#define T0 1700000000000

typedef struct fixture {
    char dir[64];
    char path[128];
    store_t *store;
    store_conn_t *conn;
    sqlite3 *raw;
    store_inv_account_t account;
} fixture_t;

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = SCRATCH_STORE_OPEN(fx, "taxd.db");
    if (fx->store == NULL || (fx->conn = store_acquire(fx->store)) == NULL)
        return -1;
    store_tenant_t t = {.id = TENANT, .name = "t", .created_at = T0};
    store_tenant_seed_t seed = {.default_filer_uuid = "00000000-0000-4000-8000-0000000f000a",
                                .usd_asset_uuid = "00000000-0000-4000-8000-0000000e000a"};
    assert_int_equal(store_tenant_create(fx->conn, &t, &seed, NULL), STORE_OK);
    assert_int_equal(sqlite3_open_v2(fx->path, &fx->raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(fx->raw, 5000);
    assert_int_equal(sqlite3_exec(fx->raw,
                                  "INSERT INTO account_owners (uuid, tenant_id, id, name,"
                                  " account_owner_type, created_at, updated_at) VALUES"
                                  " ('00000000-0000-4000-8000-000000000099', '" TENANT "',"
                                  " 'owner', 'Owner', 'individual', 1, 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    store_account_t a = {.uuid = ACCOUNT_UUID, .id = "acct-1", .owner_id = "owner",
                         .filer_id = "default", .cost_basis_method = "FIFO",
                         .created_at = T0, .updated_at = T0};
    store_account_missing_t missing;
    assert_int_equal(store_account_create(fx->conn, TENANT, &a, &missing), STORE_OK);
    assert_int_equal(store_inv_account(fx->conn, TENANT, "acct-1", &fx->account), STORE_OK);
    *state = fx;
    return 0;
}


static int teardown(void **state)
{
    fixture_t *fx = *state;
    sqlite3_close(fx->raw);
    store_release(fx->store, fx->conn);
    scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static int count_events(fixture_t *fx)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(fx->raw,
                                        "SELECT count(*) FROM events WHERE type ="
                                        " 'FORM_STATUS_UPDATE'",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    int n = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
}

/* The payload of the newest FORM_STATUS_UPDATE (caller frees). */
static char *last_payload(fixture_t *fx)
{
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_prepare_v2(fx->raw,
                                        "SELECT payload FROM events WHERE type ="
                                        " 'FORM_STATUS_UPDATE' ORDER BY rowid DESC LIMIT 1",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    char *text = strdup((const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return text;
}

static void expect_payload(fixture_t *fx, const char *type, int year, const char *status)
{
    char want[512];
    snprintf(want, sizeof want,
             "{\"organization_id\":\"" TENANT "\",\"account_id\":\"" ACCOUNT_UUID "\","
             "\"alternate_account_id\":\"acct-1\",\"form_type\":\"%s\",\"tax_year\":%d,"
             "\"status\":\"%s\"}",
             type, year, status);
    char *got = last_payload(fx);
    assert_string_equal(got, want);
    free(got);
}

static forms_outcome_t gen(fixture_t *fx, forms_type_t type, int64_t now)
{
    return forms_generate(fx->conn, TENANT, &fx->account, type, 2024, now);
}

static void test_lifecycle_writes_one_event_per_transition(void **state)
{
    fixture_t *fx = *state;
    forms_outcome_t o = gen(fx, FORMS_GAIN_LOSS_SUMMARY, T0 + 1);
    assert_int_equal(o.result, FORMS_OK);
    assert_int_equal(o.decision, FORMS_CREATE);
    assert_string_equal(o.status, "Generated");
    expect_payload(fx, "GAIN_LOSS_SUMMARY", 2024, "Generated");
    char id[STORE_UUID_LEN];
    memcpy(id, o.form_id, sizeof id);

    o = gen(fx, FORMS_GAIN_LOSS_SUMMARY, T0 + 2); /* refresh in place */
    assert_int_equal(o.decision, FORMS_REFRESH);
    assert_string_equal(o.form_id, id);
    assert_int_equal(count_events(fx), 2);

    store_form_t form;
    o = forms_move(fx->conn, id, FORMS_FILE, T0 + 3, &form);
    assert_int_equal(o.result, FORMS_OK);
    assert_string_equal(form.status, "Filed");
    assert_true(form.filed_at == T0 + 3 && form.generated_at == T0 + 2 && form.created_at == T0 + 1);
    store_form_clear(&form);
    expect_payload(fx, "GAIN_LOSS_SUMMARY", 2024, "Filed");

    /* Refused: nothing written, no event. */
    assert_int_equal(forms_move(fx->conn, id, FORMS_DELETE, T0 + 4, NULL).result, FORMS_REFUSED);
    assert_int_equal(forms_move(fx->conn, id, FORMS_FILE, T0 + 4, NULL).result, FORMS_REFUSED);
    o = gen(fx, FORMS_GAIN_LOSS_SUMMARY, T0 + 4);
    assert_int_equal(o.result, FORMS_REFUSED);
    assert_string_equal(o.form_id, id);
    assert_string_equal(o.status, "Filed");
    assert_int_equal(forms_move(fx->conn, "no-such", FORMS_FILE, T0, NULL).result,
                     FORMS_NOT_FOUND);
    assert_int_equal(count_events(fx), 3);
    assert_int_equal(store_form_get(fx->conn, id, &form), STORE_OK);
    assert_true(form.updated_at == T0 + 3);
    store_form_clear(&form);
}

static int count_live(const store_form_t *form, void *ctx)
{
    (void)form;
    (*(int *)ctx)++;
    return 0;
}

static void test_deleted_is_history_and_regenerating_makes_a_new_form(void **state)
{
    fixture_t *fx = *state;
    forms_outcome_t first = gen(fx, FORMS_1099_B, T0 + 1);
    assert_int_equal(forms_move(fx->conn, first.form_id, FORMS_DELETE, T0 + 2, NULL).result,
                     FORMS_OK);
    expect_payload(fx, "1099_B", 2024, "Deleted");
    assert_int_equal(forms_move(fx->conn, first.form_id, FORMS_FILE, T0 + 3, NULL).result,
                     FORMS_REFUSED);
    int live = 0;
    assert_int_equal(store_form_list_live(fx->conn, ACCOUNT_UUID, 2024, count_live, &live),
                     STORE_OK);
    assert_int_equal(live, 0);
    forms_outcome_t second = gen(fx, FORMS_1099_B, T0 + 4);
    assert_int_equal(second.decision, FORMS_CREATE);
    assert_string_not_equal(second.form_id, first.form_id);
    assert_int_equal(store_form_list_live(fx->conn, ACCOUNT_UUID, 2024, count_live, &live),
                     STORE_OK);
    assert_int_equal(live, 1);
    assert_int_equal(count_events(fx), 3);
}

static store_status_t insert_duplicate(store_conn_t *conn, const void *arg)
{
    return store_form_insert_in_tx(conn, arg);
}

static store_status_t move_filed(store_conn_t *conn, const void *arg)
{
    return store_form_move_in_tx(conn, arg, "Deleted", T0 + 9);
}

/* The index and the guard hold even for a caller that skipped the state machine. */
static void test_store_guards(void **state)
{
    fixture_t *fx = *state;
    forms_outcome_t o = gen(fx, FORMS_DAC7, T0 + 1);
    store_form_t dup = {.id = "00000000-0000-4000-8000-0000000000d2", .tenant_id = TENANT,
                        .account_uuid = ACCOUNT_UUID, .form_type = "DAC7", .tax_year = 2024,
                        .content = "{}", .created_at = T0};
    assert_int_equal(store_write(fx->conn, insert_duplicate, &dup), STORE_CONFLICT);
    dup.tax_year = 2023; /* another year is another form */
    assert_int_equal(store_write(fx->conn, insert_duplicate, &dup), STORE_OK);
    assert_int_equal(forms_move(fx->conn, o.form_id, FORMS_FILE, T0 + 2, NULL).result, FORMS_OK);
    assert_int_equal(store_write(fx->conn, move_filed, o.form_id), STORE_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle_writes_one_event_per_transition, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_deleted_is_history_and_regenerating_makes_a_new_form,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_guards, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
