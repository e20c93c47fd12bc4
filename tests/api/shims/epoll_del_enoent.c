/* A test shim (LD_PRELOAD) that replays libmicrohttpd's quiesce race: the
 * first EPOLL_CTL_DEL made by the process's main thread (MHD_quiesce_daemon
 * taking the listening socket out of a pool thread's epoll set) is carried
 * out, then reported as ENOENT, as when a pool thread removed the socket a
 * moment before. Every other call goes through unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <unistd.h>

typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);

static atomic_bool replayed;

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    epoll_ctl_fn real = (epoll_ctl_fn)dlsym(RTLD_NEXT, "epoll_ctl");
    int rc = real(epfd, op, fd, event);
    if (rc == 0 && op == EPOLL_CTL_DEL && gettid() == getpid() &&
        !atomic_exchange(&replayed, true)) {
        errno = ENOENT;
        return -1;
    }
    return rc;
}
