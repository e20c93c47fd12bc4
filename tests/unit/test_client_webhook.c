/* Unit tests of libtaxdclient's webhook helpers (client/webhook.c): the
 * signature check of spec § Webhook deliveries layer 1 (any secret, any
 * signature, lengths first, malformed entries skipped), the envelope's
 * parsing (unknown fields ignored, each event's own bytes), and the
 * deduplication set's FIFO eviction.
 *
 * The expected signatures were computed outside C, with OpenSSL's command
 * line, over the exact bytes of BODY (printf '%s' so no newline is added):
 *   printf '%s' "$BODY" | openssl dgst -sha256 -hmac old-secret -binary | base64
 *   printf '%s' "$BODY" | openssl dgst -sha256 -hmac new-secret -binary | base64
 * and over BODY_OTHER (the last digit of the event id changed) under
 * old-secret. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <taxd/client.h>

#define BODY "{\"timestamp\":\"2024-03-01T10:00:00.000Z\",\"data\":[{\"event_type\":" \
             "\"INVENTORY_UPDATE\",\"event_id\":\"5b0e8a52-2f6e-4c1e-9a55-0d7b3c1e2a10\"}]}"
#define BODY_OTHER "{\"timestamp\":\"2024-03-01T10:00:00.000Z\",\"data\":[{\"event_type\":" \
                   "\"INVENTORY_UPDATE\",\"event_id\":\"5b0e8a52-2f6e-4c1e-9a55-0d7b3c1e2a11\"}]}"
#define SIG_OLD "v1=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wdU="
#define SIG_NEW "v1=D8Asqm8JedTGRGuPU9138dv9S4i1KAZr4L3FVSaY9bM="
#define SIG_OTHER_OLD "v1=wOfgXukz8K27xBfQUr9UiFohRONU1dEZ1INooDg1RVk="

static const char *const OLD[] = {"old-secret"};
static const char *const NEW[] = {"new-secret"};
static const char *const BOTH[] = {"new-secret", "old-secret"};
static const char *const NEITHER[] = {"other-secret", "another"};

static bool verify(const char *header, const char *const *secrets, size_t n, const char *body)
{
    return taxd_webhook_verify(header, secrets, n, body, strlen(body));
}

/* ---- verify */

static void test_known_vectors(void **state)
{
    (void)state;
    assert_true(verify(SIG_OLD, OLD, 1, BODY));
    assert_true(verify(SIG_NEW, NEW, 1, BODY));
    assert_true(verify(SIG_OTHER_OLD, OLD, 1, BODY_OTHER));
    assert_false(verify(SIG_OLD, NEW, 1, BODY));
    assert_false(verify(SIG_OLD, NEITHER, 2, BODY));
}

static void test_a_body_one_byte_different_fails(void **state)
{
    (void)state;
    assert_false(verify(SIG_OLD, OLD, 1, BODY_OTHER));
    assert_false(verify(SIG_OTHER_OLD, OLD, 1, BODY));
    /* one byte fewer or more */
    assert_false(taxd_webhook_verify(SIG_OLD, OLD, 1, BODY, strlen(BODY) - 1));
    assert_false(verify(SIG_OLD, OLD, 1, BODY " "));
}

static void test_rotation_any_secret_any_signature_either_order(void **state)
{
    (void)state;
    const char *const old_first[] = {"old-secret", "new-secret"};
    /* the sender signs with both (taxd: newest first, no spaces) */
    assert_true(verify(SIG_NEW "," SIG_OLD, NEW, 1, BODY));
    assert_true(verify(SIG_NEW "," SIG_OLD, OLD, 1, BODY));
    assert_true(verify(SIG_OLD "," SIG_NEW, NEW, 1, BODY));
    assert_true(verify(SIG_OLD "," SIG_NEW, OLD, 1, BODY));
    /* the receiver knows both, in either order, the header holds one */
    assert_true(verify(SIG_OLD, BOTH, 2, BODY));
    assert_true(verify(SIG_NEW, BOTH, 2, BODY));
    assert_true(verify(SIG_OLD, old_first, 2, BODY));
    assert_true(verify(SIG_NEW, old_first, 2, BODY));
    assert_false(verify(SIG_NEW "," SIG_OLD, NEITHER, 2, BODY));
}

static void test_spaces_after_commas_are_tolerated(void **state)
{
    (void)state;
    assert_true(verify(SIG_NEW ", " SIG_OLD, OLD, 1, BODY));
    assert_true(verify(SIG_NEW ",  \t" SIG_OLD, OLD, 1, BODY));
    assert_true(verify(" " SIG_OLD " ", OLD, 1, BODY));
}

static void test_malformed_entries_are_skipped_not_fatal(void **state)
{
    (void)state;
    /* garbage, an empty entry, another version and a truncated one before a good one */
    assert_true(verify("garbage,,v2=abc," SIG_OLD, OLD, 1, BODY));
    assert_true(verify(SIG_OLD ",", OLD, 1, BODY));
    assert_true(verify("v1=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wd," SIG_OLD, OLD, 1, BODY));
}

static void test_wrong_length_truncated_missing_prefix_empty(void **state)
{
    (void)state;
    /* truncated: the signature without its padding, or without its last character */
    assert_false(verify("v1=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wdU", OLD, 1, BODY));
    assert_false(verify("v1=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wd", OLD, 1, BODY));
    /* too long: a right prefix followed by more */
    assert_false(verify(SIG_OLD "A", OLD, 1, BODY));
    assert_false(verify(SIG_OLD "=", OLD, 1, BODY));
    /* the bare signature without "v1=", or another version's prefix */
    assert_false(verify("jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wdU=", OLD, 1, BODY));
    assert_false(verify("v2=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wdU=", OLD, 1, BODY));
    assert_false(verify("V1=jp6xpOzKBItqsx6Ax4gJgnlqQYXigJfxJDLZBQ84wdU=", OLD, 1, BODY));
    /* empty and missing inputs verify nothing */
    assert_false(verify("", OLD, 1, BODY));
    assert_false(verify("v1=", OLD, 1, BODY));
    assert_false(verify(",", OLD, 1, BODY));
    assert_false(verify(NULL, OLD, 1, BODY));
    assert_false(verify(SIG_OLD, NULL, 1, BODY));
    assert_false(verify(SIG_OLD, OLD, 0, BODY));
    assert_false(taxd_webhook_verify(SIG_OLD, OLD, 1, NULL, 0));
    const char *const empty_secret[] = {"", NULL, "old-secret"};
    assert_false(verify(SIG_OLD, empty_secret, 2, BODY));
    assert_true(verify(SIG_OLD, empty_secret, 3, BODY)); /* empty and NULL secrets are skipped */
}

/* ---- parse */

static void test_parse_envelope_and_events(void **state)
{
    (void)state;
    const char *body = "{\"timestamp\":\"2024-03-01T10:00:00.000Z\",\"unknown\":{\"data\":[1]},"
                       "\"data\":[{\"event_type\":\"INVENTORY_UPDATE\",\"event_id\":\"e1\","
                       "\"n\":1.50,\"s\":\"a\\u001f\\\"],\\\\\",\"new_field\":[{\"x\":[]}]},"
                       "{\"event_type\":\"RTTM_TIN_VALIDATION\"}],\"later\":true}";
    taxd_webhook_delivery d;
    taxd_error err = {0};
    assert_int_equal(taxd_webhook_parse(body, strlen(body), &d, &err), TAXD_OK);
    assert_string_equal(d.timestamp, "2024-03-01T10:00:00.000Z");
    assert_int_equal(d.count, 2);
    assert_string_equal(d.events[0].event_type, "INVENTORY_UPDATE");
    assert_string_equal(d.events[0].event_id, "e1");
    /* the event's own bytes: 1.50 not 1.5, \u001f not \u001F, unknown fields kept */
    assert_string_equal(d.events[0].json,
                        "{\"event_type\":\"INVENTORY_UPDATE\",\"event_id\":\"e1\",\"n\":1.50,"
                        "\"s\":\"a\\u001f\\\"],\\\\\",\"new_field\":[{\"x\":[]}]}");
    assert_string_equal(d.events[1].event_type, "RTTM_TIN_VALIDATION");
    assert_null(d.events[1].event_id);
    assert_string_equal(d.events[1].json, "{\"event_type\":\"RTTM_TIN_VALIDATION\"}");
    taxd_webhook_delivery_clear(&d);
    taxd_webhook_delivery_clear(&d); /* twice is safe */
    taxd_error_clear(&err);
}

static void test_parse_makes_a_spaced_body_compact(void **state)
{
    (void)state;
    const char *body = "{ \"data\" : [ {\n \"event_type\" : \"A B\" , \"x\" : [ 1 , 2 ] } ] }";
    taxd_webhook_delivery d;
    assert_int_equal(taxd_webhook_parse(body, strlen(body), &d, NULL), TAXD_OK);
    assert_null(d.timestamp);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.events[0].json, "{\"event_type\":\"A B\",\"x\":[1,2]}");
    taxd_webhook_delivery_clear(&d);
}

static void test_parse_escaped_data_key_falls_back_to_jansson(void **state)
{
    (void)state;
    const char *body = "{\"d\\u0061ta\":[{\"event_type\":\"T\",\"event_id\":\"x\"}]}";
    taxd_webhook_delivery d;
    assert_int_equal(taxd_webhook_parse(body, strlen(body), &d, NULL), TAXD_OK);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.events[0].json, "{\"event_type\":\"T\",\"event_id\":\"x\"}");
    taxd_webhook_delivery_clear(&d);
}

static void expect_protocol(const char *body, const char *words)
{
    taxd_webhook_delivery d;
    taxd_error err = {0};
    assert_int_equal(taxd_webhook_parse(body, strlen(body), &d, &err), TAXD_E_PROTOCOL);
    assert_int_equal(err.code, TAXD_E_PROTOCOL);
    assert_non_null(err.message);
    if (strstr(err.message, words) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.message, words);
    assert_int_equal(d.count, 0);
    assert_null(d.events);
    taxd_error_clear(&err);
}

static void test_parse_refuses_what_is_not_an_envelope(void **state)
{
    (void)state;
    expect_protocol("", "not JSON");
    expect_protocol("{\"data\":[", "not JSON");
    expect_protocol("[]", "not a JSON object");
    expect_protocol("{\"timestamp\":\"t\"}", "no \"data\" array");
    expect_protocol("{\"data\":{}}", "no \"data\" array");
    expect_protocol("{\"data\":[1]}", "data[0] is not an object");
    expect_protocol("{\"data\":[{\"event_type\":\"A\"},{\"event_id\":\"x\"}]}",
                    "data[1] has no string event_type");
    expect_protocol("{\"data\":[],\"timestamp\":5}", "timestamp");
    expect_protocol("{\"data\":[],\"data\":[]}", "not JSON"); /* duplicate keys */
}

/* ---- dedup */

static void test_dedup_remembers_and_evicts_the_oldest_at_capacity(void **state)
{
    (void)state;
    taxd_dedup *d = taxd_dedup_new(3);
    assert_non_null(d);
    assert_false(taxd_dedup_seen(d, "a"));
    assert_false(taxd_dedup_seen(d, "b"));
    assert_false(taxd_dedup_seen(d, "c"));
    assert_true(taxd_dedup_seen(d, "a"));  /* a repeat is not recorded again */
    assert_true(taxd_dedup_seen(d, "c"));
    assert_false(taxd_dedup_seen(d, "d")); /* evicts a, the first in */
    assert_false(taxd_dedup_seen(d, "a")); /* a is new again and evicts b */
    assert_true(taxd_dedup_seen(d, "c"));
    assert_true(taxd_dedup_seen(d, "d"));
    assert_false(taxd_dedup_seen(d, "b"));
    assert_false(taxd_dedup_seen(d, NULL));
    taxd_dedup_free(d);
    assert_null(taxd_dedup_new(0));
    taxd_dedup_free(NULL);
}

static void test_dedup_many_ids_keep_exactly_the_last_capacity(void **state)
{
    (void)state;
    enum { CAP = 1000, TOTAL = 20000 };
    taxd_dedup *d = taxd_dedup_new(CAP);
    assert_non_null(d);
    char id[32];
    for (int i = 0; i < TOTAL; i++) {
        snprintf(id, sizeof id, "event-%d", i);
        assert_false(taxd_dedup_seen(d, id));
    }
    for (int i = TOTAL - 1; i >= TOTAL - CAP; i--) { /* newest first: nothing evicted yet */
        snprintf(id, sizeof id, "event-%d", i);
        assert_true(taxd_dedup_seen(d, id));
    }
    snprintf(id, sizeof id, "event-%d", TOTAL - CAP - 1);
    assert_false(taxd_dedup_seen(d, id)); /* evicted long ago; recorded now, evicting the oldest */
    snprintf(id, sizeof id, "event-%d", TOTAL - CAP);
    assert_false(taxd_dedup_seen(d, id));
    taxd_dedup_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_a_body_one_byte_different_fails),
        cmocka_unit_test(test_rotation_any_secret_any_signature_either_order),
        cmocka_unit_test(test_spaces_after_commas_are_tolerated),
        cmocka_unit_test(test_malformed_entries_are_skipped_not_fatal),
        cmocka_unit_test(test_wrong_length_truncated_missing_prefix_empty),
        cmocka_unit_test(test_parse_envelope_and_events),
        cmocka_unit_test(test_parse_makes_a_spaced_body_compact),
        cmocka_unit_test(test_parse_escaped_data_key_falls_back_to_jansson),
        cmocka_unit_test(test_parse_refuses_what_is_not_an_envelope),
        cmocka_unit_test(test_dedup_remembers_and_evicts_the_oldest_at_capacity),
        cmocka_unit_test(test_dedup_many_ids_keep_exactly_the_last_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
