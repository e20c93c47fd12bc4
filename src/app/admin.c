/* app/admin: `taxd admin ...` (app_admin, app.h). The command line is
 * parsed first, so that --help and a usage error open nothing; then the
 * service is opened the way `taxd serve` opens it (database, migrations, key
 * files, route table), so both agree on every key file and route, and admin
 * sees only the parts it uses (admin_context_t). */
#include <stdlib.h>

#include "admin/admin.h"
#include "app/app.h"
#include "app/service.h"

int app_admin(int argc, char **argv)
{
    admin_invocation_t inv;
    int code = admin_parse(argc, argv, &inv);
    if (code != ADMIN_RUN)
        return code;
    if (!admin_opens_service(&inv))
        return admin_run_alone(&inv);
    service_t svc;
    char *err = NULL;
    if (service_open(&svc, &inv.cfg, &err) != 0) {
        code = admin_fail(EXIT_REFUSED, "%s", err ? err : "cannot open the database");
        free(err);
        return code;
    }
    const admin_context_t ctx = {
        .store = svc.store, .clock = &svc.clock, .key_base = svc.key_base,
        .default_rate = svc.cfg.default_rate, .default_burst = svc.cfg.default_burst,
        .secret_hasher = svc.secret_hasher, .route_labels = svc.route_labels,
        .route_count = svc.route_count};
    code = admin_run(&ctx, &inv);
    service_close(&svc);
    return code;
}
