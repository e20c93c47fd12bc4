/* webhook_curl_loop: the bare reference of `make bench-webhooks`: a libcurl
 * multi loop POSTing the same body as taxd's deliveries to the same HTTPS
 * endpoint, HTTP/1.1 over reused connections, at most CONCURRENCY transfers
 * at once, with none of taxd's work (no database, no signing, no
 * rendering). Prints "requests N seconds S rps R failed F".
 *
 * usage: webhook_curl_loop URL CA_FILE REQUESTS CONCURRENCY BODY_FILE */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#include "webhook_loop.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s URL CA_FILE REQUESTS CONCURRENCY BODY_FILE\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *ca = argv[2];
    long total = atol(argv[3]), conc = atol(argv[4]), len = 0;
    char *body = loop_read_file(argv[5], &len);
    if (body == NULL || total <= 0 || conc <= 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return 1;
    struct curl_slist *headers = loop_headers();
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, conc);
    long started = 0, done = 0, failed = 0;
    double t0 = loop_now_s();
    for (long i = 0; i < conc && started < total; i++, started++) {
        CURL *h = curl_easy_init();
        loop_setup(h, url, ca, body, len, headers);
        curl_multi_add_handle(multi, h);
    }
    while (done < total) {
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *h = msg->easy_handle;
            long status = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
            failed += msg->data.result != CURLE_OK || status != 200;
            done++;
            curl_multi_remove_handle(multi, h);
            if (started < total) { /* the same handle again: its connection is reused */
                started++;
                curl_multi_add_handle(multi, h);
            } else {
                curl_easy_cleanup(h);
            }
        }
        if (done < total)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    double seconds = loop_now_s() - t0;
    printf("requests %ld seconds %.3f rps %.1f failed %ld\n", done, seconds, done / seconds,
           failed);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(body);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
