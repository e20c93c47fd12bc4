/* admin/cli: what every operator command shares: the context it runs in,
 * its arguments, the flag checks (a typo is an error, never silently
 * ignored), and the output contract: one JSON document on stdout on
 * success, {"error": ...} on stderr and a non-zero exit status otherwise. */
#ifndef TAXD_ADMIN_CLI_H
#define TAXD_ADMIN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "store/store.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 2

/* What the commands work with, built by the composition root (app/admin.c);
 * every pointer is borrowed and outlives the command. */
typedef struct admin_context {
    store_t *store;                         /* open and migrated */
    const taxd_clock_t *clock;              /* "now" of everything a command writes */
    const char *key_base;                   /* key files are named from it (keys_path) */
    uint32_t default_rate, default_burst;   /* the rate limit without a rule of its own */
    const crypto_hmac_key_t *secret_hasher; /* keyed hash of client secrets */
    const char *const *route_labels;        /* "METHOD /template" of every route */
    size_t route_count;
} admin_context_t;

/* The words after the command's name: "--name value" pairs, and switches
 * (flags without a value) where a command allows them. */
typedef struct args {
    int argc;
    char **argv;
} args_t;

/* Prints {"error": message} on stderr; returns code. */
int admin_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints doc (stolen) compactly on stdout; 0, or EXIT_REFUSED when it cannot. */
int admin_print_json(json_t *doc);
/* "<what> failed: <status>", EXIT_REFUSED. */
int admin_store_failed(store_status_t rc, const char *what);

/* Checks that every word is a flag of `allowed` (NULL-terminated) followed
 * by a value, or a switch of `switches` (NULL-terminated, may be NULL).
 * 0, or EXIT_USAGE after reporting the problem. */
int admin_check_flags(const args_t *a, const char *const *allowed, const char *const *switches);
/* The value of flag `name`, or NULL. Switches are skipped when they are in
 * `switches` (may be NULL). */
const char *admin_flag_in(const args_t *a, const char *name, const char *const *switches);
const char *admin_flag(const args_t *a, const char *name);
/* True when switch `name` is present (after admin_check_flags). */
bool admin_switch(const args_t *a, const char *name, const char *const *switches);

#endif
