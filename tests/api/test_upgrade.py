"""Upgrades keep data (issue 13 item 2).

A database written by a released taxd must upgrade in place on the first start
of the new binary ($TAXD_BIN), and answer every read as the release did.
Black box: the release is built from git (cached under build/release-<commit>/),
it writes a fixture database through the API and `taxd admin`, and records every
API read and every read-only operator command; the new binary then starts on a
byte-identical copy of that database file (with its key files) and must answer
the same. Comparison is by observable behaviour only, never by schema: the
storage layout may change completely (migration v10 does).

Normalised between the two processes, and nothing else (see normalise()):
  - a report's download_url and expires_at: a signed link minted per GET with
    its own expiry ("every GET returns a different URL"); its presence is kept;
  - meta.next_cursor of a list page: an opaque token ("the base64url of the
    last key") whose encoding may follow the storage layout; whether there is
    a next page is kept, and the pages themselves are walked and compared;
  - bearer tokens and x-request-id are never recorded (each process mints
    its own); only status, body and, for downloads, content-type and
    content-disposition are.
Both processes run `serve --no-workers`, so that no engine changes state while
reads are recorded (pending reports, TIN checks and webhook deliveries stay
pending); inventory is still computed by the reads themselves.

Failed upgrades (test_failed_upgrade_leaves_the_database_untouched): the new
binary cannot take the migration lock; or cannot grow any file past 32 KiB
(RLIMIT_FSIZE: a migration that writes more than a few pages fails inside its
transaction); or is asked to fail by the test hook TAXD_TEST_FAIL_MIGRATION
(see FAILURES). It must exit non-zero naming the schema migration, and the
database must be byte for byte what it was: the release opens it and answers
every recorded read the same.
"""
import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import requests

from conftest import (ADMIN_TIMEOUT_S, HTTP_TIMEOUT_S, REPO, START_TIMEOUT_S, Server,
                      Tenant, body, check_against_openapi, check_request_id, poll)
from webhook_receiver import Receiver

# Every test here upgrades SQLite files written by released binaries (and breaks
# their files on purpose); the move from SQLite to PostgreSQL is `taxd admin
# migrate-db`, tested on its own.
# The first test of each release also sets up its fixture, which builds the
# release from git (about a minute on 2 cores in a fresh clone) and runs it
# until its engines settle: pytest.ini's 90 s is a bound for one test, not
# for a compiler.
pytestmark = [pytest.mark.sqlite_only, pytest.mark.timeout(300)]

# Released taxd versions whose databases the new binary must upgrade, oldest
# first, as full commit ids. 2f8b27f is the last release with schema migration
# v9 (the release before the v10 storage layout); 5b40f27 the release with v10
# (before the health probes' and the report ids' tables, v11 and v12); bc345b7
# the release with v12 (before the gains columns and tables of v13); 658b9c1
# the release with v13; ed1151e the release with v14 (before v15's model
# columns of tax documentation and its files table, issue 19). The next
# release appends its own commit here (and each one after it), so that a
# database written by every release is upgraded by every new binary.
RELEASES = ["2f8b27f8399b3ec831bcbd85431fb3fa34f1c00f",
            "5b40f27c5f7fdeb9591f79eef90913aa4695517a",
            "bc345b76570648903e7986ede9c9c000999ad6a7",
            "658b9c1c7fe503196a182f95541ecd4849d3ac2d",
            "ed1151e2fc9fe2fb1ca4ce88a3854bda97d6a539"]

TX_PATH = "/v1/transactions/external-id"
REPORTS = "/v1/reports/inventory-summary"
REPORT_TEST_HEADER = "x-taxd-test-report"
DATA = Path(__file__).resolve().parents[1] / "data" / "reference_inventory.json"
REFERENCE = json.loads(DATA.read_text())
BULK = 240                    # transactions of the bulk account
WAIT_S = 120.0                # bound for engines (2 shared cores, ASan, a loaded CI machine)
MATCH_LIST = "SSN,123-45-6789,Jane Q Public\nEIN,12-3456789,Acme Widgets, Inc.\n"
FSIZE_LIMIT = 32 * 1024       # the -shm file needs exactly 32 KiB; the WAL gets ~7 pages
ADDRESS_US = {"line1": "1 Main St", "line2": "Apt 4", "city": "Springfield", "state": "IL",
              "postal_code": "62701", "country_code": "US"}
ADDRESS_DE = {"line1": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115", "country_code": "DE"}


# --------------------------------------------------------------- the release

def build_release(commit):
    """The release binary built from git at `commit` (plain build, never ASan),
    cached in build/release-<commit>/taxd. Fails loudly without git or history."""
    out = REPO / "build" / f"release-{commit[:7]}" / "taxd"
    if out.is_file() and os.access(out, os.X_OK):
        return out
    git = shutil.which("git")
    if git is None:
        pytest.fail("test_upgrade needs git to build the release binary", pytrace=False)
    p = subprocess.run([git, "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"release commit {commit} is not in this clone's history (a shallow clone?): "
                    f"{p.stderr.strip()}", pytrace=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"release-{commit[:7]}.", dir=out.parent.parent))
    try:
        archive = subprocess.Popen([git, "-C", str(REPO), "archive", commit, "src", "Makefile", "scripts"],
                                   stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, capture_output=True)
        archive.stdout.close()
        assert archive.wait() == 0 and untar.returncode == 0, f"git archive {commit} | tar failed: {untar.stderr}"
        env = {k: v for k, v in os.environ.items() if k not in ("CFLAGS", "MAKEFLAGS", "MFLAGS")}
        m = subprocess.run(["make", "-C", str(tmp), "build/taxd", "-j2"], capture_output=True, text=True,
                           env=env)
        assert m.returncode == 0, f"building release {commit} failed:\n{m.stdout[-2000:]}\n{m.stderr[-4000:]}"
        os.replace(tmp / "build" / "taxd", out)   # atomic: a concurrent run sees all or nothing
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_bin(binary, args, timeout=ADMIN_TIMEOUT_S):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, env=env)


def admin(binary, db, *args):
    p = run_bin(binary, ["admin", "--db", str(db), *args])
    assert p.returncode == 0, f"{binary} admin {' '.join(args)} exited {p.returncode}: {p.stderr}"
    return json.loads(p.stdout)


def serve(binary, workdir, *args):
    """taxd serve from `binary` on workdir/taxd.db (conftest's Server, other binary)."""
    s = Server(workdir, args=args)
    s.cmd[0] = str(binary)
    return s.start()


def user_version(db):
    """PRAGMA user_version, read-only: the only look inside the file (how many
    migrations it has run)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()


def copy_db(src_dir, dst_dir):
    """The database file with its WAL (if any) and its key files."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    for f in Path(src_dir).iterdir():
        if f.name.startswith("taxd.db") and not f.name.endswith("-shm"):
            shutil.copy2(f, dst_dir / f.name)
    return dst_dir / "taxd.db"


def db_digest(workdir):
    """sha256 of every file of the database: db, -wal, key files. Not -shm (an
    index of the WAL, rebuilt on open) nor an empty -wal (it holds nothing, and
    SQLite deletes it when the last connection closes)."""
    h = {}
    for f in sorted(Path(workdir).iterdir()):
        if f.name.endswith("-wal") and f.stat().st_size == 0:
            continue
        if f.name.startswith("taxd.db") and not f.name.endswith("-shm"):
            h[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
    return h


# ------------------------------------------------------------- API helpers

def call(tenant, method, path, json_body=None, headers=None, expect=None):
    h = dict(tenant.auth())
    h.update(headers or {})
    r = tenant.server.api().request(method, path, headers=h, json=json_body)
    if expect is not None:
        assert r.status_code in (expect if isinstance(expect, tuple) else (expect,)), \
            f"{method} {path}: {r.status_code} {r.text[:800]}"
    return r


def line(code, amount, rate=None, type_=None):
    kind = type_ or ("fiat" if code == "USD" else "crypto")
    item = {"asset_amount": {"amount": amount, "asset": {"code": code, "type": kind}}}
    if rate is not None:
        item["rates"] = [{"amount": rate, "asset": {"code": "USD", "type": "fiat"}}]
    return item


def ref_tx(account_id, t):
    doc = {"id": t["id"], "account_id": account_id, "datetime": t["datetime"], "type": t["type"]}
    for key in ("sent", "received", "fees"):
        if t.get(key):
            doc[key] = [line(*s) for s in t[key]]
    return doc


def wait_report(tenant, rid):
    def done():
        b = body(call(tenant, "GET", f"{REPORTS}/{rid}", expect=200))
        return b if b["status"] in ("completed", "failed") else None
    return poll(done, WAIT_S, what=f"report {rid} to finish")


def deliveries(binary, db, sub, state=None):
    args = ["subscription", "deliveries", "--subscription", sub] + (["--state", state] if state else [])
    return admin(binary, db, *args)["deliveries"]


# ------------------------------------------------------------ the fixture

def build_fixture(old, workdir, flags):
    """Writes the fixture database with the release binary; returns what the
    reads need to know (tenants' credentials and the ids they created)."""
    db = workdir / "taxd.db"
    fx = {"tenants": {}, "tx": {}, "reports": [], "validations": [], "subscriptions": [],
          "forms": [], "owners_with_docs": [], "extra_accounts": []}

    def new_tenant(name):
        t = admin(old, db, "tenant", "create", "--name", name)
        fx["tenants"][name] = {"tenant_id": t["tenant_id"], "client_id": t["client_id"],
                               "client_secret": t["client_secret"]}
        return t["tenant_id"]

    a_id = new_tenant("upgrade-a")
    b_id = new_tenant("upgrade-b")
    # Credentials: a narrower one and a revoked one (tenant list shows them, if at all).
    admin(old, db, "credentials", "create", "--tenant", a_id, "--scopes", "reports,inventory")
    gone = admin(old, db, "credentials", "create", "--tenant", b_id)
    admin(old, db, "credentials", "revoke", "--client-id", gone["client_id"])
    # Rate limits: a tenant default, a route for every tenant, a route of one tenant.
    admin(old, db, "ratelimit", "set", "--tenant", a_id, "--rate", "5000", "--burst", "5000")
    admin(old, db, "ratelimit", "set", "--route", "POST /v1/reports/inventory-summary",
          "--rate", "50", "--burst", "60")
    admin(old, db, "ratelimit", "set", "--tenant", b_id, "--route", "GET /v1/accounts",
          "--rate", "700", "--burst", "800")

    receiver = flags["receiver"]
    receiver.script("/ok", default={"status": 200})
    receiver.script("/fail", default={"status": 503})
    # every attempt is refused, so a second delivery dispatched beside the first
    # (its INVENTORY_UPDATE and RTTM_TIN_VALIDATION can be due at once) is held too
    receiver.script("/held", default={"status": 401})
    subs = {}
    subs["ok"] = admin(old, db, "subscription", "create", "--tenant", a_id, "--url", receiver.url("/ok"),
                       "--events", "INVENTORY_UPDATE,FORM_STATUS_UPDATE,ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS",
                       "--rate-limit", "200")["subscription_id"]
    subs["fail"] = admin(old, db, "subscription", "create", "--tenant", a_id, "--url", receiver.url("/fail"),
                         "--events", "INVENTORY_UPDATE", "--retry-attempts", "0",
                         "--retry-window", "30", "--timeout", "5")["subscription_id"]
    subs["held"] = admin(old, db, "subscription", "create", "--tenant", b_id, "--url", receiver.url("/held"),
                         "--events", "INVENTORY_UPDATE,RTTM_TIN_VALIDATION")["subscription_id"]
    extra = admin(old, db, "subscription", "create", "--tenant", b_id, "--url", receiver.url("/x"),
                  "--events", "FORM_STATUS_UPDATE")["subscription_id"]
    admin(old, db, "subscription", "update", "--subscription", extra, "--url", receiver.url("/moved"),
          "--rate-limit", "7", "--timeout", "3")
    gone_sub = admin(old, db, "subscription", "create", "--tenant", b_id, "--url", receiver.url("/gone"),
                     "--events", "INVENTORY_UPDATE")["subscription_id"]
    admin(old, db, "subscription", "delete", "--subscription", gone_sub)
    fx["subscriptions"] = [subs["ok"], subs["fail"], subs["held"], extra, gone_sub]

    s = serve(old, workdir, "--test-hooks", *flags["args"])
    try:
        ta = Tenant(s, a_id, fx["tenants"]["upgrade-a"]["client_id"], fx["tenants"]["upgrade-a"]["client_secret"])
        tb = Tenant(s, b_id, fx["tenants"]["upgrade-b"]["client_id"], fx["tenants"]["upgrade-b"]["client_secret"])

        # Filers: the default one given a TIN, a second one, a third deleted.
        call(ta, "PATCH", "/v1/filers/default", {"tin": "98-7654321"}, expect=200)
        call(ta, "POST", "/v1/filers", {"id": "filer-2", "name": "Filer Two", "tin": "12-3456789"}, expect=201)
        call(ta, "PATCH", "/v1/filers/filer-2", {"name": "Filer Two (renamed)"}, expect=200)
        call(ta, "POST", "/v1/filers", {"id": "filer-3", "name": "Filer Three"}, expect=201)
        call(ta, "DELETE", "/v1/filers/filer-3", expect=(200, 204))

        # Owners: full (TIN, address), minimal entity, the reference owner, one patched.
        call(ta, "POST", "/v1/account-owners", {
            "id": "o-full", "name": "Jane Q Public", "account_owner_type": "individual",
            "tax_country_code": "US", "tin": "123-45-6789", "tin_type": "SSN", "birth_date": "1970-01-02",
            "email": "jane@example.com", "address": ADDRESS_US}, expect=201)
        call(ta, "POST", "/v1/account-owners", {"id": "o-entity", "name": "Weber GmbH",
                                                "account_owner_type": "entity"}, expect=201)
        call(ta, "POST", "/v1/account-owners", {"id": "o-ein", "name": "Acme Widgets, Inc.",
                                                "account_owner_type": "entity"}, expect=201)
        call(ta, "POST", "/v1/account-owners", {"id": "o-w8", "name": "Karl Weber",
                                                "account_owner_type": "individual", "tax_country_code": "DE",
                                                "address": ADDRESS_DE}, expect=201)
        call(ta, "PATCH", "/v1/account-owners/o-w8", {"email": "karl@example.de",
                                                      "tin": "12345678901", "tin_type": "FOREIGN"}, expect=(200,))
        call(ta, "POST", "/v1/account-owners", {"id": REFERENCE["owner"], "name": "Reference owner",
                                                "account_owner_type": "individual"}, expect=201)

        # Assets: configured ones (one deleted); the rest are created on first use.
        call(ta, "POST", "/v1/assets", {"code": "DOGE", "name": "Dogecoin", "type": "crypto", "decimals": 8},
             expect=201)
        call(ta, "POST", "/v1/assets", {"code": "GONE", "name": "Deleted asset", "type": "security"}, expect=201)
        call(ta, "DELETE", "/v1/assets/GONE", expect=(200, 204))

        # Accounts of every cost-basis method, with the reference transactions.
        for a in REFERENCE["accounts"]:
            payload = {"id": a["id"], "account_owner_id": REFERENCE["owner"],
                       "cost_basis_method": a["cost_basis_method"]}
            if a.get("austria_tax_year"):
                payload["austria_tax_year"] = a["austria_tax_year"]
            call(ta, "POST", "/v1/accounts", payload, expect=201)
            for t in a["transactions"]:
                call(ta, "POST", TX_PATH, ref_tx(a["id"], t), expect=201)
                fx["tx"].setdefault("upgrade-a", []).append(t["id"])
        call(ta, "POST", "/v1/accounts", {"id": "acc-x", "account_owner_id": "o-full", "filer_id": "filer-2",
                                          "name": "Main", "cost_basis_method": "HIFO"}, expect=201)
        call(ta, "PATCH", "/v1/accounts/acc-x", {"name": "Main (renamed)"}, expect=200)
        call(ta, "POST", "/v1/accounts", {"id": "acc-empty", "account_owner_id": "o-entity"}, expect=201)
        # Metadata, subtype, fees, rates; updated (last write wins) and deleted transactions.
        x = [
            {"id": "x-buy", "account_id": "acc-x", "datetime": "2023-01-01T00:00:00.000Z", "type": "trade",
             "subtype": "spot", "sent": [line("USD", "1000")], "received": [line("DOGE", "10000")],
             "fees": [line("USD", "1.25")], "metadata": {"note": "k\u00f6ln \u6771\u4eac",
                                                          "nested": {"list": [1, "two", None, True]}}},
            {"id": "x-income", "account_id": "acc-x", "datetime": "2023-02-01T00:00:00.000Z", "type": "income",
             "subtype": "staking", "received": [line("ETH", "0.5", "1600.10")]},
            {"id": "x-deposit", "account_id": "acc-x", "datetime": "2023-03-01T00:00:00.000Z", "type": "deposit",
             "received": [line("BTC", "0.25")]},
            {"id": "x-withdraw", "account_id": "acc-x", "datetime": "2023-04-01T00:00:00.000Z",
             "type": "withdraw", "sent": [line("DOGE", "2500")], "fees": [line("DOGE", "1")]},
            {"id": "x-expense", "account_id": "acc-x", "datetime": "2023-05-01T00:00:00.000Z", "type": "expense",
             "sent": [line("ETH", "0.1", "1700")]},
            {"id": "x-deleted", "account_id": "acc-x", "datetime": "2023-06-01T00:00:00.000Z", "type": "deposit",
             "received": [line("BTC", "9")]},
            {"id": "x id/with?odd#chars", "account_id": "acc-x", "datetime": "2023-07-01T00:00:00+02:00",
             "type": "trade", "sent": [line("DOGE", "100")], "received": [line("USD", "12.5")]},
        ]
        for t in x:
            call(ta, "POST", TX_PATH, t, expect=201)
        updated = dict(x[0], metadata={"note": "updated"}, fees=[line("USD", "2.50")])
        call(ta, "POST", TX_PATH, updated, expect=200)
        call(ta, "POST", TX_PATH, dict(x[2], received=[line("BTC", "0.75")]), expect=200)
        call(ta, "DELETE", f"{TX_PATH}/x-deleted", expect=(200, 204))
        fx["tx"]["upgrade-a"] += [t["id"] for t in x] + ["never-posted"]

        # A book of a few hundred transactions: tables of many pages, so that a
        # migration rebuilding them writes more than a few pages.
        call(ta, "POST", "/v1/accounts", {"id": "acc-bulk", "account_owner_id": "o-entity",
                                          "cost_basis_method": "FIFO"}, expect=201)
        for i in range(BULK):
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1672531200 + 3600 * i))
            if i % 4 == 3:
                t = {"type": "withdraw", "sent": [line("BTC", "0.7")]}
            else:
                t = {"type": "trade", "sent": [line("USD", str(100 + 7 * i))], "received": [line("BTC", "0.5")],
                     "metadata": {"batch": i}}
            call(ta, "POST", TX_PATH, {"id": f"bulk-{i:04d}", "account_id": "acc-bulk", "datetime": when, **t},
                 expect=201)
        fx["tx"]["upgrade-a"] += ["bulk-0000", "bulk-0003", f"bulk-{BULK - 1:04d}"]

        # Tenant b: a small book of its own.
        call(tb, "POST", "/v1/account-owners", {"id": "b-owner", "name": "B", "account_owner_type": "entity",
                                                "tin": "12-3456789", "tin_type": "EIN"}, expect=201)
        call(tb, "POST", "/v1/accounts", {"id": "b-acc", "account_owner_id": "b-owner"}, expect=201)
        call(tb, "POST", TX_PATH, {"id": "b1", "account_id": "b-acc", "datetime": "2024-01-01T00:00:00Z",
                                   "type": "deposit", "received": [line("BTC", "1")]}, expect=201)
        fx["tx"]["upgrade-b"] = ["b1"]

        # Inventory computed by reading it (then some accounts are written again below).
        for a in ["ref-fifo", "ref-hifo", "ref-austria", "acc-x"]:
            call(ta, "GET", "/v1/inventory/summaries?account_id=" + a, expect=200)

        # Tax documentation of every kind.
        year = time.gmtime().tm_year
        signed = f"{year - 1}-05-10"
        call(ta, "POST", "/v1/account-owners/o-full/tax-documentation", {
            "document_type": "W-9", "name": "Jane Q Public", "entity_classification": "INDIVIDUAL",
            "tin_type": "SSN", "tin": "123-45-6789", "address": ADDRESS_US, "certified": True,
            "signature_date": signed}, expect=201)
        call(ta, "POST", "/v1/account-owners/o-ein/tax-documentation", {
            "document_type": "W-9", "name": "Acme Widgets, Inc.", "entity_classification": "C_CORPORATION",
            "tin_type": "EIN", "tin": "12-3456789", "address": ADDRESS_US, "certified": True,
            "signature_date": signed}, expect=201)
        call(ta, "POST", "/v1/account-owners/o-w8/tax-documentation", {
            "document_type": "W-8BEN", "name": "Karl Weber", "country_of_citizenship": "DE",
            "permanent_residence_address": ADDRESS_DE, "foreign_tin": "12345678901",
            "date_of_birth": "1980-02-29", "treaty_claim": {"country_code": "DE", "article": "10",
                                                             "withholding_rate": "15", "income_type": "Dividends"},
            "certified": True, "signature_date": signed}, expect=201)
        call(ta, "POST", "/v1/account-owners/o-w8/tax-documentation", {
            "document_type": "SELF_CERTIFICATION", "name": "Karl Weber", "account_holder_type": "INDIVIDUAL",
            "address": ADDRESS_DE, "date_of_birth": "1980-02-29",
            "tax_residences": [{"country_code": "DE", "tin": "12345678901"}], "certified": True,
            "signature_date": signed}, expect=201)
        call(ta, "POST", "/v1/account-owners/o-entity/tax-documentation", {
            "document_type": "W-8BEN-E", "name": "Weber GmbH", "country_of_organization": "DE",
            "chapter3_status": "CORPORATION", "permanent_residence_address": ADDRESS_DE,
            "foreign_tin_not_required_reason": "Not issued to this entity type", "certified": True,
            "signature_date": signed}, expect=201)
        call(ta, "POST", "/v1/account-owners/o-entity/tax-documentation", {
            "document_type": "DPS", "name": "Weber GmbH", "seller_type": "ENTITY", "address": ADDRESS_DE,
            "tax_residences": [{"country_code": "DE", "tin": "12345678901"}], "vat_number": "DE123456789",
            "certified": True, "signature_date": signed}, expect=201)

        # TIN checks: VALID, INVALID_FORMAT, MISMATCH (and one left PENDING below).
        for name, tin, kind, who in [("Jane Q Public", "123-45-6789", "SSN", ta),
                                     ("Nobody", "987-65-4321", "SSN", ta),
                                     ("Somebody Else", "123-45-6789", "SSN", ta),
                                     ("Acme Widgets, Inc.", "12-3456789", "EIN", tb)]:
            extra_body = {"account_owner_id": "o-full"} if tin == "123-45-6789" else {}
            r = call(who, "POST", "/v1/tin-validations", {"name": name, "tin": tin, "tin_type": kind,
                                                          **extra_body}, expect=202)
            fx["validations"].append(("upgrade-a" if who is ta else "upgrade-b", body(r)["data"]["validation_id"]))

        # Reports: csv and jsonl completed, one failed (test-only switch).
        for payload, headers in [({}, None), ({"account_ids": ["ref-fifo", "acc-x", "missing"],
                                                "format": "jsonl"}, None),
                                 ({"format": "csv"}, {REPORT_TEST_HEADER: "fail"})]:
            r = call(ta, "POST", REPORTS, payload, headers=headers, expect=202)
            fx["reports"].append(("upgrade-a", body(r)["report_id"]))
        for _, rid in fx["reports"]:
            wait_report(ta, rid)

        # Tax forms: filed, generated, deleted, and generated again after the deletion.
        def gen(ftype, acct, year_):
            out = admin(old, db, "forms", "generate", "--tenant", a_id, "--tax-year", str(year_),
                        "--form-type", ftype, "--account", acct)
            return out["forms"][0]["form_id"]
        filed = gen("GAIN_LOSS_SUMMARY", "ref-fifo", 2023)
        admin(old, db, "forms", "file", "--form", filed)
        generated = gen("TRANSACTION_SUMMARY", "ref-fifo", 2023)
        # a release from issue 16 on derives the 1099-DA from gains, from 2025 on
        probe = run_bin(old, ["admin", "--db", str(db), "forms", "generate", "--tenant", a_id,
                              "--tax-year", "2023", "--form-type", "1099_DA", "--account", "acc-x"])
        da_year = 2023 if probe.returncode == 0 else 2025
        if probe.returncode == 0:
            admin(old, db, "forms", "delete", "--form", json.loads(probe.stdout)["forms"][0]["form_id"])
        deleted = gen("1099_DA", "acc-x", da_year)
        admin(old, db, "forms", "delete", "--form", deleted)
        again = gen("1099_DA", "acc-x", da_year)
        austria = gen("GAIN_LOSS_SUMMARY", "ref-austria", 2024)
        fx["forms"] = [filed, generated, deleted, again, austria]

        # Engines settle: TIN checks done, every delivery delivered, failed or held.
        def checks_done():
            for tname, vid in fx["validations"]:
                who = ta if tname == "upgrade-a" else tb
                if body(call(who, "GET", f"/v1/tin-validations/{vid}", expect=200))["data"]["status"] == "PENDING":
                    return False
            return True
        poll(checks_done, WAIT_S, interval=0.1, what="TIN checks to finish")

        def states():
            return {k: {d["state"] for d in deliveries(old, db, sub)} for k, sub in subs.items()}
        settled = {"ok": {"delivered"}, "fail": {"failed"}, "held": {"held"}}
        poll(lambda: states() == settled, WAIT_S, interval=0.2, what=f"delivery states {settled}",
             describe=lambda: f"states now {states()}")
    finally:
        s.stop_and_check()

    # Work left pending at the upgrade: no engines run, so a report, a TIN check
    # and webhook deliveries stay pending, and written accounts stay dirty.
    s = serve(old, workdir, "--no-workers", *flags["args"])
    try:
        ta = Tenant(s, a_id, fx["tenants"]["upgrade-a"]["client_id"], fx["tenants"]["upgrade-a"]["client_secret"])
        tb = Tenant(s, b_id, fx["tenants"]["upgrade-b"]["client_id"], fx["tenants"]["upgrade-b"]["client_secret"])
        r = call(ta, "POST", REPORTS, {"account_ids": ["ref-hifo"]}, expect=202)
        fx["reports"].append(("upgrade-a", body(r)["report_id"]))
        r = call(tb, "POST", "/v1/tin-validations", {"name": "Pending", "tin": "111-22-3333",
                                                     "tin_type": "SSN"}, expect=202)
        fx["validations"].append(("upgrade-b", body(r)["data"]["validation_id"]))
        call(ta, "POST", TX_PATH, {"id": "dirty-1", "account_id": "ref-hifo", "datetime": "2023-01-15T00:00:00Z",
                                   "type": "trade", "sent": [line("USD", "500")], "received": [line("ETH", "0.4")],
                                   "fees": [line("USD", "3")]}, expect=201)
        call(ta, "POST", TX_PATH, dict(x[4], sent=[line("ETH", "0.2", "1750")]), expect=200)   # acc-x dirty
        call(tb, "POST", TX_PATH, {"id": "b2", "account_id": "b-acc", "datetime": "2024-02-01T00:00:00Z",
                                   "type": "withdraw", "sent": [line("BTC", "0.4")]}, expect=201)
        fx["tx"]["upgrade-a"].append("dirty-1")
        fx["tx"]["upgrade-b"].append("b2")
    finally:
        s.stop_and_check()
    pending = deliveries(old, db, subs["ok"], "pending")
    assert pending, "the fixture should hold pending deliveries"
    return fx


# ------------------------------------------------------------ the records

# The owners the fixture gives tax documentation, with the objects each must
# answer: every document type a release takes (W-9; W-8BEN and a
# self-certification; W-8BEN-E and DPS) is read back through
# GET /v1/account-owners/{id}/tax-documentation, before and after the upgrade.
TAX_DOCUMENTATION = {"o-full": {"w_form_questionnaire"},
                     "o-ein": {"w_form_questionnaire"},
                     "o-w8": {"w_form_questionnaire", "self_certification"},
                     "o-entity": {"w_form_questionnaire", "dps_questionnaire"}}


def assert_tax_documentation_recorded(records):
    """The records hold each owner's tax documentation, answered 200 with its
    objects: the comparison of the records then covers every document type."""
    for owner, objects in TAX_DOCUMENTATION.items():
        status, got = records[f"upgrade-a GET /v1/account-owners/{owner}/tax-documentation"]
        assert status == 200, got
        data = got.get("data", got) if isinstance(got, dict) else got
        assert objects <= set(data), f"{owner}: {sorted(data)}"

def normalise(value):
    """Drops what legitimately differs between two processes (module docstring)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "download_url" and isinstance(v, str):
                out[k] = "<signed link>"      # minted per GET, own expiry and nonce
            elif k == "expires_at" and "download_url" in value:
                out[k] = "<link expiry>"      # now + 15 minutes at each GET
            elif k == "next_cursor":
                out[k] = v is not None        # opaque; only whether there is a next page
            elif k == "correction_needed" and v is False:
                continue                      # issue 16's additive member of a tax form
            else:
                out[k] = normalise(v)
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def answer(r):
    try:
        return normalise(r.json())
    except ValueError:
        return r.text


def record_api(server, fx):
    rec = {}
    tenants = {n: Tenant(server, t["tenant_id"], t["client_id"], t["client_secret"])
               for n, t in fx["tenants"].items()}

    def get(tname, path):
        r = call(tenants[tname], "GET", path)
        rec[f"{tname} GET {path}"] = (r.status_code, answer(r))
        return r

    def walk(tname, base, limit):
        items, cursor, page = [], None, 0
        while True:
            q = {"limit": limit} if limit else {}
            if cursor:
                q["cursor"] = cursor
            r = call(tenants[tname], "GET", base + ("?" + urlencode(q) if q else ""))
            rec[f"{tname} GET {base} limit={limit or 'default'} page {page}"] = (r.status_code, answer(r))
            assert r.status_code == 200, r.text
            b = body(r)
            items += b["data"]
            cursor = b["meta"]["next_cursor"]
            page += 1
            if not cursor:
                return items

    r = server.api().get("/healthz")
    rec["GET /healthz"] = (r.status_code, answer(r))
    for tname in tenants:
        keys = {"/v1/filers": "id", "/v1/account-owners": "id", "/v1/accounts": "id", "/v1/assets": "code"}
        listed = {}
        for base, key in keys.items():
            for limit in (None, 2, 100):
                listed[base] = walk(tname, base, limit)
            for item in listed[base]:
                get(tname, f"{base}/{quote(item[key], safe='')}")
        for o in listed["/v1/account-owners"]:
            get(tname, f"/v1/account-owners/{quote(o['id'], safe='')}/tax-documentation")
        assets = [a["code"] for a in listed["/v1/assets"]]
        for a in listed["/v1/accounts"]:
            acc = quote(a["id"], safe="")
            r = get(tname, f"/v1/inventory/summaries?account_id={acc}")
            held = [s["asset_code"] for s in body(r)["data"]["summaries"]] if r.status_code == 200 else []
            for code in sorted(set(held) | set(assets[:2])):
                get(tname, f"/v1/inventory?account_id={acc}&asset_code={quote(code, safe='')}")
            for year in (2023, 2024):
                get(tname, f"/v1/withholding/austria?account_id={acc}&tax_year={year}")
                get(tname, f"/v1/tax-documents?account_id={acc}&tax_year={year}")
        for tx_id in fx["tx"].get(tname, []):
            get(tname, f"{TX_PATH}/{quote(tx_id, safe='')}")
            get(tname, f"/v1/transfer-lots/transactions/{quote(tx_id, safe='')}")
    for tname, vid in fx["validations"]:
        get(tname, f"/v1/tin-validations/{vid}")
    for tname, rid in fx["reports"]:
        r = get(tname, f"{REPORTS}/{rid}")
        get("upgrade-b" if tname == "upgrade-a" else "upgrade-a", f"{REPORTS}/{rid}")   # another tenant's: 403
        url = body(r).get("download_url")
        if url:
            with requests.Session() as sess:
                d = sess.get(url, timeout=HTTP_TIMEOUT_S, allow_redirects=False)
            check_request_id(server, d)
            check_against_openapi(d)
            rec[f"download of report {rid}"] = (d.status_code, d.headers.get("content-type"),
                                                d.headers.get("content-disposition"), d.content)
    return rec


def record_admin(binary, db, fx):
    """Every read-only operator command (`taxd admin --help`): exit status, stdout, stderr."""
    cmds = [["tenant", "list"], ["ratelimit", "list"], ["subscription", "list"]]
    cmds += [["subscription", "list", "--tenant", t["tenant_id"]] for t in fx["tenants"].values()]
    for sub in fx["subscriptions"]:
        cmds.append(["subscription", "show", "--subscription", sub])
        for state in (None, "pending", "held", "delivered", "failed"):
            cmds.append(["subscription", "deliveries", "--subscription", sub] + (["--state", state] if state else []))
        cmds.append(["subscription", "deliveries", "--subscription", sub, "--since", "2020-01-01T00:00:00Z"])
    cmds += [["forms", "show", "--form", f] for f in fx["forms"]]
    rec = {}
    for c in cmds:
        p = run_bin(binary, ["admin", "--db", str(db), *c])
        try:
            out = normalise(json.loads(p.stdout)) if p.stdout else None
        except ValueError:
            out = p.stdout
        rec["admin " + " ".join(c)] = (p.returncode, out, p.stderr)
    return rec


def record_all(binary, workdir, fx, args):
    """Operator commands first (API reads may compute inventory), then the API,
    against `serve --no-workers` of `binary` on workdir/taxd.db."""
    rec = record_admin(binary, workdir / "taxd.db", fx)
    s = serve(binary, workdir, "--no-workers", *args)
    try:
        rec.update(record_api(s, fx))
    finally:
        s.stop_and_check()
    return rec


def first_difference(a, b, path="answer"):
    """The path and the two values of the first leaf where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b):
        for k in a:
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}[{k!r}]")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: release {a!r:.600} / new {b!r:.600}"


# Issue 16 changed the inventory's rules on purpose (docs/decisions.md, "Realized
# gains: the engine's rules": money rounded to cents, calendar-date terms, an
# exchange's fees in its proceeds; lots listed in the method's order; a
# deposit's transfer-lot GET answers its provided lots), and v13 recomputes every
# ledger under them. These reads may therefore answer differently from a release
# before v13; they must still succeed, and the rows behind them are checked
# against the new rules (assert_ledger_follows_issue_16).
ISSUE_16_READS = ("GET /v1/inventory", "GET /v1/transfer-lots/", "GET /v1/withholding/")
ISSUE_16_VERSION = 13


def recomputed_by_issue_16(key, release_version):
    read = key.split(" ", 1)[1] if " " in key else key
    return release_version < ISSUE_16_VERSION and read.startswith(ISSUE_16_READS)


def assert_ledger_follows_issue_16(db):
    """Every lot and relief was written under issue 16's rules: lots have an
    origin and an entry datetime, reliefs a method, disposals transaction
    costs, and money (lot costs as entered, proceeds) is in whole cents."""
    con = sqlite3.connect(str(db))
    try:
        q = lambda sql: con.execute(sql).fetchone()[0]
        assert q("SELECT count(*) FROM inventory_lots") > 0
        assert q("SELECT count(*) FROM inventory_lots WHERE origin IS NULL OR entered_at IS NULL") == 0
        assert q("SELECT count(*) FROM inventory_reliefs WHERE method IS NULL") == 0
        assert q("SELECT count(*) FROM inventory_reliefs WHERE kind = 'disposal'"
                 " AND transaction_costs IS NULL") == 0
        for (v,) in con.execute("SELECT orig_cost FROM inventory_lots WHERE orig_cost IS NOT NULL"
                                " UNION ALL SELECT proceeds FROM inventory_reliefs"
                                " WHERE proceeds IS NOT NULL"):
            assert len(v.partition(".")[2]) <= 2, f"not in cents: {v}"
    finally:
        con.close()


def held_quantities(answer):
    """{asset_code: total_quantity} of an inventory read (all summaries or one
    asset's), None for any other answer: what an account holds, which no rule
    of issue 16 changes (it moves money, not units)."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("summaries"), list):
        return {x["asset_code"]: x["total_quantity"] for x in data["summaries"]}
    if isinstance(data.get("summary"), dict):
        return {data["asset_code"]: data["summary"]["total_quantity"]}
    return None


def assert_same(expected, got, what, release_version=None):
    assert list(got) == list(expected), f"{what}: a different set of reads"
    if release_version is not None:
        changed = [k for k in expected if recomputed_by_issue_16(k, release_version)]
        for k in changed:
            assert got[k][0] in (200, 203) or got[k][0] == expected[k][0], (k, got[k])
            assert held_quantities(got[k][1]) == held_quantities(expected[k][1]), \
                f"{what}: {k} holds other quantities after the recomputation"
        expected = {k: v for k, v in expected.items() if k not in changed}
    diffs = [k for k in expected if expected[k] != got[k]]
    if diffs:
        k = diffs[0]
        raise AssertionError(f"{what}: {len(diffs)} of {len(expected)} reads differ; first: {k}\n"
                             f"{first_difference(expected[k], got[k])}\nall: {diffs}")


# ------------------------------------------------------------------ tests

@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    r = Receiver(tmp_path_factory.mktemp("receiver")).start()
    yield r
    r.stop()


@pytest.fixture(scope="module", params=RELEASES, ids=[c[:7] for c in RELEASES])
def release(request, tmp_path_factory, taxd_bin, receiver):
    """(release binary, fixture directory, fixture ids, serve flags, records):
    the fixture as the release wrote it (never read: dirty accounts stay
    dirty) and the release's answers, recorded on a copy."""
    commit = request.param[:7]
    old = build_release(request.param)
    root = tmp_path_factory.mktemp(f"release-{commit}")
    match = root / "tins.csv"
    match.write_text(MATCH_LIST)
    args = ("--webhook-ca-file", str(receiver.ca_pem), "--tin-match-file", str(match))
    fixture_dir = root / "fixture"
    fx = build_fixture(old, fixture_dir, {"receiver": receiver, "args": args})
    recorded_dir = root / "recorded"
    copy_db(fixture_dir, recorded_dir)
    rec = record_all(old, recorded_dir, fx, args)
    return {"commit": commit, "old": old, "dir": fixture_dir, "fx": fx, "args": args, "records": rec,
            "version": user_version(fixture_dir / "taxd.db")}


def test_upgrade_keeps_every_read_and_writes_work(release, tmp_path, taxd_bin):
    """The new binary opens the release's database in place: it migrates
    (to the version a new database gets, and no further on a second start), answers
    every recorded read the same, and takes writes afterwards."""
    work = tmp_path / "upgraded"
    db = copy_db(release["dir"], work)
    got = record_all(taxd_bin, work, release["fx"], release["args"])
    migrated = user_version(db)
    assert migrated == latest_version(taxd_bin, tmp_path) >= release["version"], \
        "the upgraded database is not at the version a new database gets"
    assert_same(release["records"], got, f"release {release['commit']} upgraded by {taxd_bin}",
                release["version"])
    assert_tax_documentation_recorded(release["records"])
    assert_ledger_follows_issue_16(db)

    # A second start migrates nothing more; writes and inventory work, engines run.
    s = serve(taxd_bin, work, *release["args"])
    try:
        t = release["fx"]["tenants"]["upgrade-a"]
        ta = Tenant(s, t["tenant_id"], t["client_id"], t["client_secret"])
        before = body(call(ta, "GET", "/v1/inventory/summaries?account_id=ref-fifo", expect=200))["data"]
        call(ta, "POST", TX_PATH, {"id": "after-upgrade", "account_id": "ref-fifo",
                                   "datetime": "2023-12-31T00:00:00Z", "type": "deposit",
                                   "received": [line("DOGE", "42")]}, expect=201)
        call(ta, "POST", TX_PATH, {"id": "after-upgrade", "account_id": "ref-fifo",
                                   "datetime": "2023-12-31T00:00:00Z", "type": "deposit",
                                   "received": [line("DOGE", "43")]}, expect=200)
        after = body(call(ta, "GET", "/v1/inventory/summaries?account_id=ref-fifo", expect=200))["data"]
        doge = [x for x in after["summaries"] if x["asset_code"] == "DOGE"]
        assert len(doge) == 1 and doge[0]["total_quantity"] == "43", after
        assert [x for x in after["summaries"] if x["asset_code"] != "DOGE"] == before["summaries"]
        lots = body(call(ta, "GET", "/v1/inventory?account_id=ref-fifo&asset_code=DOGE", expect=200))["data"]
        assert [lot["quantity"] for lot in lots["lots"]] == ["43"], lots
        # A submission after the upgrade replaces the release's on its own
        # object only (rows of both models side by side).
        docs = "/v1/account-owners/o-entity/tax-documentation"
        old_docs = body(call(ta, "GET", docs, expect=200))
        call(ta, "POST", docs, {
            "document_type": "DPS", "name": "Weber GmbH", "seller_type": "ENTITY", "address": ADDRESS_DE,
            "tax_residences": [{"country_code": "DE", "tin": "12345678901"}], "vat_number": "DE123456789",
            "certified": True, "signature_date": time.strftime("%Y-%m-%d", time.gmtime())}, expect=201)
        new_docs = body(call(ta, "GET", docs, expect=200))
        old_data, new_data = old_docs.get("data", old_docs), new_docs.get("data", new_docs)
        assert new_data["w_form_questionnaire"] == old_data["w_form_questionnaire"]
        assert new_data["dps_questionnaire"] != old_data["dps_questionnaire"]
        assert_taxbit_routes_read_the_release(ta)
        # Work the release left pending is done by the new binary's engines:
        # the report completes, the TIN check ends, the deliveries are sent.
        rid = release["fx"]["reports"][-1][1]
        assert wait_report(ta, rid)["status"] == "completed"
        t = release["fx"]["tenants"]["upgrade-b"]
        tb = Tenant(s, t["tenant_id"], t["client_id"], t["client_secret"])
        vid = release["fx"]["validations"][-1][1]
        poll(lambda: body(call(tb, "GET", f"/v1/tin-validations/{vid}", expect=200))["data"]["status"] != "PENDING",
             WAIT_S, interval=0.1, what="the pending TIN check to end")
        ok_sub = release["fx"]["subscriptions"][0]
        poll(lambda: not deliveries(taxd_bin, db, ok_sub, "pending"), WAIT_S, interval=0.2,
             what="the pending deliveries to be sent")
        assert {d["state"] for d in deliveries(taxd_bin, db, ok_sub)} == {"delivered"}
    finally:
        s.stop_and_check()
    assert user_version(db) == migrated


def assert_taxbit_routes_read_the_release(ta):
    """Issue 19: Taxbit's routes read what the release stored (native rows,
    no v15 columns): its documents in Taxbit's model, TINs masked; the W-9's
    TIN type, which no column holds for an old row, read from its sealed
    document (VALID_SSN_MATCH and VALID_EIN_MATCH: the fixture's match list
    has both); a PDF."""
    data = body(call(ta, "GET", "/v1/account-owners/o-full/tax-documentation-data", expect=200))["data"]
    w9 = next(d for d in data if d["questionnaire"] == "W-FORM")
    assert w9["account_holder"]["name"] == "Jane Q Public" and w9["account_holder"]["tin"].endswith("6789")
    assert "123-45-6789" not in json.dumps(w9) and "123456789" not in json.dumps(w9)

    def w_form(owner):
        st = body(call(ta, "GET", f"/v1/account-owners/{owner}/tax-documentation-status", expect=200))["data"]
        return st["w_form_questionnaire"] if st["w_form_questionnaire"]["tin_status"] != "PENDING" else None
    for owner, matched in (("o-full", "VALID_SSN_MATCH"), ("o-ein", "VALID_EIN_MATCH")):
        w = poll(lambda: w_form(owner), WAIT_S, interval=0.1, what=f"the W-9's TIN check of {owner}")
        assert w["tin_status"] == matched, (owner, w)
    w8 = body(call(ta, "GET", "/v1/account-owners/o-w8/tax-documentation-status", expect=200))["data"]
    assert w8["w_form_questionnaire"]["tin_status"] == "FOREIGN" and "dps_questionnaire" not in w8
    made = body(call(ta, "POST", "/v1/account-owners/o-w8/tax-documentation-data/document", expect=201))["data"]
    doc = body(call(ta, "GET", f"/v1/account-owners/o-w8/tax-documentation-data/document/{made['id']}",
                    expect=200))["data"]
    pdf = requests.get(doc["url"], timeout=30)
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")


def first_start(binary, workdir, preexec=None, env_extra=None, args=()):
    """`serve` of `binary` on workdir/taxd.db with stderr on a pipe. Returns
    (exit status or None if it started listening, stderr); a server that
    started is stopped with SIGTERM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.update(env_extra or {})
    p = subprocess.Popen([str(binary), "serve", "--listen", "127.0.0.1:0", "--db", str(workdir / "taxd.db"),
                          "--no-workers", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=workdir, preexec_fn=preexec,
                         restore_signals=False)
    lines, started = [], threading.Event()

    def read():
        for ln in p.stderr:
            lines.append(ln)
            if '"listening"' in ln:
                started.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while p.poll() is None and not started.is_set() and time.monotonic() < deadline:
        time.sleep(0.02)
    status = None
    if started.is_set():
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=START_TIMEOUT_S) == 0, "".join(lines)
    elif p.poll() is None:
        p.kill()
        p.wait()
        raise AssertionError(f"{binary} neither started nor exited:\n{''.join(lines)}")
    else:
        status = p.returncode
    reader.join(5)
    return status, "".join(lines)


def limit_file_size():
    """In the child: no file grows past FSIZE_LIMIT (writes fail with EFBIG;
    SIGXFSZ stays ignored as Python leaves it, restore_signals=False)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))


def latest_version(binary, tmp_path):
    """The schema version `binary` gives a new database."""
    fresh = tmp_path / "fresh"
    fresh.mkdir(exist_ok=True)
    admin(binary, fresh / "taxd.db", "tenant", "list")
    return user_version(fresh / "taxd.db")


# How a first start is made to fail, and what it must then say (stderr).
# - locked: another process holds the write lock, so the migration cannot
#   begin (taxd waits 5 s for it);
# - disk full: no file may grow past FSIZE_LIMIT, so a migration that writes
#   more than ~7 pages fails inside its transaction (EFBIG: "disk I/O error"
#   or "disk is full") and rolls back;
# - test hook: TAXD_TEST_FAIL_MIGRATION=1 with --test-hooks asks the new
#   binary to run every pending migration script and then fail instead of
#   committing (the hook a small migration needs; see failed_upgrade below).
FAILURES = {
    "locked": dict(lock=True),
    "disk full": dict(preexec=limit_file_size),
    "test hook": dict(env_extra={"TAXD_TEST_FAIL_MIGRATION": "1"}, args=("--test-hooks",)),
}


def test_failed_upgrade_leaves_the_database_untouched(release, tmp_path, taxd_bin):
    """An upgrade that cannot complete exits non-zero naming the schema
    migration and leaves every byte of the database as the release wrote it:
    the release opens it again and answers every recorded read the same.

    The lock fails any first start. Disk full and the test hook fail a
    migration in the middle; with nothing to migrate (the new binary has the
    release's schema) the new binary just starts, and must leave the version
    as it was. When there is something to migrate, at least one of the two
    must make it fail: disk full catches any migration that rebuilds tables,
    the hook is needed for one that writes only a few pages."""
    nothing_to_migrate = latest_version(taxd_bin, tmp_path) == release["version"]
    failed_mid_migration = []
    for name, how in FAILURES.items():
        work = tmp_path / name.replace(" ", "-")
        copy_db(release["dir"], work)
        before = db_digest(work)
        con = None
        if how.get("lock"):
            con = sqlite3.connect(str(work / "taxd.db"), isolation_level=None)
            con.execute("BEGIN IMMEDIATE")
        try:
            status, err = first_start(taxd_bin, work, how.get("preexec"), how.get("env_extra"),
                                      how.get("args", ()))
        finally:
            if con is not None:
                con.rollback()
                con.close()
        version = user_version(work / "taxd.db")
        if status is None:
            assert not how.get("lock"), f"the new binary started on a locked database:\n{err}"
            if version != release["version"]:
                continue      # it migrated regardless: see the assertion after the loop
            assert nothing_to_migrate, f"{name}: started at the release's version {version} with a migration pending"
        else:
            assert status != 0
            if version != release["version"] and not how.get("lock"):
                # the migration committed whole (a small one fits under the
                # file size limit) and a later write of the start failed:
                # the key fingerprints' first record, refused as disk full
                assert version == latest_version(taxd_bin, tmp_path), f"{name}: stopped at {version}"
                assert "schema migration" not in err, err
                continue
            assert "schema migration" in err, f"{name}: the failure does not name the migration:\n{err}"
            if how.get("lock"):
                assert "locked" in err, err
            else:
                failed_mid_migration.append(name)
            assert db_digest(work) == before, f"{name}: the failed upgrade changed the database files"
            assert version == release["version"]
        assert_same(release["records"], record_all(release["old"], work, release["fx"], release["args"]),
                    f"the release after a failed upgrade ({name})")
    assert nothing_to_migrate or failed_mid_migration, (
        "neither a 32 KiB file size limit nor TAXD_TEST_FAIL_MIGRATION=1 (with --test-hooks) made the "
        "migration fail: a migration this small needs the test hook (run every pending script, then "
        "roll back and fail naming the schema migration)")
