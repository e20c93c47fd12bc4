/* acceptor: see acceptor.h. */
#include "http/acceptor.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "http/framing.h"

#define ADDRESS_BUCKETS 4096
#define EVENTS_PER_WAIT 256

typedef struct waiting {
    int fd;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    int64_t accepted_ms;
    int64_t first_byte_ms;     /* 0 until a byte arrived */
    struct waiting *prev, *next;
} waiting_t;

typedef struct address_count {
    uint8_t key[16];
    unsigned count;
    struct address_count *next;
} address_count_t;

struct acceptor {
    acceptor_config_t cfg;
    pthread_t thread;
    int epoll_fd;
    int wake_fd;               /* eventfd: stop or close the listener */
    int listen_fd;             /* -1 once closed */
    _Atomic bool stopping;
    _Atomic bool closing_listener;
    waiting_t *waiting;        /* connections whose first head has not arrived */
    char *head;                /* head_max + 1 bytes: the peek buffer */

    pthread_mutex_t lock;      /* the counts below: released from other threads */
    unsigned open;             /* connections counted, waiting or handed over */
    address_count_t *buckets[ADDRESS_BUCKETS];
};

/* ---- counts per address ----------------------------------------------- */

static bool address_key(const struct sockaddr *addr, uint8_t key[16])
{
    memset(key, 0, 16);
    if (addr->sa_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        return true;
    }
    if (addr->sa_family == AF_INET6) {
        /* One IPv6 client holds a whole /64: count the block, not the address. */
        memcpy(key, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        if (!IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)key))
            memset(key + 8, 0, 8);
        return true;
    }
    return false; /* a Unix socket, say: counted in all only */
}

static address_count_t **address_slot(acceptor_t *a, const uint8_t key[16])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    address_count_t **slot = &a->buckets[h % ADDRESS_BUCKETS];
    while (*slot != NULL && memcmp((*slot)->key, key, 16) != 0)
        slot = &(*slot)->next;
    return slot;
}

static bool per_address_counted(const acceptor_t *a, const struct sockaddr *addr)
{
    return !proxies_trust(a->cfg.trusted, addr);
}

/* Counts a new connection, or returns false when a bound refuses it. */
static bool count_in(acceptor_t *a, const struct sockaddr *addr)
{
    uint8_t key[16];
    bool keyed = address_key(addr, key) && per_address_counted(a, addr);
    bool admitted = false;
    pthread_mutex_lock(&a->lock);
    if (a->open < a->cfg.connection_limit) {
        address_count_t **slot = keyed ? address_slot(a, key) : NULL;
        if (slot == NULL) {
            admitted = true;
        } else if (*slot == NULL) {
            address_count_t *fresh = calloc(1, sizeof *fresh);
            if (fresh != NULL) {
                memcpy(fresh->key, key, 16);
                fresh->count = 1;
                *slot = fresh;
                admitted = true;
            }
        } else if ((*slot)->count < a->cfg.per_address_limit) {
            (*slot)->count++;
            admitted = true;
        }
        if (admitted)
            a->open++;
    }
    pthread_mutex_unlock(&a->lock);
    return admitted;
}

static void count_out(acceptor_t *a, const struct sockaddr *addr)
{
    uint8_t key[16];
    bool keyed = address_key(addr, key) && per_address_counted(a, addr);
    pthread_mutex_lock(&a->lock);
    if (a->open > 0)
        a->open--;
    address_count_t **slot = keyed ? address_slot(a, key) : NULL;
    if (slot != NULL && *slot != NULL && --(*slot)->count == 0) {
        address_count_t *gone = *slot;
        *slot = gone->next;
        free(gone);
    }
    pthread_mutex_unlock(&a->lock);
}

void acceptor_release(acceptor_t *acceptor, const struct sockaddr *addr)
{
    count_out(acceptor, addr);
}

/* ---- connections waiting for their head ------------------------------- */

static void unlink_waiting(acceptor_t *a, waiting_t *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        a->waiting = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
}

/* Forgets w; closes its socket unless it was handed over. */
static void drop_waiting(acceptor_t *a, waiting_t *w, bool close_fd)
{
    epoll_ctl(a->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
    unlink_waiting(a, w);
    if (close_fd) {
        close(w->fd);
        count_out(a, (struct sockaddr *)&w->addr);
    }
    free(w);
}

static void add_waiting(acceptor_t *a, int fd, const struct sockaddr_storage *addr,
                        socklen_t addr_len)
{
    waiting_t *w = calloc(1, sizeof *w);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET | EPOLLRDHUP, .data.ptr = w};
    if (w == NULL || epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(w);
        close(fd);
        count_out(a, (const struct sockaddr *)addr);
        return;
    }
    w->fd = fd;
    w->addr = *addr;
    w->addr_len = addr_len;
    w->accepted_ms = clock_monotonic_ms();
    w->next = a->waiting;
    if (a->waiting != NULL)
        a->waiting->prev = w;
    a->waiting = w;
}

static void accept_all(acceptor_t *a)
{
    for (;;) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(a->listen_fd, (struct sockaddr *)&addr, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                log_event(LOG_WARN, "accept: out of file descriptors", NULL);
            return; /* EAGAIN, or retried on the next readiness */
        }
        if (!count_in(a, (struct sockaddr *)&addr)) {
            close(fd); /* over a connection bound: closed at once */
            continue;
        }
        add_waiting(a, fd, &addr, len);
    }
}

/* Where the head's field lines start and where the head ends (after its
 * empty line), or false while it is incomplete. Empty lines before the
 * request line are skipped (RFC 9112 § 2.2). */
static bool find_head(const char *buf, size_t len, size_t *fields, size_t *fields_end)
{
    size_t start = 0;
    while (start < len && (buf[start] == '\r' || buf[start] == '\n'))
        start++;
    const char *nl = memchr(buf + start, '\n', len - start);
    if (nl == NULL)
        return false;
    *fields = (size_t)(nl - buf) + 1;
    for (size_t i = *fields; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        size_t line_start = i;
        while (line_start > 0 && buf[line_start - 1] != '\n')
            line_start--;
        size_t line_len = i - line_start;
        if (line_len == 0 || (line_len == 1 && buf[line_start] == '\r')) {
            *fields_end = line_start;
            return true;
        }
    }
    return false;
}

static void refuse_head(acceptor_t *a, waiting_t *w, int status, const char *reason)
{
    a->cfg.refuse(a->cfg.user, w->fd, (struct sockaddr *)&w->addr, status, reason);
    drop_waiting(a, w, true);
}

static void read_head(acceptor_t *a, waiting_t *w)
{
    ssize_t n = recv(w->fd, a->head, a->cfg.head_max + 1, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop_waiting(a, w, true);
        return;
    }
    if (n < 0)
        return;
    if (w->first_byte_ms == 0)
        w->first_byte_ms = clock_monotonic_ms();
    size_t fields, fields_end;
    if (!find_head(a->head, (size_t)n, &fields, &fields_end)) {
        if ((size_t)n > a->cfg.head_max)
            refuse_head(a, w, 431, "The request's header fields are too large");
        return;
    }
    framing_t f = framing_judge_block(a->head + fields, fields_end - fields);
    if (f.verdict != FRAMING_OK) {
        refuse_head(a, w, framing_status(f.verdict), f.reason);
        return;
    }
    int fd = w->fd;
    struct sockaddr_storage addr = w->addr;
    socklen_t addr_len = w->addr_len;
    drop_waiting(a, w, false);
    if (!a->cfg.handoff(a->cfg.user, fd, (struct sockaddr *)&addr, addr_len)) {
        close(fd);
        count_out(a, (struct sockaddr *)&addr);
    }
}

static void sweep_waiting(acceptor_t *a, int64_t now)
{
    waiting_t *w = a->waiting;
    while (w != NULL) {
        waiting_t *next = w->next;
        int64_t since = w->first_byte_ms ? w->first_byte_ms : w->accepted_ms;
        if (now - since >= (int64_t)a->cfg.header_timeout_ms)
            drop_waiting(a, w, true);
        w = next;
    }
}

static void close_listener(acceptor_t *a)
{
    if (a->listen_fd < 0)
        return;
    epoll_ctl(a->epoll_fd, EPOLL_CTL_DEL, a->listen_fd, NULL);
    close(a->listen_fd);
    a->listen_fd = -1;
    while (a->waiting != NULL)
        drop_waiting(a, a->waiting, true);
}

/* ---- the thread -------------------------------------------------------- */

static char listen_marker, wake_marker;

static void *acceptor_main(void *arg)
{
    acceptor_t *a = arg;
    struct epoll_event events[EVENTS_PER_WAIT];
    int64_t next_tick = clock_monotonic_ms() + a->cfg.tick_ms;
    while (!atomic_load(&a->stopping)) {
        int n = epoll_wait(a->epoll_fd, events, EVENTS_PER_WAIT, (int)a->cfg.tick_ms);
        for (int i = 0; i < n; i++) {
            void *ptr = events[i].data.ptr;
            if (ptr == &listen_marker) {
                if (a->listen_fd >= 0)
                    accept_all(a);
            } else if (ptr == &wake_marker) {
                uint64_t ignored;
                if (read(a->wake_fd, &ignored, sizeof ignored) < 0)
                    ignored = 0;
            } else {
                read_head(a, ptr);
            }
        }
        if (atomic_load(&a->closing_listener))
            close_listener(a);
        int64_t now = clock_monotonic_ms();
        if (now >= next_tick) {
            next_tick = now + a->cfg.tick_ms;
            sweep_waiting(a, now);
            if (a->cfg.tick != NULL)
                a->cfg.tick(a->cfg.user);
        }
    }
    close_listener(a);
    return NULL;
}

static void wake(acceptor_t *a)
{
    uint64_t one = 1;
    if (write(a->wake_fd, &one, sizeof one) < 0)
        return; /* the counter is already set: the thread wakes anyway */
}

static bool watch(int epoll_fd, int fd, void *marker)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = marker};
    return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

acceptor_t *acceptor_start(const acceptor_config_t *cfg, char **err)
{
    acceptor_t *a = calloc(1, sizeof *a);
    if (a == NULL || (a->head = malloc(cfg->head_max + 1)) == NULL) {
        free(a);
        *err = strdup("acceptor: out of memory");
        return NULL;
    }
    a->cfg = *cfg;
    a->listen_fd = cfg->listen_fd;
    pthread_mutex_init(&a->lock, NULL);
    a->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    a->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->epoll_fd < 0 || a->wake_fd < 0 || !watch(a->epoll_fd, a->listen_fd, &listen_marker) ||
        !watch(a->epoll_fd, a->wake_fd, &wake_marker) ||
        pthread_create(&a->thread, NULL, acceptor_main, a) != 0) {
        if (asprintf(err, "acceptor: cannot start: %s", strerror(errno)) < 0)
            *err = NULL;
        if (a->epoll_fd >= 0)
            close(a->epoll_fd);
        if (a->wake_fd >= 0)
            close(a->wake_fd);
        pthread_mutex_destroy(&a->lock);
        free(a->head);
        free(a);
        return NULL;
    }
    return a;
}

void acceptor_close_listener(acceptor_t *acceptor)
{
    atomic_store(&acceptor->closing_listener, true);
    wake(acceptor);
}

void acceptor_stop(acceptor_t *acceptor)
{
    atomic_store(&acceptor->stopping, true);
    wake(acceptor);
    pthread_join(acceptor->thread, NULL);
}

void acceptor_free(acceptor_t *acceptor)
{
    if (acceptor == NULL)
        return;
    close(acceptor->epoll_fd);
    close(acceptor->wake_fd);
    for (size_t i = 0; i < ADDRESS_BUCKETS; i++) {
        while (acceptor->buckets[i] != NULL) {
            address_count_t *next = acceptor->buckets[i]->next;
            free(acceptor->buckets[i]);
            acceptor->buckets[i] = next;
        }
    }
    pthread_mutex_destroy(&acceptor->lock);
    free(acceptor->head);
    free(acceptor);
}
