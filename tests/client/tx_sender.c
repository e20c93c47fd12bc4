/* tx_sender: a test driver of taxd_sender for tests/api/test_client_import.py.
 *
 * usage: tx_sender N IDS BATCH CONNECTIONS [MAX_ATTEMPTS]
 *   (the service and credentials from TAXD_URL, TAXD_CLIENT_ID,
 *   TAXD_CLIENT_SECRET)
 * Adds N deposits of account a1: transaction i has id r<i mod IDS> and
 * amount <i+1>, tag i. Prints one JSON line:
 *   {"added", "aborted_adds", "results": {"created", "updated", "unchanged",
 *    "refused"}, "failures", "reported_twice", "batches", "finish": "<code>"}
 * reported_twice counts tags given to on_result / on_failure more than once
 * (the sender promises exactly once per sent transaction). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <taxd/client.h>

typedef struct {
    unsigned char *seen;
    long outcomes[5], failures, twice, batches;
} tally;

static void once(tally *t, uint64_t tag)
{
    if (t->seen[tag])
        t->twice++;
    t->seen[tag] = 1;
}

static void on_result(void *u, uint64_t tag, const taxd_tx_result *r)
{
    tally *t = u;
    once(t, tag);
    t->outcomes[r->outcome <= TAXD_TX_REFUSED ? r->outcome : 0]++;
}

static void on_failure(void *u, uint64_t tag, const taxd_error *err)
{
    (void)err;
    tally *t = u;
    once(t, tag);
    t->failures++;
}

static void on_batch(void *u, size_t count)
{
    (void)count;
    ((tally *)u)->batches++;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: tx_sender N IDS BATCH CONNECTIONS [MAX_ATTEMPTS]\n");
        return 2;
    }
    long n = atol(argv[1]), ids = atol(argv[2]);
    taxd_global_init();
    taxd_client_options o = {
        .base_url = getenv("TAXD_URL"), .client_id = getenv("TAXD_CLIENT_ID"),
        .client_secret = getenv("TAXD_CLIENT_SECRET"), .max_attempts = argc > 5 ? atoi(argv[5]) : 0,
        .backoff_base_ms = 10, .backoff_max_ms = 50, .connect_timeout_ms = 2000,
    };
    taxd_error err = {0};
    taxd_client *c = taxd_client_new(&o, &err);
    if (!c) {
        fprintf(stderr, "tx_sender: %s\n", err.message ? err.message : "no client");
        return 2;
    }
    tally t = {.seen = calloc((size_t)n, 1)};
    taxd_sender_options so = {.connections = atoi(argv[4]), .batch_size = (size_t)atol(argv[3]),
                              .on_result = on_result, .on_failure = on_failure, .on_batch = on_batch,
                              .userdata = &t};
    taxd_sender *s = taxd_sender_new(c, &so, &err);
    if (!s || !t.seen)
        return 2;
    long added = 0, aborted = 0;
    for (long i = 0; i < n; i++) {
        char id[32], json[256];
        snprintf(id, sizeof id, "r%ld", i % ids);
        snprintf(json, sizeof json,
                 "{\"id\":\"%s\",\"account_id\":\"a1\",\"datetime\":\"2024-01-01T00:00:00Z\","
                 "\"type\":\"deposit\",\"received\":[{\"asset_amount\":{\"amount\":\"%ld\","
                 "\"asset\":{\"code\":\"BTC\",\"type\":\"crypto\"}}}]}", id, i + 1);
        taxd_code code = taxd_sender_add(s, id, json, (uint64_t)i);
        if (code == TAXD_OK)
            added++;
        else if (code == TAXD_E_ABORTED)
            aborted++;
    }
    taxd_code fin = taxd_sender_finish(s, &err);
    printf("{\"added\":%ld,\"aborted_adds\":%ld,\"results\":{\"created\":%ld,\"updated\":%ld,"
           "\"unchanged\":%ld,\"refused\":%ld},\"failures\":%ld,\"reported_twice\":%ld,"
           "\"batches\":%ld,\"finish\":\"%s\"}\n",
           added, aborted, t.outcomes[TAXD_TX_CREATED], t.outcomes[TAXD_TX_UPDATED],
           t.outcomes[TAXD_TX_UNCHANGED], t.outcomes[TAXD_TX_REFUSED], t.failures, t.twice, t.batches,
           taxd_code_name(fin));
    taxd_error_clear(&err);
    taxd_sender_free(s);
    taxd_client_free(c);
    free(t.seen);
    return 0;
}
