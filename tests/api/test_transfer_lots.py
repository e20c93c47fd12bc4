"""Customer-provided lots of a deposit (issue 16, item 4):
POST/DELETE /v1/transfer-lots/transactions/{transactionId} and the GET on a
deposit.

Rules checked, in the issue's words:
  - POST sets (replacing, per asset) the lots of a transfer-in; DELETE clears
    them (204);
  - "the lots must add up to the deposit's quantity and may not be dated
    after it (400 otherwise)", each 400 naming the field; an asset the
    deposit did not receive, quantity > 0, cost_basis >= 0, at most 100 lots;
  - 400 for a transaction that is not a deposit, 404 for an unknown one;
  - "editing the deposit drops its lots" (also deleting it);
  - "the GET (200 / 203) shows them": 200 with the provided lots, 203 with
    missing_cost_basis while a received asset has none.
Every response is validated against docs/openapi.yaml by conftest.
"""
from urllib.parse import quote, urlencode

import pytest

from conftest import body

TX_PATH = "/v1/transactions/external-id"
TL = "/v1/transfer-lots/transactions/"


def call(tenant, method, path, json_body=None):
    kw = {"headers": tenant.auth()}
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, **kw)


def line(code, amount, rate=None):
    item = {"asset_amount": {"amount": amount,
                             "asset": {"code": code, "type": "fiat" if code == "USD" else "crypto"}}}
    if rate is not None:
        item["rates"] = [{"amount": rate, "asset": {"code": "USD", "type": "fiat"}}]
    return item


def setup_account(tenant, account="acc"):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": "o-" + account, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    r = call(tenant, "POST", "/v1/accounts", {"id": account, "account_owner_id": "o-" + account})
    assert r.status_code == 201, r.text


def post_tx(tenant, doc, status=(200, 201)):
    r = call(tenant, "POST", TX_PATH, doc)
    assert r.status_code in status, r.text


def deposit(tenant, tx_id="d1", when="2024-06-01T00:00:00Z", received=(("BTC", "2"),),
            account="acc"):
    post_tx(tenant, {"id": tx_id, "account_id": account, "datetime": when, "type": "deposit",
                     "received": [line(c, a) for c, a in received]})


def lot(asset="BTC", quantity="1", cost="100", at="2020-01-01T00:00:00Z"):
    return {"asset_code": asset, "quantity": quantity, "cost_basis": cost, "acquired_at": at}


def set_lots(tenant, tx_id, lots):
    return call(tenant, "POST", TL + quote(tx_id, safe=""), {"lots": lots})


def get_lots(tenant, tx_id):
    return call(tenant, "GET", TL + quote(tx_id, safe=""))


def issue_paths(r):
    assert r.status_code == 400, f"{r.status_code} {r.text}"
    return [i["path"] for i in body(r)["issues"]]


def test_set_get_and_clear(tenant):
    setup_account(tenant)
    deposit(tenant)
    r = get_lots(tenant, "d1")
    assert r.status_code == 203, r.text  # received BTC without lots
    assert [w["code"] for w in body(r)["warnings"]] == ["missing_cost_basis"]
    assert body(r)["data"]["lots"] == []
    r = set_lots(tenant, "d1", [lot(cost="100", at="2020-01-01T00:00:00Z"),
                                lot(cost="300.50", at="2021-01-01T00:00:00Z")])
    assert r.status_code == 200, r.text
    r = get_lots(tenant, "d1")
    assert r.status_code == 200 and "warnings" not in body(r), r.text
    assert body(r)["data"]["lots"] == [
        {"asset_code": "BTC", "acquired_at": "2020-01-01T00:00:00.000Z", "quantity": "1",
         "cost_basis": "100", "customer_provided": True},
        {"asset_code": "BTC", "acquired_at": "2021-01-01T00:00:00.000Z", "quantity": "1",
         "cost_basis": "300.5", "customer_provided": True}]
    # replacing: the new lots of BTC replace the old
    assert set_lots(tenant, "d1", [lot(quantity="2.0", cost="50")]).status_code == 200
    assert [l["cost_basis"] for l in body(get_lots(tenant, "d1"))["data"]["lots"]] == ["50"]
    assert call(tenant, "DELETE", TL + "d1").status_code == 204
    assert get_lots(tenant, "d1").status_code == 203


def test_replacing_is_per_asset(tenant):
    setup_account(tenant)
    deposit(tenant, received=(("BTC", "1"), ("ETH", "3")))
    assert set_lots(tenant, "d1", [lot("BTC", "1", "10"), lot("ETH", "3", "30")]).status_code == 200
    assert set_lots(tenant, "d1", [lot("ETH", "3", "99")]).status_code == 200
    got = {(l["asset_code"], l["cost_basis"]) for l in body(get_lots(tenant, "d1"))["data"]["lots"]}
    assert got == {("BTC", "10"), ("ETH", "99")}


def test_lots_must_add_up_and_not_postdate_the_deposit(tenant):
    setup_account(tenant)
    deposit(tenant)
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="1.5")])) == [["lots", 0, "quantity"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(), lot(), lot()])) == [["lots", 0, "quantity"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="2", at="2024-06-01T00:00:01Z")])) \
        == [["lots", 0, "acquired_at"]]
    # dated exactly at the deposit: allowed
    assert set_lots(tenant, "d1", [lot(quantity="2", at="2024-06-01T00:00:00Z")]).status_code == 200
    assert issue_paths(set_lots(tenant, "d1", [lot(asset="ETH", quantity="2")])) \
        == [["lots", 0, "asset_code"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(asset="USD", quantity="2")])) \
        == [["lots", 0, "asset_code"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="0"), lot(quantity="2")])) \
        == [["lots", 0, "quantity"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="2", cost="-1")])) \
        == [["lots", 0, "cost_basis"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="2", at="yesterday")])) \
        == [["lots", 0, "acquired_at"]]
    assert issue_paths(set_lots(tenant, "d1", [lot(quantity="0.02")] * 101)) == [["lots"]]
    # nothing half-written: the lot set at the deposit's instant is still the only one
    assert [l["acquired_at"] for l in body(get_lots(tenant, "d1"))["data"]["lots"]] \
        == ["2024-06-01T00:00:00.000Z"]


def test_not_a_deposit_and_unknown(tenant):
    setup_account(tenant)
    post_tx(tenant, {"id": "t1", "account_id": "acc", "datetime": "2024-01-01T00:00:00Z",
                     "type": "trade", "sent": [line("USD", "10")],
                     "received": [line("BTC", "1", "10")]})
    r = set_lots(tenant, "t1", [lot()])
    assert r.status_code == 400 and body(r)["message"] == "Transaction 't1' is a trade, not a transfer in"
    r = call(tenant, "DELETE", TL + "t1")
    assert r.status_code == 400
    r = set_lots(tenant, "nope", [lot()])
    assert r.status_code == 404 and body(r)["message"] == "Transaction with id 'nope' not found"
    assert call(tenant, "DELETE", TL + "nope").status_code == 404


def test_editing_or_deleting_the_deposit_drops_its_lots(tenant):
    setup_account(tenant)
    deposit(tenant)
    assert set_lots(tenant, "d1", [lot(quantity="2")]).status_code == 200
    deposit(tenant)  # the same body: unchanged, the lots stay
    assert len(body(get_lots(tenant, "d1"))["data"]["lots"]) == 1
    deposit(tenant, received=(("BTC", "2.5"),))  # an edit
    r = get_lots(tenant, "d1")
    assert r.status_code == 203 and body(r)["data"]["lots"] == []
    assert set_lots(tenant, "d1", [lot(quantity="2.5")]).status_code == 200
    assert call(tenant, "DELETE", TX_PATH + "/d1").status_code in (200, 204)
    deposit(tenant, received=(("BTC", "2.5"),))  # recreated: a new transaction, no lots
    assert body(get_lots(tenant, "d1"))["data"]["lots"] == []


def test_a_later_sale_relieves_provided_lots(tenant):
    """Deposit 2 BTC with lots {1 BTC cost 100, 2020}, {1 BTC cost 300, 2021};
    sell 1.5 BTC under FIFO: the 2020 lot and half of the 2021 lot go; what
    is left is 0.5 BTC costing 150."""
    setup_account(tenant)
    deposit(tenant)
    assert set_lots(tenant, "d1", [lot(cost="100", at="2020-01-01T00:00:00Z"),
                                   lot(cost="300", at="2021-01-01T00:00:00Z")]).status_code == 200
    post_tx(tenant, {"id": "s1", "account_id": "acc", "datetime": "2024-07-01T00:00:00Z",
                     "type": "trade", "sent": [line("BTC", "1.5")],
                     "received": [line("USD", "900")]})
    r = call(tenant, "GET", "/v1/inventory?" + urlencode({"account_id": "acc", "asset_code": "BTC"}))
    assert r.status_code == 200, r.text
    lots = body(r)["data"]["lots"]
    assert [(l["quantity"], l["cost_basis"]) for l in lots] == [("0.5", "150")]
