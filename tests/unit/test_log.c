/* Unit tests of the log batch (core/log.h): nothing is written before a
 * flush, a flush writes whole lines in order, no write is longer than
 * PIPE_BUF unless it is one long line alone, and free flushes. stderr is
 * a SOCK_SEQPACKET socket during each test, so every write(2) arrives as
 * one message and its boundaries can be checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"

typedef struct capture {
    int saved_stderr, reader;
} capture_t;

static int setup(void **state)
{
    capture_t *c = calloc(1, sizeof *c);
    int pair[2];
    if (c == NULL || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) != 0)
        return -1;
    int big = 1 << 20;
    setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    c->saved_stderr = dup(STDERR_FILENO);
    if (c->saved_stderr < 0 || dup2(pair[0], STDERR_FILENO) < 0)
        return -1;
    close(pair[0]);
    c->reader = pair[1];
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    capture_t *c = *state;
    dup2(c->saved_stderr, STDERR_FILENO);
    close(c->saved_stderr);
    close(c->reader);
    free(c);
    return 0;
}

/* The next write(2) on stderr, or NULL when none is waiting. Malloc'd. */
static char *next_write(capture_t *c, size_t *len)
{
    char *data = malloc(1 << 16);
    assert_non_null(data);
    ssize_t n = recv(c->reader, data, (1 << 16) - 1, MSG_DONTWAIT);
    if (n < 0) {
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        free(data);
        return NULL;
    }
    data[n] = '\0';
    *len = (size_t)n;
    return data;
}

/* Checks that write holds whole JSON lines and returns how many; each
 * line's "n" field must continue the sequence *next. */
static size_t check_lines(const char *write, size_t len, int *next)
{
    assert_true(len > 0 && write[len - 1] == '\n');
    size_t lines = 0;
    for (const char *p = write; *p != '\0'; lines++) {
        const char *end = strchr(p, '\n');
        assert_non_null(end);
        json_error_t error;
        json_t *line = json_loadb(p, (size_t)(end - p), 0, &error);
        assert_non_null(line);
        assert_string_equal(json_string_value(json_object_get(line, "msg")), "item");
        assert_int_equal(json_integer_value(json_object_get(line, "n")), (*next)++);
        json_decref(line);
        p = end + 1;
    }
    return lines;
}

static void add_item(log_batch_t *b, int n, size_t pad)
{
    char *fields = malloc(pad + 64);
    assert_non_null(fields);
    int used = snprintf(fields, 64, "\"n\":%d,\"pad\":\"", n);
    memset(fields + used, 'x', pad);
    snprintf(fields + used + pad, 8, "\"");
    log_batch_add(b, LOG_INFO, "item", fields);
    free(fields);
}

static void test_nothing_before_flush_then_one_write(void **state)
{
    capture_t *c = *state;
    log_batch_t b = {0};
    for (int i = 0; i < 3; i++)
        add_item(&b, i, 10);
    size_t len;
    assert_null(next_write(c, &len));
    log_batch_flush(&b);
    char *w = next_write(c, &len);
    assert_non_null(w);
    int next = 0;
    assert_int_equal(check_lines(w, len, &next), 3);
    free(w);
    assert_null(next_write(c, &len));
    log_batch_flush(&b); /* empty: writes nothing */
    assert_null(next_write(c, &len));
    log_batch_free(&b);
}

static void test_writes_stay_within_pipe_buf(void **state)
{
    capture_t *c = *state;
    log_batch_t b = {0};
    for (int i = 0; i < 100; i++)
        add_item(&b, i, 200);
    log_batch_free(&b); /* flushes the rest */
    int next = 0;
    size_t total = 0, writes = 0, len;
    char *w;
    while ((w = next_write(c, &len)) != NULL) {
        assert_true(len <= PIPE_BUF);
        total += check_lines(w, len, &next);
        writes++;
        free(w);
    }
    assert_int_equal(total, 100);
    assert_true(writes > 1 && writes < 100);
}

static void test_long_line_goes_alone_in_order(void **state)
{
    capture_t *c = *state;
    log_batch_t b = {0};
    add_item(&b, 0, 10);
    add_item(&b, 1, PIPE_BUF + 100);
    add_item(&b, 2, 10);
    log_batch_free(&b);
    int next = 0;
    size_t len;
    for (int i = 0; i < 3; i++) {
        char *w = next_write(c, &len);
        assert_non_null(w);
        assert_int_equal(check_lines(w, len, &next), 1);
        free(w);
    }
    assert_null(next_write(c, &len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_before_flush_then_one_write, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_writes_stay_within_pipe_buf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_line_goes_alone_in_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
