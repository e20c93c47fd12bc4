"""`taxctl webhooks listen` and `taxctl webhooks verify` against a real taxd
(spec § Webhook deliveries layer 1, § Response rules for the customer
endpoint; issue 18: "a local HTTPS receiver ... answers 2xx, or 400 to a bad
signature (never 401, 403 or 407)").

taxd trusts one CA file (--webhook-ca-file), so the module's taxd gets a
bundle of two CAs: the one `taxctl webhooks listen` makes in its --dir (a
first run makes it, later runs reuse it), and the Python receiver's
(webhook_receiver.py), which records the raw bytes and headers of what taxd
sent, for the independent check: Python's hmac over a body taxd delivered.

A listen process needs its secret at start and taxd's subscription needs
the listener's URL, so a subscription is created with a placeholder URL,
listen is started with the subscription's secret on a free port (--port 0,
printed on stderr), and the subscription is then moved to that URL.
Events are INVENTORY_UPDATEs raised by writing a transaction.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import REPO, Server, poll
from webhook_receiver import Receiver, header

TAXCTL = os.environ.get("TAXCTL_BIN") or str(REPO / "build" / "client" / "taxctl")
WAIT_S = 30.0  # bound for what must happen (2 shared cores, ASan)
T0 = "2024-03-01T10:00:00.000Z"
LISTENING = re.compile(r"listening on https://127\.0\.0\.1:(\d+)/")


def sign(secret, body):
    return "v1=" + base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def taxctl_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.update(extra)
    return env


class Listen:
    """One `taxctl webhooks listen` process; stdout and stderr go to files."""

    def __init__(self, workdir, ca_dir, secrets_args=(), env=None, extra=()):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.out_path, self.err_path = self.workdir / "listen.out", self.workdir / "listen.err"
        self._out, self._err = open(self.out_path, "wb"), open(self.err_path, "wb")
        cmd = [TAXCTL, "webhooks", "listen", "--port", "0", "--dir", str(ca_dir), *secrets_args, *extra]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
                                     env=taxctl_env(**(env or {})))
        self.port = int(poll(lambda: (LISTENING.search(self.stderr()) or self._died()) and
                             LISTENING.search(self.stderr()).group(1), WAIT_S, what="listen's port"))

    def _died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"taxctl webhooks listen exited {self.proc.returncode}:\n{self.stderr()}")
        return None

    def url(self, path="/hook"):
        return f"https://127.0.0.1:{self.port}{path}"

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def stdout(self):
        return self.out_path.read_text(errors="replace")

    def lines(self):
        return [json.loads(line) for line in self.stdout().splitlines()]

    def wait_lines(self, count):
        return poll(lambda: (lambda got: got if len(got) >= count else None)(self.lines()), WAIT_S,
                    what=f"{count} line(s) from listen")

    def stop(self):
        """SIGTERM; it must stop cleanly with status 0 (under ASan: no leak)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=WAIT_S)
        self._out.close()
        self._err.close()
        assert self.proc.returncode == 0, self.stderr()
        assert "stopped (SIGTERM)" in self.stderr()


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def ca_dir(tmp_path_factory):
    """The directory where a first listen made its CA (then stopped)."""
    d = tmp_path_factory.mktemp("listen-ca") / "certs"
    first = Listen(d.parent / "first", d, ("--secret", "unused"))
    first.stop()
    assert f"CA certificate {d}/ca.pem (new): give it to taxd as --webhook-ca-file" in first.stderr()
    return d


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    r = Receiver(tmp_path_factory.mktemp("receiver")).start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, taxd_bin, ca_dir, receiver):
    work = tmp_path_factory.mktemp("srv")
    bundle = work / "ca-bundle.pem"
    bundle.write_bytes((ca_dir / "ca.pem").read_bytes() + Path(receiver.ca_pem).read_bytes())
    s = Server(work, args=("--webhook-ca-file", str(bundle))).start()
    yield s
    s.stop_and_check()


@pytest.fixture
def book(server):
    """A tenant with an owner and an account to write transactions into."""
    t = server.new_tenant("wh")
    assert call(t, "POST", "/v1/account-owners",
                {"id": "o1", "name": "Owner", "account_owner_type": "individual"}).status_code == 201
    assert call(t, "POST", "/v1/accounts", {"id": "a1", "account_owner_id": "o1"}).status_code == 201
    return t


@pytest.fixture
def listens(tmp_path, ca_dir):
    """Starts listen processes for the test; each is stopped and checked at the end."""
    started = []

    def start(*secrets_args, env=None, extra=()):
        lis = Listen(tmp_path / f"listen{len(started)}", ca_dir, secrets_args, env, extra)
        started.append(lis)
        return lis

    yield start
    for lis in started:
        lis.stop()


# ------------------------------------------------------------------ helpers

def call(tenant, method, path_, body=None):
    return tenant.server.api().request(method, path_, headers=tenant.auth(), json=body)


def deposit(tenant, tx_id, when=T0):
    r = call(tenant, "POST", "/v1/transactions/external-id", {
        "id": tx_id, "account_id": "a1", "datetime": when, "type": "deposit",
        "received": [{"asset_amount": {"amount": "1.5", "asset": {"code": "BTC", "type": "crypto"}}}]})
    assert r.status_code in (200, 201), r.text


def subscribe(server, tenant, url="https://127.0.0.1:1/placeholder"):
    out = server.admin("subscription", "create", "--tenant", tenant.tenant_id, "--url", url,
                       "--events", "INVENTORY_UPDATE")
    return out["subscription_id"], out["secret"]


def move(server, sub, url):
    server.admin("subscription", "update", "--subscription", sub, "--url", url)


def delivered(server, sub):
    return poll(lambda: (lambda d: d if d and d[0]["state"] == "delivered" else None)(
        server.admin("subscription", "deliveries", "--subscription", sub)["deliveries"]),
        WAIT_S, interval=0.1, what=f"the delivery of {sub} delivered")[0]


def run_taxctl(*args, stdin=b"", env=None):
    return subprocess.run([TAXCTL, *args], input=stdin, capture_output=True, timeout=WAIT_S,
                          env=taxctl_env(**(env or {})))


# ------------------------------------------------------------------ listen

def test_listen_prints_each_delivery_taxd_makes_and_answers_200(server, book, listens):
    """Rules: listen verifies a real delivery against the raw body and prints
    one JSON line {"received_at","trace_id","verified":true,"timestamp",
    "events"}; it answers 2xx so taxd records it delivered. The secret comes
    from TAXD_WEBHOOK_SECRETS (kept off the command line) and is never printed."""
    sub, secret = subscribe(server, book)
    lis = listens(env={"TAXD_WEBHOOK_SECRETS": secret})
    assert "(reused)" in lis.stderr()  # the module's CA: taxd still trusts it
    move(server, sub, lis.url("/hooks/inventory"))
    deposit(book, "t1")
    line = lis.wait_lines(1)[0]
    assert list(line) == ["received_at", "trace_id", "verified", "timestamp", "events"]  # no repeat
    assert line["verified"] is True and len(line["events"]) == 1
    event = line["events"][0]
    assert event["event_type"] == "INVENTORY_UPDATE" and uuid.UUID(event["event_id"]).version == 4
    d = delivered(server, sub)
    assert (d["trace_id"], d["event_id"], d["last_status"]) == (line["trace_id"], event["event_id"], 200)
    # the line holds the event as taxd sent it: re-serialized, the envelope signs right
    body = json.dumps({"timestamp": line["timestamp"], "data": line["events"]},
                      separators=(",", ":"), ensure_ascii=False).encode()
    p = run_taxctl("webhooks", "verify", "--signature", sign(secret, body), stdin=body,
                   env={"TAXD_WEBHOOK_SECRETS": secret})
    assert (p.returncode, p.stdout) == (0, b"valid\n"), p.stderr
    assert secret not in lis.stderr() + lis.stdout()


def test_python_hmac_and_taxctl_agree_on_a_body_taxd_delivered(server, book, receiver, listens):
    """The independent check: the Python receiver records the raw bytes and
    the x-service-signature of a real delivery; Python's hmac verifies them;
    `taxctl webhooks verify` says valid for those bytes and invalid for a
    body one byte different; replayed to listen, they are printed and the
    event's bytes are kept as they were sent."""
    sub, secret = subscribe(server, book, receiver.url("/independent"))
    deposit(book, "t2")
    req = receiver.wait_for(1, "/independent", WAIT_S)[0]
    body, signature = req["body"], header(req, "x-service-signature")[0]
    assert signature == sign(secret, body)
    p = run_taxctl("webhooks", "verify", "--secret", secret, "--signature", signature, stdin=body)
    assert (p.returncode, p.stdout) == (0, b"valid\n"), p.stderr
    changed = body.replace(b"INVENTORY_UPDATE", b"INVENTORY_UPDATF")
    p = run_taxctl("webhooks", "verify", "--secret", secret, "--signature", signature, stdin=changed)
    assert (p.returncode, p.stdout) == (1, b"invalid signature\n"), p.stderr

    lis = listens("--secret", secret)
    r = requests.post(lis.url("/replayed"), data=body, verify=str(lis_ca(lis)), timeout=WAIT_S,
                      headers={"content-type": "application/json", "x-service-signature": signature,
                               "x-trace-id": "replay-1"})
    assert (r.status_code, r.json()) == (200, {"ok": True})
    raw = lis.stdout()
    event_bytes = body[body.index(b'"data":[') + 8:-2].decode()
    assert event_bytes in raw  # the event exactly as sent, not re-serialized
    line = lis.wait_lines(1)[0]
    assert line["trace_id"] == "replay-1"
    assert line["events"] == json.loads(body)["data"]
    assert "repeated_event_ids" not in line

    # delivery is at least once: the same event again is printed, marked as a repeat
    r = requests.post(lis.url("/replayed"), data=body, verify=str(lis_ca(lis)), timeout=WAIT_S,
                      headers={"content-type": "application/json", "x-service-signature": signature,
                               "x-trace-id": "replay-2"})
    assert (r.status_code, r.json()) == (200, {"ok": True})
    again = lis.wait_lines(2)[1]
    assert again["trace_id"] == "replay-2"
    assert again["repeated_event_ids"] == [e["event_id"] for e in json.loads(body)["data"]]


def lis_ca(lis):
    return Path(re.search(r"CA certificate (\S+) ", lis.stderr()).group(1))


def test_a_bad_or_missing_signature_is_400_never_401_403_407(listens):
    """Rules: "Signature invalid or payload malformed: 400"; never 401, 403 or
    407 (they deauthorize the subscription). Each refusal is a line on
    stderr saying why; nothing is printed on stdout."""
    lis = listens("--secret", "s3cret-one")
    ca = str(lis_ca(lis))
    body = b'{"timestamp":"2024-03-01T10:00:00.000Z","data":[{"event_type":"INVENTORY_UPDATE"}]}'
    cases = [
        ({"x-service-signature": sign("another", body)}, body, "matches none of the secrets"),
        ({"x-service-signature": sign("s3cret-one", body)[:-2]}, body, "matches none of the secrets"),
        ({"x-service-signature": sign("s3cret-one", body)[3:]}, body, "matches none of the secrets"),
        ({}, body, "no x-service-signature header"),
        ({"x-service-signature": sign("s3cret-one", b"[1]")}, b"[1]", "not a JSON object"),
        ({"x-service-signature": sign("s3cret-one", b"{}")}, b"{}", 'no "data" array'),
    ]
    for i, (headers, data, why) in enumerate(cases):
        r = requests.post(lis.url(), data=data, verify=ca, timeout=WAIT_S,
                          headers={"x-trace-id": f"bad-{i}", **headers})
        assert r.status_code == 400, (i, r.status_code, r.text)
        assert r.json()["ok"] is False
        poll(lambda: f"delivery bad-{i} refused (400): " in lis.stderr() and why in lis.stderr(),
             WAIT_S, what=f"the refusal of case {i} on stderr")
    for method in ("GET", "PUT", "DELETE"):
        r = requests.request(method, lis.url(), verify=ca, timeout=WAIT_S)
        assert r.status_code == 405 and r.headers["allow"] == "POST", (method, r.status_code)
    r = requests.post(lis.url(), data=b"x" * ((1 << 20) + 1), verify=ca, timeout=WAIT_S,
                      headers={"x-service-signature": sign("s3cret-one", b"x")})
    assert r.status_code == 413
    chunks = (b"y" * 65536 for _ in range(17))  # chunked: no Content-Length to refuse early
    r = requests.post(lis.url(), data=chunks, verify=ca, timeout=WAIT_S,
                      headers={"x-service-signature": sign("s3cret-one", b"x")})
    assert r.status_code == 413
    assert lis.stdout() == ""
    assert "s3cret-one" not in lis.stderr()


def test_rotation_listen_knowing_only_the_new_secret_still_verifies(server, book, listens):
    """Rules: while both secrets exist taxd signs with both; a receiver that
    already switched to the new one (and one that still has only the old)
    accepts the delivery."""
    sub, old = subscribe(server, book)
    new = server.admin("subscription", "rotate-secret", "--subscription", sub)["secret"]
    lis = listens("--secret", new)
    move(server, sub, lis.url("/rotating"))
    deposit(book, "t3")
    assert lis.wait_lines(1)[0]["verified"] is True
    assert delivered(server, sub)["last_status"] == 200
    lis_old = listens(env={"TAXD_WEBHOOK_SECRETS": f"unrelated, {old}"})
    move(server, sub, lis_old.url("/rotating"))
    deposit(book, "t4", when="2024-03-02T10:00:00.000Z")
    assert lis_old.wait_lines(1)[0]["events"][0]["event_type"] == "INVENTORY_UPDATE"


def test_status_option_answers_what_it_is_told_but_never_a_deauthorizing_status(listens, tmp_path, ca_dir):
    """--status lets a user watch taxd retry (a 503 here); 401, 403 and 407
    are refused as usage errors, since they deauthorize a subscription."""
    lis = listens("--secret", "k", extra=("--status", "503"))
    body = b'{"data":[{"event_type":"X","event_id":"e"}]}'
    r = requests.post(lis.url(), data=body, verify=str(lis_ca(lis)), timeout=WAIT_S,
                      headers={"x-service-signature": sign("k", body)})
    assert r.status_code == 503
    assert lis.wait_lines(1)[0]["events"] == [{"event_type": "X", "event_id": "e"}]
    for code in ("401", "403", "407", "199", "600", "abc"):
        p = run_taxctl("webhooks", "listen", "--port", "0", "--secret", "k", "--dir", str(ca_dir),
                       "--status", code)
        assert p.returncode == 2 and b"--status" in p.stderr, (code, p.stderr)


def test_the_certificates_are_reused_and_the_keys_are_private(ca_dir, listens):
    """The CA taxd was given stays the same from one run to the next (it is
    reused while valid), and the private keys are mode 0600."""
    before = (ca_dir / "ca.pem").read_bytes()
    lis = listens("--secret", "k")
    assert f"CA certificate {ca_dir}/ca.pem (reused)" in lis.stderr()
    assert (ca_dir / "ca.pem").read_bytes() == before
    for name in ("ca-key.pem", "server-key.pem"):
        assert stat.S_IMODE((ca_dir / name).stat().st_mode) == 0o600, name
    # a server certificate that no longer matches its key is made again, under the same CA
    (ca_dir / "server-key.pem").write_bytes((ca_dir / "ca-key.pem").read_bytes())
    lis2 = listens("--secret", "k")
    assert "(new)" in lis2.stderr() and (ca_dir / "ca.pem").read_bytes() == before
    body = b'{"data":[]}'
    r = requests.post(lis2.url(), data=body, verify=str(ca_dir / "ca.pem"), timeout=WAIT_S,
                      headers={"x-service-signature": sign("k", body)})
    assert r.status_code == 200


# ------------------------------------------------------------------ verify

def test_verify_exit_statuses():
    """`taxctl webhooks verify`: 0 and "valid" when any secret matches any
    signature, 1 and "invalid signature" otherwise, 2 on a usage error."""
    body = b'{"timestamp":"t","data":[]}'
    both = sign("new", body) + ", " + sign("old", body)
    assert run_taxctl("webhooks", "verify", "--secret", "old", "--signature", both, stdin=body).returncode == 0
    p = run_taxctl("webhooks", "verify", "--secret", "x", "--secret", "new", "--signature", sign("new", body),
                   stdin=body)
    assert (p.returncode, p.stdout) == (0, b"valid\n")
    p = run_taxctl("webhooks", "verify", "--secret", "other", "--signature", both, stdin=body)
    assert (p.returncode, p.stdout) == (1, b"invalid signature\n")
    p = run_taxctl("webhooks", "verify", "--signature", sign("env", body), stdin=body,
                   env={"TAXD_WEBHOOK_SECRETS": "env"})
    assert p.returncode == 0
    for args in ((), ("--secret", "s"), ("--signature", both), ("--secret", "s", "--signature", both, "extra"),
                 ("--bogus",)):
        p = run_taxctl("webhooks", "verify", *args, stdin=body)
        assert p.returncode == 2, (args, p.stderr)
    assert run_taxctl("webhooks").returncode == 2
    assert run_taxctl("webhooks", "nope").returncode == 2
