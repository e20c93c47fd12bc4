/* test_store_taxdocs: the tax documentation rows of schema v15 (store/taxdocs.h),
 * on SQLite always and on PostgreSQL too when TAXD_TEST_PG is set
 * (tests/pg/cluster.sh env): the same statements must mean the same on both.
 * Each rule:
 *  - the v15 columns (model, source, questionnaire, tin_type, vat_note) are
 *    written and read back as given, "" stored as NULL, and model "" as
 *    'native' (the model of every row from before v15);
 *  - the table refuses a model or a questionnaire outside its words;
 *  - store_taxdoc_sealed hands back the sealed document and the sealed W-9
 *    TIN (none for other types), only to the submission's tenant;
 *  - a document (file) row is written only for a submission of that tenant
 *    and that owner (STORE_NOT_FOUND otherwise, nothing written), its id is
 *    unique, and store_taxdoc_file_get finds it whatever the tenant;
 *  - a tenant purge deletes and counts its file rows (and only its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "store/owners.h"
#include "store/store.h"
#include "store/taxdocs.h"

#include "scratch_pg.h"
#include "scratch_store.h"

#define NOW INT64_C(1700000000000)
#define TENANT_A "00000000-0000-4000-8000-00000000000a"
#define TENANT_B "00000000-0000-4000-8000-00000000000b"
#define OWNER_A1 "00000000-0000-4000-8000-0000000000a1"
#define OWNER_A2 "00000000-0000-4000-8000-0000000000a2"
#define OWNER_B1 "00000000-0000-4000-8000-0000000000b1"

typedef struct fixture {
    store_t *store;
    store_conn_t *conn;
    char dir[64];    /* SQLite: the temporary directory */
    char path[160];
    char pgdb[64];   /* PostgreSQL: the database made for the test */
} fixture_t;

static void seed_tenant(store_conn_t *conn, const char *id, char tag, const char *owner1,
                        const char *owner2)
{
    store_tenant_t tenant = {.name = "t", .created_at = NOW};
    snprintf(tenant.id, sizeof tenant.id, "%s", id);
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid,
             "00000000-0000-4000-8000-0000000001%c0", tag);
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid,
             "00000000-0000-4000-8000-0000000001%c1", tag);
    assert_int_equal(store_tenant_create(conn, &tenant, &seed, NULL), STORE_OK);
    const char *owners[] = {owner1, owner2};
    for (int i = 0; i < 2 && owners[i] != NULL; i++) {
        store_owner_t *o = calloc(1, sizeof *o);
        assert_non_null(o);
        snprintf(o->uuid, sizeof o->uuid, "%s", owners[i]);
        snprintf(o->id, sizeof o->id, "owner-%d", i);
        snprintf(o->name, sizeof o->name, "Ada");
        snprintf(o->account_owner_type, sizeof o->account_owner_type, "individual");
        o->created_at = o->updated_at = NOW;
        assert_int_equal(store_owner_create(conn, id, o), STORE_OK);
        free(o);
    }
}

static fixture_t *seeded(fixture_t *fx)
{
    assert_non_null(fx->store);
    fx->conn = store_acquire(fx->store);
    assert_non_null(fx->conn);
    seed_tenant(fx->conn, TENANT_A, 'a', OWNER_A1, OWNER_A2);
    seed_tenant(fx->conn, TENANT_B, 'b', OWNER_B1, NULL);
    return fx;
}

static int setup_sqlite(void **state)
{
    fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = scratch_store_open(fx->dir, sizeof fx->dir, fx->path, sizeof fx->path, "t.db");
    *state = seeded(fx);
    return 0;
}

static int setup_pg(void **state)
{
    if (scratch_pg_url() == NULL) {
        *state = NULL;
        return 0;
    }
    fixture_t *fx = calloc(1, sizeof *fx);
    fx->store = scratch_pg_store_open("taxd_unit_td", fx->pgdb, sizeof fx->pgdb);
    *state = seeded(fx);
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    if (fx == NULL)
        return 0;
    if (fx->conn != NULL)
        store_release(fx->store, fx->conn);
    if (fx->pgdb[0] != '\0')
        scratch_pg_store_drop(fx->store, fx->pgdb);
    else
        scratch_store_close(fx->store, fx->dir);
    free(fx);
    return 0;
}

static fixture_t *need(void **state)
{
    fixture_t *fx = *state;
    if (fx == NULL)
        skip(); /* PostgreSQL without TAXD_TEST_PG */
    return fx;
}

/* ---- writing through store_write */

typedef struct doc_args {
    const char *tenant_id;
    const store_taxdoc_t *doc;
    const char *object;
    const char *sealed;      /* the sealed document's bytes (text here) */
    const char *tin;         /* the sealed TIN, or NULL */
} doc_args_t;

static store_status_t insert_tx(store_conn_t *conn, const void *arg)
{
    const doc_args_t *a = arg;
    store_taxdoc_new_t n = {
        .tenant_id = a->tenant_id, .doc = a->doc, .object = a->object,
        .document_sealed = (const uint8_t *)a->sealed, .document_sealed_len = strlen(a->sealed),
        .tin_sealed = (const uint8_t *)a->tin, .tin_sealed_len = a->tin ? strlen(a->tin) : 0};
    return store_taxdoc_insert_in_tx(conn, &n);
}

static store_taxdoc_t new_doc(const char *id, const char *owner, const char *type)
{
    store_taxdoc_t d;
    memset(&d, 0, sizeof d);
    snprintf(d.id, sizeof d.id, "%s", id);
    snprintf(d.owner_uuid, sizeof d.owner_uuid, "%s", owner);
    snprintf(d.document_type, sizeof d.document_type, "%s", type);
    snprintf(d.data_collection_status, sizeof d.data_collection_status, "COMPLETE");
    d.created_at = NOW;
    return d;
}

static store_status_t insert(fixture_t *fx, const char *tenant, const store_taxdoc_t *d,
                             const char *object, const char *tin)
{
    doc_args_t a = {tenant, d, object, "sealed-document-bytes", tin};
    return store_write(fx->conn, insert_tx, &a);
}

static store_status_t file_tx(store_conn_t *conn, const void *arg)
{
    return store_taxdoc_file_insert_in_tx(conn, arg);
}

static store_status_t insert_file(fixture_t *fx, const char *id, const char *tenant,
                                  const char *owner, const char *doc_id)
{
    store_taxdoc_file_t f;
    memset(&f, 0, sizeof f);
    snprintf(f.id, sizeof f.id, "%s", id);
    snprintf(f.tenant_id, sizeof f.tenant_id, "%s", tenant);
    snprintf(f.owner_uuid, sizeof f.owner_uuid, "%s", owner);
    snprintf(f.document_id, sizeof f.document_id, "%s", doc_id);
    f.created_at = NOW + 5;
    return store_write(fx->conn, file_tx, &f);
}

/* A raw read of what the table holds, the same text on both backends:
 * whether each v15 column is NULL, and the model. */
static const store_sql_t Q_RAW = {"test_raw_v15",
    "SELECT model, source IS NULL, questionnaire IS NULL, tin_type IS NULL, vat_note IS NULL"
    " FROM tax_documents WHERE id = ?1", NULL};

static void raw_v15(fixture_t *fx, const char *id, char model[32], int nulls[4])
{
    db_stmt_t *stmt;
    assert_int_equal(conn_enter(fx->conn), STORE_OK);
    assert_int_equal(conn_prepare_key(fx->conn, &Q_RAW, id, &stmt), STORE_OK);
    assert_int_equal(db_step(stmt), DB_ROW);
    snprintf(model, 32, "%s", db_column_text(stmt, 0));
    for (int i = 0; i < 4; i++)
        nulls[i] = (int)db_column_int(stmt, i + 1);
    stmt_done(stmt);
}

static const store_sql_t Q_FILES = {"test_count_files",
    "SELECT count(*) FROM tax_documentation_files WHERE tenant_id = ?1", NULL};

static int64_t count_files(fixture_t *fx, const char *tenant)
{
    db_stmt_t *stmt;
    int64_t n = -1;
    assert_int_equal(conn_enter(fx->conn), STORE_OK);
    assert_int_equal(conn_prepare_key(fx->conn, &Q_FILES, tenant, &stmt), STORE_OK);
    assert_int_equal(conn_query_int(fx->conn, &Q_FILES, stmt, &n), STORE_OK);
    return n;
}

#define DOC_1 "00000000-0000-4000-8000-000000000d01"
#define DOC_2 "00000000-0000-4000-8000-000000000d02"
#define DOC_3 "00000000-0000-4000-8000-000000000d03"
#define FILE_1 "00000000-0000-4000-8000-000000000f01"
#define FILE_2 "00000000-0000-4000-8000-000000000f02"

/* ---- the tests */

/* The v15 words come back as written, from each read. */
static void test_v15_columns_round_trip(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t d = new_doc(DOC_1, OWNER_A1, "W-9");
    snprintf(d.model, sizeof d.model, "comprehensive");
    snprintf(d.source, sizeof d.source, "tax-documentation-data");
    snprintf(d.questionnaire, sizeof d.questionnaire, "W-FORM");
    snprintf(d.tin_type, sizeof d.tin_type, "SSN");
    snprintf(d.vat_note, sizeof d.vat_note, "NON_EU");
    assert_int_equal(insert(fx, TENANT_A, &d, "w_form_questionnaire", "sealed-tin"), STORE_OK);

    store_taxdoc_t cur[STORE_TAXDOC_CURRENT_MAX];
    size_t count = 0;
    assert_int_equal(store_taxdoc_current(fx->conn, TENANT_A, OWNER_A1, cur, &count), STORE_OK);
    assert_int_equal(count, 1);
    const store_taxdoc_t *got = &cur[0];
    assert_string_equal(got->model, "comprehensive");
    assert_string_equal(got->source, "tax-documentation-data");
    assert_string_equal(got->questionnaire, "W-FORM");
    assert_string_equal(got->tin_type, "SSN");
    assert_string_equal(got->vat_note, "NON_EU");
    assert_string_equal(got->document_type, "W-9");
    assert_int_equal(got->created_at, NOW);

    store_taxdoc_t one;
    bool is_current = false;
    char owner_id[STORE_ID_MAX];
    assert_int_equal(conn_enter(fx->conn), STORE_OK);
    assert_int_equal(store_taxdoc_get_in_tx(fx->conn, TENANT_A, DOC_1, &one, &is_current, owner_id),
                     STORE_OK);
    assert_true(is_current);
    assert_string_equal(owner_id, "owner-0");
    assert_memory_equal(&one, got, sizeof one);
}

/* "" is NULL in the table, and a model left "" is 'native'. */
static void test_empty_words_are_null_and_model_defaults_to_native(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t d = new_doc(DOC_1, OWNER_A1, "W-8BEN");
    assert_int_equal(insert(fx, TENANT_A, &d, "w_form_questionnaire", NULL), STORE_OK);
    char model[32];
    int nulls[4];
    raw_v15(fx, DOC_1, model, nulls);
    assert_string_equal(model, "native");
    for (int i = 0; i < 4; i++)
        assert_int_equal(nulls[i], 1);

    store_taxdoc_t cur[STORE_TAXDOC_CURRENT_MAX];
    size_t count = 0;
    assert_int_equal(store_taxdoc_current(fx->conn, TENANT_A, OWNER_A1, cur, &count), STORE_OK);
    assert_int_equal(count, 1);
    assert_string_equal(cur[0].model, "native");
    assert_string_equal(cur[0].source, "");
    assert_string_equal(cur[0].questionnaire, "");
    assert_string_equal(cur[0].tin_type, "");
    assert_string_equal(cur[0].vat_note, "");
}

/* The CHECKs of model and questionnaire: the write fails, nothing stays. */
static void test_unknown_model_or_questionnaire_is_refused(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t d = new_doc(DOC_1, OWNER_A1, "DPS");
    snprintf(d.model, sizeof d.model, "taxbit");
    assert_int_not_equal(insert(fx, TENANT_A, &d, "dps_questionnaire", NULL), STORE_OK);
    d = new_doc(DOC_2, OWNER_A1, "DPS");
    snprintf(d.questionnaire, sizeof d.questionnaire, "W-9");
    assert_int_not_equal(insert(fx, TENANT_A, &d, "dps_questionnaire", NULL), STORE_OK);
    store_taxdoc_t cur[STORE_TAXDOC_CURRENT_MAX];
    size_t count = 9;
    assert_int_equal(store_taxdoc_current(fx->conn, TENANT_A, OWNER_A1, cur, &count), STORE_OK);
    assert_int_equal(count, 0);
    /* a word that fills its buffer without a NUL is the caller's error */
    d = new_doc(DOC_3, OWNER_A1, "DPS");
    memset(d.source, 'x', sizeof d.source);
    assert_int_equal(insert(fx, TENANT_A, &d, "dps_questionnaire", NULL), STORE_ERROR);
}

/* The sealed document and TIN, to the submission's tenant only. */
static void test_sealed_gives_both_blobs_to_the_tenant_only(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t w9 = new_doc(DOC_1, OWNER_A1, "W-9");
    snprintf(w9.tin_type, sizeof w9.tin_type, "EIN");
    assert_int_equal(insert(fx, TENANT_A, &w9, "w_form_questionnaire", "sealed-tin"), STORE_OK);
    store_taxdoc_t dps = new_doc(DOC_2, OWNER_A1, "DPS");
    assert_int_equal(insert(fx, TENANT_A, &dps, "dps_questionnaire", NULL), STORE_OK);

    store_taxdoc_t row;
    uint8_t *doc = NULL, *tin = NULL;
    size_t doc_len = 0, tin_len = 0;
    assert_int_equal(store_taxdoc_sealed(fx->conn, TENANT_A, DOC_1, &row, &doc, &doc_len, &tin,
                                         &tin_len), STORE_OK);
    assert_int_equal(doc_len, strlen("sealed-document-bytes"));
    assert_memory_equal(doc, "sealed-document-bytes", doc_len);
    assert_int_equal(tin_len, strlen("sealed-tin"));
    assert_memory_equal(tin, "sealed-tin", tin_len);
    assert_string_equal(row.id, DOC_1);
    assert_string_equal(row.tin_type, "EIN");
    assert_string_equal(row.model, "native");
    free(doc);
    free(tin);

    assert_int_equal(store_taxdoc_sealed(fx->conn, TENANT_A, DOC_2, &row, &doc, &doc_len, &tin,
                                         &tin_len), STORE_OK);
    assert_non_null(doc);
    assert_null(tin);
    assert_int_equal(tin_len, 0);
    free(doc);

    assert_int_equal(store_taxdoc_sealed(fx->conn, TENANT_B, DOC_1, &row, &doc, &doc_len, &tin,
                                         &tin_len), STORE_NOT_FOUND);
    assert_null(doc);
    assert_null(tin);
    assert_int_equal(store_taxdoc_sealed(fx->conn, TENANT_A, DOC_3, &row, &doc, &doc_len, &tin,
                                         &tin_len), STORE_NOT_FOUND);
}

/* A file row only for the tenant's and the owner's submission; ids unique. */
static void test_file_rows_belong_to_the_tenant_and_owner(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t d = new_doc(DOC_1, OWNER_A1, "W-8BEN");
    assert_int_equal(insert(fx, TENANT_A, &d, "w_form_questionnaire", NULL), STORE_OK);

    assert_int_equal(insert_file(fx, FILE_2, TENANT_B, OWNER_A1, DOC_1), STORE_NOT_FOUND);
    assert_int_equal(insert_file(fx, FILE_2, TENANT_A, OWNER_A2, DOC_1), STORE_NOT_FOUND);
    assert_int_equal(insert_file(fx, FILE_2, TENANT_B, OWNER_B1, DOC_1), STORE_NOT_FOUND);
    assert_int_equal(insert_file(fx, FILE_2, TENANT_A, OWNER_A1, DOC_3), STORE_NOT_FOUND);
    assert_int_equal(count_files(fx, TENANT_A) + count_files(fx, TENANT_B), 0);

    assert_int_equal(insert_file(fx, FILE_1, TENANT_A, OWNER_A1, DOC_1), STORE_OK);
    assert_int_equal(insert_file(fx, FILE_1, TENANT_A, OWNER_A1, DOC_1), STORE_CONFLICT);
    assert_int_equal(count_files(fx, TENANT_A), 1);

    store_taxdoc_file_t f;
    assert_int_equal(store_taxdoc_file_get(fx->conn, FILE_1, &f), STORE_OK);
    assert_string_equal(f.id, FILE_1);
    assert_string_equal(f.tenant_id, TENANT_A);
    assert_string_equal(f.owner_uuid, OWNER_A1);
    assert_string_equal(f.document_id, DOC_1);
    assert_int_equal(f.created_at, NOW + 5);
    assert_int_equal(store_taxdoc_file_get(fx->conn, FILE_2, &f), STORE_NOT_FOUND);
}

/* The purge deletes and counts the tenant's file rows, never another's. */
static void test_tenant_purge_deletes_and_counts_file_rows(void **state)
{
    fixture_t *fx = need(state);
    store_taxdoc_t a = new_doc(DOC_1, OWNER_A1, "W-8BEN");
    assert_int_equal(insert(fx, TENANT_A, &a, "w_form_questionnaire", NULL), STORE_OK);
    store_taxdoc_t b = new_doc(DOC_2, OWNER_B1, "W-8BEN");
    assert_int_equal(insert(fx, TENANT_B, &b, "w_form_questionnaire", NULL), STORE_OK);
    assert_int_equal(insert_file(fx, FILE_1, TENANT_A, OWNER_A1, DOC_1), STORE_OK);
    assert_int_equal(insert_file(fx, FILE_2, TENANT_B, OWNER_B1, DOC_2), STORE_OK);

    store_tenant_data_t data;
    assert_int_equal(store_tenant_delete(fx->conn, TENANT_A, false, NOW, &data), STORE_CONFLICT);
    assert_int_equal(data.tax_documentation_files, 1);
    assert_int_equal(store_tenant_delete(fx->conn, TENANT_A, true, NOW, &data), STORE_OK);
    assert_int_equal(data.tax_documentation_files, 1);
    assert_int_equal(data.tax_documents, 1);
    assert_int_equal(count_files(fx, TENANT_A), 0);
    assert_int_equal(count_files(fx, TENANT_B), 1);
    store_taxdoc_file_t f;
    assert_int_equal(store_taxdoc_file_get(fx->conn, FILE_1, &f), STORE_NOT_FOUND);
    assert_int_equal(store_taxdoc_file_get(fx->conn, FILE_2, &f), STORE_OK);
}

#define BOTH(fn) cmocka_unit_test_setup_teardown(fn, setup_sqlite, teardown), \
                 cmocka_unit_test_setup_teardown(fn, setup_pg, teardown)

int main(void)
{
    if (scratch_pg_url() == NULL)
        fprintf(stderr, "TAXD_TEST_PG is not set: the PostgreSQL runs are skipped\n");
    const struct CMUnitTest tests[] = {
        BOTH(test_v15_columns_round_trip),
        BOTH(test_empty_words_are_null_and_model_defaults_to_native),
        BOTH(test_unknown_model_or_questionnaire_is_refused),
        BOTH(test_sealed_gives_both_blobs_to_the_tenant_only),
        BOTH(test_file_rows_belong_to_the_tenant_and_owner),
        BOTH(test_tenant_purge_deletes_and_counts_file_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
