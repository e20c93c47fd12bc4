"""Assets: POST/GET /v1/assets, GET/DELETE /v1/assets/{assetId}.

Spec rules checked (§ Endpoints named in the error conventions, § Statuses
that are not errors, § Errors) and the decisions of docs/decisions.md
("Assets"):
  - POST /v1/assets answers 200 even if some elements failed, each element
    with its own `status` of `created` or `error`;
  - 409 for a name or code already in use (a single asset);
  - DELETE answers 409 when a transaction references the asset, 404 "No asset
    is configured for the supplied id" when there is none, 204 otherwise;
  - USD exists for every tenant (and cannot be deleted);
  - every body is validated (400 with issues; `values` for enumerations);
  - another tenant's asset is 404; codes are per tenant.
Every response is also checked against docs/openapi.yaml by the harness
(bodiless 204s by `delete` below).
"""
import uuid

import pytest
import requests

from conftest import (GATEWAY_DENY, HTTP_TIMEOUT_S, RFC3339_MS_Z_RE, UUID4_RE, body,
                      check_against_openapi, check_json_content_type, check_request_id,
                      shared_openapi)

TYPES = ["crypto", "fiat", "nft", "security"]
NOT_FOUND = {"error": "Not Found", "message": "No asset is configured for the supplied id"}
USD_REFUSED = {"error": "Conflict", "message": "USD is the tenant's reporting currency and cannot be deleted"}
TYPE_ISSUE = {"code": "invalid_value", "path": ["type"],
              "message": 'Invalid option: expected one of "crypto"|"fiat"|"nft"|"security"',
              "values": TYPES}
CODE_RULE_ISSUE = {"code": "custom", "path": ["code"],
                   "message": "Invalid code: expected 1 to 32 of the characters A-Z a-z 0-9 . _ -"}
USD = {"code": "USD", "name": "US Dollar", "type": "fiat", "decimals": 2}


# ------------------------------------------------------------------- helpers

def post(tenant, payload):
    return tenant.server.api().post("/v1/assets", json=payload, headers=tenant.auth())


def post_raw(tenant, data):
    headers = {"content-type": "application/json", **tenant.auth()}
    return tenant.server.api().post("/v1/assets", data=data, headers=headers)


def get(tenant, path, **kw):
    return tenant.get(path, **kw)


def delete(tenant, path):
    """DELETE, checked like every other response; a 204 against its documented
    bodiless response (the harness' check expects a documented content type,
    which a 204 has not)."""
    with requests.Session() as s:
        r = s.delete(tenant.server.url + path, headers=tenant.auth(), timeout=HTTP_TIMEOUT_S,
                     allow_redirects=False)
    check_request_id(tenant.server, r)
    if r.status_code != 204:
        check_json_content_type(r)
        check_against_openapi(r)
        return r
    doc = shared_openapi().operation_response("delete", "/v1/assets/{assetId}", 204)
    assert "content" not in doc, "204 is documented with a body"
    assert r.content == b"", f"204 with a body: {r.content[:200]!r}"
    assert "content-type" not in r.headers
    return r


def data(r, status):
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:500]}"
    return body(r)["data"]


def without_ids(asset):
    """The asset without the fields the service chooses, after checking them."""
    assert UUID4_RE.match(asset["uuid"]), asset
    assert RFC3339_MS_Z_RE.match(asset["created_at"]), asset
    return {k: v for k, v in asset.items() if k not in ("uuid", "created_at")}


def asset_in(code, name, type_="crypto", **extra):
    return {"code": code, "name": name, "type": type_, **extra}


def created(tenant, code, name, type_="crypto", **extra):
    return data(post(tenant, asset_in(code, name, type_, **extra)), 201)


def codes(tenant):
    """Every code of the tenant, in list order (one page of up to 100)."""
    r = get(tenant, "/v1/assets?limit=100")
    d = data(r, 200)
    assert body(r)["meta"]["next_cursor"] is None
    return [a["code"] for a in d]


def invalid(issues, message="Invalid asset"):
    return {"error": "Bad Request", "message": message, "issues": issues}


def seed_reference(server, tenant_id, asset_uuid):
    """SEEDED at the row level (the same rule through the transactions API is
    test_transactions.py::test_asset_referenced_by_a_transaction_cannot_be_deleted):
    an account owner, an account on the default filer, a transaction naming
    the asset and the asset's reference count, written straight into the
    server's database (WAL: the server sees them on its next read). Foreign
    keys are on, as for real rows."""
    owner, account, tx = (str(uuid.uuid4()) for _ in range(3))
    sql = server.sql
    filer = sql("SELECT uuid FROM filers WHERE tenant_id = ? AND is_default = 1", (tenant_id,))[0][0]
    sql("INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
        " created_at, updated_at) VALUES (?, ?, 'seed-owner', 'Seed', 'individual', 1, 1)",
        (owner, tenant_id))
    sql("INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, cost_basis_method,"
        " created_at, updated_at) VALUES (?, ?, 'seed-account', ?, ?, 'FIFO', 1, 1)",
        (account, tenant_id, owner, filer))
    code = sql("SELECT code FROM assets WHERE uuid = ?", (asset_uuid,))[0][0]
    sql("INSERT INTO transactions (tenant, account, datetime, type, id, lines, created_at,"
        " updated_at, uuid, body) VALUES ((SELECT rowid FROM tenants WHERE id = ?),"
        " (SELECT seq FROM accounts WHERE uuid = ?), 1, 'trade', 'seed-tx', ?, 1, 1, ?, '{}')",
        (tenant_id, account, "r" + code + " 1", uuid.UUID(tx).bytes))
    sql("UPDATE assets SET tx_refs = tx_refs + 1 WHERE uuid = ?", (asset_uuid,))


# --------------------------------------------------------------------- USD

def test_usd_exists_for_a_new_tenant(tenant):
    """USD exists for every tenant: a new tenant lists exactly USD (fiat, 2 decimals)."""
    r = get(tenant, "/v1/assets")
    listed = data(r, 200)
    assert body(r)["meta"] == {"next_cursor": None}
    assert [without_ids(a) for a in listed] == [USD]
    assert data(get(tenant, "/v1/assets/USD"), 200) == listed[0]
    assert data(get(tenant, f"/v1/assets/{listed[0]['uuid']}"), 200) == listed[0]


def test_usd_is_per_tenant(server, tenant):
    other = server.new_tenant("other")
    mine = data(get(tenant, "/v1/assets/USD"), 200)
    theirs = data(get(other, "/v1/assets/USD"), 200)
    assert without_ids(mine) == without_ids(theirs) == USD
    assert mine["uuid"] != theirs["uuid"]


# ------------------------------------------------------------- single POST

def test_single_asset_created_201(tenant):
    """A single asset (an object) answers 201 {"data": asset}, readable by uuid and by code."""
    a = created(tenant, "BTC", "Bitcoin", decimals=8)
    assert without_ids(a) == {"code": "BTC", "name": "Bitcoin", "type": "crypto", "decimals": 8}
    assert list(a) == ["uuid", "code", "name", "type", "decimals", "created_at"]
    assert data(get(tenant, f"/v1/assets/{a['uuid']}"), 200) == a
    assert data(get(tenant, "/v1/assets/BTC"), 200) == a
    assert codes(tenant) == ["BTC", "USD"]


@pytest.mark.parametrize("extra, expected", [({}, None), ({"decimals": None}, None),
                                             ({"decimals": 0}, 0), ({"decimals": 36}, 36)])
def test_decimals_optional_and_bounded(tenant, extra, expected):
    a = created(tenant, "X1", "Token", **extra)
    assert a["decimals"] == expected
    assert data(get(tenant, "/v1/assets/X1"), 200)["decimals"] == expected


@pytest.mark.parametrize("type_", TYPES)
def test_every_type_is_accepted(tenant, type_):
    assert created(tenant, "T1", "Thing", type_)["type"] == type_


def test_single_code_taken_409(tenant):
    """409 for a code already in use; the stored asset is unchanged."""
    first = created(tenant, "BTC", "Bitcoin", decimals=8)
    r = post(tenant, asset_in("BTC", "Bitcoin Again", "fiat"))
    assert r.status_code == 409
    assert body(r) == {"error": "Conflict", "message": "An asset with code 'BTC' already exists"}
    assert data(get(tenant, "/v1/assets/BTC"), 200) == first


def test_single_name_taken_409(tenant):
    """409 for a name already in use (USD's name is taken from the start)."""
    r = post(tenant, asset_in("USD2", "US Dollar", "fiat"))
    assert r.status_code == 409
    assert body(r) == {"error": "Conflict", "message": "An asset with name 'US Dollar' already exists"}
    assert codes(tenant) == ["USD"]


def test_single_code_and_name_taken_names_the_code(tenant):
    r = post(tenant, asset_in("USD", "US Dollar", "fiat"))
    assert r.status_code == 409
    assert body(r) == {"error": "Conflict", "message": "An asset with code 'USD' already exists"}


def test_codes_match_exactly(tenant):
    """Codes are kept as given and unique by exact match: "btc" is not "BTC"."""
    created(tenant, "BTC", "Bitcoin")
    lower = created(tenant, "btc", "bitcoin (lower case)")
    assert lower["code"] == "btc"
    assert codes(tenant) == ["BTC", "USD", "btc"]
    assert data(get(tenant, "/v1/assets/btc"), 200) == lower


def test_single_invalid_400_with_issues(tenant):
    """Every body goes through the validator: 400 with every issue, in field order."""
    r = post(tenant, {"code": "B TC", "name": "", "type": "coin", "decimals": 37})
    assert r.status_code == 400
    assert body(r) == invalid([
        CODE_RULE_ISSUE,
        {"code": "too_small", "path": ["name"], "message": "Too small: expected string to have >=1 characters",
         "origin": "string", "minimum": 1, "inclusive": True},
        TYPE_ISSUE,
        {"code": "too_big", "path": ["decimals"], "message": "Too big: expected number to be <=36",
         "origin": "number", "maximum": 36, "inclusive": True},
    ])
    assert codes(tenant) == ["USD"]


def test_single_missing_fields_400(tenant):
    r = post(tenant, {})
    assert r.status_code == 400
    assert body(r) == invalid([
        {"code": "invalid_type", "path": ["code"], "message": "Invalid input: expected string, received undefined",
         "expected": "string"},
        {"code": "invalid_type", "path": ["name"], "message": "Invalid input: expected string, received undefined",
         "expected": "string"},
        TYPE_ISSUE,
    ])


@pytest.mark.parametrize("bad_type", ["Crypto", "", "stock", 5, None, ["crypto"]])
def test_type_enum_issue_lists_values(tenant, bad_type):
    """Enumerations answer an invalid_value issue with `values`."""
    r = post(tenant, asset_in("T1", "Thing", bad_type))
    assert r.status_code == 400
    assert body(r) == invalid([TYPE_ISSUE])


@pytest.mark.parametrize("code", ["B TC", "BTC/USD", "\u00e9", "a+b", "x\ty", "BTC\u00a0"])
def test_code_character_rule(tenant, code):
    """Codes hold only A-Z a-z 0-9 . _ - (a custom issue otherwise)."""
    r = post(tenant, asset_in(code, "Thing"))
    assert r.status_code == 400
    assert body(r) == invalid([CODE_RULE_ISSUE])


@pytest.mark.parametrize("code", ["a.b_c-D9", "A" * 32, "0"])
def test_code_character_rule_accepts(tenant, code):
    a = created(tenant, code, "Thing")
    assert a["code"] == code
    assert data(get(tenant, f"/v1/assets/{code}"), 200) == a


@pytest.mark.parametrize("code, issue", [
    ("", {"code": "too_small", "path": ["code"], "message": "Too small: expected string to have >=1 characters",
          "origin": "string", "minimum": 1, "inclusive": True}),
    ("A" * 33, {"code": "too_big", "path": ["code"], "message": "Too big: expected string to have <=32 characters",
                "origin": "string", "maximum": 32, "inclusive": True}),
    (7, {"code": "invalid_type", "path": ["code"], "message": "Invalid input: expected string, received number",
         "expected": "string"}),
])
def test_code_length_and_type(tenant, code, issue):
    """One issue per field: a code the schema refuses gets no character-rule issue as well."""
    r = post(tenant, asset_in(code, "Thing"))
    assert r.status_code == 400
    assert body(r) == invalid([issue])


@pytest.mark.parametrize("decimals, issue", [
    (-1, {"code": "too_small", "path": ["decimals"], "message": "Too small: expected number to be >=0",
          "origin": "number", "minimum": 0, "inclusive": True}),
    (37, {"code": "too_big", "path": ["decimals"], "message": "Too big: expected number to be <=36",
          "origin": "number", "maximum": 36, "inclusive": True}),
    (1.5, {"code": "invalid_type", "path": ["decimals"], "message": "Invalid input: expected int, received number",
           "expected": "int"}),
    ("2", {"code": "invalid_type", "path": ["decimals"], "message": "Invalid input: expected number, received string",
           "expected": "number"}),
])
def test_decimals_invalid(tenant, decimals, issue):
    r = post(tenant, asset_in("T1", "Thing", decimals=decimals))
    assert r.status_code == 400
    assert body(r) == invalid([issue])


def test_names_keep_their_characters(tenant):
    """Names are 1 to 128 characters (code points), stored as given."""
    name = "\u00dcn\u00efc\u00f6de 'quoted' \u20ac" + "\u00e9" * 100
    assert len(name) <= 128
    a = created(tenant, "UNI", name)
    assert a["name"] == name
    longest = "\U0001F600" * 128
    assert created(tenant, "EMOJI", longest)["name"] == longest
    r = post(tenant, asset_in("LONG", "x" * 129))
    assert r.status_code == 400
    assert body(r) == invalid([{"code": "too_big", "path": ["name"],
                                "message": "Too big: expected string to have <=128 characters",
                                "origin": "string", "maximum": 128, "inclusive": True}])


@pytest.mark.parametrize("raw", [b'"BTC"', b"5", b"null", b"true"])
def test_body_neither_object_nor_array_400(tenant, raw):
    r = post_raw(tenant, raw)
    assert r.status_code == 400
    b = body(r)
    assert b["error"] == "Bad Request"
    assert b["message"].startswith("Malformed JSON: '[' or '{' expected"), b
    assert codes(tenant) == ["USD"]


# ------------------------------------------------------------------- batches

def test_batch_mixed_outcomes_200(tenant):
    """An array answers 200 even if some elements failed; each element has its own
    `status` of `created` or `error`, and the valid ones really are created."""
    created(tenant, "ETH", "Ether", decimals=18)
    r = post(tenant, [
        asset_in("BTC", "Bitcoin", decimals=8),          # 0 created
        asset_in("ETH", "Ethereum"),                     # 1 code of an existing asset
        asset_in("XETH", "Ether"),                       # 2 name of an existing asset
        {"code": "", "name": "Bad", "type": "coin"},     # 3 invalid
        asset_in("BTC", "Bitcoin Two"),                  # 4 code of an earlier element
        asset_in("SOL", "Solana", decimals=9),           # 5 created
        7,                                               # 6 not an object
        asset_in("WBTC", "Bitcoin"),                     # 7 name of an earlier element
    ])
    results = data(r, 200)
    assert [x["index"] for x in results] == list(range(8))
    btc, sol = results[0]["asset"], results[5]["asset"]
    assert results == [
        {"index": 0, "status": "created", "asset": btc},
        {"index": 1, "status": "error", "error": "Conflict", "message": "An asset with code 'ETH' already exists"},
        {"index": 2, "status": "error", "error": "Conflict", "message": "An asset with name 'Ether' already exists"},
        {"index": 3, "status": "error", "error": "Bad Request", "message": "Invalid asset", "issues": [
            {"code": "too_small", "path": ["code"], "message": "Too small: expected string to have >=1 characters",
             "origin": "string", "minimum": 1, "inclusive": True},
            TYPE_ISSUE]},
        {"index": 4, "status": "error", "error": "Conflict", "message": "An asset with code 'BTC' already exists"},
        {"index": 5, "status": "created", "asset": sol},
        {"index": 6, "status": "error", "error": "Bad Request", "message": "Invalid asset", "issues": [
            {"code": "invalid_type", "path": [], "message": "Invalid input: expected object, received number",
             "expected": "object"}]},
        {"index": 7, "status": "error", "error": "Conflict", "message": "An asset with name 'Bitcoin' already exists"},
    ]
    assert without_ids(btc) == {"code": "BTC", "name": "Bitcoin", "type": "crypto", "decimals": 8}
    assert without_ids(sol) == {"code": "SOL", "name": "Solana", "type": "crypto", "decimals": 9}
    # the valid ones really were created (and the first BTC won); ETH is unchanged
    assert codes(tenant) == ["BTC", "ETH", "SOL", "USD"]
    assert data(get(tenant, "/v1/assets/BTC"), 200) == btc
    assert data(get(tenant, f"/v1/assets/{sol['uuid']}"), 200) == sol
    assert data(get(tenant, "/v1/assets/ETH"), 200)["name"] == "Ether"


def test_batch_where_every_element_fails_is_still_200(tenant):
    r = post(tenant, [asset_in("USD", "Dollar", "fiat"), {"code": "A B", "name": "x", "type": "nft"}])
    assert data(r, 200) == [
        {"index": 0, "status": "error", "error": "Conflict", "message": "An asset with code 'USD' already exists"},
        {"index": 1, "status": "error", "error": "Bad Request", "message": "Invalid asset",
         "issues": [CODE_RULE_ISSUE]},
    ]
    assert codes(tenant) == ["USD"]


def test_batch_of_one_created_is_200_not_201(tenant):
    """An array is a batch whatever its length: 200 with per-element results."""
    results = data(post(tenant, [asset_in("ADA", "Cardano", decimals=6)]), 200)
    assert len(results) == 1
    assert results[0]["status"] == "created" and results[0]["index"] == 0
    assert without_ids(results[0]["asset"]) == {"code": "ADA", "name": "Cardano", "type": "crypto", "decimals": 6}


def test_batch_must_not_be_empty(tenant):
    r = post(tenant, [])
    assert r.status_code == 400
    assert body(r) == invalid([{"code": "too_small", "path": [], "message": "Too small: expected array to have >=1 items",
                                "origin": "array", "minimum": 1, "inclusive": True}], "Invalid assets")


def test_batch_over_1000_elements_400(tenant):
    r = post(tenant, [asset_in(f"C{i}", f"Coin {i}") for i in range(1001)])
    assert r.status_code == 400
    assert body(r) == invalid([{"code": "too_big", "path": [], "message": "Too big: expected array to have <=1000 items",
                                "origin": "array", "maximum": 1000, "inclusive": True}], "Invalid assets")
    assert codes(tenant) == ["USD"]


def test_batch_of_1000_elements_all_created(tenant):
    results = data(post(tenant, [asset_in(f"C{i:04d}", f"Coin {i}") for i in range(1000)]), 200)
    assert [x["status"] for x in results] == ["created"] * 1000
    assert [x["asset"]["code"] for x in results] == [f"C{i:04d}" for i in range(1000)]
    # every one is listed: 1001 assets in pages of 100
    seen, cursor = [], None
    for _ in range(20):
        r = get(tenant, "/v1/assets", params={"limit": 100, **({"cursor": cursor} if cursor else {})})
        seen += [a["code"] for a in data(r, 200)]
        cursor = body(r)["meta"]["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"C{i:04d}" for i in range(1000)] + ["USD"]


# ----------------------------------------------------------------------- GET

def test_get_by_uuid_and_by_code(tenant):
    """{assetId} is a uuid (any case) or a code."""
    a = created(tenant, "DOT", "Polkadot", decimals=10)
    assert data(get(tenant, f"/v1/assets/{a['uuid']}"), 200) == a
    assert data(get(tenant, f"/v1/assets/{a['uuid'].upper()}"), 200) == a
    assert data(get(tenant, "/v1/assets/DOT"), 200) == a


@pytest.mark.parametrize("asset_id", ["NOPE", "dot", "DOT%20", str(uuid.uuid4()), "%2F"])
def test_get_unknown_404(tenant, asset_id):
    created(tenant, "DOT", "Polkadot")
    r = get(tenant, f"/v1/assets/{asset_id}")
    assert r.status_code == 404
    assert body(r) == NOT_FOUND


def test_list_pagination_by_code(tenant):
    """Lists are ordered by code, with opaque cursors; null on the last page."""
    data(post(tenant, [asset_in(c, f"Name {c}") for c in ["E", "B", "D", "A", "C"]]), 200)
    pages, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        r = get(tenant, "/v1/assets", params=params)
        pages.append([a["code"] for a in data(r, 200)])
        cursor = body(r)["meta"]["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
        assert len(pages) < 10
    assert pages == [["A", "B"], ["C", "D"], ["E", "USD"]]


@pytest.mark.parametrize("query, path", [("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"),
                                         ("cursor=%21%21", "cursor")])
def test_list_bad_query_400(tenant, query, path):
    r = get(tenant, f"/v1/assets?{query}")
    assert r.status_code == 400
    b = body(r)
    assert b["message"] == "Invalid query parameters"
    assert [i["path"] for i in b["issues"]] == [[path]]


# -------------------------------------------------------------------- DELETE

def test_delete_204_then_404(tenant):
    """DELETE answers 204, then the asset is gone (404 with the spec's message)."""
    a = created(tenant, "BTC", "Bitcoin")
    b = created(tenant, "ETH", "Ether")
    assert delete(tenant, "/v1/assets/BTC").status_code == 204
    r = get(tenant, f"/v1/assets/{a['uuid']}")
    assert (r.status_code, body(r)) == (404, NOT_FOUND)
    r = delete(tenant, "/v1/assets/BTC")
    assert (r.status_code, body(r)) == (404, NOT_FOUND)
    assert delete(tenant, f"/v1/assets/{b['uuid']}").status_code == 204
    assert codes(tenant) == ["USD"]
    # the code is free again
    assert created(tenant, "BTC", "Bitcoin")["uuid"] != a["uuid"]


@pytest.mark.parametrize("asset_id", ["NOPE", str(uuid.uuid4())])
def test_delete_unknown_404(tenant, asset_id):
    r = delete(tenant, f"/v1/assets/{asset_id}")
    assert r.status_code == 404
    assert body(r) == NOT_FOUND


def test_delete_usd_409(tenant):
    """USD, the tenant's reporting currency, cannot be deleted (by code or by uuid)."""
    usd = data(get(tenant, "/v1/assets/USD"), 200)
    for asset_id in ("USD", usd["uuid"]):
        r = delete(tenant, f"/v1/assets/{asset_id}")
        assert r.status_code == 409
        assert body(r) == USD_REFUSED
    assert data(get(tenant, "/v1/assets/USD"), 200) == usd


def test_delete_referenced_409(server, tenant):
    """409 when deleting an asset that a transaction references.
    SEEDED: the transaction is written straight into the database (see
    seed_reference)."""
    btc = created(tenant, "BTC", "Bitcoin", decimals=8)
    created(tenant, "ETH", "Ether")
    seed_reference(server, tenant.tenant_id, btc["uuid"])
    for asset_id in ("BTC", btc["uuid"]):
        r = delete(tenant, f"/v1/assets/{asset_id}")
        assert r.status_code == 409
        assert body(r) == {"error": "Conflict",
                           "message": "Asset 'BTC' is referenced by transactions and cannot be deleted"}
    assert data(get(tenant, "/v1/assets/BTC"), 200) == btc
    assert delete(tenant, "/v1/assets/ETH").status_code == 204  # unreferenced ones still go
    assert codes(tenant) == ["BTC", "USD"]


# ------------------------------------------------------------ tenant isolation

def test_same_code_in_two_tenants(server, tenant):
    """Codes are per tenant: both tenants may have BTC, each its own."""
    other = server.new_tenant("other")
    mine = created(tenant, "BTC", "Bitcoin", decimals=8)
    theirs = created(other, "BTC", "Bitcoin", decimals=8)
    assert mine["uuid"] != theirs["uuid"]
    assert data(get(tenant, "/v1/assets/BTC"), 200) == mine
    assert data(get(other, "/v1/assets/BTC"), 200) == theirs


def test_another_tenants_asset_is_404(server, tenant):
    """Another tenant's asset is 404, by uuid and by code, for GET and DELETE."""
    other = server.new_tenant("other")
    theirs = created(other, "SOL", "Solana")
    their_usd = data(get(other, "/v1/assets/USD"), 200)
    for asset_id in (theirs["uuid"], "SOL", their_usd["uuid"]):
        r = get(tenant, f"/v1/assets/{asset_id}")
        assert (r.status_code, body(r)) == (404, NOT_FOUND), asset_id
        r = delete(tenant, f"/v1/assets/{asset_id}")
        assert (r.status_code, body(r)) == (404, NOT_FOUND), asset_id
    assert data(get(other, f"/v1/assets/{theirs['uuid']}"), 200) == theirs
    assert codes(tenant) == ["USD"]
    assert codes(other) == ["SOL", "USD"]


# -------------------------------------------------------------------- scopes

def test_scope_assets_required(server, tenant):
    """Routes need the scope `assets`: another scope gets the gateway deny."""
    accounts_only = server.new_tenant("scoped", scopes="accounts")
    r = get(accounts_only, "/v1/assets")
    assert (r.status_code, body(r)) == (403, GATEWAY_DENY)
    r = post(accounts_only, asset_in("BTC", "Bitcoin"))
    assert (r.status_code, body(r)) == (403, GATEWAY_DENY)
    r = delete(accounts_only, "/v1/assets/USD")
    assert (r.status_code, body(r)) == (403, GATEWAY_DENY)
    assets_only = server.new_tenant("scoped2", scopes="assets")
    assert created(assets_only, "BTC", "Bitcoin")["code"] == "BTC"
