/* admin/migrate_db: see migrate_db.h. */
#include "admin/migrate_db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/keys.h"
#include "store/copy.h"

/* Every key file a node reads (app/service.c and webhooks/vault.c). */
static const char *const KEY_NAMES[] = {"token", "secret", "tin", "links", "webhook", NULL};
enum { KEY_FILE_MAX = 4096 }; /* a key file is one or two lines of base64 */

/* Reads a whole small file: its length, or -1 (errno set); -2 when larger
 * than cap. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap);
    char extra;
    if (n >= 0 && (size_t)n == cap && read(fd, &extra, 1) > 0)
        n = -2;
    close(fd);
    return n;
}

/* Writes data to path, which must not exist, with mode 0600; 0 or -1. */
static int write_new(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, data, n);
    int rc = (w == (ssize_t)n && fsync(fd) == 0) ? 0 : -1;
    if (close(fd) != 0)
        rc = -1;
    if (rc != 0)
        unlink(path);
    return rc;
}

/* Copies (or, with dir NULL, lists) the source's key files into *listed
 * ({name: path}). 0, or EXIT_REFUSED after reporting. */
static int move_keys(const char *from, const char *dir, json_t *listed)
{
    char base[4096];
    if (dir != NULL) {
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return admin_fail(EXIT_REFUSED, "cannot create the key directory %s: %s", dir,
                              strerror(errno));
        snprintf(base, sizeof base, "%s/", dir);
    }
    for (size_t i = 0; KEY_NAMES[i] != NULL; i++) {
        char *src = keys_path(from, KEY_NAMES[i]);
        char *dst = dir != NULL ? keys_path(base, KEY_NAMES[i]) : NULL;
        char have[KEY_FILE_MAX], there[KEY_FILE_MAX];
        ssize_t n = src != NULL ? read_small(src, have, sizeof have) : -1;
        int code = 0;
        if (n < 0 && errno == ENOENT && n == -1) {
            /* a key never used by the source (no TIN sealed yet...): nothing to carry */
        } else if (n < 0) {
            code = admin_fail(EXIT_REFUSED, "cannot read the key file %s: %s", src,
                              n == -2 ? "too large" : strerror(errno));
        } else if (dst == NULL) {
            json_object_set_new(listed, KEY_NAMES[i], json_string(src));
        } else {
            ssize_t m = read_small(dst, there, sizeof there);
            if (m >= 0 && (m != n || memcmp(have, there, (size_t)n) != 0))
                code = admin_fail(EXIT_REFUSED,
                                  "%s already exists with another key; nothing was copied (a "
                                  "node must read the keys the copied rows were sealed with)",
                                  dst);
            else if (m < 0 && write_new(dst, have, (size_t)n) != 0)
                code = admin_fail(EXIT_REFUSED, "cannot write the key file %s: %s", dst,
                                  strerror(errno));
            else
                json_object_set_new(listed, KEY_NAMES[i], json_string(dst));
        }
        memset(have, 0, sizeof have);
        memset(there, 0, sizeof there);
        free(src);
        free(dst);
        if (code != 0)
            return code;
    }
    return 0;
}

static json_t *report_json(const store_copy_report_t *r, json_t *keys, bool copied_keys)
{
    json_t *tables = json_array();
    json_int_t total = 0;
    for (size_t i = 0; i < r->count; i++) {
        total += r->tables[i].rows;
        json_array_append_new(tables, json_pack("{s:s, s:I, s:s}", "table", r->tables[i].name,
                                                "rows", (json_int_t)r->tables[i].rows, "sha256",
                                                r->tables[i].sha256));
    }
    return json_pack("{s:s, s:i, s:I, s:o, s:I, s:o, s:s}", "target", r->target,
                     "schema_version", r->schema_version, "elapsed_ms",
                     (json_int_t)r->elapsed_ms, "tables", tables, "rows", total, "key_files", keys,
                     "next_step",
                     copied_keys ? "give every PostgreSQL node this --key-dir (or a copy of it)"
                                 : "copy each key file into every PostgreSQL node's --key-dir "
                                   "as <name>.key (e.g. token.key), then start the nodes");
}

int admin_migrate_db(const args_t *a)
{
    static const char *const allowed[] = {"--from", "--to", "--key-dir", NULL};
    if (admin_check_flags(a, allowed, NULL) != 0)
        return EXIT_USAGE;
    const char *from = admin_flag(a, "--from");
    const char *to = admin_flag(a, "--to");
    const char *key_dir = admin_flag(a, "--key-dir");
    if (from == NULL || to == NULL)
        return admin_fail(EXIT_USAGE, "migrate-db needs --from PATH --to postgres://...");
    json_t *keys = json_object();
    int code = move_keys(from, key_dir, keys);
    if (code != 0) {
        json_decref(keys);
        return code;
    }
    store_copy_report_t *report = malloc(sizeof *report);
    char *err = NULL;
    if (report == NULL || !store_copy_sqlite_to_pg(from, to, report, &err)) {
        code = admin_fail(EXIT_REFUSED, "migrate-db failed: %s",
                          err != NULL ? err : "out of memory");
        free(err);
        free(report);
        json_decref(keys);
        return code;
    }
    code = admin_print_json(report_json(report, keys, key_dir != NULL));
    free(report);
    return code;
}
