/* Unit tests for src/core/keys.c, each in a fresh mkdtemp directory: creation
 * and reload, mode 0600, no overwrite of an existing or damaged file, strict
 * parsing with messages that name the file and never the key, rotation, and
 * eight processes racing to create the same key file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/crypto.h"
#include "core/keys.h"

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    strcpy(f->dir, "/tmp/taxd_test_keys_XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/taxd.db.test.key", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    DIR *d = opendir(f->dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static size_t count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static size_t read_text(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, cap - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
    assert_int_equal(fclose(fp), 0);
}

static void assert_mode_0600(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
}

static void test_keys_path(void **state)
{
    (void)state;
    char *p = keys_path("/var/lib/taxd/taxd.db", "token");
    assert_non_null(p);
    assert_string_equal(p, "/var/lib/taxd/taxd.db.token.key");
    free(p);
    assert_null(keys_path(NULL, "x"));
}

static void test_create_then_load_same_key(void **state)
{
    struct fixture *f = *state;
    uint8_t k1[KEYS_KEY_LEN], k2[KEYS_KEY_LEN], zero[KEYS_KEY_LEN] = {0};
    char *err = NULL;
    mode_t old_umask = umask(0); /* the mode must not depend on the umask */
    int rc = keys_load_or_create(f->path, k1, &err);
    umask(old_umask);
    assert_int_equal(rc, 0);
    assert_null(err);
    assert_memory_not_equal(k1, zero, sizeof k1);
    assert_mode_0600(f->path);
    /* One line: the base64 of the 32 bytes. */
    char text[128], b64[CRYPTO_BASE64_LEN(KEYS_KEY_LEN) + 1];
    crypto_base64_encode(k1, sizeof k1, b64, sizeof b64);
    read_text(f->path, text, sizeof text);
    strcat(b64, "\n");
    assert_string_equal(text, b64);
    /* No temporary file left behind. */
    assert_int_equal(count_dir_entries(f->dir), 1);

    struct stat before, after;
    assert_int_equal(stat(f->path, &before), 0);
    assert_int_equal(keys_load_or_create(f->path, k2, &err), 0);
    assert_memory_equal(k1, k2, sizeof k1);
    assert_int_equal(stat(f->path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
    char text2[128];
    read_text(f->path, text2, sizeof text2);
    assert_string_equal(text, text2);
}

static void test_existing_key_file_is_loaded_not_replaced(void **state)
{
    struct fixture *f = *state;
    /* 32 bytes 0x00..0x1f, no final newline (an editor may drop it). */
    write_text(f->path, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
    uint8_t k[KEYS_KEY_LEN];
    char *err = NULL;
    assert_int_equal(keys_load_or_create(f->path, k, &err), 0);
    for (int i = 0; i < KEYS_KEY_LEN; i++)
        assert_int_equal(k[i], i);
}

static void test_malformed_key_file_refused(void **state)
{
    struct fixture *f = *state;
    const char *bad[] = {
        "",
        "\n",
        "not base64 at all\n",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\n", /* 31 bytes */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==\n", /* 34 bytes */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=x\n", /* trailing junk */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\n", /* blank line */
        " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",  /* leading space */
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\r\n", /* CRLF */
        "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", /* a ring line */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(f->path, bad[i]);
        uint8_t k[KEYS_KEY_LEN];
        char *err = NULL;
        if (keys_load_or_create(f->path, k, &err) != -1)
            fail_msg("malformed key file %zu accepted", i);
        assert_non_null(err);
        assert_non_null(strstr(err, f->path));
        /* The message never quotes the file's content. */
        assert_null(strstr(err, "AAECAwQF"));
        free(err);
        /* The damaged file is left for the operator, not replaced. */
        char text[256];
        read_text(f->path, text, sizeof text);
        assert_string_equal(text, bad[i]);
    }
}

static void test_missing_directory_reports_error(void **state)
{
    struct fixture *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/no/such/dir/x.key", f->dir);
    uint8_t k[KEYS_KEY_LEN];
    char *err = NULL;
    assert_int_equal(keys_load_or_create(path, k, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err, path));
    free(err);
    keys_ring_t ring;
    assert_int_equal(keys_ring_load_or_create(path, &ring, &err), -1);
    assert_non_null(err);
    free(err);
}

static void test_directory_instead_of_file_refused(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(mkdir(f->path, 0700), 0);
    uint8_t k[KEYS_KEY_LEN];
    char *err = NULL;
    assert_int_equal(keys_load_or_create(f->path, k, &err), -1);
    assert_non_null(err);
    free(err);
    rmdir(f->path);
}

static bool kid_is_generated(const char *kid)
{
    if (strlen(kid) != 9 || kid[0] != 'k')
        return false;
    for (int i = 1; i < 9; i++)
        if (strchr("0123456789abcdef", kid[i]) == NULL)
            return false;
    return true;
}

static void test_ring_create_load_and_rotate(void **state)
{
    struct fixture *f = *state;
    keys_ring_t r1, r2, r3, r4, again;
    char *err = NULL;
    assert_int_equal(keys_ring_load_or_create(f->path, &r1, &err), 0);
    assert_null(err);
    assert_int_equal(r1.count, 1);
    assert_true(kid_is_generated(r1.kid[0]));
    assert_mode_0600(f->path);

    char text[256], line[128], b64[CRYPTO_BASE64_LEN(KEYS_KEY_LEN)];
    crypto_base64_encode(r1.key[0], KEYS_KEY_LEN, b64, sizeof b64);
    snprintf(line, sizeof line, "%s %s\n", r1.kid[0], b64);
    read_text(f->path, text, sizeof text);
    assert_string_equal(text, line);

    assert_int_equal(keys_ring_load_or_create(f->path, &r2, &err), 0);
    assert_int_equal(r2.count, 1);
    assert_string_equal(r2.kid[0], r1.kid[0]);
    assert_memory_equal(r2.key[0], r1.key[0], KEYS_KEY_LEN);

    /* Rotation: a new first key, the old signing key second. */
    assert_int_equal(keys_ring_rotate(f->path, &r3, &err), 0);
    assert_null(err);
    assert_int_equal(r3.count, 2);
    assert_true(kid_is_generated(r3.kid[0]));
    assert_string_not_equal(r3.kid[0], r1.kid[0]);
    assert_memory_not_equal(r3.key[0], r1.key[0], KEYS_KEY_LEN);
    assert_string_equal(r3.kid[1], r1.kid[0]);
    assert_memory_equal(r3.key[1], r1.key[0], KEYS_KEY_LEN);
    assert_mode_0600(f->path);
    assert_int_equal(count_dir_entries(f->dir), 1);
    assert_int_equal(keys_ring_load_or_create(f->path, &again, &err), 0);
    assert_int_equal(again.count, 2);
    assert_string_equal(again.kid[0], r3.kid[0]);
    assert_string_equal(again.kid[1], r3.kid[1]);
    assert_memory_equal(again.key, r3.key, sizeof again.key);

    /* A second rotation drops the oldest key. */
    assert_int_equal(keys_ring_rotate(f->path, &r4, &err), 0);
    assert_int_equal(r4.count, 2);
    assert_string_equal(r4.kid[1], r3.kid[0]);
    assert_memory_equal(r4.key[1], r3.key[0], KEYS_KEY_LEN);
    assert_string_not_equal(r4.kid[0], r1.kid[0]);
    assert_string_not_equal(r4.kid[1], r1.kid[0]);
}

static void test_ring_rotate_without_ring_fails(void **state)
{
    struct fixture *f = *state;
    keys_ring_t r;
    char *err = NULL;
    assert_int_equal(keys_ring_rotate(f->path, &r, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err, f->path));
    free(err);
    assert_int_equal(count_dir_entries(f->dir), 0);
}

static void test_ring_existing_file_parsed(void **state)
{
    struct fixture *f = *state;
    write_text(f->path, "new-1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
                        "old_0 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
    keys_ring_t r;
    char *err = NULL;
    assert_int_equal(keys_ring_load_or_create(f->path, &r, &err), 0);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.kid[0], "new-1");
    assert_string_equal(r.kid[1], "old_0");
    assert_int_equal(r.key[0][31], 31);
    uint8_t zero[KEYS_KEY_LEN] = {0};
    assert_memory_equal(r.key[1], zero, KEYS_KEY_LEN);
}

static void test_ring_malformed_refused(void **state)
{
    struct fixture *f = *state;
    const char *bad[] = {
        "",
        "\n",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", /* no kid */
        "k1  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", /* two spaces */
        "k1\tAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
        "k/1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", /* bad kid character */
        "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\n",  /* 31 bytes */
        "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
        "k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", /* duplicate kid */
        "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
        "\n"
        "k2 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", /* blank line */
        "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
        "k2 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
        "k3 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", /* three keys */
        "k0123456789012345678901234567890123 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(f->path, bad[i]);
        keys_ring_t r;
        char *err = NULL;
        if (keys_ring_load_or_create(f->path, &r, &err) != -1)
            fail_msg("malformed ring %zu accepted", i);
        assert_non_null(err);
        assert_non_null(strstr(err, f->path));
        assert_null(strstr(err, "AAECAwQF"));
        free(err);
        assert_int_equal(keys_ring_rotate(f->path, &r, &err), -1);
        free(err);
        char text[512];
        read_text(f->path, text, sizeof text);
        assert_string_equal(text, bad[i]);
    }
}

/* Eight processes wait on one pipe, are released together, and each creates or
 * loads the same new key file; each reports the key it got over a pipe (32-byte
 * writes are atomic). All must agree with the file. */
static void race_create(const char *path, bool ring)
{
    enum { N = 8 };
    int gate[2], results[2];
    assert_int_equal(pipe(gate), 0);
    assert_int_equal(pipe(results), 0);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(gate[1]);
            close(results[0]);
            char c;
            (void)!read(gate[0], &c, 1); /* returns at EOF: the release */
            uint8_t key[KEYS_KEY_LEN];
            char *err = NULL;
            int rc;
            if (ring) {
                keys_ring_t r;
                rc = keys_ring_load_or_create(path, &r, &err);
                memcpy(key, r.key[0], sizeof key);
                rc = rc == 0 && r.count == 1 ? 0 : -1;
            } else {
                rc = keys_load_or_create(path, key, &err);
            }
            free(err);
            if (rc != 0)
                _exit(1);
            _exit(write(results[1], key, sizeof key) == (ssize_t)sizeof key ? 0 : 2);
        }
    }
    close(gate[0]);
    close(results[1]);
    close(gate[1]); /* release every child at once */
    uint8_t got[N][KEYS_KEY_LEN];
    size_t total = 0;
    while (total < sizeof got) {
        ssize_t r = read(results[0], (uint8_t *)got + total, sizeof got - total);
        if (r <= 0)
            break;
        total += (size_t)r;
    }
    close(results[0]);
    for (int i = 0; i < N; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(total, sizeof got);
    uint8_t final[KEYS_KEY_LEN];
    char *err = NULL;
    if (ring) {
        keys_ring_t r;
        assert_int_equal(keys_ring_load_or_create(path, &r, &err), 0);
        assert_int_equal(r.count, 1);
        memcpy(final, r.key[0], sizeof final);
    } else {
        assert_int_equal(keys_load_or_create(path, final, &err), 0);
    }
    for (int i = 0; i < N; i++)
        assert_memory_equal(got[i], final, KEYS_KEY_LEN);
    assert_mode_0600(path);
}

static void test_concurrent_create_agrees(void **state)
{
    struct fixture *f = *state;
    /* Several rounds on fresh names make a real race likely, not just possible. */
    for (int round = 0; round < 4; round++) {
        char path[160];
        snprintf(path, sizeof path, "%s/race%d.key", f->dir, round);
        race_create(path, false);
        snprintf(path, sizeof path, "%s/ring%d.key", f->dir, round);
        race_create(path, true);
    }
    /* Every loser removed its temporary file. */
    assert_int_equal(count_dir_entries(f->dir), 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_path),
        cmocka_unit_test_setup_teardown(test_create_then_load_same_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_key_file_is_loaded_not_replaced, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_malformed_key_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory_reports_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_instead_of_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_create_load_and_rotate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_rotate_without_ring_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_existing_file_parsed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_malformed_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_create_agrees, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
