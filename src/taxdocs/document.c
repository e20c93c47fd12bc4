/* taxdocs/document: see document.h. The sealed document's associated data
 * is "taxdoc:<tenant>:<id>", as taxdocs/submit.c seals it. */
#include "taxdocs/document.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "core/log.h"
#include "core/tin.h"
#include "taxdocs/comprehensive.h"

void taxdocs_document_close(taxdocs_document_t *d)
{
    json_decref(d->native);
    json_decref(d->comprehensive);
    d->native = d->comprehensive = NULL;
}

static json_t *open_sealed(const uint8_t *key, const char *tenant_id, const char *id,
                           const uint8_t *sealed, size_t len)
{
    if (len < CRYPTO_AEAD_OVERHEAD)
        return NULL;
    char aad[96];
    snprintf(aad, sizeof aad, "taxdoc:%s:%s", tenant_id, id);
    size_t plain_len = len - CRYPTO_AEAD_OVERHEAD;
    char *plain = malloc(plain_len + 1);
    if (plain == NULL)
        return NULL;
    json_t *doc = NULL;
    if (crypto_aead_open(key, aad, strlen(aad), sealed, len, (uint8_t *)plain) == 0)
        doc = json_loadb(plain, plain_len, 0, NULL);
    explicit_bzero(plain, plain_len);
    free(plain);
    return doc;
}

/* A native W-9 is kept without its TIN, which is sealed apart. */
static int put_tin_back(const uint8_t *key, const char *tenant_id, taxdocs_document_t *d,
                        const uint8_t *tin_sealed, size_t tin_len)
{
    if (d->type != TAXDOCS_W9)
        return 0;
    char tin[TIN_MAX];
    if (tin_sealed == NULL || tin_open(key, tenant_id, d->row.id, tin_sealed, tin_len, tin) != 0)
        return -1;
    int rc = json_object_set_new(d->native, "tin", json_string(tin));
    explicit_bzero(tin, sizeof tin);
    return rc;
}

static int derive_native(taxdocs_document_t *d)
{
    json_t *issues = json_array();
    taxdocs_comprehensive_t c = {0};
    size_t n = issues != NULL
                   ? taxdocs_comprehensive_check(d->comprehensive, d->row.created_at, issues, &c)
                   : 1;
    json_decref(issues);
    if (n > 0)
        return -1;
    d->native = c.native;
    c.native = NULL;
    d->type = c.type;
    snprintf(d->signature, sizeof d->signature, "%s", c.signature);
    taxdocs_comprehensive_clear(&c);
    return 0;
}

static int fill(const uint8_t *key, const char *tenant_id, taxdocs_document_t *d,
                const uint8_t *doc, size_t doc_len, const uint8_t *tin, size_t tin_len)
{
    json_t *opened = open_sealed(key, tenant_id, d->row.id, doc, doc_len);
    if (opened == NULL || !taxdocs_type_parse(d->row.document_type, &d->type)) {
        json_decref(opened);
        return -1;
    }
    if (strcmp(d->row.model, "comprehensive") == 0) {
        d->comprehensive = opened;
        return derive_native(d);
    }
    d->native = opened;
    if (put_tin_back(key, tenant_id, d, tin, tin_len) != 0)
        return -1;
    d->comprehensive = taxdocs_comprehensive_from_native(d->type, d->native);
    return d->comprehensive != NULL ? 0 : -1;
}

store_status_t taxdocs_document_open(store_conn_t *conn, const uint8_t *tin_key,
                                     const char *tenant_id, const char *id,
                                     taxdocs_document_t *out)
{
    memset(out, 0, sizeof *out);
    uint8_t *doc = NULL, *tin = NULL;
    size_t doc_len = 0, tin_len = 0;
    store_status_t st =
        store_taxdoc_sealed(conn, tenant_id, id, &out->row, &doc, &doc_len, &tin, &tin_len);
    if (st == STORE_OK && fill(tin_key, tenant_id, out, doc, doc_len, tin, tin_len) != 0) {
        log_event(LOG_ERROR, "tax documentation: a stored submission could not be opened",
                  json_pack("{s:s}", "tax_documentation_id", id));
        taxdocs_document_close(out);
        st = STORE_ERROR;
    }
    free(doc);
    free(tin);
    return st;
}
