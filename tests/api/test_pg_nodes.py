"""Many nodes on one PostgreSQL database (issue 17, item 3): leased claims
with FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY wake-ups, and the promises that
rest on SQLite's single writer (one id upserted from every node, one open
INVENTORY_UPDATE per account, a report read from one snapshot).
PostgreSQL only (TAXD_TEST_PG; make api-pg)."""
import concurrent.futures as cf
import statistics
import time
from collections import Counter

import pytest

from conftest import poll
from nodes import Worker, claimed, node, pg_only
from test_reports import (TEST_HEADER, book, buy, call, download_rows, make_account, post_tx,
                          start, status, wait_for)

pytestmark = pg_only


def test_two_workers_never_run_one_report_twice_and_take_over_a_killed_ones(tmp_path, taxd_bin):
    """Reports are claimed with leases: two `taxd worker` processes on one
    database each run a report at most once (every report claimed exactly
    once while no lease expires), and a report whose worker was killed -9 is
    finished by the other worker once its lease (2 s) has passed."""
    api = node(tmp_path / "api", _db(tmp_path), "--no-workers", "--test-hooks",
               "--report-trigger-rate", "1000", "--report-trigger-burst", "1000",
               "--report-max-active", "1000").start()
    workers = [Worker(tmp_path / f"w{i}", api.db, "--test-hooks", "--report-lease-ms", "2000",
                      "--report-workers", "3").start() for i in range(2)]
    try:
        t = book(api, "claims", accounts=("a1",))
        post_tx(t, buy("t1", "a1", "BTC", "1", "10"))
        ids = [start(t, {}, headers={TEST_HEADER: "pause=150"}) for _ in range(24)]
        for rid in ids:
            assert wait_for(t, rid)["status"] == "completed"
        runs = Counter(r for w in workers for r in claimed(w.lines()))
        assert {rid: runs[rid] for rid in ids} == {rid: 1 for rid in ids}, \
            "a report was claimed twice (or never) by the two workers"
        assert all(claimed(w.lines()) for w in workers), "one worker claimed nothing: no contention tested"

        rid = start(t, {}, headers={TEST_HEADER: "pause=60000"})
        wait_for(t, rid, states=("processing",))
        holder = poll(lambda: [w for w in workers if rid in claimed(w.lines())], 10,
                      what="the worker holding the report")[0]
        other = workers[1 - workers.index(holder)]
        holder.kill9()
        killed_at = time.monotonic()
        done = wait_for(t, rid)
        assert done["status"] == "completed", done
        assert time.monotonic() - killed_at >= 1.0, "taken over before the lease ran out"
        assert rid in claimed(other.lines())
        assert api.sql("SELECT expired_leases FROM reports WHERE id = ?", (rid,)) == [(1,)]
        _, rows = download_rows(api, done)
        assert rows[1][:4] == ["a1", "BTC", "crypto", "1"]
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.stop()
        api.stop_and_check()


def _db(tmp_path):
    from conftest import database_for
    return database_for(tmp_path / "db")


def test_two_workers_never_run_one_tin_check_twice(tmp_path, taxd_bin):
    """TIN checks are claimed with leases: with two workers on one database,
    every check is claimed once and answered."""
    match = tmp_path / "tins.csv"
    match.write_text("SSN,123-45-6789,Jane Q Public\n")
    db = _db(tmp_path)
    api = node(tmp_path / "api", db, "--no-workers").start()
    args = ("--test-hooks", "--tin-test-pause-ms", "100", "--tin-check-lease-ms", "5000",
            "--tin-match-file", str(match))
    workers = [Worker(tmp_path / f"w{i}", db, *args).start() for i in range(2)]
    try:
        t = api.new_tenant("tins")
        ids = []
        for i in range(16):
            r = call(t, "POST", "/v1/tin-validations",
                     {"name": "Jane Q Public", "tin": "123-45-6789", "tin_type": "SSN"})
            assert r.status_code == 202, r.text
            ids.append(r.json()["data"]["validation_id"])

        def all_done():
            return all(t.get(f"/v1/tin-validations/{v}").json()["data"]["status"] != "PENDING"
                       for v in ids)
        poll(all_done, 60, interval=0.2, what="every TIN check answered")
        runs = Counter(c for w in workers
                       for c in claimed(w.lines(), "tin check claimed", "check_id"))
        assert {v: runs[v] for v in ids} == {v: 1 for v in ids}
    finally:
        for w in workers:
            w.stop()
        api.stop_and_check()


def _latencies(tmp_path, taxd_bin, name, *worker_args):
    """Trigger-to-claim times (s) of reports triggered on a serve --no-workers
    node A and run by a worker process B."""
    db = _db(tmp_path / name)
    api = node(tmp_path / name / "api", db, "--no-workers", "--report-trigger-burst", "100").start()
    w = Worker(tmp_path / name / "w", db, *worker_args).start()
    try:
        t = book(api, "wake", accounts=("a1",))
        time.sleep(0.5)  # the worker's listener has its session
        out = []
        for _ in range(8):
            began = time.monotonic()
            rid = start(t, {})
            poll(lambda: rid in claimed(w.lines()), 10, interval=0.005, what="the claim")
            out.append(time.monotonic() - began)
            wait_for(t, rid)
            time.sleep(0.13)  # spread the triggers over the worker's poll phase
        return out
    finally:
        w.stop()
        api.stop_and_check()


def test_notify_wakes_another_nodes_worker_at_once(tmp_path, taxd_bin):
    """LISTEN/NOTIFY: a report triggered on node A is claimed by worker B
    well before B's poll interval (500 ms) would find it; with the listener
    off (--no-listen) B finds it by polling alone."""
    notified = _latencies(tmp_path, taxd_bin, "notify")
    polled = _latencies(tmp_path, taxd_bin, "poll", "--no-listen")
    med_n, med_p = statistics.median(notified), statistics.median(polled)
    assert med_n < 0.15, f"notified claims took {notified}"
    assert med_p > 2 * med_n, f"notify {notified} vs polling {polled}"


# ------------------------------------------------- the single-writer promises

def _three_nodes(tmp_path, *args):
    db = _db(tmp_path)
    return [node(tmp_path / f"n{i}", db, *args).start() for i in range(3)]


def _on(tenant, srv):
    """The tenant's credentials against another node (tokens verify on any)."""
    import copy
    other = copy.copy(tenant)
    other.server = srv
    return other


def test_three_nodes_upsert_one_id_batches_and_one_account(tmp_path, taxd_bin):
    """Three `serve` nodes on one database: (a) concurrent upserts of one
    transaction id from every node all answer 2xx (deadlocks and
    serialization failures are retried inside taxd) and the stored row is
    one of the written versions; (b) one batch of ids in different orders
    from different nodes answers no 5xx; (c) the account has at most ONE
    unclaimed INVENTORY_UPDATE event, and it covers every datetime written
    (a widening read before another writer's and written after it would
    lose that writer's range: the account's row lock serialises them)."""
    nodes = _three_nodes(tmp_path, "--test-hooks")
    try:
        t = book(nodes[0], "upsert", accounts=("a1",))
        on = [_on(t, n) for n in nodes]
        amounts = [str(i + 1) for i in range(24)]

        def when(i):
            return f"2024-03-{1 + i:02d}T10:00:00Z"

        def upsert(i):
            # one id from every node, and ids of their own: each write holds
            # its transaction open a little (--test-hooks) so that writers
            # of one account overlap
            tx, code = ("same", ("BTC", "ETH", "SOL")[i // 2 % 3]) if i % 2 == 0 else (f"u{i}", "BTC")
            r = call(on[i % 3], "POST", "/v1/transactions/external-id",
                     buy(tx, "a1", code, amounts[i], "10", when=when(i)),
                     headers={"x-taxd-test-pause-ms": "30"})
            return r.status_code, r.text[:300]

        def batch(i):
            ids = [f"b{k}" for k in range(8)]
            order = ids[i % 8:] + ids[:i % 8]
            if i % 2:
                order.reverse()
            docs = [buy(x, "a1", "ETH", str(i + 1), "5") for x in order]
            r = call(on[i % 3], "POST", "/v1/transactions/external-id", docs)
            return r.status_code, r.text[:300]

        with cf.ThreadPoolExecutor(12) as ex:
            got = list(ex.map(upsert, range(24))) + list(ex.map(batch, range(12)))
        bad = [g for g in got if not 200 <= g[0] < 300]
        assert not bad, f"refused or failed: {bad[:5]}"
        r = call(t, "GET", "/v1/transactions/external-id/same")
        assert r.status_code == 200, r.text
        stored = r.json()["data"]["received"][0]["asset_amount"]["amount"]
        assert stored in amounts[::2], stored
        acct = nodes[0].sql("SELECT uuid FROM accounts WHERE tenant_id = ? AND id = 'a1'",
                            (t.tenant_id,))[0][0]
        open_events = nodes[0].sql("SELECT count(*) FROM events WHERE account_uuid = ?"
                                   " AND type = 'INVENTORY_UPDATE' AND claimed_at IS NULL", (acct,))
        assert open_events[0][0] <= 1, open_events
        events = nodes[0].sql("SELECT from_ms, latest_ms FROM events WHERE account_uuid = ?"
                              " AND type = 'INVENTORY_UPDATE'", (acct,))
        assert events == [(_ms(when(0)), _ms(when(23)))], \
            f"the account's one event does not cover every write (a widening was lost): {events}"
        _assert_asset_refs_exact(nodes[0], t)
    finally:
        for n in nodes:
            n.stop_and_check()


def _assert_asset_refs_exact(srv, tenant):
    """Each asset's tx_refs is the number of stored transactions naming it:
    a write that computed its reference changes from lines another writer
    had replaced meanwhile would leave them off."""
    want = Counter()
    for (lines,) in srv.sql("SELECT lines FROM transactions"
                            " WHERE tenant = (SELECT rowid FROM tenants WHERE id = ?)",
                            (tenant.tenant_id,)):
        want.update({item[1:].split(" ")[0] for item in lines.split(";")})
    got = {code: refs for code, refs in srv.sql(
        "SELECT code, tx_refs FROM assets WHERE tenant_id = ?", (tenant.tenant_id,)) if refs}
    assert got == dict(want), f"asset reference counts {got}, stored transactions name {dict(want)}"


def _ms(when):
    from datetime import datetime
    return int(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() * 1000)


def test_three_nodes_batches_of_overlapping_ids_in_different_orders(tmp_path, taxd_bin):
    """Batches naming the same ids on four accounts, each batch in another
    order, from three nodes at once: none answers 5xx; every batch is one
    serialised whole (the last committed wrote every id, so all ids hold one
    amount); each account's one open INVENTORY_UPDATE covers every datetime
    written to it (no widening lost to a concurrent writer); the assets'
    reference counts are exact; and since a batch locks its accounts in key
    order, no write met a deadlock."""
    nodes = _three_nodes(tmp_path)
    try:
        accounts = ("a1", "a2", "a3", "a4")
        t = book(nodes[0], "batches", accounts=accounts)
        on = [_on(t, n) for n in nodes]
        ids = [f"b{k:02d}" for k in range(12)]
        account_of = {x: accounts[k % 4] for k, x in enumerate(ids)}
        written = {}  # account -> datetimes (ms) written to it

        def when(i, k):
            return f"2024-03-{1 + (i * 7 + k) % 28:02d}T10:00:00Z"

        def batch(i):
            order = ids[i % 12:] + ids[:i % 12]
            if i % 2:
                order.reverse()
            docs = [buy(x, account_of[x], "ETH", str(i + 1), "5", when=when(i, ids.index(x)))
                    for x in order]
            r = call(on[i % 3], "POST", "/v1/transactions/external-id", docs)
            return r.status_code, r.text[:300]

        for i in range(18):
            for k, x in enumerate(ids):
                written.setdefault(account_of[x], []).append(_ms(when(i, k)))
        with cf.ThreadPoolExecutor(9) as ex:
            got = list(ex.map(batch, range(18)))
        bad = [g for g in got if not 200 <= g[0] < 300]
        assert not bad, f"refused or failed: {bad[:5]}"

        amounts = set()
        for x in ids:
            r = call(t, "GET", f"/v1/transactions/external-id/{x}")
            assert r.status_code == 200, r.text
            amounts.add(r.json()["data"]["received"][0]["asset_amount"]["amount"])
        assert len(amounts) == 1, f"batches interleaved: ids hold amounts {amounts}"
        for a in accounts:
            rows = nodes[0].sql(
                "SELECT e.from_ms, e.latest_ms, e.claimed_at FROM events e"
                " JOIN accounts c ON c.uuid = e.account_uuid"
                " WHERE c.tenant_id = ? AND c.id = ? AND e.type = 'INVENTORY_UPDATE'",
                (t.tenant_id, a))
            assert len([r for r in rows if r[2] is None]) == 1, (a, rows)
            assert rows == [(min(written[a]), max(written[a]), None)], \
                f"{a}: the open event does not cover every write (a widening was lost): {rows}"
        _assert_asset_refs_exact(nodes[0], t)
        deadlocks = [n for n in nodes if "deadlock detected" in n.stderr_text()]
        assert not deadlocks, "a batch met a deadlock: accounts not locked in key order"
    finally:
        for n in nodes:
            n.stop_and_check()


def test_a_report_reads_one_snapshot_while_nodes_write(tmp_path, taxd_bin):
    """A report generated while other nodes write reads one snapshot
    (REPEATABLE READ): its row count is the rows of its file, and each
    account's quantity is one that was committed whole (every write moves
    both of an account's assets together)."""
    nodes = _three_nodes(tmp_path, "--report-max-active", "100")
    try:
        accounts = tuple(f"a{i}" for i in range(6))
        t = book(nodes[0], "snap", accounts=accounts)
        on = [_on(t, n) for n in nodes]
        for a in accounts:
            post_tx(t, [buy(f"{a}-x", a, "BTC", "1", "10"), buy(f"{a}-y", a, "ETH", "1", "10")])
        stop = []

        def writer(k):
            n = 0
            while not stop:
                n += 1
                a = accounts[(n + k) % len(accounts)]
                r = call(on[k % 3], "POST", "/v1/transactions/external-id",
                         [buy(f"{a}-x", a, "BTC", str(n), "10"), buy(f"{a}-y", a, "ETH", str(n), "10")])
                assert r.status_code == 200, r.text
        with cf.ThreadPoolExecutor(4) as ex:
            futs = [ex.submit(writer, k) for k in range(3)]
            time.sleep(0.5)
            reports = [start(on[i % 3], {}) for i in range(3)]
            done = [wait_for(t, rid) for rid in reports]
            stop.append(True)
            for f in futs:
                f.result()
        for d in done:
            assert d["status"] == "completed", d
            _, rows = download_rows(nodes[0], d)
            data = rows[1:]
            assert len(data) == d["row_count"] if "row_count" in d else True
            by_account = {}
            for row in data:
                by_account.setdefault(row[0], {})[row[1]] = row[3]
            for a, assets in by_account.items():
                if len(assets) == 2:
                    assert assets["BTC"] == assets["ETH"], (a, assets)
    finally:
        for n in nodes:
            n.stop_and_check()
