"""Disposition method records (issue 16, item 3):
POST/GET /v1/accounts/{accountId}/disposition-methods-history,
PATCH/DELETE .../disposition-methods-history/{recordId}, the account's
cost_basis_method as the method in force, and GET /v1/inventory's lot order.

Rules checked, in the issue's words:
  - "an effective_from earlier than the record's creation is refused (400)
    unless the body says recorded_elsewhere: true" (also for a PATCH);
  - "a record already in force cannot be changed or deleted (409)";
  - "two records with the same effective_from: 409";
  - an AUSTRIA account takes no records (409);
  - an unknown method, an unparsable effective_from: 400 naming the field;
  - "the account's cost_basis_method stays as the current method": the
    record in force now, else the account's own method;
  - "GET /v1/inventory lists an asset's open lots in the order the method in
    force would relieve them";
  - "a change recalculates from its effective date": lots bought at 10, 20,
    30, a sale before and one after a LIFO record.
The clock is moved with /_test/clock (the module's server has test hooks).
Every response is validated against docs/openapi.yaml by conftest.
"""
from urllib.parse import quote, urlencode

import pytest

from conftest import Server, body

HIST = "/v1/accounts/{}/disposition-methods-history"
TX_PATH = "/v1/transactions/external-id"
DAY = 86_400_000


@pytest.fixture(scope="module")
def server(tmp_path_factory, taxd_bin):
    s = Server(tmp_path_factory.mktemp("srv"), args=("--test-hooks",)).start()
    yield s
    s.stop_and_check()


@pytest.fixture
def tenant(server):  # each test starts at the real time
    server.api().post("/_test/clock", json={"offset_ms": 0})
    return server.new_tenant("disp")


def call(tenant, method, path, json_body=None):
    kw = {"headers": tenant.auth()}
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, **kw)


def set_clock(tenant, offset_ms):
    r = tenant.server.api().post("/_test/clock", json={"offset_ms": offset_ms})
    assert r.status_code in (200, 204), r.text


def make_account(tenant, account_id, method="FIFO", year=None):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": "o-" + account_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    payload = {"id": account_id, "account_owner_id": "o-" + account_id, "cost_basis_method": method}
    if year is not None:
        payload["austria_tax_year"] = year
    r = call(tenant, "POST", "/v1/accounts", payload)
    assert r.status_code == 201, r.text


def post_record(tenant, account_id, method, effective_from, **extra):
    return call(tenant, "POST", HIST.format(quote(account_id, safe="")),
                dict({"method": method, "effective_from": effective_from}, **extra))


def record_path(account_id, record_id):
    return HIST.format(quote(account_id, safe="")) + "/" + record_id


def issue_paths(r):
    assert r.status_code == 400, f"{r.status_code} {r.text}"
    return [i["path"] for i in body(r)["issues"]]


def conflict(r, fragment):
    assert r.status_code == 409, f"{r.status_code} {r.text}"
    assert fragment in body(r)["message"], body(r)


FUTURE = "2090-01-01T00:00:00Z"
FUTURE_2 = "2091-06-01T00:00:00Z"
PAST = "2020-01-01T00:00:00Z"


# ------------------------------------------------------------- the record

def test_create_answers_the_record_and_lists_by_effective_from(tenant):
    make_account(tenant, "a1")
    r = post_record(tenant, "a1", "LIFO", FUTURE_2)
    assert r.status_code == 201, r.text
    rec = body(r)["data"]
    assert rec["account_id"] == "a1" and rec["method"] == "LIFO"
    assert rec["effective_from"] == "2091-06-01T00:00:00.000Z"
    assert rec["recorded_elsewhere"] is False and len(rec["id"]) == 36
    r2 = post_record(tenant, "a1", "HIFO", FUTURE)
    assert r2.status_code == 201
    listed = body(call(tenant, "GET", HIST.format("a1")))
    assert [x["method"] for x in listed["data"]] == ["HIFO", "LIFO"]
    # paged like the other lists
    first = call(tenant, "GET", HIST.format("a1") + "?limit=1")
    page = body(first)
    assert [x["method"] for x in page["data"]] == ["HIFO"] and page["meta"]["next_cursor"]
    nxt = body(call(tenant, "GET", HIST.format("a1") + "?" +
                    urlencode({"limit": 1, "cursor": page["meta"]["next_cursor"]})))
    assert [x["method"] for x in nxt["data"]] == ["LIFO"] and nxt["meta"]["next_cursor"] is None


def test_a_past_effective_from_needs_recorded_elsewhere(tenant):
    make_account(tenant, "a2")
    assert issue_paths(post_record(tenant, "a2", "LIFO", PAST)) == [["effective_from"]]
    r = post_record(tenant, "a2", "LIFO", PAST, recorded_elsewhere=True)
    assert r.status_code == 201, r.text
    assert body(r)["data"]["recorded_elsewhere"] is True
    assert [x["effective_from"] for x in body(call(tenant, "GET", HIST.format("a2")))["data"]] \
        == ["2020-01-01T00:00:00.000Z"]


def test_bad_method_and_datetime_name_the_field(tenant):
    make_account(tenant, "a3")
    assert issue_paths(post_record(tenant, "a3", "AVERAGE", FUTURE)) == [["method"]]
    assert issue_paths(post_record(tenant, "a3", "AUSTRIA", FUTURE)) == [["method"]]
    assert issue_paths(post_record(tenant, "a3", "FIFO", "2090-13-01T00:00:00Z")) == [["effective_from"]]
    assert issue_paths(post_record(tenant, "a3", "FIFO", "tomorrow")) == [["effective_from"]]
    assert body(call(tenant, "GET", HIST.format("a3")))["data"] == []  # nothing half-written


def test_same_effective_from_is_a_conflict(tenant):
    make_account(tenant, "a4")
    assert post_record(tenant, "a4", "LIFO", FUTURE).status_code == 201
    conflict(post_record(tenant, "a4", "HIFO", "2090-01-01T01:00:00+01:00"), "already has")
    other = body(post_record(tenant, "a4", "HIFO", FUTURE_2))["data"]
    conflict(call(tenant, "PATCH", record_path("a4", other["id"]), {"effective_from": FUTURE}),
             "already has")
    assert [x["method"] for x in body(call(tenant, "GET", HIST.format("a4")))["data"]] \
        == ["LIFO", "HIFO"]


def test_austria_account_takes_no_records(tenant):
    make_account(tenant, "at", "AUSTRIA", 2024)
    conflict(post_record(tenant, "at", "LIFO", FUTURE), "AUSTRIA")


def test_patch_and_delete_before_it_is_in_force(tenant):
    make_account(tenant, "a5")
    rec = body(post_record(tenant, "a5", "LIFO", FUTURE))["data"]
    r = call(tenant, "PATCH", record_path("a5", rec["id"]), {"method": "LOFO"})
    assert r.status_code == 200, r.text
    assert body(r)["data"]["method"] == "LOFO" and body(r)["data"]["effective_from"] == rec["effective_from"]
    assert issue_paths(call(tenant, "PATCH", record_path("a5", rec["id"]),
                            {"effective_from": PAST})) == [["effective_from"]]
    assert issue_paths(call(tenant, "PATCH", record_path("a5", rec["id"]),
                            {"method": "FOO"})) == [["method"]]
    r = call(tenant, "PATCH", record_path("a5", rec["id"]),
             {"effective_from": PAST, "recorded_elsewhere": True})
    assert r.status_code == 200, r.text
    rec2 = body(post_record(tenant, "a5", "HIFO", FUTURE))["data"]
    assert call(tenant, "DELETE", record_path("a5", rec2["id"])).status_code == 204
    r = call(tenant, "DELETE", record_path("a5", rec2["id"]))
    assert r.status_code == 404 and rec2["id"] in body(r)["message"]


def test_a_record_in_force_cannot_change(tenant):
    make_account(tenant, "a6")
    rec = body(post_record(tenant, "a6", "LIFO", "2030-01-01T00:00:00Z"))["data"]
    set_clock(tenant, 0)
    r = call(tenant, "PATCH", record_path("a6", rec["id"]), {"method": "HIFO"})
    assert r.status_code == 200
    # the clock moves past effective_from: the record is in force
    import time
    offset = 1_893_456_000_000 - int(time.time() * 1000) + DAY  # 2030-01-02
    set_clock(tenant, offset)
    tenant._token = None  # the token minted before the jump has expired
    try:
        conflict(call(tenant, "PATCH", record_path("a6", rec["id"]), {"method": "LIFO"}),
                 "in force")
        conflict(call(tenant, "DELETE", record_path("a6", rec["id"])), "in force")
        acc = body(call(tenant, "GET", "/v1/accounts/a6"))["data"]
        assert acc["cost_basis_method"] == "HIFO"  # the record in force now
        listed = body(call(tenant, "GET", "/v1/accounts"))["data"]
        assert [a["cost_basis_method"] for a in listed if a["id"] == "a6"] == ["HIFO"]
    finally:
        set_clock(tenant, 0)
        tenant._token = None
    # before it, the account's own method
    assert body(call(tenant, "GET", "/v1/accounts/a6"))["data"]["cost_basis_method"] == "FIFO"


def test_account_patch_sets_the_method_where_no_record_is_in_force(tenant):
    make_account(tenant, "a7")
    assert post_record(tenant, "a7", "LIFO", PAST, recorded_elsewhere=True).status_code == 201
    r = call(tenant, "PATCH", "/v1/accounts/a7", {"cost_basis_method": "HIFO"})
    assert r.status_code == 200
    assert body(r)["data"]["cost_basis_method"] == "LIFO"  # the record is in force
    r = call(tenant, "PATCH", "/v1/accounts/a7", {"cost_basis_method": "LIFO"})
    assert r.status_code == 400  # the account's own method stays FIFO/HIFO/AUSTRIA


def test_unknown_account_and_record(tenant):
    r = post_record(tenant, "nobody", "LIFO", FUTURE)
    assert r.status_code == 404 and "nobody" in body(r)["message"]
    assert call(tenant, "GET", HIST.format("nobody")).status_code == 404
    make_account(tenant, "a8")
    make_account(tenant, "a9")
    rec = body(post_record(tenant, "a8", "LIFO", FUTURE))["data"]
    # a record of another account is not found through this one
    assert call(tenant, "PATCH", record_path("a9", rec["id"]), {"method": "HIFO"}).status_code == 404
    assert call(tenant, "DELETE", record_path("a9", rec["id"])).status_code == 404


# ------------------------------------------------------- the inventory

def line(code, amount, rate=None):
    item = {"asset_amount": {"amount": amount,
                             "asset": {"code": code, "type": "fiat" if code == "USD" else "crypto"}}}
    if rate is not None:
        item["rates"] = [{"amount": rate, "asset": {"code": "USD", "type": "fiat"}}]
    return item


def buy(tenant, account, tx_id, when, qty, usd):
    r = call(tenant, "POST", TX_PATH, {"id": tx_id, "account_id": account, "datetime": when,
                                       "type": "trade", "sent": [line("USD", usd)],
                                       "received": [line("BTC", qty, str(int(usd) // int(qty)))]})
    assert r.status_code == 201, r.text


def sell(tenant, account, tx_id, when, qty, usd):
    r = call(tenant, "POST", TX_PATH, {"id": tx_id, "account_id": account, "datetime": when,
                                       "type": "trade", "sent": [line("BTC", qty)],
                                       "received": [line("USD", usd)]})
    assert r.status_code == 201, r.text


def open_lots(tenant, account):
    r = call(tenant, "GET", "/v1/inventory?" + urlencode({"account_id": account, "asset_code": "BTC"}))
    assert r.status_code == 200, r.text
    return [(l["transaction_id"], l["quantity"]) for l in body(r)["data"]["lots"]]


def test_a_method_change_recalculates_from_its_effective_date(tenant):
    """Lots of 1 BTC bought at 10, 20 and 30 USD; a sale of 1 BTC under FIFO
    (relieves b10), a LIFO record, a sale of 1 BTC after it (relieves b30):
    b20 is left. Without the record the second sale would relieve b20."""
    make_account(tenant, "m1")
    buy(tenant, "m1", "b10", "2024-01-01T00:00:00Z", "1", "10")
    buy(tenant, "m1", "b20", "2024-02-01T00:00:00Z", "1", "20")
    buy(tenant, "m1", "b30", "2024-03-01T00:00:00Z", "1", "30")
    sell(tenant, "m1", "s1", "2024-04-01T00:00:00Z", "1", "40")
    sell(tenant, "m1", "s2", "2024-06-01T00:00:00Z", "1", "40")
    assert open_lots(tenant, "m1") == [("b30", "1")]  # FIFO: b10, b20 relieved
    rec = post_record(tenant, "m1", "LIFO", "2024-05-01T00:00:00Z", recorded_elsewhere=True)
    assert rec.status_code == 201, rec.text
    assert open_lots(tenant, "m1") == [("b20", "1")]  # s1 FIFO -> b10, s2 LIFO -> b30
    # the record's deletion is refused (in force); a later one moves nothing before it
    rid = body(rec)["data"]["id"]
    conflict(call(tenant, "DELETE", record_path("m1", rid)), "in force")


def test_inventory_lists_lots_in_the_order_of_the_method_in_force(tenant):
    make_account(tenant, "m2")
    buy(tenant, "m2", "c20", "2024-01-01T00:00:00Z", "1", "20")
    buy(tenant, "m2", "c10", "2024-02-01T00:00:00Z", "1", "10")
    buy(tenant, "m2", "c30", "2024-03-01T00:00:00Z", "1", "30")
    assert [t for t, _ in open_lots(tenant, "m2")] == ["c20", "c10", "c30"]  # FIFO
    assert post_record(tenant, "m2", "HIFO", PAST, recorded_elsewhere=True).status_code == 201
    assert [t for t, _ in open_lots(tenant, "m2")] == ["c30", "c20", "c10"]
    assert post_record(tenant, "m2", "LOFO", "2021-01-01T00:00:00Z",
                       recorded_elsewhere=True).status_code == 201
    assert [t for t, _ in open_lots(tenant, "m2")] == ["c10", "c20", "c30"]
    assert post_record(tenant, "m2", "LIFO", "2022-01-01T00:00:00Z",
                       recorded_elsewhere=True).status_code == 201
    assert [t for t, _ in open_lots(tenant, "m2")] == ["c30", "c10", "c20"]
