/* keys: key files beside the database. See keys.h.
 *
 * Design and trade-offs:
 * - Creation is "write a private temporary file, then link(2) it to the final
 *   name". link fails with EEXIST instead of replacing, so an existing key is
 *   never overwritten, and a reader can never see a half-written file (which
 *   open(O_CREAT|O_EXCL) followed by write would allow). When several processes
 *   start at once, exactly one link succeeds; the losers drop their temporary
 *   file and read the winner's. Every process, winner included, then loads the
 *   key from the file, so all of them use what is on disk.
 * - Rotation is the one place a key file is replaced, and replacing is its
 *   purpose: it writes a temporary file and rename(2)s it over the ring. The
 *   current ring is read from the file, not taken from the caller, so an
 *   operator command in another process rotates what the servers actually
 *   load. Two rotations racing each other leave one of their results; that is
 *   an operator error we do not lock against.
 * - Files and the directory are fsynced before and after the link or rename so
 *   a crash cannot leave an empty key file that a restart would trust.
 * - Parsing is strict (exact line shapes, base64 of exactly 32 bytes, known
 *   kid characters): a damaged key file must stop the server with a message,
 *   not be silently replaced, because replacing it would orphan every token,
 *   secret hash and TIN made with the old key. Messages name the file and the
 *   problem, never the key; buffers that held key text are wiped. */
#include "core/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "core/crypto.h"
#include "core/errmsg.h"

#define KEYS_FILE_MAX 1024 /* far above two ring lines; bounds the read */
#define KEYS_B64_LEN (CRYPTO_BASE64_LEN(KEYS_KEY_LEN) - 1)

enum { KEYS_READ_OK = 0, KEYS_READ_MISSING = 1, KEYS_READ_ERROR = -1 };

char *keys_path(const char *base, const char *name)
{
    if (base == NULL || name == NULL || base[0] == '\0')
        return NULL;
    bool dir = base[strlen(base) - 1] == '/';
    char *path = NULL;
    if (asprintf(&path, dir ? "%s%s.key" : "%s.%s.key", base, name) < 0)
        return NULL;
    return path;
}

/* ---- file input and output ---- */

/* Reads the whole file into buf (NUL-terminated). */
static int keys_read_file(const char *path, char *buf, size_t cap, size_t *len, char **err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return KEYS_READ_MISSING;
        errmsg_set(err, "cannot open key file %s: %s", path, strerror(errno));
        return KEYS_READ_ERROR;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        errmsg_set(err, "key file %s is not a regular file", path);
        close(fd);
        return KEYS_READ_ERROR;
    }
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            errmsg_set(err, "cannot read key file %s: %s", path, strerror(errno));
            close(fd);
            return KEYS_READ_ERROR;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    char extra;
    bool too_long = n == cap - 1 && read(fd, &extra, 1) > 0;
    close(fd);
    if (too_long) {
        errmsg_set(err, "key file %s is too large to be a key file", path);
        return KEYS_READ_ERROR;
    }
    buf[n] = '\0';
    *len = n;
    return KEYS_READ_OK;
}

static int keys_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync the directory holding path so a new name survives a crash. */
static int keys_sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        strcpy(dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir)
            return -1;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Creates "<path>.tmp.XXXXXX" with mode 0600 holding content, synced to disk.
 * Returns the open-and-closed temporary name in tmp (caller unlinks). */
static int keys_write_temp(const char *path, const char *content, size_t len, char **tmp,
                           char **err)
{
    if (asprintf(tmp, "%s.tmp.XXXXXX", path) < 0) {
        *tmp = NULL;
        errmsg_set(err, "out of memory writing key file %s", path);
        return -1;
    }
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        errmsg_set(err, "cannot create a temporary file beside %s: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    /* mkstemp already uses 0600; fchmod states it rather than relying on it. */
    int ok = fchmod(fd, S_IRUSR | S_IWUSR) == 0 && keys_write_all(fd, content, len) == 0 &&
             fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        errmsg_set(err, "cannot write a temporary file beside %s: %s", path, strerror(saved));
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    return 0;
}

/* Publishes content at path unless a file is already there.
 * Returns 0 (published), 1 (another file was there first) or -1. */
static int keys_publish_new(const char *path, const char *content, size_t len, char **err)
{
    char *tmp = NULL;
    if (keys_write_temp(path, content, len, &tmp, err) != 0)
        return -1;
    int rc = link(tmp, path);
    int saved = errno;
    unlink(tmp);
    free(tmp);
    if (rc != 0 && saved == EEXIST)
        return 1;
    if (rc != 0) {
        errmsg_set(err, "cannot create key file %s: %s", path, strerror(saved));
        return -1;
    }
    if (keys_sync_dir(path) != 0) {
        errmsg_set(err, "cannot sync the directory of key file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Replaces path with content (rotation only). */
static int keys_replace(const char *path, const char *content, size_t len, char **err)
{
    char *tmp = NULL;
    if (keys_write_temp(path, content, len, &tmp, err) != 0)
        return -1;
    int rc = rename(tmp, path);
    int saved = errno;
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    if (rc != 0) {
        errmsg_set(err, "cannot replace key file %s: %s", path, strerror(saved));
        return -1;
    }
    if (keys_sync_dir(path) != 0) {
        errmsg_set(err, "cannot sync the directory of key file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- parsing ---- */

static int keys_decode_key(const char *b64, size_t len, uint8_t key[KEYS_KEY_LEN])
{
    uint8_t buf[KEYS_KEY_LEN + 3];
    size_t n = 0;
    if (len != KEYS_B64_LEN || crypto_base64_decode(b64, len, buf, sizeof buf, &n) != 0 ||
        n != KEYS_KEY_LEN) {
        OPENSSL_cleanse(buf, sizeof buf);
        return -1;
    }
    memcpy(key, buf, KEYS_KEY_LEN);
    OPENSSL_cleanse(buf, sizeof buf);
    return 0;
}

static bool keys_kid_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static bool keys_kid_ok(const char *kid, size_t len)
{
    if (len == 0 || len >= KEYS_KID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!keys_kid_char_ok(kid[i]))
            return false;
    return true;
}

/* The content without its final newline: files end with one, and an editor
 * may have dropped it. */
static size_t keys_trim_final_newline(const char *buf, size_t len)
{
    return len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
}

static int keys_parse_single(const char *path, const char *buf, size_t len,
                             uint8_t key[KEYS_KEY_LEN], char **err)
{
    len = keys_trim_final_newline(buf, len);
    if (keys_decode_key(buf, len, key) != 0) {
        errmsg_set(err, "key file %s is malformed: expected one line with the base64 of %d bytes",
                     path, KEYS_KEY_LEN);
        return -1;
    }
    return 0;
}

static int keys_parse_ring_line(const char *line, size_t len, keys_ring_t *ring, size_t idx)
{
    const char *space = memchr(line, ' ', len);
    if (space == NULL)
        return -1;
    size_t kid_len = (size_t)(space - line);
    if (!keys_kid_ok(line, kid_len))
        return -1;
    if (keys_decode_key(space + 1, len - kid_len - 1, ring->key[idx]) != 0)
        return -1;
    memcpy(ring->kid[idx], line, kid_len);
    ring->kid[idx][kid_len] = '\0';
    for (size_t i = 0; i < idx; i++)
        if (strcmp(ring->kid[i], ring->kid[idx]) == 0)
            return -1;
    return 0;
}

static int keys_parse_ring(const char *path, const char *buf, size_t len, keys_ring_t *ring,
                           char **err)
{
    memset(ring, 0, sizeof *ring);
    len = keys_trim_final_newline(buf, len);
    size_t pos = 0;
    size_t line_no = 0;
    /* pos == len starts an empty line (an empty file, or a blank line at the
     * end), which the line parser refuses. */
    while (pos <= len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl == NULL ? len : (size_t)(nl - buf);
        if (line_no == KEYS_RING_MAX) {
            errmsg_set(err, "key ring %s is malformed: more than %d keys", path, KEYS_RING_MAX);
            goto fail;
        }
        if (keys_parse_ring_line(buf + pos, end - pos, ring, line_no) != 0) {
            errmsg_set(err,
                         "key ring %s is malformed at line %zu: expected \"<kid> <base64 of %d "
                         "bytes>\" with a unique kid of letters, digits, '-' or '_'",
                         path, line_no + 1, KEYS_KEY_LEN);
            goto fail;
        }
        line_no++;
        pos = end + 1;
    }
    ring->count = line_no;
    return 0;
fail:
    OPENSSL_cleanse(ring, sizeof *ring);
    return -1;
}

/* ---- new keys ---- */

static int keys_new_kid(char kid[KEYS_KID_MAX])
{
    uint8_t r[4];
    if (crypto_random_bytes(r, sizeof r) != 0)
        return -1;
    kid[0] = 'k';
    crypto_hex_encode(r, sizeof r, kid + 1);
    return 0;
}

/* Formats the ring file; returns its length or 0. */
static size_t keys_format_ring(const keys_ring_t *ring, char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < ring->count; i++) {
        char b64[CRYPTO_BASE64_LEN(KEYS_KEY_LEN)];
        crypto_base64_encode(ring->key[i], KEYS_KEY_LEN, b64, sizeof b64);
        int w = snprintf(buf + n, cap - n, "%s %s\n", ring->kid[i], b64);
        OPENSSL_cleanse(b64, sizeof b64);
        if (w < 0 || (size_t)w >= cap - n)
            return 0;
        n += (size_t)w;
    }
    return n;
}

/* ---- public ---- */

int keys_load_or_create(const char *path, uint8_t key[KEYS_KEY_LEN], char **err)
{
    if (err != NULL)
        *err = NULL;
    if (path == NULL || key == NULL) {
        errmsg_set(err, "key file: no path given");
        return -1;
    }
    char buf[KEYS_FILE_MAX];
    size_t len = 0;
    int rc = keys_read_file(path, buf, sizeof buf, &len, err);
    if (rc == KEYS_READ_MISSING) {
        uint8_t fresh[KEYS_KEY_LEN];
        char line[CRYPTO_BASE64_LEN(KEYS_KEY_LEN) + 1];
        if (crypto_random_bytes(fresh, sizeof fresh) != 0) {
            errmsg_set(err, "cannot make a key for %s: random source failed", path);
            return -1;
        }
        size_t n = crypto_base64_encode(fresh, sizeof fresh, line, sizeof line - 1);
        line[n++] = '\n';
        int pub = keys_publish_new(path, line, n, err);
        OPENSSL_cleanse(fresh, sizeof fresh);
        OPENSSL_cleanse(line, sizeof line);
        if (pub < 0)
            return -1;
        /* Winner or loser, the key is whatever the file now holds. */
        rc = keys_read_file(path, buf, sizeof buf, &len, err);
        if (rc == KEYS_READ_MISSING)
            errmsg_set(err, "key file %s vanished while being created", path);
    }
    if (rc != KEYS_READ_OK)
        return -1;
    rc = keys_parse_single(path, buf, len, key, err);
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

/* Reads and parses the ring; KEYS_READ_MISSING when there is no file. */
static int keys_ring_read(const char *path, keys_ring_t *ring, char **err)
{
    char buf[KEYS_FILE_MAX];
    size_t len = 0;
    int rc = keys_read_file(path, buf, sizeof buf, &len, err);
    if (rc == KEYS_READ_OK)
        rc = keys_parse_ring(path, buf, len, ring, err) == 0 ? KEYS_READ_OK : KEYS_READ_ERROR;
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

static int keys_ring_add_fresh_first(keys_ring_t *ring, const keys_ring_t *old, const char *path,
                                     char **err)
{
    memset(ring, 0, sizeof *ring);
    if (crypto_random_bytes(ring->key[0], KEYS_KEY_LEN) != 0)
        goto fail;
    do {
        if (keys_new_kid(ring->kid[0]) != 0)
            goto fail;
    } while (old != NULL && old->count > 0 && strcmp(ring->kid[0], old->kid[0]) == 0);
    ring->count = 1;
    if (old != NULL && old->count > 0) {
        memcpy(ring->kid[1], old->kid[0], KEYS_KID_MAX);
        memcpy(ring->key[1], old->key[0], KEYS_KEY_LEN);
        ring->count = 2;
    }
    return 0;
fail:
    errmsg_set(err, "cannot make a key for %s: random source failed", path);
    return -1;
}

int keys_ring_load_or_create(const char *path, keys_ring_t *ring, char **err)
{
    if (err != NULL)
        *err = NULL;
    if (path == NULL || ring == NULL) {
        errmsg_set(err, "key ring: no path given");
        return -1;
    }
    keys_ring_t loaded;
    int rc = keys_ring_read(path, &loaded, err);
    if (rc == KEYS_READ_MISSING) {
        keys_ring_t fresh;
        char text[KEYS_FILE_MAX];
        if (keys_ring_add_fresh_first(&fresh, NULL, path, err) != 0)
            return -1;
        size_t n = keys_format_ring(&fresh, text, sizeof text);
        int pub = keys_publish_new(path, text, n, err);
        OPENSSL_cleanse(&fresh, sizeof fresh);
        OPENSSL_cleanse(text, sizeof text);
        if (pub < 0)
            return -1;
        rc = keys_ring_read(path, &loaded, err);
        if (rc == KEYS_READ_MISSING)
            errmsg_set(err, "key ring %s vanished while being created", path);
    }
    if (rc != KEYS_READ_OK)
        return -1;
    *ring = loaded;
    OPENSSL_cleanse(&loaded, sizeof loaded);
    return 0;
}

int keys_ring_rotate(const char *path, keys_ring_t *ring, char **err)
{
    if (err != NULL)
        *err = NULL;
    if (path == NULL || ring == NULL) {
        errmsg_set(err, "key ring: no path given");
        return -1;
    }
    keys_ring_t current, next;
    int rc = keys_ring_read(path, &current, err);
    if (rc == KEYS_READ_MISSING)
        errmsg_set(err, "key ring %s does not exist: nothing to rotate", path);
    if (rc != KEYS_READ_OK)
        return -1;
    rc = keys_ring_add_fresh_first(&next, &current, path, err);
    OPENSSL_cleanse(&current, sizeof current);
    if (rc != 0)
        return -1;
    char text[KEYS_FILE_MAX];
    size_t n = keys_format_ring(&next, text, sizeof text);
    if (n == 0)
        errmsg_set(err, "cannot format key ring %s", path);
    rc = n == 0 ? -1 : keys_replace(path, text, n, err);
    OPENSSL_cleanse(text, sizeof text);
    if (rc == 0)
        *ring = next;
    OPENSSL_cleanse(&next, sizeof next);
    return rc;
}
