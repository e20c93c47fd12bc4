"""Webhook deliveries as a customer endpoint sees them (spec: Webhook
subscription, Webhook delivery envelope, Webhook subscription delivery state,
Authentication -> Webhook deliveries, Events, Limits).

A real HTTPS receiver (webhook_receiver.py: a test CA made with openssl at
test time, HTTP/1.1 keep-alive, scripted answers, every request recorded)
runs in this process; taxd serve trusts its CA through --webhook-ca-file.
Subscriptions are the operator's (`taxd admin subscription ...`); events are
INVENTORY_UPDATEs raised by writing transactions through the API. Every
timing-dependent check waits for an observable state within a bound (the
receiver's record, the deliveries listing) and asserts bounds, not exact
times; "nothing more arrives" is observed for a bounded while.
"""
import base64
import collections
import hashlib
import hmac
import json
import os
import signal
import socket
import statistics
import subprocess
import threading
import time
import uuid
from datetime import datetime, timezone
from email.utils import formatdate

import pytest

from conftest import Server, poll
from webhook_contract import shared_contract
from webhook_receiver import Proxy407, Receiver, header

T0 = "2024-03-01T10:00:00.000Z"
WAIT_S = 30.0          # bound for what must happen (2 shared cores, ASan)
QUIET_S = 1.5          # how long "nothing more arrives" is observed
TRICKY = "acct \"q\" \\ \x01\x1f\x7f \u00e9\u20ac\U0001F600\u2028 </script>"


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    """The receiver of the module; at the end every delivery it recorded is
    checked against the `webhooks:` section of docs/openapi.yaml."""
    r = Receiver(tmp_path_factory.mktemp("receiver")).start()
    yield r
    try:
        shared_contract().check_all(r.requests())
    finally:
        r.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, taxd_bin, receiver):
    s = Server(tmp_path_factory.mktemp("srv"), args=("--webhook-ca-file", str(receiver.ca_pem))).start()
    yield s
    s.stop_and_check()


_paths = iter(range(1, 1_000_000))


@pytest.fixture
def path():
    """A receiver path of this test's own."""
    return f"/hook/{next(_paths)}"


@pytest.fixture
def book(server):
    """A tenant with an owner and an account whose id holds control
    characters, quotes, backslashes and non-ASCII text."""
    t = server.new_tenant("wh")
    r = call(t, "POST", "/v1/account-owners", {"id": "o1", "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    t.account_uuid = make_account(t, TRICKY)
    return t


# ------------------------------------------------------------------ helpers

def call(tenant, method, path_, body=None):
    return tenant.server.api().request(method, path_, headers=tenant.auth(), json=body)


def make_account(tenant, account_id):
    r = call(tenant, "POST", "/v1/accounts", {"id": account_id, "account_owner_id": "o1"})
    assert r.status_code == 201, r.text
    return r.json()["data"]["uuid"]


def deposit(tenant, account_id, tx_id, when=T0):
    r = call(tenant, "POST", "/v1/transactions/external-id", {
        "id": tx_id, "account_id": account_id, "datetime": when, "type": "deposit",
        "received": [{"asset_amount": {"amount": "1.5", "asset": {"code": "BTC", "type": "crypto"}}}]})
    assert r.status_code in (200, 201), r.text


def subscribe(server, tenant, receiver, path_, *extra):
    return subscribe_url(server, tenant, receiver.url(path_), *extra)


def subscribe_url(server, tenant, url, *extra):
    out = server.admin("subscription", "create", "--tenant", tenant.tenant_id, "--url", url,
                       "--events", "INVENTORY_UPDATE", *extra)
    assert set(out) == {"subscription_id", "secret"}, out
    return out["subscription_id"], out["secret"]


def deliveries(server, sub, state=None):
    args = ["subscription", "deliveries", "--subscription", sub]
    if state:
        args += ["--state", state]
    return server.admin(*args)["deliveries"]


def wait_deliveries(server, sub, state, count=1):
    """Waits until `count` deliveries of sub are in `state`; returns them."""
    return poll(lambda: (lambda d: d if len(d) >= count else None)(deliveries(server, sub, state)),
                WAIT_S, interval=0.1, what=f"{count} {state} deliveries of {sub}")


def wait_settled(server, sub):
    """Waits until sub's only delivery is delivered or failed; returns it."""
    return poll(lambda: (lambda d: d[0] if d and d[0]["state"] in ("delivered", "failed") else None)(
        deliveries(server, sub)), WAIT_S, interval=0.1, what=f"the delivery of {sub} settled")


def metrics(server):
    """The /metrics samples as {series: value}."""
    out = {}
    for line in server.api().get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            out[series] = float(value)
    return out


def attempt_lines(server, trace_id):
    """The `webhook attempt` log lines of one delivery, in order."""
    lines = []
    for raw in server.stderr_text().splitlines():
        if '"webhook attempt"' in raw:
            line = json.loads(raw)
            if line.get("trace_id") == trace_id:
                lines.append(line)
    return lines


def b64(text):
    return base64.b64encode(text.encode()).decode()


def quiet(receiver, path_, count):
    """Observes for QUIET_S that the receiver still has exactly `count` requests on path_."""
    time.sleep(QUIET_S)
    got = receiver.requests(path_)
    assert len(got) == count, f"expected {count} requests on {path_}, got {len(got)}"
    return got


def sign(secret, body):
    return "v1=" + base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def dispatch_time(req):
    """The envelope's timestamp as seconds since the epoch."""
    text = json.loads(req["body"])["timestamp"]
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def python_roundtrip(body):
    return json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False).encode()


def node_roundtrip(body):
    script = ("let s='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>s+=d);"
              "process.stdin.on('end',()=>process.stdout.write(JSON.stringify(JSON.parse(s))))")
    return subprocess.run(["node", "-e", script], input=body, capture_output=True, check=True, timeout=30).stdout


def the_event(req):
    doc = json.loads(req["body"])
    assert list(doc) == ["timestamp", "data"], doc
    assert len(doc["data"]) == 1, doc
    return doc, doc["data"][0]


# ------------------------------------------------------------------ subscriptions

def test_creating_updating_or_reactivating_sends_nothing(server, book, receiver, path):
    """Rule: "the service never sends probe or test events" - also for a
    tenant whose changes happened before the subscription existed."""
    deposit(book, TRICKY, "before-subscribing")
    sub, _ = subscribe(server, book, receiver, path)
    server.admin("subscription", "update", "--subscription", sub, "--rate-limit", "50")
    server.admin("subscription", "reactivate", "--subscription", sub)
    quiet(receiver, path, 0)
    assert deliveries(server, sub) == []


def test_admin_refuses_http_urls_and_unknown_event_types(server, book):
    """Rules: the endpoint "must be HTTPS"; event types are "chosen from the catalog"."""
    p = server.admin_raw("subscription", "create", "--tenant", book.tenant_id, "--url", "http://127.0.0.1/x",
                         "--events", "INVENTORY_UPDATE")
    assert p.returncode == 1 and "HTTPS" in json.loads(p.stderr)["error"], p.stderr
    p = server.admin_raw("subscription", "create", "--tenant", book.tenant_id, "--url", "https://127.0.0.1/x",
                         "--events", "INVENTORY_UPDATE,NOT_A_TYPE")
    assert p.returncode == 1 and "NOT_A_TYPE" in json.loads(p.stderr)["error"], p.stderr
    assert p.stdout == ""
    for command in ("show", "update", "delete", "rotate-secret", "drop-secret", "reactivate", "deliveries"):
        p = server.admin_raw("subscription", command)
        assert p.returncode == 2 and "--subscription" in json.loads(p.stderr)["error"], (command, p.stderr)


def test_defaults_and_show_without_secrets(server, book, receiver, path):
    sub, secret = subscribe(server, book, receiver, path)
    elsewhere, _ = subscribe(server, server.new_tenant("other"), receiver, path)
    assert len(base64.b64decode(secret, validate=True)) == 32
    shown = server.admin("subscription", "show", "--subscription", sub)
    assert (shown["rate_limit"], shown["retry_attempts"], shown["retry_window_seconds"],
            shown["timeout_seconds"]) == (300, 2, 3600, 10)
    assert shown["state"] == "active" and shown["auth_mode"] == "source_marker"
    assert secret not in json.dumps(shown)
    listed = server.admin("subscription", "list", "--tenant", book.tenant_id)["subscriptions"]
    assert [s["subscription_id"] for s in listed] == [sub]
    everyone = server.admin("subscription", "list")["subscriptions"]
    assert {sub, elsewhere} <= {s["subscription_id"] for s in everyone}


def test_update_changes_what_the_next_delivery_uses(server, book, receiver, path):
    """Rule: `update` changes URL, events, rate, retries, window, timeout and
    egress address, and the next delivery uses them."""
    moved = path + "/moved"
    sub, _ = subscribe(server, book, receiver, path)
    shown = server.admin("subscription", "update", "--subscription", sub, "--url", receiver.url(moved),
                         "--rate-limit", "7", "--retry-attempts", "0", "--retry-window", "9",
                         "--timeout", "1", "--egress-address", "127.0.0.4")
    assert (shown["url"], shown["rate_limit"], shown["retry_attempts"], shown["retry_window_seconds"],
            shown["timeout_seconds"], shown["egress_address"]) == (receiver.url(moved), 7, 0, 9, 1, "127.0.0.4")
    # Slower than the new timeout, within the old one: with the old settings
    # (10 s, 2 retries) this delivery would succeed.
    receiver.script(moved, default={"status": 200, "delay": 1.6})
    deposit(book, TRICKY, "u1")
    d = wait_settled(server, sub)
    assert (d["state"], d["attempts"], d["last_status"]) == ("failed", 1, None), d
    got = receiver.requests(moved)
    assert len(got) == 1 and got[0]["conn"].startswith("127.0.0.4:"), got
    assert receiver.requests(path) == []
    server.admin("subscription", "update", "--subscription", sub, "--events", "FORM_STATUS_UPDATE")
    deposit(book, TRICKY, "u2", when="2024-03-02T10:00:00.000Z")
    assert len(deliveries(server, sub)) == 1  # INVENTORY_UPDATE is no longer listed
    shown = server.admin("subscription", "update", "--subscription", sub, "--egress-address", "")
    assert shown["egress_address"] is None


def test_delete_stops_every_delivery_of_the_subscription(server, book, receiver, path):
    """Rule: `delete` removes the subscription with its deliveries: one
    waiting for its retry is never sent again, new events queue nothing."""
    receiver.script(path, default={"status": 503})
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "3", "--retry-window", "6")
    deposit(book, TRICKY, "del1")
    receiver.wait_for(1, path, WAIT_S)
    assert server.admin("subscription", "delete", "--subscription", sub) == {"subscription_id": sub,
                                                                             "deleted": True}
    sent = len(receiver.requests(path))
    assert sent < 3, "the retries came before the delete: nothing was proven"
    p = server.admin_raw("subscription", "show", "--subscription", sub)
    assert p.returncode == 1 and sub in json.loads(p.stderr)["error"], p.stderr
    assert server.admin("subscription", "list", "--tenant", book.tenant_id)["subscriptions"] == []
    deposit(book, TRICKY, "del2", when="2024-03-02T10:00:00.000Z")
    quiet(receiver, path, sent)  # the first retry was due within 0.75 s


# ------------------------------------------------------------------ the request

def test_signed_envelope_with_one_event(server, book, receiver, path):
    """Rules: x-service-signature is v1=<base64 HMAC-SHA256> keyed with the
    secret's bytes over the body; x-service-source: webhook; x-trace-id;
    the envelope {"timestamp","data":[event]} with INVENTORY_UPDATE's fields."""
    sub, secret = subscribe(server, book, receiver, path)
    deposit(book, TRICKY, "tx \"1\" \u00e9")
    req = receiver.wait_for(1, path, WAIT_S)[0]
    body = req["body"]
    assert req["method"] == "POST" and req["version"] == "HTTP/1.1"
    assert header(req, "content-type") == ["application/json"]
    assert header(req, "x-service-source") == ["webhook"]
    assert header(req, "authorization") == []
    assert header(req, "x-service-signature") == [sign(secret, body)]
    doc, event = the_event(req)
    assert len(doc["timestamp"]) == 24 and doc["timestamp"].endswith("Z")
    assert event == {
        "event_type": "INVENTORY_UPDATE", "event_id": event["id"], "id": event["id"],
        "account_id": book.account_uuid, "alternate_account_id": TRICKY,
        "latest_transaction_datetime": T0, "update_from_datetime": T0,
        "latest_transaction_id": "tx \"1\" \u00e9", "update_from_transaction_id": "tx \"1\" \u00e9"}
    d = wait_deliveries(server, sub, "delivered")[0]
    assert header(req, "x-trace-id") == [d["trace_id"]]
    assert (d["event_id"], d["attempts"], d["last_status"]) == (event["id"], 1, 200)


def test_body_is_a_compact_json_fixed_point_in_python_and_node(server, book, receiver, path):
    """Rule: parse-and-reserialize leaves the body unchanged (JSON.stringify,
    json.dumps(separators=(",", ":"), ensure_ascii=False)), with control
    characters, quotes, backslashes and non-ASCII in the event."""
    subscribe(server, book, receiver, path)
    deposit(book, TRICKY, "fixed-point")
    body = receiver.wait_for(1, path, WAIT_S)[0]["body"]
    assert b"\\u0001\\u001f" in body and "\u00e9".encode() in body  # lowercase escapes, raw UTF-8
    assert python_roundtrip(body) == body
    assert node_roundtrip(body) == body


def test_rotation_signs_with_both_then_the_last_secret_stays(server, book, receiver, path):
    """Rules: "while both exist, deliveries are signed with both" (newest
    first, comma-separated); the last secret can never be removed."""
    sub, old = subscribe(server, book, receiver, path)
    new = server.admin("subscription", "rotate-secret", "--subscription", sub)["secret"]
    assert new != old
    deposit(book, TRICKY, "r1")
    req = receiver.wait_for(1, path, WAIT_S)[0]
    assert header(req, "x-service-signature") == [sign(new, req["body"]) + "," + sign(old, req["body"])]
    shown = server.admin("subscription", "drop-secret", "--subscription", sub)
    assert shown["secret_count"] == 1
    p = server.admin_raw("subscription", "drop-secret", "--subscription", sub)
    assert p.returncode == 1 and "cannot be removed" in json.loads(p.stderr)["error"], p.stderr
    deposit(book, TRICKY, "r2", when="2024-03-02T10:00:00.000Z")
    req = receiver.wait_for(2, path, WAIT_S)[1]
    assert header(req, "x-service-signature") == [sign(new, req["body"])]


def test_basic_mode_headers(server, book, receiver, path, tmp_path):
    """Rules: basic mode sends authorization: Basic base64(user:password) and
    no x-service-source; the signature is still sent. Passwords come from a
    file, never the command line."""
    sub, secret = subscribe(server, book, receiver, path)
    pw = tmp_path / "pw"
    pw.write_text("s3cr\u00e9t:pass\n")
    shown = server.admin("subscription", "set-basic", "--subscription", sub, "--user", "bob",
                         "--password-file", str(pw))
    assert shown["auth_mode"] == "basic" and "s3cr" not in json.dumps(shown)
    deposit(book, TRICKY, "b1")
    req = receiver.wait_for(1, path, WAIT_S)[0]
    expected = base64.b64encode("bob:s3cr\u00e9t:pass".encode()).decode()
    assert header(req, "authorization") == [f"Basic {expected}"]
    assert header(req, "x-service-source") == []
    assert header(req, "x-service-signature") == [sign(secret, req["body"])]
    server.admin("subscription", "set-source-marker", "--subscription", sub)
    deposit(book, TRICKY, "b2", when="2024-03-02T10:00:00.000Z")
    req = receiver.wait_for(2, path, WAIT_S)[1]
    assert header(req, "authorization") == [] and header(req, "x-service-source") == ["webhook"]


def test_basic_credential_at_creation_then_replaced_at_the_cutover(server, book, receiver, path, tmp_path):
    """Rules: create --basic-user U --basic-password-file PATH starts in
    basic mode; set-basic replaces the single credential (no overlap: only
    the new one is sent afterwards); a password is never taken on the
    command line."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text("old-pass\n")
    second.write_text("new-pass")
    sub, _ = subscribe(server, book, receiver, path, "--basic-user", "alice", "--basic-password-file", str(first))
    shown = server.admin("subscription", "show", "--subscription", sub)
    assert (shown["auth_mode"], shown["basic_user"]) == ("basic", "alice")
    assert "old-pass" not in json.dumps(shown)
    deposit(book, TRICKY, "c1")
    req = receiver.wait_for(1, path, WAIT_S)[0]
    assert header(req, "authorization") == ["Basic " + b64("alice:old-pass")]
    assert header(req, "x-service-source") == []
    p = server.admin_raw("subscription", "set-basic", "--subscription", sub, "--user", "carol",
                         "--password", "new-pass")
    assert p.returncode != 0 and p.stdout == ""
    server.admin("subscription", "set-basic", "--subscription", sub, "--user", "carol",
                 "--password-file", str(second))
    deposit(book, TRICKY, "c2", when="2024-03-02T10:00:00.000Z")
    req = receiver.wait_for(2, path, WAIT_S)[1]
    assert header(req, "authorization") == ["Basic " + b64("carol:new-pass")]


# ------------------------------------------------------------------ retries

def test_exactly_one_plus_n_attempts_then_failed_then_replayed(server, book, receiver, path):
    """Rules: a failed delivery is sent at most 1 + retry-attempts times, all
    inside the window; exhausted, it stays failed with its last status and
    is sent again only on the operator's replay, with a new trace id."""
    receiver.script(path, default={"status": 503})
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "3", "--retry-window", "4")
    deposit(book, TRICKY, "f1")
    failed = wait_deliveries(server, sub, "failed")[0]
    assert (failed["attempts"], failed["last_status"]) == (4, 503)
    got = quiet(receiver, path, 4)
    assert all(r["t"] - got[0]["t"] < 4.0 for r in got)
    assert {header(r, "x-trace-id")[0] for r in got} == {failed["trace_id"]}
    # Each attempt's envelope is stamped when it is dispatched, not when the
    # event occurred; the event (and its event_id) is the same every time.
    stamps = [dispatch_time(r) for r in got]
    assert stamps == sorted(stamps) and len(set(stamps)) == 4, stamps
    assert all(abs(s - r["wall"]) < 2.0 for s, r in zip(stamps, got))
    assert {the_event(r)[1]["event_id"] for r in got} == {failed["event_id"]}
    receiver.script(path, default={"status": 200})
    out = server.admin("subscription", "replay", "--subscription", sub, "--failed")
    assert out["requeued"] == 1
    done = wait_deliveries(server, sub, "delivered")[0]
    assert done["trace_id"] != failed["trace_id"] and done["attempts"] == 1
    replayed = receiver.wait_for(5, path, WAIT_S)[4]
    assert header(replayed, "x-trace-id") == [done["trace_id"]]
    assert the_event(replayed)[1]["event_id"] == failed["event_id"]
    out = server.admin("subscription", "replay", "--subscription", sub, "--event", done["event_id"])
    assert out["requeued"] == 1
    assert the_event(receiver.wait_for(6, path, WAIT_S)[5])[1]["event_id"] == failed["event_id"]


def test_deliveries_and_replay_since(server, book, receiver, path):
    """Rules: `deliveries --since T` and `replay --failed --since T` take
    only the deliveries created from T on."""
    receiver.script(path, default={"status": 500})
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "0")
    deposit(book, TRICKY, "s1")
    wait_deliveries(server, sub, "failed")
    time.sleep(0.01)
    since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    time.sleep(0.01)
    second = make_account(book, "since account")
    deposit(book, "since account", "s2")
    failed = wait_deliveries(server, sub, "failed", 2)
    later = server.admin("subscription", "deliveries", "--subscription", sub,
                         "--since", since)["deliveries"]
    assert [d["event_id"] for d in later] == [failed[1]["event_id"]], (since, failed)
    receiver.script(path, default={"status": 200})
    out = server.admin("subscription", "replay", "--subscription", sub, "--failed", "--since", since)
    assert out["requeued"] == 1
    wait_deliveries(server, sub, "delivered")
    assert [d["event_id"] for d in deliveries(server, sub, "failed")] == [failed[0]["event_id"]]
    assert the_event(receiver.wait_for(3, path, WAIT_S)[2])[1]["account_id"] == second


def test_no_attempt_after_a_short_window_closes(server, book, receiver, path):
    """Rule: every attempt begins inside the retry window counted from the
    first attempt, even when slow attempts leave no room for the rest."""
    receiver.script(path, default={"status": 200, "delay": 1.6})
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "10", "--retry-window", "2",
                       "--timeout", "1")
    deposit(book, TRICKY, "w1")
    d = wait_deliveries(server, sub, "failed")[0]
    got = quiet(receiver, path, d["attempts"])
    assert 1 <= len(got) < 11
    assert all(r["t"] - got[0]["t"] < 2.0 for r in got)


def test_timeout_counts_as_a_failed_attempt(server, book, receiver, path):
    receiver.script(path, [{"status": 200, "delay": 2.5}])
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "1", "--retry-window", "4",
                       "--timeout", "1")
    deposit(book, TRICKY, "s1")
    d = wait_deliveries(server, sub, "delivered")[0]
    assert d["attempts"] == 2
    assert len(receiver.requests(path)) == 2


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_retry_after_of_a_429_is_honoured_within_the_window(server, book, receiver, path, form):
    """Rule: a 429's Retry-After (seconds or an HTTP date) delays the next
    attempt. With 3 retries in 10 s the first retry is due within 1.25 s
    of the first attempt, so a gap of 2.5 s or more is Retry-After's."""
    after = "3" if form == "seconds" else formatdate(time.time() + 4, usegmt=True)
    receiver.script(path, [{"status": 429, "headers": {"Retry-After": after}}])
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "3", "--retry-window", "10")
    deposit(book, TRICKY, "q1")
    got = receiver.wait_for(2, path, WAIT_S)
    assert got[1]["t"] - got[0]["t"] >= 2.5
    assert wait_deliveries(server, sub, "delivered")[0]["attempts"] == 2


def test_redirects_are_not_followed(server, book, receiver, path):
    """Rule: a redirect is a failed attempt (not followed)."""
    receiver.script(path, [{"status": 307, "headers": {"Location": receiver.url(path + "/moved")}}])
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "1", "--retry-window", "2")
    deposit(book, TRICKY, "m1")
    d = wait_deliveries(server, sub, "delivered")[0]
    assert d["attempts"] == 2
    assert receiver.requests(path + "/moved") == []


@pytest.mark.parametrize("status", [202, 299])
def test_any_2xx_is_delivered(server, book, receiver, path, status):
    receiver.script(path, [{"status": status}], default={"status": 500})
    sub, _ = subscribe(server, book, receiver, path, "--retry-attempts", "0")
    deposit(book, TRICKY, f"ok-{status}")
    d = wait_settled(server, sub)
    assert (d["state"], d["attempts"], d["last_status"]) == ("delivered", 1, status)


def test_connection_and_tls_errors_are_failed_attempts(server, book):
    """Rule: a connection error (nothing listens) and a TLS error (the peer
    does not speak TLS) are failed attempts: retried, then failed with the
    error and no status."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused_port = closed.getsockname()[1]
    closed.close()
    plain = socket.socket()
    plain.bind(("127.0.0.1", 0))
    plain.listen(16)
    plain.settimeout(0.2)
    stop = threading.Event()

    def answer_in_clear():
        while not stop.is_set():
            try:
                conn, _ = plain.accept()
            except socket.timeout:
                continue
            with conn:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    clear = threading.Thread(target=answer_in_clear, daemon=True)
    clear.start()
    try:
        retry = ("--retry-attempts", "1", "--retry-window", "2")
        refused, _ = subscribe_url(server, book, f"https://127.0.0.1:{refused_port}/x", *retry)
        not_tls, _ = subscribe_url(server, book, f"https://127.0.0.1:{plain.getsockname()[1]}/x", *retry)
        deposit(book, TRICKY, "e1")
        errors = []
        for sub in (refused, not_tls):
            d = wait_settled(server, sub)
            assert (d["state"], d["attempts"], d["last_status"]) == ("failed", 2, None), d
            errors.append(d["last_error"])
        assert all(errors) and errors[0] != errors[1], errors
    finally:
        stop.set()
        clear.join()
        plain.close()


# ------------------------------------------------------------------ deauthorization

@pytest.mark.parametrize("status", [401, 403, 407])
def test_deauthorized_then_held_then_reactivated(server, book, receiver, path, status):
    """Rules: 401, 403 or 407 deauthorizes the subscription at once; no
    request follows; pending and future deliveries are held, never dropped;
    reactivation sends every held delivery, the one answered first included."""
    receiver.script(path, [{"status": status}])
    sub, _ = subscribe(server, book, receiver, path)
    deposit(book, TRICKY, "d1")
    held = wait_deliveries(server, sub, "held")[0]
    assert held["last_status"] == status
    assert server.admin("subscription", "show", "--subscription", sub)["state"] == "deauthorized"
    other = make_account(book, "second account")
    deposit(book, "second account", "d2")
    wait_deliveries(server, sub, "held", 2)
    quiet(receiver, path, 1)
    out = server.admin("subscription", "reactivate", "--subscription", sub)
    assert (out["state"], out["requeued"]) == ("active", 2)
    delivered = wait_deliveries(server, sub, "delivered", 2)
    got = receiver.wait_for(3, path, WAIT_S)
    assert {the_event(r)[1]["account_id"] for r in got[1:]} == {book.account_uuid, other}
    assert {d["event_id"] for d in delivered} == {the_event(r)[1]["id"] for r in got[1:]}


def test_a_proxys_407_on_connect_deauthorizes(tmp_path_factory, taxd_bin, receiver, path):
    """Rule: a proxy's 407 deauthorizes too, also when it refuses the CONNECT
    of the HTTPS tunnel (the answer is then in CURLINFO_HTTP_CONNECTCODE,
    not the response code). taxd uses no proxy in production, so the test
    puts one in front with the --test-hooks-only --webhook-test-proxy."""
    proxy = Proxy407().start()
    s = Server(tmp_path_factory.mktemp("proxy"), args=("--webhook-ca-file", str(receiver.ca_pem), "--test-hooks",
                                                       "--webhook-test-proxy", proxy.url)).start()
    try:
        t = s.new_tenant("proxy")
        r = call(t, "POST", "/v1/account-owners", {"id": "o1", "name": "Owner", "account_owner_type": "individual"})
        assert r.status_code == 201, r.text
        make_account(t, "acct")
        sub, _ = subscribe(s, t, receiver, path)
        deposit(t, "acct", "p1")
        held = wait_deliveries(s, sub, "held")[0]
        assert held["last_status"] == 407, held
        assert s.admin("subscription", "show", "--subscription", sub)["state"] == "deauthorized"
        assert proxy.requests() == [f"CONNECT 127.0.0.1:{receiver.port} HTTP/1.1"]
        deposit(t, "acct", "p2", when="2024-03-02T10:00:00.000Z")
        wait_deliveries(s, sub, "held", 2)
        time.sleep(QUIET_S)
        assert len(proxy.requests()) == 1 and receiver.requests(path) == []
    finally:
        s.stop_and_check()
        proxy.stop()


def test_deauthorized_with_a_backlog_aborts_running_attempts_and_holds_every_delivery(server, book, receiver, path):
    """Rules: after a 401 no request starts; the subscription's running
    attempts are aborted and its begun, pending and queued deliveries are
    all held, none failed or dropped; reactivation sends every one."""
    count = 10
    receiver.script(path, [{"status": 401, "delay": 0.5}], default={"status": 200, "delay": 3.0})
    sub, _ = subscribe(server, book, receiver, path, "--rate-limit", "5")
    queue_events(server.db, book.tenant_id, count)
    held = wait_deliveries(server, sub, "held", count)
    sent = len(receiver.requests(path))
    assert 2 <= sent < count, f"{sent} requests: the 401 came too late to prove anything"
    assert sum("aborted" in (d["last_error"] or "") for d in held) == sent - 1
    quiet(receiver, path, sent)
    receiver.script(path, default={"status": 200})
    out = server.admin("subscription", "reactivate", "--subscription", sub)
    assert out["requeued"] == count
    wait_deliveries(server, sub, "delivered", count)
    assert len({the_event(r)[1]["event_id"] for r in receiver.requests(path)}) == count


# ------------------------------------------------------------------ rate

def test_rate_limit_holds_as_the_receiver_sees_it(server, book, receiver, path):
    """Rule: in any interval of length t the receiver sees at most
    burst + rate x t + 1 requests (taxd's burst: a tenth of the rate, at
    least 1)."""
    rate, count = 10, 30
    burst = max(1, rate // 10)
    sub, _ = subscribe(server, book, receiver, path, "--rate-limit", str(rate))
    for i in range(count):
        make_account(book, f"rate-{i}")
        deposit(book, f"rate-{i}", f"rate-tx-{i}")
    got = receiver.wait_for(count, path, 60)
    times = sorted(r["t"] for r in got)
    for i in range(len(times)):
        for j in range(i, len(times)):
            assert j - i + 1 <= burst + rate * (times[j] - times[i]) + 1, (i, j, times[j] - times[i])
    wait_deliveries(server, sub, "delivered", count)


def test_a_slow_endpoint_delays_no_other_and_its_concurrency_is_bounded(server, book, receiver, path):
    """Rules: one slow endpoint never delays others; each subscription's
    concurrency is bounded by taxd (64 at once), not by queueing inside
    libcurl, whose timeout would count the queueing."""
    slow, fast = path + "/slow", path + "/fast"
    delay, count, bound = 5.0, 80, 64
    receiver.script(slow, default={"status": 200, "delay": delay})
    slow_sub, _ = subscribe(server, book, receiver, slow, "--rate-limit", "5000", "--timeout", "8")
    subscribe(server, book, receiver, fast, "--rate-limit", "5000")
    queue_events(server.db, book.tenant_id, count)  # each event to both subscriptions
    receiver.wait_for(count, fast, WAIT_S)
    assert len(receiver.requests(slow)) <= bound, "the fast endpoint waited, or the slow one took more than its bound"
    # Every slow attempt succeeded at once: none timed out queued behind the others.
    done = wait_deliveries(server, slow_sub, "delivered", count)
    assert {d["attempts"] for d in done} == {1}
    # Requests that arrived within less than the delay of each other were all
    # unanswered at once.
    times = sorted(r["t"] for r in receiver.requests(slow))
    assert len(times) == count
    assert max(sum(1 for u in times if t <= u < t + delay - 0.5) for t in times) <= bound
    assert max(sum(1 for u in times if t <= u < t + delay - 0.5) for t in times) > bound // 2


def test_a_commit_wakes_the_dispatcher_at_once(server, book, receiver, path):
    """Rule: a commit wakes the engine at once, with no polling delay in
    one process: the dispatcher sleeps up to 500 ms when idle, and the
    median time from the deposit's answer to the receiver is far below it."""
    subscribe(server, book, receiver, path)
    waits = []
    for i in range(9):
        time.sleep(0.1 + 0.04 * i)  # the dispatcher settles into its idle wait
        deposit(book, TRICKY, f"wake-{i}", when=f"2024-03-{i + 2:02d}T10:00:00.000Z")
        answered = time.monotonic()
        waits.append(receiver.wait_for(i + 1, path, WAIT_S)[i]["t"] - answered)
    assert statistics.median(waits) < 0.1, waits


# ------------------------------------------------------------------ observability

def test_metrics_count_outcomes_latency_backlog_and_deauthorizations(server, book, receiver, path):
    """Rule: metrics for deliveries by outcome, attempt latency, backlog per
    subscription and deauthorized subscriptions, each moving with what the
    receiver saw."""
    retried, refused = path + "/retried", path + "/refused"
    receiver.script(retried, [{"status": 503}])
    receiver.script(path, default={"status": 503})
    receiver.script(refused, [{"status": 401}])
    before = metrics(server)
    ok_sub, _ = subscribe(server, book, receiver, retried, "--retry-attempts", "1", "--retry-window", "2")
    waiting, _ = subscribe(server, book, receiver, path)  # 1 h window: its retry is 15 min away
    deauth, _ = subscribe(server, book, receiver, refused)
    deposit(book, TRICKY, "x1")
    wait_deliveries(server, ok_sub, "delivered")
    wait_deliveries(server, deauth, "held")
    poll(lambda: deliveries(server, waiting)[0]["last_status"] == 503 or None, WAIT_S, what="the 503")
    after = metrics(server)

    def moved(series):
        return after.get(series, 0) - before.get(series, 0)

    total = 'taxd_webhook_deliveries_total{outcome="%s"}'
    assert (moved(total % "delivered"), moved(total % "retry"), moved(total % "held")) >= (1, 2, 1)
    assert moved("taxd_webhook_attempt_duration_seconds_count") >= 4
    assert moved('taxd_webhook_attempt_duration_seconds_bucket{le="10"}') >= 4
    assert moved("taxd_webhook_attempt_duration_seconds_sum") > 0
    assert moved("taxd_webhook_deauthorized_subscriptions") == 1
    assert after[f'taxd_webhook_backlog{{subscription="{waiting}"}}'] == 1
    assert after[f'taxd_webhook_backlog{{subscription="{ok_sub}"}}'] == 0


def test_one_log_line_per_attempt_and_no_secret_logged(server, book, receiver, path, tmp_path):
    """Rules: one log line per attempt with subscription, event id, trace id,
    status and latency; secrets and passwords never reach the log."""
    receiver.script(path, [{"status": 500}])
    pw = tmp_path / "pw"
    pw.write_text("log-me-not\n")
    sub, secret = subscribe(server, book, receiver, path, "--retry-attempts", "1", "--retry-window", "2",
                            "--basic-user", "u", "--basic-password-file", str(pw))
    deposit(book, TRICKY, "l1")
    d = wait_deliveries(server, sub, "delivered")[0]
    lines = poll(lambda: (lambda got: got if len(got) >= 2 else None)(attempt_lines(server, d["trace_id"])),
                 WAIT_S, what="two attempt lines")
    assert [(x["attempt"], x["status"], x["outcome"]) for x in lines] == [(1, 500, "retry"), (2, 200, "delivered")]
    for x in lines:
        assert (x["subscription_id"], x["event_id"]) == (sub, d["event_id"])
        assert isinstance(x["latency_us"], int) and x["latency_us"] > 0
    text = server.stderr_text()
    assert secret not in text and "log-me-not" not in text and b64("u:log-me-not") not in text


# ------------------------------------------------------------------ durability

def queue_events(db, tenant_id, count):
    """`count` INVENTORY_UPDATE events with their deliveries, written as the
    outbox writes them (one transaction), while taxd runs."""
    subs = [r[0] for r in db.sql("SELECT id FROM subscriptions WHERE tenant_id = ? ORDER BY id", (tenant_id,))]
    statements = []
    for i in range(count):
        event_id = str(uuid.uuid4())
        statements.append(("INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id,"
                           " from_ms, latest_ms, has_ids) VALUES (?, ?, 'INVENTORY_UPDATE', ?, ?, ?, ?, ?, 0)",
                           (event_id, tenant_id, int(time.time() * 1000), str(uuid.uuid4()), f"acct-{i}",
                            1709290800000, 1709290800000)))
        for sub in subs:
            statements.append(("INSERT INTO deliveries (id, subscription_id, event_id, trace_id, state,"
                               " next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, 0)",
                               ("dlv_" + os.urandom(16).hex(), sub, event_id, "trc_" + os.urandom(16).hex())))
    db.script(statements)


def test_a_backlog_reaches_the_receiver_once_per_event(server, receiver, path):
    """Rule: at least once, and duplicates only for outcomes a crash kept
    from being committed. Without a crash, a backlog far larger than the
    attempts in flight and begun ahead is sent once per event, each
    delivery with one attempt. Beginning an attempt writes nothing to its
    row, so this is what proves the dispatcher leaves what it has ready or
    in flight out of every batch it begins."""
    count = 1500
    tenant = server.new_tenant("backlog")
    receiver.script(path, default={"status": 200, "delay": 0.005})
    sub, _ = subscribe(server, tenant, receiver, path, "--rate-limit", "100000")
    queue_events(server.db, tenant.tenant_id, count)
    done = wait_deliveries(server, sub, "delivered", count)
    sent = collections.Counter(the_event(r)[1]["event_id"] for r in receiver.requests(path))
    repeated = {k: v for k, v in sent.items() if v > 1}
    assert len(sent) == count and not repeated, f"{len(repeated)} events sent more than once"
    assert {d["attempts"] for d in done} == {1}


def test_kill_9_loses_no_event(tmp_path_factory, taxd_bin, receiver, path):
    """Rule: a kill -9 of taxd at any moment loses no event: after a restart
    every queued event is delivered at least once; duplicates only for
    deliveries whose outcome had not been committed (at most one batch)."""
    count = 3000
    workdir = tmp_path_factory.mktemp("kill9")
    first = Server(workdir, args=("--webhook-ca-file", str(receiver.ca_pem))).start()
    try:
        tenant = first.new_tenant("durable")
        sub, _ = subscribe(first, tenant, receiver, path, "--rate-limit", "5000")
        queue_events(first.db, tenant.tenant_id, count)
        receiver.wait_for(count // 10, path, WAIT_S)
    finally:
        first.proc.kill()  # SIGKILL mid-delivery
        first.proc.wait()
        first._err.close()
    before = len(receiver.requests(path))
    assert before < count, "every event was delivered before the kill: nothing was proven"
    second = Server(workdir, args=("--webhook-ca-file", str(receiver.ca_pem))).start()
    try:
        def all_received():
            ids = {the_event(r)[1]["event_id"] for r in receiver.requests(path)}
            return ids if len(ids) >= count else None
        poll(all_received, 90, interval=0.5, what=f"all {count} event ids at the receiver")
        wait_deliveries(second, sub, "delivered", count)
        got = receiver.requests(path)
        assert len(got) - count <= 128, f"{len(got) - count} duplicates: more than one batch in flight"
    finally:
        second.stop_and_check()


def test_taxd_worker_alone_delivers_and_processes_share_a_subscription(tmp_path_factory, taxd_bin, receiver, path):
    """Rules: the engine runs alone in `taxd worker` (serve --no-workers
    sends nothing); with several processes a subscription is served by one
    dispatcher at a time (a lease), so its rate holds globally and nothing
    is sent twice. The workers trust the CA through TAXD_WEBHOOK_CA_FILE."""
    rate, count = 10, 30
    burst = max(1, rate // 10)
    workdir = tmp_path_factory.mktemp("workers")
    api = Server(workdir, args=("--no-workers",)).start()
    workers = []
    try:
        tenant = api.new_tenant("workers")
        sub, _ = subscribe(api, tenant, receiver, path, "--rate-limit", str(rate))
        queue_events(api.db, tenant.tenant_id, count)
        quiet(receiver, path, 0)
        env = dict(api.env, TAXD_WEBHOOK_CA_FILE=str(receiver.ca_pem))
        for i in range(2):
            err = open(workdir / f"worker{i}.stderr", "wb")
            workers.append((subprocess.Popen([taxd_bin, "worker", *api.db.args()], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=workdir), err))
        times = sorted(r["t"] for r in receiver.wait_for(count, path, 60))
        for i in range(len(times)):
            for j in range(i, len(times)):
                assert j - i + 1 <= burst + rate * (times[j] - times[i]) + 1, (i, j, times[j] - times[i])
        wait_deliveries(api, sub, "delivered", count)
        got = quiet(receiver, path, count)
        assert len({the_event(r)[1]["event_id"] for r in got}) == count
    finally:
        for i, (proc, err) in enumerate(workers):
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=30)
            err.close()
            assert rc == 0, (workdir / f"worker{i}.stderr").read_text()[-3000:]
        api.stop_and_check()


# ------------------------------------------------------------------ egress address

def test_subscription_egress_address_is_the_source_of_its_requests(server, book, receiver, path):
    """--egress-address binds the subscription's connections to that local
    address: the receiver sees its requests come from it (any 127.x address
    is local on Linux, so 127.0.0.2 stands in for an allow-listed egress IP)."""
    sub, _ = subscribe(server, book, receiver, path, "--egress-address", "127.0.0.2")
    assert server.admin("subscription", "show", "--subscription", sub)["egress_address"] == "127.0.0.2"
    deposit(book, TRICKY, "egress-1")
    req = receiver.wait_for(1, path, WAIT_S)[0]
    assert req["conn"].startswith("127.0.0.2:"), req["conn"]


def test_serve_egress_address_is_the_default_source(tmp_path_factory, taxd_bin, receiver, path):
    """taxd serve --webhook-egress-address sets the source of every
    subscription without an egress address of its own."""
    s = Server(tmp_path_factory.mktemp("egress"),
               args=("--webhook-ca-file", str(receiver.ca_pem), "--webhook-egress-address", "127.0.0.3")).start()
    try:
        t = s.new_tenant("egress")
        r = call(t, "POST", "/v1/account-owners", {"id": "o1", "name": "Owner", "account_owner_type": "individual"})
        assert r.status_code == 201, r.text
        make_account(t, "acct")
        subscribe(s, t, receiver, path)
        deposit(t, "acct", "egress-2")
        req = receiver.wait_for(1, path, WAIT_S)[0]
        assert req["conn"].startswith("127.0.0.3:"), req["conn"]
    finally:
        s.stop_and_check()
