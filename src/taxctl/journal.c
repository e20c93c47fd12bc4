/* taxctl/journal: see journal.h. */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#define MAGIC "taxctl-journal 1\n"

struct journal {
    int fd;
    struct noted {
        long line;
        char outcome;
    } *noted;
    size_t n, cap;
    char *text;     /* the record being written */
    size_t text_cap;
};

void journal_identity_of(const void *data, size_t len, journal_identity *id)
{
    unsigned char md[32];
    unsigned int md_len = 0;
    EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL);
    id->size = len;
    for (unsigned i = 0; i < 32; i++)
        snprintf(id->sha256 + 2 * i, 3, "%02x", md[i]);
}

bool journal_prior_done(const journal_prior *p, long line)
{
    return p->done && line >= 0 && line <= p->max_line && (p->done[line / 8] >> (line % 8)) & 1;
}

void journal_prior_free(journal_prior *p)
{
    free(p->done);
    memset(p, 0, sizeof *p);
}

static bool mark(journal_prior *p, long first, long last, char outcome)
{
    if (last > p->max_line) {
        long max = p->max_line ? p->max_line : 1024;
        while (max < last)
            max *= 2;
        uint8_t *d = realloc(p->done, (size_t)max / 8 + 1);
        if (!d)
            return false;
        size_t old = p->done ? (size_t)p->max_line / 8 + 1 : 0;
        memset(d + old, 0, (size_t)max / 8 + 1 - old);
        p->done = d;
        p->max_line = max;
    }
    for (long l = first; l <= last; l++) {
        if ((p->done[l / 8] >> (l % 8)) & 1)
            continue; /* a line answered twice (a resend) counts once */
        p->done[l / 8] |= (uint8_t)(1u << (l % 8));
        long *count = outcome == 'c' ? &p->created : outcome == 'u' ? &p->updated
                    : outcome == 'n' ? &p->unchanged : &p->refused;
        (*count)++;
    }
    return true;
}

/* One record's runs into prior; false when it is not one. */
static bool read_record(char *line, journal_prior *prior)
{
    for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
        char o = tok[0], *end;
        if (!strchr("cunr", o) || !o)
            return false;
        long first = strtol(tok + 1, &end, 10), last = first;
        if (*end == '-')
            last = strtol(end + 1, &end, 10);
        if (*end || first < 1 || last < first || !mark(prior, first, last, o))
            return false;
    }
    return true;
}

/* Reads an existing journal: 1 same file (prior filled), 0 another file or
 * not a journal (msg says which), -1 unreadable. *valid_len is the length
 * up to the last whole line. */
static int read_existing(int fd, const journal_identity *id, journal_prior *prior, off_t *valid_len,
                         char *msg, size_t msg_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    char *text = malloc((size_t)st.st_size + 1);
    if (!text)
        return -1;
    ssize_t got = pread(fd, text, (size_t)st.st_size, 0);
    if (got != st.st_size) {
        free(text);
        return -1;
    }
    text[got] = '\0';
    char header[128];
    snprintf(header, sizeof header, MAGIC "file %llu %s\n", (unsigned long long)id->size, id->sha256);
    int rc = 1;
    if (strncmp(text, MAGIC, strlen(MAGIC)) != 0) {
        snprintf(msg, msg_len, "it is not a taxctl journal");
        rc = 0;
    } else if (strncmp(text, header, strlen(header)) != 0) {
        snprintf(msg, msg_len, "it belongs to another version of the file (its size or content changed)");
        rc = 0;
    }
    char *p = text + strlen(header), *nl;
    *valid_len = (off_t)(p - text);
    while (rc == 1 && (nl = strchr(p, '\n')) != NULL) {
        *nl = '\0';
        if (!read_record(p, prior)) {
            snprintf(msg, msg_len, "a record is unreadable: %.60s", p);
            rc = 0;
        }
        p = nl + 1;
        *valid_len = (off_t)(p - text);
    }
    free(text);
    return rc;
}

static bool write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

static bool start_over(int fd, const journal_identity *id)
{
    char header[160];
    int n = snprintf(header, sizeof header, MAGIC "file %llu %s\n", (unsigned long long)id->size,
                     id->sha256);
    return ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0 && write_all(fd, header, (size_t)n) &&
           fsync(fd) == 0;
}

journal *journal_open(const char *path, const journal_identity *id, bool restart,
                      journal_prior *prior, char *msg, size_t msg_len)
{
    memset(prior, 0, sizeof *prior);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(msg, msg_len, "cannot open the journal %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    bool fresh = st.st_size == 0 || restart;
    if (!fresh) {
        off_t valid = 0;
        char why[160] = "";
        int rc = read_existing(fd, id, prior, &valid, why, sizeof why);
        if (rc <= 0) {
            snprintf(msg, msg_len, rc < 0 ? "cannot read the journal %s" :
                     "the journal %s does not match the file: %s; run with --restart to import "
                     "the file from its first line (the journal is then started over)", path, why);
            journal_prior_free(prior);
            close(fd);
            return NULL;
        }
        if (ftruncate(fd, valid) != 0 || lseek(fd, 0, SEEK_END) < 0) { /* cut a torn record */
            snprintf(msg, msg_len, "cannot write the journal %s: %s", path, strerror(errno));
            journal_prior_free(prior);
            close(fd);
            return NULL;
        }
    } else if (!start_over(fd, id)) {
        snprintf(msg, msg_len, "cannot write the journal %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    journal *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(msg, msg_len, "out of memory");
        journal_prior_free(prior);
        close(fd);
        return NULL;
    }
    j->fd = fd;
    return j;
}

void journal_note(journal *j, long line, char outcome)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 1024;
        struct noted *n = realloc(j->noted, cap * sizeof *n);
        if (!n)
            return; /* not journaled: the line is sent again by a rerun, which is safe */
        j->noted = n;
        j->cap = cap;
    }
    j->noted[j->n++] = (struct noted){line, outcome};
}

static int by_line(const void *a, const void *b)
{
    long x = ((const struct noted *)a)->line, y = ((const struct noted *)b)->line;
    return (x > y) - (x < y);
}

bool journal_commit(journal *j)
{
    if (j->n == 0)
        return true;
    qsort(j->noted, j->n, sizeof *j->noted, by_line);
    size_t need = j->n * 44 + 2, at = 0;
    if (need > j->text_cap) {
        char *t = realloc(j->text, need);
        if (!t)
            return false;
        j->text = t;
        j->text_cap = need;
    }
    for (size_t i = 0; i < j->n;) {
        size_t k = i; /* a run: consecutive lines, one outcome */
        while (k + 1 < j->n && j->noted[k + 1].line == j->noted[k].line + 1 &&
               j->noted[k + 1].outcome == j->noted[i].outcome)
            k++;
        if (k == i)
            at += (size_t)sprintf(j->text + at, "%s%c%ld", i ? " " : "", j->noted[i].outcome, j->noted[i].line);
        else
            at += (size_t)sprintf(j->text + at, "%s%c%ld-%ld", i ? " " : "", j->noted[i].outcome,
                                  j->noted[i].line, j->noted[k].line);
        i = k + 1;
    }
    j->text[at++] = '\n';
    j->n = 0;
    return write_all(j->fd, j->text, at) && fdatasync(j->fd) == 0;
}

void journal_close(journal *j)
{
    if (!j)
        return;
    close(j->fd);
    free(j->noted);
    free(j->text);
    free(j);
}
