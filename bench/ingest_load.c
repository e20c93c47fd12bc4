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
 *        [--id-prefix t] [--host 127.0.0.1] [--batch B]
 * --from/--count send only transactions F..F+K-1 of the N (a round of a run
 * that alternates with a reference, or one million of a longer load).
 *
 * --batch B (batch mode): each request carries the next B transactions as a
 * JSON array (the same elements as single bodies) to the same path, the batch
 * endpoint. Its 200 answer holds one result per element, {"index", "status":
 * "created"|"updated"|"unchanged"|"error", "data"}, possibly wrapped in an
 * envelope; the client reads the whole answer and counts the elements'
 * statuses (el_* in the output; el_error must be 0). Any 4xx answer stops
 * every client and exits 3: a server without the batch endpoint answers 400
 * to an array, and that must fail the run clearly, not produce a rate.
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
#define REQ_MAX 4096   /* one transaction's request */
#define BODY_EACH 1024 /* room per transaction of a batch */
#define HEAD_ROOM 512  /* room before a body for its request head */
#define RESP_MAX 65536 /* initial answer buffer; grows for batch answers */

static struct {
    const char *host, *token, *order, *account_prefix, *id_prefix;
    int port, clients;
    uint64_t tx, accounts, from, count, batch;
} opt = {"127.0.0.1", NULL, "shuffled", "a", "t", 0, 16, 0, 0, 0, 0, 0};
static gen_t gen;

static atomic_uint_fast64_t next_index;
static atomic_uint_fast64_t status_count[6]; /* by hundreds: 1xx..5xx, [0] = transport errors */
static uint32_t *latency_us;                 /* per request */
static atomic_uint_fast64_t next_request;    /* index into latency_us */
/* batch mode: the elements' statuses, and a 4xx that stops every client */
enum { EL_CREATED, EL_UPDATED, EL_UNCHANGED, EL_ERROR, EL_OTHER, EL_KINDS };
static atomic_uint_fast64_t element_count[EL_KINDS];
static atomic_int stop_status;

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

/* A growing answer buffer. */
typedef struct rbuf {
    char *p;
    size_t len, cap;
} rbuf_t;

static int rbuf_read(int fd, rbuf_t *b)
{
    if (b->cap - b->len < 16384) {
        size_t cap = b->cap * 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    for (;;) {
        ssize_t r = read(fd, b->p + b->len, b->cap - 1 - b->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b->len += (size_t)r;
        b->p[b->len] = '\0';
        return 0;
    }
}

/* Decodes a chunked body in place (from *body, which ends at the buffer's
 * end); returns 1 when complete, 0 when more must be read, -1 if malformed. */
static int dechunk(char *body, size_t have, size_t *out_len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *eol = memmem(body + in, have - in, "\r\n", 2);
        if (eol == NULL)
            return 0;
        char *end;
        unsigned long n = strtoul(body + in, &end, 16);
        if (end == body + in)
            return -1;
        size_t data = (size_t)(eol + 2 - body);
        if (n == 0) {
            if (have - data < 2)
                return 0; /* the final CRLF (no trailers expected) */
            *out_len = out;
            return 1;
        }
        if (have - data < n + 2)
            return 0;
        memmove(body + out, body + data, n);
        out += n;
        in = data + n + 2;
    }
}

/* Reads one response; returns its status, 0 on a transport error. Sets
 * *keep to whether the connection may be reused and, when body is not NULL,
 * *body / *body_len to the (decoded) body inside b. */
static int read_response(int fd, rbuf_t *b, int *keep, char **body, size_t *body_len)
{
    b->len = 0;
    b->p[0] = '\0';
    char *end = NULL;
    while ((end = strstr(b->p, "\r\n\r\n")) == NULL)
        if (rbuf_read(fd, b) != 0)
            return 0;
    int status = 0;
    if (sscanf(b->p, "HTTP/1.%*d %d", &status) != 1)
        return 0;
    size_t length = 0, head = (size_t)(end + 4 - b->p);
    int chunked = 0;
    *keep = 1;
    for (char *line = strstr(b->p, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "content-length:", 15) == 0)
            length = strtoul(line + 17, NULL, 10);
        else if (strncasecmp(line + 2, "connection: close", 17) == 0)
            *keep = 0;
        else if (strncasecmp(line + 2, "transfer-encoding: chunked", 26) == 0)
            chunked = 1;
    }
    if (chunked) {
        size_t decoded = 0;
        int done;
        /* decode a copy each time: the buffer keeps the raw bytes until the end */
        for (;;) {
            char *copy = malloc(b->len - head + 1);
            if (copy == NULL)
                return 0;
            memcpy(copy, b->p + head, b->len - head);
            done = dechunk(copy, b->len - head, &decoded);
            if (done == 1) {
                memcpy(b->p + head, copy, decoded);
                b->p[head + decoded] = '\0';
                b->len = head + decoded;
            }
            free(copy);
            if (done != 0)
                break;
            if (rbuf_read(fd, b) != 0)
                return 0;
        }
        if (done < 0)
            return 0;
        length = decoded;
    } else {
        while (b->len - head < length)
            if (rbuf_read(fd, b) != 0)
                return 0;
    }
    if (body) {
        *body = b->p + head;
        *body_len = length;
    }
    return status;
}

/* Counts the elements' statuses in a batch answer: every "status": "word"
 * (the results are the only objects with a string status). */
static void count_elements(const char *body, size_t len)
{
    const char *p = body, *end = body + len;
    while ((p = memmem(p, (size_t)(end - p), "\"status\"", 8)) != NULL) {
        p += 8;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p >= end || *p != ':')
            continue;
        p++;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p >= end || *p != '"')
            continue; /* a number: an HTTP status inside an error, say */
        p++;
        int kind = !strncmp(p, "created\"", 8)     ? EL_CREATED
                   : !strncmp(p, "updated\"", 8)   ? EL_UPDATED
                   : !strncmp(p, "unchanged\"", 10) ? EL_UNCHANGED
                   : !strncmp(p, "error\"", 6)     ? EL_ERROR
                                                   : EL_OTHER;
        atomic_fetch_add(&element_count[kind], 1);
    }
}

static void *client(void *arg)
{
    (void)arg;
    uint64_t step = opt.batch ? opt.batch : 1;
    size_t cap = opt.batch ? HEAD_ROOM + (size_t)opt.batch * BODY_EACH + 16 : HEAD_ROOM + REQ_MAX;
    char *req = malloc(cap), head[HEAD_ROOM];
    rbuf_t resp = {malloc(RESP_MAX), 0, RESP_MAX};
    int fd = -1;
    while (atomic_load(&stop_status) == 0) {
        uint64_t i = atomic_fetch_add(&next_index, step);
        if (i >= opt.from + opt.count)
            break;
        uint64_t n = opt.from + opt.count - i < step ? opt.from + opt.count - i : step;
        /* the body first, after room for the head, which is then put just before it */
        char *body = req + HEAD_ROOM;
        size_t blen = 0;
        if (opt.batch)
            body[blen++] = '[';
        for (uint64_t k = 0; k < n; k++) {
            if (k)
                body[blen++] = ',';
            blen += (size_t)body_of(gen_position(&gen, i + k), body + blen, cap - HEAD_ROOM - blen - 2);
        }
        if (opt.batch)
            body[blen++] = ']';
        int hlen = snprintf(head, sizeof head,
                            "POST /v1/transactions/external-id HTTP/1.1\r\nHost: %s:%d\r\n"
                            "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\n\r\n",
                            opt.host, opt.port, opt.token, blen);
        char *start = body - hlen;
        memcpy(start, head, (size_t)hlen);
        size_t len = (size_t)hlen + blen;
        double t0 = now_s();
        int status = 0, keep = 0;
        char *answer = NULL;
        size_t answer_len = 0;
        for (int attempt = 0; attempt < 2 && status == 0; attempt++) {
            if (fd < 0)
                fd = connect_to();
            if (fd >= 0 && write_all(fd, start, len) == 0)
                status = read_response(fd, &resp, &keep, &answer, &answer_len);
            if (status == 0 || !keep) {
                if (fd >= 0)
                    close(fd);
                fd = -1;
            }
        }
        latency_us[atomic_fetch_add(&next_request, 1)] = (uint32_t)((now_s() - t0) * 1e6);
        int cls = status / 100 < 6 ? status / 100 : 0;
        atomic_fetch_add(&status_count[cls], 1);
        if (opt.batch && cls == 2) /* 200 as specified; any 2xx is read the same way */
            count_elements(answer, answer_len);
        if (opt.batch && cls == 4) {
            int none = 0;
            if (atomic_compare_exchange_strong(&stop_status, &none, status))
                fprintf(stderr, "ingest_load: a batch of %" PRIu64 " (transactions %" PRIu64
                                "..) answered %d: %.300s\n", n, i, status, answer ? answer : "");
        } else if (cls != 2 && atomic_load(&status_count[cls]) <= 3)
            fprintf(stderr, "ingest_load: request of transaction %" PRIu64 " answered %d: %.300s\n", i,
                    status, status ? (answer ? answer : "") : "(transport error)");
    }
    if (fd >= 0)
        close(fd);
    free(req);
    free(resp.p);
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
        else if (!strcmp(k, "--batch")) opt.batch = strtoull(v, NULL, 10);
        else {
            fprintf(stderr, "ingest_load: unknown option %s\n", k);
            return 2;
        }
    }
    if (opt.port <= 0 || opt.token == NULL || opt.tx == 0 || opt.accounts == 0 || opt.clients < 1 ||
        opt.clients > MAX_CLIENTS || opt.batch > 100000) {
        fprintf(stderr, "usage: ingest_load --port P --token T --tx N --accounts A [--clients C] "
                        "[--order shuffled|asc|desc] [--batch B]\n");
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
    uint64_t step = opt.batch ? opt.batch : 1, slots = (opt.count + step - 1) / step;
    latency_us = calloc(slots, sizeof *latency_us);
    pthread_t threads[MAX_CLIENTS];
    double t0 = now_s();
    for (int i = 0; i < opt.clients; i++)
        pthread_create(&threads[i], NULL, client, NULL);
    for (int i = 0; i < opt.clients; i++)
        pthread_join(threads[i], NULL);
    double seconds = now_s() - t0;
    uint64_t requests = atomic_load(&next_request);
    qsort(latency_us, requests, sizeof *latency_us, cmp_u32);
    printf("{\"requests\":%" PRIu64 ",\"transactions\":%" PRIu64 ",\"batch\":%" PRIu64
           ",\"seconds\":%.3f,\"rps\":%.1f,\"tx_per_s\":%.1f,\"2xx\":%" PRIuFAST64
           ",\"4xx\":%" PRIuFAST64 ",\"5xx\":%" PRIuFAST64 ",\"errors\":%" PRIuFAST64
           ",\"p50_ms\":%.2f,\"p99_ms\":%.2f",
           requests, opt.count, step, seconds, (double)requests / seconds, (double)opt.count / seconds,
           atomic_load(&status_count[2]), atomic_load(&status_count[4]), atomic_load(&status_count[5]),
           atomic_load(&status_count[0]) + atomic_load(&status_count[1]) +
               atomic_load(&status_count[3]),
           requests ? latency_us[requests / 2] / 1000.0 : 0.0,
           requests ? latency_us[requests * 99 / 100] / 1000.0 : 0.0);
    if (opt.batch)
        printf(",\"el_created\":%" PRIuFAST64 ",\"el_updated\":%" PRIuFAST64 ",\"el_unchanged\":%" PRIuFAST64
               ",\"el_error\":%" PRIuFAST64 ",\"el_other\":%" PRIuFAST64 ",\"rejected\":%d",
               atomic_load(&element_count[EL_CREATED]), atomic_load(&element_count[EL_UPDATED]),
               atomic_load(&element_count[EL_UNCHANGED]), atomic_load(&element_count[EL_ERROR]),
               atomic_load(&element_count[EL_OTHER]), atomic_load(&stop_status));
    printf("}\n");
    free(latency_us);
    return atomic_load(&stop_status) ? 3 : 0;
}
