"""Transactions by the caller's id: POST /v1/transactions/external-id,
GET and DELETE /v1/transactions/external-id/{transactionId}.

Rules checked, in the words of spec.md and of the issue where they have them
(decisions in docs/decisions.md, "Transactions and inventory"):
  - the model follows Taxbit's transaction version 2: id, account_id,
    datetime (ISO 8601, answered in UTC with milliseconds), type (trade,
    deposit, withdraw, income, expense) with an optional subtype, sent /
    received / fees arrays of line items, optional metadata; which arrays
    each type requires is validated (trade: sent and received; deposit and
    income: received; withdraw and expense: sent);
  - "Amounts are decimal strings": a JSON number is refused; at least 18
    fractional and 20 integer digits are accepted and a value outside the
    range "is rejected with a validation issue, never rounded silently";
  - an asset code the tenant has not configured "is created on first use
    with the line item's type"; DELETE /v1/assets/{code} answers 409 once a
    transaction references it (spec § Endpoints);
  - "POST creates (201) or updates (200) by (tenant, id); the last write
    wins; moving an existing id to another account is a 400";
  - "Resending the same transaction is safe" (spec § Retry safety 2): same
    result, no duplicate, no second event;
  - concurrent upserts of one id are serialised, never duplicated or lost
    (taxd serialises rather than refuses; proved with the test-only pause
    header, not with timing);
  - the endpoint's own errors use the transactions shape (`status`,
    `message`, `data[]` with the validation detail in `data[].message`,
    `error` {errorType, errBody, errorMessage}); authentication, rate-limit,
    413 and 504 answers keep the shapes they have everywhere; the gateway
    deny for a credential without the scope;
  - a lookup of an unknown external id answers the lookup shape (`status`
    `error` and a message naming the external id and the tenant);
  - every create, update and delete writes an INVENTORY_UPDATE event into
    the outbox in the same database transaction; an event not yet claimed
    for delivery is widened instead of adding a new one. There is no webhook
    delivery yet, so the outbox (table `events`) is read from the server's
    database through conftest's Database (sqlite3, or psql on PostgreSQL).
Every response is also validated against docs/openapi.yaml by conftest.
"""
import http.client
import json
import re
import socket
import threading
import time
from datetime import datetime, timezone
from urllib.parse import quote

import pytest

from conftest import (ENDPOINT_LIMIT, GATEWAY_DENY, HTTP_TIMEOUT_S, INVALID_HEADER, INVALID_TOKEN,
                      TAXD_TEST_PG,
                      RFC3339_MS_Z_RE, TENANT_LIMIT_RE, TIMEOUT_BODY, UUID4_RE, RawResponse, body,
                      Tenant, check_against_openapi, check_json_content_type, check_request_id, poll,
                      set_rule)

TX_PATH = "/v1/transactions/external-id"
TYPES = ["trade", "deposit", "withdraw", "income", "expense"]
ASSET_TYPES = ["crypto", "fiat", "nft", "security"]
REQUIRED = {"trade": ("sent", "received"), "deposit": ("received",), "income": ("received",),
            "withdraw": ("sent",), "expense": ("sent",)}
PAUSE_HEADER = "x-taxd-test-pause-ms"
PAUSE_MS = 4000   # long enough for a second request to arrive on 2 shared cores under ASan
T0 = "2024-03-01T10:00:00.000Z"


# ------------------------------------------------------------------ helpers

def ms(text):
    """Milliseconds since the epoch of an RFC 3339 datetime (the outbox stores ms)."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def line(code="BTC", amount="1.5", type_="crypto", rates=None):
    item = {"asset_amount": {"amount": amount, "asset": {"code": code, "type": type_}}}
    if rates is not None:
        item["rates"] = rates
    return item


def usd(amount):
    return {"amount": amount, "asset": {"code": "USD", "type": "fiat"}}


def tx(id_="t1", account="a1", when=T0, type_="deposit", **fields):
    """A valid transaction of the given type: the arrays it requires, one line each."""
    doc = {"id": id_, "account_id": account, "datetime": when, "type": type_}
    if "sent" in REQUIRED[type_]:
        doc["sent"] = [line("USD", "30000", "fiat")] if type_ == "trade" else [line()]
    if "received" in REQUIRED[type_]:
        doc["received"] = [line(rates=[usd("20000")])]
    doc.update(fields)
    return doc


def call(tenant, method, path, json_body=None, token=None, headers=None, **kw):
    h = dict(tenant.auth(token))
    h.update(headers or {})
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, headers=h, **kw)


def post(tenant, payload, **kw):
    return call(tenant, "POST", TX_PATH, payload, **kw)


def tx_path(tx_id):
    return f"{TX_PATH}/{quote(tx_id, safe='')}"


def get(tenant, tx_id, **kw):
    return call(tenant, "GET", tx_path(tx_id), **kw)


def delete(tenant, tx_id, **kw):
    return call(tenant, "DELETE", tx_path(tx_id), **kw)


def data(r, status):
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:800]}"
    return body(r)["data"]


def tx_error(message, error_type, issues=()):
    """The transactions shape; errBody repeats data."""
    return {"status": "error", "message": message, "data": list(issues),
            "error": {"errorType": error_type, "errBody": list(issues), "errorMessage": message}}


def assert_invalid(r, *issues):
    """400 in the transactions shape with exactly these issues in data[]."""
    assert r.status_code == 400, f"expected 400, got {r.status_code}: {r.text[:800]}"
    assert body(r) == tx_error("Validation failed", "ValidationError", issues)


def custom(path, message):
    return {"code": "custom", "path": path, "message": message}


def amount_issue(path, problem):
    return custom(path, f"Invalid amount: {problem}")


SYNTAX_ISSUE = {"code": "invalid_format", "origin": "string", "format": "decimal",
                "message": 'Invalid decimal: expected a plain decimal string such as "12.50"'}


def lookup_404(tenant, tx_id):
    return {"status": "error",
            "message": f"Transaction with external id '{tx_id}' not found for tenant '{tenant.tenant_id}'"}


def stored_part(record):
    """The record without the fields the service chooses, after checking them."""
    record = dict(record)
    assert UUID4_RE.match(record.pop("uuid")), record
    for k in ("created_at", "updated_at"):
        assert RFC3339_MS_Z_RE.match(record.pop(k)), record
    return record


def make_owner(tenant, owner_id="o1"):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": owner_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text


def make_account(tenant, account_id, owner_id="o1"):
    r = call(tenant, "POST", "/v1/accounts", {"id": account_id, "account_owner_id": owner_id})
    return data(r, 201)["uuid"]


def book_for(server, name="tx"):
    """A fresh tenant with owner o1 and accounts a1 and a2 (their uuids in .accounts)."""
    t = server.new_tenant(name)
    make_owner(t)
    t.accounts = {a: make_account(t, a) for a in ("a1", "a2")}
    return t


@pytest.fixture
def book(server):
    return book_for(server)


# -- the outbox, read straight from the server's database

def db_rows(server, sql, params=()):
    return server.db.rows(sql, params)


def db_exec(server, sql, params=()):
    server.sql(sql, params)


def events(tenant):
    return db_rows(tenant.server, "SELECT * FROM events WHERE tenant_id = ? ORDER BY rowid",
                   (tenant.tenant_id,))


def claim_all(tenant):
    """What the webhook dispatcher will do when it takes events for delivery."""
    db_exec(tenant.server, "UPDATE events SET claimed_at = 1 WHERE tenant_id = ? AND claimed_at IS NULL",
            (tenant.tenant_id,))


def open_events(tenant):
    return [e for e in events(tenant) if e["claimed_at"] is None]


def assert_event(e, tenant, account, from_dt, from_tx, latest_dt, latest_tx):
    """One INVENTORY_UPDATE row as the webhook will carry it: id, account_id
    (the account's uuid), alternate_account_id (the caller's account id),
    update_from_datetime, latest_transaction_datetime and, only while no
    transaction was deleted, the two transaction ids."""
    assert e["type"] == "INVENTORY_UPDATE", e
    assert UUID4_RE.match(e["id"]), e
    assert e["tenant_id"] == tenant.tenant_id
    assert e["account_uuid"] == tenant.accounts[account], e
    assert e["account_id"] == account, e
    assert (e["from_ms"], e["latest_ms"]) == (ms(from_dt), ms(latest_dt)), e
    if from_tx is None:
        assert latest_tx is None
        assert (e["has_ids"], e["from_tx"], e["latest_tx"]) == (0, None, None), e
    else:
        assert (e["has_ids"], e["from_tx"], e["latest_tx"]) == (1, from_tx, latest_tx), e


def tx_rows(tenant, tx_id):
    return db_rows(tenant.server, "SELECT * FROM transactions"
                   " WHERE tenant = (SELECT rowid FROM tenants WHERE id = ?) AND id = ?",
                   (tenant.tenant_id, tx_id))


# -- holding a write open (pause header, --test-hooks only)

def write_lock_held(server):
    """True while some connection holds the database's write lock (on
    PostgreSQL: a session holds a transaction that wrote, or is paused in one)."""
    return server.db.write_held()


class Background(threading.Thread):
    """One request on its own thread and connection; .response when done."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.response, self.error = fn, None, None

    def run(self):
        try:
            self.response = self.fn()
        except BaseException as exc:  # reported by result()
            self.error = exc

    def result(self):
        self.join(HTTP_TIMEOUT_S * 2)
        assert not self.is_alive(), "request did not finish"
        if self.error:
            raise self.error
        return self.response


def hold_upsert(tenant, payload, pause_ms=PAUSE_MS):
    """Starts an upsert whose write transaction the server holds open for
    pause_ms, and returns once the write lock is observably held."""
    first = Background(lambda: post(tenant, payload, headers={PAUSE_HEADER: str(pause_ms)}))
    first.start()
    poll(lambda: write_lock_held(tenant.server) or first.response is not None or first.error,
         HTTP_TIMEOUT_S, interval=0.01, what="the held upsert to take the write lock")
    assert first.response is None and first.error is None, "the held upsert finished before it was observed"
    return first


class RawPost:
    """A POST written to the socket at once (sendall returns when the kernel
    has it), its answer read later: proves when the request was sent."""

    def __init__(self, tenant, payload, headers=None):
        self.server = tenant.server
        data = json.dumps(payload).encode()
        head = [f"POST {TX_PATH} HTTP/1.1", f"Host: 127.0.0.1:{self.server.port}",
                f"Authorization: Bearer {tenant.token}", "Content-Type: application/json",
                f"Content-Length: {len(data)}", "Connection: close"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=HTTP_TIMEOUT_S * 2)
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    def response(self):
        resp = http.client.HTTPResponse(self.sock, method="POST")
        try:
            resp.begin()
            r = RawResponse("POST", TX_PATH, resp.status, resp.getheaders(), resp.read())
        finally:
            resp.close()
            self.sock.close()
        check_request_id(self.server, r)
        check_json_content_type(r)
        check_against_openapi(r)
        return r


# ===================================================================== model

def test_create_201_answers_the_canonical_record(book):
    """The stored document is the canonical form: decimals without trailing
    zeros ("20000.00" -> "20000", "1.50" -> "1.5"), the datetime converted to
    UTC with milliseconds, absent optional parts answered as null / []."""
    payload = {"id": "t1", "account_id": "a1", "datetime": "2024-01-02T03:04:05+02:00",
               "type": "trade",
               "sent": [line("USD", "30000.00", "fiat")],
               "received": [line("BTC", "1.50", rates=[usd("20000.00")])]}
    rec = data(post(book, payload), 201)
    expected = {"id": "t1", "account_id": "a1", "datetime": "2024-01-02T01:04:05.000Z",
                "type": "trade", "subtype": None,
                "sent": [{"asset_amount": {"amount": "30000", "asset": {"code": "USD", "type": "fiat"}},
                          "rates": []}],
                "received": [{"asset_amount": {"amount": "1.5", "asset": {"code": "BTC", "type": "crypto"}},
                              "rates": [{"amount": "20000", "asset": {"code": "USD", "type": "fiat"}}]}],
                "fees": [], "metadata": None}
    assert stored_part(rec) == expected
    assert rec["created_at"] == rec["updated_at"]
    assert data(get(book, "t1"), 200) == rec, "GET answers the stored transaction"


def test_optional_parts_are_kept(book):
    """subtype, fees and metadata (any JSON object, kept as sent)."""
    metadata = {"note": "k\u00f6ln \u6771\u4eac", "nested": {"list": [1, "two", None, True]}}
    payload = tx(subtype="airdrop", metadata=metadata, fees=[line("ETH", "0.0010", "crypto")])
    rec = data(post(book, payload), 201)
    assert rec["subtype"] == "airdrop"
    assert rec["metadata"] == metadata
    assert rec["fees"] == [{"asset_amount": {"amount": "0.001", "asset": {"code": "ETH", "type": "crypto"}},
                            "rates": []}]
    assert data(get(book, "t1"), 200) == rec


def test_null_subtype_and_metadata_mean_absent_and_unknown_fields_are_ignored(book):
    rec = data(post(book, tx(subtype=None, metadata=None, extra_field={"x": 1})), 201)
    assert rec["subtype"] is None and rec["metadata"] is None
    assert "extra_field" not in rec


@pytest.mark.parametrize("when,answered", [
    ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000Z"),
    ("2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05.500Z"),
    ("2024-01-02T00:30:00-05:30", "2024-01-02T06:00:00.000Z"),
    ("2024-01-01T23:00:00.123+02:00", "2024-01-01T21:00:00.123Z"),
    ("2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.123Z"),  # kept to the millisecond
])
def test_datetime_is_answered_in_utc_with_milliseconds(book, when, answered):
    assert data(post(book, tx(when=when)), 201)["datetime"] == answered


@pytest.mark.parametrize("when", [
    "yesterday", "2024-01-02", "2024-01-02T03:04:05", "2024-01-02 03:04:05Z", "2024-01-02T03:04Z",
    "2024-02-30T00:00:00Z", "2024-01-02T24:00:00Z", "2024-01-02T03:04:05.1234567891Z",
    "2024-01-02T03:04:05+2:00",
])
def test_datetime_must_be_iso_8601_with_a_zone(book, when):
    r = post(book, tx(when=when))
    assert_invalid(r, {"code": "invalid_format", "path": ["datetime"], "message": "Invalid ISO datetime",
                       "origin": "string", "format": "datetime"})


@pytest.mark.parametrize("type_", TYPES)
def test_each_type_with_its_required_arrays_is_created(book, type_):
    rec = data(post(book, tx(type_=type_)), 201)
    assert rec["type"] == type_
    for name in ("sent", "received"):
        assert (len(rec[name]) == 1) == (name in REQUIRED[type_]), rec


@pytest.mark.parametrize("type_", TYPES)
def test_fees_are_allowed_with_every_type(book, type_):
    rec = data(post(book, tx(type_=type_, fees=[line("ETH", "0.01")])), 201)
    assert len(rec["fees"]) == 1


@pytest.mark.parametrize("type_,missing", [(t, a) for t, arrays in REQUIRED.items() for a in arrays])
@pytest.mark.parametrize("how", ["absent", "empty"])
def test_type_requires_its_arrays(book, type_, missing, how):
    """Which arrays each type requires is validated (trade: sent and
    received; deposit and income: received; withdraw and expense: sent)."""
    payload = tx(type_=type_)
    if how == "absent":
        del payload[missing]
    else:
        payload[missing] = []
    r = post(book, payload)
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["code"] == "custom" and issue["path"] == [missing], issue
    article = "An" if type_[0] in "aeiou" else "A"
    assert issue["message"] == f"{article} {type_} transaction needs at least one {missing} line item", issue


@pytest.mark.parametrize("type_,extra", [("deposit", "sent"), ("income", "sent"),
                                         ("withdraw", "received"), ("expense", "received")])
def test_type_refuses_the_array_it_does_not_use(book, type_, extra):
    """taxd's rule beside the issue's: the array a type does not use must be
    absent or empty (a deposit that also sends is not a deposit)."""
    payload = tx(type_=type_, **{extra: [line("ETH", "1")]})
    r = post(book, payload)
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["code"] == "custom" and issue["path"] == [extra], issue
    article = "An" if type_[0] in "aeiou" else "A"
    assert issue["message"] == f"{article} {type_} transaction has no {extra} line items", issue
    assert data(post(book, tx(type_=type_, **{extra: []})), 201)


def test_trade_with_neither_array_gets_both_issues(book):
    r = post(book, tx(type_="trade", sent=[], received=[]))
    assert_invalid(r, custom(["sent"], "A trade transaction needs at least one sent line item"),
                   custom(["received"], "A trade transaction needs at least one received line item"))


def test_required_fields_each_named(book):
    r = post(book, {})
    assert_invalid(
        r,
        {"code": "invalid_type", "path": ["id"], "message": "Invalid input: expected string, received undefined",
         "expected": "string"},
        {"code": "invalid_type", "path": ["account_id"],
         "message": "Invalid input: expected string, received undefined", "expected": "string"},
        {"code": "invalid_type", "path": ["datetime"],
         "message": "Invalid input: expected string, received undefined", "expected": "string"},
        {"code": "invalid_value", "path": ["type"],
         "message": 'Invalid option: expected one of "trade"|"deposit"|"withdraw"|"income"|"expense"',
         "values": TYPES})


@pytest.mark.parametrize("value", ["TRADE", "transfer", "", None, 1])
def test_type_enum_lists_values(book, value):
    r = post(book, {**tx(), "type": value})
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["code"] == "invalid_value" and issue["path"] == ["type"] and issue["values"] == TYPES, issue


@pytest.mark.parametrize("field,value,code", [
    ("id", "", "too_small"), ("id", "x" * 257, "too_big"), ("id", 5, "invalid_type"),
    ("account_id", "", "too_small"), ("account_id", "x" * 257, "too_big"),
    ("subtype", "", "too_small"), ("subtype", "x" * 65, "too_big"), ("subtype", 1, "invalid_type"),
    ("metadata", [1], "invalid_type"), ("metadata", "note", "invalid_type"),
    ("received", "x", "invalid_type"), ("received", None, "invalid_type"),
    ("fees", {}, "invalid_type"),
])
def test_field_rules_name_the_field(book, field, value, code):
    r = post(book, tx(**{field: value}))
    assert r.status_code == 400, r.text
    issues = body(r)["data"]
    assert [(i["code"], i["path"]) for i in issues] == [(code, [field])], issues


def test_longest_ids_are_accepted(book):
    """Ids are 1 to 256 characters."""
    long_id = "i" * 256
    rec = data(post(book, tx(id_=long_id)), 201)
    assert rec["id"] == long_id
    assert data(get(book, long_id), 200)["id"] == long_id


def test_rate_asset_code_follows_the_code_rule(book):
    """A rate's asset code obeys the same rule as a line item's."""
    r = post(book, tx(type_="income", received=[line(rates=[{"amount": "1", "asset": {"code": "B T!", "type": "fiat"}}])]))
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["path"] == ["received", 0, "rates", 0, "asset", "code"], issue


def test_id_over_256_bytes_is_refused(book):
    """decisions.md, Identifiers: an id is 1 to 256 bytes; a longer one in
    fewer characters is a custom issue, as for accounts and filers."""
    r = post(book, tx(id_="\u00e9" * 129))  # 129 characters, 258 bytes
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["code"] == "custom" and issue["path"] == ["id"], issue


# -- line items

LINE_PATH = ["received", 0, "asset_amount"]


@pytest.mark.parametrize("items,path", [
    ([1], ["received", 0]),
    ([{}], ["received", 0, "asset_amount"]),
    ([{"asset_amount": "1.5"}], ["received", 0, "asset_amount"]),
    ([{"asset_amount": {"asset": {"code": "BTC", "type": "crypto"}}}], LINE_PATH + ["amount"]),
    ([{"asset_amount": {"amount": "1"}}], LINE_PATH + ["asset"]),
    ([{"asset_amount": {"amount": "1", "asset": {"type": "crypto"}}}], LINE_PATH + ["asset", "code"]),
    ([line(rates="x")], ["received", 0, "rates"]),
    ([line(rates=[{"amount": "1"}])], ["received", 0, "rates", 0, "asset"]),
])
def test_line_item_shape_names_the_path(book, items, path):
    r = post(book, tx(received=items))
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue["code"] == "invalid_type" and issue["path"] == path, issue


@pytest.mark.parametrize("asset_type", [None, "coin", "CRYPTO"])
def test_asset_type_lists_values(book, asset_type):
    item = line()
    item["asset_amount"]["asset"]["type"] = asset_type
    r = post(book, tx(received=[item]))
    assert_invalid(r, {"code": "invalid_value", "path": LINE_PATH + ["asset", "type"],
                       "message": 'Invalid option: expected one of "crypto"|"fiat"|"nft"|"security"',
                       "values": ASSET_TYPES})


@pytest.mark.parametrize("code", ["B TC", "BTC!", "\u00e9", "a/b"])
def test_asset_code_character_rule(book, code):
    r = post(book, tx(received=[line(code)]))
    assert_invalid(r, custom(LINE_PATH + ["asset", "code"], "Invalid asset code: 1 to 32 of A-Z a-z 0-9 . _ -"))


@pytest.mark.parametrize("code,issue", [("", "too_small"), ("X" * 33, "too_big")])
def test_asset_code_length(book, code, issue):
    r = post(book, tx(received=[line(code)]))
    assert r.status_code == 400, r.text
    [got] = body(r)["data"]
    assert (got["code"], got["path"]) == (issue, LINE_PATH + ["asset", "code"]), got


def test_at_most_100_line_items_per_array(book):
    assert data(post(book, tx(received=[line()] * 100)), 201)["received"][99]
    for name in ("sent", "received", "fees"):
        payload = tx(type_="trade", **{name: [line()] * 101})
        r = post(book, payload)
        assert r.status_code == 400, r.text
        [issue] = body(r)["data"]
        assert issue == {"code": "too_big", "path": [name], "origin": "array", "maximum": 100, "inclusive": True,
                         "message": "Too big: expected array to have <=100 items"}


def test_at_most_10_rates_per_line(book):
    assert len(data(post(book, tx(received=[line(rates=[usd("1")] * 10)])), 201)["received"][0]["rates"]) == 10
    r = post(book, tx(id_="t2", received=[line(rates=[usd("1")] * 11)]))
    assert r.status_code == 400, r.text
    [issue] = body(r)["data"]
    assert issue == {"code": "too_big", "path": ["received", 0, "rates"], "origin": "array", "maximum": 10,
                     "inclusive": True, "message": "Too big: expected array to have <=10 items"}


# -- amounts

@pytest.mark.parametrize("where", ["line", "rate"])
def test_amount_as_a_json_number_is_refused(book, where):
    """Amounts are decimal strings: 1.5 as a JSON number is an invalid_type
    issue at the amount's exact path."""
    if where == "line":
        item = line()
        item["asset_amount"]["amount"] = 1.5
        path = LINE_PATH + ["amount"]
    else:
        item = line(rates=[{"amount": 20000, "asset": {"code": "USD", "type": "fiat"}}])
        path = ["received", 0, "rates", 0, "amount"]
    r = post(book, tx(received=[item]))
    assert_invalid(r, {"code": "invalid_type", "path": path, "expected": "string",
                       "message": "Invalid input: expected string, received number"})


@pytest.mark.parametrize("amount,canonical", [
    ("0.000000000000000001", "0.000000000000000001"),                       # 18 fractional digits
    ("99999999999999999999", "99999999999999999999"),                       # 20 integer digits
    ("99999999999999999999.999999999999999999", "99999999999999999999.999999999999999999"),
    ("12345678901234567890.123456789012345678", "12345678901234567890.123456789012345678"),
    ("1.0000000000000000000000", "1"),  # zeros beyond 18 digits change nothing: not a rounding
    ("00012.50", "12.5"),
])
def test_amount_limits_accepted_exactly(book, amount, canonical):
    """At least 18 fractional and 20 integer digits, kept exactly."""
    rec = data(post(book, tx(received=[line(amount=amount, rates=[usd(amount)])])), 201)
    assert rec["received"][0]["asset_amount"]["amount"] == canonical
    assert rec["received"][0]["rates"][0]["amount"] == canonical
    assert data(get(book, "t1"), 200)["received"][0]["asset_amount"]["amount"] == canonical


@pytest.mark.parametrize("amount,problem", [
    ("1.0000000000000000001", "more than 18 fractional digits"),            # 19 fractional digits
    ("0.0000000000000000005", "more than 18 fractional digits"),
    ("100000000000000000000", "outside the supported range (at most 20 integer digits)"),  # 21 digits
    ("999999999999999999999.5", "outside the supported range (at most 20 integer digits)"),
    # within core/decimal's own range (96 integer digits) but past the domain's limit
    ("1" + "0" * 49, "outside the supported range (at most 20 integer digits)"),
    ("9" * 80, "outside the supported range (at most 20 integer digits)"),  # the longest decimal text
])
@pytest.mark.parametrize("where", ["sent", "received", "fees", "rate"])
def test_amount_out_of_range_is_refused_never_rounded(book, amount, problem, where):
    """"A value outside the supported range is rejected with a validation
    issue, never rounded silently", at the exact path; nothing is stored."""
    payload = tx(type_="trade", fees=[line("ETH", "0.1")])
    if where == "rate":
        payload["received"][0]["rates"] = [usd("1"), usd(amount)]
        path = ["received", 0, "rates", 1, "amount"]
    else:
        payload[where].append(line("SOL", amount))
        path = [where, 1, "asset_amount", "amount"]
    assert_invalid(post(book, payload), amount_issue(path, problem))
    assert get(book, "t1").status_code == 404


@pytest.mark.parametrize("amount", ["1e5", "+1", "1.", ".5", " 1", "1 ", "abc", "", "1,5", "0x10", "--1"])
def test_amount_syntax(book, amount):
    r = post(book, tx(received=[line(amount=amount)]))
    assert_invalid(r, {**SYNTAX_ISSUE, "path": LINE_PATH + ["amount"]})


@pytest.mark.parametrize("amount,problem", [("0", "must be greater than zero"),
                                            ("0.000", "must be greater than zero"),
                                            ("-0", "must be greater than zero"),
                                            ("-1.5", "must not be negative")])
def test_line_amounts_are_positive(book, amount, problem):
    r = post(book, tx(received=[line(amount=amount)]))
    assert_invalid(r, amount_issue(LINE_PATH + ["amount"], problem))


def test_rates_may_be_zero_but_not_negative(book):
    rec = data(post(book, tx(received=[line(rates=[usd("0")])])), 201)
    assert rec["received"][0]["rates"] == [{"amount": "0", "asset": {"code": "USD", "type": "fiat"}}]
    r = post(book, tx(id_="t2", received=[line(rates=[usd("-0.01")])]))
    assert_invalid(r, amount_issue(["received", 0, "rates", 0, "amount"], "must not be negative"))


def test_every_issue_is_reported_at_once(book):
    payload = tx(type_="trade")
    payload["sent"] = [line("USD", "0", "fiat"), line("B!", "1")]
    payload["received"][0]["rates"] = [usd("1.0000000000000000001")]
    r = post(book, payload)
    assert_invalid(r,
                   amount_issue(["sent", 0, "asset_amount", "amount"], "must be greater than zero"),
                   custom(["sent", 1, "asset_amount", "asset", "code"],
                          "Invalid asset code: 1 to 32 of A-Z a-z 0-9 . _ -"),
                   amount_issue(["received", 0, "rates", 0, "amount"], "more than 18 fractional digits"))


# -- bodies

@pytest.mark.parametrize("raw,content_type", [
    (b"{", "application/json"), (b"[]", "application/json"), (b"", "application/json"),
    (b'{"id":"a","id":"b"}', "application/json"), (b'{"id":"t1"} x', "application/json"),
    (b'{"id":"t1"}', "text/plain"),
])
def test_unreadable_body_is_400_in_the_transactions_shape(book, raw, content_type):
    r = call(book, "POST", TX_PATH, headers={"content-type": content_type}, data=raw)
    assert r.status_code == 400, r.text
    b = body(r)
    assert b["status"] == "error" and b["message"], b
    assert b["error"]["errorType"] == "ValidationError" and b["error"]["errorMessage"] == b["message"], b
    assert b["error"]["errBody"] == b["data"], b


def test_validation_comes_before_the_account_lookup(book):
    r = post(book, tx(account="nobody", received=[line(amount="0")]))
    assert_invalid(r, amount_issue(LINE_PATH + ["amount"], "must be greater than zero"))


# ==================================================================== assets

def test_unknown_asset_is_created_on_first_use_with_the_line_type(book):
    """"An asset code the tenant has not configured is created on first use
    with the line item's type", named after its code."""
    assert call(book, "GET", "/v1/assets/DOGE").status_code == 404
    data(post(book, tx(received=[line("DOGE", "10", "crypto")], fees=[line("NFT1", "1", "nft")])), 201)
    doge = data(call(book, "GET", "/v1/assets/DOGE"), 200)
    assert {k: doge[k] for k in ("code", "name", "type", "decimals")} == \
        {"code": "DOGE", "name": "DOGE", "type": "crypto", "decimals": None}
    assert data(call(book, "GET", "/v1/assets/NFT1"), 200)["type"] == "nft"


def test_configured_asset_is_used_as_it_is(book):
    created = data(call(book, "POST", "/v1/assets", {"code": "GOLD", "name": "Gold", "type": "security"}), 201)
    data(post(book, tx(received=[line("GOLD", "2", "crypto")])), 201)
    assert data(call(book, "GET", "/v1/assets/GOLD"), 200) == created


def test_asset_named_like_a_new_code_does_not_fail_the_transaction(book):
    data(call(book, "POST", "/v1/assets", {"code": "OTHER", "name": "NEWC", "type": "security"}), 201)
    data(post(book, tx(received=[line("NEWC", "1")])), 201)
    asset = data(call(book, "GET", "/v1/assets/NEWC"), 200)
    assert asset["name"] == f"NEWC ({asset['uuid']})"


def test_codes_are_exact_and_per_tenant(server, book):
    data(post(book, tx(received=[line("btc", "1")])), 201)
    assert data(call(book, "GET", "/v1/assets/btc"), 200)["code"] == "btc"
    assert call(book, "GET", "/v1/assets/BTC").status_code == 404
    other = server.new_tenant("other")
    assert call(other, "GET", "/v1/assets/btc").status_code == 404


def test_asset_referenced_by_a_transaction_cannot_be_deleted(book):
    """DELETE /v1/assets (by asset): 409 when a transaction references it; it
    can go once no transaction does (after an update or a delete)."""
    data(post(book, tx(received=[line("DOGE", "1"), line("SHIB", "5")])), 201)
    data(post(book, tx(id_="t2", type_="withdraw", sent=[line("DOGE", "1")])), 201)
    for code in ("DOGE", "SHIB"):
        r = call(book, "DELETE", f"/v1/assets/{code}")
        assert r.status_code == 409, r.text
        assert body(r) == {"error": "Conflict",
                           "message": f"Asset '{code}' is referenced by transactions and cannot be deleted"}
    data(post(book, tx(received=[line("DOGE", "1")])), 200)         # t1 no longer names SHIB
    assert call(book, "DELETE", "/v1/assets/SHIB").status_code == 204
    assert call(book, "DELETE", "/v1/assets/DOGE").status_code == 409  # t1 and t2 still do
    assert delete(book, "t1").status_code == 204
    assert call(book, "DELETE", "/v1/assets/DOGE").status_code == 409  # t2 still does
    assert delete(book, "t2").status_code == 204
    assert call(book, "DELETE", "/v1/assets/DOGE").status_code == 204


def test_rates_do_not_create_assets(book):
    """Only line items' assets are created: a rate's currency is a unit of
    value, not something held (taxd values in USD)."""
    data(post(book, tx(received=[line("BTC", "1", rates=[{"amount": "18000", "asset":
                                                           {"code": "EUR", "type": "fiat"}}])])), 201)
    assert call(book, "GET", "/v1/assets/EUR").status_code == 404


# ========================================================= create or update

def test_update_answers_200_and_the_last_write_wins(book):
    first = data(post(book, tx(when="2024-01-01T00:00:00Z")), 201)
    payload = tx(when="2024-06-01T00:00:00Z", subtype="staking", type_="income",
                 received=[line("ETH", "3")], metadata={"v": 2})
    second = data(post(book, payload), 200)
    assert second["uuid"] == first["uuid"] and second["created_at"] == first["created_at"]
    assert second["updated_at"] >= first["updated_at"]
    assert (second["type"], second["subtype"], second["datetime"], second["metadata"]) == \
        ("income", "staking", "2024-06-01T00:00:00.000Z", {"v": 2})
    assert second["received"][0]["asset_amount"] == {"amount": "3", "asset": {"code": "ETH", "type": "crypto"}}
    assert data(get(book, "t1"), 200) == second
    assert len(tx_rows(book, "t1")) == 1


def test_update_replaces_the_line_items(book):
    data(post(book, tx(received=[line("BTC", "1"), line("ETH", "2")], fees=[line("SOL", "1")])), 201)
    rec = data(post(book, tx(received=[line("ADA", "5")])), 200)
    assert [i["asset_amount"]["asset"]["code"] for i in rec["received"]] == ["ADA"]
    assert rec["fees"] == []
    (row,) = tx_rows(book, "t1")
    assert row["lines"] == "rADA 5"  # the stored line items (store/transactions.c, the lines column)


def test_identical_resend_is_safe(book):
    """"Resending the same transaction is safe": same answer (200, the same
    record, updated_at unchanged), one row, no second event."""
    payload = tx()
    created = data(post(book, payload), 201)
    before = events(book)
    for _ in range(3):
        assert data(post(book, payload), 200) == created
    assert len(tx_rows(book, "t1")) == 1
    assert events(book) == before


def test_resend_in_another_spelling_is_the_same_transaction(book):
    """Identity is judged on the canonical form: "1.50" and "1.5", or the same
    instant in another offset, are the same transaction (no write, no event)."""
    created = data(post(book, tx(when="2024-03-01T12:00:00+02:00",
                                 received=[line(amount="1.50", rates=[usd("20000.00")])])), 201)
    claim_all(book)
    same = tx(when="2024-03-01T10:00:00.000Z", received=[line(amount="1.5", rates=[usd("20000")])])
    assert data(post(book, same), 200) == created
    assert open_events(book) == [], "an identical resend opened an event"


def test_identical_resend_after_the_event_was_claimed_adds_no_event(book):
    data(post(book, tx()), 201)
    claim_all(book)
    data(post(book, tx()), 200)
    assert len(events(book)) == 1 and open_events(book) == []


def test_moving_to_another_account_is_400(book):
    """"moving an existing id to another account is a 400"; the stored
    transaction and the outbox are unchanged."""
    created = data(post(book, tx()), 201)
    before = events(book)
    r = post(book, tx(account="a2", received=[line(amount="9")]))
    assert_invalid(r, custom(["account_id"],
                             "Transaction 't1' belongs to account 'a1' and cannot be moved to account 'a2'"))
    assert data(get(book, "t1"), 200) == created
    assert events(book) == before


def test_unknown_account_is_404_in_the_transactions_shape(book):
    r = post(book, tx(account="nobody"))
    assert r.status_code == 404, r.text
    assert body(r) == tx_error("Account 'nobody' not found", "NotFoundError")
    assert get(book, "t1").status_code == 404
    assert events(book) == []


def test_another_tenants_account_is_not_found(server, book):
    other = server.new_tenant("other")
    make_owner(other)
    make_account(other, "only-there")
    r = post(book, tx(account="only-there"))
    assert r.status_code == 404, r.text
    assert body(r) == tx_error("Account 'only-there' not found", "NotFoundError")


def test_ids_are_unique_per_tenant_only(server, book):
    """Transaction ids are unique within a tenant: the same id in two tenants
    is two transactions, and neither sees the other's."""
    other = book_for(server, "other")
    mine = data(post(book, tx(received=[line(amount="1")])), 201)
    theirs = data(post(other, tx(received=[line(amount="2")])), 201)
    assert mine["uuid"] != theirs["uuid"]
    assert data(get(book, "t1"), 200) == mine
    assert data(get(other, "t1"), 200) == theirs
    assert delete(other, "t1").status_code == 204
    assert data(get(book, "t1"), 200) == mine


# ============================================================ GET and DELETE

def test_get_unknown_id_answers_the_lookup_shape(book):
    """The lookup of an unknown external id: {"status":"error","message"}
    naming the external id and the tenant."""
    r = get(book, "nope")
    assert r.status_code == 404, r.text
    assert body(r) == lookup_404(book, "nope")


@pytest.mark.parametrize("tx_id", ["a/b", "50%", "a+b", "a b", "k\u00f6ln-\u6771\u4eac"])
def test_ids_with_reserved_characters_round_trip(book, tx_id):
    created = data(post(book, tx(id_=tx_id)), 201)
    assert created["id"] == tx_id
    assert data(get(book, tx_id), 200) == created
    assert delete(book, tx_id).status_code == 204
    r = get(book, tx_id)
    assert r.status_code == 404 and body(r) == lookup_404(book, tx_id)


def test_delete_204_then_the_id_is_unknown(book):
    data(post(book, tx()), 201)
    r = delete(book, "t1")
    assert r.status_code == 204 and r.content == b""
    for r in (get(book, "t1"), delete(book, "t1")):
        assert r.status_code == 404, r.text
        assert body(r) == lookup_404(book, "t1")
    assert tx_rows(book, "t1") == []


def test_delete_then_create_again_is_201(book):
    first = data(post(book, tx()), 201)
    assert delete(book, "t1").status_code == 204
    again = data(post(book, tx(account="a2")), 201)  # free to go to another account now
    assert again["uuid"] != first["uuid"] and again["account_id"] == "a2"


def test_another_tenants_transaction_is_unknown(server, book):
    data(post(book, tx()), 201)
    other = server.new_tenant("other")
    for r in (get(other, "t1"), delete(other, "t1")):
        assert r.status_code == 404, r.text
        assert body(r) == lookup_404(other, "t1")
    assert get(book, "t1").status_code == 200


# ================================================ shapes of the other errors

def test_401_keeps_the_standard_shape(book):
    for method, path, payload in (("POST", TX_PATH, tx()), ("GET", tx_path("t1"), None),
                                  ("DELETE", tx_path("t1"), None)):
        r = book.server.api().request(method, path, json=payload)
        assert r.status_code == 401 and body(r) == INVALID_HEADER, r.text
        r = book.server.api().request(method, path, json=payload,
                                      headers={"authorization": "Bearer not.a.token"})
        assert r.status_code == 401 and body(r) == INVALID_TOKEN, r.text
        assert "x-ratelimit-limit" not in r.headers


def test_scope_transactions_is_required(server):
    """A credential with scopes "accounts" only gets the gateway deny on every
    transactions route; one with "transactions" is let through."""
    accounts_only = server.new_tenant("scoped", scopes="accounts")
    make_owner(accounts_only)
    make_account(accounts_only, "a1")
    for method, path, payload in (("POST", TX_PATH, tx()), ("GET", tx_path("t1"), None),
                                  ("DELETE", tx_path("t1"), None)):
        r = call(accounts_only, method, path, payload)
        assert r.status_code == 403 and body(r) == GATEWAY_DENY, r.text
    c = server.admin("credentials", "create", "--tenant", accounts_only.tenant_id, "--scopes", "transactions")
    tx_only = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    data(post(tx_only, tx()), 201)
    assert get(tx_only, "t1").status_code == 200


def test_429_keeps_the_standard_shape(server):
    """The tenant bucket's 429 is the standard rate-limit body, not the
    transactions shape."""
    t = book_for(server, "limited")
    set_rule(server, 1, 1, tenant=t)
    # the rule reaches the running server within a second; then the bucket empties
    def limited():
        r = post(t, tx())
        return [r] if r.status_code == 429 else None  # a list: a 4xx Response is falsy
    [r] = poll(limited, 10, what="a 429 on POST")
    b = body(r)
    assert b["error"] == "rate_limit_exceeded" and TENANT_LIMIT_RE.match(b["message"]), b
    assert set(b) == {"error", "message"}
    assert r.headers["retry-after"] == TENANT_LIMIT_RE.match(b["message"]).group(1)


def test_endpoint_limit_429_keeps_its_shape(server):
    t = book_for(server, "endpoint-limited")
    set_rule(server, 1, 1, tenant=t, route=f"POST {TX_PATH}")
    [r] = poll(lambda: (lambda r: [r] if r.status_code == 429 else None)(post(t, tx())), 10,
               what="a 429 on POST")
    assert body(r) == ENDPOINT_LIMIT


def test_413_keeps_the_standard_shape(book):
    """The route's limit is 16 MiB whatever --max-body says (batches, see
    test_transactions_batch.py)."""
    r = post(book, tx(metadata={"filler": "x" * (16 * 1024 * 1024)}))
    assert r.status_code == 413, r.text
    assert body(r) == {"error": "Payload Too Large",
                       "message": "Request body exceeds the limit of 16777216 bytes"}
    assert get(book, "t1").status_code == 404


def test_500_uses_the_transactions_shape_and_saves_nothing(hooks_server):
    """A store failure (the test hook makes every database call fail as on an
    I/O error): POST answers 500 in the transactions shape; GET and DELETE
    answer the standard 500."""
    t = book_for(hooks_server)
    data(post(t, tx(id_="kept")), 201)
    before = events(t)
    api = hooks_server.api()
    assert api.post("/_test/store-fault", json={"failing": True}).status_code == 200
    try:
        r = post(t, tx())
        assert r.status_code == 500, r.text
        assert body(r) == tx_error("The transaction could not be saved", "InternalServerError")
        for r in (get(t, "kept"), delete(t, "kept")):
            assert r.status_code == 500, r.text
            assert body(r)["error"] == "Internal Server Error", r.text
    finally:
        assert api.post("/_test/store-fault", json={"failing": False}).status_code == 200
    assert get(t, "t1").status_code == 404
    assert get(t, "kept").status_code == 200
    assert events(t) == before


def test_504_keeps_its_shape(make_server):
    """A write waiting for the lock past the request deadline answers the
    standard 504 body, not the transactions shape."""
    s = make_server("--test-hooks", "--request-timeout-ms", "1000")
    t = book_for(s)
    first = hold_upsert(t, tx(id_="held"))
    second = RawPost(t, tx(id_="waiting"))
    r = second.response()
    assert r.status_code == 504, r.text
    assert body(r) == TIMEOUT_BODY
    # The held write outlives its own deadline, but it committed: a durable
    # write is answered 2xx (the read-back is no longer bounded by the deadline).
    held = first.result()
    assert held.status_code == 201, held.text
    assert get(t, "held").status_code == 200
    assert get(t, "waiting").status_code == 404


# ============================================================== concurrency

def test_concurrent_upserts_of_one_id_are_serialised(hooks_server):
    """A second upsert of the same id sent while the first holds its write
    transaction waits, then wins: both answered 2xx, exactly one row, the
    stored transaction is the second."""
    t = book_for(hooks_server)
    first = hold_upsert(t, tx(received=[line(amount="1")]))
    second = RawPost(t, tx(received=[line(amount="2")], when="2024-03-02T00:00:00Z"))
    assert first.response is None and write_lock_held(hooks_server), \
        "the second upsert must be sent while the first is held"
    r1, r2 = first.result(), second.response()
    assert r1.status_code == 201, r1.text
    assert r2.status_code == 200, r2.text  # it saw the first's row: an update, not a duplicate
    assert len(tx_rows(t, "t1")) == 1
    stored = data(get(t, "t1"), 200)
    assert stored == body(r2)["data"]
    assert stored["received"][0]["asset_amount"]["amount"] == "2"
    assert stored["uuid"] == body(r1)["data"]["uuid"]
    [e] = events(t)  # the second widened the first's open event
    assert_event(e, t, "a1", T0, "t1", "2024-03-02T00:00:00Z", "t1")


def test_concurrent_identical_resend_is_answered_once_written(hooks_server):
    """A resend of the same payload while the first is still in flight: one
    row, one event, both answered with the same record."""
    t = book_for(hooks_server)
    first = hold_upsert(t, tx())
    second = RawPost(t, tx())
    assert first.response is None
    r1, r2 = first.result(), second.response()
    assert (r1.status_code, r2.status_code) == (201, 200), (r1.text, r2.text)
    assert body(r1)["data"] == body(r2)["data"]
    assert len(tx_rows(t, "t1")) == 1 and len(events(t)) == 1


def test_upsert_of_another_id_on_another_connection_is_not_refused(hooks_server):
    """Serialisation is by the database's single writer, never a refusal: an
    upsert of a different id meanwhile waits and is created."""
    t = book_for(hooks_server)
    first = hold_upsert(t, tx(id_="t1"))
    second = RawPost(t, tx(id_="t2", account="a2"))
    assert first.response is None
    r1, r2 = first.result(), second.response()
    assert (r1.status_code, r2.status_code) == (201, 201), (r1.text, r2.text)
    assert get(t, "t1").status_code == 200 and get(t, "t2").status_code == 200


def test_pause_header_is_ignored_without_test_hooks(book):
    """A paused upsert would hold the write lock for 60 s; background workers
    woken by the commit hold it only for moments, so the lock comes free."""
    data(post(book, tx(), headers={PAUSE_HEADER: "60000"}), 201)
    poll(lambda: not write_lock_held(book.server), 5, what="the write lock to come free")


# ==================================================== INVENTORY_UPDATE outbox

def test_create_writes_one_event(book):
    """Creating transaction t1 at T gives both datetimes T and both ids t1."""
    data(post(book, tx(when="2024-05-01T08:00:00.250+02:00")), 201)
    [e] = events(book)
    when = "2024-05-01T06:00:00.250Z"
    assert_event(e, book, "a1", when, "t1", when, "t1")
    assert e["claimed_at"] is None


def test_moving_later_gives_the_range_from_old_to_new(book):
    """Moving t1 from T1 to a later T2 gives update_from_datetime T1 and
    latest_transaction_datetime T2."""
    t1, t2 = "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"
    data(post(book, tx(when=t1)), 201)
    claim_all(book)
    data(post(book, tx(when=t2)), 200)
    [e] = open_events(book)
    assert_event(e, book, "a1", t1, "t1", t2, "t1")


def test_moving_earlier_gives_the_range_from_new_to_old(book):
    t1, t0 = "2024-02-01T00:00:00Z", "2024-01-01T00:00:00Z"
    data(post(book, tx(when=t1)), 201)
    claim_all(book)
    data(post(book, tx(when=t0)), 200)
    [e] = open_events(book)
    assert_event(e, book, "a1", t0, "t1", t1, "t1")


def test_update_in_place_gives_its_datetime(book):
    data(post(book, tx()), 201)
    claim_all(book)
    data(post(book, tx(received=[line(amount="7")])), 200)
    [e] = open_events(book)
    assert_event(e, book, "a1", T0, "t1", T0, "t1")


def test_delete_event_has_no_transaction_ids(book):
    """"latest_transaction_id and update_from_transaction_id only when
    transactions were not deleted: absent on deletion"."""
    data(post(book, tx()), 201)
    claim_all(book)
    assert delete(book, "t1").status_code == 204
    [e] = open_events(book)
    assert_event(e, book, "a1", T0, None, T0, None)


def test_open_event_is_widened_instead_of_adding_one(book):
    """An event not yet claimed covers every further change of the same
    account: its range is the union, with the ids at its ends."""
    data(post(book, tx(id_="mid", when="2024-02-01T00:00:00Z")), 201)
    data(post(book, tx(id_="early", when="2024-01-01T00:00:00Z")), 201)
    data(post(book, tx(id_="late", when="2024-03-01T00:00:00Z")), 201)
    data(post(book, tx(id_="inside", when="2024-02-15T00:00:00Z")), 201)
    [e] = events(book)
    assert_event(e, book, "a1", "2024-01-01T00:00:00Z", "early", "2024-03-01T00:00:00Z", "late")


def test_widening_over_a_delete_drops_the_ids(book):
    data(post(book, tx(id_="x", when="2024-02-01T00:00:00Z")), 201)
    data(post(book, tx(id_="y", when="2024-03-01T00:00:00Z")), 201)
    claim_all(book)
    data(post(book, tx(id_="z", when="2024-04-01T00:00:00Z")), 201)
    assert delete(book, "x").status_code == 204
    [e] = open_events(book)
    assert_event(e, book, "a1", "2024-02-01T00:00:00Z", None, "2024-04-01T00:00:00Z", None)
    data(post(book, tx(id_="w", when="2024-01-01T00:00:00Z")), 201)   # once dropped, the ids stay absent
    [e] = open_events(book)
    assert_event(e, book, "a1", "2024-01-01T00:00:00Z", None, "2024-04-01T00:00:00Z", None)


def test_claimed_event_is_never_changed(book):
    """Widening applies only to events not yet claimed for delivery: after a
    claim the next change opens a new event and the claimed one keeps its
    range (losing a change is never allowed)."""
    data(post(book, tx(when="2024-02-01T00:00:00Z")), 201)
    claim_all(book)
    [claimed] = events(book)
    data(post(book, tx(id_="t2", when="2024-01-01T00:00:00Z")), 201)
    after = events(book)
    assert len(after) == 2 and after[0] == claimed
    assert_event(after[1], book, "a1", "2024-01-01T00:00:00Z", "t2", "2024-01-01T00:00:00Z", "t2")


def test_only_the_newest_event_of_an_account_is_widened(book):
    """The open event is found as the account's newest one: after two claims
    a change opens a third event and widens nothing older, and the one after
    it widens the third."""
    data(post(book, tx(id_="t1", when="2024-02-01T00:00:00Z")), 201)
    claim_all(book)
    data(post(book, tx(id_="t2", when="2024-03-01T00:00:00Z")), 201)
    claim_all(book)
    first, second = events(book)
    data(post(book, tx(id_="t3", when="2024-04-01T00:00:00Z")), 201)
    data(post(book, tx(id_="t4", when="2024-01-01T00:00:00Z")), 201)
    after = events(book)
    assert len(after) == 3 and after[:2] == [first, second]
    assert_event(after[2], book, "a1", "2024-01-01T00:00:00Z", "t4", "2024-04-01T00:00:00Z", "t3")


def test_a_failed_delivery_write_leaves_no_trace(book):
    """An event's deliveries are written in the transaction that records the
    change: when writing them fails, the transaction, its event and its
    deliveries are all absent (500), and the same request then succeeds
    whole."""
    book.server.admin("subscription", "create", "--tenant", book.tenant_id,
                      "--url", "https://127.0.0.1:9/hook", "--events", "INVENTORY_UPDATE")
    if TAXD_TEST_PG:
        db_exec(book.server, "CREATE FUNCTION fail_fan_out() RETURNS trigger LANGUAGE plpgsql"
                             " AS $f$ BEGIN RAISE EXCEPTION 'injected'; END $f$")
        db_exec(book.server, "CREATE TRIGGER fail_fan_out BEFORE INSERT ON deliveries"
                             " FOR EACH ROW EXECUTE FUNCTION fail_fan_out()")
    else:
        db_exec(book.server, "CREATE TRIGGER fail_fan_out BEFORE INSERT ON deliveries"
                             " BEGIN SELECT RAISE(ABORT, 'injected'); END")
    r = post(book, tx(id_="t1"))
    assert r.status_code == 500, r.text
    assert get(book, "t1").status_code == 404
    assert events(book) == []
    count = "SELECT count(*) AS n FROM deliveries"
    assert db_rows(book.server, count)[0]["n"] == 0
    db_exec(book.server, "DROP TRIGGER fail_fan_out" + (" ON deliveries" if TAXD_TEST_PG else ""))
    data(post(book, tx(id_="t1")), 201)
    [e] = events(book)
    assert db_rows(book.server, count + " WHERE event_id = ?", (e["id"],))[0]["n"] == 1


def test_each_account_has_its_own_event(book):
    data(post(book, tx(id_="t1", account="a1")), 201)
    data(post(book, tx(id_="t2", account="a2", when="2024-04-01T00:00:00Z")), 201)
    by_account = {e["account_id"]: e for e in events(book)}
    assert set(by_account) == {"a1", "a2"} and len(events(book)) == 2
    assert_event(by_account["a1"], book, "a1", T0, "t1", T0, "t1")
    assert_event(by_account["a2"], book, "a2", "2024-04-01T00:00:00Z", "t2", "2024-04-01T00:00:00Z", "t2")


def test_refused_writes_leave_no_event(book):
    data(post(book, tx()), 201)
    claim_all(book)
    before = events(book)
    post(book, tx(account="a2"))                  # 400 move
    post(book, tx(id_="t2", account="nobody"))    # 404 account
    post(book, tx(id_="t3", received=[line(amount="0")]))  # 400 validation
    delete(book, "nope")                           # 404 lookup
    assert events(book) == before


def test_event_and_change_commit_together(book):
    """Every acknowledged write has its event: the outbox row count follows
    the writes one for one once each event is claimed."""
    for i in range(5):
        data(post(book, tx(id_=f"t{i}", when=f"2024-01-0{i + 1}T00:00:00Z")), 201)
        claim_all(book)
    assert delete(book, "t2").status_code == 204
    claim_all(book)
    rows = events(book)
    assert len(rows) == 6
    assert [r["from_tx"] for r in rows] == ["t0", "t1", "t2", "t3", "t4", None]


# -- issue 15: a datetime's UTC instant lies in 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z

RANGE_ISSUE = {"code": "invalid_format", "path": ["datetime"], "origin": "string", "format": "datetime",
               "message": "Invalid datetime: the instant must fall between 0001-01-01T00:00:00Z and "
                          "9999-12-31T23:59:59.999Z"}


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59",
                                  "9999-12-31T23:59:59.999-00:01", "0000-12-31T23:59:59.999Z"])
def test_datetime_outside_years_1_to_9999_is_refused(book, when):
    assert_invalid(post(book, tx(id_="range", when=when)), RANGE_ISSUE)


@pytest.mark.parametrize("when,answered", [
    ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"),
    ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
    ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
    ("9999-12-31T23:59:59+23:59", "9999-12-31T00:00:59.000Z"),
])
def test_datetime_at_the_bounds_is_accepted(book, when, answered):
    assert data(post(book, tx(id_="edge", when=when)), 201)["datetime"] == answered


def test_datetime_range_in_a_batch_names_the_element(book):
    """A batch answers 200 with each element's outcome; the bad one carries the 400 shape."""
    r = post(book, [tx(id_="b-ok"), tx(id_="b-bad", when="9999-12-31T23:59:59-23:59")])
    ok, bad = data(r, 200)
    assert ok["status"] == "created"
    assert (bad["index"], bad["status"], bad["http_status"]) == (1, "error", 400)
    assert bad["data"] == tx_error("Validation failed", "ValidationError", [RANGE_ISSUE])
