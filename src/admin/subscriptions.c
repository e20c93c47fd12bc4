/* admin/subscriptions: see subscriptions.h.
 *
 * Design. Each command validates its flags completely before it touches the
 * database, so a refused command changes nothing. Secrets are 32 random
 * bytes in standard base64 (the HMAC key is that string's bytes, exactly as
 * handed to the customer); they and basic passwords are sealed with the
 * webhook key (webhooks/vault.h) before they reach the store, and the clear
 * copies are wiped after use. Every change bumps the subscription's
 * updated_at, which is how running dispatchers notice it (within a step).
 *
 * Output: create and rotate-secret print the new secret once; every other
 * change prints the subscription as `show` does (state included, secrets and
 * password never). Times are RFC 3339 UTC with milliseconds. */
#include "admin/subscriptions.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/jsonval.h"
#include "store/webhooks.h"
#include "webhooks/backoff.h"
#include "webhooks/event.h"
#include "webhooks/vault.h"

#define SECRET_BYTES 32
#define SECRET_TEXT_MAX CRYPTO_BASE64_LEN(SECRET_BYTES)
#define DEFAULT_RATE 300
#define DEFAULT_RETRIES 2
#define DEFAULT_WINDOW_S 3600
#define DEFAULT_TIMEOUT_S 10
#define RATE_MAX 1000000
#define WINDOW_MAX_S (30 * 86400)
#define TIMEOUT_MAX_S 300
#define PASSWORD_MAX 256

static const char *const STATES[] = {"pending", "held", "delivered", "failed", NULL};

/* ---- validation */

static int parse_uint(const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static bool has_control(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* An absolute https:// URL with a host. */
static int check_url(const char *url)
{
    if (strlen(url) >= STORE_WH_URL_MAX || has_control(url) || strchr(url, ' ') != NULL)
        return admin_fail(EXIT_REFUSED, "the URL must be an https:// URL of at most %d bytes",
                          STORE_WH_URL_MAX - 1);
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    bool ok = u != NULL && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) ==
                               CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK;
    bool https = ok && strcmp(scheme, "https") == 0 && host[0] != '\0';
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    if (!https)
        return admin_fail(EXIT_REFUSED,
                          "the endpoint URL must be HTTPS (https://host/path): '%s' is not", url);
    return 0;
}

/* Parses "TYPE,TYPE" into the normalized list (no duplicates). */
static int check_events(const char *text, char *out, size_t cap)
{
    out[0] = '\0';
    size_t used = 0;
    for (const char *p = text; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!webhook_event_type_known(p, n))
            return admin_fail(EXIT_REFUSED,
                              "unknown event type '%.*s' (known: RTTM_TIN_VALIDATION, "
                              "ACCOUNT_OWNER_TIN_VALIDATION, TAX_DOCUMENTATION_TIN_VALIDATION, "
                              "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS, FORM_STATUS_UPDATE, "
                              "INVENTORY_UPDATE)",
                              (int)n, p);
        char item[64];
        snprintf(item, sizeof item, ",%.*s,", (int)n, p);
        char padded[STORE_WH_EVENTS_MAX + 2];
        snprintf(padded, sizeof padded, ",%s,", out);
        if (strstr(padded, item) == NULL && used + n + 2 < cap)
            used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? "," : "", (int)n, p);
        p += n + (end != NULL);
    }
    if (used == 0)
        return admin_fail(EXIT_REFUSED, "--events needs at least one event type");
    return 0;
}

static int check_address(const char *text)
{
    unsigned char buf[sizeof(struct in6_addr)];
    if (text[0] == '\0' || inet_pton(AF_INET, text, buf) == 1 ||
        inet_pton(AF_INET6, text, buf) == 1)
        return 0;
    return admin_fail(EXIT_REFUSED, "--egress-address must be an IPv4 or IPv6 address");
}

/* The password: the file's content without one trailing newline. */
static int read_password(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return admin_fail(EXIT_REFUSED, "cannot read the password file '%s'", path);
    size_t n = fread(out, 1, cap - 1, f);
    bool longer = fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    if (n > 0 && out[n - 1] == '\n')
        out[--n] = '\0';
    if (n > 0 && out[n - 1] == '\r')
        out[--n] = '\0';
    if (longer || n == 0 || n > PASSWORD_MAX || strlen(out) != n || has_control(out)) {
        explicit_bzero(out, cap);
        return admin_fail(EXIT_REFUSED, "the password file must hold 1 to %d bytes without "
                                        "control characters (one trailing newline allowed)",
                          PASSWORD_MAX);
    }
    return 0;
}

static int check_user(const char *user)
{
    if (user[0] == '\0' || strlen(user) >= STORE_WH_USER_MAX || strchr(user, ':') != NULL ||
        has_control(user))
        return admin_fail(EXIT_REFUSED, "--user must be 1 to %d bytes without ':' or control "
                                        "characters",
                          STORE_WH_USER_MAX - 1);
    return 0;
}

/* ---- sealing */

static int load_key(const admin_context_t *ctx, uint8_t key[CRYPTO_AEAD_KEY_LEN])
{
    char *err = NULL;
    if (webhook_vault_key_load(ctx->key_base, key, &err) == 0)
        return 0;
    int code = admin_fail(EXIT_REFUSED, "%s", err ? err : "cannot load the webhook key");
    free(err);
    return code;
}

/* A new secret (text, shown once) sealed for subscription id. */
static int new_secret(const admin_context_t *ctx, const char *id, char text[SECRET_TEXT_MAX],
                      store_wh_secret_t *sealed, int64_t now)
{
    uint8_t key[CRYPTO_AEAD_KEY_LEN], raw[SECRET_BYTES];
    int code = load_key(ctx, key);
    if (code != 0)
        return code;
    memset(sealed, 0, sizeof *sealed);
    sealed->created_at = now;
    bool ok = crypto_random_bytes(raw, sizeof raw) == 0 &&
              crypto_base64_encode(raw, sizeof raw, text, SECRET_TEXT_MAX) > 0 &&
              webhook_vault_seal(key, id, WEBHOOK_VAULT_SECRET, text, sealed->sealed,
                                 sizeof sealed->sealed, &sealed->sealed_len) == 0;
    explicit_bzero(key, sizeof key);
    explicit_bzero(raw, sizeof raw);
    return ok ? 0 : admin_fail(EXIT_REFUSED, "cannot generate a secret");
}

static int seal_password(const admin_context_t *ctx, const char *id, const char *password,
                         uint8_t *out, size_t cap, size_t *len)
{
    uint8_t key[CRYPTO_AEAD_KEY_LEN];
    int code = load_key(ctx, key);
    if (code != 0)
        return code;
    int rc = webhook_vault_seal(key, id, WEBHOOK_VAULT_BASIC_PASSWORD, password, out, cap, len);
    explicit_bzero(key, sizeof key);
    return rc == 0 ? 0 : admin_fail(EXIT_REFUSED, "cannot seal the password");
}

/* ---- output */

static json_t *events_array(const char *events)
{
    json_t *list = json_array();
    for (const char *p = events; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        json_array_append_new(list, json_stringn(p, n));
        p += n + (end != NULL);
    }
    return list;
}

static json_t *subscription_json(const store_subscription_t *s, size_t secret_count,
                                 const store_wh_backlog_t *b)
{
    return json_pack(
        "{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:s?, s:s, s:s?, s:s, s:o, s:I, s:o, s:o,"
        " s:{s:I, s:I, s:I, s:I}}",
        "subscription_id", s->id, "tenant_id", s->tenant_id, "url", s->url, "events",
        events_array(s->events), "rate_limit", (json_int_t)s->rate_limit, "retry_attempts",
        (json_int_t)s->retry_attempts, "retry_window_seconds", (json_int_t)s->retry_window_s,
        "timeout_seconds", (json_int_t)s->timeout_s, "egress_address",
        s->egress_address[0] ? s->egress_address : NULL, "auth_mode",
        s->basic ? "basic" : "source_marker", "basic_user", s->basic ? s->basic_user : NULL,
        "state", s->deauthorized ? "deauthorized" : "active", "deauthorized_at",
        jsonval_time_or_null(s->deauthorized_at), "secret_count", (json_int_t)secret_count,
        "created_at", jsonval_time_or_null(s->created_at), "updated_at",
        jsonval_time_or_null(s->updated_at),
        "deliveries", "pending", (json_int_t)b->pending, "held", (json_int_t)b->held,
        "delivered", (json_int_t)b->delivered, "failed", (json_int_t)b->failed);
}

/* The subscription as `show` prints it, or NULL after reporting why not. */
static json_t *load_json(store_conn_t *db, const char *id, int *code)
{
    store_subscription_t sub;
    store_wh_secret_t secrets[STORE_WH_SECRETS_MAX];
    size_t count = 0;
    store_wh_backlog_t backlog;
    store_status_t rc = store_subscription_get(db, id, &sub);
    if (rc == STORE_OK)
        rc = store_subscription_secrets(db, id, secrets, &count);
    if (rc == STORE_OK)
        rc = store_subscription_backlog(db, id, &backlog);
    *code = 0;
    if (rc == STORE_NOT_FOUND)
        *code = admin_fail(EXIT_REFUSED, "no subscription with id '%s'", id);
    else if (rc != STORE_OK)
        *code = admin_store_failed(rc, "reading the subscription");
    if (rc != STORE_OK)
        return NULL;
    json_t *doc = subscription_json(&sub, count, &backlog);
    if (doc == NULL)
        *code = admin_fail(EXIT_REFUSED, "out of memory");
    return doc;
}

static int print_subscription(store_conn_t *db, const char *id)
{
    int code;
    json_t *doc = load_json(db, id, &code);
    return doc != NULL ? admin_print_json(doc) : code;
}

/* Reports a failed change of one subscription. */
static int change_failed(store_status_t rc, const char *id, const char *what)
{
    if (rc == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no subscription with id '%s'", id);
    return admin_store_failed(rc, what);
}

/* --subscription ID, required by every command about one subscription. */
static const char *subscription_flag(const args_t *a, const char *command,
                                     const char *const *switches)
{
    const char *id = admin_flag_in(a, "--subscription", switches);
    if (id == NULL || id[0] == '\0' || strlen(id) >= STORE_WH_ID_MAX)
        admin_fail(EXIT_USAGE, "subscription %s needs --subscription ID", command);
    return id != NULL && id[0] != '\0' && strlen(id) < STORE_WH_ID_MAX ? id : NULL;
}

/* ---- create */

/* The settings flags shared by create and update, applied over *s. */
static int apply_settings(const args_t *a, store_subscription_t *s)
{
    const char *url = admin_flag(a, "--url"), *events = admin_flag(a, "--events");
    const char *rate = admin_flag(a, "--rate-limit"), *retries = admin_flag(a, "--retry-attempts");
    const char *window = admin_flag(a, "--retry-window"), *timeout = admin_flag(a, "--timeout");
    const char *egress = admin_flag(a, "--egress-address");
    int code;
    if (url != NULL && (code = check_url(url)) != 0)
        return code;
    if (events != NULL && (code = check_events(events, s->events, sizeof s->events)) != 0)
        return code;
    if (rate != NULL && parse_uint(rate, 1, RATE_MAX, &s->rate_limit) != 0)
        return admin_fail(EXIT_USAGE, "--rate-limit must be 1 to %d requests per second",
                          RATE_MAX);
    if (retries != NULL && parse_uint(retries, 0, WEBHOOK_RETRIES_MAX, &s->retry_attempts) != 0)
        return admin_fail(EXIT_USAGE, "--retry-attempts must be 0 to %d", WEBHOOK_RETRIES_MAX);
    if (window != NULL && parse_uint(window, 1, WINDOW_MAX_S, &s->retry_window_s) != 0)
        return admin_fail(EXIT_USAGE, "--retry-window must be 1 to %d seconds", WINDOW_MAX_S);
    if (timeout != NULL && parse_uint(timeout, 1, TIMEOUT_MAX_S, &s->timeout_s) != 0)
        return admin_fail(EXIT_USAGE, "--timeout must be 1 to %d seconds", TIMEOUT_MAX_S);
    if (egress != NULL && (code = check_address(egress)) != 0)
        return code;
    if (url != NULL)
        snprintf(s->url, sizeof s->url, "%s", url);
    if (egress != NULL)
        snprintf(s->egress_address, sizeof s->egress_address, "%s", egress);
    return 0;
}

/* Basic credentials given at creation (both flags or neither). */
static int create_basic(const admin_context_t *ctx, const args_t *a, store_subscription_t *s)
{
    const char *user = admin_flag(a, "--basic-user");
    const char *file = admin_flag(a, "--basic-password-file");
    if (user == NULL && file == NULL)
        return 0;
    if (user == NULL || file == NULL)
        return admin_fail(EXIT_USAGE, "--basic-user and --basic-password-file go together");
    char password[PASSWORD_MAX + 2];
    int code = check_user(user);
    if (code == 0)
        code = read_password(file, password, sizeof password);
    if (code != 0)
        return code;
    code = seal_password(ctx, s->id, password, s->basic_password_sealed,
                         sizeof s->basic_password_sealed, &s->basic_password_sealed_len);
    explicit_bzero(password, sizeof password);
    s->basic = code == 0;
    snprintf(s->basic_user, sizeof s->basic_user, "%s", user);
    return code;
}

int admin_subscription_create(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {
        "--tenant", "--url", "--events", "--rate-limit", "--retry-attempts", "--retry-window",
        "--timeout", "--egress-address", "--basic-user", "--basic-password-file", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *tenant = admin_flag(a, "--tenant");
    if (tenant == NULL || admin_flag(a, "--url") == NULL || admin_flag(a, "--events") == NULL)
        return admin_fail(EXIT_USAGE,
                          "subscription create needs --tenant ID --url URL --events TYPE[,TYPE]");
    if (strlen(tenant) >= STORE_UUID_LEN)
        return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
    store_subscription_t s = {.rate_limit = DEFAULT_RATE, .retry_attempts = DEFAULT_RETRIES,
                              .retry_window_s = DEFAULT_WINDOW_S, .timeout_s = DEFAULT_TIMEOUT_S};
    int64_t now = clock_now_ms(ctx->clock);
    s.created_at = s.updated_at = now;
    snprintf(s.tenant_id, sizeof s.tenant_id, "%s", tenant);
    int code = apply_settings(a, &s);
    if (code != 0)
        return code;
    if (ids_random_token("sub_", 16, s.id, sizeof s.id) != 0)
        return admin_fail(EXIT_REFUSED, "cannot generate an id");
    if ((code = create_basic(ctx, a, &s)) != 0)
        return code;
    char secret[SECRET_TEXT_MAX];
    store_wh_secret_t sealed;
    if ((code = new_secret(ctx, s.id, secret, &sealed, now)) != 0)
        return code;
    store_status_t rc = store_subscription_create(db, &s, &sealed);
    if (rc == STORE_NOT_FOUND)
        code = admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
    else if (rc != STORE_OK)
        code = admin_store_failed(rc, "subscription creation");
    else
        code = admin_print_json(
            json_pack("{s:s, s:s}", "subscription_id", s.id, "secret", secret));
    explicit_bzero(secret, sizeof secret);
    return code;
}

/* ---- show, list, update, delete */

int admin_subscription_show(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "show", NULL);
    return id != NULL ? print_subscription(db, id) : EXIT_USAGE;
}

static int collect_id(const store_subscription_t *sub, void *ctx)
{
    return json_array_append_new(ctx, json_string(sub->id));
}

int admin_subscription_list(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    static const char *const allowed[] = {"--tenant", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    json_t *ids = json_array();
    store_status_t rc = store_subscription_each(db, admin_flag(a, "--tenant"), collect_id, ids);
    if (rc != STORE_OK) {
        json_decref(ids);
        return admin_store_failed(rc, "subscription list");
    }
    json_t *list = json_array();
    size_t i;
    json_t *id;
    int code = 0;
    json_array_foreach(ids, i, id) {
        json_t *doc = load_json(db, json_string_value(id), &code);
        if (doc == NULL)
            break;
        json_array_append_new(list, doc);
    }
    json_decref(ids);
    if (code != 0) {
        json_decref(list);
        return code;
    }
    return admin_print_json(json_pack("{s:o}", "subscriptions", list));
}

int admin_subscription_update(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", "--url", "--events", "--rate-limit",
                                          "--retry-attempts", "--retry-window", "--timeout",
                                          "--egress-address", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "update", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    if (a->argc <= 2)
        return admin_fail(EXIT_USAGE, "subscription update needs at least one of --url, "
                                      "--events, --rate-limit, --retry-attempts, "
                                      "--retry-window, --timeout, --egress-address");
    store_subscription_t s;
    store_status_t rc = store_subscription_get(db, id, &s);
    if (rc != STORE_OK)
        return change_failed(rc, id, "reading the subscription");
    int code = apply_settings(a, &s);
    if (code != 0)
        return code;
    s.updated_at = clock_now_ms(ctx->clock);
    if ((rc = store_subscription_update(db, &s)) != STORE_OK)
        return change_failed(rc, id, "subscription update");
    return print_subscription(db, id);
}

int admin_subscription_delete(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "delete", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    store_status_t rc = store_subscription_delete(db, id);
    if (rc != STORE_OK)
        return change_failed(rc, id, "subscription deletion");
    return admin_print_json(json_pack("{s:s, s:b}", "subscription_id", id, "deleted", 1));
}

/* ---- secrets and credentials */

int admin_subscription_rotate_secret(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "rotate-secret", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    int64_t now = clock_now_ms(ctx->clock);
    char secret[SECRET_TEXT_MAX];
    store_wh_secret_t sealed;
    int code = new_secret(ctx, id, secret, &sealed, now);
    if (code != 0)
        return code;
    store_status_t rc = store_subscription_secret_add(db, id, &sealed, now);
    if (rc == STORE_CONFLICT)
        code = admin_fail(EXIT_REFUSED, "subscription '%s' already has two secrets: drop the "
                                        "older one (drop-secret) once the customer confirms "
                                        "the switch, then rotate again",
                          id);
    else if (rc != STORE_OK)
        code = change_failed(rc, id, "secret rotation");
    else
        code = admin_print_json(json_pack("{s:s, s:s, s:i}", "subscription_id", id, "secret",
                                          secret, "secret_count", 2));
    explicit_bzero(secret, sizeof secret);
    return code;
}

int admin_subscription_drop_secret(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "drop-secret", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    store_status_t rc = store_subscription_secret_drop(db, id, clock_now_ms(ctx->clock));
    if (rc == STORE_CONFLICT)
        return admin_fail(EXIT_REFUSED, "the last secret of subscription '%s' cannot be "
                                        "removed: signing cannot be disabled",
                          id);
    if (rc != STORE_OK)
        return change_failed(rc, id, "dropping the secret");
    return print_subscription(db, id);
}

int admin_subscription_set_basic(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", "--user", "--password-file", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "set-basic", NULL);
    const char *user = admin_flag(a, "--user"), *file = admin_flag(a, "--password-file");
    if (id == NULL)
        return EXIT_USAGE;
    if (user == NULL || file == NULL)
        return admin_fail(EXIT_USAGE, "subscription set-basic needs --user U --password-file "
                                      "PATH (passwords are never taken on the command line)");
    char password[PASSWORD_MAX + 2];
    uint8_t sealed[STORE_WH_SEALED_MAX];
    size_t sealed_len = 0;
    int code = check_user(user);
    if (code == 0)
        code = read_password(file, password, sizeof password);
    if (code != 0)
        return code;
    code = seal_password(ctx, id, password, sealed, sizeof sealed, &sealed_len);
    explicit_bzero(password, sizeof password);
    if (code != 0)
        return code;
    store_status_t rc = store_subscription_set_auth(db, id, true, user, sealed, sealed_len,
                                                    clock_now_ms(ctx->clock));
    if (rc != STORE_OK)
        return change_failed(rc, id, "setting basic credentials");
    return print_subscription(db, id);
}

int admin_subscription_set_source_marker(const admin_context_t *ctx, store_conn_t *db,
                                         const args_t *a)
{
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "set-source-marker", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    store_status_t rc =
        store_subscription_set_auth(db, id, false, NULL, NULL, 0, clock_now_ms(ctx->clock));
    if (rc != STORE_OK)
        return change_failed(rc, id, "setting the source marker");
    return print_subscription(db, id);
}

int admin_subscription_reactivate(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "reactivate", NULL);
    if (id == NULL)
        return EXIT_USAGE;
    int64_t requeued = 0;
    store_status_t rc =
        store_subscription_reactivate(db, id, clock_now_ms(ctx->clock), &requeued);
    if (rc != STORE_OK)
        return change_failed(rc, id, "reactivation");
    int code;
    json_t *doc = load_json(db, id, &code);
    if (doc == NULL)
        return code;
    json_object_set_new(doc, "requeued", json_integer(requeued));
    return admin_print_json(doc);
}

/* ---- deliveries and replay */

static int parse_since(const char *text, int64_t *since)
{
    *since = 0;
    if (text == NULL)
        return 0;
    if (clock_parse_rfc3339(text, since) == 0)
        return 0;
    return admin_fail(EXIT_USAGE, "--since must be an RFC 3339 datetime "
                                  "(2024-01-02T03:04:05Z)");
}

static int append_delivery(const store_delivery_t *d, void *ctx)
{
    json_t *row = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:s?, s:o, s:o, s:o, s:o, s:o, s:o}",
        "delivery_id", d->id, "event_id", d->event_id, "event_type", d->event_type, "state",
        d->state, "trace_id", d->trace_id, "attempts", (json_int_t)d->attempts, "last_status",
        d->last_status > 0 ? json_integer(d->last_status) : json_null(), "last_error",
        d->last_error[0] ? d->last_error : NULL, "created_at", jsonval_time_or_null(d->created_at),
        "first_attempt_at", jsonval_time_or_null(d->first_attempt_at), "last_attempt_at",
        jsonval_time_or_null(d->last_attempt_at), "window_ends_at",
        jsonval_time_or_null(d->window_ends_at),
        "next_attempt_at",
        strcmp(d->state, "pending") == 0 ? jsonval_time_or_null(d->next_attempt_at) : json_null(),
        "delivered_at", jsonval_time_or_null(d->delivered_at));
    if (row == NULL)
        return 1;
    return json_array_append_new(ctx, row) != 0;
}

static bool state_known(const char *state)
{
    for (const char *const *s = STATES; *s != NULL; s++)
        if (strcmp(*s, state) == 0)
            return true;
    return false;
}

int admin_subscription_deliveries(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    static const char *const allowed[] = {"--subscription", "--state", "--since", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "deliveries", NULL);
    const char *state = admin_flag(a, "--state");
    int64_t since;
    if (id == NULL || parse_since(admin_flag(a, "--since"), &since) != 0)
        return EXIT_USAGE;
    if (state != NULL && !state_known(state))
        return admin_fail(EXIT_USAGE, "--state must be pending, held, delivered or failed");
    json_t *list = json_array();
    store_status_t rc = store_delivery_each(db, id, state, since, append_delivery, list);
    if (rc != STORE_OK) {
        json_decref(list);
        return change_failed(rc, id, "listing deliveries");
    }
    return admin_print_json(json_pack("{s:s, s:o}", "subscription_id", id, "deliveries", list));
}

int admin_subscription_replay(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--subscription", "--event", "--since", NULL};
    static const char *const switches[] = {"--failed", NULL};
    if (admin_check_flags(a, allowed, switches) != 0)
        return EXIT_USAGE;
    const char *id = subscription_flag(a, "replay", switches);
    const char *event = admin_flag_in(a, "--event", switches);
    const char *since_text = admin_flag_in(a, "--since", switches);
    bool failed = admin_switch(a, "--failed", switches);
    int64_t since;
    if (id == NULL || parse_since(since_text, &since) != 0)
        return EXIT_USAGE;
    if ((event != NULL) == failed || (event != NULL && since_text != NULL))
        return admin_fail(EXIT_USAGE, "subscription replay needs --subscription ID and either "
                                      "--event EVENT_ID or --failed [--since T]");
    int64_t count = 0;
    store_status_t rc =
        store_delivery_replay(db, id, event, since, clock_now_ms(ctx->clock), &count);
    if (rc != STORE_OK)
        return change_failed(rc, id, "replay");
    if (event != NULL && count == 0)
        return admin_fail(EXIT_REFUSED, "subscription '%s' has no delivery of event '%s'", id,
                          event);
    return admin_print_json(
        json_pack("{s:s, s:I}", "subscription_id", id, "requeued", (json_int_t)count));
}
