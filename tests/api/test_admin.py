"""The operator CLI: `taxd admin ...`, `taxd version`, `taxd --help`.
Success prints one JSON object on stdout and exits 0; an error prints
{"error": "..."} on stderr, nothing on stdout, and exits non-zero."""
import base64
import hashlib
import hmac
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import (RFC3339_MS_Z_RE, SETTINGS_PROPAGATION_S, TAXD_BIN, UUID4_RE, admin, admin_raw, database_for,
                      poll, run_taxd)

KNOWN_SCOPES = ["reports", "accounts", "assets", "transactions", "inventory", "tax-documents"]


@pytest.fixture
def db(tmp_path, taxd_bin):
    return database_for(tmp_path, "admin.db")


def assert_cli_error(p):
    """Errors: a JSON object {"error": "..."} on stderr, nothing on stdout, non-zero exit."""
    assert p.returncode != 0, f"expected failure, got exit 0 with stdout {p.stdout!r}"
    assert p.stdout == "", f"stdout must be empty on error: {p.stdout!r}"
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines, "stderr is empty"
    objs = []
    for ln in lines:
        try:
            objs.append(json.loads(ln))
        except ValueError:
            pass
    errs = [o for o in objs if isinstance(o, dict) and isinstance(o.get("error"), str) and o["error"]]
    assert errs, f"no {{\"error\": ...}} object on stderr: {p.stderr!r}"
    return errs[-1]


def test_tenant_create_output(db):
    """`tenant create --name NAME` prints {"tenant_id":<uuid v4>,"client_id","client_secret"}."""
    out = admin(db, "tenant", "create", "--name", "Acme")
    assert set(out) >= {"tenant_id", "client_id", "client_secret"}
    assert UUID4_RE.match(out["tenant_id"])
    assert isinstance(out["client_id"], str) and out["client_id"]
    assert isinstance(out["client_secret"], str) and len(out["client_secret"]) >= 16
    assert out["client_secret"] != out["client_id"]


def _b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize("command", ["tenant", "credentials"])
def test_only_a_keyed_hash_of_the_secret_is_stored(db, command):
    """The secret (at least 256 random bits) is shown only by the command; the
    database keeps only HMAC-SHA256(<db>.secret.key, secret), never the secret."""
    out = admin(db, "tenant", "create", "--name", "hashed")
    if command == "credentials":
        out = admin(db, "credentials", "create", "--tenant", out["tenant_id"], "--scopes", "reports")
    secret = out["client_secret"]
    assert len(_b64decode(secret)) * 8 >= 256, secret
    key = base64.b64decode(db.key_path("secret").read_text().strip())
    assert len(key) == 32
    stored = db.sql("SELECT secret_hash FROM credentials WHERE client_id = ?", (out["client_id"],))[0][0]
    assert stored == hmac.new(key, secret.encode(), hashlib.sha256).digest()
    if db.backend != "sqlite":
        return  # the bytes of the database files: SQLite's files only
    files = [p for p in Path(db).parent.iterdir() if p.name.startswith(Path(db).name) and not p.name.endswith(".key")]
    assert files
    for p in files:
        data = p.read_bytes()
        assert secret.encode() not in data and _b64decode(secret) not in data, f"the secret is in {p.name}"


def test_tenant_create_gives_distinct_ids(db):
    """Each tenant and credential is new: ids and secrets never repeat."""
    outs = [admin(db, "tenant", "create", "--name", "same name") for _ in range(3)]
    for key in ("tenant_id", "client_id", "client_secret"):
        assert len({o[key] for o in outs}) == 3, key


def test_tenant_list(db):
    """`tenant list` prints {"tenants":[{"tenant_id","name","created_at"}]} in creation order."""
    a = admin(db, "tenant", "create", "--name", "First")
    b = admin(db, "tenant", "create", "--name", "Second é")
    out = admin(db, "tenant", "list")
    tenants = out["tenants"]
    assert [t["tenant_id"] for t in tenants] == [a["tenant_id"], b["tenant_id"]]
    assert [t["name"] for t in tenants] == ["First", "Second é"]
    for t in tenants:
        assert RFC3339_MS_Z_RE.match(t["created_at"]), t
        assert "client_secret" not in t, "secrets are never listed"


def test_tenant_list_empty(db):
    """An empty database lists no tenants."""
    assert admin(db, "tenant", "list") == {"tenants": []}


def test_credentials_create_with_scopes(db):
    """`credentials create --tenant ID --scopes s1,s2` prints {"tenant_id","client_id","client_secret","scopes":[...]}."""
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "credentials", "create", "--tenant", t["tenant_id"], "--scopes", "accounts,reports")
    assert out["tenant_id"] == t["tenant_id"]
    assert out["client_id"] and out["client_id"] != t["client_id"]
    assert out["client_secret"]
    assert sorted(out["scopes"]) == ["accounts", "reports"]


def test_credentials_create_all_scopes(db):
    """Every scope name is known."""
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "credentials", "create", "--tenant", t["tenant_id"], "--scopes", ",".join(KNOWN_SCOPES))
    assert sorted(out["scopes"]) == sorted(KNOWN_SCOPES)


def test_credentials_create_without_scopes(db):
    """A credential without --scopes has no scopes (every tenant route): scopes []."""
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "credentials", "create", "--tenant", t["tenant_id"])
    assert out["scopes"] == []


def test_credentials_revoke_output(db):
    """`credentials revoke --client-id ID` prints {"client_id","revoked_at"}."""
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "credentials", "revoke", "--client-id", t["client_id"])
    assert out["client_id"] == t["client_id"]
    assert out["revoked_at"]
    assert RFC3339_MS_Z_RE.match(out["revoked_at"]), out


def test_credentials_revoke_twice_keeps_first_time(db):
    """Revoking twice keeps the first time."""
    t = admin(db, "tenant", "create", "--name", "x")
    first = admin(db, "credentials", "revoke", "--client-id", t["client_id"])
    second = admin(db, "credentials", "revoke", "--client-id", t["client_id"])
    assert second["revoked_at"] == first["revoked_at"]


def test_ratelimit_set_tenant_default(db):
    """`ratelimit set --tenant ID --rate R --burst B` prints the rule as JSON."""
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "ratelimit", "set", "--tenant", t["tenant_id"], "--rate", "5", "--burst", "9")
    assert out["rate"] == 5 and out["burst"] == 9
    assert out.get("tenant_id") == t["tenant_id"]


def test_ratelimit_set_route_all_tenants(db):
    """`ratelimit set --route "METHOD /template" --rate R --burst B` (all tenants) prints the rule."""
    out = admin(db, "ratelimit", "set", "--route", "GET /v1/filers/{filerId}", "--rate", "2", "--burst", "3")
    assert out["rate"] == 2 and out["burst"] == 3
    assert out.get("route") == "GET /v1/filers/{filerId}"


def test_ratelimit_set_route_for_tenant(db):
    t = admin(db, "tenant", "create", "--name", "x")
    out = admin(db, "ratelimit", "set", "--tenant", t["tenant_id"], "--route", "GET /v1/filers",
                "--rate", "1", "--burst", "1")
    assert out["rate"] == 1 and out["burst"] == 1
    assert out.get("route") == "GET /v1/filers"


@pytest.mark.parametrize("args", [
    ["tenant", "create"],                                               # missing --name
    ["tenant", "create", "--name"],                                     # --name without value
    ["tenant", "create", "--name", ""],                                 # empty name
    ["credentials", "create", "--tenant", "00000000-0000-4000-8000-000000000000"],  # unknown tenant
    ["credentials", "create"],                                          # missing --tenant
    ["credentials", "revoke", "--client-id", "nobody"],                 # unknown client
    ["credentials", "revoke"],
    ["ratelimit", "set", "--tenant", "00000000-0000-4000-8000-000000000000", "--rate", "1", "--burst", "1"],
    ["ratelimit", "set", "--route", "GET /v1/nothing", "--rate", "1", "--burst", "1"],
    ["ratelimit", "set", "--route", "GET /v1/filers/default", "--rate", "1", "--burst", "1"],  # raw path, not template
    ["ratelimit", "set", "--route", "DELETE /v1/oauth/token", "--rate", "1", "--burst", "1"],
    ["ratelimit", "set", "--rate", "0", "--burst", "1", "--route", "GET /v1/filers"],
    ["ratelimit", "set", "--rate", "1", "--burst", "0", "--route", "GET /v1/filers"],
    ["ratelimit", "set", "--rate", "x", "--burst", "1", "--route", "GET /v1/filers"],
    ["ratelimit", "set", "--route", "GET /v1/filers", "--burst", "1"],  # missing --rate
    ["tenant", "frobnicate"],
    ["nonsense"],
])
def test_admin_errors(db, args):
    """Errors (unknown tenant, unknown route template, missing --name, bad
    numbers, unknown sub-commands): {"error": "..."} on stderr, nothing on
    stdout, non-zero exit."""
    admin(db, "tenant", "create", "--name", "existing")
    assert_cli_error(admin_raw(db, *args))


def test_admin_unknown_scope(db):
    """An unknown scope is an error naming it."""
    t = admin(db, "tenant", "create", "--name", "x")
    err = assert_cli_error(admin_raw(db, "credentials", "create", "--tenant", t["tenant_id"],
                                     "--scopes", "accounts,superuser"))
    assert "superuser" in err["error"]


def test_admin_errors_do_not_write(db):
    """A failed command changes nothing: no credential or tenant appears."""
    admin(db, "tenant", "create", "--name", "only")
    admin_raw(db, "tenant", "create")
    admin_raw(db, "credentials", "create", "--tenant", "00000000-0000-4000-8000-000000000000")
    assert [t["name"] for t in admin(db, "tenant", "list")["tenants"]] == ["only"]


def test_admin_uses_taxd_db_env(tmp_path, taxd_bin):
    """TAXD_DB is the env equivalent of --db."""
    db = database_for(tmp_path, "env.db")
    p = run_taxd(["admin", "tenant", "create", "--name", "env"], env=db.env())
    assert p.returncode == 0, p.stderr
    out = admin(db, "tenant", "list")
    assert [t["name"] for t in out["tenants"]] == ["env"]


def test_admin_db_defaults_to_var_taxd_db(tmp_path, taxd_bin):
    """Without --db and TAXD_DB the admin works on ./var/taxd.db (created with its directory)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXD_")}
    p = subprocess.run([TAXD_BIN, "admin", "tenant", "create", "--name", "cwd"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    db = tmp_path / "var" / "taxd.db"
    assert db.is_file()
    assert [t["name"] for t in admin(db, "tenant", "list")["tenants"]] == ["cwd"]


def test_version(taxd_bin):
    """`taxd version` prints the version and exits 0."""
    p = run_taxd(["version"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
    assert any(ch.isdigit() for ch in p.stdout)


def test_help(taxd_bin):
    """`taxd --help` prints usage and exits 0; the usage names serve and admin."""
    p = run_taxd(["--help"])
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    assert "serve" in text and "admin" in text


def test_unknown_command_fails(taxd_bin):
    """An unknown command is an error (non-zero exit)."""
    p = run_taxd(["definitely-not-a-command"])
    assert p.returncode != 0
    assert p.stdout == ""


def test_unknown_serve_option_fails(taxd_bin, tmp_path):
    """`taxd serve` with an unknown option refuses to start (non-zero exit)."""
    p = run_taxd(["serve", "--db", str(tmp_path / "x.db"), "--listen", "127.0.0.1:0", "--no-such-option"])
    assert p.returncode != 0


def test_credential_from_admin_mints_on_running_server(server):
    """The admin can run against the database of a running server: a credential
    created while it runs can mint a token at once."""
    t = server.new_tenant("live")
    c = server.admin("credentials", "create", "--tenant", t.tenant_id, "--scopes", "accounts")
    r = server.api().post("/v1/oauth/token", json={"grant_type": "client_credentials", "client_id": c["client_id"],
                                                   "client_secret": c["client_secret"]})
    assert r.status_code == 200, r.text


# ------------------------------------------------------------ tenant delete

TX_PATH = "/v1/transactions/external-id"
REPORTS = "/v1/reports/inventory-summary"
ADDRESS = {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701",
           "country_code": "US"}
ENGINE_WAIT_S = 120.0


def _call(t, method, path, json_body=None, expect=None):
    r = t.server.api().request(method, path, headers=t.auth(), json=json_body)
    if expect is not None:
        assert r.status_code in (expect if isinstance(expect, tuple) else (expect,)), \
            f"{method} {path}: {r.status_code} {r.text[:600]}"
    return r


def _line(code, amount):
    kind = "fiat" if code == "USD" else "crypto"
    return {"asset_amount": {"amount": amount, "asset": {"code": code, "type": kind}}}


def _row_counts(db):
    """Rows of every table of the database, by table, but the shared rate
    buckets (PostgreSQL: the limiter's state, which any request may add to;
    a purge removes the tenant's own, see test_purge_removes_the_rate_buckets)."""
    counts = db.row_counts()
    counts.pop("rate_buckets", None)
    return counts


def _fill_every_kind_of_data(server, t):
    """Rows of the tenant in every table a tenant's data reaches."""
    admin(server.db, "ratelimit", "set", "--tenant", t.tenant_id, "--rate", "500", "--burst", "600")
    server.admin("credentials", "create", "--tenant", t.tenant_id, "--scopes", "reports")
    server.admin("subscription", "create", "--tenant", t.tenant_id, "--url", "https://127.0.0.1:9/hook",
                 "--events", "INVENTORY_UPDATE,FORM_STATUS_UPDATE,ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS")
    _call(t, "POST", "/v1/filers", {"id": "filer-2", "name": "Filer Two", "tin": "12-3456789"}, expect=201)
    _call(t, "POST", "/v1/assets", {"code": "DOGE", "name": "Dogecoin", "type": "crypto", "decimals": 8},
          expect=201)
    _call(t, "POST", "/v1/account-owners", {
        "id": "o1", "name": "Jane Q Public", "account_owner_type": "individual", "tax_country_code": "US",
        "tin": "123-45-6789", "tin_type": "SSN", "address": ADDRESS}, expect=201)
    _call(t, "POST", "/v1/accounts", {"id": "a1", "account_owner_id": "o1", "filer_id": "filer-2"}, expect=201)
    for i, (sent, received) in enumerate([(None, ("BTC", "2")), (("BTC", "0.5"), ("USD", "15000"))]):
        tx = {"id": f"t{i}", "account_id": "a1", "datetime": f"2023-0{i + 1}-01T00:00:00Z",
              "type": "deposit" if sent is None else "trade", "received": [_line(*received)]}
        if sent:
            tx["sent"] = [_line(*sent)]
        _call(t, "POST", TX_PATH, tx, expect=201)
    _call(t, "GET", "/v1/inventory/summaries?account_id=a1", expect=200)  # lots, reliefs, summaries
    _call(t, "POST", "/v1/account-owners/o1/tax-documentation", {
        "document_type": "W-9", "name": "Jane Q Public", "entity_classification": "INDIVIDUAL",
        "tin_type": "SSN", "tin": "123-45-6789", "address": ADDRESS, "certified": True,
        "signature_date": "2024-05-10"}, expect=201)
    # a document made of the submission (the row its PDF download writes;
    # written here directly, so the test does not depend on the PDF route)
    (doc_id, owner_uuid), = server.db.sql("SELECT id, owner_uuid FROM tax_documents WHERE tenant_id = ?",
                                          (t.tenant_id,))
    server.db.sql("INSERT INTO tax_documentation_files (id, tenant_id, owner_uuid, document_id, created_at)"
                  " VALUES (?, ?, ?, ?, ?)", (str(uuid.uuid4()), t.tenant_id, owner_uuid, doc_id, 1))
    vid = _call(t, "POST", "/v1/tin-validations", {"name": "Jane Q Public", "tin": "123-45-6789",
                                                   "tin_type": "SSN"}, expect=202).json()["data"]["validation_id"]
    rid = _call(t, "POST", REPORTS, {}, expect=202).json()["report_id"]
    server.admin("forms", "generate", "--tenant", t.tenant_id, "--tax-year", "2023",
                 "--form-type", "GAIN_LOSS_SUMMARY", "--account", "a1")
    # the engines settle: the TIN check and the report are done
    poll(lambda: _call(t, "GET", f"/v1/tin-validations/{vid}", expect=200).json()["data"]["status"] != "PENDING",
         ENGINE_WAIT_S, interval=0.1, what="the TIN check")
    poll(lambda: _call(t, "GET", f"{REPORTS}/{rid}", expect=200).json()["status"] in ("completed", "failed"),
         ENGINE_WAIT_S, interval=0.1, what="the report")


def test_tenant_delete_refuses_a_tenant_with_data_and_purge_removes_every_row(server):
    """`taxd admin tenant delete` refuses (exit 1, naming what the tenant
    holds, nothing deleted) while the tenant has data; with --purge every
    row of the tenant in every table goes in one transaction (each table's
    row count is back where it was before the tenant existed), a token
    minted before is refused by the running server at once (401 Invalid
    token, though the token cache knows it), the tenant's credentials no
    longer mint, and another tenant is untouched."""
    other = server.new_tenant("bystander")
    _call(other, "POST", "/v1/account-owners", {"id": "b1", "name": "B", "account_owner_type": "entity"},
          expect=201)
    _call(other, "POST", "/v1/accounts", {"id": "b-acc", "account_owner_id": "b1"}, expect=201)
    before = _row_counts(server.db)

    t = server.new_tenant("doomed")
    _fill_every_kind_of_data(server, t)
    filled = _row_counts(server.db)
    reached = {name for name in filled if filled[name] > before.get(name, 0)}
    for name in ("account_owners", "accounts", "transactions", "events", "deliveries", "inventory_lots",
                 "inventory_summaries", "reports", "subscriptions", "subscription_secrets", "tin_checks",
                 "tax_documents", "tax_documentation_current", "tax_documentation_files", "tax_forms",
                 "credentials", "rate_limits"):
        assert name in reached, f"the test must put rows of the tenant in {name}"
    token = t.token
    assert t.get("/v1/filers/default").status_code == 200  # the token cache now holds it

    p = admin_raw(server.db, "tenant", "delete", t.tenant_id)
    err = assert_cli_error(p)
    assert p.returncode == 1
    assert "still holds data" in err["error"] and "--purge" in err["error"]
    assert '"accounts":1' in err["error"] and '"transactions":2' in err["error"]
    assert _row_counts(server.db) == filled
    assert t.get("/v1/filers/default").status_code == 200

    out = admin(server.db, "tenant", "delete", t.tenant_id, "--purge")
    assert out["tenant_id"] == t.tenant_id and out["purged"] is True
    assert out["deleted"]["accounts"] == 1 and out["deleted"]["transactions"] == 2
    assert out["deleted"]["tax_documents"] == 1 and out["deleted"]["tax_documentation_files"] == 1

    def refused():
        r = t.get("/v1/filers/default", token=token)
        return r if r.status_code == 401 else None
    r = poll(lambda: (lambda x: (x,) if x is not None else None)(refused()), SETTINGS_PROPAGATION_S,
             what="the deleted tenant's token to be refused")[0]
    assert r.json() == {"error": "Unauthorized", "message": "Invalid token"}
    r = server.api().post("/v1/oauth/token", json={"grant_type": "client_credentials", "client_id": t.client_id,
                                                   "client_secret": t.client_secret})
    assert r.status_code == 401 and r.json()["message"] == "Invalid client credentials"

    after = _row_counts(server.db)
    expected = dict(before, deleted_tenants=before.get("deleted_tenants", 0) + 1)
    assert after == expected, {k: (before.get(k), after.get(k)) for k in after if after.get(k) != expected.get(k)}
    assert t.tenant_id not in {x["tenant_id"] for x in admin(server.db, "tenant", "list")["tenants"]}
    # the other tenant is untouched
    assert _call(other, "GET", "/v1/accounts/b-acc").status_code == 200
    assert other.get("/v1/filers/default").status_code == 200


def test_tenant_delete_without_data_needs_no_purge_and_voids_its_tokens(server):
    """A tenant holding nothing but what it starts with (its default filer,
    its USD asset, its credentials) is deleted without --purge; its tokens
    stop working too. The tenant may be named positionally or with --tenant;
    an unknown tenant is refused."""
    t = server.new_tenant("empty")
    token = t.token
    assert t.get("/v1/filers/default").status_code == 200
    out = admin(server.db, "tenant", "delete", "--tenant", t.tenant_id)
    assert out == {"tenant_id": t.tenant_id, "purged": False, "deleted": {}}
    poll(lambda: t.get("/v1/filers/default", token=token).status_code == 401, SETTINGS_PROPAGATION_S,
         what="the deleted tenant's token to be refused")
    for args in [("tenant", "delete", t.tenant_id), ("tenant", "delete", "no-such-tenant", "--purge")]:
        p = admin_raw(server.db, *args)
        assert p.returncode == 1 and "no tenant with id" in assert_cli_error(p)["error"]
    for args in [("tenant", "delete"), ("tenant", "delete", "x", "--tenant", "y"), ("tenant", "delete", "x", "--force")]:
        assert admin_raw(server.db, *args).returncode == 2


def test_purge_removes_the_rate_buckets(make_server):
    """The shared rate buckets (keys "api\\n<tenant>\\n<route>") are the
    tenant's too: a purge removes them, and another tenant's stay."""
    s = make_server("--rate-limits", "shared")
    gone, kept = s.new_tenant("gone"), s.new_tenant("kept")
    for t in (gone, kept):
        assert t.get("/v1/filers/default").status_code == 200

    def buckets(tenant_id):
        return s.sql("SELECT count(*) FROM rate_buckets WHERE key LIKE ?", (f"%{tenant_id}%",))[0][0]

    assert int(buckets(gone.tenant_id)) > 0 and int(buckets(kept.tenant_id)) > 0
    admin(s.db, "tenant", "delete", gone.tenant_id, "--purge")
    assert int(buckets(gone.tenant_id)) == 0
    assert int(buckets(kept.tenant_id)) > 0
