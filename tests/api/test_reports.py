"""Inventory-summary reports: POST /v1/reports/inventory-summary (trigger),
GET /v1/reports/inventory-summary/{reportId} (status) and the signed
download link.

Rules checked, in the words of spec.md and of the issue (decisions in
docs/decisions.md, "Reports"):
  - the trigger "answers 202" with report_id (UUID v4) and status pending;
    "no body, or {}, means every account of the organization"; invalid
    input is 400 with issues (not an array, an empty array, a non-string or
    empty element, an id longer than the maximum, more ids than 50,000, a
    format other than csv or jsonl), and 50,000 ids of 256 characters fit;
  - processing "pending, then processing, then completed, or failed with an
    error object"; a report runs in the worker threads of taxd serve and in
    `taxd worker` alone (serve --no-workers runs none);
  - "a report includes every transaction acknowledged before its trigger";
  - the status GET answers 200 with download_url, expires_at (15 minutes
    ahead) and metadata once completed; metadata with account_ids:
    total_accounts_requested (duplicates included), total_accounts_included
    (distinct ids found), skipped_account_ids.not_found_in_organization only
    when some were skipped; without: total_accounts_included only;
  - "every GET returns a different URL, even two in the same second";
  - an unknown or malformed id is 404 naming the report; another tenant's
    report is 403 {"error":"Forbidden","message":"Forbidden"}; a credential
    without the reports scope gets the gateway deny;
  - the link works without a bearer token, 15 minutes; altered: 403 reason
    invalid_signature; expired: 403 reason expired; it streams the file with
    text/csv (or application/x-ndjson) and a content-disposition filename;
  - content: one row per (account, asset) held, compared with GET
    /v1/inventory/summaries; RFC 4180 CSV with a header row; formula cells
    neutralised; an included account without holdings has no rows;
  - retention: after 30 days GET answers 404 and the link stops working,
    before the janitor ran; the janitor then deletes the report and its file;
  - the endpoint's own rate limit answers 429 "Too many requests." with
    Retry-After (the trigger has one by default: test_reports_limits.py);
  - a failed report (test-only failure switch), kill -9 of the server while
    a report is processing (another process takes it after the lease), a
    report failed after its lease expired the maximum number of times, and
    SIGTERM while a report is processing (exit 0, the report is given back).
Every response is also validated against docs/openapi.yaml by conftest.
"""
import base64
import csv
import hashlib
import hmac
import io
import json
import signal
import subprocess
import time
from datetime import datetime, timezone
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from conftest import (ENDPOINT_LIMIT, FORBIDDEN, GATEWAY_DENY, HTTP_TIMEOUT_S, RFC3339_MS_Z_RE,
                      SETTINGS_PROPAGATION_S, STOP_TIMEOUT_S, TAXD_BIN, UUID4_RE, Server,
                      assert_rl_headers, body, check_against_openapi, check_json_content_type,
                      check_request_id, poll, set_rule)

TRIGGER = "/v1/reports/inventory-summary"
ROUTE = "POST /v1/reports/inventory-summary"
TEST_HEADER = "x-taxd-test-report"
CSV_HEADER = ["account_id", "asset_code", "asset_type", "total_quantity", "total_cost",
              "average_unit_cost", "total_quantity_with_cost_basis", "fiat_currency"]
REPORT_TIMEOUT_S = 90        # 2 shared cores, ASan 2-3x slower
THIRTY_DAYS_MS = 30 * 86400 * 1000
T0 = "2024-03-01T10:00:00Z"


# ------------------------------------------------------------------ helpers

def call(tenant, method, path, json_body=None, headers=None, **kw):
    h = dict(tenant.auth())
    h.update(headers or {})
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, headers=h, **kw)


def make_owner(tenant, owner_id="o1"):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": owner_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text


def make_account(tenant, account_id, owner_id="o1"):
    r = call(tenant, "POST", "/v1/accounts", {"id": account_id, "account_owner_id": owner_id})
    assert r.status_code == 201, r.text


def line(code, amount, type_="crypto", rate=None):
    item = {"asset_amount": {"amount": amount, "asset": {"code": code, "type": type_}}}
    if rate is not None:
        item["rates"] = [{"amount": rate, "asset": {"code": "USD", "type": "fiat"}}]
    return item


def buy(id_, account, code, amount, usd, type_="crypto", when=T0):
    return {"id": id_, "account_id": account, "datetime": when, "type": "trade",
            "sent": [line("USD", usd, "fiat")], "received": [line(code, amount, type_)]}


def sell(id_, account, code, amount, usd, when="2024-03-02T10:00:00Z"):
    return {"id": id_, "account_id": account, "datetime": when, "type": "trade",
            "sent": [line(code, amount)], "received": [line("USD", usd, "fiat")]}


def income(id_, account, code, amount, when=T0):
    """Received without a USD value: a lot without cost basis."""
    return {"id": id_, "account_id": account, "datetime": when, "type": "income",
            "received": [line(code, amount)]}


def post_tx(tenant, doc):
    r = call(tenant, "POST", "/v1/transactions/external-id", doc)
    assert r.status_code in (200, 201), r.text


def trigger(tenant, payload=None, headers=None, expect=202, **kw):
    r = call(tenant, "POST", TRIGGER, payload, headers=headers, **kw)
    assert r.status_code == expect, f"expected {expect}, got {r.status_code}: {r.text[:800]}"
    return r


def start(tenant, payload=None, headers=None):
    """Triggers and returns the report id, checking the 202 body."""
    b = body(trigger(tenant, payload, headers))
    assert UUID4_RE.match(b["report_id"]), b
    assert b["status"] == "pending", b
    assert RFC3339_MS_Z_RE.match(b["created_at"]), b
    return b["report_id"]


def status(tenant, report_id):
    r = tenant.get(f"{TRIGGER}/{report_id}")
    assert r.status_code == 200, r.text
    return body(r)


def wait_for(tenant, report_id, states=("completed", "failed"), timeout=REPORT_TIMEOUT_S):
    """Polls the status until it is one of `states`; returns the body."""
    return poll(lambda: (lambda b: b if b["status"] in states else None)(status(tenant, report_id)),
                timeout, interval=0.05, what=f"report {report_id} to reach {states}")


def completed(tenant, payload=None, headers=None):
    rid = start(tenant, payload, headers)
    b = wait_for(tenant, rid)
    assert b["status"] == "completed", b
    return rid, b


def fetch(server, url):
    """GET of a download link without any token (the link is the credential);
    the cross-cutting checks of conftest, but JSON content type only for errors."""
    with requests.Session() as s:
        r = s.get(url, timeout=HTTP_TIMEOUT_S, allow_redirects=False)
    check_request_id(server, r)
    check_against_openapi(r)
    if r.status_code != 200:
        check_json_content_type(r)
    return r


def download_rows(server, status_body):
    r = fetch(server, status_body["download_url"])
    assert r.status_code == 200, r.text
    return r, list(csv.reader(io.StringIO(r.content.decode("utf-8"), newline="")))


def unneutralise(cell):
    """The neutralised formula prefix removed (cells starting = + - @ TAB CR)."""
    if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r"):
        return cell[1:]
    return cell


def summaries(tenant, account_id):
    r = tenant.get("/v1/inventory/summaries", params={"account_id": account_id})
    assert r.status_code == 200, r.text
    return body(r)["data"]["summaries"]


def expected_rows(tenant, account_ids):
    """What the report must hold, from GET /v1/inventory/summaries: every
    summary whose quantity is not zero (an asset "held"), ordered by account
    id then asset code (bytewise)."""
    rows = []
    for a in sorted(account_ids, key=lambda s: s.encode()):
        for s in summaries(tenant, a):
            if s["total_quantity"] == "0":
                continue
            rows.append({"account_id": a, "asset_code": s["asset_code"],
                         "total_quantity": s["total_quantity"], "total_cost": s["total_cost"],
                         "average_unit_cost": s["average_unit_cost"],
                         "total_quantity_with_cost_basis": s["total_quantity_with_cost_basis"]})
    rows.sort(key=lambda r: (r["account_id"].encode(), r["asset_code"].encode()))
    return rows


def links_key(server):
    return base64.b64decode(server.key_path("links").read_text().strip())


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge_link(server, report_id, expires, nonce=None):
    """A link signed with the server's own key (read from its key file)."""
    nonce = nonce or b64url(b"0123456789abcdef")
    msg = f"{report_id}\n{expires}\n{nonce}".encode()
    sig = b64url(hmac.new(links_key(server), msg, hashlib.sha256).digest())
    q = urlencode({"expires": expires, "nonce": nonce, "signature": sig})
    return f"{server.url}{TRIGGER}/{report_id}/download?{q}"


def with_query(url, **changes):
    parts = urlsplit(url)
    q = {k: v[0] for k, v in parse_qs(parts.query).items()}
    for k, v in changes.items():
        if v is None:
            q.pop(k, None)
        else:
            q[k] = v
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(q)}"


def set_clock(server, offset_ms, *tenants):
    r = server.api().post("/_test/clock", json={"offset_ms": offset_ms})
    assert r.status_code == 200, r.text
    for t in tenants:
        t._token = None   # tokens minted before the move may have expired on the moved clock


def book(server, name="rep", accounts=("a1", "a2")):
    t = server.new_tenant(name)
    make_owner(t)
    for a in accounts:
        make_account(t, a)
    return t


def refused(r, reason):
    assert r.status_code == 403, r.text
    assert body(r) == {"error": "Forbidden", "message": "Forbidden", "reason": reason}


# ------------------------------------------------------------------ trigger

def test_trigger_answers_202_pending_with_a_uuid(server):
    """202 with top-level report_id (UUID v4), status pending and created_at,
    with no body, with {} and with account_ids; every id is new."""
    t = book(server, "trig")
    every = [start(t), start(t, {})]
    ids = {*every, start(t, {"account_ids": ["a1"]}), start(t, {"format": "jsonl"})}
    assert len(ids) == 4
    r = trigger(t, data=b"", headers={"content-type": "application/json"})
    assert UUID4_RE.match(body(r)["report_id"])
    # no body, {} and an empty body: every account of the organization
    for rid in every + [body(r)["report_id"]]:
        b = wait_for(t, rid)
        assert b["status"] == "completed" and b["format"] == "csv", b
        assert b["metadata"] == {"total_accounts_included": 2}, b


ISSUE_CASES = [
    ({"account_ids": "a1"}, "invalid_type", ["account_ids"]),
    ({"account_ids": None}, "invalid_type", ["account_ids"]),
    ({"account_ids": {"a": 1}}, "invalid_type", ["account_ids"]),
    ({"account_ids": []}, "too_small", ["account_ids"]),
    ({"account_ids": ["a1", 5]}, "invalid_type", ["account_ids", 1]),
    ({"account_ids": [""]}, "too_small", ["account_ids", 0]),
    ({"account_ids": ["x" * 257]}, "too_big", ["account_ids", 0]),
    ({"account_ids": ["é" * 129]}, "custom", ["account_ids", 0]),   # 129 characters, 258 bytes
    ({"account_ids": ["a"] * 50001}, "too_big", ["account_ids"]),
    ({"format": "xml"}, "invalid_value", ["format"]),
    ([], "invalid_type", []),
]


@pytest.mark.parametrize("payload,code,path", ISSUE_CASES,
                         ids=[f"{c[1]}-{'.'.join(map(str, c[2])) or 'body'}-{i}"
                              for i, c in enumerate(ISSUE_CASES)])
def test_trigger_invalid_input_is_400_with_issues(server, payload, code, path):
    """Invalid input is 400 with issues naming the field (spec § Errors:
    code, path, message; values for fixed-value fields)."""
    t = book(server, "bad", accounts=())
    b = body(trigger(t, payload, expect=400))
    assert b["error"] == "Bad Request", b
    matching = [i for i in b["issues"] if i["code"] == code and i["path"] == path]
    assert matching, b["issues"][:5]
    if code == "invalid_value":
        assert matching[0]["values"] == ["csv", "jsonl"]
    if payload == {"account_ids": ["a"] * 50001}:
        assert len(b["issues"]) == 1   # the elements of a too-long array are not listed


def test_trigger_malformed_body_is_400(server):
    t = book(server, "malformed", accounts=())
    b = body(trigger(t, data=b'{"account_ids": [', expect=400,
                     headers={"content-type": "application/json"}))
    assert b["message"].startswith("Malformed JSON"), b
    b = body(trigger(t, data=b'{"account_ids":["a1"]}', expect=400,
                     headers={"content-type": "text/plain"}))
    assert "application/json" in b["message"], b


def test_trigger_accepts_50000_ids_of_256_characters(server):
    """The documented maximum (50,000 ids, each up to 256 characters) fits the
    route's raised body limit (about 13 MB); ids that are not accounts are
    skipped, each listed once."""
    t = book(server, "many", accounts=("a1",))
    ids = [f"{i:06d}".ljust(256, "x") for i in range(49999)] + ["a1"]
    rid, b = completed(t, {"account_ids": ids})
    meta = b["metadata"]
    assert meta["total_accounts_requested"] == 50000
    assert meta["total_accounts_included"] == 1
    skipped = meta["skipped_account_ids"]["not_found_in_organization"]
    assert len(skipped) == 49999 and skipped[:2] == ids[:2]


def test_trigger_body_over_the_route_limit_is_413(server):
    t = book(server, "huge", accounts=())
    r = trigger(t, data=b" " * (16 * 1024 * 1024 + 1), expect=413,
                headers={"content-type": "application/json"})
    assert body(r)["error"] == "Payload Too Large"


def test_trigger_needs_the_reports_scope(server):
    """A credential whose scopes do not cover the route gets the gateway deny."""
    t = book(server, "scoped")
    other = server.new_tenant("scoped2", scopes="accounts")
    r = call(other, "POST", TRIGGER, {})
    assert r.status_code == 403 and body(r) == GATEWAY_DENY
    rid = start(t)
    allowed = server.new_tenant("scoped3", scopes="reports")
    assert allowed.get(f"{TRIGGER}/{rid}").status_code == 403   # another tenant's report


# ------------------------------------------------------------------ workflow and content

def seed(t):
    """Accounts with several assets, an asset wholly sold (held at zero), an
    asset without cost basis, an account without holdings, and account ids a
    spreadsheet would take for formulas or that need CSV quoting."""
    odd = ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", 'a,"b"', "line\nbreak"]
    for a in ("a3", "empty", *odd):
        make_account(t, a)
    post_tx(t, buy("t1", "a1", "BTC", "1.5", "30000"))
    post_tx(t, buy("t2", "a1", "ETH", "10", "20000.5"))
    post_tx(t, buy("t3", "a1", "BTC", "0.25", "17000", when="2024-03-01T11:00:00Z"))
    post_tx(t, buy("t4", "a2", "AAPL", "3", "510.3", type_="security"))
    post_tx(t, income("t5", "a2", "SOL", "7"))
    post_tx(t, buy("t6", "a3", "DOGE", "1000", "100"))
    post_tx(t, sell("t7", "a3", "DOGE", "1000", "150"))           # held at zero: no row
    for i, a in enumerate(odd):
        post_tx(t, buy(f"o{i}", a, "-X" if i == 0 else "BTC", "0.1", "1000"))
    return ["a1", "a2", "a3", "empty", *odd]


def test_workflow_csv_rows_match_inventory_summaries(server):
    """Trigger, poll until completed, download, parse, and compare every row
    with GET /v1/inventory/summaries: one row per (account, asset) held,
    exact decimals, RFC 4180 with a header row, formulas neutralised."""
    t = book(server, "flow")
    accounts = seed(t)
    rid = start(t)
    b = wait_for(t, rid)
    assert b["status"] == "completed", b
    assert b["report_id"] == rid and b["format"] == "csv"
    assert b["metadata"] == {"total_accounts_included": len(accounts)}, b["metadata"]
    r, rows = download_rows(server, b)
    assert r.headers["content-type"] == "text/csv; charset=utf-8"
    assert r.headers["content-disposition"] == f'attachment; filename="inventory-summary-{rid}.csv"'
    assert int(r.headers["content-length"]) == len(r.content)
    assert r.content.endswith(b"\r\n") and b"\r\n" in r.content.split(b"\n", 1)[0] + b"\n"
    assert rows[0] == CSV_HEADER
    got = [{"account_id": unneutralise(c[0]), "asset_code": unneutralise(c[1]),
            "asset_type": c[2], "total_quantity": c[3], "total_cost": c[4],
            "average_unit_cost": c[5] or None, "total_quantity_with_cost_basis": c[6],
            "fiat_currency": c[7]} for c in rows[1:]]
    want = expected_rows(t, accounts)
    assert [{k: g[k] for k in want[0]} for g in got] == want
    assert {g["fiat_currency"] for g in got} == {"USD"}
    types = {(g["account_id"], g["asset_code"]): g["asset_type"] for g in got}
    assert types[("a2", "AAPL")] == "security" and types[("a1", "BTC")] == "crypto"
    # neutralised text cells, and only those
    raw = {c[0] for c in rows[1:]}
    assert "'=HYPERLINK(\"http://x\")" in raw and "'+1" in raw and "'-2" in raw and "'@SUM(A1)" in raw
    assert 'a,"b"' in raw and "line\nbreak" in raw
    assert ("'-X" in {c[1] for c in rows[1:]})
    # an asset held at zero and an account without holdings have no rows
    assert ("a3", "DOGE") not in types and not any(g["account_id"] == "empty" for g in got)
    # no basis: average empty, quantity with basis 0
    sol = [g for g in got if g["asset_code"] == "SOL"][0]
    assert sol["average_unit_cost"] is None and sol["total_quantity_with_cost_basis"] == "0"


def test_workflow_jsonl(server):
    """format jsonl: application/x-ndjson, one compact JSON object per row with
    the same keys in order, average_unit_cost null when none, no neutralising."""
    t = book(server, "jsonl")
    accounts = sorted(set(seed(t)))
    rid, b = completed(t, {"format": "jsonl"})
    assert b["format"] == "jsonl"
    r = fetch(server, b["download_url"])
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-ndjson"
    assert r.headers["content-disposition"] == f'attachment; filename="inventory-summary-{rid}.jsonl"'
    lines = r.content.decode().split("\n")
    assert lines[-1] == ""
    objs = [json.loads(x) for x in lines[:-1]]
    for x, o in zip(lines, objs):
        assert list(o) == CSV_HEADER
        assert x == json.dumps(o, separators=(",", ":"), ensure_ascii=False)
    want = expected_rows(t, accounts)
    assert [{k: o[k] for k in want[0]} for o in objs] == want
    assert any(o["account_id"] == '=HYPERLINK("http://x")' for o in objs)


CHUNK_BYTES = 256 * 1024   # report_chunks rows (store/reports.h)


def test_a_file_of_several_chunks_is_written_and_streamed_whole(server):
    """The file is written into the database chunk by chunk while the rows
    are read, and streamed back chunk by chunk: a report of three chunks
    comes back byte for byte, every row (including those that straddle a
    chunk boundary) equal to GET /v1/inventory/summaries."""
    t = server.new_tenant("chunks")
    make_owner(t)
    accounts = [f"{i:02d}".ljust(256, "k") for i in range(16)]
    codes = [f"C{j:03d}".ljust(32, "Z") for j in range(100)]
    for i, a in enumerate(accounts):
        make_account(t, a)
        post_tx(t, {"id": f"t{i}", "account_id": a, "datetime": T0, "type": "income",
                    "received": [line(c, f"{i + 1}.{j:03d}", rate=f"{j + 1}.5")
                                 for j, c in enumerate(codes)]})
    rid, b = completed(t)
    assert b["metadata"] == {"total_accounts_included": 16}
    r, rows = download_rows(server, b)
    assert len(r.content) > 2 * CHUNK_BYTES
    assert int(r.headers["content-length"]) == len(r.content)
    assert rows[0] == CSV_HEADER and len(rows) == 1 + 16 * 100
    got = [{"account_id": c[0], "asset_code": c[1], "total_quantity": c[3], "total_cost": c[4],
            "average_unit_cost": c[5] or None, "total_quantity_with_cost_basis": c[6]}
           for c in rows[1:]]
    assert got == expected_rows(t, accounts)


def test_report_includes_writes_acknowledged_before_the_trigger(server):
    """Dirty recalculations of the included accounts are finished first: a
    transaction acknowledged just before the trigger is in the report."""
    t = book(server, "fresh")
    post_tx(t, buy("t1", "a1", "BTC", "2", "100"))
    _, b = completed(t, {"account_ids": ["a1"]})
    post_tx(t, buy("t2", "a1", "BTC", "3", "200"))     # a1 is stale again
    _, b = completed(t, {"account_ids": ["a1"]})
    _, rows = download_rows(server, b)
    assert rows[1][:5] == ["a1", "BTC", "crypto", "5", "300"], rows


def test_metadata_with_found_missing_and_duplicate_ids(server):
    """total_accounts_requested counts duplicates, total_accounts_included
    distinct ids found, skipped ids listed once in order of first appearance;
    an included account without holdings counts and has no rows."""
    t = book(server, "meta", accounts=("a1", "a2", "idle"))
    post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
    post_tx(t, buy("t2", "a2", "ETH", "1", "10"))
    ids = ["a1", "missing1", "a1", "idle", "missing2", "missing1"]
    _, b = completed(t, {"account_ids": ids})
    assert b["metadata"] == {"total_accounts_requested": 6, "total_accounts_included": 2,
                             "skipped_account_ids": {
                                 "not_found_in_organization": ["missing1", "missing2"]}}
    _, rows = download_rows(server, b)
    assert [r[:2] for r in rows[1:]] == [["a1", "BTC"]]     # a2 not requested, idle holds nothing
    # all found: skipped_account_ids is absent, not empty
    _, b = completed(t, {"account_ids": ["a2", "a2"]})
    assert b["metadata"] == {"total_accounts_requested": 2, "total_accounts_included": 1}
    # another tenant's account is not found in this organization
    other = book(server, "meta-other", accounts=("x1",))
    _, b = completed(t, {"account_ids": ["x1"]})
    assert b["metadata"]["skipped_account_ids"] == {"not_found_in_organization": ["x1"]}
    assert other.tenant_id != t.tenant_id


def test_status_moves_through_pending_and_processing(make_server):
    """processing (held by the test pause) -> completed; the GET of a report in
    progress carries neither download_url, metadata nor error (pending is
    observed in test_taxd_worker_alone_runs_reports)."""
    s = make_server("--test-hooks")
    t = book(s, "states")
    rid = start(t, {}, headers={TEST_HEADER: "pause=1500"})
    b = wait_for(t, rid, states=("processing",))
    assert "download_url" not in b and "metadata" not in b and "error" not in b
    b = wait_for(t, rid)
    assert b["status"] == "completed"


def test_every_get_returns_a_different_url(server):
    """Two GETs in the same second give different links; both work, and
    expires_at is 15 minutes ahead."""
    t = book(server, "urls")
    post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
    rid, b1 = completed(t)
    b2 = status(t, rid)
    assert b1["download_url"] != b2["download_url"]
    for b in (b1, b2):
        assert b["download_url"].startswith(f"{server.url}{TRIGGER}/{rid}/download?")
        q = parse_qs(urlsplit(b["download_url"]).query)
        assert sorted(q) == ["expires", "nonce", "signature"]
        exp = int(q["expires"][0])
        assert abs(exp - time.time() - 900) < 60
        assert RFC3339_MS_Z_RE.match(b["expires_at"])
        expires_at = datetime.strptime(b["expires_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        assert expires_at.replace(tzinfo=timezone.utc).timestamp() == exp   # the link's expiry
        assert fetch(server, b["download_url"]).status_code == 200


@pytest.mark.parametrize("base_url", ["https://taxd.example.com/api", "https://taxd.example.com/api/"])
def test_base_url_option_names_the_links(make_server, base_url):
    """--base-url is the absolute URL clients reach the service at, used for
    the download links (a trailing slash does not double the path's)."""
    s = make_server("--base-url", base_url)
    assert s.listening_line["base_url"] == "https://taxd.example.com/api"
    t = book(s, "base", accounts=())
    rid, b = completed(t)
    assert b["download_url"].startswith(f"https://taxd.example.com/api{TRIGGER}/{rid}/download?"), b


# ------------------------------------------------------------------ status errors

def test_unknown_and_malformed_ids_are_404_naming_the_report(server):
    t = book(server, "nf", accounts=())
    for rid in ("4f8b7c1e-9c1d-4b7a-8e3f-2a1b3c4d5e6f", "not-a-uuid",
                "4f8b7c1e-9c1d-1b7a-8e3f-2a1b3c4d5e6f"):
        r = t.get(f"{TRIGGER}/{rid}")
        assert r.status_code == 404, r.text
        assert body(r) == {"error": "Not Found", "message": f"Report with id '{rid}' not found"}


def test_another_tenants_report_is_403(server):
    a, b = book(server, "owner", accounts=()), book(server, "intruder", accounts=())
    rid = start(a)
    r = b.get(f"{TRIGGER}/{rid}")
    assert r.status_code == 403 and body(r) == FORBIDDEN
    assert a.get(f"{TRIGGER}/{rid.upper()}").status_code == 200   # UUIDs in any case


# ------------------------------------------------------------------ the link

def test_link_needs_no_token_and_expires_after_15_minutes(make_server):
    """Usable without a bearer token for 15 minutes; then 403 reason expired."""
    s = make_server("--test-hooks")
    t = book(s, "expiry")
    post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
    _, b = completed(t)
    set_clock(s, 14 * 60 * 1000)
    assert fetch(s, b["download_url"]).status_code == 200
    set_clock(s, 15 * 60 * 1000 + 1000)
    refused(fetch(s, b["download_url"]), "expired")


def test_altered_links_are_403_invalid_signature(make_server):
    """Any change to the id, the expiry, the nonce or the signature, or a
    missing value: 403 invalid_signature, also when the link is expired too."""
    s = make_server("--test-hooks")
    t = book(s, "tamper")
    post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
    rid, b = completed(t)
    other, _ = completed(t)
    url = b["download_url"]
    q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    sig = q["signature"]
    flipped = ("A" if sig[0] != "A" else "B") + sig[1:]
    bad = [with_query(url, signature=flipped),
           with_query(url, expires=str(int(q["expires"]) + 3600)),
           with_query(url, nonce=b64url(b"x" * 16)),
           with_query(url, signature=sig + "A"),
           with_query(url, signature=None),
           with_query(url, nonce=None),
           with_query(url, expires=None),
           with_query(url, expires="-1"),
           url.replace(rid, other),
           url.replace(rid, rid.upper())]
    for u in bad:
        refused(fetch(s, u), "invalid_signature")
    set_clock(s, 3600 * 1000)
    refused(fetch(s, with_query(url, signature=flipped)), "invalid_signature")
    refused(fetch(s, url), "expired")


def test_genuine_link_to_a_missing_or_unfinished_report_is_404(make_server):
    """After the signature and expiry checks the report must exist and be
    completed (links signed here with the server's key file)."""
    s = make_server("--test-hooks")
    t = book(s, "missing")
    exp = int(time.time()) + 600
    gone = "4f8b7c1e-9c1d-4b7a-8e3f-2a1b3c4d5e6f"
    r = fetch(s, forge_link(s, gone, exp))
    assert r.status_code == 404 and body(r)["message"] == f"Report with id '{gone}' not found"
    rid = start(t, {}, headers={TEST_HEADER: "pause=60000"})
    wait_for(t, rid, states=("processing",))
    r = fetch(s, forge_link(s, rid, exp))
    assert r.status_code == 404 and body(r)["message"] == f"Report with id '{rid}' not found"
    # the key file signs genuine links: the same forgery for a completed report works
    done, _ = completed(book(s, "missing2", accounts=()))
    assert fetch(s, forge_link(s, done, exp)).status_code == 200


# ------------------------------------------------------------------ failure switch and retention

def test_failed_report_has_an_error_object(make_server, server):
    """The test-only failure switch: status failed with error {code, message},
    no download_url or metadata. Without --test-hooks the header is ignored."""
    s = make_server("--test-hooks")
    t = book(s, "fail")
    rid = start(t, {}, headers={TEST_HEADER: "fail"})
    b = wait_for(t, rid)
    assert b["status"] == "failed", b
    assert b["error"]["code"] == "test_failure" and b["error"]["message"], b
    assert "download_url" not in b and "metadata" not in b
    r = call(t, "POST", TRIGGER, {}, headers={TEST_HEADER: "bogus"})
    assert r.status_code == 400
    plain = book(server, "nofail")
    completed(plain, {}, headers={TEST_HEADER: "fail"})


def test_retention_30_days_then_the_janitor_deletes(tmp_path, taxd_bin):
    """Once 30 days have passed since creation GET answers 404 and the link
    stops working, whenever the janitor runs: a process that runs no janitor
    (serve --no-workers) on the same database already answers 404 while the
    report and its file are still stored; a process with its janitor then
    deletes them. The clock is moved in each process (test-only offset)."""
    srv = tmp_path / "srv"
    a = Server(srv, args=("--test-hooks",)).start()
    try:
        t = book(a, "retention")
        post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
        rid, _ = completed(t)
    finally:
        a.stop_and_check()
    count = lambda: a.sql("SELECT (SELECT count(*) FROM reports WHERE id = ?),"
                          " (SELECT count(*) FROM report_chunks WHERE report_id = ?)", (rid, rid))[0]
    no_janitor = Server(srv, args=("--test-hooks", "--no-workers")).start()
    try:
        t.server = no_janitor
        set_clock(no_janitor, THIRTY_DAYS_MS - 5 * 60 * 1000, t)
        b = status(t, rid)
        assert b["status"] == "completed"
        url = b["download_url"]               # valid until 30 days + 10 minutes
        assert fetch(no_janitor, url).status_code == 200
        set_clock(no_janitor, THIRTY_DAYS_MS + 1000, t)
        r = t.get(f"{TRIGGER}/{rid}")
        assert r.status_code == 404, r.text
        assert body(r)["message"] == f"Report with id '{rid}' not found"
        r = fetch(no_janitor, url)
        assert r.status_code == 404, r.text
        assert count() == (1, 1)            # still stored: nothing deleted it
    finally:
        no_janitor.stop_and_check()
    with_janitor = Server(srv, args=("--test-hooks",)).start()
    try:
        t.server = with_janitor
        set_clock(with_janitor, THIRTY_DAYS_MS + 1000, t)
        poll(lambda: count() == (0, 0), 30, interval=0.1, what="the janitor to delete the report")
        assert t.get(f"{TRIGGER}/{rid}").status_code == 404
        # a report created on the moved clock is not expired
        rid2 = start(t)
        assert wait_for(t, rid2)["status"] == "completed"
    finally:
        with_janitor.stop_and_check()


# ------------------------------------------------------------------ rate limit

def test_trigger_has_its_own_limit_by_default(server):
    """Issue 15: the trigger has a default limit of its own (burst 10, 1 per
    second per tenant, docs/decisions.md "Report triggers are bounded"): the
    headers show that bucket, tighter than the tenant's default (1,000).
    test_reports_limits.py checks its 429 and the operator's override."""
    t = book(server, "ownlimit", accounts=())
    r = trigger(t, {})
    limit, remaining = assert_rl_headers(r)
    assert limit == 10 and remaining <= 9, (limit, remaining)


def test_endpoint_limit_answers_429(make_server):
    """The trigger's own limit (per-endpoint override): 429 with the "Too many
    requests." body and Retry-After; the status route is not limited by it."""
    s = make_server()
    t = book(s, "limited", accounts=())
    set_rule(s, 1, 1, tenant=t, route=ROUTE)

    def probe():
        r = call(t, "POST", TRIGGER, {})
        assert r.status_code in (202, 429), r.text
        return [r] if r.status_code == 429 else None
    r = poll(probe, SETTINGS_PROPAGATION_S + 2, interval=0.02, what="the trigger's own limit")[0]
    assert body(r) == ENDPOINT_LIMIT
    assert int(r.headers["retry-after"]) >= 1
    rid = start(s.new_tenant("free"))
    assert UUID4_RE.match(rid)


# ------------------------------------------------------------------ workers and leases

def hooked(workdir, *extra):
    return Server(workdir, args=("--test-hooks", "--report-lease-ms", "1000", *extra))


def kill9(srv):
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=STOP_TIMEOUT_S)
    srv._err.close()


def test_kill9_while_processing_another_process_completes(tmp_path, taxd_bin):
    """A report is claimed with a lease: when its worker dies (kill -9), the
    same database's next process takes it once the lease expires and
    completes it."""
    a = hooked(tmp_path / "srv").start()
    try:
        t = book(a, "crash")
        post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
        rid = start(t, {}, headers={TEST_HEADER: "pause=60000"})
        wait_for(t, rid, states=("processing",))
    finally:
        kill9(a)
    b_srv = hooked(tmp_path / "srv").start()
    try:
        t.server = b_srv
        t._token = None
        b = wait_for(t, rid)
        assert b["status"] == "completed", b
        _, rows = download_rows(b_srv, b)
        assert rows[1][:4] == ["a1", "BTC", "crypto", "1"]
        assert b_srv.sql("SELECT expired_leases FROM reports WHERE id = ?", (rid,)) == [(1,)]
    finally:
        b_srv.stop_and_check()


def test_lease_expired_too_many_times_fails_the_report(tmp_path, taxd_bin):
    """A report whose lease expired --report-max-leases times is failed
    (lease_expired), so a report that crashes its worker cannot cycle forever."""
    a = hooked(tmp_path / "srv", "--report-max-leases", "1").start()
    try:
        t = book(a, "cycle")
        rid = start(t, {}, headers={TEST_HEADER: "pause=60000"})
        wait_for(t, rid, states=("processing",))
    finally:
        kill9(a)
    b_srv = hooked(tmp_path / "srv", "--report-max-leases", "1").start()
    try:
        t.server = b_srv
        t._token = None
        b = wait_for(t, rid)
        assert b["status"] == "failed" and b["error"]["code"] == "lease_expired", b
    finally:
        b_srv.stop_and_check()


def test_sigterm_while_processing_exits_0_and_gives_the_report_back(tmp_path, taxd_bin):
    """SIGTERM while a report is processing: the worker stops at once (exit
    0, also under ASan), the report is pending again, and the next process
    produces it."""
    a = Server(tmp_path / "srv", args=("--test-hooks",)).start()
    t = book(a, "term")
    rid = start(t, {}, headers={TEST_HEADER: "pause=60000"})
    wait_for(t, rid, states=("processing",))
    began = time.monotonic()
    a.stop_and_check()
    assert time.monotonic() - began < 20
    assert a.sql("SELECT status, expired_leases FROM reports WHERE id = ?", (rid,)) == [("pending", 0)]
    b_srv = Server(tmp_path / "srv").start()   # without hooks: the pause is not applied
    try:
        t.server = b_srv
        t._token = None
        assert wait_for(t, rid)["status"] == "completed"
    finally:
        b_srv.stop_and_check()


def test_taxd_worker_alone_runs_reports(tmp_path, taxd_bin):
    """serve --no-workers runs no engine (the report stays pending); `taxd
    worker` on the same database produces it."""
    api = Server(tmp_path / "srv", args=("--no-workers",)).start()
    worker = None
    try:
        t = book(api, "worker")
        post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
        rid = start(t)
        time.sleep(1.0)   # an observation window, not a barrier: nothing may run it
        assert status(t, rid)["status"] == "pending"
        err = open(tmp_path / "worker.stderr", "wb")
        worker = subprocess.Popen([TAXD_BIN, "worker", *api.db.args()], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=err, env=api.env)
        b = wait_for(t, rid)
        assert b["status"] == "completed"
        _, rows = download_rows(api, b)
        assert rows[1][:2] == ["a1", "BTC"]
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            rc = worker.wait(timeout=STOP_TIMEOUT_S)
            err.close()
            assert rc == 0, (tmp_path / "worker.stderr").read_text()[-3000:]
        api.stop_and_check()
