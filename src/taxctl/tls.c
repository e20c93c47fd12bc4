/* taxctl/tls: see tls.h. Files in the directory:
 *   ca.pem           the CA certificate (0644): give it to taxd
 *   ca-key.pem       the CA's key (0600): kept to re-issue server.pem
 *   server.pem       the server certificate (0644), SAN IP:127.0.0.1, DNS:localhost
 *   server-key.pem   its key (0600)
 * Each is written beside its final name and renamed into place, so a run
 * interrupted half-way never leaves a truncated file to be reused. */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CA_DAYS 3650
#define SERVER_DAYS 365
#define MIN_LEFT_S 86400  /* a certificate with less left than this is made again */
#define MAX_PEM_BYTES (1 << 20)

static bool failed(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool failed(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return false;
}

char *tls_default_dir(void)
{
    const char *base = getenv("XDG_CACHE_HOME");
    const char *suffix = "/taxctl/webhooks";
    if (base == NULL || base[0] == '\0') {
        base = getenv("HOME");
        suffix = "/.cache/taxctl/webhooks";
    }
    if (base == NULL || base[0] == '\0')
        return NULL;
    char *dir = NULL;
    return asprintf(&dir, "%s%s", base, suffix) < 0 ? NULL : dir;
}

/* mkdir -p, the last component 0700. */
static bool make_dirs(const char *dir, char *why, size_t why_len)
{
    char *copy = strdup(dir);
    if (copy == NULL)
        return failed(why, why_len, "out of memory");
    for (char *p = copy + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
            failed(why, why_len, "cannot create %s: %s", copy, strerror(errno));
            free(copy);
            return false;
        }
        *p = '/';
    }
    free(copy);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return failed(why, why_len, "cannot create %s: %s", dir, strerror(errno));
    return true;
}

static char *path_in(const char *dir, const char *name)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

/* ---- reading */

static char *read_text(const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        failed(why, why_len, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(MAX_PEM_BYTES + 1);
    size_t n = text != NULL ? fread(text, 1, MAX_PEM_BYTES + 1, f) : 0;
    bool bad = text == NULL || ferror(f) || n > MAX_PEM_BYTES;
    fclose(f);
    if (bad) {
        free(text);
        failed(why, why_len, "cannot read %s (or larger than 1 MiB)", path);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

static X509 *cert_from_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

static EVP_PKEY *key_from_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = b != NULL ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return k;
}

/* True when cert is valid now and for at least MIN_LEFT_S more. */
static bool still_valid(X509 *cert)
{
    time_t later = time(NULL) + MIN_LEFT_S;
    return X509_cmp_current_time(X509_get0_notBefore(cert)) < 0 &&
           X509_cmp_time(X509_get0_notAfter(cert), &later) > 0;
}

/* ---- writing */

static char *cert_to_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b != NULL && PEM_write_bio_X509(b, x) == 1) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        out = strndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

static char *key_to_pem(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b != NULL && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) == 1) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        out = strndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

/* Writes text to dir/name with mode, through a temporary file renamed into place. */
static bool write_file(const char *dir, const char *name, const char *text, mode_t mode, char *why,
                       size_t why_len)
{
    char *path = path_in(dir, name), *tmp = NULL;
    if (path == NULL || asprintf(&tmp, "%s.tmp", path) < 0) {
        free(path);
        return failed(why, why_len, "out of memory");
    }
    bool ok = false;
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) {
        size_t len = strlen(text);
        ok = fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
        ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    }
    if (!ok) {
        failed(why, why_len, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    free(path);
    return ok;
}

/* ---- making */

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    bool ok = ext != NULL && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static bool set_random_serial(X509 *cert)
{
    BIGNUM *bn = BN_new();
    bool ok = bn != NULL && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
              BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
    BN_free(bn);
    return ok;
}

/* A v3 certificate for key named cn, valid from an hour ago for days,
 * with its subject key id; issuer NULL: self-signed. Not signed yet. */
static X509 *cert_skeleton(EVP_PKEY *key, const char *cn, X509 *issuer, int days)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    bool ok = x != NULL && name != NULL && X509_set_version(x, 2) == 1 && set_random_serial(x) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL &&
              X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) != NULL &&
              X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"taxctl",
                                         -1, -1, 0) == 1 &&
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
                                         -1, 0) == 1 &&
              X509_set_subject_name(x, name) == 1 &&
              X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) : name) == 1 &&
              X509_set_pubkey(x, key) == 1 && add_ext(x, issuer != NULL ? issuer : x,
                                                      NID_subject_key_identifier, "hash");
    X509_NAME_free(name);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static X509 *make_ca(EVP_PKEY *key)
{
    X509 *x = cert_skeleton(key, "taxctl webhooks local CA", NULL, CA_DAYS);
    if (x != NULL && add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") &&
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
        X509_sign(x, key, EVP_sha256()) > 0)
        return x;
    X509_free(x);
    return NULL;
}

static X509 *make_server(EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key)
{
    X509 *x = cert_skeleton(key, "localhost", ca, SERVER_DAYS);
    if (x != NULL && add_ext(x, ca, NID_authority_key_identifier, "keyid:always") &&
        add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") &&
        add_ext(x, ca, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
        add_ext(x, ca, NID_ext_key_usage, "serverAuth") &&
        add_ext(x, ca, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost") &&
        X509_sign(x, ca_key, EVP_sha256()) > 0)
        return x;
    X509_free(x);
    return NULL;
}

/* ---- the pair of the directory */

typedef struct {
    X509 *cert;
    EVP_PKEY *key;
} pair;

static void pair_free(pair *p)
{
    X509_free(p->cert);
    EVP_PKEY_free(p->key);
    p->cert = NULL;
    p->key = NULL;
}

/* dir/cert_name and dir/key_name when both read, match and are still valid. */
static bool load_pair(const char *dir, const char *cert_name, const char *key_name, pair *out)
{
    char why[256];
    char *cp = path_in(dir, cert_name), *kp = path_in(dir, key_name);
    char *cert_pem = cp != NULL ? read_text(cp, why, sizeof why) : NULL;
    char *key_pem = kp != NULL ? read_text(kp, why, sizeof why) : NULL;
    free(cp);
    free(kp);
    out->cert = cert_pem != NULL ? cert_from_pem(cert_pem) : NULL;
    out->key = key_pem != NULL ? key_from_pem(key_pem) : NULL;
    free(cert_pem);
    if (key_pem != NULL)
        OPENSSL_cleanse(key_pem, strlen(key_pem));
    free(key_pem);
    if (out->cert != NULL && out->key != NULL && still_valid(out->cert) &&
        X509_check_private_key(out->cert, out->key) == 1)
        return true;
    pair_free(out);
    return false;
}

static bool save_pair(const char *dir, const char *cert_name, const char *key_name, pair *p,
                      char *why, size_t why_len)
{
    char *cert_pem = cert_to_pem(p->cert), *key_pem = key_to_pem(p->key);
    bool ok = cert_pem != NULL && key_pem != NULL;
    if (!ok)
        failed(why, why_len, "cannot encode a certificate");
    /* the key first: a certificate on disk never lacks its key */
    ok = ok && write_file(dir, key_name, key_pem, 0600, why, why_len) &&
         write_file(dir, cert_name, cert_pem, 0644, why, why_len);
    free(cert_pem);
    if (key_pem != NULL)
        OPENSSL_cleanse(key_pem, strlen(key_pem));
    free(key_pem);
    return ok;
}

static bool new_ca(const char *dir, pair *ca, char *why, size_t why_len)
{
    ca->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ca->cert = ca->key != NULL ? make_ca(ca->key) : NULL;
    if (ca->cert == NULL) {
        pair_free(ca);
        return failed(why, why_len, "OpenSSL could not make a CA certificate");
    }
    return save_pair(dir, "ca.pem", "ca-key.pem", ca, why, why_len);
}

static bool new_server(const char *dir, pair *ca, pair *server, char *why, size_t why_len)
{
    server->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    server->cert = server->key != NULL ? make_server(server->key, ca->cert, ca->key) : NULL;
    if (server->cert == NULL) {
        pair_free(server);
        return failed(why, why_len, "OpenSSL could not make a server certificate");
    }
    return save_pair(dir, "server.pem", "server-key.pem", server, why, why_len);
}

static bool signed_by(X509 *cert, X509 *ca)
{
    return X509_verify(cert, X509_get0_pubkey(ca)) == 1 &&
           X509_check_issued(ca, cert) == X509_V_OK;
}

bool tls_local(const char *dir, tls_material *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (!make_dirs(dir, why, why_len))
        return false;
    pair ca = {0}, server = {0};
    bool ok = true;
    if (!load_pair(dir, "ca.pem", "ca-key.pem", &ca)) {
        ok = new_ca(dir, &ca, why, why_len);
        out->made = true;
    }
    if (ok && (!load_pair(dir, "server.pem", "server-key.pem", &server) ||
               !signed_by(server.cert, ca.cert))) {
        pair_free(&server);
        ok = new_server(dir, &ca, &server, why, why_len);
        out->made = true;
    }
    if (ok) {
        out->cert_pem = cert_to_pem(server.cert);
        out->key_pem = key_to_pem(server.key);
        out->ca_path = path_in(dir, "ca.pem");
        if (out->cert_pem == NULL || out->key_pem == NULL || out->ca_path == NULL)
            ok = failed(why, why_len, "out of memory");
    }
    pair_free(&ca);
    pair_free(&server);
    if (!ok)
        tls_material_clear(out);
    return ok;
}

bool tls_from_files(const char *cert_file, const char *key_file, tls_material *out, char *why,
                    size_t why_len)
{
    memset(out, 0, sizeof *out);
    out->cert_pem = read_text(cert_file, why, why_len);
    out->key_pem = out->cert_pem != NULL ? read_text(key_file, why, why_len) : NULL;
    if (out->key_pem == NULL) {
        tls_material_clear(out);
        return false;
    }
    X509 *cert = cert_from_pem(out->cert_pem);
    EVP_PKEY *key = key_from_pem(out->key_pem);
    bool ok = cert != NULL && key != NULL && X509_check_private_key(cert, key) == 1;
    if (!ok)
        failed(why, why_len, "%s", cert == NULL  ? "--cert: not a PEM certificate"
                                   : key == NULL ? "--key: not a PEM private key (unencrypted)"
                                                 : "--key is not the key of --cert");
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!ok)
        tls_material_clear(out);
    return ok;
}

void tls_material_clear(tls_material *m)
{
    if (m == NULL)
        return;
    if (m->key_pem != NULL)
        OPENSSL_cleanse(m->key_pem, strlen(m->key_pem));
    free(m->key_pem);
    free(m->cert_pem);
    free(m->ca_path);
    memset(m, 0, sizeof *m);
}
