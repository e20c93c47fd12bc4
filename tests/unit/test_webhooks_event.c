/* Unit tests of the event object of a delivery (webhooks/event.h):
 * INVENTORY_UPDATE rendered from its row with and without transaction ids
 * ("omitted when transactions were deleted": absent, not null), event_id
 * equal to id, other types from their payload with event_type and event_id
 * first, and the catalog used to validate subscriptions. The bytes are
 * checked through the canonical body (webhooks/payload.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "webhooks/event.h"
#include "webhooks/payload.h"

#define EVENT_ID "5b0e8a52-2f6e-4c1e-9a55-0d7b3c1e2a10"
#define ACCOUNT_UUID "c7c1b0a4-1d2e-4f3a-8b5c-6d7e8f9a0b1c"

static char *render_text(const webhook_event_row_t *row)
{
    json_t *e = webhook_event_render(row);
    if (e == NULL)
        return NULL;
    size_t len;
    char *text = payload_dump(e, &len);
    json_decref(e);
    return text;
}

static void test_inventory_update_with_ids(void **state)
{
    (void)state;
    webhook_event_row_t row = {
        .id = EVENT_ID, .type = "INVENTORY_UPDATE", .account_uuid = ACCOUNT_UUID,
        .account_id = "acct \"1\"\x01\xc3\xa9", .from_ms = 1704067200000,
        .latest_ms = 1709210096789, .from_tx = "tx-1", .latest_tx = "tx-9", .has_ids = true};
    char *text = render_text(&row);
    assert_non_null(text);
    assert_string_equal(text,
                        "{\"event_type\":\"INVENTORY_UPDATE\",\"event_id\":\"" EVENT_ID "\","
                        "\"id\":\"" EVENT_ID "\",\"account_id\":\"" ACCOUNT_UUID "\","
                        "\"alternate_account_id\":\"acct \\\"1\\\"\\u0001\xc3\xa9\","
                        "\"latest_transaction_datetime\":\"2024-02-29T12:34:56.789Z\","
                        "\"update_from_datetime\":\"2024-01-01T00:00:00.000Z\","
                        "\"latest_transaction_id\":\"tx-9\","
                        "\"update_from_transaction_id\":\"tx-1\"}");
    free(text);
}

static void test_inventory_update_without_ids(void **state)
{
    (void)state;
    /* A deletion in the range: the id columns are NULL or ignored. */
    webhook_event_row_t row = {.id = EVENT_ID, .type = "INVENTORY_UPDATE",
                               .account_uuid = ACCOUNT_UUID, .account_id = "a1",
                               .from_ms = 0, .latest_ms = 1000, .from_tx = "ignored",
                               .has_ids = false};
    char *text = render_text(&row);
    assert_non_null(text);
    assert_string_equal(text, "{\"event_type\":\"INVENTORY_UPDATE\",\"event_id\":\"" EVENT_ID
                              "\",\"id\":\"" EVENT_ID "\",\"account_id\":\"" ACCOUNT_UUID "\","
                              "\"alternate_account_id\":\"a1\","
                              "\"latest_transaction_datetime\":\"1970-01-01T00:00:01.000Z\","
                              "\"update_from_datetime\":\"1970-01-01T00:00:00.000Z\"}");
    assert_null(strstr(text, "transaction_id"));
    free(text);
    /* With has_ids but a missing id column the row is broken: not rendered. */
    row.has_ids = true;
    row.latest_tx = NULL;
    assert_null(webhook_event_render(&row));
}

static void test_payload_types(void **state)
{
    (void)state;
    webhook_event_row_t row = {
        .id = "ev-2", .type = "FORM_STATUS_UPDATE",
        .payload = "{\"organization_id\":\"o\",\"event_type\":\"spoofed\",\"event_id\":\"x\","
                   "\"account_id\":\"a\",\"form_type\":\"1099_B\",\"tax_year\":2024,"
                   "\"status\":\"Filed\"}"};
    char *text = render_text(&row);
    assert_non_null(text);
    assert_string_equal(text, "{\"event_type\":\"FORM_STATUS_UPDATE\",\"event_id\":\"ev-2\","
                              "\"organization_id\":\"o\",\"account_id\":\"a\","
                              "\"form_type\":\"1099_B\",\"tax_year\":2024,"
                              "\"status\":\"Filed\"}");
    free(text);
    row.payload = "[1]";
    assert_null(webhook_event_render(&row));
    row.payload = "{\"a\":1,\"a\":2}";
    assert_null(webhook_event_render(&row));
    row.payload = NULL;
    assert_null(webhook_event_render(&row));
}

/* webhook_event_text writes INVENTORY_UPDATE without the tree: byte for
 * byte what the tree serializes to, escapes and non-ASCII included, and no
 * text where the tree has none. */
static void assert_text_matches_tree(const webhook_event_row_t *row)
{
    char *tree = render_text(row);
    size_t len = 0;
    char *text = webhook_event_text(row, &len);
    if (tree == NULL) {
        assert_null(text);
        return;
    }
    assert_non_null(text);
    assert_string_equal(text, tree);
    assert_int_equal(len, strlen(tree));
    free(tree);
    free(text);
}

static void test_text_is_the_tree_serialized(void **state)
{
    (void)state;
    webhook_event_row_t row = {
        .id = EVENT_ID, .type = "INVENTORY_UPDATE", .account_uuid = ACCOUNT_UUID,
        .account_id = "acct \"1\"\\\x01\x1f\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80/",
        .from_ms = 1704067200000, .latest_ms = 1709210096789, .from_tx = "tx\u2028-1",
        .latest_tx = "tx-9", .has_ids = true};
    assert_text_matches_tree(&row);
    row.has_ids = false;
    row.from_tx = row.latest_tx = NULL;
    assert_text_matches_tree(&row);
    row.account_id = "bad \xc3\x28 utf-8";
    assert_text_matches_tree(&row); /* neither renders */
    row.account_id = "a";
    row.account_uuid = NULL;
    assert_text_matches_tree(&row);
    row.account_uuid = ACCOUNT_UUID;
    row.has_ids = true; /* ids announced, none there */
    assert_text_matches_tree(&row);
    webhook_event_row_t other = {.id = EVENT_ID, .type = "FORM_STATUS_UPDATE",
                                 .payload = "{\"form_id\":\"f\\u0001\",\"status\":\"Filed\"}"};
    assert_text_matches_tree(&other);
    other.payload = "[1]";
    assert_text_matches_tree(&other);
}

static void test_catalog(void **state)
{
    (void)state;
    assert_true(webhook_event_type_known("INVENTORY_UPDATE", 16));
    assert_true(webhook_event_type_known("FORM_STATUS_UPDATE,X", 18));
    assert_true(webhook_event_type_known("RTTM_TIN_VALIDATION", 19));
    assert_false(webhook_event_type_known("INVENTORY_UPDAT", 15));
    assert_false(webhook_event_type_known("inventory_update", 16));
    assert_false(webhook_event_type_known("", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inventory_update_with_ids),
        cmocka_unit_test(test_inventory_update_without_ids),
        cmocka_unit_test(test_payload_types),
        cmocka_unit_test(test_text_is_the_tree_serialized),
        cmocka_unit_test(test_catalog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
