/* server: the HTTP front of taxd on libmicrohttpd. A request passes through
 * fixed phases, as in nginx: body limit and load shedding while it arrives,
 * then router (404/405), authentication (401), scopes (403), rate limits
 * (429), the handler, and finally the access log and metrics. */
#ifndef TAXD_HTTP_SERVER_H
#define TAXD_HTTP_SERVER_H

#include "app/service.h"

typedef struct http_server http_server_t;

/* Binds the listen address and starts the thread pool. When svc->cfg.base_url
 * is empty it becomes "http://HOST:PORT" with the bound port. Returns NULL
 * with *err malloc'd on failure. */
http_server_t *http_server_start(service_t *svc, char **err);

/* The bound port (useful with port 0). */
unsigned http_server_port(const http_server_t *server);

/* Graceful stop: stop accepting, let requests in progress finish (at most
 * drain_ms), answer them with Connection: close, then stop every thread and
 * free the server. */
void http_server_stop(http_server_t *server, int64_t drain_ms);

#endif
