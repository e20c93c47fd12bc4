/* A test shim (LD_PRELOAD): a disk that fills. While the file named by
 * $TAXD_TEST_ENOSPC_FLAG exists, writes to the database's files (*.db,
 * *-wal, *-journal) may add the number of bytes the flag file holds, then
 * fail with ENOSPC, as write(2) does on a full file system; removing the
 * flag file frees the space. Other files (logs, sockets) are untouched.
 * When the flag file says "<bytes> erofs" the writes fail with EROFS
 * instead, as on a file system remounted read-only (tests run as root,
 * which file modes do not stop). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic long long used = 0;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* 1: refuse this write of n bytes with ENOSPC. */
static int full(int fd, size_t n)
{
    const char *flag = getenv("TAXD_TEST_ENOSPC_FLAG");
    if (flag == NULL)
        return 0;
    int ff = open(flag, O_RDONLY | O_CLOEXEC);
    if (ff < 0) {
        atomic_store(&used, 0);
        return 0;
    }
    char buf[32] = {0};
    ssize_t got = read(ff, buf, sizeof buf - 1);
    close(ff);
    long long budget = got > 0 ? atoll(buf) : 0;
    int refusal = got > 0 && strstr(buf, "erofs") != NULL ? EROFS : ENOSPC;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    if (len <= 0)
        return 0;
    path[len] = '\0';
    if (!ends_with(path, ".db") && !ends_with(path, "-wal") && !ends_with(path, "-journal"))
        return 0;
    if (atomic_fetch_add(&used, (long long)n) + (long long)n <= budget)
        return 0;
    errno = refusal;
    return 1;
}

#define NEXT(name) static __typeof__(name) *next_##name; \
    if (next_##name == NULL) next_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n)
{
    NEXT(write);
    return full(fd, n) ? -1 : next_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    NEXT(pwrite);
    return full(fd, n) ? -1 : next_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    NEXT(pwrite64);
    return full(fd, n) ? -1 : next_pwrite64(fd, buf, n, off);
}
