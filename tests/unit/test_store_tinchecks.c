/* test_store_tinchecks: the TIN check queue (src/store/tinchecks.c) against
 * a real database file: claims in creation order, a lease that keeps a
 * check from a second worker until it ends, the fenced finish (a lost claim
 * or a superseded check writes nothing), superseding by subject, and the
 * tenant-scoped read. The store sees only sealed TINs: arbitrary bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/tinchecks.h"

#include "scratch_store.h"

typedef struct fixture {
    char dir[64];
    char path[160];
    store_t *store;
    store_conn_t *conn;
    char tenant[STORE_UUID_LEN];
} fixture_t;

static void fake_uuid(unsigned n, char out[STORE_UUID_LEN])
{
    snprintf(out, STORE_UUID_LEN, "00000000-0000-4000-8000-%012u", n);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->store = SCRATCH_STORE_OPEN(f, "taxd.db");
    assert_non_null(f->store);
    f->conn = store_acquire(f->store);
    store_tenant_t tenant = {.created_at = 1700000000000};
    fake_uuid(1, tenant.id);
    snprintf(tenant.name, sizeof tenant.name, "t");
    store_tenant_seed_t seed;
    fake_uuid(100001, seed.default_filer_uuid);
    fake_uuid(200001, seed.usd_asset_uuid);
    assert_int_equal(store_tenant_create(f->conn, &tenant, &seed, NULL), STORE_OK);
    memcpy(f->tenant, tenant.id, STORE_UUID_LEN);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    store_release(f->store, f->conn);
    scratch_store_close(f->store, f->dir);
    free(f);
    return 0;
}

static const uint8_t SEALED[] = {0, 1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};

static store_status_t enqueue_tx(store_conn_t *conn, const void *arg)
{
    return store_tin_check_enqueue_in_tx(conn, arg);
}

/* Queues check n (kind, subject) created at `at`. */
static void enqueue(fixture_t *f, unsigned n, store_tin_check_kind_t kind, const char *subject,
                    int64_t at)
{
    char id[STORE_UUID_LEN];
    fake_uuid(n, id);
    store_tin_check_new_t c = {.id = id, .tenant_id = f->tenant, .kind = kind,
                               .subject_id = subject, .owner_uuid = NULL, .name = "Jane",
                               .tin_sealed = SEALED, .tin_sealed_len = sizeof SEALED,
                               .tin_type = "SSN", .now = at};
    assert_int_equal(store_write(f->conn, enqueue_tx, &c), STORE_OK);
}

typedef struct finish {
    const char *id, *claim, *status;
} finish_t;

static store_status_t finish_tx(store_conn_t *conn, const void *arg)
{
    const finish_t *a = arg;
    return store_tin_check_finish_in_tx(conn, a->id, a->claim, a->status, 1700000009000);
}

static store_status_t finish(fixture_t *f, const char *id, const char *claim, const char *status)
{
    finish_t a = {id, claim, status};
    return store_write(f->conn, finish_tx, &a);
}

static void test_claim_order_lease_and_fence(void **state)
{
    fixture_t *f = *state;
    store_tin_check_t c;
    assert_int_equal(store_tin_check_claim(f->conn, "w1", 1000, 2000, &c), STORE_NOT_FOUND);
    enqueue(f, 2, STORE_TIN_CHECK_RTTM, NULL, 1700000000002);
    enqueue(f, 1, STORE_TIN_CHECK_RTTM, NULL, 1700000000001);

    /* the oldest first, with every column back */
    assert_int_equal(store_tin_check_claim(f->conn, "w1", 1000, 2000, &c), STORE_OK);
    char id1[STORE_UUID_LEN], id2[STORE_UUID_LEN];
    fake_uuid(1, id1);
    fake_uuid(2, id2);
    assert_string_equal(c.id, id1);
    assert_string_equal(c.tenant_id, f->tenant);
    assert_int_equal(c.kind, STORE_TIN_CHECK_RTTM);
    assert_string_equal(c.subject_id, "");
    assert_string_equal(c.status, "PENDING");
    assert_string_equal(c.tin_type, "SSN");
    assert_int_equal(c.tin_sealed_len, sizeof SEALED);
    assert_memory_equal(c.tin_sealed, SEALED, sizeof SEALED);
    assert_int_equal(c.validated_at, 0);

    /* a second worker gets the other one, then nothing while the leases hold */
    assert_int_equal(store_tin_check_claim(f->conn, "w2", 1500, 2500, &c), STORE_OK);
    assert_string_equal(c.id, id2);
    assert_int_equal(store_tin_check_claim(f->conn, "w3", 1999, 3000, &c), STORE_NOT_FOUND);

    /* w1's lease ends: w3 takes check 1, and w1's late result is refused */
    assert_int_equal(store_tin_check_claim(f->conn, "w3", 2000, 3000, &c), STORE_OK);
    assert_string_equal(c.id, id1);
    assert_int_equal(finish(f, id1, "w1", "VALID"), STORE_NOT_FOUND);
    assert_int_equal(finish(f, id1, "w3", "MISMATCH"), STORE_OK);
    assert_int_equal(finish(f, id1, "w3", "VALID"), STORE_NOT_FOUND); /* once only */

    assert_int_equal(store_tin_check_get(f->conn, f->tenant, id1, &c), STORE_OK);
    assert_string_equal(c.status, "MISMATCH");
    assert_int_equal(c.validated_at, 1700000009000);

    /* a finished check is never claimed again, even with its lease long over */
    assert_int_equal(finish(f, id2, "w2", "VALID"), STORE_OK);
    assert_int_equal(store_tin_check_claim(f->conn, "w4", 99999, 100000, &c), STORE_NOT_FOUND);
}

typedef struct supersede_args {
    const char *tenant, *subject;
} supersede_args_t;

static store_status_t supersede_tx(store_conn_t *conn, const void *arg)
{
    const supersede_args_t *a = arg;
    return store_tin_check_supersede_in_tx(conn, a->tenant, STORE_TIN_CHECK_ACCOUNT_OWNER,
                                           a->subject, 1700000000004);
}

static void test_supersede_by_subject(void **state)
{
    fixture_t *f = *state;
    const char *owner = "10000000-0000-4000-8000-000000000001";
    const char *other = "10000000-0000-4000-8000-000000000002";
    enqueue(f, 11, STORE_TIN_CHECK_ACCOUNT_OWNER, owner, 1700000000001);
    enqueue(f, 12, STORE_TIN_CHECK_ACCOUNT_OWNER, other, 1700000000002);
    store_tin_check_t c;
    assert_int_equal(store_tin_check_claim(f->conn, "w1", 1000, 2000, &c), STORE_OK);
    char id11[STORE_UUID_LEN], id12[STORE_UUID_LEN], id13[STORE_UUID_LEN];
    fake_uuid(11, id11);
    fake_uuid(12, id12);
    fake_uuid(13, id13);
    assert_string_equal(c.id, id11);

    /* a newer check of the same owner retires the claimed one: its worker
     * writes nothing; the other owner's check is untouched */
    enqueue(f, 13, STORE_TIN_CHECK_ACCOUNT_OWNER, owner, 1700000000003);
    assert_int_equal(finish(f, id11, "w1", "VALID"), STORE_NOT_FOUND);
    assert_int_equal(store_tin_check_get(f->conn, f->tenant, id11, &c), STORE_OK);
    assert_string_equal(c.status, STORE_TIN_CHECK_STALE);
    assert_int_equal(c.validated_at, 1700000000003);
    assert_int_equal(store_tin_check_get(f->conn, f->tenant, id12, &c), STORE_OK);
    assert_string_equal(c.status, "PENDING");

    /* removal: supersede without a new check */
    assert_int_equal(store_tin_check_get(f->conn, f->tenant, id13, &c), STORE_OK);
    assert_string_equal(c.status, "PENDING");
    supersede_args_t sup = {f->tenant, owner};
    assert_int_equal(store_write(f->conn, supersede_tx, &sup), STORE_OK);
    assert_int_equal(store_tin_check_get(f->conn, f->tenant, id13, &c), STORE_OK);
    assert_string_equal(c.status, STORE_TIN_CHECK_STALE);

    /* another tenant does not see the check */
    assert_int_equal(store_tin_check_get(f->conn, "00000000-0000-4000-8000-000000000009", id12, &c),
                     STORE_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claim_order_lease_and_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_supersede_by_subject, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
