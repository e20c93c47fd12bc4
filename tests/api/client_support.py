"""What the client's black-box tests share (issue 18): where taxctl and the
library's test drivers are, running taxctl with credentials from the
environment only, and the fault proxy (tests/client/faultproxy.py)."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "client"))

from faultproxy import FaultProxy, http_date  # noqa: E402,F401

TAXCTL_BIN = os.environ.get("TAXCTL_BIN") or str(REPO / "build" / "client" / "taxctl")
TOOLS = Path(os.environ.get("TAXD_CLIENT_TOOLS") or REPO / "build" / "client" / "tools")
SLOW = bool(os.environ.get("TAXD_TEST_PG")) or "/asan/" in os.environ.get("TAXD_BIN", "")
CLI_TIMEOUT_S = 120


def tool(name):
    return str(TOOLS / name)


def cli_env(tmp_path, url=None, tenant=None, **extra):
    """An environment for taxctl: no configuration file (TAXCTL_CONFIG points
    at a missing one) unless extra says otherwise, credentials of tenant in
    TAXD_URL / TAXD_CLIENT_ID / TAXD_CLIENT_SECRET."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAXD_", "TAXCTL_"))}
    env["TAXCTL_CONFIG"] = str(tmp_path / "no-config")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    if url:
        env["TAXD_URL"] = url
    if tenant:
        env["TAXD_CLIENT_ID"] = tenant.client_id
        env["TAXD_CLIENT_SECRET"] = tenant.client_secret
    env.update(extra)
    return env


def taxctl(args, env, input=None, timeout=CLI_TIMEOUT_S):
    """Runs taxctl; returns the CompletedProcess (text)."""
    return subprocess.run([TAXCTL_BIN, *args], env=env, input=input, capture_output=True,
                          text=True, timeout=timeout)
