/* forms/regen: the engine that keeps generated tax forms current (issue 16).
 *
 * Each step, on the service clock:
 *  1. flags every Filed form whose account changed since its content was
 *     computed (tax_forms.correction_needed = 1): a filed form is never
 *     rewritten; the flag lists it as needing a corrected form;
 *  2. regenerates each Generated 1099_DA and GAIN_LOSS_SUMMARY form whose
 *     account's inventory_version moved past the form's source_version and
 *     that was generated at least FORMS_REGEN_MIN_INTERVAL_MS ago, through
 *     forms_regenerate: the same content, write and FORM_STATUS_UPDATE as a
 *     manual `taxd admin forms generate` (same form_id). The interval bounds
 *     the work and the events to one regeneration per form per 10 minutes
 *     however often an account changes.
 * Safe to run in many processes at once: a regeneration only writes when
 * the form is still Generated with the generated_at it was seen with, so two
 * workers never both refresh (nor both emit for) one change. */
#ifndef TAXD_FORMS_REGEN_H
#define TAXD_FORMS_REGEN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "store/store.h"

#define FORMS_REGEN_MIN_INTERVAL_MS (10 * 60 * 1000)

/* What the engine needs; every pointer is borrowed and outlives it. */
typedef struct forms_regen_config {
    store_t *store;
    const taxd_clock_t *clock;    /* generated_at and the interval: the service clock */
    bool test_hooks;              /* look every 200 ms instead of every 30 s */
    const _Atomic bool *stopping; /* the process is stopping: end between forms */
} forms_regen_config_t;

/* One pass (one step of the engine's worker thread); returns the ms until
 * the next pass. */
int64_t forms_regen_step(const forms_regen_config_t *cfg, unsigned thread_index);

#endif
