/* admin: operator commands. Each command is a small function over the
 * admin context (admin/cli.h); flags are "--name value" pairs checked against the
 * command's list so that a typo is an error, never silently ignored.
 * Secrets are printed exactly once, here, and only their keyed hash is kept. */
#include "admin/admin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin/cli.h"
#include "admin/forms.h"
#include "admin/inventory.h"
#include "admin/migrate_db.h"
#include "admin/subscriptions.h"
#include "core/config.h"
#include "core/ids.h"
#include "core/keys.h"
#include "core/scopes.h"

#define SECRET_BYTES 32 /* 256 random bits */

static int parse_u32(const char *text, uint32_t *out)
{
    char *end;
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0' || v == 0 || v > 1000000000ULL)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* A new credential with its one-time secret (secret_cap >= 64 bytes). */
static int make_credential(const admin_context_t *ctx, const char *tenant_id, unsigned scopes,
                           store_credential_t *cred, char *secret, size_t secret_cap)
{
    memset(cred, 0, sizeof *cred);
    if (ids_random_token("cl_", 16, cred->client_id, sizeof cred->client_id) != 0 ||
        ids_random_token("", SECRET_BYTES, secret, secret_cap) != 0 ||
        crypto_hmac_key_sign(ctx->secret_hasher, secret, strlen(secret), cred->secret_hash) != 0)
        return -1;
    snprintf(cred->tenant_id, sizeof cred->tenant_id, "%s", tenant_id);
    cred->scopes = scopes;
    cred->created_at = clock_now_ms(ctx->clock);
    return 0;
}

static int print_credential(const store_credential_t *cred, char *secret)
{
    char names[128];
    scopes_format(cred->scopes, names, sizeof names);
    json_t *scope_list = json_array();
    for (char *save = NULL, *s = strtok_r(names, " ", &save); s; s = strtok_r(NULL, " ", &save))
        json_array_append_new(scope_list, json_string(s));
    int code = admin_print_json(json_pack("{s:s, s:s, s:s, s:o}", "tenant_id",
                                          cred->tenant_id, "client_id", cred->client_id,
                                          "client_secret", secret, "scopes", scope_list));
    memset(secret, 0, strlen(secret));
    return code;
}

static int tenant_create(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--name", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *name = admin_flag(a, "--name");
    if (name == NULL || name[0] == '\0' || strlen(name) >= STORE_NAME_MAX)
        return admin_fail(EXIT_USAGE, "tenant create needs --name NAME (1 to %d bytes)",
                          STORE_NAME_MAX - 1);
    store_tenant_t tenant = {0};
    store_tenant_seed_t seed;
    if (ids_uuid_v4(tenant.id) != 0 || ids_uuid_v4(seed.default_filer_uuid) != 0 ||
        ids_uuid_v4(seed.usd_asset_uuid) != 0)
        return admin_fail(EXIT_REFUSED, "cannot generate ids");
    snprintf(tenant.name, sizeof tenant.name, "%s", name);
    tenant.created_at = clock_now_ms(ctx->clock);
    store_credential_t cred;
    char secret[CRYPTO_BASE64_LEN(SECRET_BYTES) + 8];
    if (make_credential(ctx, tenant.id, 0, &cred, secret, sizeof secret) != 0)
        return admin_fail(EXIT_REFUSED, "cannot generate credentials");
    store_status_t rc = store_tenant_create(db, &tenant, &seed, &cred);
    if (rc != STORE_OK)
        return admin_store_failed(rc, "tenant creation");
    return print_credential(&cred, secret);
}

static int append_tenant(const store_tenant_t *t, void *ctx)
{
    char created[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(t->created_at, created);
    return json_array_append_new(ctx, json_pack("{s:s, s:s, s:s}", "tenant_id", t->id, "name",
                                                t->name, "created_at", created));
}

static int tenant_list(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)ctx;
    static const char *const allowed[] = {NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    json_t *list = json_array();
    store_status_t rc = store_tenant_each(db, append_tenant, list);
    if (rc != STORE_OK) {
        json_decref(list);
        return admin_store_failed(rc, "tenant list");
    }
    return admin_print_json(json_pack("{s:o}", "tenants", list));
}

/* The tenant's data as {"accounts": 2, ...}, the kinds it holds only. */
static json_t *tenant_data_json(const store_tenant_data_t *d)
{
    const struct {
        const char *name;
        int64_t n;
    } kinds[] = {{"account_owners", d->account_owners}, {"accounts", d->accounts},
                 {"transactions", d->transactions},     {"assets", d->assets},
                 {"filers", d->filers},                 {"reports", d->reports},
                 {"subscriptions", d->subscriptions},   {"events", d->events},
                 {"tin_checks", d->tin_checks},         {"tax_documents", d->tax_documents},
                 {"tax_forms", d->tax_forms},
                 {"tax_documentation_files", d->tax_documentation_files}};
    json_t *out = json_object();
    for (size_t i = 0; out != NULL && i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].n > 0)
            json_object_set_new(out, kinds[i].name, json_integer(kinds[i].n));
    return out;
}

/* tenant delete TENANT [--purge] (the tenant may also be given as --tenant
 * ID). Without --purge a tenant that holds data is refused, naming what it
 * holds; with it, every row goes in one transaction. Either way its
 * credentials stop minting at once and every running process refuses its
 * tokens at its next settings refresh (store_tenant_delete). */
static int tenant_delete(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--tenant", NULL};
    static const char *const switches[] = {"--purge", NULL};
    args_t rest = *a;
    const char *tenant = NULL;
    if (rest.argc > 0 && strncmp(rest.argv[0], "--", 2) != 0) {
        tenant = rest.argv[0];
        rest = (args_t){rest.argc - 1, rest.argv + 1};
    }
    if (admin_check_flags(&rest, allowed, switches) != 0)
        return EXIT_USAGE;
    const char *flag = admin_flag_in(&rest, "--tenant", switches);
    if ((tenant == NULL) == (flag == NULL))
        return admin_fail(EXIT_USAGE, "tenant delete needs the tenant id, once");
    tenant = tenant != NULL ? tenant : flag;
    bool purge = admin_switch(&rest, "--purge", switches);
    store_tenant_data_t data;
    store_status_t rc = store_tenant_delete(db, tenant, purge, clock_now_ms(ctx->clock), &data);
    if (rc == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
    if (rc == STORE_CONFLICT) {
        json_t *held = tenant_data_json(&data);
        char *text = held != NULL ? json_dumps(held, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        int code = admin_fail(EXIT_REFUSED,
                              "tenant '%s' still holds data %s; nothing was deleted (use --purge "
                              "to delete it with all its data)",
                              tenant, text != NULL ? text : "");
        free(text);
        json_decref(held);
        return code;
    }
    if (rc != STORE_OK)
        return admin_store_failed(rc, "tenant deletion");
    return admin_print_json(json_pack("{s:s, s:b, s:o}", "tenant_id", tenant, "purged", purge,
                                      "deleted", tenant_data_json(&data)));
}

static int credentials_create(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--tenant", "--scopes", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *tenant = admin_flag(a, "--tenant");
    if (tenant == NULL)
        return admin_fail(EXIT_USAGE, "credentials create needs --tenant ID");
    unsigned scopes = 0;
    const char *bad = NULL;
    size_t bad_len = 0;
    const char *text = admin_flag(a, "--scopes");
    if (text != NULL && scopes_parse(text, &scopes, &bad, &bad_len) != 0)
        return admin_fail(EXIT_USAGE,
                          "unknown scope '%.*s' (known: reports, accounts, assets, transactions, "
                          "inventory, tax-documents)",
                          (int)bad_len, bad);
    store_credential_t cred;
    char secret[CRYPTO_BASE64_LEN(SECRET_BYTES) + 8];
    if (make_credential(ctx, tenant, scopes, &cred, secret, sizeof secret) != 0)
        return admin_fail(EXIT_REFUSED, "cannot generate credentials");
    store_status_t rc = store_credential_create(db, &cred);
    if (rc == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
    if (rc != STORE_OK)
        return admin_store_failed(rc, "credential creation");
    return print_credential(&cred, secret);
}

static int credentials_revoke(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--client-id", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *client_id = admin_flag(a, "--client-id");
    if (client_id == NULL)
        return admin_fail(EXIT_USAGE, "credentials revoke needs --client-id ID");
    store_status_t rc = store_credential_revoke(db, client_id, clock_now_ms(ctx->clock));
    if (rc == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no credential with client id '%s'", client_id);
    if (rc != STORE_OK)
        return admin_store_failed(rc, "revocation");
    store_credential_t cred;
    rc = store_credential_get(db, client_id, &cred);
    if (rc != STORE_OK)
        return admin_store_failed(rc, "revocation");
    char revoked[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(cred.revoked_at, revoked);
    return admin_print_json(
        json_pack("{s:s, s:s}", "client_id", client_id, "revoked_at", revoked));
}

static bool route_known(const admin_context_t *ctx, const char *route)
{
    for (size_t i = 0; i < ctx->route_count; i++)
        if (strcmp(ctx->route_labels[i], route) == 0)
            return true;
    return false;
}

static int ratelimit_set(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {"--tenant", "--route", "--rate", "--burst", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *tenant = admin_flag(a, "--tenant");
    const char *route = admin_flag(a, "--route");
    store_rate_limit_t limit = {0};
    if (parse_u32(admin_flag(a, "--rate"), &limit.rate) != 0 ||
        parse_u32(admin_flag(a, "--burst"), &limit.burst) != 0)
        return admin_fail(EXIT_USAGE,
                          "ratelimit set needs --rate R --burst B (positive integers)");
    if (tenant == NULL && route == NULL)
        return admin_fail(EXIT_USAGE, "ratelimit set needs --tenant ID, --route "
                                      "\"METHOD /path\", or both");
    if (route != NULL && !route_known(ctx, route))
        return admin_fail(EXIT_REFUSED, "unknown route '%s' (use the template, e.g. "
                                        "\"GET /v1/filers/{filerId}\")", route);
    snprintf(limit.tenant_id, sizeof limit.tenant_id, "%s", tenant ? tenant : "");
    snprintf(limit.route, sizeof limit.route, "%s", route ? route : "");
    store_status_t rc = store_rate_limit_set(db, &limit);
    if (rc == STORE_NOT_FOUND)
        return admin_fail(EXIT_REFUSED, "no tenant with id '%s'", tenant);
    if (rc != STORE_OK)
        return admin_store_failed(rc, "rate limit");
    return admin_print_json(json_pack("{s:s?, s:s?, s:i, s:i}", "tenant_id", tenant, "route",
                                      route, "rate", (json_int_t)limit.rate, "burst",
                                      (json_int_t)limit.burst));
}

static int append_limit(const store_rate_limit_t *l, void *ctx)
{
    return json_array_append_new(
        ctx, json_pack("{s:s?, s:s?, s:i, s:i}", "tenant_id",
                       l->tenant_id[0] ? l->tenant_id : NULL, "route",
                       l->route[0] ? l->route : NULL, "rate", (json_int_t)l->rate, "burst",
                       (json_int_t)l->burst));
}

static int ratelimit_list(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    static const char *const allowed[] = {NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    json_t *list = json_array();
    store_status_t rc = store_rate_limit_each(db, append_limit, list);
    if (rc != STORE_OK) {
        json_decref(list);
        return admin_store_failed(rc, "rate limit list");
    }
    return admin_print_json(json_pack("{s:{s:i, s:i}, s:o}", "default", "rate",
                                      (json_int_t)ctx->default_rate, "burst",
                                      (json_int_t)ctx->default_burst, "rate_limits", list));
}

static int keys_rotate_token(const admin_context_t *ctx, store_conn_t *db, const args_t *a)
{
    (void)db;
    static const char *const allowed[] = {NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    char *path = keys_path(ctx->key_base, "token");
    char *err = NULL;
    keys_ring_t ring;
    int rc = path ? keys_ring_rotate(path, &ring, &err) : -1;
    free(path);
    if (rc != 0) {
        int code = admin_fail(EXIT_REFUSED, "%s", err ? err : "key rotation failed");
        free(err);
        return code;
    }
    json_t *out = json_pack("{s:s, s:s?}", "signing_kid", ring.kid[0], "previous_kid",
                            ring.count > 1 ? ring.kid[1] : NULL);
    memset(&ring, 0, sizeof ring);
    return admin_print_json(out);
}

struct admin_command {
    const char *group;
    const char *name;
    int (*run)(const admin_context_t *ctx, store_conn_t *db, const args_t *a);
    const char *usage;
};

static const admin_command_t COMMANDS[] = {
    {"tenant", "create", tenant_create, "tenant create --name NAME"},
    {"tenant", "list", tenant_list, "tenant list"},
    {"tenant", "delete", tenant_delete, "tenant delete TENANT_ID [--purge]"},
    {"credentials", "create", credentials_create,
     "credentials create --tenant ID [--scopes s1,s2]"},
    {"credentials", "revoke", credentials_revoke, "credentials revoke --client-id ID"},
    {"ratelimit", "set", ratelimit_set,
     "ratelimit set [--tenant ID] [--route \"METHOD /v1/path/{template}\"] --rate R --burst B"},
    {"ratelimit", "list", ratelimit_list, "ratelimit list"},
    {"keys", "rotate-token", keys_rotate_token, "keys rotate-token"},
    {"subscription", "create", admin_subscription_create,
     "subscription create --tenant ID --url URL --events TYPE[,TYPE...] [--rate-limit RPS]\n"
     "      [--retry-attempts N] [--retry-window SECONDS] [--timeout SECONDS]\n"
     "      [--egress-address IP] [--basic-user U --basic-password-file PATH]"},
    {"subscription", "show", admin_subscription_show, "subscription show --subscription ID"},
    {"subscription", "list", admin_subscription_list, "subscription list [--tenant ID]"},
    {"subscription", "update", admin_subscription_update,
     "subscription update --subscription ID [--url URL] [--events TYPE[,TYPE...]]\n"
     "      [--rate-limit RPS] [--retry-attempts N] [--retry-window SECONDS]\n"
     "      [--timeout SECONDS] [--egress-address IP|\"\"]"},
    {"subscription", "delete", admin_subscription_delete, "subscription delete --subscription ID"},
    {"subscription", "rotate-secret", admin_subscription_rotate_secret,
     "subscription rotate-secret --subscription ID"},
    {"subscription", "drop-secret", admin_subscription_drop_secret,
     "subscription drop-secret --subscription ID"},
    {"subscription", "set-basic", admin_subscription_set_basic,
     "subscription set-basic --subscription ID --user U --password-file PATH"},
    {"subscription", "set-source-marker", admin_subscription_set_source_marker,
     "subscription set-source-marker --subscription ID"},
    {"subscription", "reactivate", admin_subscription_reactivate,
     "subscription reactivate --subscription ID"},
    {"subscription", "deliveries", admin_subscription_deliveries,
     "subscription deliveries --subscription ID [--state pending|held|delivered|failed]"
     " [--since T]"},
    {"subscription", "replay", admin_subscription_replay,
     "subscription replay --subscription ID (--event EVENT_ID | --failed [--since T])"},
    {"forms", "generate", admin_forms_generate,
     "forms generate --tenant ID --tax-year YYYY --form-type TYPE [--account ID]"},
    {"forms", "file", admin_forms_file, "forms file --form ID"},
    {"forms", "delete", admin_forms_delete, "forms delete --form ID"},
    {"forms", "show", admin_forms_show, "forms show --form ID"},
    {"inventory", "recalc", admin_inventory_recalc,
     "inventory recalc (--all | --tenant ID [--account ID]) [--batch N]"},
};

/* The one command that opens no service (its flags name both databases):
 * one word, run by admin_run_alone. */
static const admin_command_t MIGRATE_DB = {
    "migrate-db", NULL, NULL,
    "migrate-db --from PATH --to postgres://... [--key-dir DIR]   (--db is not used)"};

static void print_usage(FILE *out)
{
    fprintf(out, "usage: taxd admin [--db PATH|URL] [--key-dir DIR] COMMAND\n\ncommands:\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(out, "  %s\n", COMMANDS[i].usage);
    fprintf(out, "  %s\n", MIGRATE_DB.usage);
    fprintf(out, "\n--db defaults to $TAXD_DB, then %s; --key-dir to $TAXD_KEY_DIR, then beside the\nSQLite file (required with a postgres:// URL)\n", CONFIG_DEFAULT_DB);
}

static const admin_command_t *find_command(const char *group, const char *name)
{
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(COMMANDS[i].group, group) == 0 && strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

bool admin_opens_service(const admin_invocation_t *inv)
{
    return inv->command != &MIGRATE_DB;
}

int admin_run_alone(const admin_invocation_t *inv)
{
    return admin_migrate_db(&inv->args);
}

int admin_run(const admin_context_t *ctx, const admin_invocation_t *inv)
{
    store_conn_t *db = store_acquire(ctx->store);
    if (db == NULL)
        return admin_fail(EXIT_REFUSED, "cannot open the database");
    int code = inv->command->run(ctx, db, &inv->args);
    store_release(ctx->store, db);
    return code;
}

int admin_parse(int argc, char **argv, admin_invocation_t *inv)
{
    taxd_config_t *cfg = &inv->cfg;
    char err[256];
    if (config_load_env(cfg, err, sizeof err) != 0)
        return admin_fail(EXIT_USAGE, "%s", err);
    int i = 0;
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        print_usage(stdout);
        return 0;
    }
    /* --db and --key-dir, in either order, before the command */
    for (;;) {
        if (argc - i >= 2 && strcmp(argv[i], "--db") == 0)
            snprintf(cfg->db_path, sizeof cfg->db_path, "%s", argv[i + 1]);
        else if (argc - i >= 2 && strcmp(argv[i], "--key-dir") == 0)
            snprintf(cfg->key_dir, sizeof cfg->key_dir, "%s", argv[i + 1]);
        else
            break;
        i += 2;
    }
    if (argc - i >= 1 && strcmp(argv[i], MIGRATE_DB.group) == 0) {
        inv->command = &MIGRATE_DB;
        inv->args = (args_t){argc - i - 1, argv + i + 1};
        return ADMIN_RUN;
    }
    if (argc - i < 2) {
        print_usage(stderr);
        return admin_fail(EXIT_USAGE, "missing command");
    }
    inv->command = find_command(argv[i], argv[i + 1]);
    if (inv->command == NULL)
        return admin_fail(EXIT_USAGE, "unknown command '%s %s' (see taxd admin --help)", argv[i],
                          argv[i + 1]);
    inv->args = (args_t){argc - i - 2, argv + i + 2};
    return ADMIN_RUN;
}
