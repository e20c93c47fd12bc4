/* store/pg.c: the PostgreSQL backend (backend.h). Placeholder until the
 * libpq backend lands: refuses every connection. */
#include "core/errmsg.h"
#include "store/backend.h"

static bool pg_connect(store_conn_t *conn, const char *target, char **err)
{
    (void)conn;
    (void)target;
    errmsg_set(err, "PostgreSQL is not built into this taxd yet");
    return false;
}

static void pg_disconnect(store_conn_t *conn)
{
    (void)conn;
}

const store_backend_t store_pg_backend = {
    .name = "postgresql",
    .is_pg = true,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
};
