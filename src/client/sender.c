/* client/sender: a stream of upserts over several connections, in batches.
 *
 * taxd_sender_add appends to a bounded queue (a list in arrival order).
 * Each of options.connections threads forms a batch by walking the queue
 * from its head and taking every transaction whose id is not in flight,
 * marking its id in flight as it takes it, up to batch_size transactions
 * and max_batch_bytes. So:
 *   - ids within a batch are distinct (a second payload of an id met in the
 *     walk finds it in flight and stays queued);
 *   - a later payload of an id can never overtake an earlier one: the
 *     earlier one is nearer the head and is either taken first or blocked
 *     by the same in-flight id;
 *   - an id leaves the in-flight set only after its batch was answered and
 *     its results were reported, so the caller (a journal) has recorded the
 *     older payload's answer before the newer one is even sent.
 * A thread forms a batch when batch_size transactions are queued or when
 * taxd_sender_finish was called (the queue's capacity is a multiple of
 * batch_size, so a full queue always lets threads work: no deadlock with a
 * blocked add). A batch that fails after the library's retries (the upsert
 * is TAXD_SAFE) stops the stream: its tags go to on_failure, queued
 * transactions are dropped unreported, batches in flight finish and report,
 * and later adds answer TAXD_E_ABORTED.
 *
 * One mutex guards the queue and the in-flight set; a second one makes
 * the callbacks run one at a time without holding the first (a callback may
 * fsync). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEFAULT_CONNECTIONS 4
#define MAX_CONNECTIONS 64
#define DEFAULT_BATCH 1000
#define MAX_BATCH 1000
#define DEFAULT_BATCH_BYTES ((size_t)8 << 20)
#define QUEUE_BATCHES 2 /* queued capacity: this many batches per connection */

typedef struct item {
    struct item *prev, *next;   /* the queue, in arrival order */
    struct item *hnext;         /* the in-flight set's chain */
    uint64_t tag;
    size_t json_len;
    char *id;                   /* both point into text[] */
    char *json;
    char text[];
} item;

struct taxd_sender {
    taxd_client *client;
    taxd_sender_options o;

    pthread_mutex_t lock;       /* guards everything below */
    pthread_cond_t work;        /* queue grew, ids released, finishing or stopped */
    pthread_cond_t space;       /* the queue shrank */
    pthread_cond_t done;        /* a thread ended */
    item *head, *tail;
    size_t queued, capacity;
    item **flight;              /* the in-flight set: chains by id hash */
    size_t n_flight_buckets;
    bool finishing, stopped;
    taxd_error failure;         /* the first failure (code TAXD_OK when none) */
    int running;

    pthread_mutex_t report;     /* the callbacks run one at a time */
    pthread_t *threads;
    int n_threads;
};

/* ---- the in-flight set (FNV-1a chains; at most connections x batch_size ids) */

static size_t id_hash(const char *id, size_t buckets)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)(h & (buckets - 1));
}

static bool in_flight(const taxd_sender *s, const char *id)
{
    for (item *it = s->flight[id_hash(id, s->n_flight_buckets)]; it; it = it->hnext)
        if (strcmp(it->id, id) == 0)
            return true;
    return false;
}

static void flight_add(taxd_sender *s, item *it)
{
    size_t b = id_hash(it->id, s->n_flight_buckets);
    it->hnext = s->flight[b];
    s->flight[b] = it;
}

static void flight_remove(taxd_sender *s, item *it)
{
    item **p = &s->flight[id_hash(it->id, s->n_flight_buckets)];
    while (*p && *p != it)
        p = &(*p)->hnext;
    if (*p)
        *p = it->hnext;
}

/* ---- the queue */

static void unlink_item(taxd_sender *s, item *it)
{
    if (it->prev)
        it->prev->next = it->next;
    else
        s->head = it->next;
    if (it->next)
        it->next->prev = it->prev;
    else
        s->tail = it->prev;
    it->prev = it->next = NULL;
    s->queued--;
}

static void drop_queue(taxd_sender *s)
{
    while (s->head) {
        item *it = s->head;
        unlink_item(s, it);
        free(it);
    }
}

/* Takes up to batch_size items whose ids are not in flight into batch[],
 * marking their ids in flight. Called locked. */
static size_t take_batch(taxd_sender *s, item **batch)
{
    size_t n = 0, bytes = 2;
    item *next;
    for (item *it = s->head; it && n < s->o.batch_size; it = next) {
        next = it->next;
        if (in_flight(s, it->id))
            continue;
        if (n > 0 && bytes + it->json_len + 1 > s->o.max_batch_bytes)
            break;
        unlink_item(s, it);
        flight_add(s, it);
        batch[n++] = it;
        bytes += it->json_len + 1;
    }
    return n;
}

/* ---- the threads */

/* Reports a batch's answer (or its failure), one batch at a time. */
static void report_batch(taxd_sender *s, item **batch, size_t n, taxd_code code,
                         const taxd_tx_result *results, const taxd_error *e)
{
    pthread_mutex_lock(&s->report);
    for (size_t i = 0; i < n; i++) {
        if (code == TAXD_OK && s->o.on_result)
            s->o.on_result(s->o.userdata, batch[i]->tag, &results[i]);
        else if (code != TAXD_OK && s->o.on_failure)
            s->o.on_failure(s->o.userdata, batch[i]->tag, e);
    }
    if (s->o.on_batch)
        s->o.on_batch(s->o.userdata, n);
    pthread_mutex_unlock(&s->report);
}

/* Keeps the first failure; later ones are the same stream's echoes. */
static void note_failure(taxd_sender *s, taxd_error *e)
{
    if (!s->stopped) {
        s->stopped = true;
        s->failure = *e;
        memset(e, 0, sizeof *e);
        drop_queue(s);
    }
    taxd_error_clear(e);
    pthread_cond_broadcast(&s->space);
}

/* Sends one batch (unlocked), reports it, then releases its ids (locked). */
static void send_batch(taxd_sender *s, item **batch, size_t n, const char **jsons,
                       taxd_tx_result *results)
{
    for (size_t i = 0; i < n; i++)
        jsons[i] = batch[i]->json;
    taxd_error e = {0};
    taxd_code code = taxd_tx_upsert_batch(s->client, jsons, n, results, &e);
    if (code != TAXD_OK && e.code == TAXD_OK)
        e.code = code;
    report_batch(s, batch, n, code, results, &e);
    for (size_t i = 0; i < n; i++)
        taxd_tx_result_clear(&results[i]);
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        flight_remove(s, batch[i]);
        free(batch[i]);
    }
    if (code != TAXD_OK)
        note_failure(s, &e);
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
}

static void *sender_thread(void *arg)
{
    taxd_sender *s = arg;
    size_t cap = s->o.batch_size;
    item **batch = calloc(cap, sizeof *batch);
    const char **jsons = calloc(cap, sizeof *jsons);
    taxd_tx_result *results = calloc(cap, sizeof *results);
    pthread_mutex_lock(&s->lock);
    if (!batch || !jsons || !results) {
        taxd_error e = {0};
        tc_fail(&e, TAXD_E_NOMEM, "out of memory starting a sender thread");
        note_failure(s, &e);
    }
    while (!s->stopped) {
        if (s->finishing && s->queued == 0)
            break;
        size_t n = 0;
        if (s->finishing || s->queued >= s->o.batch_size)
            n = take_batch(s, batch);
        if (n == 0) { /* nothing to take yet, or every queued id is in flight */
            pthread_cond_wait(&s->work, &s->lock);
            continue;
        }
        pthread_cond_broadcast(&s->space);
        pthread_mutex_unlock(&s->lock);
        send_batch(s, batch, n, jsons, results);
        pthread_mutex_lock(&s->lock);
    }
    s->running--;
    pthread_cond_broadcast(&s->work); /* another thread may now see an empty queue */
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
    free(batch);
    free(jsons);
    free(results);
    return NULL;
}

/* ---- the public functions */

static size_t pow2_at_least(size_t n)
{
    size_t p = 64;
    while (p < n)
        p <<= 1;
    return p;
}

static bool sender_init(taxd_sender *s, taxd_client *client, const taxd_sender_options *options)
{
    s->client = client;
    s->o = *options;
    if (s->o.connections <= 0)
        s->o.connections = DEFAULT_CONNECTIONS;
    if (s->o.batch_size == 0)
        s->o.batch_size = DEFAULT_BATCH;
    if (s->o.max_batch_bytes == 0)
        s->o.max_batch_bytes = DEFAULT_BATCH_BYTES;
    s->capacity = s->o.batch_size * (size_t)s->o.connections * QUEUE_BATCHES;
    s->n_flight_buckets = pow2_at_least(2 * s->o.batch_size * (size_t)s->o.connections);
    s->flight = calloc(s->n_flight_buckets, sizeof *s->flight);
    s->threads = calloc((size_t)s->o.connections, sizeof *s->threads);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->report, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->space, NULL);
    pthread_cond_init(&s->done, NULL);
    return s->flight && s->threads;
}

taxd_sender *taxd_sender_new(taxd_client *client, const taxd_sender_options *options,
                             taxd_error *err)
{
    if (!client || !options) {
        tc_fail(err, TAXD_E_INVALID, "a sender needs a client and options");
        return NULL;
    }
    if (options->connections > MAX_CONNECTIONS || options->batch_size > MAX_BATCH) {
        tc_fail(err, TAXD_E_INVALID, "a sender has at most %d connections and %d per batch",
                MAX_CONNECTIONS, MAX_BATCH);
        return NULL;
    }
    taxd_sender *s = calloc(1, sizeof *s);
    if (!s || !sender_init(s, client, options)) {
        taxd_sender_free(s);
        tc_fail(err, TAXD_E_NOMEM, "out of memory making a sender");
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->o.connections; i++) {
        if (pthread_create(&s->threads[i], NULL, sender_thread, s) != 0)
            break;
        s->n_threads++;
        s->running++;
    }
    pthread_mutex_unlock(&s->lock);
    if (s->n_threads == 0) {
        taxd_sender_free(s);
        tc_fail(err, TAXD_E_NOMEM, "could not start a sender thread");
        return NULL;
    }
    return s;
}

taxd_code taxd_sender_add(taxd_sender *sender, const char *id, const char *json, uint64_t tag)
{
    if (!sender || !id || !*id || !json)
        return TAXD_E_INVALID;
    size_t id_len = strlen(id), json_len = strlen(json);
    item *it = malloc(sizeof *it + id_len + 1 + json_len + 1);
    if (!it)
        return TAXD_E_NOMEM;
    memset(it, 0, sizeof *it);
    it->tag = tag;
    it->json_len = json_len;
    it->id = it->text;
    memcpy(it->id, id, id_len + 1);
    it->json = it->text + id_len + 1;
    memcpy(it->json, json, json_len + 1);

    pthread_mutex_lock(&sender->lock);
    while (!sender->stopped && !sender->finishing && sender->queued >= sender->capacity)
        pthread_cond_wait(&sender->space, &sender->lock);
    if (sender->stopped || sender->finishing) {
        pthread_mutex_unlock(&sender->lock);
        free(it);
        return sender->stopped ? TAXD_E_ABORTED : TAXD_E_INVALID;
    }
    it->prev = sender->tail;
    if (sender->tail)
        sender->tail->next = it;
    else
        sender->head = it;
    sender->tail = it;
    sender->queued++;
    if (sender->queued >= sender->o.batch_size)
        pthread_cond_broadcast(&sender->work);
    pthread_mutex_unlock(&sender->lock);
    return TAXD_OK;
}

/* Copies the stored failure into err (strings duplicated). */
static void copy_failure(const taxd_error *from, taxd_error *to)
{
    if (!to)
        return;
    *to = *from;
    to->error = from->error ? strdup(from->error) : NULL;
    to->message = from->message ? strdup(from->message) : NULL;
    to->details = from->details ? strdup(from->details) : NULL;
    to->request_id = from->request_id ? strdup(from->request_id) : NULL;
    to->body = from->body ? strdup(from->body) : NULL;
}

taxd_code taxd_sender_finish(taxd_sender *sender, taxd_error *err)
{
    if (!sender)
        return tc_fail(err, TAXD_E_INVALID, "no sender");
    pthread_mutex_lock(&sender->lock);
    sender->finishing = true;
    pthread_cond_broadcast(&sender->work);
    pthread_cond_broadcast(&sender->space);
    while (sender->running > 0)
        pthread_cond_wait(&sender->done, &sender->lock);
    taxd_code code = sender->stopped ? sender->failure.code : TAXD_OK;
    if (code != TAXD_OK)
        copy_failure(&sender->failure, err);
    pthread_mutex_unlock(&sender->lock);
    for (int i = 0; i < sender->n_threads; i++)
        pthread_join(sender->threads[i], NULL);
    sender->n_threads = 0;
    return code;
}

void taxd_sender_free(taxd_sender *sender)
{
    if (!sender)
        return;
    if (sender->n_threads > 0)
        taxd_sender_finish(sender, NULL);
    drop_queue(sender);
    taxd_error_clear(&sender->failure);
    free(sender->flight);
    free(sender->threads);
    pthread_mutex_destroy(&sender->lock);
    pthread_mutex_destroy(&sender->report);
    pthread_cond_destroy(&sender->work);
    pthread_cond_destroy(&sender->space);
    pthread_cond_destroy(&sender->done);
    free(sender);
}
