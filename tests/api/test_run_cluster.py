"""`make run-cluster` (scripts/run-cluster): a newcomer's PostgreSQL cluster of two
`taxd serve` nodes and a `taxd worker` behind nginx on one port.

Rules checked, in docs/operations.md's words ("Running on PostgreSQL", make run-cluster):
- it prints a tenant's credentials, and a token minted through the one port works;
- requests through that port are answered by both nodes (round-robin: the
  x-request-id's prefix is the answering node's instance id);
- SIGTERM stops every process it started and removes the cluster and its files,
  and it exits 0.

It starts PostgreSQL itself (tests/pg/cluster.sh), so it runs in the PostgreSQL
pass only (TAXD_TEST_PG set: make api-pg), where PostgreSQL is known to be installed.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import requests

from conftest import TAXD_BIN, TAXD_TEST_PG

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "run-cluster")

pytestmark = [
    pytest.mark.skipif(not TAXD_TEST_PG, reason="starts a PostgreSQL cluster: runs in the PostgreSQL pass"),
    pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed (make deps)"),
    pytest.mark.timeout(240),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Output:
    """The script's stdout, read by a thread so that it never blocks on a full pipe."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, text, timeout):
        end = time.monotonic() + timeout
        with self.cond:
            while not any(line == text for line in self.lines):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def text(self):
        with self.cond:
            return "\n".join(self.lines)


@pytest.fixture
def cluster():
    # Its own TMPDIR (reachable by user postgres, which runs the server), so the
    # test can see that nothing is left behind.
    tmp = tempfile.mkdtemp(prefix="taxd-rc-test.", dir="/tmp")
    os.chmod(tmp, 0o711)
    port = free_port()
    err_path = os.path.join(tmp, "stderr")
    env = dict(os.environ, TAXD_BIN=TAXD_BIN, TMPDIR=tmp, TAXD_CLUSTER_LISTEN=f"127.0.0.1:{port}")
    env.pop("TAXD_PG_STATE", None)
    env.pop("TAXD_PG_PORT", None)
    with open(err_path, "w") as err:
        proc = subprocess.Popen([SCRIPT], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=err,
                                text=True, start_new_session=True)
    out = Output(proc.stdout)
    state = {"proc": proc, "out": out, "port": port, "tmp": tmp, "err": err_path}
    try:
        yield state
    finally:
        if proc.poll() is None:  # the test failed before stopping it
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def stderr_of(c):
    with open(c["err"]) as f:
        return f.read()


def test_run_cluster_serves_through_one_port_from_both_nodes_and_stops_cleanly(cluster):
    c = cluster
    assert c["out"].wait_for("ready", 150), f"not ready:\n{c['out'].text()}\n{stderr_of(c)}"
    text = c["out"].text()
    creds = json.loads(re.search(r"^Demo tenant \(shown once\): (\{.*\})$", text, re.M).group(1))
    node_ports = [int(p) for p in re.findall(r"node\d \(127\.0\.0\.1:(\d+)\)", text)]
    assert len(node_ports) == 2, text
    pg_port = int(re.search(r"database: PostgreSQL (\d+)", text).group(1))

    base = f"http://127.0.0.1:{c['port']}"
    r = requests.post(f"{base}/v1/oauth/token", json={
        "grant_type": "client_credentials", "client_id": creds["client_id"],
        "client_secret": creds["client_secret"]}, timeout=30)
    assert r.status_code == 200, r.text
    token = r.json()["access_token"]

    prefixes = set()
    for _ in range(4):
        r = requests.get(f"{base}/v1/filers/default", headers={"authorization": f"Bearer {token}"},
                         timeout=30)
        assert r.status_code == 200, r.text
        assert "\"is_default\":true" in r.text, r.text
        prefixes.add(r.headers["x-request-id"].split("-")[0])
    assert len(prefixes) == 2, f"one node answered every request: {prefixes}"

    c["proc"].send_signal(signal.SIGTERM)
    assert c["proc"].wait(90) == 0, stderr_of(c)
    for port in [c["port"], pg_port] + node_ports:
        assert not listening(port), f"port {port} still listening after the stop"
    left = [n for n in os.listdir(c["tmp"]) if n.startswith(("taxd-cluster.", "taxd-pg."))]
    assert left == [], f"left behind in {c['tmp']}: {left}"
