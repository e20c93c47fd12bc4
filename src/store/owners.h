/* store/owners.h: the tenant's account owners. Every lookup is scoped to a
 * tenant by the caller id, except store_owner_id_of, which translates a
 * service uuid (a reference held by another record) back to its caller id.
 *
 * The store never sees a clear TIN: callers seal it (core/tin.h) with the
 * tenant id and the owner's uuid as associated data and hand over the sealed
 * bytes. Optional text fields are "" when absent (stored as NULL), so the
 * API must refuse empty strings for them; the address is absent when
 * address_line1 is "". All outputs are written into caller-owned structs. */
#ifndef TAXD_STORE_OWNERS_H
#define TAXD_STORE_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_OWNER_TYPE_MAX 16       /* "individual" | "entity" */
#define STORE_COUNTRY_LEN 3           /* ISO 3166-1 alpha-2 plus the NUL */
#define STORE_TIN_TYPE_MAX 8          /* SSN, EIN, ITIN, ATIN, FOREIGN */
#define STORE_DATE_LEN 11             /* YYYY-MM-DD plus the NUL */
/* Text limits are in characters (UTF-8 code points, as the validator counts
 * them), so buffers hold four bytes per character plus the NUL. */
#define STORE_EMAIL_MAX (254 * 4 + 1)
#define STORE_POSTAL_CODE_MAX (4 * DOMAIN_POSTAL_CODE_MAX + 1)

typedef struct store_owner {
    char uuid[STORE_UUID_LEN];
    char id[STORE_ID_MAX];                     /* at most 256 bytes */
    char name[DOMAIN_NAME_SIZE];
    char account_owner_type[STORE_OWNER_TYPE_MAX];
    char tax_country_code[STORE_COUNTRY_LEN];   /* "" = none */
    uint8_t tin_sealed[STORE_TIN_SEALED_MAX];   /* tin_seal output */
    size_t tin_sealed_len;                      /* 0 = no TIN */
    char tin_type[STORE_TIN_TYPE_MAX];          /* "" = none */
    char birth_date[STORE_DATE_LEN];            /* "" = none */
    char email[STORE_EMAIL_MAX];                /* "" = none */
    char address_line1[DOMAIN_NAME_SIZE]; /* "" = no address at all */
    char address_line2[DOMAIN_NAME_SIZE];
    char address_city[DOMAIN_NAME_SIZE];
    char address_state[DOMAIN_NAME_SIZE];
    char address_postal_code[STORE_POSTAL_CODE_MAX];
    char address_country_code[STORE_COUNTRY_LEN];
    int64_t created_at;
    int64_t updated_at;
} store_owner_t;

/* Inserts owner for tenant_id (owner->uuid and the times set by the caller).
 * STORE_CONFLICT when the tenant already has an owner with owner->id (or the
 * uuid is taken); STORE_NOT_FOUND when the tenant does not exist. */
store_status_t store_owner_create(store_conn_t *conn, const char *tenant_id,
                                  const store_owner_t *owner);

/* store_owner_create and store_owner_update as steps of a larger write
 * (store_write), so the owner and what it causes (its TIN check) commit
 * together. Same results. */
store_status_t store_owner_create_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const store_owner_t *owner);
store_status_t store_owner_update_in_tx(store_conn_t *conn, const char *tenant_id,
                                        const store_owner_t *owner);

/* The tenant's owner with caller id `id` into *out; STORE_NOT_FOUND when the
 * tenant has none (another tenant's owner with that id is not found either). */
store_status_t store_owner_get(store_conn_t *conn, const char *tenant_id, const char *id,
                               store_owner_t *out);

/* Owners of a tenant ordered by caller id (bytewise), starting after after_id
 * (NULL or "" from the start), at most limit; each(owner, ctx) is called per
 * row (the struct is reused: copy what must outlive the call), a non-zero
 * return stops the walk. *more (may be NULL) tells whether rows follow the
 * last one delivered. */
store_status_t store_owner_list(store_conn_t *conn, const char *tenant_id, const char *after_id,
                                size_t limit, int (*each)(const store_owner_t *owner, void *ctx),
                                void *ctx, bool *more);

/* Replaces every field but uuid, id and created_at of the owner owner->uuid
 * within tenant_id with owner's values, updated_at included (the caller
 * passes the new time). STORE_NOT_FOUND when the tenant has no such owner. */
store_status_t store_owner_update(store_conn_t *conn, const char *tenant_id,
                                  const store_owner_t *owner);

/* The service uuid of the tenant's owner with caller id `id` (for records
 * that reference an owner). STORE_NOT_FOUND when the tenant has none. */
store_status_t store_owner_uuid(store_conn_t *conn, const char *tenant_id, const char *id,
                                char uuid[STORE_UUID_LEN]);

/* The caller id of the owner with service uuid owner_uuid (whatever its
 * tenant: the uuid came from a record the caller already scoped).
 * STORE_NOT_FOUND when no owner has it. */
store_status_t store_owner_id_of(store_conn_t *conn, const char *owner_uuid,
                                 char id[STORE_ID_MAX]);

#endif
