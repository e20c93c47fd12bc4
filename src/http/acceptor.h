/* acceptor: taxd's front door, in front of libmicrohttpd. It owns the
 * listening socket and holds each new connection until the head (request
 * line and headers) of its first request has arrived, as FreeBSD's
 * accf_http and nginx's deferred accept do. Only then is the connection
 * handed to the HTTP library, so a client that connects and trickles bytes
 * holds a file descriptor and an epoll slot here, never a thread or a
 * connection slot of the server that others need:
 *  - the head must be complete within header_timeout_ms of the connection's
 *    first byte (of its accept when no byte comes), else the connection is
 *    closed;
 *  - a head larger than head_max bytes: 431, then close;
 *  - the first request's framing (http/framing.h) is judged on the raw head
 *    here, before any library parses it: a refusal is answered and closed;
 *  - connections per client address (an IPv6 client by its /64) and in all
 *    are bounded; a trusted proxy
 *    (http/proxies.h) is exempt from the per-address bound. Over a bound the
 *    connection is closed at once.
 * The head is read with MSG_PEEK: the bytes stay in the kernel for the
 * library to read. One thread runs all of this with epoll; it also calls the
 * owner's tick every tick_ms, for the deadlines of connections already
 * handed over. */
#ifndef TAXD_HTTP_ACCEPTOR_H
#define TAXD_HTTP_ACCEPTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "http/proxies.h"

typedef struct acceptor_config {
    int listen_fd;               /* bound and listening; the acceptor closes it at stop */
    unsigned header_timeout_ms;
    size_t head_max;
    unsigned connection_limit;   /* open connections at most, waiting or handed over */
    unsigned per_address_limit;  /* of which from one client address at most */
    const proxies_t *trusted;    /* exempt from per_address_limit; may be NULL */
    unsigned tick_ms;
    /* Takes a connection whose first head arrived with acceptable framing
     * (called on the acceptor thread). Returns false when it could not: the
     * acceptor then closes fd and forgets it. On true the taker owns fd and
     * must call acceptor_release when the connection closes. */
    bool (*handoff)(void *user, int fd, const struct sockaddr *addr, socklen_t addr_len);
    /* Answers a refused head (status 400/431/501, reason static text) on fd,
     * which is then closed by the acceptor. */
    void (*refuse)(void *user, int fd, const struct sockaddr *addr, int status,
                   const char *reason);
    void (*tick)(void *user);
    void *user;
} acceptor_config_t;

typedef struct acceptor acceptor_t;

/* Starts the thread. NULL with *err malloc'd on failure (cfg is copied;
 * cfg->trusted must outlive the acceptor). */
acceptor_t *acceptor_start(const acceptor_config_t *cfg, char **err);

/* A handed-over connection from addr closed: its address counts one less.
 * Any thread. */
void acceptor_release(acceptor_t *acceptor, const struct sockaddr *addr);

/* Stops accepting at once and closes the listening socket and every
 * connection still waiting for its head (handed-over ones are the taker's). */
void acceptor_close_listener(acceptor_t *acceptor);

/* Stops the thread: no handoff or tick after it returns. acceptor_release
 * may still be called (connections handed over close later). */
void acceptor_stop(acceptor_t *acceptor);

/* Frees the acceptor, once stopped and once no handed-over connection can
 * call acceptor_release any more. NULL is ignored. */
void acceptor_free(acceptor_t *acceptor);

#endif
