/* client_gen: the transactions of bench/ingest_gen.h as the CSV `taxctl
 * import` reads, in the same (shuffled) order ingest_load sends them, so the
 * two sides of `make bench-client` write the same rows.
 * usage: client_gen N ACCOUNTS > FILE.csv */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ingest_gen.h"

static gen_t gen;

int main(int argc, char **argv)
{
    if (argc != 3 || gen_init(&gen, strtoull(argv[1], NULL, 10), strtoull(argv[2], NULL, 10), "shuffled") != 0) {
        fprintf(stderr, "usage: client_gen N ACCOUNTS\n");
        return 2;
    }
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    printf("id,account_id,datetime,type,sent_asset,sent_amount,sent_usd_rate,"
           "received_asset,received_amount,received_usd_rate\n");
    for (uint64_t i = 0; i < gen.tx; i++) {
        uint64_t k = gen_position(&gen, i);
        char qty[16], usd[24], rate[24], dt[32];
        gen_amounts(k, qty, usd, rate);
        time_t when = (time_t)(gen_datetime_ms(k) / 1000);
        struct tm tm;
        gmtime_r(&when, &tm);
        strftime(dt, sizeof dt, "%Y-%m-%dT%H:%M:%SZ", &tm);
        const char *asset = gen_asset(&gen, k);
        if (gen_is_sell(k))
            printf("t%" PRIu64 ",a%" PRIu64 ",%s,trade,%s,%s,%s,USD,%s,\n", k, gen_account(&gen, k), dt,
                   asset, qty, rate, usd);
        else
            printf("t%" PRIu64 ",a%" PRIu64 ",%s,trade,USD,%s,,%s,%s,%s\n", k, gen_account(&gen, k), dt,
                   usd, asset, qty, rate);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
