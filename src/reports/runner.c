/* reports/runner: being written (placeholder: finds no work). */
#include "reports/runner.h"

int64_t report_runner_step(service_t *svc, unsigned thread_index)
{
    (void)svc;
    (void)thread_index;
    return 1000;
}
