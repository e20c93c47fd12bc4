"""Report benchmark (make bench-report): trigger-to-completed time and peak
memory of inventory-summary reports at several sizes, beside the time
sqlite3 takes for a plain GROUP BY over the same holdings (the floor).

usage: report.py TAXD_BIN SIZES OUT_MD     (SIZES: comma-separated transaction counts;
                                           BENCH_REPORT_ROWS: the rows of the large
                                           report, 500000 by default, 0 for none)

For each size N: a fresh database, a tenant made with `taxd admin`, N / 100
accounts with 100 trades each over 5 assets loaded by bench/report_load.py
(bulk import, not the HTTP API), then `taxd serve` with its default 2 report
workers:
  1. the first all-accounts report recalculates every account (all are
     dirty after the import): its refresh_ms (from the "report completed"
     log line) is the recalculation time of the load, measured separately;
  2. three all-accounts reports and three 1,000-account reports on the now
     clean data: trigger-to-completed is finished_at - created_at of the
     report row (both stamped by the server), the median is reported; peak
     memory is the growth of the server's peak RSS (VmHWM, reset through
     /proc/PID/clear_refs before each report) over its RSS before it;
  3. the floor: `sqlite3 -csv` running the report's own query with a GROUP BY
     over (account, asset) into /dev/null, three times, the median.
Then one report far larger than SQLite's page caches (BENCH_REPORT_ROWS rows
of summaries written directly), to show that memory stays flat.
Prints progress on stderr and writes a Markdown section to OUT_MD.
"""
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
RUNS = 3
SUBSET = 1000
FLOOR_SQL = ("SELECT a.id, s.asset_code, x.type, max(s.total_quantity), max(s.total_cost),"
             " max(s.average_unit_cost), max(s.quantity_with_basis), 'USD'"
             " FROM accounts a JOIN inventory_summaries s ON s.account = a.seq"
             " LEFT JOIN assets x ON x.tenant_id = a.tenant_id AND x.code = s.asset_code"
             " WHERE s.total_quantity <> '0' GROUP BY a.id, s.asset_code")


def log(msg):
    print(f"bench-report: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


class Taxd:
    def __init__(self, taxd, work, creds):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.err_path = work / "taxd.stderr"
        self.err = open(self.err_path, "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
        self.proc = subprocess.Popen([taxd, "serve", "--listen", f"127.0.0.1:{self.port}", "--db",
                                      str(work / "taxd.db")], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.err, env=env)
        deadline = time.monotonic() + 30
        while b'"listening"' not in self.err_path.read_bytes():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("taxd did not start")
            time.sleep(0.05)
        r = requests.post(self.url + "/v1/oauth/token", json={
            "grant_type": "client_credentials", "client_id": creds["client_id"],
            "client_secret": creds["client_secret"]})
        self.headers = {"authorization": "Bearer " + r.json()["access_token"]}
        self.db = work / "taxd.db"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.err.close()

    def log_line(self, report_id):
        """The runner logs after the commit a client can already see: wait for it."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for line in self.err_path.read_text().splitlines():
                if '"report completed"' in line and report_id in line:
                    return json.loads(line)
            time.sleep(0.05)
        raise RuntimeError(f"no completion line for {report_id}")

    def run_report(self, payload, timeout=1800):
        """Triggers, waits for completed; returns (report id, server ms, peak KiB over before)."""
        open(f"/proc/{self.proc.pid}/clear_refs", "w").write("5")
        before = status_kb(self.proc.pid, "VmRSS")
        r = requests.post(self.url + "/v1/reports/inventory-summary", headers=self.headers,
                          json=payload)
        assert r.status_code == 202, r.text
        rid = r.json()["report_id"]
        deadline = time.monotonic() + timeout
        while True:
            s = requests.get(f"{self.url}/v1/reports/inventory-summary/{rid}",
                             headers=self.headers).json()
            if s["status"] in ("completed", "failed"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"report {rid} not done in {timeout} s")
            time.sleep(0.01)
        assert s["status"] == "completed", s
        peak = status_kb(self.proc.pid, "VmHWM")
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        ms = db.execute("SELECT finished_at - created_at FROM reports WHERE id = ?",
                        (rid,)).fetchone()[0]
        db.close()
        return rid, s, ms, max(0, peak - before)


def floor_ms(db):
    times = []
    for _ in range(RUNS):
        began = time.perf_counter()
        subprocess.run(["sqlite3", "-csv", str(db), FLOOR_SQL], check=True,
                       stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def download_ms(url):
    began = time.perf_counter()
    size = 0
    with requests.get(url, stream=True) as r:
        assert r.status_code == 200, r.text
        for piece in r.iter_content(1 << 16):
            size += len(piece)
    return (time.perf_counter() - began) * 1000, size


def measure(taxd, size, root):
    work = root / str(size)
    work.mkdir()
    accounts = max(1, size // 100)
    creds = json.loads(subprocess.check_output([taxd, "admin", "--db", str(work / "taxd.db"),
                                                "tenant", "create", "--name", "bench"]))
    load = json.loads(subprocess.check_output([sys.executable, str(HERE / "report_load.py"),
                                               str(work / "taxd.db"), creds["tenant_id"],
                                               str(size), str(accounts)]))
    log(f"{size} transactions over {accounts} accounts loaded in {load['seconds']} s")
    srv = Taxd(taxd, work, creds)
    try:
        rid, _, first_ms, first_kb = srv.run_report({})
        first = srv.log_line(rid)
        log(f"{size}: first report (recalculation) {first_ms} ms, refresh {first['refresh_ms']} ms")
        alls, subs = [], []
        for _ in range(RUNS):
            alls.append(srv.run_report({}))
        ids = [f"acct-{i:06d}" for i in range(SUBSET)]
        for _ in range(RUNS):
            subs.append(srv.run_report({"account_ids": ids}))
        last = srv.log_line(alls[-1][0])
        dl_ms, dl_bytes = download_ms(alls[-1][1]["download_url"])
        sub_meta = subs[-1][1]["metadata"]
        sub_line = srv.log_line(subs[-1][0])
    finally:
        srv.stop()
    floor = floor_ms(work / "taxd.db")
    row = {"size": size, "accounts": accounts, "rows": last["rows"], "bytes": last["bytes"],
           "load_s": load["seconds"], "recalc_ms": first["refresh_ms"], "first_ms": first_ms,
           "first_kb": first_kb,
           "all_ms": statistics.median(r[2] for r in alls), "all_kb": max(r[3] for r in alls),
           "sub_ms": statistics.median(r[2] for r in subs), "sub_kb": max(r[3] for r in subs),
           "sub_rows": sub_line["rows"], "sub_included": sub_meta["total_accounts_included"],
           "floor_ms": floor, "download_ms": dl_ms, "download_bytes": dl_bytes}
    log(json.dumps(row))
    return row


def measure_rows(taxd, rows, root):
    """A report far larger than the SQLite caches: summaries written directly
    (no transactions, nothing to recalculate), all-accounts only."""
    work = root / f"rows-{rows}"
    work.mkdir()
    accounts = max(1, rows // 5)
    creds = json.loads(subprocess.check_output([taxd, "admin", "--db", str(work / "taxd.db"),
                                                "tenant", "create", "--name", "bench"]))
    subprocess.check_output([sys.executable, str(HERE / "report_load.py"), str(work / "taxd.db"),
                             creds["tenant_id"], "0", str(accounts), "--summaries-only"])
    srv = Taxd(taxd, work, creds)
    try:
        runs = [srv.run_report({}) for _ in range(RUNS)]
        last = srv.log_line(runs[-1][0])
        dl_ms, dl_bytes = download_ms(runs[-1][1]["download_url"])
    finally:
        srv.stop()
    row = {"accounts": accounts, "rows": last["rows"], "bytes": last["bytes"],
           "all_ms": statistics.median(r[2] for r in runs), "all_kb": max(r[3] for r in runs),
           "floor_ms": floor_ms(work / "taxd.db"), "download_ms": dl_ms,
           "download_bytes": dl_bytes}
    log(json.dumps(row))
    return row


def mib(kb):
    return f"{kb / 1024:.1f}"


def size_text(n):
    return f"{n / 1048576:.1f} MiB" if n >= 1048576 else f"{n / 1024:.0f} KiB"


def reading(rows, big):
    """What the figures say, computed from them (so a rerun cannot contradict it)."""
    out = []
    top = [r for r in rows if r["size"] == 1000000]
    if top:
        ms = top[0]["all_ms"]
        out.append(f"- all-accounts report at 1,000,000 transactions: {ms} ms, target at most"
                   f" 2,000 ms: {'met' if ms <= 2000 else 'NOT met'};")
    points = [(r["rows"], r["all_ms"]) for r in rows if r["rows"] >= 5000]
    if big is not None:
        points.append((big["rows"], big["all_ms"]))
    if points:
        per_row = ", ".join(f"{n:,} rows {ms * 1000 / n:.1f} us" for n, ms in points)
        out.append(f"- time per row: {per_row} (linear in rows once the fixed cost of a"
                   " report, a few ms, is amortised);")
    mems = [r["all_kb"] for r in rows] + ([big["all_kb"]] if big else [])
    files = [r["bytes"] for r in rows] + ([big["bytes"]] if big else [])
    out.append(f"- peak memory of a report: +{mib(min(mems))} to +{mib(max(mems))} MiB while"
               f" the file grows from {size_text(min(files))} to {size_text(max(files))}: it"
               " is bounded by SQLite's page caches (two connections) and one 256 KiB chunk,"
               " not by the report;")
    pairs = [(r["all_ms"], r["floor_ms"]) for r in rows] + (
        [(big["all_ms"], big["floor_ms"])] if big else [])
    worst = max(a / max(f, 1) for a, f in pairs)
    if worst <= 1:
        out.append("- taxd stays under the sqlite3 floor at every size: GROUP BY sorts and the"
                   " CLI formats every value, while the report reads the rows in index order"
                   " (accounts by id, then summaries by asset) and needs no sort;")
    else:
        out.append(f"- taxd takes up to {worst:.2f} times the sqlite3 floor;")
    out.append("- the recalculation of an import (every account dirty) dominates the first"
               " report: it is the inventory engine's work, paid once, and later reports"
               " of unchanged accounts skip it.")
    return out


def write_markdown(rows, big, out, sizes_skipped):
    lines = [
        "## Inventory-summary reports (`make bench-report`)",
        "",
        f"Measured {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} on {os.cpu_count()} cores,"
        " plain build, `taxd serve` with its 2 default report workers. Data: N transactions"
        " bulk-imported (bench/report_load.py, not the HTTP API) over N / 100 accounts x 5"
        " assets (100 trades per account), all accounts dirty after the import.",
        "Times are trigger-to-completed as the server stamps them (finished_at - created_at),"
        f" medians of {RUNS}; memory is the growth of the server's peak RSS (VmHWM reset before"
        " each report) over its RSS before the report. Floor: `sqlite3 -csv` running the"
        " report's query with GROUP BY account, asset into /dev/null (median of 3).",
        "",
        "| transactions | accounts | rows | file | all-accounts report | peak memory | "
        "1,000-id report (rows) | peak memory | sqlite3 GROUP BY floor | report / floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r["all_ms"] / max(r["floor_ms"], 1)
        lines.append(f"| {r['size']:,} | {r['accounts']:,} | {r['rows']:,} |"
                     f" {size_text(r['bytes'])} | {r['all_ms']} ms | +{mib(r['all_kb'])} MiB |"
                     f" {r['sub_ms']} ms ({r['sub_rows']:,}) | +{mib(r['sub_kb'])} MiB |"
                     f" {r['floor_ms']:.0f} ms | {ratio:.2f} |")
    lines += ["", "Recalculation of the imported load (the first report after the import, which"
              " recalculates every dirty account before reading; measured separately):", "",
              "| transactions | bulk import | recalculation | first report in all | its peak memory |"
                                                                        " download of the file |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['size']:,} | {r['load_s']} s | {r['recalc_ms'] / 1000:.1f} s |"
                     f" {r['first_ms'] / 1000:.1f} s | +{mib(r['first_kb'])} MiB |"
                     f" {r['download_ms']:.0f} ms ({size_text(r['download_bytes'])}) |")
    if big is not None:
        ratio = big["all_ms"] / max(big["floor_ms"], 1)
        lines += ["", "Memory as the report grows past the SQLite page caches (2 MB per"
                  " connection): summaries written directly for"
                  f" {big['accounts']:,} clean accounts (no transactions, nothing to recalculate):",
                  "", "| rows | file | all-accounts report | peak memory | sqlite3 GROUP BY floor |"
                  " report / floor | download of the file |", "|---|---|---|---|---|---|---|",
                  f"| {big['rows']:,} | {size_text(big['bytes'])} | {big['all_ms']} ms |"
                  f" +{mib(big['all_kb'])} MiB | {big['floor_ms']:.0f} ms | {ratio:.2f} |"
                  f" {big['download_ms']:.0f} ms ({size_text(big['download_bytes'])}) |"]
    lines += ["", "Reading:"] + reading(rows, big)
    lines += ["", "At 10,000 transactions only 100 accounts exist: the 1,000-id report then"
              " includes those 100 and lists 900 as not found."]
    if sizes_skipped:
        lines.append(f"Not run here: {', '.join(f'{s:,}' for s in sizes_skipped)} transactions"
                     " (see the note below the table).")
    lines.append("Targets: all-accounts report at 1M transactions in at most 2 s; memory flat"
                 " as the report grows (rows are streamed into 256 KiB chunks, never held"
                 " whole); time linear in rows.")
    lines.append("Reproduce: `make bench-report` (`BENCH_REPORT_SIZES=10000,100000,1000000`).")
    Path(out).write_text("\n".join(lines) + "\n")


def main():
    taxd, sizes, out = sys.argv[1], [int(s) for s in sys.argv[2].split(",") if s], sys.argv[3]
    skipped = [int(s) for s in os.environ.get("BENCH_REPORT_SKIPPED", "").split(",") if s]
    with tempfile.TemporaryDirectory(prefix="taxd-bench-report-") as tmp:
        rows = [measure(taxd, size, Path(tmp)) for size in sizes]
        big_rows = int(os.environ.get("BENCH_REPORT_ROWS", "500000"))
        big = measure_rows(taxd, big_rows, Path(tmp)) if big_rows > 0 else None
    write_markdown(rows, big, out, skipped)


if __name__ == "__main__":
    main()
