"""libtaxdclient and taxctl against the fault proxy (tests/client/faultproxy.py)
in front of a real taxd (issue 18). The proxy counts what reached the wire,
so every "attempts" below is the proxy's count, not the client's claim.

Rules checked, in the words of the issue and spec.md:
  - "a 401 mints one new token and retries once, never more": one 401, then
    a new token and a second attempt that succeeds; two 401s, the second is
    final: exactly 2 attempts and 1 mint after the first;
  - "429 waits Retry-After (seconds or HTTP date), else backs off", with each
    of the spec's three 429 bodies: the wait measured at the proxy is within
    bounds;
  - "5xx and timeouts on safe requests back off exponentially with full
    jitter, bounded in count and time", then the error "whatever shape the
    body had": status, `message` read case-insensitively, `error` absent when
    the body had none, the answer's x-request-id;
  - "a create whose answer was lost reads the record back instead of creating
    twice": the account exists once in taxd;
  - "400, 403, 404 and 409 are never retried unchanged";
  - a request refused before any byte was sent is sent again, whatever its
    method; a timeout on a safe request is retried, bounded in time;
  - taxctl: "errors print the message and the request id", exit 1 for a 4xx
    and 3 when the service never answered; --verbose prints the request and
    response lines and never the token or the secret.
"""
import json
import subprocess
import time
from pathlib import Path

import pytest

from client_support import SLOW, FaultProxy, cli_env, http_date, taxctl, tool
from test_reports import make_account, make_owner

TOKEN = "/v1/oauth/token"
SLACK_S = 3.0 if SLOW else 1.5   # scheduling slack on 2 shared cores


@pytest.fixture
def proxy(server):
    p = FaultProxy(upstream=server.url).start()
    yield p
    p.stop()


@pytest.fixture
def book(server):
    t = server.new_tenant("faults")
    make_owner(t)
    make_account(t, "a1")
    return t


def tc(proxy, tenant, *args, opts=(), timeout=120):
    """Runs the library's driver through the proxy; returns (result, stderr)."""
    env = cli_env(Path("/nonexistent"), proxy.url, tenant)
    r = subprocess.run([tool("tc"), "--log", *opts, *args], env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout.splitlines()[-1]), r.stderr


def no_secrets(tenant, text):
    assert tenant.client_secret not in text
    assert "Bearer " not in text and "eyJ" not in text   # no bearer token (a JWT starts eyJ)


# ---------------------------------------------------------------- 401

def test_one_401_mints_one_new_token_and_retries_once(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "401")
    res, log = tc(proxy, book, "get", "/v1/accounts/a1")
    assert res["code"] == "ok" or res["status"] == 200, res
    assert res["body"]["data"]["id"] == "a1"
    assert proxy.attempts("GET", "/v1/accounts/a1") == 2
    assert proxy.attempts("POST", TOKEN) == 2   # the first token, then one new one
    order = [s.path for s in proxy.seen]
    assert order == [TOKEN, "/v1/accounts/a1", TOKEN, "/v1/accounts/a1"], order
    no_secrets(book, log)


def test_a_second_401_is_final(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "401", times=None)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1")
    assert res["status"] == 401 and res["message"] == "Invalid token", res
    assert res["error"] == "Unauthorized"
    assert proxy.attempts("GET", "/v1/accounts/a1") == 2
    assert proxy.attempts("POST", TOKEN) == 2


# ---------------------------------------------------------------- 429

@pytest.mark.parametrize("shape", ["seconds", "plain", "standard"])
def test_429_waits_retry_after_seconds(proxy, book, shape):
    proxy.add("GET", "/v1/accounts/a1", "429", shape=shape, retry_after=1)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1")
    assert res["status"] == 200, res
    (gap,) = proxy.gaps("GET", "/v1/accounts/a1")
    assert 0.95 <= gap <= 1 + SLACK_S, gap


def test_429_waits_until_an_http_date(proxy, book):
    # an IMF-fixdate has whole seconds: 2 s ahead is a wait of 1 to 2 s
    proxy.add("GET", "/v1/accounts/a1", "429", retry_after=http_date(2))
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1")
    assert res["status"] == 200, res
    (gap,) = proxy.gaps("GET", "/v1/accounts/a1")
    assert 0.9 <= gap <= 2 + SLACK_S, gap


def test_429_without_retry_after_backs_off(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "429", shape="standard", retry_after=None, times=3)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1",
                opts=("--backoff-base-ms", "200", "--backoff-max-ms", "400"))
    assert res["status"] == 200, res
    gaps = proxy.gaps("GET", "/v1/accounts/a1")
    assert len(gaps) == 3
    assert all(g <= 0.4 + SLACK_S for g in gaps), gaps   # full jitter under the ceilings


def test_429_to_the_end_reports_retry_after(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "429", retry_after=0, times=None)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1", opts=("--max-attempts", "2"))
    assert res["status"] == 429 and res["error"] == "rate_limit_exceeded", res
    assert res["retry_after_ms"] == 0
    assert proxy.attempts("GET", "/v1/accounts/a1") == 2


# ---------------------------------------------------------------- 5xx

FIVE_XX = [
    (500, "json", "Internal Server Error", "Internal Server Error (injected)"),
    (502, "Message", None, "Bad Gateway (injected)"),
    (504, "message_only", None, "Endpoint request timed out"),
    (503, "html", None, "HTTP 503"),      # no message in the body: the library says the status
    (500, "empty", None, "HTTP 500"),
]


@pytest.mark.parametrize("status,shape,error,message", FIVE_XX,
                         ids=[f"{s}-{sh}" for s, sh, _, _ in FIVE_XX])
def test_5xx_on_get_is_retried_to_the_bound_then_reported(proxy, book, status, shape, error,
                                                          message):
    kw = {"message": message} if message and shape == "message_only" else {}
    proxy.add("GET", "/v1/accounts/a1", "status", status=status, shape=shape, times=None, **kw)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1",
                opts=("--max-attempts", "3", "--backoff-base-ms", "50", "--backoff-max-ms", "100"))
    assert res["status"] == status, res
    assert proxy.attempts("GET", "/v1/accounts/a1") == 3
    assert res["error"] == error, res         # absent when the body had none
    if shape in ("html", "empty"):
        assert res["message"].startswith(message), res
    else:
        assert res["message"] == message, res     # "Message" read as message
    last = proxy.matching("GET", "/v1/accounts/a1")[-1]
    assert res["request_id"] == f"proxy-{last.n}", res


def test_5xx_then_success_on_get(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "status", status=503, shape="html", times=2)
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1", opts=("--backoff-base-ms", "50"))
    assert res["status"] == 200 and res["body"]["data"]["id"] == "a1", res
    assert proxy.attempts("GET", "/v1/accounts/a1") == 3


def test_retries_are_bounded_in_time(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "status", status=503, times=None)
    t0 = time.monotonic()
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1",
                opts=("--max-attempts", "100", "--max-retry-ms", "1000",
                      "--backoff-base-ms", "100", "--backoff-max-ms", "200"))
    assert res["status"] == 503
    assert time.monotonic() - t0 <= 1 + SLACK_S + 1
    assert 2 <= proxy.attempts("GET", "/v1/accounts/a1") < 100


# ---------------------------------------------------------------- creates

def count_accounts(tenant, account_id):
    r = tenant.get("/v1/accounts", params={"limit": 100})
    assert r.status_code == 200
    return sum(1 for a in r.json()["data"] if a["id"] == account_id)


def test_a_create_whose_answer_was_lost_is_read_back_not_created_twice(proxy, book):
    proxy.add("POST", "/v1/accounts", "reset_after")
    body = json.dumps({"id": "lost", "account_owner_id": "o1"})
    res, log = tc(proxy, book, "send", "POST", "/v1/accounts", body, "--create",
                  "--readback", "/v1/accounts/lost")
    assert proxy.attempts("POST", "/v1/accounts") == 1, (proxy.seen, log)
    assert res["code"] == "ok" and res["status"] == 200, res
    assert res["body"]["data"]["id"] == "lost"
    assert proxy.attempts("POST", "/v1/accounts") == 1          # never sent twice
    assert proxy.attempts("GET", "/v1/accounts/lost") == 1      # read back
    assert count_accounts(book, "lost") == 1


def test_a_create_that_never_arrived_is_sent_again_after_the_readback(proxy, book):
    proxy.add("POST", "/v1/accounts", "status", status=502, shape="html")
    body = json.dumps({"id": "again", "account_owner_id": "o1"})
    res, _ = tc(proxy, book, "send", "POST", "/v1/accounts", body, "--create",
                "--readback", "/v1/accounts/again", opts=("--backoff-base-ms", "50"))
    assert res["status"] == 201, res
    assert [s.status for s in proxy.matching("*", "/v1/accounts")] == [502, 404, 201]
    assert count_accounts(book, "again") == 1


def test_taxctl_post_reads_a_lost_create_back_from_the_records_route(proxy, book, tmp_path):
    """taxctl post knows where the collections keyed by a body field keep
    their records: a create whose answer was lost is read back there, not
    created twice, and its record printed (exit 0)."""
    proxy.add("POST", "/v1/accounts", "reset_after")
    body = json.dumps({"id": "lost cli", "account_owner_id": "o1"})
    r = taxctl(["post", "/v1/accounts", body], cli_env(tmp_path, proxy.url, book))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["id"] == "lost cli"
    assert proxy.attempts("POST", "/v1/accounts") == 1
    assert proxy.attempts("GET", "/v1/accounts/lost%20cli") == 1
    assert count_accounts(book, "lost cli") == 1
    # a route without a readback: the lost answer is reported, never resent
    proxy.add("POST", "/v1/tin-validations", "reset_after")
    r = taxctl(["post", "/v1/tin-validations", json.dumps({"tin": "000000000", "tin_type": "SSN",
                                                           "name": "X"})],
               cli_env(tmp_path, proxy.url, book))
    assert r.returncode == 3, r.stderr
    assert proxy.attempts("POST", "/v1/tin-validations") == 1


# ---------------------------------------------------------------- never retried

@pytest.mark.parametrize("status", [400, 403, 404, 409])
def test_client_errors_are_never_retried(proxy, book, status):
    proxy.add("*", "/v1/accounts", "status", status=status, times=None)
    get, _ = tc(proxy, book, "get", "/v1/accounts/a1")
    upsert, _ = tc(proxy, book, "send", "POST", "/v1/accounts", "{}", "--safe")
    assert get["status"] == status and upsert["status"] == status
    assert proxy.attempts("GET", "/v1/accounts") == 1
    assert proxy.attempts("POST", "/v1/accounts") == 1


def test_a_real_409_is_not_retried(proxy, book):
    body = json.dumps({"id": "a1", "account_owner_id": "o1"})
    res, _ = tc(proxy, book, "send", "POST", "/v1/accounts", body, "--create",
                "--readback", "/v1/accounts/a1")
    assert res["status"] == 409 and res["error"] == "Conflict", res
    assert proxy.attempts("POST", "/v1/accounts") == 1


# ---------------------------------------------------------------- resets and timeouts

def wait_for(what, fn, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("method,path,extra,second", [
    ("GET", "/v1/accounts/a1", [], 200),
    ("POST", "/v1/accounts", ["{\"id\":\"refused\",\"account_owner_id\":\"o1\"}", "--create",
                              "--readback", "/v1/accounts/refused"], 409),
    ("PATCH", "/v1/accounts/a1", ["{}"], 200),
])
def test_a_request_refused_before_sending_is_retried_for_every_method(proxy, book, tmp_path,
                                                                      method, path, extra, second):
    """Two runs on one client (the token cached by the first): the proxy stops
    listening between them, so the second run's first attempts are refused
    (nothing sent); it is sent once the proxy listens again, whatever the
    method. The create's second run meets the first's account: 409, sent once."""
    err = tmp_path / "stderr"
    env = cli_env(tmp_path, proxy.url, book)
    sent = lambda: sum(1 for l in err.read_text().splitlines() if l.startswith(f"> {method} {path}"))
    with open(err, "w") as e:
        p = subprocess.Popen([tool("tc"), "--log", "--repeat", "2", "--pause-ms", "1500",
                              "--max-attempts", "50", "--backoff-base-ms", "100",
                              "--backoff-max-ms", "200", "send", method, path, *extra],
                             env=env, stdout=subprocess.PIPE, stderr=e, text=True)
        try:
            wait_for("the first run", lambda: proxy.attempts(method, path) == 1)
            proxy.down()
            wait_for("two refused attempts", lambda: sent() >= 3)
        finally:
            if proxy.is_down:
                proxy.up()
        out, _ = p.communicate(timeout=60)
    first, last = [json.loads(l) for l in out.splitlines()]
    assert first["code"] == "ok", (first, err.read_text())
    assert last["status"] == second and last["attempts"] >= 2, (last, err.read_text())
    assert proxy.attempts(method, path) == 2   # once per run: a refused attempt is never seen
    assert proxy.attempts("POST", TOKEN) == 1


def test_a_reset_after_sending_is_retried_for_a_safe_request(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "reset_before")
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1", opts=("--backoff-base-ms", "50"))
    assert res["status"] == 200, res
    assert proxy.attempts("GET", "/v1/accounts/a1") == 2


def test_a_timeout_on_a_safe_request_is_retried_bounded_in_time(proxy, book):
    proxy.add("GET", "/v1/accounts/a1", "hang", seconds=10)
    t0 = time.monotonic()
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1",
                opts=("--timeout-ms", "500", "--backoff-base-ms", "50"))
    assert res["status"] == 200, res
    assert proxy.attempts("GET", "/v1/accounts/a1") == 2
    assert time.monotonic() - t0 < 0.5 + SLACK_S + 1
    proxy.add("GET", "/v1/accounts/a1", "hang", seconds=10, times=None)
    t0 = time.monotonic()
    res, _ = tc(proxy, book, "get", "/v1/accounts/a1",
                opts=("--timeout-ms", "300", "--max-attempts", "3", "--backoff-base-ms", "50"))
    assert res["code"] != "ok" and res["status"] == 0, res
    assert time.monotonic() - t0 < 3 * 0.3 + SLACK_S + 1


# ---------------------------------------------------------------- taxctl

def test_taxctl_prints_message_and_request_id_and_exits_1_for_a_4xx(proxy, book, tmp_path):
    proxy.add("GET", "/v1/accounts/a1", "status", status=403, shape="Message",
              message="User is not authorized", times=None)
    r = taxctl(["get", "accounts", "a1"], cli_env(tmp_path, proxy.url, book))
    assert r.returncode == 1, r.stderr
    req = proxy.matching("GET", "/v1/accounts/a1")[-1]
    assert "User is not authorized" in r.stderr and f"request id proxy-{req.n}" in r.stderr, \
        r.stderr
    assert proxy.attempts("GET", "/v1/accounts/a1") == 1


def test_taxctl_exits_3_when_the_service_never_answered(proxy, book, tmp_path):
    proxy.add("GET", "/v1/accounts/a1", "status", status=503, shape="empty", times=None)
    env = cli_env(tmp_path, proxy.url, book)
    r = taxctl(["get", "accounts", "a1"], env)
    assert r.returncode == 3, r.stderr
    proxy.down()
    r = taxctl(["get", "accounts", "a1"], env, timeout=240)
    proxy.up()
    assert r.returncode == 3, r.stderr


def test_taxctl_verbose_prints_request_and_response_lines_never_secrets(proxy, book, tmp_path):
    proxy.add("GET", "/v1/accounts/a1", "401")
    r = taxctl(["--verbose", "get", "accounts", "a1"], cli_env(tmp_path, proxy.url, book))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(l.startswith("> ") and "/v1/accounts/a1" in l for l in lines), lines
    assert any(l.startswith("< ") and "401" in l for l in lines), lines
    assert any(l.startswith("< ") and "200" in l for l in lines), lines
    no_secrets(book, r.stderr + r.stdout)
