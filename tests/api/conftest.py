"""Black-box harness for the taxd API tests.

Starts the real binary ($TAXD_BIN, default build/taxd) on a free port with a
temporary database, drives it over real HTTP with `requests`, and runs the
operator CLI (`taxd admin`) against the same database. With TAXD_TEST_PG set (the
URL of a role that may CREATE DATABASE, e.g. from `tests/pg/cluster.sh env`), each
server's workdir gets a fresh PostgreSQL database instead of workdir/taxd.db, and
key files live in workdir/keys (--key-dir); see `Database`. Every server is stopped
with SIGTERM at teardown and must exit with status 0: under the sanitizer build
a non-zero status is a leak or sanitizer report, shown from the stderr tail.

Cross-cutting rules are checked on every response that goes through `Api`:
  - "Every response carries the header x-request-id" (present, non-empty, and
    never seen before on that server);
  - JSON bodies come with content-type application/json.
"""
import base64
import ctypes
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
import requests
import yaml
from jsonschema import Draft202012Validator, RefResolver

REPO = Path(__file__).resolve().parents[2]
TAXD_BIN = os.environ.get("TAXD_BIN") or str(REPO / "build" / "taxd")
# The admin URL of a PostgreSQL cluster (tests/pg/cluster.sh env): when set, every
# server runs on a database of its own there instead of a SQLite file.
TAXD_TEST_PG = os.environ.get("TAXD_TEST_PG") or None
OPENAPI_PATH = REPO / "docs" / "openapi.yaml"

# Generous bounds: 2 shared cores, ASan 2-3x slower.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
ADMIN_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 30.0
SETTINGS_PROPAGATION_S = 3.0   # contract: "within one second"; polled up to ~3 s

UUID4_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I)
RFC3339_MS_Z_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
RL_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining")

INVALID_TOKEN = {"error": "Unauthorized", "message": "Invalid token"}
INVALID_HEADER = {"error": "Unauthorized", "message": "Invalid authorization header"}
INVALID_CLIENT = {"error": "Unauthorized", "message": "Invalid client credentials"}
GATEWAY_DENY = {"Message": "User is not authorized to access this resource"}
FORBIDDEN = {"error": "Forbidden", "message": "Forbidden"}
NODE_SHED = {"error": "Too Many Requests", "message": "Too Many Requests"}
ENDPOINT_LIMIT = {"error": "rate_limit_exceeded", "message": "Too many requests."}
TIMEOUT_BODY = {"message": "Endpoint request timed out"}
TENANT_LIMIT_RE = re.compile(r"^Rate limit exceeded\. Retry in (\d+) seconds\.$")


def poll(fn, timeout, interval=0.05, what="condition", describe=None):
    """Calls fn until it returns a truthy value or `timeout` seconds pass.
    Returns that value; raises AssertionError naming `what` otherwise (and
    what describe() says of the state then, when fn's falsy value cannot).
    This is a bounded wait for an observable state, not a sleep used as a
    barrier."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            seen = f"; {describe()}" if describe is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value {last!r}{seen}")
        time.sleep(interval)


# --------------------------------------------------------------------------- CLI

class AdminError(Exception):
    pass


def run_taxd(args, env=None, timeout=ADMIN_TIMEOUT_S):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("TAXD_"):
            del e[k]
    if env:
        e.update(env)
    return subprocess.run([TAXD_BIN, *args], capture_output=True, text=True, timeout=timeout, env=e)


def db_args(db):
    """The options that name database `db` to taxd: a Database's own (--db, and
    --key-dir on PostgreSQL), or --db PATH for a bare path."""
    if isinstance(db, Database):
        return db.args()
    return ["--db", str(db)]


def admin_raw(db, *args):
    return run_taxd(["admin", *db_args(db), *args])


def admin(db, *args):
    """Runs `taxd admin --db DB args...`, asserting the success contract
    (exit 0, one JSON object on stdout) and returning the parsed object."""
    p = admin_raw(db, *args)
    if p.returncode != 0:
        raise AdminError(f"taxd admin {' '.join(args)} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    try:
        out = json.loads(p.stdout)
    except ValueError as exc:
        raise AdminError(f"taxd admin {' '.join(args)} printed non-JSON stdout {p.stdout!r}: {exc}")
    assert isinstance(out, dict), out
    return out


# ---------------------------------------------------------------------- databases

class Database:
    """The database a server (or an admin command) runs on, backend-neutral:
    `args()` are the options naming it to taxd (`env()` the same as TAXD_*
    variables), `key_path(name)` the key file `name` ("token", "secret",
    "tin", "links"), `sql(query, params)` runs one statement and returns its
    rows as tuples, `tables()` names the tables. Tests that inspect or tweak
    rows use these, so they run on both backends; tests about SQLite itself
    are marked `sqlite_only` and may use the file (`os.fspath(db)`)."""
    backend = None

    def row_counts(self):
        """{table: rows} of every table, in one statement."""
        names = self.tables()
        if not names:
            return {}
        q = " UNION ALL ".join(f"SELECT '{n}', count(*) FROM \"{n}\"" for n in names)
        return {n: c for n, c in self.sql(q)}


def _split_placeholders(query):
    """[(text, index-or-None)]: the query cut at its ?/?N placeholders (outside
    quotes), each with the 0-based parameter it stands for."""
    out, buf, i, nxt, quote = [], [], 0, 0, None
    while i < len(query):
        c = query[i]
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
            buf.append(c)
        elif c == "?":
            j = i + 1
            while j < len(query) and query[j].isdigit():
                j += 1
            if j > i + 1:
                idx = int(query[i + 1:j]) - 1
            else:
                idx = nxt
            nxt = idx + 1
            out.append(("".join(buf), idx))
            buf = []
            i = j
            continue
        else:
            buf.append(c)
        i += 1
    out.append(("".join(buf), None))
    return out


def pg_literal(v):
    """A Python value as a PostgreSQL literal (standard_conforming_strings is on:
    only the quote doubles). Booleans are BIGINT 0/1 in taxd's schema."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "'\\x" + bytes(v).hex() + "'::bytea"
    if isinstance(v, str):
        if "\0" in v:
            raise ValueError("PostgreSQL text cannot hold NUL")
        return "'" + v.replace("'", "''") + "'"
    raise TypeError(f"no PostgreSQL literal for {type(v).__name__}")


def pg_inline(query, params=()):
    """`query` (SQLite's ?/?N placeholders) with `params` written in as literals."""
    parts = _split_placeholders(query)
    return "".join(text + (pg_literal(params[idx]) if idx is not None else "") for text, idx in parts)


_BYTEA_RE = re.compile(r"^\\x(?:[0-9a-f]{2})*$")


def _pg_value(v):
    # json renders bytea as "\x<hex>"; no text taxd stores starts that way.
    if isinstance(v, str) and _BYTEA_RE.match(v):
        return bytes.fromhex(v[2:])
    return v


def _psql_bin():
    found = shutil.which("psql")
    if found:
        return found
    cands = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    if not cands:
        raise AssertionError("TAXD_TEST_PG is set but psql is not installed (make deps)")
    return str(cands[-1])


def psql(url, sql_text, timeout=ADMIN_TIMEOUT_S):
    """Runs `sql_text` through psql on `url` (unaligned, tuples only); returns stdout.
    The error names the statement, never the URL (it holds a password)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    # on stdin: a script may be larger than one argument may be (128 KiB)
    p = subprocess.run([_psql_bin(), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", "-"],
                       input=sql_text, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise AssertionError(f"psql failed ({p.returncode}) on {sql_text[:300]!r}: {p.stderr.strip()}")
    return p.stdout


def _with_dbname(url, dbname):
    u = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + dbname, u.query, u.fragment))


class SqliteDatabase(Database):
    """A SQLite file: exactly what the suite always used (workdir/taxd.db, key
    files beside it as <db>.<name>.key). os.fspath()/str() give the path."""
    backend = "sqlite"

    def __init__(self, path):
        self.path = Path(path)

    def __fspath__(self):
        return str(self.path)

    def __str__(self):
        return str(self.path)

    def __repr__(self):
        return f"SqliteDatabase({str(self.path)!r})"

    def args(self):
        return ["--db", str(self.path)]

    def env(self):
        """The environment equivalent of args() (TAXD_DB, TAXD_KEY_DIR)."""
        return {"TAXD_DB": str(self.path)}

    def size_bytes(self):
        """Bytes the database takes: the file and its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
        return total

    def tables(self):
        return [r[0] for r in self.sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]

    def key_path(self, name):
        return Path(f"{self.path}.{name}.key")

    def rows(self, query, params=()):
        con = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        try:
            # PostgreSQL always checks foreign keys; so does this, as taxd's own connections do.
            con.execute("PRAGMA foreign_keys = ON")
            cur = con.execute(query, params)
            found = cur.fetchall()
            names = [d[0] for d in cur.description] if cur.description else []
            return [dict(zip(names, r)) for r in found]
        finally:
            con.close()

    def sql(self, query, params=()):
        con = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        try:
            # PostgreSQL always checks foreign keys; so does this, as taxd's own connections do.
            con.execute("PRAGMA foreign_keys = ON")
            return [tuple(r) for r in con.execute(query, params).fetchall()]
        finally:
            con.close()

    def script(self, statements):
        """[(query, params)] in one write transaction."""
        con = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        try:
            con.execute("PRAGMA foreign_keys = ON")
            con.execute("BEGIN IMMEDIATE")
            for query, params in statements:
                con.execute(query, params)
            con.execute("COMMIT")
        finally:
            con.close()

    def write_held(self):
        """True while some connection holds the write lock: a BEGIN IMMEDIATE
        that does not wait fails with 'database is locked'."""
        con = sqlite3.connect(str(self.path), timeout=0, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            assert "locked" in str(exc) or "busy" in str(exc), exc
            return True
        else:
            con.execute("ROLLBACK")
            return False
        finally:
            con.close()

    def drop(self):
        pass


class PgDatabase(Database):
    """A database of its own in the TAXD_TEST_PG cluster (taxd_t<random>, owned
    by the URL's role), key files in workdir/keys (--key-dir). Not a path:
    os.fspath()/str() fail, so a test that opens the SQLite file and is not
    marked sqlite_only fails loudly instead of passing on a file nobody uses."""
    backend = "postgresql"

    def __init__(self, workdir, admin_url):
        self.name = "taxd_t" + secrets.token_hex(8)
        self.admin_url = admin_url
        self.url = _with_dbname(admin_url, self.name)
        self.key_dir = Path(workdir) / "keys"
        self.key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        psql(admin_url, f'CREATE DATABASE "{self.name}"')
        self.dropped = False

    def _not_a_file(self):
        raise TypeError(f"{self.name} is a PostgreSQL database, not a SQLite file: "
                        "use db.sql()/key_path(), or mark the test sqlite_only")

    def __fspath__(self):
        self._not_a_file()

    def __str__(self):
        self._not_a_file()

    def __repr__(self):
        return f"PgDatabase({self.name!r})"

    def args(self):
        return ["--db", self.url, "--key-dir", str(self.key_dir)]

    def env(self):
        return {"TAXD_DB": self.url, "TAXD_KEY_DIR": str(self.key_dir)}

    def size_bytes(self):
        return self.sql("SELECT pg_database_size(current_database())")[0][0]

    def tables(self):
        return [r[0] for r in self.sql(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")]

    def key_path(self, name):
        return self.key_dir / f"{name}.key"

    def sql(self, query, params=()):
        return [tuple(v for _, v in row) for row in self._pairs(query, params)]

    def rows(self, query, params=()):
        return [dict(row) for row in self._pairs(query, params)]

    def script(self, statements):
        body = ";\n".join(pg_inline(q, p).strip().rstrip(";") for q, p in statements)
        psql(self.url, f"BEGIN;\n{body};\nCOMMIT;\n", timeout=120)

    def write_held(self):
        """True while another session holds a transaction open that has written
        (or sits idle inside one, as a paused write does): PostgreSQL's nearest
        to SQLite's write lock."""
        return self.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND pid <> pg_backend_pid()"
                        " AND (backend_xid IS NOT NULL OR state = 'idle in transaction')")[0][0] > 0

    def _pairs(self, query, params):
        """Rows as [(column, value)] lists, in column order."""
        q = pg_inline(query, params).strip().rstrip(";")
        head = q.split(None, 1)[0].upper() if q else ""
        if head in ("SELECT", "WITH", "VALUES"):
            wrapped = f"SELECT coalesce(json_agg(q), '[]') FROM ({q}) q"
        elif re.search(r"\bRETURNING\b", q, re.I):
            wrapped = f"WITH q AS ({q}) SELECT coalesce(json_agg(q), '[]') FROM q"
        else:
            psql(self.url, q)
            return []
        rows = json.loads(psql(self.url, wrapped), object_pairs_hook=lambda pairs: pairs)
        return [[(k, _pg_value(v)) for k, v in row] for row in rows]

    def drop(self):
        """Best-effort: a failed drop leaves a database in a throw-away cluster."""
        if self.dropped:
            return
        self.dropped = True
        try:
            psql(self.admin_url, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        except (AssertionError, subprocess.TimeoutExpired):
            pass


# Every PostgreSQL database made so far, by (workdir, name): a second Server on
# the same workdir (a restart) finds the first one's database, as it finds the
# file on SQLite. Dropped when the test (or module, or session) that made them ends.
_PG_DATABASES = {}


def database_for(workdir, name="taxd.db"):
    """The database of `workdir`: workdir/<name> on SQLite, the workdir's own
    PostgreSQL database when TAXD_TEST_PG is set."""
    workdir = Path(workdir)
    if not TAXD_TEST_PG:
        return SqliteDatabase(workdir / name)
    key = (str(workdir.resolve()), name)
    db = _PG_DATABASES.get(key)
    if db is None or db.dropped:
        db = PgDatabase(workdir, TAXD_TEST_PG)
        _PG_DATABASES[key] = db
    return db


def _drop_databases_made_since(mark):
    for key in list(_PG_DATABASES)[mark:]:
        _PG_DATABASES.pop(key).drop()


# ------------------------------------------------------------------------ server

def _die_with_parent():
    """In the child before exec: SIGTERM it if pytest dies, so that no server
    outlives an interrupted run."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Server:
    def __init__(self, workdir, args=(), env=None, use_flags=True):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db = database_for(self.workdir)
        self.stderr_path = self.workdir / "taxd.stderr"
        self.port = None
        self.proc = None
        self.seen_request_ids = set()
        cmd = [TAXD_BIN, "serve"]
        if use_flags:
            cmd += ["--listen", "127.0.0.1:0", *self.db.args()[:2], "--threads", "8", *self.db.args()[2:]]
        cmd += list(args)
        self.cmd = cmd
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("TAXD_"):
                del self.env[k]
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        if env:
            self.env.update(env)

    # -- lifecycle
    def start(self):
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, env=self.env, cwd=self.workdir,
                                     preexec_fn=_die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self._find_listening()
            if line is not None:
                assert isinstance(line.get("port"), int) and line["port"] > 0, \
                    f"start-up line needs an integer port: {line}"
                self.port = line["port"]
                self.listening_line = line
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"taxd serve exited {self.proc.returncode} before listening:\n{self.stderr_tail()}")
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError(f"taxd serve printed no 'listening' line within {START_TIMEOUT_S}s:\n{self.stderr_tail()}")

    def _find_listening(self):
        try:
            text = self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return None
        for raw in text.splitlines():
            raw = raw.strip()
            if not raw.startswith("{"):
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("msg") == "listening":
                return obj
        return None

    def stderr_text(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stderr_tail(self, n=60):
        return "\n".join(self.stderr_text().splitlines()[-n:])

    def terminate(self):
        """SIGTERM; returns the exit status (waits up to STOP_TIMEOUT_S)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._err.close()
                raise AssertionError(f"taxd did not stop within {STOP_TIMEOUT_S}s of SIGTERM:\n{self.stderr_tail()}")
        self._err.close()
        return self.proc.returncode

    def stop_and_check(self):
        """Rule: SIGTERM stops the server gracefully with exit status 0 (under
        ASan a non-zero status is a sanitizer or leak report)."""
        rc = self.terminate()
        assert rc == 0, f"taxd exited {rc} after SIGTERM (sanitizer/leak report?):\n{self.stderr_tail()}"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def key_path(self, name):
        """The key file `name` ("token", "secret", "tin", "links") of this
        server's database: <db>.<name>.key on SQLite, <key-dir>/<name>.key on
        PostgreSQL."""
        return self.db.key_path(name)

    @property
    def key_file(self):
        return self.key_path("token")

    def sql(self, query, params=()):
        """One statement on this server's database (SQLite's ?/?N placeholders),
        its rows as tuples: see Database.sql."""
        return self.db.sql(query, params)

    def signing_keys(self):
        """[(kid, key bytes)] from the token key file; the first line signs."""
        keys = []
        for line in self.key_file.read_text().splitlines():
            if line.strip():
                kid, b64 = line.split()
                keys.append((kid, base64.b64decode(b64)))
        assert keys, "empty token key file"
        return keys

    def open_tin(self, tenant_id, record_uuid, sealed):
        """The clear TIN of a sealed column value, opened as the spec of the
        tenant records says it is sealed: AES-256-GCM under the key in
        the tin key file (base64, one line), sealed = 12-byte nonce, ciphertext,
        16-byte tag, associated data "<tenant_id>\\n<record_uuid>". Raises
        cryptography's InvalidTag when it does not open."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        key = base64.b64decode(self.key_path("tin").read_text().strip())
        assert len(key) == 32, "the TIN key is not an AES-256 key"
        aad = f"{tenant_id}\n{record_uuid}".encode()
        return AESGCM(key).decrypt(sealed[:12], sealed[12:], aad).decode()

    # -- helpers bound to this server
    def admin(self, *args):
        return admin(self.db, *args)

    def admin_raw(self, *args):
        return admin_raw(self.db, *args)

    def api(self):
        return Api(self)

    def new_tenant(self, name="t", scopes=None):
        """A fresh tenant (own buckets) and, when scopes is given, a second
        credential with those scopes. Returns a Tenant."""
        t = self.admin("tenant", "create", "--name", name)
        tenant = Tenant(self, t["tenant_id"], t["client_id"], t["client_secret"])
        if scopes is not None:
            c = self.admin("credentials", "create", "--tenant", tenant.tenant_id, "--scopes", scopes)
            tenant = Tenant(self, c["tenant_id"], c["client_id"], c["client_secret"])
        return tenant


class Tenant:
    def __init__(self, server, tenant_id, client_id, client_secret):
        self.server = server
        self.tenant_id = tenant_id
        self.client_id = client_id
        self.client_secret = client_secret
        self._token = None

    def mint(self, **extra):
        body = {"grant_type": "client_credentials", "client_id": self.client_id,
                "client_secret": self.client_secret}
        body.update(extra)
        r = self.server.api().post("/v1/oauth/token", json=body)
        assert r.status_code == 200, f"minting failed: {r.status_code} {r.text}"
        return r.json()["access_token"]

    @property
    def token(self):
        if self._token is None:
            self._token = self.mint()
        return self._token

    def auth(self, token=None):
        return {"authorization": f"Bearer {token or self.token}"}

    def request(self, method, path, token=None, **kw):
        """Any method with this tenant's token (or `token`, e.g. an owner's)."""
        headers = dict(kw.pop("headers", {}) or {})
        headers.update(self.auth(token))
        return self.server.api().request(method, path, headers=headers, **kw)

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token, **kw)

    def new_owner(self, owner_id, owner_type="individual"):
        """Creates account owner `owner_id`; returns its uuid."""
        r = self.request("POST", "/v1/account-owners",
                         json={"id": owner_id, "name": "Owner " + owner_id, "account_owner_type": owner_type})
        assert r.status_code == 201, r.text
        return body(r)["data"]["uuid"]

    def owner_token(self, owner_id):
        """An account-owner token for `owner_id` (POST /v1/oauth/account-owner-token)."""
        r = self.server.api().post("/v1/oauth/account-owner-token", json={
            "grant_type": "client_credentials", "client_id": self.client_id,
            "client_secret": self.client_secret, "account_owner_id": owner_id})
        assert r.status_code == 200, r.text
        return body(r)["access_token"]


class Api:
    """Thin requests wrapper. Each request uses a fresh connection (no pooled
    keep-alive state between tests) and is checked for x-request-id."""

    def __init__(self, server):
        self.server = server

    def request(self, method, path, **kw):
        kw.setdefault("timeout", HTTP_TIMEOUT_S)
        kw.setdefault("allow_redirects", False)
        with requests.Session() as s:
            r = s.request(method, self.server.url + path, **kw)
        check_request_id(self.server, r)
        check_json_content_type(r)
        check_against_openapi(r)
        return r

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)


class _RawRequest:
    def __init__(self, method, path_url):
        self.method = method
        self.path_url = path_url


class RawResponse:
    """The requests.Response subset the checks use, for requests sent with
    http.client (requests/urllib3 re-encode malformed escapes such as %zz)."""

    def __init__(self, method, target, status, headers, content):
        self.request = _RawRequest(method, target)
        self.status_code = status
        self.headers = requests.structures.CaseInsensitiveDict(headers)
        self.content = content

    @property
    def text(self):
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


def raw_request(server, method, target, headers=None, body=None):
    """Sends `target` byte for byte (no re-encoding) and checks x-request-id."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=HTTP_TIMEOUT_S)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("content-length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        r = RawResponse(method, target, resp.status, resp.getheaders(), resp.read())
    finally:
        conn.close()
    check_request_id(server, r)
    check_json_content_type(r)
    check_against_openapi(r)
    return r


def check_request_id(server, r):
    """Rule: "Every response carries the header x-request-id" (and ids are
    unique across requests)."""
    rid = r.headers.get("x-request-id")
    assert rid, f"{r.request.method} {r.request.path_url} -> {r.status_code} has no x-request-id header"
    assert rid not in server.seen_request_ids, f"x-request-id {rid!r} was already used on an earlier response"
    server.seen_request_ids.add(rid)


def check_json_content_type(r):
    """Rule: JSON bodies are sent with content-type application/json."""
    if r.status_code == 204 or r.request.path_url.startswith("/metrics"):
        return
    ct = r.headers.get("content-type", "")
    if r.content:
        assert ct.split(";")[0].strip().lower() == "application/json", \
            f"{r.request.method} {r.request.path_url} -> {r.status_code}: content-type {ct!r}, body {r.content[:200]!r}"


def body(r):
    try:
        return r.json()
    except ValueError:
        raise AssertionError(f"{r.status_code} body is not JSON: {r.content[:300]!r}")


def assert_no_rl_headers(r):
    """Rule: "A 401 carries neither" rate-limit header; they appear only after a token was verified."""
    present = [h for h in RL_HEADERS if h in r.headers]
    assert not present, f"{r.status_code} {r.request.path_url} carries {present}"


def assert_rl_headers(r):
    """Rule: x-ratelimit-limit and x-ratelimit-remaining on authenticated responses."""
    for h in RL_HEADERS:
        assert h in r.headers, f"{r.status_code} {r.request.path_url} lacks {h}"
        assert re.fullmatch(r"\d+", r.headers[h]), f"{h}: {r.headers[h]!r} is not an integer"
    return int(r.headers["x-ratelimit-limit"]), int(r.headers["x-ratelimit-remaining"])


# ------------------------------------------------------------------------- JWTs

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge_jwt(header, payload, key=None, alg="HS256"):
    """Builds a JWT by hand (so that broken headers are possible)."""
    h = b64url(json.dumps(header, separators=(",", ":")).encode())
    p = b64url(json.dumps(payload, separators=(",", ":")).encode())
    signing_input = f"{h}.{p}".encode()
    if key is None:
        sig = b""
    else:
        digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
        sig = hmac.new(key, signing_input, digest).digest()
    return f"{h}.{p}.{b64url(sig)}"


# ---------------------------------------------------------------------- OpenAPI

class OpenApi:
    def __init__(self, path=OPENAPI_PATH):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.resolver = RefResolver.from_schema(self.doc)

    def deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            _, obj = self.resolver.resolve(obj["$ref"])
        return obj

    def schema_validator(self, schema):
        return Draft202012Validator(schema, resolver=self.resolver)

    def operation_response(self, method, template, status):
        paths = self.doc["paths"]
        assert template in paths, f"docs/openapi.yaml documents no path {template}"
        op = paths[template].get(method.lower())
        assert op is not None, f"docs/openapi.yaml documents no {method} {template}"
        responses = op["responses"]
        resp = responses.get(str(status)) or responses.get("default")
        assert resp is not None, f"docs/openapi.yaml documents no {status} for {method} {template}"
        return self.deref(resp)

    def check_response(self, resp_obj, r, where):
        # required headers
        for name, h in (resp_obj.get("headers") or {}).items():
            h = self.deref(h)
            if h.get("required"):
                assert name.lower() in (k.lower() for k in r.headers), \
                    f"{where}: documented required header {name} missing"
            schema = h.get("schema") or {}
            if name in r.headers and schema.get("type") == "integer":
                value = r.headers[name].strip()
                assert re.fullmatch(r"\d+", value), f"{where}: header {name}={value!r} not an integer"
                errors = [e.message for e in self.schema_validator(schema).iter_errors(int(value))]
                assert not errors, f"{where}: header {name}={value!r} does not match docs/openapi.yaml: {errors}"
        content = resp_obj.get("content") or {}
        if not content:
            # documented without a body (204): there must be none
            assert not r.content, f"{where}: documented without a body, got {r.text[:200]!r}"
            return
        ct = r.headers.get("content-type", "").split(";")[0].strip().lower()
        media = None
        for k, v in content.items():
            if k.split(";")[0].strip().lower() == ct:
                media = v
        assert media is not None, f"{where}: content-type {ct!r} not documented (have {list(content)})"
        schema = media.get("schema")
        if schema is not None and ct == "application/json":
            errors = sorted(self.schema_validator(schema).iter_errors(body(r)), key=lambda e: list(e.path))
            assert not errors, f"{where}: body {r.text[:500]} does not match docs/openapi.yaml: " + \
                "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])

    def check(self, r, method, template):
        """Validates a response against the documented response for its status."""
        resp_obj = self.operation_response(method, template, r.status_code)
        self.check_response(resp_obj, r, f"{method} {template} -> {r.status_code}")

    def check_component(self, r, name):
        resp_obj = self.deref({"$ref": f"#/components/responses/{name}"})
        self.check_response(resp_obj, r, f"components/responses/{name} ({r.status_code})")


_OPENAPI = None


def shared_openapi():
    global _OPENAPI
    if _OPENAPI is None:
        _OPENAPI = OpenApi()
    return _OPENAPI


def _template_for(doc_paths, path):
    """The documented template a raw path belongs to (literal segments first), or None."""
    if path in doc_paths:
        return path
    segs = path.split("/")
    for t in doc_paths:
        tsegs = t.split("/")
        if len(tsegs) == len(segs) and all(
                (ts.startswith("{") and ts.endswith("}") and s != "") or ts == s for ts, s in zip(tsegs, segs)):
            return t
    return None


def check_against_openapi(r):
    """Every response the suite sees is checked against docs/openapi.yaml: the
    documented response for its operation and status (a status the document
    does not list for that operation fails), or the router's 404/405."""
    oa = shared_openapi()
    path = r.request.path_url.split("?")[0]
    if path.startswith("/_test/") and r.status_code != 404:
        return  # test hooks are not part of the public contract
    template = _template_for(oa.doc["paths"], path)
    method = r.request.method.lower()
    if template is None:
        assert r.status_code == 404, f"{r.request.method} {path}: an undocumented path answered {r.status_code}"
        oa.check_component(r, "RouterNotFound")
    elif method not in oa.doc["paths"][template]:
        assert r.status_code == 405, f"{r.request.method} {path}: an undocumented method answered {r.status_code}"
        oa.check_component(r, "MethodNotAllowed")
    else:
        oa.check(r, r.request.method, template)


# --------------------------------------------------------------------- fixtures

def pytest_collection_modifyitems(config, items):
    """Tests about SQLite itself (its file, its lock, its WAL, its releases) are
    marked sqlite_only and skipped on PostgreSQL."""
    if not TAXD_TEST_PG:
        return
    skip = pytest.mark.skip(reason="sqlite_only: about SQLite itself; TAXD_TEST_PG runs PostgreSQL")
    for item in items:
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)


# The PostgreSQL databases a test, a module or the session made are dropped when
# it ends (autouse fixtures of a scope are set up before its other fixtures, so
# they are torn down after the servers are stopped). Nothing to do on SQLite.
@pytest.fixture(scope="session", autouse=True)
def _pg_databases_of_session():
    mark = len(_PG_DATABASES)
    yield
    _drop_databases_made_since(mark)


@pytest.fixture(scope="module", autouse=True)
def _pg_databases_of_module():
    mark = len(_PG_DATABASES)
    yield
    _drop_databases_made_since(mark)


@pytest.fixture(autouse=True)
def _pg_databases_of_test():
    mark = len(_PG_DATABASES)
    yield
    _drop_databases_made_since(mark)


def _require_binary():
    if not (os.path.isfile(TAXD_BIN) and os.access(TAXD_BIN, os.X_OK)):
        pytest.fail(f"taxd binary {TAXD_BIN} does not exist: run `make build/taxd` or set TAXD_BIN", pytrace=False)


@pytest.fixture(scope="session")
def taxd_bin():
    _require_binary()
    return TAXD_BIN


@pytest.fixture(scope="session")
def openapi():
    return shared_openapi()


@pytest.fixture(scope="module")
def server(tmp_path_factory, taxd_bin):
    """One default server per test module; each test makes its own tenants
    so buckets never collide."""
    s = Server(tmp_path_factory.mktemp("srv")).start()
    yield s
    s.stop_and_check()


@pytest.fixture
def make_server(tmp_path_factory, taxd_bin):
    """Factory for servers with their own options, stopped (and checked for
    exit status 0) at the end of the test."""
    started = []

    def make(*args, env=None, use_flags=True):
        s = Server(tmp_path_factory.mktemp("srv"), args=args, env=env, use_flags=use_flags).start()
        started.append(s)
        return s

    yield make
    failures = []
    for s in started:
        try:
            s.stop_and_check()
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n\n".join(failures)


@pytest.fixture
def hooks_server(make_server):
    return make_server("--test-hooks")


@pytest.fixture
def api(server):
    return server.api()


@pytest.fixture
def tenant(server):
    return server.new_tenant("tenant")


# ---------------------------------------------------------------------- metrics

_METRIC_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text format -> {(name, ((label, value), ...)): float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC_RE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.groups()
        lab = tuple(sorted(_LABEL_RE.findall(labels or "")))
        key = (name, lab)
        assert key not in out, f"duplicate series {line!r}"
        out[key] = float(value)
    return out


def metric(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def get_metrics(server):
    """The parsed /metrics. A node-shed 429 (servers run with --max-in-flight 1)
    is retried, within a bound."""
    def fetch():
        r = server.api().get("/metrics")
        assert r.status_code in (200, 429), r.text
        return [r] if r.status_code == 200 else None
    r = poll(fetch, 10, what="/metrics to answer 200")[0]
    return parse_metrics(r.text)


def set_rule(server, rate, burst, tenant=None, route=None):
    args = ["ratelimit", "set"]
    if tenant is not None:
        args += ["--tenant", tenant.tenant_id]
    if route is not None:
        args += ["--route", route]
    args += ["--rate", str(rate), "--burst", str(burst)]
    return server.admin(*args)


def wait_for_limit_header(tenant, path, burst):
    """Polls an authenticated GET until x-ratelimit-limit shows `burst`: the
    operator's rule reached the running server (contract: within one second)."""
    def probe():
        r = tenant.get(path)
        return r.headers.get("x-ratelimit-limit") == str(burst)
    poll(probe, SETTINGS_PROPAGATION_S, what=f"x-ratelimit-limit {burst} on {path}")


def probe_get(tenant, path, token=None, timeout=2.0):
    """One GET with a short timeout, for probing while a test hook holds a
    server thread: libmicrohttpd may queue a new connection on the thread that
    is held, so a probe can wait for the hold to end; give up on it (None)
    and probe again rather than wait."""
    try:
        return tenant.get(path, token=token, timeout=timeout)
    except requests.exceptions.Timeout:
        return None
