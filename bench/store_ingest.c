/* store_ingest: the store's write path without HTTP, for `make bench-ingest`,
 * and a direct recalculation. Linked with taxd's own objects (build/obj,
 * without main.o). Part upgrade builds the previous release's copy of this
 * file against that release's objects to load a database in its schema; part
 * one-account uses recalc when the summaries endpoint is missing.
 *
 *   store_ingest ingest --db PATH --tenant TID --tx N --accounts A
 *                [--threads K] [--order shuffled|asc|desc] [--from F --count C]
 *     writes the transactions of ingest_gen.h straight through
 *     store_tx_upsert, as the API handler would after validation: the same
 *     canonical body, lines, asset links, dirty watermark and outbox event,
 *     one write per transaction through the store's group commit, as taxd
 *     commits them. K threads each hold their own pooled connection and
 *     take the next index from a shared counter. Prints one JSON line.
 *
 *   store_ingest recalc --db PATH --tenant TID --account ID
 *     runs inventory_refresh on one account and prints how long it took (the
 *     recalculation a first read of its inventory triggers).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/ids.h"
#include "inventory/recalc.h"
#include "store/inventory.h"
#include "store/store.h"
#include "store/transactions.h"

#include "ingest_gen.h"

static struct {
    const char *db, *tenant, *order, *account, *account_prefix, *id_prefix;
    uint64_t tx, accounts, from, count;
    int threads;
} opt = {NULL, NULL, "shuffled", NULL, "a", "t", 0, 0, 0, 0, 1};

static gen_t gen;
static store_t *store;
static atomic_uint_fast64_t next_index, failures;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void line_set(store_tx_line_t *l, store_line_kind_t kind, const char *asset, const char *type,
                     const char *amount, const char *rate)
{
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->asset, sizeof l->asset, "%s", asset);
    snprintf(l->asset_type, sizeof l->asset_type, "%s", type);
    snprintf(l->amount, sizeof l->amount, "%s", amount);
    l->has_rate = rate != NULL;
    if (rate)
        snprintf(l->usd_rate, sizeof l->usd_rate, "%s", rate);
    ids_uuid_v4(l->new_asset_uuid);
}

/* The canonical document api/transactions.c stores for the same request. */
static void body_of(uint64_t i, const char *id, const char *account, const char *when,
                    const char *qty, const char *usd, const char *rate, char *out, size_t cap)
{
    const char *asset = gen_asset(&gen, i);
    int n = snprintf(out, cap, "{\"id\":\"%s\",\"account_id\":\"%s\",\"datetime\":\"%s\","
                               "\"type\":\"trade\",\"subtype\":null,", id, account, when);
    if (gen_is_sell(i))
        n += snprintf(out + n, cap - (size_t)n,
                      "\"sent\":[{\"asset_amount\":{\"amount\":\"%s\",\"asset\":{\"code\":\"%s\","
                      "\"type\":\"crypto\"}},\"rates\":[{\"amount\":\"%s\",\"asset\":{\"code\":\"USD\","
                      "\"type\":\"fiat\"}}]}],\"received\":[{\"asset_amount\":{\"amount\":\"%s\","
                      "\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}},\"rates\":[]}],",
                      qty, asset, rate, usd);
    else
        n += snprintf(out + n, cap - (size_t)n,
                      "\"sent\":[{\"asset_amount\":{\"amount\":\"%s\",\"asset\":{\"code\":\"USD\","
                      "\"type\":\"fiat\"}},\"rates\":[]}],\"received\":[{\"asset_amount\":{\"amount\":"
                      "\"%s\",\"asset\":{\"code\":\"%s\",\"type\":\"crypto\"}},\"rates\":[{\"amount\":"
                      "\"%s\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}]}],",
                      usd, qty, asset, rate);
    snprintf(out + n, cap - (size_t)n, "\"fees\":[],\"metadata\":null}");
}

static void *writer(void *arg)
{
    (void)arg;
    store_conn_t *conn = store_acquire(store);
    if (conn == NULL) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    char body[2048], id[64], account[64], when[CLOCK_RFC3339_LEN];
    char qty[16], usd[24], rate[24], tx_uuid[IDS_UUID_LEN], event_uuid[IDS_UUID_LEN];
    store_tx_line_t lines[2];
    for (;;) {
        uint64_t n = atomic_fetch_add(&next_index, 1);
        if (n >= opt.from + opt.count)
            break;
        uint64_t i = gen_position(&gen, n); /* the transaction sent n-th */
        snprintf(id, sizeof id, "%s%" PRIu64, opt.id_prefix, i);
        snprintf(account, sizeof account, "%s%" PRIu64, opt.account_prefix, gen_account(&gen, i));
        int64_t dt = gen_datetime_ms(i);
        clock_format_rfc3339(dt, when);
        gen_amounts(i, qty, usd, rate);
        body_of(i, id, account, when, qty, usd, rate, body, sizeof body);
        const char *asset = gen_asset(&gen, i);
        if (gen_is_sell(i)) {
            line_set(&lines[0], STORE_LINE_SENT, asset, "crypto", qty, rate);
            line_set(&lines[1], STORE_LINE_RECEIVED, "USD", "fiat", usd, NULL);
        } else {
            line_set(&lines[0], STORE_LINE_SENT, "USD", "fiat", usd, NULL);
            line_set(&lines[1], STORE_LINE_RECEIVED, asset, "crypto", qty, rate);
        }
        ids_uuid_v4(tx_uuid);
        ids_uuid_v4(event_uuid);
        store_tx_write_t w = {.tenant_id = opt.tenant, .id = id, .account_id = account,
                              .datetime_ms = dt, .type = "trade", .subtype = NULL, .body = body,
                              .lines = lines, .line_count = 2, .new_uuid = tx_uuid,
                              .event_uuid = event_uuid, .now = wall_ms()};
        store_tx_result_t result;
        store_status_t st = store_tx_upsert(conn, &w, 0, &result);
        if (st != STORE_OK || result.outcome != STORE_TX_CREATED) {
            if (atomic_fetch_add(&failures, 1) < 3)
                fprintf(stderr, "store_ingest: %s: %s (outcome %d)\n", id, store_status_name(st),
                        (int)result.outcome);
        }
    }
    store_release(store, conn);
    return NULL;
}

static int run_ingest(void)
{
    if (opt.count == 0)
        opt.count = opt.tx - (opt.from < opt.tx ? opt.from : opt.tx);
    if (gen_init(&gen, opt.tx, opt.accounts, opt.order) != 0 || opt.threads < 1 || opt.threads > 64 ||
        opt.count == 0 || opt.from + opt.count > opt.tx) {
        fprintf(stderr, "store_ingest: bad --tx, --accounts, --order, --from, --count or --threads\n");
        return 2;
    }
    atomic_store(&next_index, opt.from);
    pthread_t threads[64];
    double t0 = now_s();
    for (int i = 0; i < opt.threads; i++)
        pthread_create(&threads[i], NULL, writer, NULL);
    for (int i = 0; i < opt.threads; i++)
        pthread_join(threads[i], NULL);
    double seconds = now_s() - t0;
    printf("{\"transactions\":%" PRIu64 ",\"threads\":%d,\"seconds\":%.3f,\"tps\":%.1f,"
           "\"failures\":%" PRIuFAST64 "}\n",
           opt.count, opt.threads, seconds, (double)opt.count / seconds, atomic_load(&failures));
    return atomic_load(&failures) ? 1 : 0;
}

static int run_recalc(void)
{
    store_conn_t *conn = store_acquire(store);
    if (conn == NULL)
        return 1;
    store_inv_account_t account;
    double t0 = now_s();
    store_status_t st = store_inv_account(conn, opt.tenant, opt.account, &account);
    recalc_result_t r = {.store = st};
    if (st == STORE_OK)
        r = inventory_refresh(conn, &account);
    double seconds = now_s() - t0;
    store_release(store, conn);
    printf("{\"account\":\"%s\",\"was_dirty\":%s,\"seconds\":%.3f,\"store\":\"%s\",\"arithmetic\":%d}\n",
           opt.account, st == STORE_OK && account.dirty ? "true" : "false", seconds,
           store_status_name(r.store), (int)r.arithmetic);
    return r.store == STORE_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: store_ingest ingest|recalc --db PATH --tenant TID ...\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--db")) opt.db = v;
        else if (!strcmp(k, "--tenant")) opt.tenant = v;
        else if (!strcmp(k, "--tx")) opt.tx = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--accounts")) opt.accounts = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--from")) opt.from = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--count")) opt.count = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--threads")) opt.threads = atoi(v);
        else if (!strcmp(k, "--order")) opt.order = v;
        else if (!strcmp(k, "--account")) opt.account = v;
        else if (!strcmp(k, "--account-prefix")) opt.account_prefix = v;
        else if (!strcmp(k, "--id-prefix")) opt.id_prefix = v;
        else {
            fprintf(stderr, "store_ingest: unknown option %s\n", k);
            return 2;
        }
    }
    if (opt.db == NULL || opt.tenant == NULL) {
        fprintf(stderr, "store_ingest: --db and --tenant are required\n");
        return 2;
    }
    char *err = NULL;
    store = store_open(opt.db, &err);
    if (store == NULL) {
        fprintf(stderr, "store_ingest: %s\n", err ? err : "cannot open the database");
        free(err);
        return 1;
    }
    int rc;
    if (strcmp(argv[1], "ingest") == 0)
        rc = run_ingest();
    else if (strcmp(argv[1], "recalc") == 0 && opt.account != NULL)
        rc = run_recalc();
    else {
        fprintf(stderr, "store_ingest: ingest, or recalc with --account\n");
        rc = 2;
    }
    store_close(store);
    return rc;
}
