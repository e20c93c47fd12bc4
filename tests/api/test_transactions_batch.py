"""Batch upserts: POST /v1/transactions/external-id with a JSON array of 1 to
1,000 transactions (issue 13 item 3; docs/decisions.md, Transactions).

Rules checked:
  - each element follows every rule of a single upsert; the answer is 200
    {"data": [{"index", "status", "data"}...]} in order, `data` the record
    exactly as GET answers it; an error element carries `http_status` and
    the error body it would have had alone (paths relative to the element);
  - the same id twice: the later element is a 400 "Duplicate id '<id>' in the
    batch (first at index i)", the first is applied;
  - an empty array, more than 1,000 elements, or a body neither object nor
    array: 400 in the transactions shape with the issue on path [];
    an array of one element is a batch (200);
  - the route's body limit is 16 MiB (413 above, a ~10 MiB batch accepted);
  - events equal those of the same upserts made one by one;
  - a batch is one request for the rate limit;
  - a storage failure, a disk that fills mid-batch, and a kill -9 mid-load
    leave no partial batch, and every acknowledged batch is complete.
"""
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import HTTP_TIMEOUT_S, Server, body, set_rule
from test_transactions import (TX_PATH, call, custom, db_rows, events, get, line, make_account,
                               make_owner, post, tx, tx_error)

BATCH_MAX = 1000
SHIM = Path(__file__).parent / "shims" / "enospc_after.c"


def book_for(server, name="batch", accounts=("a1", "a2")):
    t = server.new_tenant(name)
    make_owner(t)
    t.accounts = {a: make_account(t, a) for a in accounts}
    return t


@pytest.fixture
def book(server):
    return book_for(server)


def results(r):
    assert r.status_code == 200, f"expected 200, got {r.status_code}: {r.text[:800]}"
    out = body(r)["data"]
    assert [x["index"] for x in out] == list(range(len(out))), out
    return out


def record(tenant, tx_id):
    r = get(tenant, tx_id)
    assert r.status_code == 200, r.text
    return body(r)["data"]


def root_issue(r):
    """400 in the transactions shape with exactly one issue, on path []."""
    assert r.status_code == 400, f"expected 400, got {r.status_code}: {r.text[:400]}"
    b = body(r)
    assert b["status"] == "error" and b["message"] == "Validation failed", b
    assert b["error"]["errorType"] == "ValidationError" and b["error"]["errBody"] == b["data"], b
    assert [i["path"] for i in b["data"]] == [[]], b
    return b["data"][0]


# ------------------------------------------------------------ statuses and order

def test_each_status_in_order_and_data_as_get_answers_it(book):
    """created / updated / unchanged / error, one per element in order; every
    stored element's data equals GET's answer afterwards, every error's data
    equals what the element alone is answered."""
    base_upd = post(book, tx("upd"))
    assert base_upd.status_code == 201
    same = post(book, tx("same"))
    assert same.status_code == 201
    moved = post(book, tx("moved", account="a1"))
    assert moved.status_code == 201
    before_moved = record(book, "moved")

    invalid = tx("bad", received=[line(amount="0")], type_="deposit")
    del invalid["datetime"]
    elements = [
        tx("new"),                                                    # 0 created
        tx("upd", received=[line(amount="7")]),                       # 1 updated
        tx("same"),                                                   # 2 unchanged
        invalid,                                                      # 3 validation
        tx("lost", account="nobody"),                                 # 4 unknown account
        tx("moved", account="a2"),                                    # 5 move
        tx("new", received=[line(amount="99")]),                      # 6 duplicate of 0
        tx("new2", account="a2", type_="withdraw"),                   # 7 created
    ]
    out = results(post(book, elements))
    assert [x["status"] for x in out] == ["created", "updated", "unchanged", "error", "error",
                                          "error", "error", "created"]
    assert [x.get("http_status") for x in out] == [None, None, None, 400, 404, 400, 400, None]
    for i in (0, 1, 2, 7):
        assert set(out[i]) == {"index", "status", "data"}
        assert out[i]["data"] == record(book, out[i]["data"]["id"]), i
    # updated keeps uuid and created_at; unchanged keeps updated_at too
    upd0 = body(base_upd)["data"]
    assert (out[1]["data"]["uuid"], out[1]["data"]["created_at"]) == (upd0["uuid"], upd0["created_at"])
    assert out[1]["data"]["received"][0]["asset_amount"]["amount"] == "7"
    assert out[2]["data"] == body(same)["data"]
    # the first of a duplicated id is the one applied
    assert out[0]["data"]["received"][0]["asset_amount"]["amount"] == "1.5"
    # errors: the element's own body, paths relative to the element
    assert [i["path"] for i in out[3]["data"]["data"]] == [["datetime"]], out[3]
    assert out[4]["data"] == tx_error("Account 'nobody' not found", "NotFoundError")
    assert out[5]["data"] == tx_error("Validation failed", "ValidationError", [custom(
        ["account_id"], "Transaction 'moved' belongs to account 'a1' and cannot be moved to account 'a2'")])
    dup = "Duplicate id 'new' in the batch (first at index 0)"
    assert out[6]["data"] == tx_error(dup, "ValidationError", [custom(["id"], dup)])
    for i in (3, 4, 5):  # exactly what the element alone is answered
        alone = post(book, elements[i])
        assert (alone.status_code, body(alone)) == (out[i]["http_status"], out[i]["data"]), i
    assert get(book, "bad").status_code == 404 and get(book, "lost").status_code == 404
    assert record(book, "moved") == before_moved


def test_validation_paths_are_relative_to_the_element(book):
    bad = tx("v", received=[line(amount="1.0000000000000000001")])
    out = results(post(book, [tx("ok"), bad]))
    assert out[0]["status"] == "created"
    assert out[1]["http_status"] == 400
    assert out[1]["data"] == tx_error("Validation failed", "ValidationError", [custom(
        ["received", 0, "asset_amount", "amount"], "Invalid amount: more than 18 fractional digits")])


def test_duplicate_after_an_invalid_first_counts_from_the_first_valid(book):
    """Only valid elements claim an id: the first valid one is applied, later ones are duplicates."""
    invalid = tx("d", type_="trade", sent=[])
    out = results(post(book, [invalid, tx("d"), tx("d", received=[line(amount="3")])]))
    assert [x["status"] for x in out] == ["error", "created", "error"]
    msg = "Duplicate id 'd' in the batch (first at index 1)"
    assert out[2]["data"]["message"] == msg
    assert record(book, "d")["received"][0]["asset_amount"]["amount"] == "1.5"


def test_resent_batch_is_all_unchanged_and_adds_no_event(book):
    batch = [tx(f"r{i}", account=("a1", "a2")[i % 2]) for i in range(5)]
    first = results(post(book, batch))
    before = events(book)
    again = results(post(book, batch))
    assert [x["status"] for x in again] == ["unchanged"] * 5
    assert [x["data"] for x in again] == [x["data"] for x in first]
    assert events(book) == before


# ------------------------------------------------------------- batch-level 400

@pytest.mark.parametrize("payload,code", [
    ([], "too_small"), ([tx(f"x{i}") for i in range(BATCH_MAX + 1)], "too_big"),
    (5, "invalid_type"), ("text", "invalid_type"), (None, "invalid_type"), (True, "invalid_type"),
])
def test_empty_too_long_or_not_a_batch_is_400_on_root(book, payload, code):
    r = call(book, "POST", TX_PATH, headers={"content-type": "application/json"},
             data=json.dumps(payload))
    assert root_issue(r)["code"] == code
    assert db_rows(book.server, "SELECT count(*) AS n FROM transactions"
                   " WHERE tenant = (SELECT rowid FROM tenants WHERE id = ?)",
                   (book.tenant_id,)) == [{"n": 0}]


def test_array_of_one_is_a_batch(book):
    out = results(post(book, [tx("one")]))
    assert [(x["index"], x["status"]) for x in out] == [(0, "created")]
    assert out[0]["data"] == record(book, "one")


def test_a_thousand_elements_are_accepted(book):
    out = results(post(book, [tx(f"k{i}", account=("a1", "a2")[i % 2]) for i in range(BATCH_MAX)]))
    assert len(out) == BATCH_MAX and {x["status"] for x in out} == {"created"}


# ------------------------------------------------------------------ body limit

def test_body_limit_is_16_mib(book):
    """About 10 MiB of batch is accepted; a body over 16 MiB is 413."""
    filler = "x" * 10_500
    batch = [tx(f"big{i}", metadata={"f": filler}) for i in range(BATCH_MAX)]
    r = post(book, batch)
    assert len(r.request.body) > 10 * 1024 * 1024
    out = results(r)
    assert len(out) == BATCH_MAX and out[-1]["data"]["metadata"] == {"f": filler}
    r = call(book, "POST", TX_PATH, headers={"content-type": "application/json"},
             data=b" " * (16 * 1024 * 1024 + 1))
    assert r.status_code == 413, r.text
    assert body(r) == {"error": "Payload Too Large",
                       "message": "Request body exceeds the limit of 16777216 bytes"}


# ---------------------------------------------------------------------- events

def event_view(tenant):
    """The outbox as the webhooks will carry it, without the ids the service picks."""
    return [(e["type"], e["account_id"], e["from_ms"], e["from_tx"], e["latest_ms"],
             e["latest_tx"], e["has_ids"], e["claimed_at"]) for e in events(tenant)]


def test_events_equal_one_by_one(server):
    """Several accounts, creates, an update that moves a datetime earlier, an
    unchanged resend and refused elements: the outbox after the batch equals
    the outbox after the same upserts one by one (an open event widened, a
    claimed one followed by a new one)."""
    one, many = book_for(server, "one", ("a1", "a2", "a3")), book_for(server, "many", ("a1", "a2", "a3"))
    pre = [tx("p1", account="a3", when="2024-01-01T00:00:00Z"), tx("p2", account="a1")]
    for t in (one, many):
        assert [x["status"] for x in results(post(t, pre))] == ["created", "created"]
        # a3's event is claimed: the batch must open a new one, a1's is widened
        server.sql("UPDATE events SET claimed_at = 1 WHERE tenant_id = ? AND account_id = 'a3'", (t.tenant_id,))
    elements = [
        tx("e1", account="a1", when="2024-05-01T00:00:00Z"),
        tx("e2", account="a2", when="2024-02-01T00:00:00Z"),
        tx("p1", account="a3", when="2023-06-01T00:00:00Z"),       # update, earlier
        tx("p2", account="a1"),                                     # unchanged
        tx("e3", account="a2", when="2024-01-15T00:00:00Z"),
        tx("zz", account="nobody"),                                 # refused
        tx("e1", account="a1", when="2020-01-01T00:00:00Z"),        # duplicate: refused
        tx("e4", account="a1", when="2023-01-01T00:00:00Z", type_="withdraw"),
    ]
    for i, e in enumerate(elements):
        if i != 6:  # the duplicate is refused in the batch; alone it would be an update
            post(one, e)
    out = results(post(many, elements))
    assert [x["status"] for x in out] == ["created", "created", "updated", "unchanged", "created",
                                          "error", "error", "created"]
    assert event_view(many) == event_view(one)
    assert len(event_view(many)) == 4  # a3 claimed + a1 widened + a2 + a3 new


# ------------------------------------------------------------------ rate limit

def test_a_batch_counts_once_for_the_rate_limit(server):
    t = book_for(server, "limited")
    set_rule(server, 1, 3, tenant=t, route=f"POST {TX_PATH}")
    wait_for_limit_header_post(t, 3)
    r = post(t, [tx(f"rl{i}") for i in range(10)])
    assert len(results(r)) == 10
    after = int(r.headers["x-ratelimit-remaining"])
    r2 = post(t, [tx(f"rl{i}") for i in range(10, 20)])
    assert r2.status_code == 200, r2.text
    assert int(r2.headers["x-ratelimit-remaining"]) == after - 1


def wait_for_limit_header_post(tenant, burst):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        r = post(tenant, tx("probe-" + str(time.monotonic_ns())))
        if r.headers.get("x-ratelimit-limit") == str(burst):
            time.sleep(1.1)  # the bucket refills (1/s) to a known level
            return
        time.sleep(0.1)
    raise AssertionError("the endpoint rule did not reach the server")


# ------------------------------------------------------------ storage failures

BATCH_500 = tx_error("The batch could not be saved: none of its transactions was written",
                     "InternalServerError")


def test_storage_failure_is_500_and_writes_nothing(hooks_server):
    t = book_for(hooks_server)
    assert post(t, tx("kept")).status_code == 201
    before = events(t)
    api = hooks_server.api()
    assert api.post("/_test/store-fault", json={"failing": True}).status_code == 200
    try:
        r = post(t, [tx("f1"), tx("kept", received=[line(amount="5")])])
        assert r.status_code == 500, r.text
        assert body(r) == BATCH_500
    finally:
        assert api.post("/_test/store-fault", json={"failing": False}).status_code == 200
    assert get(t, "f1").status_code == 404
    assert record(t, "kept")["received"][0]["asset_amount"]["amount"] == "1.5"
    assert events(t) == before


def shim_lib(tmp_path):
    so = tmp_path / "enospc_after.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(SHIM), "-ldl"], check=True)
    return so


def shim_env(so, flag):
    asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
    return {"LD_PRELOAD": str(so), "TAXD_TEST_ENOSPC_FLAG": str(flag),
            "ASAN_OPTIONS": asan + ":verify_asan_link_order=0"}


@pytest.mark.sqlite_only  # ENOSPC injected into writes of SQLite's files; PRAGMA integrity_check
def test_disk_full_mid_batch_is_500_writes_nothing_and_the_database_stays_readable(tmp_path):
    """A shim (LD_PRELOAD) lets the database files take 64 KiB more once the
    flag file exists, then fails their writes with ENOSPC, as a disk that
    fills during the batch's commit. Built without root: no tmpfs or loop
    mount is needed."""
    so, flag = shim_lib(tmp_path), tmp_path / "full"
    s = Server(tmp_path / "srv", env=shim_env(so, flag)).start()
    try:
        t = book_for(s)
        assert post(t, tx("kept")).status_code == 201
        before = events(t)
        flag.write_text("65536")
        big = "y" * 2000
        r = post(t, [tx(f"full{i}", account=("a1", "a2")[i % 2], metadata={"f": big})
                     for i in range(300)])
        assert r.status_code == 500, r.text
        assert body(r) == BATCH_500
        assert "database or disk is full" in s.stderr_text()  # the shim did fill the disk
        flag.unlink()  # space is back
        con = sqlite3.connect(str(s.db), timeout=10)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert con.execute("SELECT count(*) FROM transactions WHERE id LIKE 'full%'").fetchone() == (0,)
        finally:
            con.close()
        assert record(t, "kept")["id"] == "kept"
        assert events(t) == before
        out = results(post(t, [tx("after")]))
        assert out[0]["status"] == "created"
    finally:
        s.stop_and_check()


def test_kill_9_mid_load_keeps_every_acknowledged_batch_whole(tmp_path):
    """Three clients send batches of 100 back to back; kill -9 while batches
    are in flight; after a restart every acknowledged batch is there in
    full, and every batch present is whole (never part of one)."""
    size, clients = 100, 3
    d = tmp_path / "srv"
    s = Server(d).start()
    t = book_for(s)
    acked, in_flight, stop = [], [0] * clients, threading.Event()

    def load(c):
        api = s.api()
        for k in range(c, 10_000, clients):
            data = json.dumps([tx(f"b{k}-{i}", account=("a1", "a2")[i % 2]) for i in range(size)])
            if stop.is_set():
                return
            in_flight[c] += 1
            try:
                r = api.request("POST", TX_PATH, data=data, timeout=HTTP_TIMEOUT_S,
                                headers={**t.auth(), "content-type": "application/json"})
            except Exception:
                return  # the server died under this batch
            in_flight[c] -= 1
            if r.status_code == 200:
                acked.append(k)

    threads = [threading.Thread(target=load, args=(c,)) for c in range(clients)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + 20
    while (len(acked) < 6 or not all(in_flight)) and time.monotonic() < deadline:
        time.sleep(0.001)
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    stop.set()
    for th in threads:
        th.join(timeout=HTTP_TIMEOUT_S)
    s._err.close()
    assert len(acked) >= 6, "no load reached the server"
    s2 = Server(d).start()
    try:
        rows = s2.sql("SELECT id FROM transactions"
                      " WHERE tenant = (SELECT rowid FROM tenants WHERE id = ?)", (t.tenant_id,))
        per_batch = {}
        for (tx_id,) in rows:
            k = int(tx_id[1:].split("-")[0])
            per_batch[k] = per_batch.get(k, 0) + 1
        for k in acked:
            assert per_batch.get(k) == size, f"acknowledged batch {k} has {per_batch.get(k)} of {size}"
        assert all(n == size for n in per_batch.values()), per_batch
    finally:
        s2.stop_and_check()
