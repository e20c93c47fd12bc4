/* ingest_load: the load generator of `make bench-ingest`.
 *
 * Posts N transactions to POST /v1/transactions/external-id over C keep-alive
 * connections, one request in flight per connection (a client that waits for
 * its answer, as the spec's "one request per id at a time" expects), and
 * prints one JSON line: requests, seconds, requests/s, statuses, p50/p99.
 *
 * Why C and not wrk: wrk runs for a duration, not a count, and its Lua
 * request() cannot stop after exactly N distinct ids; a Python client with
 * 16 threads cannot saturate taxd on two cores. This client costs a few
 * microseconds per request (one snprintf, one write, one read).
 *
 * The transactions and their order are those of ingest_gen.h (up to
 * --clients requests overlap, so an order holds up to that many).
 *
 * usage: ingest_load --port P --token T --tx N --accounts A [--clients C]
 *        [--order shuffled|asc|desc] [--from F --count K] [--account-prefix a]
 *        [--id-prefix t] [--host 127.0.0.1]
 * --from/--count send only requests F..F+K-1 of the N (a round of a run that
 * alternates with a reference).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ingest_gen.h"

#define MAX_CLIENTS 256
#define REQ_MAX 4096
#define RESP_MAX 65536

static struct {
    const char *host, *token, *order, *account_prefix, *id_prefix;
    int port, clients;
    uint64_t tx, accounts, from, count;
} opt = {"127.0.0.1", NULL, "shuffled", "a", "t", 0, 16, 0, 0, 0, 0};
static gen_t gen;

static atomic_uint_fast64_t next_index;
static atomic_uint_fast64_t status_count[6]; /* by hundreds: 1xx..5xx, [0] = transport errors */
static uint32_t *latency_us;                 /* per request */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The body of transaction i (k in ingest_gen.h), as a client sends it. */
static int body_of(uint64_t i, char *out, size_t cap)
{
    char qty[16], usd[24], rate[24], dt[32];
    gen_amounts(i, qty, usd, rate);
    time_t when = (time_t)(gen_datetime_ms(i) / 1000);
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(dt, sizeof dt, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *asset = gen_asset(&gen, i);
    int n = snprintf(out, cap, "{\"id\":\"%s%" PRIu64 "\",\"account_id\":\"%s%" PRIu64
                     "\",\"datetime\":\"%s\",\"type\":\"trade\",", opt.id_prefix, i,
                     opt.account_prefix, gen_account(&gen, i), dt);
    if (gen_is_sell(i))
        return n + snprintf(out + n, cap - (size_t)n,
                            "\"sent\":[{\"asset_amount\":{\"amount\":\"%s\",\"asset\":{\"code\":\"%s\","
                            "\"type\":\"crypto\"}},\"rates\":[{\"amount\":\"%s\",\"asset\":{\"code\":"
                            "\"USD\",\"type\":\"fiat\"}}]}],\"received\":[{\"asset_amount\":{\"amount\":"
                            "\"%s\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}}]}",
                            qty, asset, rate, usd);
    return n + snprintf(out + n, cap - (size_t)n,
                        "\"sent\":[{\"asset_amount\":{\"amount\":\"%s\",\"asset\":{\"code\":\"USD\","
                        "\"type\":\"fiat\"}}}],\"received\":[{\"asset_amount\":{\"amount\":\"%s\","
                        "\"asset\":{\"code\":\"%s\",\"type\":\"crypto\"}},\"rates\":[{\"amount\":"
                        "\"%s\",\"asset\":{\"code\":\"USD\",\"type\":\"fiat\"}}]}]}",
                        usd, qty, asset, rate);
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port)};
    inet_pton(AF_INET, opt.host, &sa.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one response; returns its status, 0 on a transport error. Sets
 * *keep to whether the connection may be reused. */
static int read_response(int fd, char *buf, int *keep)
{
    size_t have = 0;
    char *end = NULL;
    while (end == NULL) {
        if (have == RESP_MAX - 1)
            return 0;
        ssize_t r = read(fd, buf + have, RESP_MAX - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        have += (size_t)r;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return 0;
    size_t length = 0;
    *keep = 1;
    for (char *line = strstr(buf, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "content-length:", 15) == 0)
            length = strtoul(line + 17, NULL, 10);
        else if (strncasecmp(line + 2, "connection: close", 17) == 0)
            *keep = 0;
    }
    size_t body_have = have - (size_t)(end + 4 - buf);
    while (body_have < length) {
        ssize_t r = read(fd, buf, RESP_MAX - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        body_have += (size_t)r;
    }
    return status;
}

static void *client(void *arg)
{
    (void)arg;
    char *req = malloc(REQ_MAX), *resp = malloc(RESP_MAX), body[2048];
    int fd = -1;
    for (;;) {
        uint64_t i = atomic_fetch_add(&next_index, 1);
        if (i >= opt.from + opt.count)
            break;
        int blen = body_of(gen_position(&gen, i), body, sizeof body);
        int len = snprintf(req, REQ_MAX,
                           "POST /v1/transactions/external-id HTTP/1.1\r\nHost: %s:%d\r\n"
                           "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                           "Content-Length: %d\r\n\r\n%s",
                           opt.host, opt.port, opt.token, blen, body);
        double t0 = now_s();
        int status = 0, keep = 0;
        for (int attempt = 0; attempt < 2 && status == 0; attempt++) {
            if (fd < 0)
                fd = connect_to();
            if (fd >= 0 && write_all(fd, req, (size_t)len) == 0)
                status = read_response(fd, resp, &keep);
            if (status == 0 || !keep) {
                if (fd >= 0)
                    close(fd);
                fd = -1;
            }
        }
        latency_us[i - opt.from] = (uint32_t)((now_s() - t0) * 1e6);
        atomic_fetch_add(&status_count[status / 100 < 6 ? status / 100 : 0], 1);
        if (status / 100 != 2 && atomic_load(&status_count[status / 100 < 6 ? status / 100 : 0]) <= 3)
            fprintf(stderr, "ingest_load: transaction %" PRIu64 " answered %d: %.300s\n", i, status,
                    status ? strstr(resp, "\r\n\r\n") : "(transport error)");
    }
    if (fd >= 0)
        close(fd);
    free(req);
    free(resp);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--host")) opt.host = v;
        else if (!strcmp(k, "--port")) opt.port = atoi(v);
        else if (!strcmp(k, "--token")) opt.token = v;
        else if (!strcmp(k, "--tx")) opt.tx = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--accounts")) opt.accounts = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--from")) opt.from = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--count")) opt.count = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--clients")) opt.clients = atoi(v);
        else if (!strcmp(k, "--order")) opt.order = v;
        else if (!strcmp(k, "--account-prefix")) opt.account_prefix = v;
        else if (!strcmp(k, "--id-prefix")) opt.id_prefix = v;
        else {
            fprintf(stderr, "ingest_load: unknown option %s\n", k);
            return 2;
        }
    }
    if (opt.port <= 0 || opt.token == NULL || opt.tx == 0 || opt.accounts == 0 || opt.clients < 1 ||
        opt.clients > MAX_CLIENTS) {
        fprintf(stderr, "usage: ingest_load --port P --token T --tx N --accounts A [--clients C] "
                        "[--order shuffled|asc|desc]\n");
        return 2;
    }
    if (gen_init(&gen, opt.tx, opt.accounts, opt.order) != 0) {
        fprintf(stderr, "ingest_load: --order is shuffled, asc or desc\n");
        return 2;
    }
    if (opt.count == 0)
        opt.count = opt.tx - (opt.from < opt.tx ? opt.from : opt.tx);
    if (opt.from + opt.count > opt.tx || opt.count == 0) {
        fprintf(stderr, "ingest_load: --from and --count must select part of 0..N-1\n");
        return 2;
    }
    atomic_store(&next_index, opt.from);
    latency_us = calloc(opt.count, sizeof *latency_us);
    pthread_t threads[MAX_CLIENTS];
    double t0 = now_s();
    for (int i = 0; i < opt.clients; i++)
        pthread_create(&threads[i], NULL, client, NULL);
    for (int i = 0; i < opt.clients; i++)
        pthread_join(threads[i], NULL);
    double seconds = now_s() - t0;
    qsort(latency_us, opt.count, sizeof *latency_us, cmp_u32);
    printf("{\"requests\":%" PRIu64 ",\"seconds\":%.3f,\"rps\":%.1f,\"2xx\":%" PRIuFAST64
           ",\"4xx\":%" PRIuFAST64 ",\"5xx\":%" PRIuFAST64 ",\"errors\":%" PRIuFAST64
           ",\"p50_ms\":%.2f,\"p99_ms\":%.2f}\n",
           opt.count, seconds, (double)opt.count / seconds, atomic_load(&status_count[2]),
           atomic_load(&status_count[4]), atomic_load(&status_count[5]),
           atomic_load(&status_count[0]) + atomic_load(&status_count[1]) +
               atomic_load(&status_count[3]),
           latency_us[opt.count / 2] / 1000.0, latency_us[opt.count * 99 / 100] / 1000.0);
    free(latency_us);
    return 0;
}
