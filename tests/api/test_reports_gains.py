"""Gains reports (issue 16, item 7): POST /v1/reports/gains {account_ids,
tax_year, format}, GET /v1/reports/gains/{reportId} and its signed download.

Rules checked (docs/decisions.md, "Reports", gains report):
  - the same mechanics as the inventory-summary report: 202 pending, then
    completed with a signed link and metadata (requested, included, the ids
    not found), csv or jsonl;
  - the file holds, per requested account, every gains row of the tax year
    (the columns of GET /v1/gains plus account_id), accounts in caller-id
    order, each account's rows in processing (datetime) order; rows of other
    years are not in it; hand-worked figures;
  - tax_year is required, from 2009 to next year (the service clock's):
    400 naming tax_year otherwise;
  - a gains report's id is 404 under the inventory-summary routes (status
    and download) and an inventory-summary report's id 404 under the gains
    routes;
  - the limit of reports pending or processing is one per tenant, both kinds
    counted together;
  - the reports scope is needed.
Every response is also validated against docs/openapi.yaml by conftest.
"""
import csv
import io
import json
from datetime import datetime, timezone

from conftest import GATEWAY_DENY, UUID4_RE, body, poll
from test_reports import (REPORT_TIMEOUT_S, TEST_HEADER, buy, call, fetch, make_account,
                          make_owner, post_tx, sell)

GAINS = "/v1/reports/gains"
INVENTORY = "/v1/reports/inventory-summary"
COLUMNS = ["account_id", "transaction_id", "lot_transaction_id", "asset_code", "asset_type",
           "quantity", "acquired_at", "disposed_at", "proceeds", "transaction_costs",
           "cost_basis", "gain_loss", "term", "covered", "form_8949_box",
           "customer_provided_acquisition", "method", "warnings"]


def gains_trigger(t, payload, expect=202, headers=None):
    r = call(t, "POST", GAINS, payload, headers=headers)
    assert r.status_code == expect, f"expected {expect}, got {r.status_code}: {r.text[:800]}"
    return body(r)


def gains_status(t, rid, route=GAINS):
    return t.get(f"{route}/{rid}")


def wait_gains(t, rid, route=GAINS):
    def done():
        b = body(gains_status(t, rid, route))
        return b if b["status"] in ("completed", "failed") else None
    b = poll(done, REPORT_TIMEOUT_S, interval=0.05, what=f"report {rid}")
    assert b["status"] == "completed", b
    return b


def seed(t):
    """Two accounts, hand-worked (FIFO, no fees):
    b1: buys 2 BTC for 100 USD (2024-03-01), sells 0.5 for 40 in 2024 (not
        in tax year 2025), then 1 for 90 on 2025-02-01 (gain 90 - 50 = 40,
        held under a year: SHORT), then 0.5 BTC for 60 on 2025-06-01
        (gain 60 - 25 = 35, LONG: held more than a year by calendar dates);
    a1: buys 1 ETH for 10 on 2025-01-10 and sells it for 12 on 2025-01-20
        (gain 2, SHORT)."""
    make_owner(t)
    for a in ("b1", "a1", "c-empty"):
        make_account(t, a)
    post_tx(t, buy("b-buy", "b1", "BTC", "2", "100", when="2024-03-01T10:00:00Z"))
    post_tx(t, sell("b-sell-2024", "b1", "BTC", "0.5", "40", when="2024-05-01T10:00:00Z"))
    post_tx(t, sell("b-sell-1", "b1", "BTC", "1", "90", when="2025-02-01T10:00:00Z"))
    post_tx(t, sell("b-sell-2", "b1", "BTC", "0.5", "60", when="2025-06-01T10:00:00Z"))
    post_tx(t, buy("a-buy", "a1", "ETH", "1", "10", when="2025-01-10T00:00:00Z"))
    post_tx(t, sell("a-sell", "a1", "ETH", "1", "12", when="2025-01-20T00:00:00Z"))


# (account, transaction, lot, asset, quantity, proceeds, cost, gain, term, box)
EXPECTED_2025 = [
    ("a1", "a-sell", "a-buy", "ETH", "1", "12", "10", "2", "SHORT", "H"),
    ("b1", "b-sell-1", "b-buy", "BTC", "1", "90", "50", "40", "SHORT", "H"),
    ("b1", "b-sell-2", "b-buy", "BTC", "0.5", "60", "25", "35", "LONG", "K"),
]


def check_rows(rows):
    got = [(r["account_id"], r["transaction_id"], r["lot_transaction_id"], r["asset_code"],
            r["quantity"], r["proceeds"], r["cost_basis"], r["gain_loss"], r["term"],
            r["form_8949_box"]) for r in rows]
    assert got == EXPECTED_2025
    for r in rows:
        assert r["asset_type"] == "crypto"
        assert r["disposed_at"].startswith("2025-")
        assert r["acquired_at"] is not None and r["acquired_at"] != ""


def test_gains_report_csv_rows_of_the_tax_year_by_account_then_seq(server):
    t = server.new_tenant("gains-csv")
    seed(t)
    b = gains_trigger(t, {"account_ids": ["b1", "a1", "c-empty", "nobody"], "tax_year": 2025})
    assert UUID4_RE.match(b["report_id"]) and b["status"] == "pending" and b["tax_year"] == 2025
    s = wait_gains(t, b["report_id"])
    assert s["tax_year"] == 2025
    assert "/v1/reports/gains/" in s["download_url"]
    assert s["metadata"] == {"total_accounts_requested": 4, "total_accounts_included": 3,
                             "skipped_account_ids": {"not_found_in_organization": ["nobody"]}}
    r = fetch(server, s["download_url"])
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert f'filename="gains-{b["report_id"]}.csv"' in r.headers["content-disposition"]
    table = list(csv.reader(io.StringIO(r.content.decode(), newline="")))
    assert table[0] == COLUMNS
    rows = [dict(zip(COLUMNS, row)) for row in table[1:]]
    check_rows(rows)
    for row in rows:
        assert row["covered"] == "false"     # acquired before 2026-01-01
        assert row["customer_provided_acquisition"] == "false"


def test_gains_report_jsonl_has_every_gains_column(server):
    t = server.new_tenant("gains-jsonl")
    seed(t)
    b = gains_trigger(t, {"tax_year": 2025, "format": "jsonl"})
    s = wait_gains(t, b["report_id"])
    assert s["metadata"] == {"total_accounts_included": 3}
    r = fetch(server, s["download_url"])
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-ndjson"
    rows = [json.loads(x) for x in r.content.decode().splitlines()]
    assert all(list(row) == COLUMNS for row in rows)
    check_rows(rows)
    for row in rows:
        assert row["covered"] is False and row["customer_provided_acquisition"] is False
        assert isinstance(row["warnings"], list)
    # the year before holds only the 2024 sale
    b = gains_trigger(t, {"tax_year": 2024, "format": "jsonl"})
    r = fetch(server, wait_gains(t, b["report_id"])["download_url"])
    rows = [json.loads(x) for x in r.content.decode().splitlines()]
    assert [(x["transaction_id"], x["proceeds"], x["cost_basis"], x["form_8949_box"])
            for x in rows] == [("b-sell-2024", "40", "25", "C")]


def test_gains_tax_year_is_required_from_2009_to_next_year(server):
    t = server.new_tenant("gains-year")
    next_year = datetime.now(timezone.utc).year + 1
    for payload in ({}, {"tax_year": 2008}, {"tax_year": next_year + 1}, {"tax_year": "2025"},
                    {"tax_year": None}):
        r = call(t, "POST", GAINS, payload)
        assert r.status_code == 400, (payload, r.text)
        assert any(i["path"] == ["tax_year"] for i in body(r)["issues"]), r.text
    r = call(t, "POST", GAINS, None)
    assert r.status_code == 400, r.text
    for year in (2009, next_year):
        gains_trigger(t, {"tax_year": year})


def test_a_report_is_found_only_under_its_own_kind(server):
    t = server.new_tenant("gains-kind")
    make_owner(t)
    make_account(t, "k1")
    g = gains_trigger(t, {"tax_year": 2025})["report_id"]
    r = call(t, "POST", INVENTORY, {})
    assert r.status_code == 202
    i = body(r)["report_id"]
    gs, is_ = wait_gains(t, g), wait_gains(t, i, INVENTORY)
    assert "tax_year" not in is_
    assert gains_status(t, g, INVENTORY).status_code == 404
    assert gains_status(t, i, GAINS).status_code == 404
    # a genuine link moved to the other kind's route
    moved = gs["download_url"].replace("/v1/reports/gains/", "/v1/reports/inventory-summary/")
    assert fetch(server, moved).status_code == 404
    moved = is_["download_url"].replace("/v1/reports/inventory-summary/", "/v1/reports/gains/")
    assert fetch(server, moved).status_code == 404
    assert fetch(server, gs["download_url"]).status_code == 200


def test_active_reports_are_limited_per_tenant_across_kinds(make_server):
    """--report-max-active 1: an inventory-summary report held in processing
    makes a gains trigger 429, and the other way round."""
    s = make_server("--test-hooks", "--report-max-active", "1", "--report-workers", "1")
    t = s.new_tenant("gains-active")
    r = call(t, "POST", INVENTORY, {}, headers={TEST_HEADER: "pause=1500"})
    assert r.status_code == 202, r.text
    held = body(r)["report_id"]
    r = call(t, "POST", GAINS, {"tax_year": 2025})
    assert r.status_code == 429, r.text
    assert "Retry-After" in r.headers
    wait_gains(t, held, INVENTORY)
    g = gains_trigger(t, {"tax_year": 2025}, headers={TEST_HEADER: "pause=1500"})["report_id"]
    assert call(t, "POST", INVENTORY, {}).status_code == 429
    wait_gains(t, g)


def test_gains_report_needs_the_reports_scope(server):
    t = server.new_tenant("gains-scope", scopes="inventory")
    r = call(t, "POST", GAINS, {"tax_year": 2025})
    assert r.status_code == 403
    assert body(r) == GATEWAY_DENY
