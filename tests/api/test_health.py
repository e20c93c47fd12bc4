"""Health probes (issue 15, What must be true 6): /livez (the process runs),
/healthz (the write path, from the group commit's atomics: no connection, no
lock) and /readyz (it can serve and commit).

Storage failures come from the LD_PRELOAD shim of test_transactions_batch.py
(tests/api/shims/enospc_after.c): once its flag file exists, writes to the
database files fail with ENOSPC, or with EROFS when the flag says "erofs"
(a read-only file system: tests run as root, whom file modes do not stop).
Another process holding SQLite's write lock is Python's sqlite3 module
after BEGIN IMMEDIATE on the same file."""
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import Server, assert_no_rl_headers, body, poll

SHIM = Path(__file__).parent / "shims" / "enospc_after.c"
OK = {"status": "ok"}


def shim_server(tmp_path, *args):
    so = tmp_path / "enospc_after.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(SHIM), "-ldl"], check=True)
    flag = tmp_path / "full"
    asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
    env = {"LD_PRELOAD": str(so), "TAXD_TEST_ENOSPC_FLAG": str(flag),
           "ASAN_OPTIONS": asan + ":verify_asan_link_order=0"}
    return Server(tmp_path / "srv", args=args, env=env).start(), flag


def create_filer(t, filer_id):
    return t.server.api().post("/v1/filers", headers=t.auth(), json={"id": filer_id, "name": "F"})


def expect_503(r, message):
    assert r.status_code == 503, r.text
    assert body(r) == {"error": "Service Unavailable", "message": message}
    assert_no_rl_headers(r)


def test_probes_answer_ok(server, openapi):
    """All three are 200 {"status":"ok"} without a token or rate-limit headers."""
    for path in ("/livez", "/healthz", "/readyz"):
        r = server.api().get(path)
        assert r.status_code == 200 and body(r) == OK, (path, r.text)
        assert_no_rl_headers(r)
        openapi.check(r, "GET", path)


def _storage_failure_cycle(s, flag, t, content, message, n):
    api = s.api()
    flag.write_text(content)
    try:
        assert create_filer(t, f"lost{n}").status_code == 500
        expect_503(api.get("/healthz"), message)
        expect_503(api.get("/readyz"), message)
        assert api.get("/livez").status_code == 200  # the process runs all the same
    finally:
        flag.unlink()
    return api


@pytest.mark.sqlite_only  # ENOSPC/EROFS injected into writes of SQLite's files
def test_full_disk_and_read_only_database_make_healthz_and_readyz_503(tmp_path):
    """A full disk, then a read-only file system: /healthz and /readyz turn
    from 200 to 503 naming the reason once a commit failed; a write that
    commits again brings /healthz back to 200, and so does /readyz on its
    own (its probe commits once the disk is back)."""
    s, flag = shim_server(tmp_path)
    try:
        t = s.new_tenant("disk")
        assert t.token
        api = s.api()
        for path in ("/healthz", "/readyz"):
            assert api.get(path).status_code == 200

        # disk full; a client's write that commits heals /healthz
        _storage_failure_cycle(s, flag, t, "0", "the last commit failed: disk full", 1)
        expect_503(api.get("/healthz"), "the last commit failed: disk full")  # nothing committed yet
        assert create_filer(t, "after-full").status_code == 201
        assert api.get("/healthz").status_code == 200
        assert api.get("/readyz").status_code == 200

        # read-only; /readyz's own probe heals both
        _storage_failure_cycle(s, flag, t, "0 erofs", "the last commit failed: database is read-only", 2)
        # (its probe runs at most once a second: the last one met the read-only disk)
        (r,) = poll(lambda: (lambda x: (x,) if x.status_code == 200 else None)(api.get("/readyz")),
                    timeout=5, what="/readyz 200 once its probe commits")
        assert body(r) == OK
        assert api.get("/healthz").status_code == 200
        assert create_filer(t, "after-ro").status_code == 201
        assert "database or disk is full" in s.stderr_text()  # the shim did refuse the writes
    finally:
        s.stop_and_check()


def _timed_get(url):
    t0 = time.monotonic()
    r = requests.get(url, timeout=30)  # a fresh connection each time
    return r, time.monotonic() - t0


@pytest.mark.sqlite_only  # SQLite's write lock held from another connection
def test_write_lock_held_elsewhere_does_not_slow_healthz_and_stalls_it_after_10s(tmp_path, make_server):
    """Another process holds SQLite's write lock while writers queue: /healthz
    answers at once all along (it takes no connection), 200 for the first
    10 s, then 503 "writes are pending and none has committed for N s";
    /readyz agrees; once the lock is released the writes commit and both are
    200 again."""
    s = make_server("--request-timeout-ms", "25000")
    t = s.new_tenant("locked")
    assert t.token
    url = s.url
    con = sqlite3.connect(str(s.db), timeout=10, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    locked_at = time.monotonic()
    results, stop = [], threading.Event()

    def writer(i):
        n = 0
        while not stop.is_set():
            n += 1
            try:
                r = requests.post(url + "/v1/filers", headers=t.auth(),
                                  json={"id": f"w{i}-{n}", "name": "W"}, timeout=60)
                results.append(r.status_code)
            except requests.RequestException as exc:
                results.append(repr(exc))

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(3)]
    try:
        for th in threads:
            th.start()
        early = []
        while time.monotonic() - locked_at < 8.0:
            r, took = _timed_get(url + "/healthz")
            early.append((r.status_code, took))
            time.sleep(0.2)
        assert all(code == 200 for code, _ in early), early
        slowest = max(took for _, took in early)
        assert slowest < 0.5, early
        r, took = _timed_get(url + "/readyz")
        assert r.status_code == 200 and took < 1.5, (r.text, took)

        def stalled():
            x = requests.get(url + "/healthz", timeout=5)
            return (x,) if x.status_code == 503 else None  # a 503 Response is falsy
        (r,) = poll(stalled, timeout=10, what="/healthz 503 after 10 s of pending writes")
        stalled_after = time.monotonic() - locked_at
        assert stalled_after >= 9.5, stalled_after
        assert r.json()["error"] == "Service Unavailable"
        assert r.json()["message"].startswith("writes are pending and none has committed for ")
        r, took = _timed_get(url + "/healthz")
        assert took < 0.5 and r.status_code == 503
        r = requests.get(url + "/readyz", timeout=10)
        assert r.status_code == 503 and r.json()["message"].startswith("writes are pending")
        print(f"healthz under the lock: slowest {slowest * 1000:.1f} ms over {len(early)} probes; "
              f"503 after {stalled_after:.1f} s")
    finally:
        con.execute("ROLLBACK")
        con.close()
        stop.set()
        for th in threads:
            th.join(timeout=60)
    assert 201 in results, results
    assert requests.get(url + "/healthz", timeout=5).status_code == 200
    assert requests.get(url + "/readyz", timeout=5).status_code == 200
