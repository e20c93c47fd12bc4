"""Tenant isolation of the tenant records (docs/decisions.md "Tenancy" and
"Tenant records"): every read, write and delete is scoped to the token's
tenant. For account owners, accounts, assets and filers, tenant B can neither
read, change, delete nor learn the existence of any record of tenant A:

  - GET one, PATCH and DELETE (where the resource has them) of A's record
    answer B 404, and that 404 is the one B gets for a record that exists
    nowhere, identical apart from the id;
  - B's lists never contain A's records;
  - references do not cross tenants (B cannot create an account on A's
    owner or filer);
  - two tenants may use the same caller ids independently: B's create of an
    id A uses is 201, not 409, and changes to one never reach the other.

Assets are addressed by uuid or code; both are checked.
"""
import urllib.parse
import uuid

import pytest
import requests

from conftest import (HTTP_TIMEOUT_S, _template_for, assert_rl_headers, body, check_against_openapi,
                      check_json_content_type, check_request_id, shared_openapi)

NOWHERE = "nowhere-at-all"


# ------------------------------------------------------------------ helpers

def send(tenant, method, path, json_body=None):
    """One authenticated request through the suite's response checks; a 204
    (no content type) is checked against the operation's documented 204."""
    kw = {"headers": tenant.auth(), "timeout": HTTP_TIMEOUT_S, "allow_redirects": False}
    if json_body is not None:
        kw["json"] = json_body
    with requests.Session() as s:
        r = s.request(method, tenant.server.url + path, **kw)
    check_request_id(tenant.server, r)
    if r.status_code == 204:
        assert r.content == b""
        oa = shared_openapi()
        oa.operation_response(method, _template_for(oa.doc["paths"], path.split("?")[0]), 204)
        assert_rl_headers(r)
    else:
        check_json_content_type(r)
        check_against_openapi(r)
    return r


def quote(value):
    return urllib.parse.quote(value, safe="")


def created(r, what):
    assert r.status_code == 201, f"create {what}: {r.status_code} {r.text}"
    return body(r)["data"]


class Resource:
    """How the matrix reaches one kind of record."""

    def __init__(self, collection, key, record_id, can_patch, can_delete):
        self.collection = collection
        self.key = key              # the caller's key in records and paths ("id", or "code" for assets)
        self.record_id = record_id  # the caller id both tenants use
        self.can_patch = can_patch
        self.can_delete = can_delete

    def path(self, key):
        return f"{self.collection}/{quote(key)}"

    def create(self, tenant, label):
        raise NotImplementedError

    def patch_body(self):
        return {"name": "Changed by the other tenant"}

    def list_all(self, tenant):
        items, cursor = [], None
        for _ in range(20):
            r = send(tenant, "GET", self.collection + "?limit=100" + (f"&cursor={cursor}" if cursor else ""))
            assert r.status_code == 200, f"list {self.collection}: {r.status_code} {r.text}"
            b = body(r)
            items += b["data"]
            cursor = b["meta"]["next_cursor"]
            if cursor is None:
                return items
        raise AssertionError("more pages than expected")


class Owners(Resource):
    def create(self, tenant, label):
        return created(send(tenant, "POST", self.collection, {
            "id": self.record_id, "name": f"Owner of {label}", "account_owner_type": "individual"}), "owner")


class Accounts(Resource):
    def create(self, tenant, label):
        created(send(tenant, "POST", "/v1/account-owners", {
            "id": "holder", "name": f"Holder of {label}", "account_owner_type": "individual"}), "owner")
        return created(send(tenant, "POST", self.collection, {
            "id": self.record_id, "account_owner_id": "holder", "name": f"Account of {label}"}), "account")


class Assets(Resource):
    def create(self, tenant, label):
        return created(send(tenant, "POST", self.collection, {
            "code": self.record_id, "name": f"Coin of {label}", "type": "crypto"}), "asset")


class Filers(Resource):
    def create(self, tenant, label):
        return created(send(tenant, "POST", self.collection, {
            "id": self.record_id, "name": f"Filer of {label}", "tin": "12-3456789"}), "filer")


RESOURCES = {
    "account-owners": Owners("/v1/account-owners", "id", "shared/id é", can_patch=True, can_delete=False),
    "accounts": Accounts("/v1/accounts", "id", "shared/id é", can_patch=True, can_delete=False),
    "assets": Assets("/v1/assets", "code", "ISO1", can_patch=False, can_delete=True),
    "filers": Filers("/v1/filers", "id", "shared/id é", can_patch=True, can_delete=True),
}
PATCHABLE = [k for k, v in RESOURCES.items() if v.can_patch]
DELETABLE = [k for k, v in RESOURCES.items() if v.can_delete]


@pytest.fixture
def tenants(server):
    return server.new_tenant("tenant-a"), server.new_tenant("tenant-b")


def assert_same_404(r_exists_elsewhere, exists_key, r_nowhere, nowhere_key):
    """B's 404 for A's record is the 404 for a record that exists nowhere,
    identical apart from the id."""
    assert r_exists_elsewhere.status_code == 404, r_exists_elsewhere.text
    assert r_nowhere.status_code == 404, r_nowhere.text
    a, n = body(r_exists_elsewhere), body(r_nowhere)
    assert n["error"] == "Not Found", n
    assert a == {**n, "message": n["message"].replace(nowhere_key, exists_key)}, (a, n)


# ------------------------------------------------------------------ the matrix

@pytest.mark.parametrize("kind", list(RESOURCES))
def test_other_tenant_cannot_read(tenants, kind):
    """GET one: A's record is 404 for B, exactly as a record that exists nowhere."""
    res, (a, b) = RESOURCES[kind], tenants
    record = res.create(a, "A")
    assert send(a, "GET", res.path(res.record_id)).status_code == 200
    assert_same_404(send(b, "GET", res.path(res.record_id)), res.record_id,
                    send(b, "GET", res.path(NOWHERE)), NOWHERE)
    if kind == "assets":  # also addressed by its service uuid
        stranger = str(uuid.uuid4())
        assert_same_404(send(b, "GET", res.path(record["uuid"])), record["uuid"],
                        send(b, "GET", res.path(stranger)), stranger)


@pytest.mark.parametrize("kind", list(RESOURCES))
def test_other_tenant_lists_never_contain_its_records(tenants, kind):
    """B's list holds B's records only: none of A's uuids or caller keys."""
    res, (a, b) = RESOURCES[kind], tenants
    before = res.list_all(b)
    record = res.create(a, "A")
    a_uuids = {item["uuid"] for item in res.list_all(a)}
    assert record["uuid"] in a_uuids
    after = res.list_all(b)
    assert after == before
    assert not a_uuids & {item["uuid"] for item in after}
    assert res.record_id not in [item[res.key] for item in after]


@pytest.mark.parametrize("kind", PATCHABLE)
def test_other_tenant_cannot_change(tenants, kind):
    """PATCH: 404 for B as for a record that exists nowhere; A's record is unchanged."""
    res, (a, b) = RESOURCES[kind], tenants
    res.create(a, "A")
    before = body(send(a, "GET", res.path(res.record_id)))["data"]
    assert_same_404(send(b, "PATCH", res.path(res.record_id), res.patch_body()), res.record_id,
                    send(b, "PATCH", res.path(NOWHERE), res.patch_body()), NOWHERE)
    assert body(send(a, "GET", res.path(res.record_id)))["data"] == before


@pytest.mark.parametrize("kind", DELETABLE)
def test_other_tenant_cannot_delete(tenants, kind):
    """DELETE: 404 for B as for a record that exists nowhere; A's record stays."""
    res, (a, b) = RESOURCES[kind], tenants
    record = res.create(a, "A")
    assert_same_404(send(b, "DELETE", res.path(res.record_id)), res.record_id,
                    send(b, "DELETE", res.path(NOWHERE)), NOWHERE)
    if kind == "assets":
        stranger = str(uuid.uuid4())
        assert_same_404(send(b, "DELETE", res.path(record["uuid"])), record["uuid"],
                        send(b, "DELETE", res.path(stranger)), stranger)
    assert body(send(a, "GET", res.path(res.record_id)))["data"] == record


def test_other_tenants_default_filer_is_not_reachable(tenants):
    """Each tenant's default filer is its own: B's "default" is not A's, and
    B cannot delete or change A's (there is no way to name it but B's own)."""
    a, b = tenants
    fa = body(send(a, "GET", "/v1/filers/default"))["data"]
    fb = body(send(b, "GET", "/v1/filers/default"))["data"]
    assert fa["uuid"] != fb["uuid"]
    r = send(b, "PATCH", "/v1/filers/default", {"name": "B's default"})
    assert r.status_code == 200, r.text
    assert body(send(a, "GET", "/v1/filers/default"))["data"] == fa


@pytest.mark.parametrize("field,a_only,nowhere", [
    ("account_owner_id", "a-only-owner", "no-such-owner"),
    ("filer_id", "a-only-filer", "no-such-filer"),
])
def test_references_do_not_cross_tenants(tenants, field, a_only, nowhere):
    """B cannot create an account on A's owner or filer: 404 as for one that
    exists nowhere, and nothing is created."""
    a, b = tenants
    created(send(a, "POST", "/v1/account-owners",
                 {"id": "a-only-owner", "name": "A", "account_owner_type": "individual"}), "owner")
    created(send(a, "POST", "/v1/filers", {"id": "a-only-filer", "name": "A"}), "filer")
    created(send(b, "POST", "/v1/account-owners",
                 {"id": "b-owner", "name": "B", "account_owner_type": "individual"}), "owner")
    base = {"id": "b-account", "account_owner_id": "b-owner"}
    assert_same_404(send(b, "POST", "/v1/accounts", {**base, field: a_only}), a_only,
                    send(b, "POST", "/v1/accounts", {**base, field: nowhere}), nowhere)
    assert RESOURCES["accounts"].list_all(b) == []


@pytest.mark.parametrize("kind", list(RESOURCES))
def test_same_caller_ids_are_independent(tenants, kind):
    """Two tenants may use the same caller ids: both creates are 201 (B learns
    nothing from a 409), each tenant reads its own record, and a change or a
    delete by one never reaches the other."""
    res, (a, b) = RESOURCES[kind], tenants
    ra = res.create(a, "A")
    rb = res.create(b, "B")
    assert ra["uuid"] != rb["uuid"]
    assert body(send(a, "GET", res.path(res.record_id)))["data"] == ra
    assert body(send(b, "GET", res.path(res.record_id)))["data"] == rb
    assert [i["uuid"] for i in res.list_all(a) if i[res.key] == res.record_id] == [ra["uuid"]]
    assert [i["uuid"] for i in res.list_all(b) if i[res.key] == res.record_id] == [rb["uuid"]]
    if res.can_patch:
        r = send(a, "PATCH", res.path(res.record_id), {"name": "Only A's"})
        assert r.status_code == 200, r.text
        assert body(send(b, "GET", res.path(res.record_id)))["data"] == rb
    if res.can_delete:
        assert send(a, "DELETE", res.path(res.record_id)).status_code == 204
        assert send(a, "GET", res.path(res.record_id)).status_code == 404
        assert body(send(b, "GET", res.path(res.record_id)))["data"] == rb


# ------------------------------------------- issue 16: disposition methods, transfer lots

def _issue16_setup(tenant):
    created(send(tenant, "POST", "/v1/account-owners", {
        "id": "holder16", "name": "Holder", "account_owner_type": "individual"}), "owner")
    created(send(tenant, "POST", "/v1/accounts", {"id": "acc16", "account_owner_id": "holder16"}),
            "account")
    rec = created(send(tenant, "POST", "/v1/accounts/acc16/disposition-methods-history",
                       {"method": "LIFO", "effective_from": "2090-01-01T00:00:00Z"}), "record")
    r = send(tenant, "POST", "/v1/transactions/external-id", {
        "id": "dep16", "account_id": "acc16", "datetime": "2024-01-01T00:00:00Z", "type": "deposit",
        "received": [{"asset_amount": {"amount": "1", "asset": {"code": "BTC", "type": "crypto"}}}]})
    assert r.status_code == 201, r.text
    return rec["id"]


def _issue16_routes(record_id):
    lots = {"lots": [{"asset_code": "BTC", "quantity": "1", "cost_basis": "1",
                      "acquired_at": "2020-01-01T00:00:00Z"}]}
    hist = "/v1/accounts/acc16/disposition-methods-history"
    return [("POST", hist, {"method": "HIFO", "effective_from": "2091-01-01T00:00:00Z"}),
            ("GET", hist, None),
            ("PATCH", f"{hist}/{record_id}", {"method": "HIFO"}),
            ("DELETE", f"{hist}/{record_id}", None),
            ("POST", "/v1/transfer-lots/transactions/dep16", lots),
            ("GET", "/v1/transfer-lots/transactions/dep16", None),
            ("DELETE", "/v1/transfer-lots/transactions/dep16", None)]


def test_issue16_routes_are_404_for_another_tenant_and_403_without_the_scope(server):
    a, b = server.new_tenant("tenant-a16"), server.new_tenant("tenant-b16")
    record_id = _issue16_setup(a)
    no_scope = server.new_tenant("tenant-c16", scopes="accounts")
    for method, path, payload in _issue16_routes(record_id):
        r = send(b, method, path, payload)
        assert r.status_code == 404, f"{method} {path} by another tenant: {r.status_code} {r.text}"
        r = send(no_scope, method, path, payload)
        assert r.status_code == 403, f"{method} {path} without the scope: {r.status_code} {r.text}"
    # A's records are untouched
    r = send(a, "GET", "/v1/accounts/acc16/disposition-methods-history")
    assert [x["method"] for x in body(r)["data"]] == ["LIFO"]


# ------------------------------------------------------------------ gains reports (issue 16)

def test_gains_report_never_crosses_tenants(tenants):
    """POST /v1/reports/gains names accounts by caller id within the token's
    tenant: B's report on A's account id treats it as not found (no rows);
    A's report is 403 to B (reports are checked as the inventory-summary
    ones: docs/decisions.md "Reports") and unknown ids are 404; a credential
    without the reports scope gets the gateway's 403."""
    import time
    a, b = tenants
    created(send(a, "POST", "/v1/account-owners",
                 {"id": "iso-gains-o", "name": "O", "account_owner_type": "individual"}), "owner")
    created(send(a, "POST", "/v1/accounts", {"id": "iso-gains-a", "account_owner_id": "iso-gains-o"}),
            "account")
    r = send(a, "POST", "/v1/reports/gains", {"account_ids": ["iso-gains-a"], "tax_year": 2025})
    assert r.status_code == 202, r.text
    a_report = body(r)["report_id"]
    r = send(b, "POST", "/v1/reports/gains", {"account_ids": ["iso-gains-a"], "tax_year": 2025})
    assert r.status_code == 202, r.text
    b_report = body(r)["report_id"]
    deadline = time.monotonic() + 60
    while True:
        s = body(send(b, "GET", f"/v1/reports/gains/{b_report}"))
        if s["status"] in ("completed", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert s["status"] == "completed", s
    assert s["metadata"]["total_accounts_included"] == 0
    assert s["metadata"]["skipped_account_ids"]["not_found_in_organization"] == ["iso-gains-a"]
    assert send(b, "GET", f"/v1/reports/gains/{a_report}").status_code == 403
    assert send(b, "GET", f"/v1/reports/gains/{uuid.uuid4()}").status_code == 404
    narrow = b.server.new_tenant("iso-gains-scope", scopes="inventory")
    assert send(narrow, "POST", "/v1/reports/gains", {"tax_year": 2025}).status_code == 403
    assert send(narrow, "GET", f"/v1/reports/gains/{b_report}").status_code == 403


# ---- gains and account activity (issue 16, the `gains` part)

GAINS_READS = [
    ("/v1/gains?account_id={a}&start_date=2025-01-01&end_date=2025-12-31", "inventory"),
    ("/v1/gains/breakdown?account_id={a}&tax_year=2025", "inventory"),
    ("/v1/gains/summary?account_id={a}&start_date=2025-01-01&end_date=2025-12-31", "inventory"),
    ("/v1/accounts/{a}/transactions", "transactions"),
    ("/v1/accounts/{a}/income?start_date=2025-01-01&end_date=2025-12-31", "transactions"),
]


@pytest.mark.parametrize("template,scope", GAINS_READS)
def test_gains_and_activity_do_not_cross_tenants(server, tenants, template, scope):
    """A's account is 404 for B exactly as an account that exists nowhere;
    a credential without the route's scope gets the gateway's 403."""
    a, b = tenants
    created(send(a, "POST", "/v1/account-owners",
                 {"id": "g-owner", "name": "A", "account_owner_type": "individual"}), "owner")
    created(send(a, "POST", "/v1/accounts", {"id": "g-acct", "account_owner_id": "g-owner"}),
            "account")
    assert send(a, "GET", template.format(a="g-acct")).status_code == 200
    assert_same_404(send(b, "GET", template.format(a="g-acct")), "g-acct",
                    send(b, "GET", template.format(a=NOWHERE)), NOWHERE)
    other = "accounts" if scope != "accounts" else "assets"
    scoped = server.new_tenant("scoped", scopes=other)
    r = send(scoped, "GET", template.format(a="g-acct"))
    assert r.status_code == 403, r.text
