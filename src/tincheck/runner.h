/* tincheck/runner: the TIN check engine. Each step claims one pending check
 * from the queue (store/tinchecks.h) with a lease, opens its sealed TIN,
 * applies the structural rules (tincheck/rules.h) and then the matcher
 * (tincheck/matcher.h), and records the result together with its event in
 * one transaction:
 *   rttm              -> RTTM_TIN_VALIDATION
 *   account_owner     -> ACCOUNT_OWNER_TIN_VALIDATION
 *   tax_documentation -> taxdocs_record_tin_result_in_tx (its own events)
 * A worker killed mid-check loses nothing: the lease ends and another worker
 * (in any process sharing the database) takes the check again.
 *
 * Result statuses (docs/decisions.md § TIN validations):
 *   PENDING         queued or being checked (never an event's status)
 *   VALID           the rules pass and the matcher pairs the name with the TIN
 *   INVALID_FORMAT  a structural rule fails (or tin_type is unknown)
 *   MISMATCH        the rules pass but the matcher does not pair them
 *   FOREIGN         a well-formed foreign TIN: not matched against the US list
 *   ERROR           the stored TIN could not be opened (key file replaced)
 */
#ifndef TAXD_TINCHECK_RUNNER_H
#define TAXD_TINCHECK_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "store/store.h"
#include "tincheck/matcher.h"

#define TINCHECK_PENDING "PENDING"
#define TINCHECK_VALID "VALID"
#define TINCHECK_INVALID_FORMAT "INVALID_FORMAT"
#define TINCHECK_MISMATCH "MISMATCH"
#define TINCHECK_FOREIGN "FOREIGN"
#define TINCHECK_ERROR "ERROR"

typedef struct tincheck_runner tincheck_runner_t;

/* What the engine needs. The runner keeps a copy; every pointer is
 * borrowed and outlives it. */
typedef struct tincheck_runner_config {
    store_t *store;
    const taxd_clock_t *clock;    /* the service clock: validated_at, events */
    const uint8_t *tin_key;       /* CRYPTO_AEAD_KEY_LEN bytes: opens the sealed TINs */
    const char *instance_id;      /* names this process in claim tokens */
    const char *match_file;       /* the list matcher's TIN,name list ("" = none) */
    int64_t lease_ms;             /* a claimed check's lease */
    int64_t test_pause_ms;        /* tests only: hold each claimed check this long; 0 = never */
    const _Atomic bool *stopping; /* the process is stopping: end a pause early */
    /* A result and its events were committed: wake this process's
     * dispatcher. NULL: nobody to wake. */
    void (*wake)(void *wake_arg);
    void *wake_arg;
} tincheck_runner_config_t;

/* The engine's shared state with the list matcher of cfg->match_file.
 * NULL with *err malloc'd when the file cannot be read. Free with
 * tincheck_runner_free (after the engine's threads stopped). */
tincheck_runner_t *tincheck_runner_new(const tincheck_runner_config_t *cfg, char **err);
/* The same with another matcher (cfg->match_file is not read), whose
 * ownership passes to the runner (it is freed with it, also on failure). */
tincheck_runner_t *tincheck_runner_new_with(const tincheck_runner_config_t *cfg,
                                            tincheck_matcher_t matcher, char **err);
void tincheck_runner_free(tincheck_runner_t *runner);

/* The result of checking a clear TIN: one of the statuses above except
 * PENDING and ERROR, or NULL when the matcher asked to retry later. Pure
 * apart from the matcher; tests call it directly. */
const char *tincheck_evaluate(const tincheck_matcher_t *matcher, const char *tin_type,
                              const char *tin, const char *name);

/* One step of the engine's worker thread: claims, checks and records one
 * check; returns the ms to wait before the next step (0: go on at once). */
int64_t tincheck_runner_step(tincheck_runner_t *runner, unsigned thread_index);

#endif
