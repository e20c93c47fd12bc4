/* api/owner_tin: what an account owner's write does for its TIN check
 * (spec § Events: ACCOUNT_OWNER_TIN_VALIDATION), kept out of
 * account_owners.c so the owner handlers only take a snapshot before a
 * change and call one write function.
 *
 * A check is queued, in the same transaction as the owner's row, when the
 * owner is created with a TIN, or when an update changes the TIN text, its
 * tin_type or the name (the matcher pairs the name with the TIN, so a new
 * name needs a new answer). An update that removes the TIN retires the
 * owner's unfinished checks, so no stale result is ever delivered. Any other
 * update queues nothing. */
#ifndef TAXD_API_OWNER_TIN_H
#define TAXD_API_OWNER_TIN_H

#include <stdbool.h>

#include "core/tin.h"
#include "http/request.h"
#include "store/owners.h"

/* What of an owner a TIN check depends on, in clear: wipe it after use. */
typedef struct owner_tin {
    bool has_tin;
    char tin[TIN_MAX];
    char tin_type[STORE_TIN_TYPE_MAX];
    char name[DOMAIN_NAME_SIZE];
} owner_tin_t;

/* Fills *out from the stored owner (its sealed TIN opened). Returns 0, or -1
 * when the sealed TIN does not open. */
int owner_tin_snapshot(request_t *req, const store_owner_t *owner, owner_tin_t *out);
void owner_tin_wipe(owner_tin_t *snapshot);

/* Creates (before == NULL) or updates owner, queueing or retiring its TIN
 * check in the same transaction as described above, and wakes the engines
 * when a check was queued. Returns the store's status (STORE_CONFLICT,
 * STORE_NOT_FOUND as store_owner_create / store_owner_update). When a step
 * outside the store fails first (the stored TIN does not open, no uuid, the
 * TIN cannot be sealed), nothing is written, *failed names the step (a
 * static phrase for api_internal_error) and STORE_ERROR is returned;
 * *failed stays NULL otherwise. */
store_status_t owner_tin_write(request_t *req, const store_owner_t *owner,
                               const owner_tin_t *before, const char **failed);

#endif
