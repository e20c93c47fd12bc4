/* taxctl/config: the configuration file `taxctl login` writes and every
 * other command reads: lines of key=value (url, client_id, client_secret,
 * tenant_id, ca_file), mode 0600, in $TAXCTL_CONFIG, else
 * $XDG_CONFIG_HOME/taxctl/config, else ~/.config/taxctl/config. */
#ifndef TAXCTL_CONFIG_H
#define TAXCTL_CONFIG_H

#include "taxctl.h"

typedef struct {
    char *url, *client_id, *client_secret, *tenant_id, *ca_file;
} taxctl_config;

/* The path the file is at (or would be written to), malloc'd. */
char *taxctl_config_path(const taxctl_globals *g);

/* Reads path into cfg (zeroed first). A missing file is an empty config
 * (true); false after printing why (unreadable, group/world-readable,
 * a malformed line). */
bool taxctl_config_read(const char *path, taxctl_config *cfg);

/* Writes cfg to path atomically with mode 0600 (its directory made 0700
 * when missing). False after printing why. */
bool taxctl_config_write(const char *path, const taxctl_config *cfg);

void taxctl_config_clear(taxctl_config *cfg);

#endif
