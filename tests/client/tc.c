/* tc: a test driver of libtaxdclient's core (taxd_send, taxd_get, taxd_list,
 * taxd_client_token) for black-box tests (tests/api/test_client_*.py).
 *
 * usage: tc [OPTIONS] COMMAND ARGS...
 *
 * The client:
 *   --base URL              the service (default: env TAXD_URL)
 *   credentials             env TAXD_CLIENT_ID, TAXD_CLIENT_SECRET, TAXD_TENANT_ID (optional);
 *                           with neither id nor secret the client has none
 *   --max-attempts N        taxd_client_options.max_attempts   (0: the library's default)
 *   --timeout-ms N          .request_timeout_ms (one attempt)
 *   --connect-timeout-ms N  .connect_timeout_ms
 *   --backoff-base-ms N     .backoff_base_ms
 *   --backoff-max-ms N      .backoff_max_ms
 *   --max-retry-ms N        .max_retry_ms
 *   --refresh-margin-s N    .token_refresh_margin_s
 *   --log                   every log line on stderr as "<direction> <line>"
 *                           ('>' request, '<' answer, '*' decision)
 *   --repeat N              run the command N times on one client (default 1)
 *   --threads N             run it on N threads at once, sharing one client (default 1)
 *   --pause-ms N            sleep N ms between repeats (token expiry tests)
 *
 * Commands:
 *   send METHOD PATH [BODY] [--safe] [--create] [--readback PATH]
 *                           taxd_send; BODY is JSON text, or @FILE to read it from a file
 *   get PATH                taxd_get
 *   list PATH               taxd_list; "body" is every page's items in one array,
 *                           "pages" the number of pages
 *   token                   taxd_client_token; "body" is the token
 *
 * Output: ONE JSON line on stdout per run of the command (repeats and threads
 * give one line each, in completion order):
 *   {"code": "<taxd_code_name>", "status": N, "attempts": N, "body": ...,
 *    "error": ..., "message": ..., "details": ..., "request_id": ...,
 *    "retry_after_ms": N, "elapsed_ms": N}
 * "attempts" is null for a get, list or token that succeeded (those calls
 * do not tell it; use send GET to count).
 * "body" is the answer's body parsed as JSON (a string when it is not JSON,
 * null when there is none); on a failure "status"/"body" are the final
 * answer's (0/null when none came) and error/message/details/request_id come
 * from the taxd_error ("details" parsed JSON). Absent values are null.
 * Exit status: 0 when every run was TAXD_OK, 1 otherwise, 2 for usage. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <taxd/client.h>

typedef struct {
    const char *command;
    const char *method, *path, *body, *readback;
    unsigned flags;
    int repeat;
    long pause_ms;
    taxd_client *client;
} job;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_line(void *userdata, char direction, const char *line)
{
    (void)userdata;
    pthread_mutex_lock(&out_lock);
    fprintf(stderr, "%c %s\n", direction, line);
    pthread_mutex_unlock(&out_lock);
}

/* JSON text as a value; a string when it is not JSON; null for NULL. */
static json_t *as_json(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(text);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static bool collect_page(void *userdata, const char *data_json)
{
    json_t *all = json_object_get(userdata, "items");
    json_t *page = json_loads(data_json, 0, NULL);
    json_array_extend(all, page);
    json_decref(page);
    json_object_set_new(userdata, "pages",
                        json_integer(json_integer_value(json_object_get(userdata, "pages")) + 1));
    return true;
}

/* One run of the command: fills line with the output fields. */
static taxd_code run_once(const job *j, json_t *line)
{
    taxd_error err = {0};
    err.retry_after_ms = -1;
    taxd_response resp = {0};
    taxd_code rc;
    json_t *body = json_null();
    if (strcmp(j->command, "send") == 0) {
        taxd_request r = {.method = j->method, .path = j->path, .body = j->body,
                          .flags = j->flags, .readback_path = j->readback};
        rc = taxd_send(j->client, &r, &resp, &err);
        json_decref(body);
        body = resp.status ? as_json(resp.body) : json_null();
    } else if (strcmp(j->command, "get") == 0) {
        char *text = NULL;
        rc = taxd_get(j->client, j->path, &text, &err);
        if (rc == TAXD_OK) {
            resp.status = 200; /* taxd_get hands back the body only */
            json_decref(body);
            body = as_json(text);
        }
        free(text);
    } else if (strcmp(j->command, "list") == 0) {
        json_t *acc = json_pack("{s:[], s:i}", "items", "pages", 0);
        rc = taxd_list(j->client, j->path, collect_page, acc, &err);
        json_decref(body);
        body = json_incref(json_object_get(acc, "items"));
        json_object_set(line, "pages", json_object_get(acc, "pages"));
        json_decref(acc);
    } else {
        char *token = NULL;
        rc = taxd_client_token(j->client, &token, &err);
        json_decref(body);
        body = str_or_null(token);
        free(token);
    }
    json_object_set_new(line, "code", json_string(taxd_code_name(rc)));
    json_object_set_new(line, "status", json_integer(rc == TAXD_OK ? resp.status : err.status));
    /* taxd_get / taxd_list / taxd_client_token tell attempts only on failure */
    bool counted = rc != TAXD_OK || strcmp(j->command, "send") == 0;
    json_object_set_new(line, "attempts",
                        counted ? json_integer(rc == TAXD_OK ? resp.attempts : err.attempts) : json_null());
    if (rc != TAXD_OK && json_is_null(body) && err.body) {
        json_decref(body);
        body = as_json(err.body);
    }
    json_object_set_new(line, "body", body);
    json_object_set_new(line, "error", str_or_null(err.error));
    json_object_set_new(line, "message", str_or_null(err.message));
    json_object_set_new(line, "details", err.details ? as_json(err.details) : json_null());
    json_object_set_new(line, "request_id",
                        str_or_null(rc == TAXD_OK ? resp.request_id : err.request_id));
    json_object_set_new(line, "retry_after_ms", json_integer(rc == TAXD_OK ? -1 : err.retry_after_ms));
    taxd_response_clear(&resp);
    taxd_error_clear(&err);
    return rc;
}

static void *run_job(void *arg)
{
    const job *j = arg;
    bool all_ok = true;
    for (int i = 0; i < j->repeat; i++) {
        if (i > 0 && j->pause_ms > 0) {
            struct timespec ts = {j->pause_ms / 1000, (j->pause_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        json_t *line = json_object();
        int64_t t0 = now_ms();
        if (run_once(j, line) != TAXD_OK)
            all_ok = false;
        json_object_set_new(line, "elapsed_ms", json_integer(now_ms() - t0));
        char *text = json_dumps(line, JSON_COMPACT);
        pthread_mutex_lock(&out_lock);
        printf("%s\n", text);
        fflush(stdout);
        pthread_mutex_unlock(&out_lock);
        free(text);
        json_decref(line);
    }
    return all_ok ? (void *)1 : NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: tc [--base URL] [--max-attempts N] [--timeout-ms N] [--connect-timeout-ms N]\n"
                    "          [--backoff-base-ms N] [--backoff-max-ms N] [--max-retry-ms N]\n"
                    "          [--refresh-margin-s N] [--log] [--repeat N] [--threads N] [--pause-ms N]\n"
                    "          send METHOD PATH [BODY|@FILE] [--safe] [--create] [--readback PATH]\n"
                    "        | get PATH | list PATH | token\n");
    exit(2);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

static long number(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        usage();
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end != '\0')
        usage();
    return v;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The command's own arguments from argv[i]; false on a usage error. */
static bool parse_command(int argc, char **argv, int i, job *j, char **owned_body)
{
    j->command = argv[i++];
    if (strcmp(j->command, "token") == 0)
        return i == argc;
    if (strcmp(j->command, "get") == 0 || strcmp(j->command, "list") == 0) {
        j->method = "GET";
        if (i + 1 != argc)
            return false;
        j->path = argv[i];
        return true;
    }
    if (strcmp(j->command, "send") != 0 || i + 2 > argc)
        return false;
    j->method = argv[i++];
    j->path = argv[i++];
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--safe") == 0)
            j->flags |= TAXD_SAFE;
        else if (strcmp(argv[i], "--create") == 0)
            j->flags |= TAXD_CREATE;
        else if (strcmp(argv[i], "--readback") == 0 && i + 1 < argc)
            j->readback = argv[++i];
        else if (j->body == NULL && argv[i][0] == '@') {
            if ((*owned_body = read_file(argv[i] + 1)) == NULL) {
                fprintf(stderr, "tc: cannot read %s\n", argv[i] + 1);
                exit(2);
            }
            j->body = *owned_body;
        } else if (j->body == NULL && strncmp(argv[i], "--", 2) != 0)
            j->body = argv[i];
        else
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    taxd_client_options o = {.base_url = env("TAXD_URL"), .client_id = env("TAXD_CLIENT_ID"),
                             .client_secret = env("TAXD_CLIENT_SECRET"),
                             .tenant_id = env("TAXD_TENANT_ID"), .user_agent = "tc"};
    job j = {.repeat = 1};
    int threads = 1, i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--base") == 0 && i + 1 < argc)
            o.base_url = argv[++i];
        else if (strcmp(a, "--max-attempts") == 0)
            o.max_attempts = (int)number(argc, argv, &i);
        else if (strcmp(a, "--timeout-ms") == 0)
            o.request_timeout_ms = number(argc, argv, &i);
        else if (strcmp(a, "--connect-timeout-ms") == 0)
            o.connect_timeout_ms = number(argc, argv, &i);
        else if (strcmp(a, "--backoff-base-ms") == 0)
            o.backoff_base_ms = number(argc, argv, &i);
        else if (strcmp(a, "--backoff-max-ms") == 0)
            o.backoff_max_ms = number(argc, argv, &i);
        else if (strcmp(a, "--max-retry-ms") == 0)
            o.max_retry_ms = number(argc, argv, &i);
        else if (strcmp(a, "--refresh-margin-s") == 0)
            o.token_refresh_margin_s = number(argc, argv, &i);
        else if (strcmp(a, "--log") == 0)
            o.log = log_line;
        else if (strcmp(a, "--repeat") == 0)
            j.repeat = (int)number(argc, argv, &i);
        else if (strcmp(a, "--threads") == 0)
            threads = (int)number(argc, argv, &i);
        else if (strcmp(a, "--pause-ms") == 0)
            j.pause_ms = number(argc, argv, &i);
        else
            usage();
    }
    char *owned_body = NULL;
    if (i >= argc || !parse_command(argc, argv, i, &j, &owned_body) || threads < 1 ||
        threads > 256 || j.repeat < 1)
        usage();
    taxd_global_init();
    taxd_error err = {0};
    j.client = taxd_client_new(&o, &err);
    if (j.client == NULL) {
        json_t *line = json_pack("{s:s, s:i, s:i, s:n, s:n, s:s?, s:n, s:n, s:i, s:i}", "code",
                                 taxd_code_name(err.code), "status", 0, "attempts", 0, "body",
                                 "error", "message", err.message, "details", "request_id",
                                 "retry_after_ms", -1, "elapsed_ms", 0);
        char *text = json_dumps(line, JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        json_decref(line);
        taxd_error_clear(&err);
        free(owned_body);
        return 1;
    }
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    bool all_ok = true;
    for (int t = 0; t < threads; t++)
        pthread_create(&ids[t], NULL, run_job, &j);
    for (int t = 0; t < threads; t++) {
        void *ok;
        pthread_join(ids[t], &ok);
        all_ok = all_ok && ok != NULL;
    }
    free(ids);
    taxd_client_free(j.client);
    free(owned_body);
    return all_ok ? 0 : 1;
}
