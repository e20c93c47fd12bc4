/* proxies: the trusted proxies in front of taxd (--trusted-proxies), and
 * the client address a request is judged by. A connection from a trusted
 * proxy carries many clients: it is exempt from the per-address connection
 * limit, and its requests are attributed to the address the proxy appended
 * to X-Forwarded-For. Only the proxy's own entry is believed: the header is
 * read from the right, past every trusted address, and the first address
 * that is not trusted is the client (anything a client wrote further left
 * could be forged). A set is built once and then only read. */
#ifndef TAXD_HTTP_PROXIES_H
#define TAXD_HTTP_PROXIES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct proxies proxies_t;

/* Parses a comma-separated list of addresses or CIDR blocks ("10.0.0.0/8,
 * ::1"). "" gives an empty set. Returns NULL with *err malloc'd (the caller
 * frees it) when an entry is not an address or a block. */
proxies_t *proxies_parse(const char *list, char **err);
void proxies_free(proxies_t *set);

/* True when addr (a socket address, or the text of one) is in the set.
 * NULL set: nothing is trusted. */
bool proxies_trust(const proxies_t *set, const struct sockaddr *addr);
bool proxies_trust_text(const proxies_t *set, const char *addr);

/* The client address of a request whose peer is `peer` (text) and whose
 * X-Forwarded-For header is xff (NULL when absent), into out (cap bytes):
 * the peer itself unless it is trusted. */
void proxies_client_address(const proxies_t *set, const char *peer, const char *xff, char *out,
                            size_t cap);

/* The text of a socket address ("" for another family). */
void proxies_address_text(const struct sockaddr *addr, char *out, size_t cap);

#endif
