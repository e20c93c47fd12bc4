"""Inventory reads: GET /v1/inventory/summaries, GET /v1/inventory,
GET /v1/transfer-lots/transactions/{transactionId}, GET /v1/withholding/austria.

Rules checked, in the words of spec.md, of the issue and of docs/decisions.md
("Transactions and inventory"):
  - summaries answer per asset `total_quantity`, `total_cost`,
    `average_unit_cost` and `total_quantity_with_cost_basis`; GET
    /v1/inventory the summary and the lots; every decimal a canonical string;
  - a reference dataset (tests/data/reference_inventory.json, every value
    worked out by hand there) loaded through the API gives exactly the
    expected summaries, lots, transfer lots and withholding: the fee example
    (1 BTC for 20000 USD with a 5 USD fee is one lot costing 20005), partial
    disposals, FIFO / HIFO / AUSTRIA, a withdraw larger than the holding, a
    crypto-to-crypto trade under AUSTRIA, the tax-year boundaries;
  - "random permutations of the same transactions yield identical
    inventory": the reference posted in three orders to three fresh tenants,
    and seeded random transaction sets posted in three orders;
  - "every read reflects every acknowledged write" (backdated creates,
    updates and deletes between reads; recalculation is lazy);
  - transfer lots: "HTTP 203 when lots are returned with warnings" (spec §
    Statuses that are not errors), 404 for an unknown transaction, 400 for a
    transaction that is not a transfer out;
  - withholding: "409 when the account does not use the Austria method or
    the tax year does not match" (spec § Endpoints), 27.5% of a positive net
    rounded half to even to the cent;
  - errors: 400 with `issues` naming the query parameter, 404 naming the
    account / asset / transaction, 500 naming the transaction at which a
    total left the supported range, the gateway deny without the scope.
Every response is also validated against docs/openapi.yaml by conftest.
"""
import json
import random
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from conftest import GATEWAY_DENY, Tenant, body, raw_request

DATA = Path(__file__).resolve().parents[1] / "data" / "reference_inventory.json"
REFERENCE = json.loads(DATA.read_text())
TX_PATH = "/v1/transactions/external-id"
FIAT = {"USD"}


# ------------------------------------------------------------------ helpers

def call(tenant, method, path, json_body=None, **kw):
    kw.setdefault("headers", {}).update(tenant.auth())
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, **kw)


def get(tenant, path, **params):
    return call(tenant, "GET", path + ("?" + urlencode(params) if params else ""))


def summaries(tenant, account_id):
    return get(tenant, "/v1/inventory/summaries", account_id=account_id)


def lots(tenant, account_id, asset):
    return get(tenant, "/v1/inventory", account_id=account_id, asset_code=asset)


def transfer_lots(tenant, tx_id):
    return get(tenant, "/v1/transfer-lots/transactions/" + quote(tx_id, safe=""))


def withholding(tenant, account_id, year):
    return get(tenant, "/v1/withholding/austria", account_id=account_id, tax_year=year)


def data(r, status=200):
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:800]}"
    return body(r)["data"]


def error(r, status, message):
    """The standard envelope with the exact message."""
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:800]}"
    names = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 500: "Internal Server Error"}
    assert body(r) == {"error": names[status], "message": message}


def issues_of(r):
    assert r.status_code == 400, f"{r.status_code} {r.text}"
    b = body(r)
    assert b["error"] == "Bad Request" and b["message"] == "Invalid query parameters", b
    return b["issues"]


def line(spec):
    """[asset, amount] or [asset, amount, USD rate] -> a transaction line item."""
    code, amount = spec[0], spec[1]
    item = {"asset_amount": {"amount": amount,
                             "asset": {"code": code, "type": "fiat" if code in FIAT else "crypto"}}}
    if len(spec) > 2:
        item["rates"] = [{"amount": spec[2], "asset": {"code": "USD", "type": "fiat"}}]
    return item


def tx_body(account_id, t):
    doc = {"id": t["id"], "account_id": account_id, "datetime": t["datetime"], "type": t["type"]}
    for key in ("sent", "received", "fees"):
        if t.get(key):
            doc[key] = [line(s) for s in t[key]]
    return doc


def post_tx(tenant, account_id, t, status=(201,)):
    r = call(tenant, "POST", TX_PATH, tx_body(account_id, t))
    assert r.status_code in status, f"posting {t['id']}: {r.status_code} {r.text[:500]}"


def make_owner(tenant, owner_id):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": owner_id, "name": "Reference owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text


def make_account(tenant, account_id, method="FIFO", year=None, owner="ref-owner"):
    payload = {"id": account_id, "account_owner_id": owner, "cost_basis_method": method}
    if year is not None:
        payload["austria_tax_year"] = year
    r = call(tenant, "POST", "/v1/accounts", payload)
    assert r.status_code == 201, r.text


def make_accounts(tenant, accounts):
    make_owner(tenant, REFERENCE["owner"])
    for a in accounts:
        make_account(tenant, a["id"], a["cost_basis_method"], a.get("austria_tax_year"))


def load(tenant, order):
    """Creates the reference accounts, then posts every (account, transaction)
    pair of `order`."""
    make_accounts(tenant, REFERENCE["accounts"])
    for account_id, t in order:
        post_tx(tenant, account_id, t)


def all_pairs():
    return [(a["id"], t) for a in REFERENCE["accounts"] for t in a["transactions"]]


def snapshot(tenant, accounts):
    """Every inventory answer for the accounts: summaries, each asset's lots,
    each withdraw's transfer lots (status and body), the withholding of an
    AUSTRIA account's year. Two inventories are identical when these are."""
    out = {}
    for a in accounts:
        account_id = a["id"]
        s = data(summaries(tenant, account_id))
        out[(account_id, "summaries")] = s
        for summary in s["summaries"]:
            code = summary["asset_code"]
            out[(account_id, "lots", code)] = data(lots(tenant, account_id, code))
        for t in a["transactions"]:
            if t["type"] == "withdraw":
                r = transfer_lots(tenant, t["id"])
                out[(account_id, "transfer", t["id"])] = (r.status_code, body(r))
        if a.get("austria_tax_year"):
            out[(account_id, "withholding")] = data(withholding(tenant, account_id,
                                                                a["austria_tax_year"]))
    return out


def assert_matches_reference(tenant):
    for a in REFERENCE["accounts"]:
        check_reference_account(tenant, a)


def check_reference_account(tenant, a):
    account_id = a["id"]
    assert data(summaries(tenant, account_id)) == {"account_id": account_id,
                                                    "summaries": a["summaries"]}
    by_code = {s["asset_code"]: s for s in a["summaries"]}
    for code, expected in a["lots"].items():
        assert data(lots(tenant, account_id, code)) == {
            "account_id": account_id, "asset_code": code, "summary": by_code[code], "lots": expected}
    for tx_id, expected in a["transfer_lots"].items():
        r = transfer_lots(tenant, tx_id)
        assert r.status_code == expected["status"], f"{tx_id}: {r.status_code} {r.text}"
        b = body(r)
        assert b["data"] == {"transaction_id": tx_id, "account_id": account_id,
                             "lots": expected["lots"]}
        assert [w["code"] for w in b.get("warnings", [])] == expected.get("warning_codes", [])
    w = a.get("withholding")
    if w:
        expected = {k: w[k] for k in ("gains", "losses", "net", "withholding_rate", "withholding",
                                      "disposals")}
        expected.update(account_id=account_id, tax_year=w["tax_year"])
        assert data(withholding(tenant, account_id, w["tax_year"])) == expected


def reference_account(account_id):
    return next(a for a in REFERENCE["accounts"] if a["id"] == account_id)


@pytest.fixture(scope="module")
def ref(server):
    """One tenant holding the reference dataset, posted in file order."""
    tenant = server.new_tenant("reference")
    load(tenant, all_pairs())
    return tenant


@pytest.fixture
def fifo(tenant):
    """The tenant with an owner and an empty FIFO account 'acc'."""
    make_owner(tenant, REFERENCE["owner"])
    make_account(tenant, "acc")
    return tenant


# ------------------------------------------------------- the reference dataset

@pytest.mark.parametrize("account_id", ["ref-fifo", "ref-hifo", "ref-austria"])
def test_reference_summaries(ref, account_id):
    """Summaries per asset, ordered by code, exactly as worked out by hand."""
    a = reference_account(account_id)
    assert data(summaries(ref, account_id)) == {"account_id": account_id, "summaries": a["summaries"]}


@pytest.mark.parametrize("account_id,asset", [("ref-fifo", "BTC"), ("ref-fifo", "ETH"),
                                              ("ref-hifo", "SOL"), ("ref-austria", "BTC"),
                                              ("ref-austria", "ETH")])
def test_reference_lots(ref, account_id, asset):
    """GET /v1/inventory: the summary and the lots still held, with unit costs
    rounded half to even at 18 digits (3002 / 0.3 = 10006.666666666666666667)."""
    a = reference_account(account_id)
    summary = next(s for s in a["summaries"] if s["asset_code"] == asset)
    assert data(lots(ref, account_id, asset)) == {"account_id": account_id, "asset_code": asset,
                                                  "summary": summary, "lots": a["lots"][asset]}


@pytest.mark.parametrize("account_id,tx_id", [("ref-fifo", "f06"), ("ref-fifo", "f08"),
                                              ("ref-hifo", "h06"), ("ref-hifo", "h07"),
                                              ("ref-austria", "a08")])
def test_reference_transfer_lots(ref, account_id, tx_id):
    """The lots a withdraw relieved in the method's order; 203 with warnings
    when it sent more than the account held or relieved lots without basis."""
    expected = reference_account(account_id)["transfer_lots"][tx_id]
    r = transfer_lots(ref, tx_id)
    assert r.status_code == expected["status"], r.text
    b = body(r)
    assert b["data"] == {"transaction_id": tx_id, "account_id": account_id, "lots": expected["lots"]}
    assert [w["code"] for w in b.get("warnings", [])] == expected.get("warning_codes", [])
    if expected["status"] == 200:
        assert "warnings" not in b


def test_transfer_warnings_name_asset_and_shortfall(ref):
    """The warnings' messages say what is wrong: the quantity sent beyond the
    holding, and that relieved lots lack basis (once per asset)."""
    b = body(transfer_lots(ref, "f08"))
    assert b["warnings"] == [
        {"code": "missing_cost_basis",
         "message": "Some relieved BTC lots have no cost basis (acquired without a known USD "
                    "value, for example by a deposit)"},
        {"code": "insufficient_holdings",
         "message": "The account held less BTC than the transaction sent: 0.5 BTC were relieved "
                    "without an acquisition and without cost basis"}]


def test_reference_withholding(ref):
    """Gains and losses of 2024 under the moving average: the carry (a03), the
    withdraw (a08) and the 2025 sale (a10) are not disposals of 2024; the
    last millisecond of 2024 (a09) is. 7711 x 0.275 = 2120.525 -> 2120.52."""
    check_reference_account(ref, reference_account("ref-austria"))
    w = data(withholding(ref, "ref-austria", 2024))
    assert w["withholding"] == "2120.52"
    assert [d["transaction_id"] for d in w["disposals"]] == ["a04", "a05", "a06", "a09"]


def test_fee_example(fifo):
    """"Buy 1 BTC for 20000 USD with a 5 USD fee -> one lot costing 20005"."""
    post_tx(fifo, "acc", {"id": "fee-1", "datetime": "2024-01-01T00:00:00Z", "type": "trade",
                          "sent": [["USD", "20000"]], "received": [["BTC", "1"]],
                          "fees": [["USD", "5"]]})
    assert data(lots(fifo, "acc", "BTC"))["lots"] == [
        {"transaction_id": "fee-1", "acquired_at": "2024-01-01T00:00:00.000Z", "quantity": "1",
         "cost_basis": "20005", "unit_cost": "20005"}]


# ------------------------------------------------------------- permutations

def test_reference_permutations_are_identical(server):
    """The same transactions posted in three orders (file order, reversed, and
    shuffled across accounts) to three fresh tenants give identical
    inventories, each equal to the hand-worked reference."""
    pairs = all_pairs()
    shuffled = list(pairs)
    random.Random(20240601).shuffle(shuffled)
    assert shuffled != pairs and shuffled != pairs[::-1]
    snapshots = []
    for name, order in (("forward", pairs), ("reverse", pairs[::-1]), ("shuffled", shuffled)):
        tenant = server.new_tenant(f"perm-{name}")
        load(tenant, order)
        assert_matches_reference(tenant)
        snapshots.append(snapshot(tenant, REFERENCE["accounts"]))
    assert snapshots[0] == snapshots[1] == snapshots[2]


DATETIMES = ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-02-01T00:00:00Z",
             "2024-03-15T12:30:00Z", "2024-06-30T23:59:59.999Z", "2024-09-01T00:00:00Z"]
AMOUNTS = ["0.1", "0.25", "1", "1.5", "3", "0.333333333333333333"]
PRICES = ["97", "1000", "20000.5", "0.07", "3"]


def random_transactions(rng, prefix, count):
    """Buys, sales, income, deposits, withdraws, crypto-to-crypto trades and
    fees over two assets, at few distinct datetimes so that ties (same
    instant, same type) are common."""
    out = []
    for i in range(count):
        kind = rng.choice(["buy", "buy", "sell", "income", "deposit", "withdraw", "swap"])
        asset, other = rng.sample(["BTC", "ETH"], 2)
        t = {"id": f"{prefix}-{i:02d}", "datetime": rng.choice(DATETIMES)}
        amount, price = rng.choice(AMOUNTS), rng.choice(PRICES)
        if kind == "buy":
            t.update(type="trade", sent=[["USD", price]], received=[[asset, amount]])
            if rng.random() < 0.5:
                t["fees"] = [["USD", rng.choice(["1", "0.5"])]]
        elif kind == "sell":
            t.update(type="trade", sent=[[asset, amount]], received=[["USD", price]])
        elif kind == "income":
            t.update(type="income", received=[[asset, amount, price]])
        elif kind == "deposit":
            t.update(type="deposit", received=[[asset, amount]])
        elif kind == "withdraw":
            t.update(type="withdraw", sent=[[asset, amount]])
            if rng.random() < 0.3:
                t["fees"] = [[asset, "0.01", price]]
        else:
            t.update(type="trade", sent=[[asset, amount]], received=[[other, rng.choice(AMOUNTS)]])
        out.append(t)
    return out


def test_random_permutations_are_identical(server):
    """Property: for seeded random transaction sets under each method, three
    posting orders (as generated, reversed, shuffled) into three tenants give
    the same summaries, lots, transfer lots and withholding."""
    tenants = [server.new_tenant(f"prop-{i}") for i in range(3)]
    for t in tenants:
        make_owner(t, REFERENCE["owner"])
    for seed, method in ((11, "FIFO"), (12, "HIFO"), (13, "AUSTRIA")):
        rng = random.Random(seed)
        txs = random_transactions(rng, f"s{seed}", 14)
        shuffled = list(txs)
        rng.shuffle(shuffled)
        year = 2024 if method == "AUSTRIA" else None
        account = {"id": f"prop-{seed}", "transactions": txs, "austria_tax_year": year}
        snapshots = []
        for tenant, order in zip(tenants, (txs, txs[::-1], shuffled)):
            make_account(tenant, account["id"], method, year)
            for t in order:
                post_tx(tenant, account["id"], t)
            snapshots.append(snapshot(tenant, [account]))
        assert snapshots[0] == snapshots[1] == snapshots[2], f"seed {seed} ({method})"
        assert snapshots[0][(account["id"], "summaries")]["summaries"], "the set held something"


# ---------------------------------------------------------------- freshness

def buy(tx_id, when, amount, usd):
    return {"id": tx_id, "datetime": when, "type": "trade", "sent": [["USD", usd]],
            "received": [["BTC", amount]]}


def btc_summary(tenant):
    s = data(summaries(tenant, "acc"))["summaries"]
    assert [x["asset_code"] for x in s] == ["BTC"]
    return s[0]


def test_every_read_reflects_every_acknowledged_write(fifo):
    """Writes only mark the account stale; the next read recalculates, so a
    backdated create, an update and a delete are each visible at once."""
    post_tx(fifo, "acc", buy("t1", "2024-03-01T00:00:00Z", "1", "100"))
    assert btc_summary(fifo) == {"asset_code": "BTC", "total_quantity": "1", "total_cost": "100",
                                 "average_unit_cost": "100", "total_quantity_with_cost_basis": "1"}
    post_tx(fifo, "acc", buy("t0", "2024-01-01T00:00:00Z", "1", "50"))       # backdated
    post_tx(fifo, "acc", {"id": "w1", "datetime": "2024-04-01T00:00:00Z", "type": "withdraw",
                          "sent": [["BTC", "1"]]})
    assert btc_summary(fifo)["total_cost"] == "100"                         # FIFO took t0
    assert data(transfer_lots(fifo, "w1"))["lots"][0]["acquisition_transaction_id"] == "t0"

    post_tx(fifo, "acc", buy("t0", "2024-05-01T00:00:00Z", "1", "70"), status=(200,))  # update
    assert btc_summary(fifo)["total_cost"] == "70"                          # now w1 took t1
    assert data(transfer_lots(fifo, "w1"))["lots"] == [
        {"asset_code": "BTC", "acquired_at": "2024-03-01T00:00:00.000Z",
         "acquisition_transaction_id": "t1", "quantity": "1", "cost_basis": "100"}]

    r = call(fifo, "DELETE", TX_PATH + "/t1")
    assert r.status_code == 204, r.text
    assert data(transfer_lots(fifo, "w1"), 203)["lots"] == [
        {"asset_code": "BTC", "acquired_at": None, "acquisition_transaction_id": None,
         "quantity": "1", "cost_basis": None}]
    assert btc_summary(fifo) == {"asset_code": "BTC", "total_quantity": "1", "total_cost": "70",
                                 "average_unit_cost": "70", "total_quantity_with_cost_basis": "1"}


def test_asset_wholly_relieved_keeps_a_zero_summary(fifo):
    """An asset sold to zero still has a summary (zeros, no average) and no lots."""
    post_tx(fifo, "acc", buy("z1", "2024-01-01T00:00:00Z", "2", "10"))
    post_tx(fifo, "acc", {"id": "z2", "datetime": "2024-02-01T00:00:00Z", "type": "trade",
                          "sent": [["BTC", "2"]], "received": [["USD", "30"]]})
    zero = {"asset_code": "BTC", "total_quantity": "0", "total_cost": "0",
            "average_unit_cost": None, "total_quantity_with_cost_basis": "0"}
    assert data(summaries(fifo, "acc")) == {"account_id": "acc", "summaries": [zero]}
    assert data(lots(fifo, "acc", "BTC")) == {"account_id": "acc", "asset_code": "BTC",
                                              "summary": zero, "lots": []}


def test_account_without_transactions_has_no_summaries(fifo):
    assert data(summaries(fifo, "acc")) == {"account_id": "acc", "summaries": []}
    error(lots(fifo, "acc", "BTC"), 404, "No inventory of asset 'BTC' in account 'acc'")


def test_withdraw_of_reporting_currency_has_no_lots(fifo):
    """USD is never held as lots: a withdraw of USD relieves nothing (200, [])."""
    post_tx(fifo, "acc", {"id": "u1", "datetime": "2024-01-01T00:00:00Z", "type": "withdraw",
                          "sent": [["USD", "10"]]})
    assert data(transfer_lots(fifo, "u1")) == {"transaction_id": "u1", "account_id": "acc",
                                               "lots": []}


def test_fee_in_sent_asset_is_not_a_transfer_lot(fifo):
    """A withdraw's fee paid in the sent asset is a disposal: only the sent
    quantity is answered as transfer lots."""
    post_tx(fifo, "acc", buy("b1", "2024-01-01T00:00:00Z", "2", "200"))
    post_tx(fifo, "acc", {"id": "w1", "datetime": "2024-02-01T00:00:00Z", "type": "withdraw",
                          "sent": [["BTC", "1"]], "fees": [["BTC", "0.5", "90"]]})
    assert data(transfer_lots(fifo, "w1"))["lots"] == [
        {"asset_code": "BTC", "acquired_at": "2024-01-01T00:00:00.000Z",
         "acquisition_transaction_id": "b1", "quantity": "1", "cost_basis": "100"}]
    assert btc_summary(fifo)["total_quantity"] == "0.5"


# --------------------------------------------------------------- withholding

def austria(tenant, account_id="aut", year=2024):
    make_owner(tenant, REFERENCE["owner"])
    make_account(tenant, account_id, "AUSTRIA", year)
    return tenant


def test_withholding_without_basis_or_proceeds_is_not_in_totals(tenant):
    """A disposal of lots without basis, and one beyond the holding, are listed
    with a null gain and left out of the totals; a net loss withholds "0"."""
    austria(tenant)
    post_tx(tenant, "aut", {"id": "d1", "datetime": "2024-01-01T00:00:00Z", "type": "deposit",
                            "received": [["BTC", "1"]]})
    post_tx(tenant, "aut", buy("b1", "2024-01-02T00:00:00Z", "1", "1000"))
    post_tx(tenant, "aut", {"id": "s1", "datetime": "2024-02-01T00:00:00Z", "type": "trade",
                            "sent": [["BTC", "2.5"]], "received": [["USD", "1250"]]})
    w = data(withholding(tenant, "aut", 2024))
    # FIFO quantities: d1 1 (no basis), b1 1 (pool 1 / 1000), 0.5 beyond the holding.
    # Proceeds 1250 split by quantity: 500, 500, 250.
    assert w == {
        "account_id": "aut", "tax_year": 2024, "gains": "0", "losses": "500", "net": "-500",
        "withholding_rate": "0.275", "withholding": "0",
        "disposals": [
            {"transaction_id": "s1", "asset_code": "BTC", "datetime": "2024-02-01T00:00:00.000Z",
             "quantity": "1", "proceeds": "500", "cost_basis": None, "gain": None},
            {"transaction_id": "s1", "asset_code": "BTC", "datetime": "2024-02-01T00:00:00.000Z",
             "quantity": "1", "proceeds": "500", "cost_basis": "1000", "gain": "-500"},
            {"transaction_id": "s1", "asset_code": "BTC", "datetime": "2024-02-01T00:00:00.000Z",
             "quantity": "0.5", "proceeds": "250", "cost_basis": None, "gain": None}]}


@pytest.mark.parametrize("net,expected", [("1", "0.28"), ("3", "0.82"), ("0.01", "0"),
                                          ("0.02", "0.01"), ("10.1", "2.78"),
                                          ("0.000000000000000001", "0")])
def test_withholding_rounds_half_to_even_to_the_cent(tenant, net, expected):
    """27.5% of the net, rounded once, half to even, to the cent: 0.275 ->
    0.28, 0.825 -> 0.82, 0.0055 -> 0.01, 2.7775 -> 2.78. Since issue 16 the
    proceeds are in cents already (half up), so a net below half a cent is 0."""
    austria(tenant)
    post_tx(tenant, "aut", buy("b1", "2024-01-01T00:00:00Z", "1", "100"))
    proceeds = str(Decimal("100") + Decimal(net))
    post_tx(tenant, "aut", {"id": "s1", "datetime": "2024-02-01T00:00:00Z", "type": "trade",
                            "sent": [["BTC", "1"]], "received": [["USD", proceeds]]})
    w = data(withholding(tenant, "aut", 2024))
    in_cents = "0" if Decimal(net) < Decimal("0.005") else net
    assert (w["net"], w["withholding"]) == (in_cents, expected)


def test_withholding_conflicts(ref, fifo):
    """409 when the account does not use the Austria method or the tax year
    is not its austria_tax_year; the message names the reason."""
    error(withholding(fifo, "acc", 2024), 409, "Account 'acc' does not use the Austria method")
    error(withholding(ref, "ref-austria", 2023), 409,
          "Tax year 2023 does not match the account's Austrian tax year 2024")
    error(withholding(ref, "ref-austria", 2025), 409,
          "Tax year 2025 does not match the account's Austrian tax year 2024")


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("path", ["/v1/inventory/summaries", "/v1/inventory",
                                  "/v1/withholding/austria"])
def test_missing_query_parameters(tenant, path):
    """Required query parameters, each named by an issue's path."""
    expected = {"/v1/inventory/summaries": [["account_id"]],
                "/v1/inventory": [["account_id"], ["asset_code"]],
                "/v1/withholding/austria": [["account_id"], ["tax_year"]]}[path]
    issues = issues_of(get(tenant, path))
    assert [i["path"] for i in issues] == expected
    assert all(i["code"] == "invalid_type" for i in issues)
    assert issues[0]["message"] == "Invalid input: expected string, received undefined"


def test_empty_query_parameters(tenant):
    issues = issues_of(get(tenant, "/v1/inventory", account_id="", asset_code=""))
    assert issues == [
        {"code": "too_small", "path": [p], "message": "Too small: expected string to have >=1 characters",
         "origin": "string", "minimum": 1, "inclusive": True} for p in ("account_id", "asset_code")]


@pytest.mark.parametrize("year,code,message", [
    ("", "invalid_type", "Invalid input: expected int"),
    ("20x4", "invalid_type", "Invalid input: expected int"),
    ("-2024", "invalid_type", "Invalid input: expected int"),
    ("2024.0", "invalid_type", "Invalid input: expected int"),
    ("1899", "too_small", "Too small: expected number to be >=1900"),
    ("2201", "too_big", "Too big: expected number to be <=2200"),
    ("99999999999999999999", "invalid_type", "Invalid input: expected int")])
def test_tax_year_must_be_an_integer_in_range(tenant, year, code, message):
    issues = issues_of(get(tenant, "/v1/withholding/austria", account_id="x", tax_year=year))
    assert [(i["code"], i["path"], i["message"]) for i in issues] == [(code, ["tax_year"], message)]


def test_malformed_query_string(tenant):
    r = raw_request(tenant.server, "GET", "/v1/inventory/summaries?account_id=%zz",
                    headers=tenant.auth())
    error(r, 400, "The query string is not validly percent-encoded")


@pytest.mark.parametrize("route", ["summaries", "lots", "withholding"])
def test_unknown_account_is_404(ref, route):
    """Another tenant's account is not found like any missing one."""
    other = ref.server.new_tenant("other")
    r = {"summaries": lambda t: summaries(t, "ref-fifo"),
         "lots": lambda t: lots(t, "ref-fifo", "BTC"),
         "withholding": lambda t: withholding(t, "ref-fifo", 2024)}[route](other)
    error(r, 404, "Account with id 'ref-fifo' not found")


def test_unknown_account_id_with_invalid_utf8(tenant):
    error(call(tenant, "GET", "/v1/inventory/summaries?account_id=a%FFb"), 404,
          "Account with id 'a\ufffdb' not found")


def test_asset_never_held_is_404(ref):
    error(lots(ref, "ref-fifo", "SOL"), 404, "No inventory of asset 'SOL' in account 'ref-fifo'")
    error(lots(ref, "ref-fifo", "btc"), 404, "No inventory of asset 'btc' in account 'ref-fifo'")
    error(lots(ref, "ref-fifo", "USD"), 404, "No inventory of asset 'USD' in account 'ref-fifo'")


def test_transfer_lots_unknown_transaction_is_404(ref):
    error(transfer_lots(ref, "nope"), 404, "Transaction with id 'nope' not found")
    other = ref.server.new_tenant("other")
    error(transfer_lots(other, "f06"), 404, "Transaction with id 'f06' not found")


# A deposit left this list in issue 16: its GET answers its provided lots
# (tests/api/test_transfer_lots.py).
@pytest.mark.parametrize("tx_id,what", [("f01", "a trade"), ("f03", "an income"),
                                        ("f07", "an expense")])
def test_transfer_lots_of_other_types_is_400(ref, tx_id, what):
    error(transfer_lots(ref, tx_id), 400, f"Transaction '{tx_id}' is {what}, not a transfer out")


def test_transfer_lots_id_with_reserved_characters(fifo):
    """Path ids are percent-decoded once, so ids may hold '/', '%', '+', ' '."""
    tx_id = "w/1 %+\u00e9"
    post_tx(fifo, "acc", buy("b1", "2024-01-01T00:00:00Z", "1", "10"))
    post_tx(fifo, "acc", {"id": tx_id, "datetime": "2024-02-01T00:00:00Z", "type": "withdraw",
                          "sent": [["BTC", "0.5"]]})
    assert data(transfer_lots(fifo, tx_id)) == {
        "transaction_id": tx_id, "account_id": "acc",
        "lots": [{"asset_code": "BTC", "acquired_at": "2024-01-01T00:00:00.000Z",
                  "acquisition_transaction_id": "b1", "quantity": "0.5", "cost_basis": "5"}]}


def test_totals_beyond_20_integer_digits_are_exact(fifo):
    """Two holdings of 6 x 10^19 sum past 20 integer digits: totals are held
    wider than the amounts sent (docs/decisions.md, Amounts and the range of
    totals), so the inventory is exact on every route (before: 500). The 409
    for an account that cannot be computed: tests/api/test_amounts.py."""
    for tx_id, when in (("big1", "2024-01-01T00:00:00Z"), ("big2", "2024-01-02T00:00:00Z")):
        post_tx(fifo, "acc", {"id": tx_id, "datetime": when, "type": "deposit",
                              "received": [["BTC", "60000000000000000000"]]})
    post_tx(fifo, "acc", {"id": "w1", "datetime": "2024-01-03T00:00:00Z", "type": "withdraw",
                          "sent": [["BTC", "1"]]})
    assert btc_summary(fifo)["total_quantity"] == "119999999999999999999"
    assert data(lots(fifo, "acc", "BTC"))["summary"]["total_quantity"] == "119999999999999999999"
    assert transfer_lots(fifo, "w1").status_code == 203  # lots without basis: a warning
    r = call(fifo, "DELETE", TX_PATH + "/big2")
    assert r.status_code == 204, r.text
    assert btc_summary(fifo)["total_quantity"] == "59999999999999999999"


def test_scope_inventory_is_required(server):
    """A credential whose scopes do not include `inventory` gets the gateway
    deny on every inventory route; one with `inventory` reads."""
    base = server.new_tenant("scoped")
    make_owner(base, REFERENCE["owner"])
    make_account(base, "acc")
    c = server.admin("credentials", "create", "--tenant", base.tenant_id, "--scopes", "accounts")
    denied = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    for r in (summaries(denied, "acc"), lots(denied, "acc", "BTC"), transfer_lots(denied, "x"),
              withholding(denied, "acc", 2024)):
        assert (r.status_code, body(r)) == (403, GATEWAY_DENY)
    c = server.admin("credentials", "create", "--tenant", base.tenant_id, "--scopes", "inventory")
    allowed = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    assert data(summaries(allowed, "acc")) == {"account_id": "acc", "summaries": []}


def test_store_failure_is_500(hooks_server):
    tenant = hooks_server.new_tenant("fault")
    make_owner(tenant, REFERENCE["owner"])
    make_account(tenant, "acc")
    tenant.token  # minted before the fault
    api = hooks_server.api()
    assert api.post("/_test/store-fault", json={"failing": True}).status_code == 200
    try:
        error(summaries(tenant, "acc"), 500, "The request could not be completed")
        error(transfer_lots(tenant, "w1"), 500, "The request could not be completed")
    finally:
        assert api.post("/_test/store-fault", json={"failing": False}).status_code == 200
    assert data(summaries(tenant, "acc")) == {"account_id": "acc", "summaries": []}
