/* store/schema_pg.c: a stand-in until branch pgschema lands (it replaces
 * this file): refuses every database, so nothing runs on a schema that was
 * never created. */
#include "store/schema_pg.h"

#include "core/errmsg.h"
#include "store/migrations.h"

int store_pg_schema_version(void)
{
    return 13;
}

const char *store_pg_schema_script(void)
{
    return "";
}

bool store_pg_migrate(PGconn *pg, char **err)
{
    (void)pg;
    errmsg_set(err, "the PostgreSQL schema is not built yet (branch pgschema)");
    return false;
}
