/* taxctl/config: the configuration file, the environment over it, and the
 * client they make; the error printing every command shares. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *taxctl_config_path(const taxctl_globals *g)
{
    const char *explicit_path = g->config_path ? g->config_path : getenv("TAXCTL_CONFIG");
    if (explicit_path && *explicit_path)
        return strdup(explicit_path);
    char *path = NULL;
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n = -1;
    if (xdg && *xdg)
        n = asprintf(&path, "%s/taxctl/config", xdg);
    else if (home && *home)
        n = asprintf(&path, "%s/.config/taxctl/config", home);
    else
        n = asprintf(&path, "taxctl.config");
    return n < 0 ? NULL : path;
}

void taxctl_config_clear(taxctl_config *cfg)
{
    if (cfg->client_secret)
        explicit_bzero(cfg->client_secret, strlen(cfg->client_secret));
    free(cfg->url);
    free(cfg->client_id);
    free(cfg->client_secret);
    free(cfg->tenant_id);
    free(cfg->ca_file);
    memset(cfg, 0, sizeof *cfg);
}

static char **field_of(taxctl_config *cfg, const char *key)
{
    if (strcmp(key, "url") == 0)
        return &cfg->url;
    if (strcmp(key, "client_id") == 0)
        return &cfg->client_id;
    if (strcmp(key, "client_secret") == 0)
        return &cfg->client_secret;
    if (strcmp(key, "tenant_id") == 0)
        return &cfg->tenant_id;
    if (strcmp(key, "ca_file") == 0)
        return &cfg->ca_file;
    return NULL;
}

bool taxctl_config_read(const char *path, taxctl_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return true;
        fprintf(stderr, "taxctl: cannot read %s: %s\n", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077) != 0) {
        fprintf(stderr, "taxctl: %s holds a client secret and is readable by others "
                        "(mode %03o): chmod 600 it\n", path, (unsigned)(st.st_mode & 0777));
        fclose(f);
        return false;
    }
    char line[4096];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        char *eq = strchr(line, '=');
        char **field = NULL;
        if (eq) {
            *eq = '\0';
            field = field_of(cfg, line);
        }
        if (!field) {
            fprintf(stderr, "taxctl: %s:%d: expected url=, client_id=, client_secret=, "
                            "tenant_id= or ca_file=\n", path, lineno);
            ok = false;
            break;
        }
        free(*field);
        *field = strdup(eq + 1);
        if (!*field)
            ok = false;
    }
    explicit_bzero(line, sizeof line);
    fclose(f);
    if (!ok)
        taxctl_config_clear(cfg);
    return ok;
}

/* mkdir -p of path's directory, each made 0700. */
static bool make_parent(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return false;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "taxctl: cannot create %s: %s\n", dir, strerror(errno));
            free(dir);
            return false;
        }
        *p = '/';
    }
    free(dir);
    return true;
}

bool taxctl_config_write(const char *path, const taxctl_config *cfg)
{
    if (!make_parent(path))
        return false;
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0)
        return false;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "taxctl: cannot write %s: %s\n", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(tmp);
        return false;
    }
    fprintf(f, "# written by taxctl login; holds a client secret: keep it mode 0600\n");
    const struct { const char *key, *value; } rows[] = {
        {"url", cfg->url}, {"client_id", cfg->client_id}, {"client_secret", cfg->client_secret},
        {"tenant_id", cfg->tenant_id}, {"ca_file", cfg->ca_file},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].value)
            fprintf(f, "%s=%s\n", rows[i].key, rows[i].value);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "taxctl: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok;
}

/* The environment's value, else the file's. */
static const char *pick(const char *flag, const char *env_name, const char *from_file)
{
    if (flag && *flag)
        return flag;
    const char *env = env_name ? getenv(env_name) : NULL;
    return env && *env ? env : from_file;
}

static void log_to_stderr(void *userdata, char direction, const char *line)
{
    (void)userdata;
    fprintf(stderr, "%c %s\n", direction, line);
}

taxd_client *taxctl_client(const taxctl_globals *g)
{
    char *path = taxctl_config_path(g);
    taxctl_config cfg;
    if (!path || !taxctl_config_read(path, &cfg)) {
        free(path);
        return NULL;
    }
    taxd_client_options o = {
        .base_url = pick(g->url, "TAXD_URL", cfg.url),
        .client_id = pick(NULL, "TAXD_CLIENT_ID", cfg.client_id),
        .client_secret = pick(NULL, "TAXD_CLIENT_SECRET", cfg.client_secret),
        .tenant_id = pick(NULL, "TAXD_TENANT_ID", cfg.tenant_id),
        .ca_file = pick(g->ca_file, "TAXD_CA_FILE", cfg.ca_file),
        .user_agent = "taxctl/" TAXD_CLIENT_VERSION,
        .log = g->verbose ? log_to_stderr : NULL,
    };
    taxd_client *client = NULL;
    if (!o.base_url || !o.client_id || !o.client_secret) {
        fprintf(stderr, "taxctl: no %s: run `taxctl login`, or set TAXD_URL, TAXD_CLIENT_ID "
                        "and TAXD_CLIENT_SECRET (%s was read)\n",
                !o.base_url ? "service URL" : "client credentials", path);
    } else {
        taxd_error err = {0};
        client = taxd_client_new(&o, &err);
        if (!client)
            taxctl_print_error("configuration", &err);
        taxd_error_clear(&err);
    }
    taxctl_config_clear(&cfg);
    free(path);
    return client;
}

void taxctl_print_error(const char *what, const taxd_error *err)
{
    const char *message = err->message ? err->message : taxd_code_name(err->code);
    fprintf(stderr, "taxctl: %s: %s", what, message);
    if (err->status)
        fprintf(stderr, " (status %d", err->status);
    if (err->status && err->request_id)
        fprintf(stderr, ", request id %s)", err->request_id);
    else if (err->request_id)
        fprintf(stderr, " (request id %s)", err->request_id);
    else if (err->status)
        fprintf(stderr, ")");
    fprintf(stderr, "\n");
    if (err->details)
        fprintf(stderr, "taxctl: details: %s\n", err->details);
}

int taxctl_exit_for(const taxd_error *err)
{
    if (err->code == TAXD_E_INVALID || err->code == TAXD_E_IO)
        return TAXCTL_EXIT_USAGE;
    if (err->code == TAXD_E_HTTP && err->status >= 400 && err->status < 500 && err->status != 429)
        return TAXCTL_EXIT_REFUSED;
    if (err->code == TAXD_E_FAILED)
        return TAXCTL_EXIT_REFUSED;
    return TAXCTL_EXIT_INCOMPLETE;
}
