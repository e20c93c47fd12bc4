/* store/listen: wake-ups across processes. A write that creates work for
 * the engines (a report, a delivery, a TIN check, a form to regenerate)
 * says so inside its transaction (store_notify_in_tx); every process that
 * listens hears it once the write commits, and never when it rolls back.
 * On PostgreSQL that is NOTIFY / LISTEN on channels taxd_<name>; on SQLite
 * there is nothing to hear across processes, store_notify_in_tx does
 * nothing and there is no listener (engines poll, and a process wakes its
 * own engines in memory). Polling stays the fallback everywhere: a
 * notification is a hint to look now, never the only way work is found. */
#ifndef TAXD_STORE_LISTEN_H
#define TAXD_STORE_LISTEN_H

#include "store/store.h"

typedef enum store_channel {
    STORE_CHANNEL_REPORTS = 1u << 0,   /* taxd_reports: a report to produce */
    STORE_CHANNEL_WEBHOOKS = 1u << 1,  /* taxd_webhooks: deliveries to make */
    STORE_CHANNEL_TINCHECKS = 1u << 2, /* taxd_tinchecks: a TIN check to run */
    STORE_CHANNEL_FORMS = 1u << 3,     /* taxd_forms: forms may need regenerating */
} store_channel_t;
#define STORE_CHANNELS_ALL 0xfu

/* Inside a write transaction (a *_in_tx call or a store file's body):
 * announces new work on channel, delivered when the transaction commits.
 * STORE_OK and nothing done on SQLite. */
store_status_t store_notify_in_tx(store_conn_t *conn, store_channel_t channel);

typedef struct store_listener store_listener_t;

/* A listener on every channel, with a database session of its own (not one
 * of the pool: it must stay LISTENing between waits). NULL when the store's
 * backend has no notifications (SQLite) or memory ran out. The session is
 * opened by the first wait, so opening never blocks. Close it with
 * store_listener_close. */
store_listener_t *store_listener_open(store_t *store);

/* Waits up to timeout_ms for notifications. STORE_OK with *channels the
 * bits heard (0: none within the time); a session opened (first, or again
 * after a loss) answers every bit at once, since work may have been
 * announced while nobody listened. STORE_UNAVAILABLE when the server
 * cannot be reached: the wait took about timeout_ms, and the next wait
 * tries again. Never logs the URL. */
store_status_t store_listener_wait(store_listener_t *l, int timeout_ms, unsigned *channels);

/* Ends the session and frees l (NULL: nothing). */
void store_listener_close(store_listener_t *l);

#endif
