/* test_webhooks_engine: the webhook dispatcher (webhooks/engine.h) driven
 * step by step against a real HTTPS receiver (tests/api/webhook_receiver.py,
 * started once for the group with /usr/bin/python3: a test CA made with
 * openssl, HTTP/1.1 keep-alive, scripted answers, every request recorded).
 *
 * Each test opens a fresh database, creates a tenant and a subscription
 * through the store (store/webhooks.h, secrets sealed with webhooks/vault.h),
 * writes event rows and fans them out as the transactions outbox does, then
 * calls webhook_engine_step until what it waits for is seen, within a bound
 * (never a fixed sleep as a barrier). Checked: headers, signature, envelope
 * and trace ids; exactly 1 + N attempts then failed, then replay; 401, 403
 * and 407 deauthorize and hold, reactivation sends the held ones; the rate
 * bound as the receiver sees it; redirects not followed; a timeout counts as
 * a failed attempt; rotation signs with both secrets, newest first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "store/store.h"
#include "store/webhooks.h"
#include "webhooks/bucket.h"
#include "webhooks/engine.h"
#include "webhooks/signature.h"
#include "webhooks/vault.h"

#define TENANT "00000000-0000-4000-8000-0000000000a1"
#define ACCOUNT_UUID "00000000-0000-4000-8000-0000000000c1"
#define BOUND_MS 30000 /* generous: 2 shared cores, ASan */

typedef struct receiver {
    char dir[128];
    pid_t pid;
    int stdin_fd;
    int https_port, control_port;
} receiver_t;

typedef struct fixture {
    receiver_t *rcv;
    char dir[64], db[128], ca[160];
    store_t *store;
    store_conn_t *conn;
    sqlite3 *raw;
    webhook_engine_t *engine;
    char sub_id[STORE_WH_ID_MAX];
    char secret[128];
    int event_seq;
} fixture_t;

/* ---- small helpers */

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

typedef struct text {
    char *data;
    size_t len;
} text_t;

static size_t collect_text(char *data, size_t size, size_t n, void *ctx)
{
    text_t *t = ctx;
    char *grown = realloc(t->data, t->len + size * n + 1);
    if (grown == NULL)
        return 0;
    memcpy(grown + t->len, data, size * n);
    t->len += size * n;
    grown[t->len] = '\0';
    t->data = grown;
    return size * n;
}

/* A plain-HTTP call to the receiver's control API; returns the parsed JSON. */
static json_t *control(const receiver_t *r, const char *path, const char *post)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", r->control_port, path);
    CURL *h = curl_easy_init();
    text_t out = {0};
    assert_non_null(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_text);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    if (post != NULL)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    curl_easy_cleanup(h);
    json_t *doc = json_loads(out.data ? out.data : "", 0, NULL);
    free(out.data);
    assert_non_null(doc);
    return doc;
}

static void script(const fixture_t *f, const char *path, const char *responses,
                   const char *fallback)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"path\":\"%s\",\"responses\":%s,\"default\":%s}", path,
             responses, fallback ? fallback : "{\"status\":200}");
    json_decref(control(f->rcv, "/script", body));
}

/* The requests the receiver recorded on path. */
static json_t *requests(const fixture_t *f, const char *path)
{
    json_t *all = control(f->rcv, "/requests", NULL);
    json_t *mine = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "path")), path) == 0)
            json_array_append(mine, r);
    }
    json_decref(all);
    return mine;
}

/* Every value of a header in a recorded request (NULL-terminated, borrowed). */
static const char *header(json_t *req, const char *name, int nth)
{
    size_t i;
    json_t *pair;
    int seen = 0;
    json_array_foreach(json_object_get(req, "headers"), i, pair) {
        if (strcmp(json_string_value(json_array_get(pair, 0)), name) == 0 && seen++ == nth)
            return json_string_value(json_array_get(pair, 1));
    }
    return NULL;
}

/* ---- the receiver (once per group) */

static int receiver_start(void **state)
{
    receiver_t *r = calloc(1, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/taxd-whrcv-XXXXXX");
    if (r == NULL || mkdtemp(r->dir) == NULL)
        return -1;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    char err_path[192];
    snprintf(err_path, sizeof err_path, "%s/receiver.stderr", r->dir);
    r->pid = fork();
    if (r->pid == 0) {
        dup2(fds[0], 0);
        close(fds[1]);
        FILE *err = freopen(err_path, "w", stderr);
        (void)err;
        execl("/usr/bin/python3", "python3", "tests/api/webhook_receiver.py", "--dir", r->dir,
              (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    r->stdin_fd = fds[1];
    char ports[192];
    snprintf(ports, sizeof ports, "%s/ports.json", r->dir);
    for (int i = 0; i < 600; i++) { /* up to 30 s: openssl and python start */
        json_t *doc = json_load_file(ports, 0, NULL);
        if (doc != NULL) {
            r->https_port = (int)json_integer_value(json_object_get(doc, "https"));
            r->control_port = (int)json_integer_value(json_object_get(doc, "control"));
            json_decref(doc);
            *state = r;
            return 0;
        }
        sleep_ms(50);
    }
    fprintf(stderr, "the webhook receiver did not start (see %s)\n", err_path);
    return -1;
}

static int receiver_stop(void **state)
{
    receiver_t *r = *state;
    close(r->stdin_fd);
    kill(r->pid, SIGTERM);
    waitpid(r->pid, NULL, 0);
    nftw(r->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(r);
    return 0;
}

/* ---- per test: database, tenant, engine */

static void create_tenant(fixture_t *f)
{
    store_tenant_t tenant = {.created_at = 1000};
    snprintf(tenant.id, sizeof tenant.id, "%s", TENANT);
    snprintf(tenant.name, sizeof tenant.name, "tenant");
    store_tenant_seed_t seed;
    snprintf(seed.default_filer_uuid, sizeof seed.default_filer_uuid,
             "00000000-0000-4000-8000-0000000000f1");
    snprintf(seed.usd_asset_uuid, sizeof seed.usd_asset_uuid,
             "00000000-0000-4000-8000-0000000000e1");
    assert_int_equal(store_tenant_create(f->conn, &tenant, &seed, NULL), STORE_OK);
}

static int setup(void **state)
{
    receiver_t *r = *state;
    fixture_t *f = calloc(1, sizeof *f);
    f->rcv = r;
    snprintf(f->dir, sizeof f->dir, "/tmp/taxd-wh-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->db, sizeof f->db, "%s/taxd.db", f->dir);
    snprintf(f->ca, sizeof f->ca, "%s/ca.pem", r->dir);
    char *err = NULL;
    f->store = store_open(f->db, &err);
    if (f->store == NULL)
        return -1;
    f->conn = store_acquire(f->store);
    create_tenant(f);
    if (sqlite3_open(f->db, &f->raw) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(f->raw, 5000);
    webhook_engine_config_t cfg = {.store = f->store, .key_base = f->db, .ca_file = f->ca,
                                   .instance_id = "test", .threads = 1};
    f->engine = webhook_engine_new(&cfg, &err);
    if (f->engine == NULL) {
        fprintf(stderr, "engine: %s\n", err);
        return -1;
    }
    json_decref(control(r, "/reset", "{}"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    receiver_t *r = f->rcv;
    webhook_engine_free(f->engine);
    sqlite3_close(f->raw);
    store_release(f->store, f->conn);
    store_close(f->store);
    nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    *state = r;
    return 0;
}

/* ---- subscriptions and events */

typedef struct sub_opts {
    const char *path;
    uint32_t rate, retries, window_s, timeout_s;
    const char *basic_user, *basic_password;
} sub_opts_t;

static void seal_secret(const fixture_t *f, const char *id, const char *secret,
                        store_wh_secret_t *out)
{
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
    char *err = NULL;
    assert_int_equal(webhook_vault_key_load(f->db, key, &err), 0);
    memset(out, 0, sizeof *out);
    out->created_at = 1000;
    assert_int_equal(webhook_vault_seal(key, id, WEBHOOK_VAULT_SECRET, secret, out->sealed,
                                        sizeof out->sealed, &out->sealed_len),
                     0);
}

static void subscribe(fixture_t *f, const sub_opts_t *o)
{
    store_subscription_t s = {.rate_limit = o->rate ? o->rate : 300,
                              .retry_attempts = o->retries,
                              .retry_window_s = o->window_s ? o->window_s : 3600,
                              .timeout_s = o->timeout_s ? o->timeout_s : 10,
                              .created_at = 1000, .updated_at = 1000};
    snprintf(s.id, sizeof s.id, "sub_%s", o->path + 1);
    snprintf(s.tenant_id, sizeof s.tenant_id, TENANT);
    snprintf(s.url, sizeof s.url, "https://127.0.0.1:%d%s", f->rcv->https_port, o->path);
    snprintf(s.events, sizeof s.events, "INVENTORY_UPDATE,FORM_STATUS_UPDATE");
    if (o->basic_user != NULL) {
        uint8_t key[CRYPTO_AEAD_KEY_LEN];
        char *err = NULL;
        assert_int_equal(webhook_vault_key_load(f->db, key, &err), 0);
        s.basic = true;
        snprintf(s.basic_user, sizeof s.basic_user, "%s", o->basic_user);
        assert_int_equal(webhook_vault_seal(key, s.id, WEBHOOK_VAULT_BASIC_PASSWORD,
                                            o->basic_password, s.basic_password_sealed,
                                            sizeof s.basic_password_sealed,
                                            &s.basic_password_sealed_len),
                         0);
    }
    snprintf(f->secret, sizeof f->secret, "secret-of-%s", s.id);
    store_wh_secret_t sealed;
    seal_secret(f, s.id, f->secret, &sealed);
    assert_int_equal(store_subscription_create(f->conn, &s, &sealed), STORE_OK);
    snprintf(f->sub_id, sizeof f->sub_id, "%s", s.id);
}

/* An INVENTORY_UPDATE row as the transactions outbox writes it, fanned out. */
static void raise_event(fixture_t *f, char *event_id, size_t cap, const char *account_id)
{
    snprintf(event_id, cap, "00000000-0000-4000-8000-%012d", ++f->event_seq);
    sqlite3_stmt *stmt;
    assert_int_equal(
        sqlite3_prepare_v2(f->raw,
                           "INSERT INTO events (id, tenant_id, type, created_at, account_uuid,"
                           " account_id, from_ms, from_tx, latest_ms, latest_tx, has_ids)"
                           " VALUES (?1, ?2, 'INVENTORY_UPDATE', ?3, ?4, ?5, 1704067200000,"
                           " 'tx-a', 1709210096789, 'tx-b', 1)",
                           -1, &stmt, NULL),
        SQLITE_OK);
    int64_t now = clock_now_ms(NULL);
    sqlite3_bind_text(stmt, 1, event_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, TENANT, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 3, now);
    sqlite3_bind_text(stmt, 4, ACCOUNT_UUID, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 5, account_id, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    assert_int_equal(store_deliveries_fan_out_in_tx(f->conn, TENANT, event_id,
                                                    "INVENTORY_UPDATE", now),
                     STORE_OK);
    webhook_engine_wake(f->engine);
}

static void raise_events(fixture_t *f, int count)
{
    char id[STORE_UUID_LEN];
    for (int i = 0; i < count; i++)
        raise_event(f, id, sizeof id, "acct-1");
}

/* ---- driving the engine */

typedef struct find_ctx {
    const char *event_id;
    store_delivery_t found;
    bool hit;
} find_ctx_t;

static int find_delivery(const store_delivery_t *d, void *ctx)
{
    find_ctx_t *c = ctx;
    if (strcmp(d->event_id, c->event_id) != 0)
        return 0;
    c->found = *d;
    c->hit = true;
    return 1;
}

static store_delivery_t delivery_of(fixture_t *f, const char *event_id)
{
    find_ctx_t c = {.event_id = event_id};
    assert_int_equal(store_delivery_each(f->conn, f->sub_id, NULL, 0, find_delivery, &c),
                     STORE_OK);
    assert_true(c.hit);
    return c.found;
}

/* Steps the engine until the delivery of event_id is in `state`. */
static store_delivery_t drive_to_state(fixture_t *f, const char *event_id, const char *state)
{
    int64_t until = clock_monotonic_ms() + BOUND_MS;
    for (;;) {
        store_delivery_t d = delivery_of(f, event_id);
        if (strcmp(d.state, state) == 0)
            return d;
        assert_true(clock_monotonic_ms() < until);
        int64_t pause = webhook_engine_step(f->engine, 0);
        if (pause > 0)
            sleep_ms(pause < 20 ? pause : 20);
    }
}

/* Steps the engine until the receiver has `count` requests on path. */
static json_t *drive_to_requests(fixture_t *f, const char *path, size_t count)
{
    int64_t until = clock_monotonic_ms() + BOUND_MS;
    for (;;) {
        json_t *got = requests(f, path);
        if (json_array_size(got) >= count)
            return got;
        json_decref(got);
        assert_true(clock_monotonic_ms() < until);
        int64_t pause = webhook_engine_step(f->engine, 0);
        if (pause > 0)
            sleep_ms(pause < 20 ? pause : 20);
    }
}

/* Steps the engine for ms (a bounded observation: "nothing more arrives"). */
static void drive_for(fixture_t *f, int64_t ms)
{
    int64_t until = clock_monotonic_ms() + ms;
    while (clock_monotonic_ms() < until) {
        int64_t pause = webhook_engine_step(f->engine, 0);
        if (pause > 0)
            sleep_ms(pause < 20 ? pause : 20);
    }
}

static const char *body_of(json_t *req)
{
    return json_string_value(json_object_get(req, "body"));
}

/* ---- tests */

static void test_headers_signature_and_envelope(void **state)
{
    fixture_t *f = *state;
    subscribe(f, &(sub_opts_t){.path = "/plain"});
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "acct \"q\" \\ \x01\x1f \xc3\xa9\xe2\x82\xac");
    store_delivery_t d = drive_to_state(f, event_id, "delivered");
    json_t *got = requests(f, "/plain");
    assert_int_equal(json_array_size(got), 1);
    json_t *req = json_array_get(got, 0);
    const char *body = body_of(req);
    assert_string_equal(json_string_value(json_object_get(req, "version")), "HTTP/1.1");
    assert_string_equal(header(req, "content-type", 0), "application/json");
    assert_string_equal(header(req, "x-service-source", 0), "webhook");
    assert_null(header(req, "authorization", 0));
    assert_string_equal(header(req, "x-trace-id", 0), d.trace_id);
    const char *sig = header(req, "x-service-signature", 0);
    assert_non_null(sig);
    assert_int_equal(strncmp(sig, "v1=", 3), 0);
    assert_null(strchr(sig, ','));
    assert_true(signature_verify(sig, f->secret, body, strlen(body)));
    /* The envelope: dispatch timestamp, one event, fields in the catalog's shape. */
    json_t *doc = json_loads(body, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_object_size(doc), 2);
    assert_int_equal(strlen(json_string_value(json_object_get(doc, "timestamp"))), 24);
    json_t *data = json_object_get(doc, "data");
    assert_int_equal(json_array_size(data), 1);
    json_t *ev = json_array_get(data, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "event_type")), "INVENTORY_UPDATE");
    assert_string_equal(json_string_value(json_object_get(ev, "event_id")), event_id);
    assert_string_equal(json_string_value(json_object_get(ev, "id")), event_id);
    assert_string_equal(json_string_value(json_object_get(ev, "account_id")), ACCOUNT_UUID);
    assert_string_equal(json_string_value(json_object_get(ev, "latest_transaction_id")), "tx-b");
    assert_string_equal(json_string_value(json_object_get(ev, "update_from_datetime")),
                        "2024-01-01T00:00:00.000Z");
    assert_non_null(strstr(body, "acct \\\"q\\\" \\\\ \\u0001\\u001f \xc3\xa9\xe2\x82\xac"));
    assert_int_equal(d.attempts, 1);
    assert_int_equal(d.last_status, 200);
    json_decref(doc);
    json_decref(got);
}

static void test_basic_mode_and_rotation(void **state)
{
    fixture_t *f = *state;
    subscribe(f, &(sub_opts_t){.path = "/basic", .basic_user = "bob",
                               .basic_password = "pa:ss w\xc3\xb6rd"});
    char older[128];
    snprintf(older, sizeof older, "%s", f->secret);
    store_wh_secret_t sealed;
    seal_secret(f, f->sub_id, "the-newer-secret", &sealed);
    assert_int_equal(store_subscription_secret_add(f->conn, f->sub_id, &sealed, 2000), STORE_OK);
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "a");
    drive_to_state(f, event_id, "delivered");
    json_t *got = requests(f, "/basic");
    json_t *req = json_array_get(got, 0);
    const char *body = body_of(req);
    assert_null(header(req, "x-service-source", 0));
    /* base64("bob:pa:ss wörd") */
    assert_string_equal(header(req, "authorization", 0), "Basic Ym9iOnBhOnNzIHfDtnJk");
    const char *sig = header(req, "x-service-signature", 0);
    const char *both[] = {"the-newer-secret", older};
    char *expected = signature_header(both, 2, body, strlen(body));
    assert_string_equal(sig, expected); /* both, newest first, no spaces */
    free(expected);
    json_decref(got);
}

static void test_exactly_one_plus_n_attempts_then_replay(void **state)
{
    fixture_t *f = *state;
    script(f, "/fail", "[]", "{\"status\":500}");
    subscribe(f, &(sub_opts_t){.path = "/fail", .retries = 3, .window_s = 3});
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "a");
    store_delivery_t d = drive_to_state(f, event_id, "failed");
    assert_int_equal(d.attempts, 4);
    assert_int_equal(d.last_status, 500);
    json_t *got = requests(f, "/fail");
    assert_int_equal(json_array_size(got), 4);
    /* All inside the window from the first attempt, one trace id throughout. */
    double first = json_real_value(json_object_get(json_array_get(got, 0), "t"));
    size_t i;
    json_t *r;
    json_array_foreach(got, i, r) {
        assert_true(json_real_value(json_object_get(r, "t")) - first < 3.0);
        assert_string_equal(header(r, "x-trace-id", 0), d.trace_id);
    }
    json_decref(got);
    /* Failed stays failed: nothing more is sent without the operator. */
    drive_for(f, 800);
    got = requests(f, "/fail");
    assert_int_equal(json_array_size(got), 4);
    json_decref(got);
    /* Replay: queued again with a new trace id and a fresh window. */
    script(f, "/fail", "[]", "{\"status\":200}");
    int64_t count = 0;
    assert_int_equal(store_delivery_replay(f->conn, f->sub_id, NULL, 0, clock_now_ms(NULL),
                                           &count),
                     STORE_OK);
    assert_int_equal(count, 1);
    webhook_engine_wake(f->engine);
    store_delivery_t again = drive_to_state(f, event_id, "delivered");
    assert_string_not_equal(again.trace_id, d.trace_id);
    assert_int_equal(again.attempts, 1);
    got = requests(f, "/fail");
    assert_int_equal(json_array_size(got), 5);
    assert_string_equal(header(json_array_get(got, 4), "x-trace-id", 0), again.trace_id);
    json_decref(got);
}

static void check_deauthorization(fixture_t *f, const char *path, int status)
{
    char answer[64];
    snprintf(answer, sizeof answer, "[{\"status\":%d}]", status);
    script(f, path, answer, NULL);
    subscribe(f, &(sub_opts_t){.path = path, .retries = 2});
    char first[STORE_UUID_LEN], second[STORE_UUID_LEN];
    raise_event(f, first, sizeof first, "a");
    store_delivery_t d = drive_to_state(f, first, "held");
    assert_int_equal(d.last_status, status);
    store_subscription_t sub;
    assert_int_equal(store_subscription_get(f->conn, f->sub_id, &sub), STORE_OK);
    assert_true(sub.deauthorized);
    /* Later events are held, never sent, never dropped. */
    raise_event(f, second, sizeof second, "a");
    drive_for(f, 800);
    assert_string_equal(delivery_of(f, second).state, "held");
    json_t *got = requests(f, path);
    assert_int_equal(json_array_size(got), 1);
    json_decref(got);
    /* Reactivation sends every held delivery, the one answered 401 included. */
    int64_t requeued = 0;
    assert_int_equal(store_subscription_reactivate(f->conn, f->sub_id, clock_now_ms(NULL),
                                                   &requeued),
                     STORE_OK);
    assert_int_equal(requeued, 2);
    webhook_engine_wake(f->engine);
    drive_to_state(f, first, "delivered");
    drive_to_state(f, second, "delivered");
    got = requests(f, path);
    assert_int_equal(json_array_size(got), 3);
    json_decref(got);
}

static void test_deauthorized_by_401(void **state)
{
    check_deauthorization(*state, "/deauth401", 401);
}

static void test_deauthorized_by_403(void **state)
{
    check_deauthorization(*state, "/deauth403", 403);
}

static void test_deauthorized_by_407(void **state)
{
    check_deauthorization(*state, "/deauth407", 407);
}

static void test_redirect_not_followed(void **state)
{
    fixture_t *f = *state;
    char location[128];
    snprintf(location, sizeof location,
             "[{\"status\":302,\"headers\":{\"Location\":\"https://127.0.0.1:%d/elsewhere\"}}]",
             f->rcv->https_port);
    script(f, "/redirect", location, NULL);
    subscribe(f, &(sub_opts_t){.path = "/redirect", .retries = 1, .window_s = 2});
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "a");
    store_delivery_t d = drive_to_state(f, event_id, "delivered");
    assert_int_equal(d.attempts, 2); /* the 302 was a failed attempt */
    json_t *other = requests(f, "/elsewhere");
    assert_int_equal(json_array_size(other), 0);
    json_decref(other);
}

static void test_timeout_counts_as_failure(void **state)
{
    fixture_t *f = *state;
    script(f, "/slow", "[{\"status\":200,\"delay\":2.5}]", NULL);
    subscribe(f, &(sub_opts_t){.path = "/slow", .retries = 1, .window_s = 4, .timeout_s = 1});
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "a");
    store_delivery_t d = drive_to_state(f, event_id, "delivered");
    assert_int_equal(d.attempts, 2);
    json_t *got = requests(f, "/slow");
    assert_int_equal(json_array_size(got), 2);
    json_decref(got);
}

static void test_no_attempt_after_a_short_window(void **state)
{
    fixture_t *f = *state;
    /* Every attempt times out after 1 s; 10 retries cannot fit in 2 s. */
    script(f, "/window", "[]", "{\"status\":200,\"delay\":1.5}");
    subscribe(f, &(sub_opts_t){.path = "/window", .retries = 10, .window_s = 2, .timeout_s = 1});
    char event_id[STORE_UUID_LEN];
    raise_event(f, event_id, sizeof event_id, "a");
    store_delivery_t d = drive_to_state(f, event_id, "failed");
    assert_true(d.attempts >= 1 && d.attempts < 11);
    assert_true(d.last_attempt_at < d.window_ends_at);
    json_t *got = requests(f, "/window");
    double first = json_real_value(json_object_get(json_array_get(got, 0), "t"));
    size_t i;
    json_t *r;
    json_array_foreach(got, i, r) {
        assert_true(json_real_value(json_object_get(r, "t")) - first < 2.0);
    }
    assert_int_equal((int64_t)json_array_size(got), d.attempts);
    json_decref(got);
}

static void test_rate_bound_as_the_receiver_sees_it(void **state)
{
    fixture_t *f = *state;
    const uint32_t rate = 20;
    const int total = 45;
    subscribe(f, &(sub_opts_t){.path = "/rate", .rate = rate});
    raise_events(f, total);
    json_t *got = drive_to_requests(f, "/rate", (size_t)total);
    size_t n = json_array_size(got);
    double burst = webhook_burst_of(rate);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            double t = json_real_value(json_object_get(json_array_get(got, j), "t")) -
                       json_real_value(json_object_get(json_array_get(got, i), "t"));
            assert_true((double)(j - i + 1) <= burst + rate * t + 1);
        }
    /* And the rate is used: the backlog took about total / rate seconds. */
    double span = json_real_value(json_object_get(json_array_get(got, n - 1), "t")) -
                  json_real_value(json_object_get(json_array_get(got, 0), "t"));
    assert_true(span >= (total - burst - 1) / (double)rate);
    json_decref(got);
}

static void test_connections_are_reused(void **state)
{
    fixture_t *f = *state;
    subscribe(f, &(sub_opts_t){.path = "/reuse", .rate = 5});
    raise_events(f, 6);
    json_t *got = drive_to_requests(f, "/reuse", 6);
    /* Paced one by one (burst 1): every request after the first reuses it. */
    const char *conn = json_string_value(json_object_get(json_array_get(got, 0), "conn"));
    size_t i;
    json_t *r;
    json_array_foreach(got, i, r) {
        assert_string_equal(json_string_value(json_object_get(r, "conn")), conn);
    }
    json_decref(got);
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_headers_signature_and_envelope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_basic_mode_and_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exactly_one_plus_n_attempts_then_replay, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_deauthorized_by_401, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deauthorized_by_403, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deauthorized_by_407, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_counts_as_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_attempt_after_a_short_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_bound_as_the_receiver_sees_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connections_are_reused, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, receiver_start, receiver_stop);
    curl_global_cleanup();
    return failed;
}
