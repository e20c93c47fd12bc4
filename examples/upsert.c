/* examples/upsert: the smallest useful program on libtaxdclient.
 *
 * Reads transactions in the API's JSON model, one per line of standard
 * input, upserts each, and prints one line per transaction: its outcome, or
 * why it was refused. Then prints the tenant's first page of accounts.
 *
 *   cc upsert.c $(pkg-config --cflags --libs taxdclient) -o upsert
 *   TAXD_URL=http://127.0.0.1:8080 TAXD_CLIENT_ID=... TAXD_CLIENT_SECRET=... \
 *     ./upsert < transactions.jsonl
 *
 * Tokens, their refresh, 429 waits and retries of failed attempts are the
 * library's business: the program only looks at outcomes. Exit status 0
 * when every line was written, 1 when some were refused, 3 when the service
 * could not be reached. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <taxd/client.h>

static const char *outcome_name(taxd_tx_outcome outcome)
{
    switch (outcome) {
    case TAXD_TX_CREATED: return "created";
    case TAXD_TX_UPDATED: return "updated";
    case TAXD_TX_UNCHANGED: return "unchanged";
    case TAXD_TX_REFUSED: return "refused";
    }
    return "?";
}

/* Upserts every line of in; returns the exit status. */
static int upsert_lines(taxd_client *client, FILE *in)
{
    char *line = NULL;
    size_t cap = 0;
    int status = 0;
    for (long lineno = 1; getline(&line, &cap, in) > 0; lineno++) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
            continue;
        taxd_tx_result result = {0};
        taxd_error err = {0};
        if (taxd_tx_upsert(client, line, &result, &err) != TAXD_OK) {
            fprintf(stderr, "line %ld: %s (status %d, request id %s)\n", lineno,
                    err.message ? err.message : taxd_code_name(err.code), err.status,
                    err.request_id ? err.request_id : "-");
            taxd_error_clear(&err);
            free(line);
            return 3;
        }
        printf("line %ld: %s", lineno, outcome_name(result.outcome));
        if (result.outcome == TAXD_TX_REFUSED) {
            printf(" (%d): %s", result.http_status, result.message ? result.message : "");
            status = 1;
        }
        printf("\n");
        taxd_tx_result_clear(&result);
    }
    free(line);
    return status;
}

static bool print_page(void *userdata, const char *data_json)
{
    (void)userdata;
    printf("accounts: %s\n", data_json);
    return false; /* the first page is enough for an example */
}

int main(void)
{
    taxd_client_options options = {
        .base_url = getenv("TAXD_URL"),
        .client_id = getenv("TAXD_CLIENT_ID"),
        .client_secret = getenv("TAXD_CLIENT_SECRET"),
    };
    taxd_error err = {0};
    if (taxd_global_init() != TAXD_OK)
        return 3;
    taxd_client *client = taxd_client_new(&options, &err);
    if (!client) {
        fprintf(stderr, "upsert: %s (set TAXD_URL, TAXD_CLIENT_ID, TAXD_CLIENT_SECRET)\n",
                err.message ? err.message : taxd_code_name(err.code));
        taxd_error_clear(&err);
        return 2;
    }
    int status = upsert_lines(client, stdin);
    taxd_code listed = taxd_list(client, "/v1/accounts?limit=10", print_page, NULL, &err);
    if (listed != TAXD_OK && listed != TAXD_E_ABORTED) {
        fprintf(stderr, "accounts: %s\n", err.message ? err.message : taxd_code_name(err.code));
        status = status ? status : 3;
    }
    taxd_error_clear(&err);
    taxd_client_free(client);
    return status;
}
