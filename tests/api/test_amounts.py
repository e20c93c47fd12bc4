"""Amounts and the range of totals (issue 15, item 4; docs/decisions.md,
"Amounts and the range of totals").

Rules checked:
  - the issue's reproduction: two deposits of 99999999999999999999 at a USD
    rate of 99999999999999999999 (20 integer digits each, the input limit)
    are accepted and their inventory is computed exactly (before: 201, then
    500 on every inventory route and a failed report); the same at income,
    where amount x rate is the cost basis (40 integer digits), is exact in the
    summaries, the lots and an all-accounts report; one digit more is a 400
    naming the field;
  - an account whose inventory cannot be computed (made so by writing
    amounts past the input limits straight into the database, which the API
    refuses) answers 409 {"error":"Conflict","message":"Inventory cannot be
    computed: <reason>"} on its inventory routes, never 5xx; another
    account's reads are unaffected; an all-accounts report completes without
    it, lists it in metadata.skipped_account_ids.inventory_not_computable and
    leaves it out of total_accounts_included; a scoped report lists both
    kinds of skipped ids; a write that mends the data makes it computable.
Every response is also validated against docs/openapi.yaml by conftest.
"""
import csv
import io

from conftest import body
from test_reports import completed, download_rows

TX_PATH = "/v1/transactions/external-id"
MAX = "99999999999999999999"  # DOMAIN_AMOUNT_INT_DIGITS nines
NINES_96 = "9" * 96           # past the input limits, within core/decimal's range


def call(tenant, method, path, json_body=None, **kw):
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, headers=tenant.auth(), **kw)


def make_accounts(tenant, *accounts):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": "o1", "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    for a in accounts:
        r = call(tenant, "POST", "/v1/accounts", {"id": a, "account_owner_id": "o1"})
        assert r.status_code == 201, r.text


def tx(id_, account, type_, when, received=None, sent=None):
    doc = {"id": id_, "account_id": account, "datetime": when, "type": type_}
    for key, spec in (("received", received), ("sent", sent)):
        if spec is not None:
            code, amount, rate = spec
            item = {"asset_amount": {"amount": amount, "asset": {"code": code, "type": "crypto"}}}
            if rate is not None:
                item["rates"] = [{"amount": rate, "asset": {"code": "USD", "type": "fiat"}}]
            doc[key] = [item]
    return doc


def post(tenant, doc, status=201):
    r = call(tenant, "POST", TX_PATH, doc)
    assert r.status_code == status, r.text
    return r


def summaries(tenant, account_id):
    return tenant.get("/v1/inventory/summaries", params={"account_id": account_id})


def lots(tenant, account_id, asset):
    return tenant.get("/v1/inventory", params={"account_id": account_id, "asset_code": asset})


def ok(r):
    assert r.status_code == 200, r.text
    return body(r)["data"]


def test_issue_reproduction_is_computed_exactly(server):
    t = server.new_tenant("amounts")
    make_accounts(t, "dep", "inc")
    for i in (1, 2):
        post(t, tx(f"d{i}", "dep", "deposit", f"2024-01-0{i}T00:00:00Z", received=("BTC", MAX, MAX)))
        post(t, tx(f"i{i}", "inc", "income", f"2024-01-0{i}T00:00:00Z", received=("BTC", MAX, MAX)))
    # deposits carry no cost basis: only the quantity grows past 20 digits
    assert ok(summaries(t, "dep"))["summaries"] == [{
        "asset_code": "BTC", "total_quantity": "199999999999999999998", "total_cost": "0",
        "average_unit_cost": None, "total_quantity_with_cost_basis": "0"}]
    # income is valued at amount x rate: 40 integer digits per lot, exact
    value = str(int(MAX) * int(MAX))
    assert value == "9999999999999999999800000000000000000001"
    expected = {"asset_code": "BTC", "total_quantity": "199999999999999999998",
                "total_cost": str(2 * int(value)), "average_unit_cost": MAX,
                "total_quantity_with_cost_basis": "199999999999999999998"}
    assert ok(summaries(t, "inc"))["summaries"] == [expected]
    got = ok(lots(t, "inc", "BTC"))
    assert [(l["quantity"], l["cost_basis"], l["unit_cost"]) for l in got["lots"]] == \
        [(MAX, value, MAX)] * 2
    # an all-accounts report completes with the exact figures
    _, status = completed(t)
    assert status["metadata"] == {"total_accounts_included": 2}
    _, rows = download_rows(server, status)
    by_account = {r[0]: r for r in rows[1:]}
    assert by_account["inc"][3:7] == ["199999999999999999998", str(2 * int(value)), MAX,
                                      "199999999999999999998"]
    assert by_account["dep"][3:7] == ["199999999999999999998", "0", "", "0"]
    # one digit more is refused, naming the field
    r = post(t, tx("d3", "dep", "deposit", "2024-01-03T00:00:00Z",
                   received=("BTC", MAX, MAX + "0")), status=400)
    data = body(r)["data"]
    assert [(d["path"], d["message"]) for d in data] == [
        (["received", 0, "rates", 0, "amount"],
         "Invalid amount: outside the supported range (at most 20 integer digits)")]


def break_into_database(server, account_id, tx_ids):
    """Writes amounts past the input limits into stored transactions and
    marks the account dirty, as a damaged or hand-edited database would."""
    for tx_id in tx_ids:
        n = len(server.sql("UPDATE transactions SET lines = ? WHERE id = ? RETURNING id",
                           (f"rBTC {NINES_96}", tx_id)))
        assert n == 1, tx_id
    n = len(server.sql("UPDATE accounts SET dirty_from = 0,"
                       " inventory_version = inventory_version + 1 WHERE id = ? RETURNING id",
                       (account_id,)))
    assert n == 1


def not_computable(r, tx_id):
    assert r.status_code == 409, r.text
    assert body(r) == {"error": "Conflict",
                       "message": f"Inventory cannot be computed: a total at transaction "
                                  f"'{tx_id}' exceeds the supported range"}


def test_not_computable_account_is_409_and_left_out_of_reports(server):
    t = server.new_tenant("notcomp")
    make_accounts(t, "nc-bad", "nc-good")
    post(t, tx("nc-big1", "nc-bad", "deposit", "2024-01-01T00:00:00Z", received=("BTC", "1", None)))
    post(t, tx("nc-big2", "nc-bad", "deposit", "2024-01-02T00:00:00Z", received=("BTC", "1", None)))
    post(t, tx("nc-w1", "nc-bad", "withdraw", "2024-01-03T00:00:00Z", sent=("BTC", "1", None)))
    post(t, tx("nc-buy", "nc-good", "income", "2024-01-01T00:00:00Z", received=("ETH", "2", "5")))
    assert ok(summaries(t, "nc-bad"))["summaries"][0]["total_quantity"] == "1"
    break_into_database(server, "nc-bad", ["nc-big1", "nc-big2"])

    not_computable(summaries(t, "nc-bad"), "nc-big2")
    not_computable(lots(t, "nc-bad", "BTC"), "nc-big2")
    not_computable(t.get("/v1/transfer-lots/transactions/nc-w1"), "nc-big2")
    assert ok(summaries(t, "nc-good"))["summaries"][0]["total_cost"] == "10"

    _, status = completed(t)
    assert status["metadata"] == {"total_accounts_included": 1,
                                  "skipped_account_ids": {"inventory_not_computable": ["nc-bad"]}}
    _, rows = download_rows(server, status)
    assert [r[:2] for r in rows[1:]] == [["nc-good", "ETH"]]

    _, status = completed(t, {"account_ids": ["nc-bad", "nc-good", "missing", "nc-bad"]})
    assert status["metadata"] == {
        "total_accounts_requested": 4, "total_accounts_included": 1,
        "skipped_account_ids": {"not_found_in_organization": ["missing"],
                                "inventory_not_computable": ["nc-bad"]}}

    # a write that mends the data makes the account computable again
    r = call(t, "DELETE", TX_PATH + "/nc-big2")
    assert r.status_code == 204, r.text
    assert ok(summaries(t, "nc-bad"))["summaries"][0]["total_quantity"] == \
        str(int(NINES_96) - 1)
    _, status = completed(t)
    assert status["metadata"] == {"total_accounts_included": 2}
