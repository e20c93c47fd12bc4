/* store/filers.h: creating, changing and deleting a tenant's filers (the
 * record, store_filer_get and store_filer_list are in store/store.h). Every
 * call is scoped to a tenant, so another tenant's filer is never found.
 *
 * The store never sees a clear TIN: callers seal it (core/tin.h) with the
 * tenant id and the filer's uuid as associated data and hand over the sealed
 * bytes. All outputs are written into caller-owned structs. */
#ifndef TAXD_STORE_FILERS_H
#define TAXD_STORE_FILERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Inserts filer for tenant_id (uuid, times and sealed TIN set by the caller;
 * filer->is_default must be false: a tenant's default filer is made only
 * with the tenant). STORE_CONFLICT when the tenant already has a filer with
 * filer->id (or the uuid is taken); STORE_NOT_FOUND when the tenant does not
 * exist. */
store_status_t store_filer_create(store_conn_t *conn, const char *tenant_id,
                                  const store_filer_t *filer);

/* What a merge patch does to the TIN. */
typedef enum store_filer_tin_change {
    STORE_FILER_TIN_KEEP = 0,
    STORE_FILER_TIN_CLEAR,
    STORE_FILER_TIN_SET, /* to tin_sealed, sealed for this filer's uuid */
} store_filer_tin_change_t;

typedef struct store_filer_patch {
    const char *name;              /* NULL keeps the name */
    store_filer_tin_change_t tin;
    const uint8_t *tin_sealed;     /* STORE_FILER_TIN_SET only */
    size_t tin_sealed_len;         /* 1..STORE_TIN_SEALED_MAX */
    int64_t updated_at;
} store_filer_patch_t;

/* Applies patch to the filer with service uuid `uuid` within tenant_id and
 * writes the stored result into *out. Keyed by uuid, not caller id, because
 * a TIN is sealed for one uuid: a filer deleted and re-created under the
 * same caller id since the caller read it is left alone (STORE_NOT_FOUND,
 * as for a filer that does not exist). */
store_status_t store_filer_update(store_conn_t *conn, const char *tenant_id, const char *uuid,
                                  const store_filer_patch_t *patch, store_filer_t *out);

/* Why a filer may not be deleted (spec: 409 for the default filer or a
 * filer that has accounts). */
typedef enum store_filer_refusal {
    STORE_FILER_DELETABLE = 0,
    STORE_FILER_IS_DEFAULT,
    STORE_FILER_HAS_ACCOUNTS,
} store_filer_refusal_t;

/* Deletes the tenant's filer with caller id `id`. STORE_NOT_FOUND when there
 * is none; STORE_CONFLICT with *refusal set when it is the default filer or
 * any account references it (checked in the same write transaction as the
 * delete, so no account can appear in between). *refusal is
 * STORE_FILER_DELETABLE on any other outcome. */
store_status_t store_filer_delete(store_conn_t *conn, const char *tenant_id, const char *id,
                                  store_filer_refusal_t *refusal);

#endif
