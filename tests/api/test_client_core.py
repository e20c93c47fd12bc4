"""libtaxdclient's core against a real taxd (and, for the readback rule, a
scripted stand-in): tokens (minted once, refreshed after expiry, one refresh
per 401), errors of every shape, the retry rules that a real service can
show, and that secrets and tokens never reach the log.

The library is driven through build/client/tools/tc (tests/client/tc.c): one
JSON line per call on stdout, log lines on stderr with --log."""
import json
import os
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import REPO, SETTINGS_PROPAGATION_S

TOOLS = Path(os.environ.get("TAXD_CLIENT_TOOLS") or REPO / "build" / "client" / "tools")
TC = str(TOOLS / "tc")
TIMEOUT_S = 60


def tc(url, *args, tenant=None, client_id=None, secret=None, log=False, check=True):
    """Runs tc; returns (lines: list of parsed JSON, stderr text, exit code)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env["TAXD_URL"] = url
    if tenant is not None:
        env["TAXD_CLIENT_ID"] = tenant.client_id
        env["TAXD_CLIENT_SECRET"] = tenant.client_secret
    if client_id is not None:
        env["TAXD_CLIENT_ID"] = client_id
        env["TAXD_CLIENT_SECRET"] = secret
    cmd = [TC] + (["--log"] if log else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    assert p.returncode in (0, 1), f"tc exited {p.returncode}: {p.stderr}"
    # the ASan build exits 1 after a report: never mistake that for an answer
    assert "Sanitizer" not in p.stderr and "runtime error:" not in p.stderr, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    return lines, p.stderr, p.returncode


def one(url, *args, **kw):
    lines, err, _ = tc(url, *args, **kw)
    assert len(lines) == 1, lines
    return lines[0], err


def mints(log_text):
    return log_text.count("> POST /v1/oauth/token")


def make_owner(url, tenant, owner_id):
    out, _ = one(url, "send", "POST", "/v1/account-owners",
                 json.dumps({"id": owner_id, "name": "Owner", "account_owner_type": "individual"}),
                 "--create", "--readback", f"/v1/account-owners/{owner_id}", tenant=tenant)
    assert out["code"] == "ok" and out["status"] == 201, out


# ------------------------------------------------------------------ tokens

def test_a_token_is_minted_once_for_many_calls(server, tenant):
    """Tokens are cached: ten calls on one client mint one token."""
    lines, log, rc = tc(server.url, "--repeat", "10", "send", "GET", "/v1/filers", tenant=tenant, log=True)
    assert rc == 0 and len(lines) == 10
    assert all(x["code"] == "ok" and x["status"] == 200 and x["attempts"] == 1 for x in lines), lines
    assert mints(log) == 1, log
    assert "* token minted" in log


def test_threads_sharing_a_client_mint_once(server, tenant):
    """N threads on one client that all need a token together mint it once."""
    lines, log, rc = tc(server.url, "--threads", "8", "--repeat", "3", "get", "/v1/filers",
                        tenant=tenant, log=True)
    assert rc == 0 and len(lines) == 24, lines
    assert mints(log) == 1, log


def test_a_token_due_for_refresh_is_minted_again_before_use(server, tenant):
    """Refreshed `refresh_margin` before expiry: with a margin of all but one
    second of the 24 hours, the second call (1.5 s later) mints again and
    needs no 401 to do it."""
    lines, log, rc = tc(server.url, "--refresh-margin-s", "86399", "--repeat", "2",
                        "--pause-ms", "1500", "send", "GET", "/v1/filers", tenant=tenant, log=True)
    assert rc == 0, lines
    assert mints(log) == 2, log
    assert "token refreshed" in log
    assert "< 401" not in log
    assert [x["attempts"] for x in lines] == [1, 1]


def test_an_expired_token_is_refreshed_once_after_the_401(hooks_server):
    """A 401 mints one new token and retries once (spec § Authentication 7):
    the service clock moves 25 hours between two calls of one client, the
    cached token is refused, a new one is minted and the call succeeds."""
    s = hooks_server
    t = s.new_tenant("expiry")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TAXD_")},
           "TAXD_URL": s.url, "TAXD_CLIENT_ID": t.client_id, "TAXD_CLIENT_SECRET": t.client_secret}
    p = subprocess.Popen([TC, "--log", "--repeat", "2", "--pause-ms", "3000", "send", "GET", "/v1/filers"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = json.loads(p.stdout.readline())
    assert first["code"] == "ok", first
    r = s.api().post("/_test/clock", json={"offset_ms": 25 * 3600 * 1000})
    assert r.status_code == 200, r.text
    out, log = p.communicate(timeout=TIMEOUT_S)
    second = json.loads(out.splitlines()[0])
    assert second["code"] == "ok" and second["status"] == 200, second
    assert second["attempts"] == 2, second
    assert log.count("< 401") == 1, log
    assert mints(log) == 2, log
    assert "token refreshed" in log


def test_a_revoked_credential_gives_one_refresh_then_the_401(server):
    """After a 401 the client mints once; when the credential was revoked the
    token endpoint's 401 is final: "Invalid client credentials", no loop."""
    t = server.new_tenant("revoked")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TAXD_")},
           "TAXD_URL": server.url, "TAXD_CLIENT_ID": t.client_id,
           "TAXD_CLIENT_SECRET": t.client_secret}
    pause_ms = int(SETTINGS_PROPAGATION_S * 1000) + 1500
    p = subprocess.Popen([TC, "--log", "--repeat", "2", "--pause-ms", str(pause_ms), "get", "/v1/filers"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = json.loads(p.stdout.readline())
    assert first["code"] == "ok", first
    server.admin("credentials", "revoke", "--client-id", t.client_id)
    out, log = p.communicate(timeout=TIMEOUT_S)
    second = json.loads(out.splitlines()[0])
    assert second["code"] == "HTTP error" and second["status"] == 401, second
    assert second["message"] == "Invalid client credentials", second
    assert second["attempts"] == 1, second
    assert log.count("> GET /v1/filers") == 2, log    # one per call: no second try
    assert mints(log) == 2, log                       # the first token, and the one refresh


def test_bad_credentials_are_final_with_the_services_message(server, tenant):
    """A 401 from the token endpoint itself is final, its message surfaced."""
    out, log = one(server.url, "get", "/v1/filers", client_id=tenant.client_id,
                   secret="not-the-secret", log=True)
    assert out["code"] == "HTTP error" and out["status"] == 401, out
    assert out["message"] == "Invalid client credentials"
    assert out["error"] == "Unauthorized"
    assert out["request_id"], out
    assert mints(log) == 1, log
    assert "> GET" not in log


def test_tenant_id_is_sent_with_the_token_request(server, tenant):
    """The optional tenant_id goes with the token request: a wrong one is the 403."""
    out, _ = one(server.url, "token", tenant=tenant)
    assert out["code"] == "ok" and len(out["body"]) > 20
    p = subprocess.run([TC, "get", "/v1/filers"], capture_output=True, text=True, timeout=TIMEOUT_S,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("TAXD_")},
                            "TAXD_URL": server.url, "TAXD_CLIENT_ID": tenant.client_id,
                            "TAXD_CLIENT_SECRET": tenant.client_secret,
                            "TAXD_TENANT_ID": "00000000-0000-4000-8000-000000000000"})
    out = json.loads(p.stdout)
    assert out["status"] == 403 and out["message"] == "Forbidden", out


def test_secret_and_token_never_reach_the_log(server, tenant):
    """Client secrets and bearer tokens never reach the log callback, nor an error."""
    tok, _ = one(server.url, "token", tenant=tenant)
    token = tok["body"]
    lines, log, _ = tc(server.url, "--repeat", "2", "get", "/v1/filers", tenant=tenant, log=True)
    lines2, log2, _ = tc(server.url, "get", "/v1/nope", tenant=tenant, log=True)
    lines3, log3, _ = tc(server.url, "get", "/v1/filers", client_id=tenant.client_id,
                         secret=tenant.client_secret + "x", log=True)
    everything = log + log2 + log3 + json.dumps(lines + lines2 + lines3)
    assert "> GET /v1/filers" in log and "< 200" in log    # the log is there...
    assert tenant.client_secret not in everything          # ...without the secret
    assert token.split(".")[2] not in everything           # ...or a token (its signature)
    assert "Bearer" not in everything and "uthorization:" not in everything


# ------------------------------------------------------------------ errors

def test_404_is_final_with_message_and_request_id(server, tenant):
    out, log = one(server.url, "get", "/v1/account-owners/nobody", tenant=tenant, log=True)
    assert out["code"] == "HTTP error" and out["status"] == 404, out
    assert out["attempts"] == 1 and log.count("> GET") == 1
    assert out["error"] == "Not Found" and "nobody" in out["message"], out
    assert out["request_id"] and out["request_id"] in log


def test_400_issues_become_details(server, tenant):
    out, _ = one(server.url, "send", "POST", "/v1/account-owners", '{"id": 5}', tenant=tenant)
    assert out["status"] == 400 and out["attempts"] == 1, out
    assert isinstance(out["details"], list) and out["details"], out
    assert all("path" in i and "message" in i for i in out["details"])


def test_transactions_shape_data_becomes_details_and_error_is_absent(server, tenant):
    """The transactions shape has `error` as an object: the client reports it absent."""
    out, _ = one(server.url, "send", "POST", "/v1/transactions/external-id",
                 json.dumps({"id": "t1", "account_id": "nope", "datetime": "bad", "type": "buy"}),
                 "--safe", tenant=tenant)
    assert out["status"] == 400 and out["attempts"] == 1, out
    assert out["error"] is None, out
    assert out["message"], out
    assert isinstance(out["details"], list) and out["details"], out


def test_409_is_not_retried(server, tenant):
    make_owner(server.url, tenant, "dup")
    out, log = one(server.url, "send", "POST", "/v1/account-owners",
                   json.dumps({"id": "dup", "name": "O", "account_owner_type": "individual"}),
                   tenant=tenant, log=True)
    assert out["status"] == 409 and out["attempts"] == 1, out
    assert log.count("> POST /v1/account-owners") == 1


def test_list_follows_next_cursor(server, tenant):
    for i in range(5):
        make_owner(server.url, tenant, f"o{i}")
    out, log = one(server.url, "list", "/v1/account-owners?limit=2", tenant=tenant, log=True)
    assert out["code"] == "ok", out
    assert sorted(x["id"] for x in out["body"]) == [f"o{i}" for i in range(5)]
    assert out["pages"] == 3
    assert "cursor=" in log


def test_connection_refused_is_resent_for_every_method(server, tenant):
    """Nothing reached the service, so even a POST may be resent; bounded by max_attempts."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    out, log = one(f"http://127.0.0.1:{port}", "--max-attempts", "3", "--backoff-base-ms", "5",
                   "token", tenant=tenant, log=True)
    assert out["code"] == "transport error" and out["status"] == 0, out
    assert out["attempts"] == 3 and log.count("* retry") == 2, log


def test_options_are_checked(tenant):
    out, _ = one("http://user:pw@127.0.0.1:1", "token", tenant=tenant)
    assert out["code"] == "invalid argument" and "pw" not in out["message"], out
    out, _ = one("ftp://127.0.0.1:1", "token", tenant=tenant)
    assert out["code"] == "invalid argument", out
    out, _ = one("http://127.0.0.1:1/v1", "token", tenant=tenant)
    assert out["code"] == "invalid argument", out


# ------------------------------------------- a scripted stand-in for taxd
#
# The readback rule and the 401 / 429 rules need answers a healthy taxd never
# gives. This small server answers from a script: each request to a path
# takes the next action scripted for (method, path), else a default. (The
# fault-injecting proxy of tests/api/test_client_faults*.py covers resets and
# timeouts in front of a real taxd; this covers the core's own decisions.)

class Scripted:
    def __init__(self):
        self.script = {}          # (method, path) -> [action]
        self.seen = []            # (method, path, authorization)
        self.lock = threading.Lock()
        self.minted = 0
        self.deny_tokens = set()  # bearer tokens answered 401 Invalid token
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _serve(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                with scripted.lock:
                    scripted.seen.append((self.command, self.path, self.headers.get("authorization"),
                                          body))
                    queue = scripted.script.get((self.command, self.path))
                    action = queue.pop(0) if queue else None
                    if action is None and self.path == "/v1/oauth/token":
                        scripted.minted += 1
                        action = (200, {}, {"access_token": f"tok-{scripted.minted}",
                                            "expires_in": 86400, "token_type": "Bearer"})
                    auth = self.headers.get("authorization") or ""
                    if action is None and auth.removeprefix("Bearer ") in scripted.deny_tokens:
                        action = (401, {}, {"error": "Unauthorized", "message": "Invalid token"})
                if action is None:
                    action = (200, {}, {"ok": True})
                if action == "reset":
                    self.close_connection = True
                    return
                status, headers, payload = action
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def on(self, method, path, *actions):
        self.script.setdefault((method, path), []).extend(actions)

    def count(self, method, path):
        return sum(1 for m, p, _, _ in self.seen if m == method and p == path)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted():
    s = Scripted()
    yield s
    s.close()


def stc(s, *args, log=True):
    return one(s.url, "--backoff-base-ms", "10", "--backoff-max-ms", "50", *args,
               client_id="cid", secret="csecret", log=log)


OWNER = json.dumps({"id": "o1", "name": "O", "account_owner_type": "individual"})
HTML_502 = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def test_a_create_whose_answer_was_lost_is_read_back_not_resent(scripted):
    """A 502 from a proxy may hide a write: GET the readback path; its 200 is the answer."""
    s = scripted
    s.on("POST", "/v1/account-owners", (502, {"content-type": "text/html"}, HTML_502))
    s.on("GET", "/v1/account-owners/o1", (200, {"x-request-id": "rb"}, {"id": "o1"}))
    out, log = stc(s, "send", "POST", "/v1/account-owners", OWNER, "--create",
                   "--readback", "/v1/account-owners/o1")
    assert out["code"] == "ok" and out["status"] == 200 and out["body"] == {"id": "o1"}, out
    assert out["attempts"] == 2 and out["request_id"] == "rb", out
    assert s.count("POST", "/v1/account-owners") == 1
    assert "reading back /v1/account-owners/o1" in log


def test_a_reset_create_not_written_is_sent_again(scripted):
    """A reset after the request left, then a readback 404: nothing was created, send it again."""
    s = scripted
    s.on("POST", "/v1/account-owners", "reset", (201, {}, {"id": "o1"}))
    s.on("GET", "/v1/account-owners/o1", (404, {}, {"error": "Not Found", "message": "no o1"}))
    out, log = stc(s, "send", "POST", "/v1/account-owners", OWNER, "--create",
                   "--readback", "/v1/account-owners/o1")
    assert out["code"] == "ok" and out["status"] == 201 and out["attempts"] == 3, out
    assert s.count("POST", "/v1/account-owners") == 2    # libcurl resent nothing behind our back
    assert s.count("GET", "/v1/account-owners/o1") == 1


def test_a_readback_refused_is_the_error(scripted):
    s = scripted
    s.on("POST", "/v1/account-owners", (504, {}, {"message": "Endpoint request timed out"}))
    s.on("GET", "/v1/account-owners/o1", (403, {}, {"Message": "User is not authorized to access this resource"}))
    out, _ = stc(s, "send", "POST", "/v1/account-owners", OWNER, "--create",
                 "--readback", "/v1/account-owners/o1")
    assert out["status"] == 403 and out["message"].startswith("User is not authorized"), out
    assert s.count("POST", "/v1/account-owners") == 1


def test_a_create_without_readback_and_an_unsafe_post_are_not_resent(scripted):
    s = scripted
    s.on("POST", "/v1/account-owners", (503, {}, {"message": "busy"}), (503, {}, {"message": "busy"}))
    out, _ = stc(s, "send", "POST", "/v1/account-owners", OWNER, "--create")
    assert out["status"] == 503 and out["message"] == "busy" and out["attempts"] == 1, out
    out, _ = stc(s, "send", "POST", "/v1/account-owners", OWNER)
    assert out["status"] == 503 and out["attempts"] == 1, out
    assert s.count("POST", "/v1/account-owners") == 2


def test_safe_requests_back_off_and_retry_5xx(scripted):
    s = scripted
    s.on("GET", "/v1/x", (500, {}, {"error": "Internal Server Error"}), (503, {}, b""), (200, {}, {"v": 1}))
    out, log = stc(s, "send", "GET", "/v1/x")
    assert out["code"] == "ok" and out["attempts"] == 3 and out["body"] == {"v": 1}, out
    assert "* retry 2/6 in" in log and "after 500" in log and "* retry 3/6 in" in log
    s.on("POST", "/v1/transactions/external-id", (502, {}, HTML_502), (200, {}, {"ok": 1}))
    out, _ = stc(s, "send", "POST", "/v1/transactions/external-id", "{}", "--safe")
    assert out["code"] == "ok" and out["attempts"] == 2, out


def test_retries_are_bounded_by_max_attempts_and_time(scripted):
    s = scripted
    s.on("GET", "/v1/x", *[(503, {}, {"message": "down"})] * 20)
    out, _ = stc(s, "--max-attempts", "4", "send", "GET", "/v1/x")
    assert out["status"] == 503 and out["attempts"] == 4 and out["message"] == "down", out
    out, _ = one(s.url, "--max-attempts", "50", "--backoff-base-ms", "100", "--backoff-max-ms", "100",
                 "--max-retry-ms", "400", "send", "GET", "/v1/x", client_id="cid", secret="csecret")
    assert out["status"] == 503 and 2 <= out["attempts"] < 20, out
    assert out["elapsed_ms"] < 3000, out


def test_429_waits_retry_after_for_every_method(scripted):
    s = scripted
    s.on("POST", "/v1/account-owners",
         (429, {"retry-after": "1"}, {"error": "rate_limit_exceeded",
                                      "message": "Rate limit exceeded. Retry in 1 seconds."}),
         (201, {}, {"id": "o1"}))
    out, log = stc(s, "send", "POST", "/v1/account-owners", OWNER)
    assert out["code"] == "ok" and out["status"] == 201 and out["attempts"] == 2, out
    assert out["elapsed_ms"] >= 950, out
    assert "* retry 2/6 in 1000 ms after 429" in log


def test_429_beyond_the_budget_is_final_at_once(scripted):
    s = scripted
    s.on("GET", "/v1/x", (429, {"Retry-After": "100"}, {"error": "Too Many Requests",
                                                          "message": "Too Many Requests"}))
    out, _ = stc(s, "--max-retry-ms", "5000", "send", "GET", "/v1/x")
    assert out["status"] == 429 and out["attempts"] == 1, out
    assert out["retry_after_ms"] == 100000 and out["message"] == "Too Many Requests", out
    assert out["elapsed_ms"] < 2000, out


def test_429_with_an_http_date_and_without_retry_after(scripted):
    s = scripted
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 2))
    s.on("GET", "/v1/x", (429, {"retry-after": when}, {"message": "Too many requests."}),
         (429, {}, {"error": "rate_limit_exceeded", "message": "Too many requests."}),
         (200, {}, {"v": 2}))
    out, log = stc(s, "send", "GET", "/v1/x")
    assert out["code"] == "ok" and out["attempts"] == 3, out
    assert out["elapsed_ms"] >= 900, out      # the date was 1-2 s ahead (second resolution)


def test_a_second_401_is_final(scripted):
    """401 mints one new token and retries once, never more."""
    s = scripted
    deny = (401, {}, {"error": "Unauthorized", "message": "Invalid token"})
    s.on("GET", "/v1/x", deny, deny, deny)
    out, log = stc(s, "send", "GET", "/v1/x")
    assert out["status"] == 401 and out["message"] == "Invalid token" and out["attempts"] == 2, out
    assert s.minted == 2 and s.count("GET", "/v1/x") == 2
    auths = [a for m, p, a, _ in s.seen if p == "/v1/x"]
    assert auths == ["Bearer tok-1", "Bearer tok-2"]     # the retry carries the new token


def test_the_token_request(scripted):
    """The body is {grant_type, client_id, client_secret}; a 429 there is waited for."""
    s = scripted
    s.on("POST", "/v1/oauth/token", (429, {"retry-after": "0"}, {"message": "Too many requests."}))
    out, _ = stc(s, "token")
    assert out["code"] == "ok" and out["body"] == "tok-1", out
    bodies = [json.loads(b) for m, p, _, b in s.seen if p == "/v1/oauth/token"]
    assert len(bodies) == 2
    assert bodies[0] == {"grant_type": "client_credentials", "client_id": "cid",
                         "client_secret": "csecret"}
    assert all(a is None for m, p, a, _ in s.seen if p == "/v1/oauth/token")


def test_request_id_header_is_read_case_insensitively(scripted):
    s = scripted
    s.on("GET", "/v1/x", (404, {"X-Request-ID": "Abc-1"}, {"error": "Not Found", "message": "none"}))
    out, log = stc(s, "send", "GET", "/v1/x")
    assert out["request_id"] == "Abc-1" and "(request id Abc-1)" in log, out


def test_threads_hitting_401_together_mint_once(scripted):
    """N threads whose shared token is refused together mint one new token."""
    s = scripted
    s.deny_tokens.add("tok-1")
    lines, log, rc = tc(s.url, "--threads", "8", "send", "GET", "/v1/x", client_id="cid",
                        secret="csecret", log=True)
    assert rc == 0 and all(x["code"] == "ok" for x in lines), lines
    assert s.minted == 2, (s.minted, log)                 # tok-1, then one tok-2 for all
    assert log.count("token refreshed") == 1, log
