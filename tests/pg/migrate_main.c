/* migrate_main: connects to the PostgreSQL URL of argv[1] and runs
 * store_pg_migrate once, for tests/api/test_pg_schema.py. Prints
 * "migrated" (exit 0) or "error: <message>" (exit 1) on stdout; exit 2 when
 * it cannot connect. With a second argument it first waits until that file
 * exists, so that two processes can be released together. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "store/schema_pg.h"

static void wait_for(const char *path)
{
    struct timespec tick = {0, 1000000}; /* 1 ms */
    for (int i = 0; i < 30000 && access(path, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: migrate_main URL [GO-FILE]\n");
        return 2;
    }
    PGconn *pg = PQconnectdb(argv[1]);
    if (PQstatus(pg) != CONNECTION_OK) {
        printf("connect failed\n");
        PQfinish(pg);
        return 2;
    }
    if (argc > 2)
        wait_for(argv[2]);
    char *err = NULL;
    bool ok = store_pg_migrate(pg, &err);
    if (ok)
        printf("migrated\n");
    else
        printf("error: %s\n", err != NULL ? err : "(no message)");
    free(err);
    PQfinish(pg);
    return ok ? 0 : 1;
}
