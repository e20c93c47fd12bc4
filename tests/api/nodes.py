"""Several taxd processes on one PostgreSQL database, for the multi-node and
fault tests (test_pg_nodes.py, test_pg_faults.py). Only with TAXD_TEST_PG:
on SQLite those tests are skipped (pg_only), since several nodes on one
SQLite file are covered by the suite's own kill -9 and worker tests.

A Node is a conftest.Server whose database is another server's (the first
node's), so every node serves one database; a Worker is `taxd worker` on it."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (START_TIMEOUT_S, STOP_TIMEOUT_S, TAXD_BIN, TAXD_TEST_PG, Server,
                      _die_with_parent)

pg_only = pytest.mark.skipif(not TAXD_TEST_PG, reason="PostgreSQL only: set TAXD_TEST_PG (make api-pg)")


def node(workdir, db, *args):
    """A `taxd serve` on db (a conftest Database), not started."""
    s = Server(workdir, args=["--listen", "127.0.0.1:0", *db.args()[:2], "--threads", "8",
                              *db.args()[2:], *args], use_flags=False)
    s.db = db
    return s


class Worker:
    """`taxd worker` on db; its stderr (JSON lines) in workdir/worker.stderr."""

    def __init__(self, workdir, db, *args):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.workdir / "worker.stderr"
        self.cmd = [TAXD_BIN, "worker", *db.args(), *args]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
        self.proc = None

    def start(self):
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, env=self.env, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(l.get("msg") == "worker running" for l in self.lines()):
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"taxd worker exited {self.proc.returncode}:\n{self.text()}")
            time.sleep(0.02)
        raise AssertionError(f"taxd worker did not start:\n{self.text()}")

    def text(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def lines(self):
        return json_lines(self.text())

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._err.close()

    def stop(self):
        """SIGTERM; asserts exit status 0."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"taxd worker did not stop:\n{self.text()[-3000:]}")
        finally:
            self._err.close()
        assert rc == 0, f"taxd worker exited {rc}:\n{self.text()[-3000:]}"


def json_lines(text):
    """The JSON log lines of a process's stderr (other lines skipped)."""
    out = []
    for raw in text.splitlines():
        if raw.startswith("{"):
            try:
                out.append(json.loads(raw))
            except ValueError:
                pass
    return out


def server_lines(srv):
    return json_lines(srv.stderr_text())


def claimed(proc_lines, msg="report claimed", key="report_id"):
    """[id] of every claim a process logged, in order."""
    return [l[key] for l in proc_lines if l.get("msg") == msg]
