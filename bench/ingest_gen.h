/* ingest_gen: the transactions of `make bench-ingest`, shared by the HTTP
 * load generator (ingest_load.c) and the store reference (store_ingest.c) so
 * both write the same rows.
 *
 * There are N transactions, k = 0..N-1: transaction k has id <prefix>k, its
 * datetime is 2020-01-01 + k seconds, it goes to account (k mod A) and asset
 * (k div A) mod 5 (every account gets every asset). Three in four buy the
 * asset for USD (a trade with a USD rate); every fourth sells 0.5 of it back.
 *
 * The i-th request sends transaction k = pos(i), pos a permutation of
 * 0..N-1 chosen by the order: `shuffled` (i x P mod N with P prime to N near
 * 0.618 N: every transaction once, neighbours in time far apart in arrival),
 * `asc` (oldest first) or `desc` (newest first). Every order sends the same
 * transactions, so the resulting inventories must be equal. */
#ifndef TAXD_BENCH_INGEST_GEN_H
#define TAXD_BENCH_INGEST_GEN_H

#include <stdint.h>
#include <string.h>
#include <time.h>

static const char *const GEN_ASSETS[5] = {"BTC", "ETH", "SOL", "ADA", "DOT"};

typedef struct gen {
    uint64_t tx, accounts, step;
    int order; /* 0 shuffled, 1 asc, 2 desc */
} gen_t;

static inline uint64_t gen_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static inline int gen_init(gen_t *g, uint64_t tx, uint64_t accounts, const char *order)
{
    g->tx = tx;
    g->accounts = accounts;
    g->order = strcmp(order, "asc") == 0 ? 1 : strcmp(order, "desc") == 0 ? 2
               : strcmp(order, "shuffled") == 0 ? 0 : -1;
    g->step = tx > 2 ? ((uint64_t)((double)tx * 0.6180339887) | 1) : 1;
    while (gen_gcd(g->step, tx) != 1)
        g->step += 2;
    return g->order < 0 || tx == 0 || accounts == 0 ? -1 : 0;
}

static inline uint64_t gen_position(const gen_t *g, uint64_t i)
{
    if (g->order == 1)
        return i;
    if (g->order == 2)
        return g->tx - 1 - i;
    return (uint64_t)(((unsigned __int128)i * g->step) % g->tx);
}

/* The rest take the transaction k = gen_position(g, i). */
static inline int64_t gen_datetime_ms(uint64_t k) { return (1577836800LL + (int64_t)k) * 1000; }
static inline uint64_t gen_account(const gen_t *g, uint64_t k) { return k % g->accounts; }
static inline const char *gen_asset(const gen_t *g, uint64_t k) { return GEN_ASSETS[(k / g->accounts) % 5]; }
static inline int gen_is_sell(uint64_t k) { return k % 4 == 3; }
static inline unsigned gen_price(uint64_t k) { return 100 + (unsigned)(k % 997); }

/* The amounts, in canonical form (as taxd stores them). */
static inline void gen_amounts(uint64_t i, char qty[16], char usd[24], char rate[24])
{
    unsigned p = gen_price(i);
    if (gen_is_sell(i)) {
        strcpy(qty, "0.5");
        snprintf(rate, 24, "%u.25", p);
        snprintf(usd, 24, "%u.125", p / 2);
    } else {
        unsigned m = (unsigned)(i % 1000);
        if (m == 0)
            strcpy(qty, "1");
        else {
            snprintf(qty, 16, "1.%03u", m);
            size_t n = strlen(qty); /* canonical: no trailing zeros */
            while (qty[n - 1] == '0')
                qty[--n] = '\0';
        }
        snprintf(usd, 24, "%u.5", p);
        snprintf(rate, 24, "%u.5", p);
    }
}

#endif
