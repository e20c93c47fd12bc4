"""Runs Taxbit's real browser client (tests/sdk, installed by scripts/install-deps)
for the SDK tests: run.mjs in Node with jsdom, browser.mjs in Debian's headless
Chromium, and mock.mjs, the stand-in that documents the protocol they expect.

Each run is one `node` process with a deadline of its own (the script's
--timeout, and a subprocess timeout a little above it) that prints one JSON line
(see tests/sdk/run.mjs); `sdk_run` returns it parsed, whatever its outcome.
"""
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_DIR = REPO / "tests" / "sdk"
VALUES = SDK_DIR / "values"
RUN_TIMEOUT_S = 45      # each run gives up by itself after this
KINDS = ("dps", "w9", "w8ben", "w8bene")
FORM = {"dps": "DPS", "w9": "W-9", "w8ben": "W-8BEN", "w8bene": "W-8BEN-E"}
QUESTIONNAIRE = {"dps": "DPS", "w9": "W-FORM", "w8ben": "W-FORM", "w8bene": "W-FORM"}
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium-headless-shell")


def require_harness(browser=False):
    """Fails (never skips) when the harness is not installed: `make api`
    installs it, and a skipped test would hide that the client never ran."""
    if not shutil.which("node"):
        pytest.fail("node is not installed: run scripts/install-deps", pytrace=False)
    if not (SDK_DIR / "node_modules" / ".taxd-installed-lock").is_file():
        pytest.fail("tests/sdk is not installed: run scripts/install-deps", pytrace=False)
    if browser and not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-deps", pytrace=False)


def free_port():
    """A TCP port free at the time of asking (for the page's origin, which the
    server's --cors-origin must name before the page exists)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def values(kind):
    return json.loads((VALUES / f"{kind}.json").read_text())


def sdk_run(api_url, token, kind, values_file=None, browser=False, page_port=None, timeout=RUN_TIMEOUT_S):
    """Runs run.mjs (or browser.mjs) once; returns its JSON line as a dict."""
    require_harness(browser)
    script = "browser.mjs" if browser else "run.mjs"
    cmd = ["node", str(SDK_DIR / script), "--api", api_url, "--token", token, "--kind", kind,
           "--values", str(values_file or VALUES / f"{kind}.json"), "--timeout", str(timeout)]
    if browser:
        cmd += ["--page-port", str(page_port or 0)]
    env = dict(os.environ, CHROMIUM=CHROMIUM)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 15, cwd=SDK_DIR, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"{script} printed no result (exit {p.returncode}):\n{p.stderr[-3000:]}"
    out = json.loads(lines[-1])
    assert (p.returncode == 0) == out["success"], f"{script} exit {p.returncode} but {out}"
    out["stderr"] = p.stderr[-3000:]
    return out


def explain(out):
    """What a failed run says about itself, for an assertion message."""
    reqs = "\n".join(f"  {r['method']} {r['path']} -> {r['status']} {r['content_type']}" for r in out["requests"])
    return f"error: {out.get('error')}\nSDK errors: {out['errors']}\nrequests:\n{reqs}\nstderr: {out['stderr'][-1500:]}"


def snake(value):
    """The SDK's camelCase model in the wire's snake_case (sdk.js `kt`: each
    capital X becomes _x)."""
    if isinstance(value, dict):
        return {"".join("_" + c.lower() if c.isupper() else c for c in k): snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


class Mock:
    """tests/sdk/mock.mjs as a subprocess: .url, .log() (every request seen)."""

    def __init__(self, cors_origins=()):
        require_harness()
        cmd = ["node", str(SDK_DIR / "mock.mjs")]
        for o in cors_origins:
            cmd += ["--cors-origin", o]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=SDK_DIR)
        line = self.proc.stdout.readline()
        assert line, f"mock.mjs did not start: {self.proc.stderr.read()}"
        self.url = f"http://127.0.0.1:{json.loads(line)['port']}"

    def log(self):
        import requests
        return requests.get(self.url + "/_mock/log", timeout=10).json()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def pdf_text(data, tmp_path):
    """pdftotext's UTF-8 text of a PDF (poppler-utils)."""
    assert shutil.which("pdftotext"), "pdftotext is missing: run scripts/install-deps (poppler-utils)"
    src = tmp_path / "doc.pdf"
    src.write_bytes(data)
    p = subprocess.run(["pdftotext", "-enc", "UTF-8", str(src), "-"], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode("utf-8")


# What each values file (tests/sdk/values/KIND.json) must become in the
# submission body (docs/taxbit-sdk.md § 1.3): the fields typed, in the wire's
# snake_case, and the SDK's own markers. TIN_PATHS name the TINs among them.
EXPECTED = {
    "dps": {"document_type": "COMPREHENSIVE", "questionnaire": "DPS", "schema_version": "1.0",
            "is_confirmed_correct_complete": True,
            "account_holder": {"name": "Jürgen Müller", "is_individual": True, "date_of_birth": "03/14/1980",
                               "address": {"first_line": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115",
                                           "country": "DE"},
                               "tax_residences": [{"country": "DE", "tin": "12345678901",
                                                   "tin_not_required": False}],
                               "vatin_not_required": True}},
    "w9": {"document_type": "COMPREHENSIVE", "questionnaire": "W-FORM", "schema_version": "1.0",
           "has_certified": True, "is_not_subject_backup_withholding": True, "signature": "Jane Q Public",
           "account_holder": {"name": "Jane Q Public", "is_us_person": True, "us_account_type": "INDIVIDUAL",
                              "tin": "231456789",
                              "address": {"first_line": "1 Main St", "city": "Seattle", "state_or_province": "WA",
                                          "postal_code": "98101", "country": "US"}}},
    "w8ben": {"document_type": "COMPREHENSIVE", "questionnaire": "W-FORM", "schema_version": "1.0",
              "has_certified": True, "signature": "Łukasz Dvořák Иванов",
              "account_holder": {"name": "Łukasz Dvořák Иванов", "is_us_person": False,
                                 "foreign_account_type": "INDIVIDUAL", "country_of_citizenship": "PL",
                                 "date_of_birth": "07/02/1975", "ftin": "44051401359",
                                 "ftin_not_legally_required": False,
                                 "address": {"first_line": "ul. Długa 5", "city": "Kraków", "country": "PL"}}},
    "w8bene": {"document_type": "COMPREHENSIVE", "questionnaire": "W-FORM", "schema_version": "1.0",
               "has_certified": True, "signature": "Maria Papadopoulou",
               "account_holder": {"name": "Ελληνική Εταιρεία Hellas AE", "is_us_person": False,
                                  "foreign_account_type": "CORPORATION", "country_of_citizenship": "GR",
                                  "ftin_not_legally_required": True,
                                  "address": {"first_line": "Odos Ermou 10", "city": "Athina",
                                              "postal_code": "10563", "country": "GR"}}},
}
CLEAR_TINS = {"dps": ["12345678901"], "w9": ["231456789"], "w8ben": ["44051401359"], "w8bene": []}
TIN_KEYS = {"tin", "ftin"}


def assert_subset(expected, actual, where="body", skip_keys=frozenset()):
    """Every member of `expected` is in `actual` with the same value (objects
    compared member by member, arrays item by item); keys in skip_keys are
    only required to be present."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for k, v in expected.items():
            assert k in actual, f"{where}.{k} is missing"
            if k not in skip_keys:
                assert_subset(v, actual[k], f"{where}.{k}", skip_keys)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_subset(e, a, f"{where}[{i}]", skip_keys)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
