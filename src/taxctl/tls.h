/* taxctl/tls: the certificate `taxctl webhooks listen` serves. taxd delivers
 * only to https URLs and checks the receiver's certificate against the CA
 * file it was given (--webhook-ca-file), so a local receiver needs a CA of
 * its own: tls_local makes one and a server certificate for 127.0.0.1 and
 * localhost with OpenSSL (EC P-256, SHA-256), keeps them in a directory
 * (private keys mode 0600) and reuses them while they are valid, so that
 * taxd keeps trusting the same CA file from one run to the next.
 * tls_from_files takes the user's own certificate and key instead. */
#ifndef TAXCTL_TLS_H
#define TAXCTL_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* PEM text for MHD_OPTION_HTTPS_MEM_CERT / _KEY. Every field is malloc'd
 * and released by tls_material_clear. */
typedef struct {
    char *cert_pem;   /* the server certificate */
    char *key_pem;    /* its private key */
    char *ca_path;    /* the CA file to give taxd; NULL for the user's files */
    bool made;        /* tls_local made new files (false: reused them) */
} tls_material;

/* The default directory: $XDG_CACHE_HOME/taxctl/webhooks, else
 * ~/.cache/taxctl/webhooks. malloc'd; NULL when neither variable is set. */
char *tls_default_dir(void);

/* Loads dir's CA and server certificate, or makes what is missing or no
 * longer valid (expired within a day, a key that does not match, a server
 * certificate the CA did not sign): a CA still valid is kept, so only the
 * server certificate is re-issued under it. dir is created (0700) when
 * missing. False with why filled on failure. */
bool tls_local(const char *dir, tls_material *out, char *why, size_t why_len);

/* Reads cert_file and key_file (PEM) and checks that the key is the
 * certificate's. False with why filled on failure. */
bool tls_from_files(const char *cert_file, const char *key_file, tls_material *out, char *why,
                    size_t why_len);

void tls_material_clear(tls_material *m);

#endif
