"""taxctl against a real taxd serve (issue 18): login, get, list, report.

Rules checked, in the words of the issue:
  - `taxctl login` "stores the service URL and credentials in a file of mode
    0600, reading the secret from a prompt or standard input, never from the
    command line" (a --client-secret flag is refused and nothing is written);
  - "--url/TAXD_URL and TAXD_CLIENT_ID/TAXD_CLIENT_SECRET override it";
  - `taxctl get` / `list` "for the resources, JSON by default, a table with
    --table": get prints the object the API serves, list one JSON array of
    every item across pages, --limit N at most N items, --table aligned
    columns of the scalar fields with long values cut with "…";
  - `taxctl report inventory-summary [--accounts FILE] --format csv|jsonl -o
    FILE`: "trigger, wait with a progress line, download": the file equals
    what the API's own link serves, in CSV and JSONL; "a fresh link is
    fetched when one expired" (the test clock moved between the status and
    the download, through the fault proxy).
"""
import json
import os
import stat

import pytest

from client_support import FaultProxy, cli_env, taxctl
from conftest import poll
from test_reports import (TRIGGER, buy, completed, fetch, make_account, make_owner, post_tx,
                          set_clock, status)


def booked(server, name, accounts=("a1", "a2")):
    t = server.new_tenant(name)
    make_owner(t)
    for i, a in enumerate(accounts):
        make_account(t, a)
        post_tx(t, buy(f"tx-{a}", a, "BTC", f"1.{i}5", "100.10"))
    return t


# ---------------------------------------------------------------- login

def login(tmp_path, url, client_id, secret, *extra):
    cfg = tmp_path / "cfg" / "config"
    env = cli_env(tmp_path, TAXCTL_CONFIG=str(cfg))
    r = taxctl(["--url", url, "login", "--client-id", client_id, *extra], env, input=secret + "\n")
    return r, cfg, env


def test_login_writes_a_0600_config_with_the_secret_from_stdin(server, tenant, tmp_path):
    r, cfg, env = login(tmp_path, server.url, tenant.client_id, tenant.client_secret)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    text = cfg.read_text()
    assert f"url={server.url}" in text and f"client_id={tenant.client_id}" in text
    assert tenant.client_secret not in r.stdout + r.stderr
    # the stored configuration is enough for the next command
    g = taxctl(["get", "/v1/accounts"], env)
    assert g.returncode == 0, g.stderr
    assert "data" in json.loads(g.stdout)


def test_login_refuses_a_secret_on_the_command_line(server, tenant, tmp_path):
    r, cfg, _ = login(tmp_path, server.url, tenant.client_id, "", "--client-secret",
                      tenant.client_secret)
    assert r.returncode == 2, r.stderr
    assert not cfg.exists()


def test_login_checks_the_credentials_before_writing(server, tenant, tmp_path):
    r, cfg, _ = login(tmp_path, server.url, tenant.client_id, "not-the-secret")
    assert r.returncode == 1, r.stderr
    assert "not-the-secret" not in r.stderr
    assert not cfg.exists()


def test_environment_overrides_the_config_file(server, tenant, tmp_path):
    other = server.new_tenant("other")
    # a file with a wrong URL and another tenant's credentials (not checked)
    r, cfg, env = login(tmp_path, "http://127.0.0.1:9", other.client_id, "wrong", "--no-check")
    assert r.returncode == 0, r.stderr
    make_owner(tenant, "mine")
    assert taxctl(["get", "owners", "mine"], env).returncode == 3   # nobody at port 9
    env["TAXD_URL"] = server.url
    assert taxctl(["get", "owners", "mine"], env).returncode == 1   # 401: the file's secret
    env["TAXD_CLIENT_ID"] = tenant.client_id
    env["TAXD_CLIENT_SECRET"] = tenant.client_secret
    g = taxctl(["get", "owners", "mine"], env)
    assert g.returncode == 0, g.stderr
    assert json.loads(g.stdout)["data"]["id"] == "mine"
    # --url beats TAXD_URL
    env["TAXD_URL"] = "http://127.0.0.1:9"
    assert taxctl(["--url", server.url, "get", "owners", "mine"], env).returncode == 0


# ---------------------------------------------------------------- get and list

def test_get_prints_the_object_the_api_serves(server, tmp_path):
    t = booked(server, "get")
    env = cli_env(tmp_path, server.url, t)
    for args, path in ((["accounts", "a1"], "/v1/accounts/a1"),
                       (["owner", "o1"], "/v1/account-owners/o1"),
                       (["transactions", "tx-a1"], "/v1/transactions/external-id/tx-a1"),
                       (["/v1/accounts?limit=1"], "/v1/accounts?limit=1")):
        r = taxctl(["get", *args], env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == t.get(path).json(), args


def test_get_of_a_missing_resource_prints_message_and_request_id(server, tmp_path):
    t = booked(server, "miss", accounts=())
    r = taxctl(["get", "accounts", "nope/x"], cli_env(tmp_path, server.url, t))
    assert r.returncode == 1
    assert "status 404" in r.stderr and "request id " in r.stderr, r.stderr
    assert "nope/x" in r.stderr   # the id was escaped as one segment and named back


def test_list_prints_every_item_across_pages_as_one_json_array(server, tmp_path):
    accounts = [f"acc-{i:02d}" for i in range(7)]
    t = booked(server, "list", accounts)
    env = cli_env(tmp_path, server.url, t)
    r = taxctl(["list", "accounts"], env)
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)
    assert sorted(i["id"] for i in items) == accounts
    # pages of 3: the same items, in the same order, as one array
    paged = taxctl(["list", "accounts", "--param", "limit=3"], env)
    assert paged.returncode == 0, paged.stderr
    assert json.loads(paged.stdout) == items
    limited = taxctl(["list", "accounts", "--limit", "4"], env)
    assert json.loads(limited.stdout) == items[:4]
    # a list under an account, and an empty one
    txs = json.loads(taxctl(["list", "transactions", "acc-03"], env).stdout)
    assert [x["id"] for x in txs] == ["tx-acc-03"]
    empty = taxctl(["list", "filers", "--param", "limit=1"], env)
    assert empty.returncode == 0 and isinstance(json.loads(empty.stdout), list)


def test_list_table_aligns_scalar_fields_and_cuts_long_values(server, tmp_path):
    t = server.new_tenant("table")
    make_owner(t)
    long_id = "L" * 60
    for a in ("short", long_id):
        make_account(t, a)
    r = taxctl(["list", "accounts", "--table"], cli_env(tmp_path, server.url, t))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split()
    assert "id" in header and "account_owner_id" in header, lines[0]
    assert len(lines) == 3
    col = lines[0].index("account_owner_id")
    for row in lines[1:]:
        assert row[col:].startswith("o1"), (lines[0], row)   # aligned under its header
    assert any("…" in row and long_id not in row for row in lines[1:]), lines
    assert not any("{" in row for row in lines), lines      # objects are not scalars
    g = taxctl(["get", "accounts", "short", "--table"], cli_env(tmp_path, server.url, t))
    assert g.returncode == 0 and g.stdout.splitlines()[0].split() == ["FIELD", "VALUE"]
    assert ["id", "short"] in [row.split() for row in g.stdout.splitlines()], g.stdout


def test_get_and_list_usage_errors_exit_2(server, tmp_path):
    env = cli_env(tmp_path, server.url)
    for args in (["get"], ["get", "nothing", "x"], ["list", "nothing"], ["list", "transactions"],
                 ["list", "accounts", "--limit", "0"]):
        assert taxctl(args, env).returncode == 2, args


# ---------------------------------------------------------------- report

@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_report_downloads_what_the_api_serves(server, tmp_path, fmt):
    t = booked(server, f"rep-{fmt}", ("a1", "a2", "a3"))
    (tmp_path / "ids").write_text("a1\n\na3\nghost\n")
    out = tmp_path / f"report.{fmt}"
    r = taxctl(["report", "inventory-summary", "--accounts", str(tmp_path / "ids"),
                "--format", fmt, "-o", str(out)], cli_env(tmp_path, server.url, t))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == str(out)
    rid = lines[1].split(": ")[1]
    assert "total_accounts_included: 2" in lines and "total_accounts_requested: 3" in lines, lines
    assert any(l.startswith("skipped_account_ids.not_found_in_organization: 1") for l in lines)
    # not a terminal: one progress line per phase, never the secret
    assert "report: completed" in r.stderr and t.client_secret not in r.stderr
    served = fetch(server, status(t, rid)["download_url"])
    assert served.status_code == 200
    assert out.read_bytes() == served.content
    assert not (tmp_path / f"report.{fmt}.part").exists()
    assert b"a1" in served.content and b"a2" not in served.content


def test_report_link_expired_before_download_is_refreshed(make_server, tmp_path):
    proxy = FaultProxy().start()
    try:
        s = make_server("--test-hooks", "--base-url", proxy.url)
        proxy.upstream = s.url
        t = booked(s, "expiry", ("a1",))
        # the first download: taxd's clock jumps 16 minutes first, so the
        # link the client holds is past its 15 minutes
        moved = []

        def expire(seen):
            if not moved:
                set_clock(s, 16 * 60 * 1000)
                moved.append(seen.path)

        proxy.add("GET", TRIGGER + "/", "hook", fn=expire, times=None, contains="/download")
        out = tmp_path / "r.csv"
        r = taxctl(["report", "inventory-summary", "-o", str(out)],
                   cli_env(tmp_path, proxy.url, t))
        assert r.returncode == 0, r.stderr
        downloads = [x for x in proxy.matching("GET", TRIGGER + "/") if "/download" in x.path]
        assert [x.status for x in downloads] == [403, 200], proxy.seen
        assert [x.authorized for x in downloads] == [False, False]   # the link needs no token
        rid = r.stdout.splitlines()[1].split(": ")[1]
        served = fetch(s, status(t, rid)["download_url"])
        assert out.read_bytes() == served.content
    finally:
        proxy.stop()


def test_report_link_refused_every_time_gives_up_after_three_fresh_links(make_server, tmp_path):
    proxy = FaultProxy().start()
    try:
        s = make_server("--base-url", proxy.url)
        proxy.upstream = s.url
        t = booked(s, "refused", ("a1",))
        proxy.add("GET", TRIGGER + "/", "status", status=403, times=None, contains="/download",
                  body='{"error":"Forbidden","message":"Forbidden","reason":"expired"}',
                  content_type="application/json")
        out = tmp_path / "r.csv"
        r = taxctl(["report", "inventory-summary", "-o", str(out)],
                   cli_env(tmp_path, proxy.url, t))
        assert r.returncode == 1, r.stderr
        assert "Forbidden" in r.stderr and "status 403" in r.stderr
        downloads = [x for x in proxy.seen if "/download" in x.path]
        assert len(downloads) == 4   # the first link and 3 fresh ones
        assert not out.exists() and not (tmp_path / "r.csv.part").exists()
    finally:
        proxy.stop()


def test_report_usage_errors_exit_2(server, tmp_path):
    env = cli_env(tmp_path, server.url)
    for args in (["report"], ["report", "nothing", "-o", "x"], ["report", "inventory-summary"],
                 ["report", "inventory-summary", "--format", "xml", "-o", "x"],
                 ["report", "gains", "-o", "x"]):
        assert taxctl(args, env).returncode == 2, args
