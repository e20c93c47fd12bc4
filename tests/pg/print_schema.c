/* print_schema: writes the PostgreSQL schema script (store_pg_schema_script)
 * to stdout, and with --version its version and SQLite's, one per line, so
 * tests/api/test_pg_schema.py can apply the script with psql and check the
 * two numbers agree. */
#include <stdio.h>
#include <string.h>

#include "store/migrations.h"
#include "store/schema_pg.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("%d\n%d\n", store_pg_schema_version(), store_migrations_latest());
        return 0;
    }
    fputs(store_pg_schema_script(), stdout);
    fputc('\n', stdout);
    return 0;
}
