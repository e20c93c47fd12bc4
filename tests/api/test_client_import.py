"""`taxctl import transactions FILE` against a real taxd (issue 18 items 2
and 3; man/taxctl-import.1; docs/decisions.md, Transactions and import).

Rules checked:
  - a CSV or a JSONL import ends with exactly the file's transactions in
    taxd (read back with GET), amounts as the file wrote them;
  - the file is checked locally first: every bad line is listed with its
    number and nothing is sent (exit 2);
  - a refused element (unknown account) gives exit 1, a summary naming its
    line and reason, and a record in FILE.taxctl-refused.jsonl;
  - a repeated id ends with the later payload stored (the sender sends a
    later payload of an id only after the earlier one's batch was answered);
  - killed (-9) at a random point after some batches were journaled, then
    run again: exactly the file's transactions, and the second run skipped
    at least what the journal held (100,000 lines on SQLite; 5,000 on
    PostgreSQL or under ASan); SIGINT stops adding, lets what was queued be
    answered and journaled, and exits 3;
  - a journal of another file is refused unless --restart;
  - a progress bar on a terminal (a pty), plain lines when piped;
  - the library's taxd_sender (tests/client/tx_sender.c): one report per
    transaction, the last payload of an id wins, and a batch failing after
    the retries stops the stream (later adds TAXD_E_ABORTED).
"""
import json
import os
import pty
import random
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, TAXD_BIN, TAXD_TEST_PG, body, set_rule
from test_transactions import get, make_account, make_owner

TAXCTL = os.environ.get("TAXCTL_BIN") or str(REPO / "build" / "client" / "taxctl")
SLOW = bool(TAXD_TEST_PG) or "/asan/" in TAXD_BIN or "/asan/" in TAXCTL
BIG = 5_000 if SLOW else 100_000
TIMEOUT_S = 240
COLUMNS = ["id", "account_id", "datetime", "type", "subtype", "sent_asset", "sent_amount",
           "sent_usd_rate", "received_asset", "received_amount", "received_usd_rate",
           "fee_asset", "fee_amount", "fee_usd_rate"]


# ------------------------------------------------------------------ helpers

@pytest.fixture
def book(server):
    """A tenant with owner o1, accounts a0..a9 and a limit that never binds."""
    t = server.new_tenant("import")
    make_owner(t)
    for i in range(10):
        make_account(t, f"a{i}")
    set_rule(server, 100000, 100000, tenant=t)
    return t


def env_for(tenant, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env.update(TAXD_URL=tenant.server.url, TAXD_CLIENT_ID=tenant.client_id,
               TAXD_CLIENT_SECRET=tenant.client_secret, TAXCTL_CONFIG=str(tmp_path / "no-config"))
    return env


def taxctl(tenant, tmp_path, *args, timeout=TIMEOUT_S):
    p = subprocess.run([TAXCTL, "import", "transactions", *args], capture_output=True, text=True,
                       env=env_for(tenant, tmp_path), timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def summary(stdout):
    """The summary's counts: read, written, created, updated, unchanged, refused, skipped, not_sent."""
    out = {}
    for key, pattern in [("read", r"lines read: (\d+)"),
                         ("written", r"written: (\d+) \(created (\d+), updated (\d+), unchanged (\d+)\)"),
                         ("refused", r"refused: (\d+)"), ("skipped", r"skipped: (\d+)"),
                         ("not_sent", r"not sent: (\d+)")]:
        m = re.search(pattern, stdout)
        assert m, f"no '{key}' in the summary:\n{stdout}"
        out[key] = int(m.group(1))
        if key == "written":
            out["created"], out["updated"], out["unchanged"] = map(int, m.groups()[1:])
    return out


def row(id_, account, when, type_, **cols):
    r = dict.fromkeys(COLUMNS, "")
    r.update(id=id_, account_id=account, datetime=when, type=type_, **cols)
    return r


def tx_row(i, id_=None, amount=None):
    """Line i of a generated file: a buy (trade USD -> BTC) or a deposit."""
    when = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i // 60) % 60:02d}Z"
    amount = amount or f"{1 + i % 1000}.{i % 97 + 1}"
    if i % 3 == 0:
        return row(id_ or f"t{i}", f"a{i % 10}", when, "deposit", received_asset="ETH",
                   received_amount=amount, received_usd_rate="2000")
    return row(id_ or f"t{i}", f"a{i % 10}", when, "trade", subtype="buy", sent_asset="USD",
               sent_amount=f"{i % 5000 + 1}.5", received_asset="BTC", received_amount=amount,
               received_usd_rate="30000.25", fee_asset="USD", fee_amount="0.1")


def write_csv(path, rows):
    """Plain CSV (the generated fields hold no comma or quote)."""
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for r in rows:
            f.write(",".join(r[c] for c in COLUMNS) + "\n")


def expected(rows):
    """id -> the last row of that id (the payload that must be stored)."""
    last = {}
    for r in rows:
        last[r["id"]] = r
    return last


def canonical(amount):
    """A decimal string as taxd answers it: no trailing fractional zeros (text only)."""
    return amount.rstrip("0").rstrip(".") if "." in amount else amount


def assert_stored(tenant, r):
    """The record GET answers has the row's fields (amounts as the file wrote them, canonical)."""
    resp = get(tenant, r["id"])
    assert resp.status_code == 200, (r["id"], resp.text)
    d = body(resp)["data"]
    assert (d["account_id"], d["type"], d["subtype"] or "") == (r["account_id"], r["type"], r["subtype"]), d
    assert d["datetime"].replace(".000Z", "Z") == r["datetime"], d
    for group, key in (("sent", "sent"), ("received", "received"), ("fee", "fees")):
        if r[f"{group}_asset"]:
            line = d[key][0]
            assert line["asset_amount"]["amount"] == canonical(r[f"{group}_amount"]), (r["id"], key, d)
            assert line["asset_amount"]["asset"]["code"] == r[f"{group}_asset"], d
            rate = r[f"{group}_usd_rate"]
            assert [x["amount"] for x in line["rates"]] == ([canonical(rate)] if rate else []), d
        else:
            assert d[key] == [], d


def stored_ids(tenant):
    rows = tenant.server.db.rows(
        "SELECT id FROM transactions WHERE tenant = (SELECT rowid FROM tenants WHERE id = ?)",
        (tenant.tenant_id,))
    return [x["id"] for x in rows]


# ------------------------------------------------------------------ imports

def test_a_csv_import_ends_with_exactly_the_files_transactions(book, tmp_path):
    rows = [tx_row(i) for i in range(300)]
    rows.append(row("quoted,\"id\"", "a1", "2024-05-05T05:05:05Z", "withdraw", sent_asset="ETH",
                    sent_amount="0.25", fee_asset="ETH", fee_amount="0.001"))
    f = tmp_path / "tx.csv"
    write_csv(f, rows[:-1])
    with open(f, "a") as out:  # the last row needs RFC 4180 quoting
        r = rows[-1]
        out.write(",".join('"quoted,""id"""' if c == "id" else r[c] for c in COLUMNS) + "\r\n")
    rc, out, err = taxctl(book, tmp_path, str(f), "--batch-size", "40", "--connections", "3")
    assert rc == 0, (out, err)
    s = summary(out)
    assert (s["read"], s["written"], s["created"], s["refused"], s["skipped"], s["not_sent"]) == \
        (301, 301, 301, 0, 0, 0), out
    assert sorted(stored_ids(book)) == sorted(r["id"] for r in rows)
    for r in rows[::7] + rows[-1:]:
        assert_stored(book, r)
    assert not (tmp_path / "tx.csv.taxctl-refused.jsonl").exists(), "nothing refused: no refusals file"
    # the same file again: everything was answered, nothing is sent
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 0 and summary(out)["skipped"] == 301 and summary(out)["written"] == 0, (out, err)


def test_a_jsonl_import_sends_the_apis_model_as_written(book, tmp_path):
    txs = [{"id": f"j{i}", "account_id": "a2", "datetime": "2024-03-01T10:00:00.250+01:00",
            "type": "income", "subtype": "staking", "metadata": {"source": "pool", "n": i},
            "received": [{"asset_amount": {"amount": f"{i + 1}.125", "asset": {"code": "SOL", "type": "crypto"}},
                          "rates": [{"amount": "150", "asset": {"code": "USD", "type": "fiat"}}]}]}
           for i in range(50)]
    f = tmp_path / "tx.jsonl"
    f.write_text("\n".join(json.dumps(t) for t in txs) + "\n\n")
    rc, out, err = taxctl(book, tmp_path, str(f), "--batch-size", "7")
    assert rc == 0, (out, err)
    assert summary(out)["created"] == 50
    for t in txs[::10]:
        d = body(get(book, t["id"]))["data"]
        assert d["metadata"] == t["metadata"] and d["datetime"] == "2024-03-01T09:00:00.250Z", d
        assert d["received"][0]["asset_amount"]["amount"] == t["received"][0]["asset_amount"]["amount"]


def test_every_bad_line_is_listed_and_nothing_is_sent(book, tmp_path):
    rows = [tx_row(i) for i in range(20)]
    rows[2]["id"] = ""
    rows[5]["datetime"] = "2024-02-30T00:00:00Z"
    rows[9]["received_amount"] = "1e-3"
    rows[11]["type"] = "gift"
    rows[14]["received_amount"] = "0.0000000000000000001"
    f = tmp_path / "bad.csv"
    write_csv(f, rows)
    with open(f, "a") as out:
        out.write("t99,a1,\"unclosed\n")
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 2, (out, err)
    listed = sorted(int(n) for n in re.findall(r"bad\.csv:(\d+):", err))
    assert listed == [4, 7, 11, 13, 16, 22], err  # file lines: the header is line 1
    assert "id is missing" in err and "'2024-02-30T00:00:00Z'" in err and "'1e-3' is not a decimal" in err
    assert "type 'gift'" in err and "more than 18 fractional digits" in err and "never closed" in err
    assert "6 bad lines; nothing was sent" in err
    assert stored_ids(book) == []
    assert not (tmp_path / "bad.csv.taxctl-journal").exists()


def test_unknown_columns_are_a_usage_error(book, tmp_path):
    f = tmp_path / "cols.csv"
    f.write_text("id,account_id,datetime,type,memo\nx,a1,2024-01-01T00:00:00Z,deposit,hi\n")
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 2 and "unknown column 'memo'" in err, err


def test_a_refused_element_exits_1_and_the_summary_names_it(book, tmp_path):
    rows = [tx_row(i) for i in range(30)]
    rows[17]["account_id"] = "nobody"
    f = tmp_path / "tx.csv"
    write_csv(f, rows)
    rc, out, err = taxctl(book, tmp_path, str(f), "--batch-size", "10")
    assert rc == 1, (out, err)
    s = summary(out)
    assert (s["written"], s["refused"], s["not_sent"]) == (29, 1, 0), out
    assert "line 19 (404): Account 'nobody' not found" in out, out
    refused = [json.loads(x) for x in (tmp_path / "tx.csv.taxctl-refused.jsonl").read_text().splitlines()]
    assert [(x["line"], x["http_status"]) for x in refused] == [(19, 404)], refused
    assert "t17" not in stored_ids(book)
    # a rerun sends nothing and still says the file had a refusal
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 1 and summary(out)["skipped"] == 30, out


def test_a_repeated_id_ends_with_the_later_payload(book, tmp_path):
    """10 ids, 20 payloads each, in a shuffled order (often the same id on
    neighbouring lines); batches of 3 on 4 connections: without the
    sender's rule, payloads of one id would share a batch (refused as
    duplicates) or be in flight together (and an older one could land
    last)."""
    order = [j for j in range(10) for _ in range(20)]
    random.Random(7).shuffle(order)
    seen = {}
    rows = []
    for j in order:
        seen[j] = seen.get(j, 0) + 1
        rows.append(tx_row(j, id_=f"r{j}", amount=f"{seen[j]}.{j + 1}"))
    f = tmp_path / "rep.csv"
    write_csv(f, rows)
    rc, out, err = taxctl(book, tmp_path, str(f), "--batch-size", "3", "--connections", "4")
    assert rc == 0, (out, err)
    s = summary(out)
    assert (s["created"], s["updated"], s["refused"]) == (10, 190, 0), out
    for r in expected(rows).values():
        assert_stored(book, r)


def test_dry_run_sends_nothing(book, tmp_path):
    f = tmp_path / "tx.csv"
    write_csv(f, [tx_row(i) for i in range(5)])
    rc, out, err = taxctl(book, tmp_path, str(f), "--dry-run")
    assert rc == 0 and "5 transactions, all valid; nothing was sent" in out, (out, err)
    assert stored_ids(book) == []


def test_a_journal_of_another_file_is_refused_unless_restart(book, tmp_path):
    f = tmp_path / "tx.csv"
    rows = [tx_row(i) for i in range(10)]
    write_csv(f, rows)
    assert taxctl(book, tmp_path, str(f))[0] == 0
    write_csv(f, rows[:9])  # the file changed: a line fewer
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 2 and "does not match the file" in err and "--restart" in err, err
    rc, out, err = taxctl(book, tmp_path, str(f), "--restart")
    assert rc == 0 and summary(out)["skipped"] == 0, (out, err)


# ------------------------------------------------------------------ interrupts

def journaled_lines(path):
    """Lines the journal holds as answered."""
    if not path.exists():
        return 0
    n = 0
    for rec in path.read_text().splitlines()[2:]:
        for tok in rec.split():
            a, _, b = tok[1:].partition("-")
            n += int(b or a) - int(a) + 1
    return n


def wait_for_records(journal, records, proc, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) - 2 >= records:
            return True
        time.sleep(0.005)
    return False


def test_killed_mid_import_then_rerun_ends_with_exactly_the_file(book, tmp_path):
    """BIG lines (every 97th repeats an id 500 lines back with a new amount);
    kill -9 at a random point after some batches were journaled; the rerun
    skips at least what the journal held and ends with exactly the file."""
    rows = [tx_row(i) for i in range(BIG)]
    for i in range(500, BIG, 97):
        rows[i] = tx_row(i - 500, amount=f"{i}.5")
    f = tmp_path / "big.csv"
    write_csv(f, rows)
    batch = 1000 if not SLOW else 100
    batches = BIG // batch
    kill_after = random.randint(2, max(3, batches // 2))
    journal = tmp_path / "big.csv.taxctl-journal"
    proc = subprocess.Popen([TAXCTL, "import", "transactions", str(f), "--batch-size", str(batch),
                             "--connections", "4", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(book, tmp_path))
    reached = wait_for_records(journal, kill_after, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert reached, f"the import ended before {kill_after} batches were journaled"
    held = journaled_lines(journal)
    assert 0 < held < BIG, held
    rc, out, err = taxctl(book, tmp_path, str(f), "--batch-size", str(batch))
    assert rc == 0, (out, err[-2000:])
    s = summary(out)
    assert s["skipped"] >= held and s["skipped"] + s["written"] == BIG and s["not_sent"] == 0, (held, out)
    want = expected(rows)
    ids = stored_ids(book)
    assert len(ids) == len(want) and set(ids) == set(want)
    for i in list(range(500, BIG, 97))[:60] + random.sample(range(BIG), 40):
        assert_stored(book, want[rows[i]["id"]])


def test_sigint_lets_what_was_sent_be_journaled_and_exits_3(book, tmp_path):
    n = 4000 if not SLOW else 1500
    rows = [tx_row(i) for i in range(n)]
    f = tmp_path / "int.csv"
    write_csv(f, rows)
    journal = tmp_path / "int.csv.taxctl-journal"
    proc = subprocess.Popen([TAXCTL, "import", "transactions", str(f), "--batch-size", "20",
                             "--connections", "1", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(book, tmp_path))
    assert wait_for_records(journal, 3, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 3, (out, err)
    assert "interrupted" in err
    s = summary(out)
    assert s["not_sent"] > 0 and s["written"] == journaled_lines(journal), (out, journaled_lines(journal))
    assert len(stored_ids(book)) == s["written"]  # everything answered was journaled, nothing more
    rc, out, err = taxctl(book, tmp_path, str(f))
    assert rc == 0 and summary(out)["skipped"] + summary(out)["written"] == n, out
    assert sorted(stored_ids(book)) == sorted(r["id"] for r in rows)


# ------------------------------------------------------------------ progress

def test_a_bar_on_a_terminal_and_plain_lines_when_piped(book, tmp_path):
    f = tmp_path / "p.csv"
    write_csv(f, [tx_row(i) for i in range(400)])
    env = env_for(book, tmp_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen([TAXCTL, "import", "transactions", str(f), "--batch-size", "20",
                             "--connections", "1"], stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], TIMEOUT_S)
        try:
            chunk = os.read(master, 4096) if ready else b""
        except OSError:  # the child closed the pty
            chunk = b""
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=TIMEOUT_S) == 0
    text = seen.decode()
    assert "\r" in text and re.search(r"import \[#+-*\] 400/400 100% \d+ tx/s ETA", text), text[-500:]

    f2 = tmp_path / "q.csv"
    write_csv(f2, [tx_row(1000 + i) for i in range(400)])
    rc, out, err = taxctl(book, tmp_path, str(f2), "--batch-size", "20", "--connections", "1")
    assert rc == 0
    lines = err.splitlines()
    assert "\r" not in err and lines and all(re.fullmatch(
        r"taxctl import: \d+/400 +\d+% \d+ tx/s ETA \S+", x) for x in lines), err
    assert lines[-1].startswith("taxctl import: 400/400 100%"), err
    assert len(lines) <= 11, err  # every 10% (and every few seconds): not a line per batch
    rc, out, err = taxctl(book, tmp_path, str(f2), "--no-progress", "--restart")
    assert rc == 0 and err == "", err


# ------------------------------------------------------------------ the sender (libtaxdclient)

def tx_sender(tenant_or_url, tmp_path, *args, tenant=None):
    """Runs tests/client/tx_sender.c; returns its JSON line."""
    tools = Path(os.environ.get("TAXD_CLIENT_TOOLS") or REPO / "build" / "client" / "tools")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env.update(TAXD_URL=tenant_or_url, TAXD_CLIENT_ID=tenant.client_id if tenant else "x",
               TAXD_CLIENT_SECRET=tenant.client_secret if tenant else "y")
    p = subprocess.run([str(tools / "tx_sender"), *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_the_sender_reports_each_transaction_once_and_the_last_payload_wins(book, tmp_path):
    """3,000 upserts over 500 ids (each id 6 times, 500 lines apart), batches
    of 100 on 4 connections: one report per tag, one on_batch per batch, and
    each id ends with its last payload."""
    out = tx_sender(book.server.url, tmp_path, 3000, 500, 100, 4, tenant=book)
    assert out["results"] == {"created": 500, "updated": 2500, "unchanged": 0, "refused": 0}, out
    assert (out["failures"], out["reported_twice"], out["aborted_adds"], out["finish"]) == (0, 0, 0, "ok"), out
    assert out["batches"] >= 30, out
    for j in (0, 1, 250, 499):
        d = body(get(book, f"r{j}"))["data"]
        assert d["received"][0]["asset_amount"]["amount"] == str(2500 + j + 1), d


def test_a_batch_failing_after_the_retries_stops_the_stream(tmp_path):
    """Nothing listens: the first batches fail after their retries; their
    tags go to on_failure once each, later adds answer TAXD_E_ABORTED, the
    queued rest is dropped unreported, and finish answers the failure."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # a port nothing listens on
    out = tx_sender(f"http://127.0.0.1:{port}", tmp_path, 5000, 5000, 100, 2, 2)
    assert out["finish"] != "ok" and out["results"]["created"] == 0, out
    assert out["reported_twice"] == 0 and out["failures"] >= 1 and out["failures"] % 100 == 0, out
    assert out["aborted_adds"] > 0 and out["added"] + out["aborted_adds"] == 5000, out
    assert out["failures"] <= out["added"], out
