"""Inventory-summary reports on PostgreSQL beside SQLite (make bench-pg, part
report; issue 17, item 7).

usage: pg_report.py TAXD_BIN ADMIN_URL SIZE OUT_MD

One SQLite database loaded by bench/report_load.py (SIZE transactions over
SIZE / 100 accounts, 100 trades each over 5 assets), moved into a fresh
PostgreSQL database of the cluster at ADMIN_URL by `taxd admin migrate-db`
(so both hold the same rows), then on each backend in turn one `taxd serve`:
the first all-accounts report (it recalculates every account: all are dirty
after the import), then RUNS all-accounts reports on the clean data. Times
are trigger-to-completed as the client sees them (the status polled every
10 ms), the same way on both backends; the medians are compared. Appends a
Markdown section to OUT_MD.
"""
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from report import free_port, log  # noqa: E402  (bench/report.py: the same loader's helpers)

RUNS = 3


def serve(taxd, db, keys, work, creds):
    port = free_port()
    err_path = work / f"serve-{port}.stderr"
    err = open(err_path, "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    proc = subprocess.Popen([taxd, "serve", "--listen", f"127.0.0.1:{port}", "--db", db,
                             "--key-dir", str(keys)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 30
    while b'"listening"' not in err_path.read_bytes():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"taxd did not start: {err_path.read_text()[-2000:]}")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    token = requests.post(url + "/v1/oauth/token", json={
        "grant_type": "client_credentials", "client_id": creds["client_id"],
        "client_secret": creds["client_secret"]}).json()["access_token"]
    return proc, err, url, {"authorization": "Bearer " + token}


def report_s(url, headers):
    began = time.monotonic()
    r = requests.post(url + "/v1/reports/inventory-summary", headers=headers, json={})
    assert r.status_code == 202, r.text
    rid = r.json()["report_id"]
    while True:
        s = requests.get(f"{url}/v1/reports/inventory-summary/{rid}", headers=headers).json()
        if s["status"] in ("completed", "failed"):
            assert s["status"] == "completed", s
            return time.monotonic() - began
        if time.monotonic() - began > 1800:
            raise RuntimeError(f"report {rid} not done in 30 minutes")
        time.sleep(0.01)


def measure(taxd, db, keys, work, creds):
    proc, err, url, headers = serve(taxd, db, keys, work, creds)
    try:
        first = report_s(url, headers)
        runs = [report_s(url, headers) for _ in range(RUNS)]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        err.close()
    return first, statistics.median(runs)


def main():
    taxd, admin_url, size, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    accounts = max(1, size // 100)
    with tempfile.TemporaryDirectory(prefix="pg-report-") as tmp:
        work = Path(tmp)
        keys = work / "keys"
        sqlite_db = work / "taxd.db"
        creds = json.loads(subprocess.check_output([taxd, "admin", "--db", str(sqlite_db),
                                                    "--key-dir", str(keys), "tenant", "create",
                                                    "--name", "bench"]))
        load = json.loads(subprocess.check_output([sys.executable, str(HERE / "report_load.py"),
                                                   str(sqlite_db), creds["tenant_id"], str(size),
                                                   str(accounts)]))
        log(f"{size} transactions over {accounts} accounts loaded in {load['seconds']} s")
        name = "bench_report_" + secrets.token_hex(4)
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", admin_url, "-c",
                        f"CREATE DATABASE {name}"], check=True)
        pg_db = admin_url.rsplit("/", 1)[0] + "/" + name
        try:
            began = time.monotonic()
            subprocess.run([taxd, "admin", "migrate-db", "--from", str(sqlite_db), "--to", pg_db],
                           check=True, stdout=subprocess.DEVNULL)
            moved_s = time.monotonic() - began
            lite = measure(taxd, str(sqlite_db), keys, work, creds)
            pg = measure(taxd, pg_db, keys, work, creds)
        finally:
            subprocess.run(["psql", "-q", admin_url, "-c", f"DROP DATABASE IF EXISTS {name}"
                            " WITH (FORCE)"], check=False)
    row = {"size": size, "accounts": accounts, "moved_s": round(moved_s, 2),
           "sqlite_first_s": round(lite[0], 3), "sqlite_s": round(lite[1], 3),
           "pg_first_s": round(pg[0], 3), "pg_s": round(pg[1], 3)}
    log(json.dumps(row))
    with open(out, "a") as f:
        f.write(f"\n### Inventory-summary reports (`bench/pg_report.py`, {size:,} transactions over"
                f" {accounts:,} accounts; measured {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())})\n\n"
                "The same rows on both backends (loaded into SQLite, moved by `taxd admin"
                f" migrate-db` in {row['moved_s']} s); one `taxd serve` each; trigger to completed"
                f" as the client sees it (status polled every 10 ms), the median of {RUNS} on clean"
                " data, and the first report, which recalculates every account.\n\n"
                "| backend | first report (recalculates) s | report on clean data s | / SQLite |\n"
                "|---|---|---|---|\n"
                f"| SQLite | {row['sqlite_first_s']} | {row['sqlite_s']} | 1.00 |\n"
                f"| PostgreSQL | {row['pg_first_s']} | {row['pg_s']} |"
                f" {row['pg_s'] / row['sqlite_s']:.2f} |\n")


if __name__ == "__main__":
    main()
