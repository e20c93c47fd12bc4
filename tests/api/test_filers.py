"""Filers: create, read, list, merge-patch and delete (docs/decisions.md
"Tenant records", spec § Endpoints named in the error conventions: "DELETE
/v1/filers/{id}: 409 for the default filer or a filer that has accounts").

Every response goes through the suite's checks (x-request-id, content type,
docs/openapi.yaml). conftest's OpenAPI check expects a content type on every
response, which a 204 has none of, so `send` checks a 204 here instead:
documented for the operation, with an empty body and the request id.
"""
import time
import urllib.parse

import pytest
import requests

from conftest import (GATEWAY_DENY, HTTP_TIMEOUT_S, RFC3339_MS_Z_RE, UUID4_RE, _template_for, assert_rl_headers,
                      body, check_against_openapi, check_json_content_type, check_request_id, raw_request,
                      shared_openapi)

FILER_KEYS = {"id", "uuid", "name", "tin", "is_default", "created_at", "updated_at"}


# ------------------------------------------------------------------ helpers

def send(tenant, method, path, json_body=None, data=None, headers=None):
    """One authenticated request through the suite's response checks; a 204
    is checked against the operation's documented 204 instead."""
    h = dict(tenant.auth())
    h.update(headers or {})
    kw = {"headers": h, "timeout": HTTP_TIMEOUT_S, "allow_redirects": False}
    if json_body is not None:
        kw["json"] = json_body
    if data is not None:
        kw["data"] = data
    with requests.Session() as s:
        r = s.request(method, tenant.server.url + path, **kw)
    check_request_id(tenant.server, r)
    if r.status_code == 204:
        assert r.content == b"", r.content
        oa = shared_openapi()
        template = _template_for(oa.doc["paths"], r.request.path_url.split("?")[0])
        assert template is not None, path
        oa.operation_response(method, template, 204)
        assert_rl_headers(r)
    else:
        check_json_content_type(r)
        check_against_openapi(r)
    return r


def quote(filer_id):
    return urllib.parse.quote(filer_id, safe="")


def create(tenant, filer_id, name="Filer", **extra):
    """Creates a filer and returns its record (asserting 201)."""
    payload = {"id": filer_id, "name": name, **extra}
    r = send(tenant, "POST", "/v1/filers", payload)
    assert r.status_code == 201, r.text
    return body(r)["data"]


def get(tenant, filer_id):
    return send(tenant, "GET", "/v1/filers/" + quote(filer_id))


def patch(tenant, filer_id, payload):
    return send(tenant, "PATCH", "/v1/filers/" + quote(filer_id), payload)


def delete(tenant, filer_id):
    return send(tenant, "DELETE", "/v1/filers/" + quote(filer_id))


def all_ids(tenant):
    r = send(tenant, "GET", "/v1/filers?limit=100")
    assert r.status_code == 200, r.text
    return [f["id"] for f in body(r)["data"]]


def not_found(filer_id):
    return {"error": "Not Found", "message": f"Filer with id '{filer_id}' not found"}


def invalid(*issues):
    return {"error": "Bad Request", "message": "Invalid filer", "issues": list(issues)}


def missing(field):
    return {"code": "invalid_type", "expected": "string", "path": [field],
            "message": "Invalid input: expected string, received undefined"}


def wrong_type(field, expected, received):
    return {"code": "invalid_type", "expected": expected, "path": [field],
            "message": f"Invalid input: expected {expected}, received {received}"}


def too_small(field, minimum=1):
    return {"code": "too_small", "origin": "string", "minimum": minimum, "inclusive": True, "path": [field],
            "message": f"Too small: expected string to have >={minimum} characters"}


def too_big(field, maximum):
    return {"code": "too_big", "origin": "string", "maximum": maximum, "inclusive": True, "path": [field],
            "message": f"Too big: expected string to have <={maximum} characters"}


def custom(field, message):
    return {"code": "custom", "path": [field], "message": message}


BAD_TIN = custom("tin", "Invalid TIN: only digits, letters, '-' and ' ' are allowed")


def assert_record(d, filer_id, name, tin, is_default=False):
    assert set(d) == FILER_KEYS, d
    assert d["id"] == filer_id
    assert UUID4_RE.match(d["uuid"]), d["uuid"]
    assert d["name"] == name
    assert d["tin"] == tin
    assert d["is_default"] is is_default
    assert RFC3339_MS_Z_RE.match(d["created_at"]), d["created_at"]
    assert RFC3339_MS_Z_RE.match(d["updated_at"]), d["updated_at"]


# ------------------------------------------------------------------ create

def test_create_answers_201_with_the_record(tenant):
    """POST /v1/filers: 201 {"data": filer}; the TIN is answered masked, the
    record has one shape, and GET one and the list answer the same record."""
    r = send(tenant, "POST", "/v1/filers", {"id": "f1", "name": "Filer One", "tin": "12-3456789"})
    assert r.status_code == 201, r.text
    assert_rl_headers(r)
    d = body(r)["data"]
    assert_record(d, "f1", "Filer One", "******6789")
    assert d["created_at"] == d["updated_at"]
    assert body(get(tenant, "f1")) == {"data": d}
    listed = body(send(tenant, "GET", "/v1/filers"))
    assert listed == {"data": [body(get(tenant, "default"))["data"], d], "meta": {"next_cursor": None}}


def test_default_filer_has_the_record_shape(tenant):
    """Every tenant gets a default filer marked "is_default": true; a TIN never
    set answers null."""
    d = body(get(tenant, "default"))["data"]
    assert_record(d, "default", "Default filer", None, is_default=True)


@pytest.mark.parametrize("extra", [{}, {"tin": None}])
def test_create_without_tin_answers_null(tenant, extra):
    """Optional fields that were never set answer null (tin absent or null)."""
    d = create(tenant, "plain", "Plain", **extra)
    assert_record(d, "plain", "Plain", None)


@pytest.mark.parametrize("tin,masked", [
    ("123456789", "*****6789"),
    ("AB 12-34 Z", "******34 Z"),
    ("1234", "1234"),
    ("1", "1"),
    ("x" * 40, "*" * 36 + "xxxx"),
])
def test_tin_answered_masked(tenant, tin, masked):
    """TINs are answered masked: every character but the last four replaced by '*'."""
    d = create(tenant, "t-" + tin, tin=tin)
    assert d["tin"] == masked
    assert body(get(tenant, "t-" + tin))["data"]["tin"] == masked


def test_tin_sealed_at_rest_and_never_logged(server, tenant):
    """TINs are stored only sealed and never appear in logs, not even in the
    400 that refuses one."""
    tin = "98-7654321"
    create(tenant, "sealed", tin=tin)
    bad = "98-7654321/X"
    r = send(tenant, "POST", "/v1/filers", {"id": "bad", "name": "n", "tin": bad})
    assert body(r) == invalid(BAD_TIN)
    truncated = b'{"id":"cut","name":"n","tin":"98-7654321'
    r = send(tenant, "POST", "/v1/filers", data=truncated, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "7654321" not in r.text, r.text
    r = patch(tenant, "sealed", {"tin": "98-7654321.5"})
    assert body(r) == invalid(BAD_TIN)
    (sealed,) = server.sql("SELECT tin_sealed FROM filers WHERE tenant_id = ? AND id = 'sealed'",
                           (tenant.tenant_id,))[0]
    assert isinstance(sealed, bytes) and len(sealed) == len(tin) + 28  # nonce + tag
    assert tin.encode() not in sealed and b"7654321" not in sealed
    filer_uuid = body(get(tenant, "sealed"))["data"]["uuid"]
    assert server.open_tin(tenant.tenant_id, filer_uuid, sealed) == tin  # AES-256-GCM, <db>.tin.key
    log = server.stderr_text()
    assert "POST /v1/filers" in log  # the access log did record the requests
    assert "7654321" not in log


def test_create_with_an_id_in_use_is_409(tenant):
    """A create with an id already in use: 409 {"error":"Conflict","message":
    "Filer with id '<id>' already exists"}; the stored record is unchanged."""
    first = create(tenant, "dup", "First", tin="111222333")
    r = send(tenant, "POST", "/v1/filers", {"id": "dup", "name": "Second"})
    assert r.status_code == 409, r.text
    assert body(r) == {"error": "Conflict", "message": "Filer with id 'dup' already exists"}
    assert_rl_headers(r)
    assert body(get(tenant, "dup"))["data"] == first
    r = send(tenant, "POST", "/v1/filers", {"id": "default", "name": "Another default"})
    assert body(r) == {"error": "Conflict", "message": "Filer with id 'default' already exists"}


@pytest.mark.parametrize("filer_id", ["a/b %c+d", "ünïcødé 日本", "x" * 256, "é" * 128, "'quoted'", "%64efault"])
def test_ids_hold_any_character_but_nul(tenant, filer_id):
    """Ids are 1 to 256 bytes of any characters but NUL; in paths they are
    percent-encoded and decoded exactly once."""
    d = create(tenant, filer_id, "Odd")
    assert d["id"] == filer_id
    r = get(tenant, filer_id)
    assert r.status_code == 200, r.text
    assert body(r)["data"] == d
    assert filer_id in all_ids(tenant)
    r = send(tenant, "POST", "/v1/filers", {"id": filer_id, "name": "Again"})
    assert body(r) == {"error": "Conflict", "message": f"Filer with id '{filer_id}' already exists"}


@pytest.mark.parametrize("payload,issues", [
    ({}, [missing("id"), missing("name")]),
    ({"id": "", "name": ""}, [too_small("id"), too_small("name")]),
    ({"id": "x" * 257, "name": "n" * 257}, [too_big("id", 256), too_big("name", 256)]),
    ({"id": 5, "name": None}, [wrong_type("id", "string", "number"), wrong_type("name", "string", "null")]),
    ({"id": "é" * 129, "name": "n"}, [custom("id", "Too big: expected id to have <=256 bytes")]),
    ({"id": "t", "name": "n", "tin": ""}, [too_small("tin")]),
    ({"id": "t", "name": "n", "tin": "1" * 41}, [too_big("tin", 40)]),
    ({"id": "t", "name": "n", "tin": 123456789}, [wrong_type("tin", "string", "number")]),
    ({"id": "t", "name": "n", "tin": "12/34"}, [BAD_TIN]),
    ({"id": "t", "name": "n", "tin": "12_34"}, [BAD_TIN]),
    ({"id": "t", "name": "n", "tin": "１２３４"}, [BAD_TIN]),
    ({"id": "t", "name": "n", "tin": "12\t34"}, [BAD_TIN]),
])
def test_create_validation(tenant, payload, issues):
    """Every body goes through the validator: 400 with issues naming each
    failed field; TIN characters are a custom rule; nothing is created."""
    r = send(tenant, "POST", "/v1/filers", payload)
    assert r.status_code == 400, r.text
    assert body(r) == invalid(*issues)
    assert_rl_headers(r)
    assert all_ids(tenant) == ["default"]


@pytest.mark.parametrize("data,content_type,message", [
    ('{"id":"a",', "application/json", None),
    ('{"id":"a","id":"b","name":"n"}', "application/json", None),
    ('{"id":"a\\u0000b","name":"n"}', "application/json", None),
    ('[]', "application/json", "Invalid filer"),
    ('{"id":"a","name":"n"}', "text/plain", "Content-Type must be application/json"),
    ("", "application/json", "Request body is required"),
])
def test_create_refuses_malformed_bodies(tenant, data, content_type, message):
    """Malformed JSON, duplicate keys, an escaped NUL (ids hold any character
    but NUL), a non-object, another content type and a missing body are 400
    with a message naming the problem."""
    r = send(tenant, "POST", "/v1/filers", data=data.encode(), headers={"content-type": content_type})
    assert r.status_code == 400, r.text
    b = body(r)
    assert b["error"] == "Bad Request"
    if message is not None:
        assert b["message"] == message
    else:
        assert b["message"].startswith("Malformed JSON: "), b
    assert all_ids(tenant) == ["default"]


def test_unknown_fields_are_ignored(tenant):
    """Unknown fields in request bodies are ignored (the contract is additive);
    is_default may be sent as false, the value every created filer has."""
    d = create(tenant, "extra", "Extra", colour="blue", is_default=False)
    assert_record(d, "extra", "Extra", None)


@pytest.mark.parametrize("value,issue", [
    (True, custom("is_default", "is_default cannot be set through the API")),
    (None, wrong_type("is_default", "boolean", "null")),
    ("yes", wrong_type("is_default", "boolean", "string")),
])
def test_create_cannot_make_a_default_filer(tenant, value, issue):
    """is_default cannot be set through the API: a create asking for it is
    400, not a filer silently made non-default."""
    r = send(tenant, "POST", "/v1/filers", {"id": "wants-default", "name": "n", "is_default": value})
    assert r.status_code == 400, r.text
    assert body(r) == invalid(issue)
    assert all_ids(tenant) == ["default"]


def test_scopes(server, tenant):
    """Filers need the scope `accounts`: another scope gets the gateway deny."""
    assets_only = server.new_tenant("scoped", scopes="assets")
    r = send(assets_only, "POST", "/v1/filers", {"id": "s", "name": "S"})
    assert r.status_code == 403 and body(r) == GATEWAY_DENY
    for method in ("PATCH", "DELETE"):
        r = send(assets_only, method, "/v1/filers/default", {} if method == "PATCH" else None)
        assert r.status_code == 403 and body(r) == GATEWAY_DENY
    accounts = server.new_tenant("scoped2", scopes="accounts")
    assert send(accounts, "POST", "/v1/filers", {"id": "s", "name": "S"}).status_code == 201


# ------------------------------------------------------------------ list

def test_list_pages_in_id_order(tenant):
    """Lists are ordered by caller id (bytewise) and paged with meta.next_cursor."""
    for filer_id in ["c", "a", "b", "Z"]:
        create(tenant, filer_id)
    seen, cursor = [], None
    for _ in range(10):
        path = "/v1/filers?limit=2" + (f"&cursor={cursor}" if cursor else "")
        b = body(send(tenant, "GET", path))
        seen += [f["id"] for f in b["data"]]
        cursor = b["meta"]["next_cursor"]
        if cursor is None:
            break
    assert seen == ["Z", "a", "b", "c", "default"]


# ------------------------------------------------------------------ patch

def test_patch_is_a_merge_patch(tenant):
    """PATCH: fields present replace the stored value, null clears an optional
    field, absent fields are kept; 200 {"data": record}."""
    before = create(tenant, "m", "Before", tin="123456789")
    r = patch(tenant, "m", {"name": "After"})
    assert r.status_code == 200, r.text
    assert_rl_headers(r)
    d = body(r)["data"]
    assert_record(d, "m", "After", "*****6789")
    assert (d["uuid"], d["created_at"]) == (before["uuid"], before["created_at"])
    assert d["updated_at"] >= before["updated_at"]
    assert body(get(tenant, "m"))["data"] == d

    d = body(patch(tenant, "m", {"tin": "AB-99887766"}))["data"]
    assert (d["name"], d["tin"]) == ("After", "*******7766")
    d = body(patch(tenant, "m", {"tin": None}))["data"]
    assert (d["name"], d["tin"]) == ("After", None)
    assert body(get(tenant, "m"))["data"] == d


def test_patch_without_changes_keeps_updated_at(tenant):
    """A patch naming no changeable field answers the stored record as it is."""
    before = create(tenant, "same", "Same")
    r = patch(tenant, "same", {})
    assert r.status_code == 200, r.text
    assert body(r)["data"] == before
    r = patch(tenant, "same", {"id": "same", "uuid": before["uuid"], "is_default": False, "other": 1})
    assert body(r)["data"] == before
    r = patch(tenant, "same", {"name": "Same", "tin": None})  # the stored values: no TIN
    assert body(r)["data"] == before


def test_patch_with_the_stored_values_keeps_updated_at(tenant):
    """Sending back the stored name and TIN (in clear) is no change: the
    record, updated_at included, stays as it was; a real change moves it."""
    before = create(tenant, "kept", "Kept", tin="12-3456789")
    time.sleep(0.005)  # a write would get a later millisecond; not a barrier
    for changes in ({"name": "Kept"}, {"tin": "12-3456789"}, {"name": "Kept", "tin": "12-3456789"}):
        r = patch(tenant, "kept", changes)
        assert r.status_code == 200, r.text
        assert body(r)["data"] == before, changes
    assert body(get(tenant, "kept"))["data"] == before
    after = body(patch(tenant, "kept", {"tin": "123456789"}))["data"]  # same digits, other text
    assert after["tin"] == "*****6789" and after["updated_at"] > before["updated_at"]


def test_patch_default_filer(tenant):
    """The default filer can be renamed and given a TIN; is_default may be
    repeated as true."""
    r = patch(tenant, "default", {"name": "Main", "tin": "55-5555555", "is_default": True})
    assert r.status_code == 200, r.text
    assert_record(body(r)["data"], "default", "Main", "******5555", is_default=True)


@pytest.mark.parametrize("filer_id,payload,issues", [
    ("p", {"id": "other"}, [custom("id", "id cannot be changed")]),
    ("p", {"uuid": "00000000-0000-4000-8000-000000000000"}, [custom("uuid", "uuid cannot be changed")]),
    ("p", {"is_default": True}, [custom("is_default", "is_default cannot be set through the API")]),
    ("default", {"is_default": False}, [custom("is_default", "is_default cannot be set through the API")]),
    ("p", {"is_default": None}, [wrong_type("is_default", "boolean", "null")]),
    ("p", {"is_default": "true"}, [wrong_type("is_default", "boolean", "string")]),
    ("p", {"name": None}, [wrong_type("name", "string", "null")]),
    ("p", {"id": None}, [wrong_type("id", "string", "null")]),
    ("p", {"name": ""}, [too_small("name")]),
    ("p", {"name": "n" * 257}, [too_big("name", 256)]),
    ("p", {"tin": ""}, [too_small("tin")]),
    ("p", {"tin": "12.34"}, [BAD_TIN]),
    ("p", {"name": "ok", "tin": "12.34", "id": "q"}, [custom("id", "id cannot be changed"), BAD_TIN]),
])
def test_patch_validation(tenant, filer_id, payload, issues):
    """PATCH bodies go through the validator; id, uuid and is_default cannot
    change (custom issue); a required field set to null is 400; nothing is
    changed by a refused patch."""
    if filer_id != "default":
        create(tenant, filer_id, "Kept", tin="123456789")
    before = body(get(tenant, filer_id))["data"]
    r = patch(tenant, filer_id, payload)
    assert r.status_code == 400, r.text
    assert body(r) == invalid(*issues)
    assert_rl_headers(r)
    assert body(get(tenant, filer_id))["data"] == before


def test_patch_unknown_filer_is_404(tenant):
    """A missing record: 404 naming the kind and the id as sent."""
    r = patch(tenant, "nobody/x", {"name": "n"})
    assert r.status_code == 404, r.text
    assert body(r) == not_found("nobody/x")
    assert_rl_headers(r)


def test_patch_refuses_malformed_json(tenant):
    r = send(tenant, "PATCH", "/v1/filers/default", data=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert body(r)["message"].startswith("Malformed JSON: ")


# ------------------------------------------------------------------ delete

def test_delete_answers_204_and_the_filer_is_gone(tenant):
    """DELETE: 204 without body; afterwards GET, PATCH and DELETE are 404 and
    the list no longer holds it; the id can be used again (new uuid)."""
    old = create(tenant, "gone", tin="123456789")
    assert delete(tenant, "gone").status_code == 204
    assert body(get(tenant, "gone")) == not_found("gone")
    assert body(patch(tenant, "gone", {"name": "x"})) == not_found("gone")
    r = delete(tenant, "gone")
    assert r.status_code == 404 and body(r) == not_found("gone")
    assert all_ids(tenant) == ["default"]
    new = create(tenant, "gone")
    assert new["uuid"] != old["uuid"] and new["tin"] is None


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_id_that_is_not_utf8_is_404(server, tenant, method):
    """A path id that decodes to bytes that are not UTF-8 cannot exist: 404,
    naming it with U+FFFD in place of the bad byte."""
    data = b'{"name":"x"}' if method == "PATCH" else None
    r = raw_request(server, method, "/v1/filers/a%FFb", headers={**tenant.auth(), "content-type": "application/json"},
                    body=data)
    assert r.status_code == 404, r.text
    assert body(r) == not_found("a\ufffdb")


def test_delete_unknown_filer_is_404(tenant):
    r = delete(tenant, "a/b %c")
    assert r.status_code == 404, r.text
    assert body(r) == not_found("a/b %c")
    assert_rl_headers(r)


def test_delete_default_filer_is_409(tenant):
    """409 for the default filer; it stays."""
    before = body(get(tenant, "default"))["data"]
    r = delete(tenant, "default")
    assert r.status_code == 409, r.text
    assert body(r) == {"error": "Conflict", "message": "The default filer cannot be deleted"}
    assert_rl_headers(r)
    assert body(get(tenant, "default"))["data"] == before


def _create_owner_and_account(tenant, owner_id, account_id, filer_id):
    r = send(tenant, "POST", "/v1/account-owners",
             {"id": owner_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, f"POST /v1/account-owners: {r.status_code} {r.text}"
    r = send(tenant, "POST", "/v1/accounts", {"id": account_id, "account_owner_id": owner_id, "filer_id": filer_id})
    assert r.status_code == 201, f"POST /v1/accounts: {r.status_code} {r.text}"
    assert body(r)["data"]["filer_id"] == filer_id
    return body(r)["data"]


def test_delete_filer_with_accounts_is_409(tenant):
    """409 for a filer that has accounts ("Filer '<id>' has accounts and cannot
    be deleted"); once its account moves to another filer it can be deleted."""
    create(tenant, "busy")
    _create_owner_and_account(tenant, "o1", "acc1", "busy")
    r = delete(tenant, "busy")
    assert r.status_code == 409, r.text
    assert body(r) == {"error": "Conflict", "message": "Filer 'busy' has accounts and cannot be deleted"}
    assert_rl_headers(r)
    assert get(tenant, "busy").status_code == 200

    r = send(tenant, "PATCH", "/v1/accounts/acc1", {"filer_id": "default"})
    assert r.status_code == 200, r.text
    assert delete(tenant, "busy").status_code == 204


def test_delete_filer_with_seeded_account_is_409(server, tenant):
    """The same rule at the row level, independent of the accounts API: any
    accounts.filer_uuid referencing the filer blocks the delete."""
    filer = create(tenant, "seeded")
    server.sql("INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type, created_at,"
               " updated_at) VALUES ('00000000-0000-4000-8000-00000000aa01', ?, 'seeded-owner', 'O',"
               " 'individual', 1, 1)", (tenant.tenant_id,))
    server.sql("INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, cost_basis_method,"
               " created_at, updated_at) VALUES ('00000000-0000-4000-8000-00000000aa02', ?, 'seeded-acc',"
               " '00000000-0000-4000-8000-00000000aa01', ?, 'FIFO', 1, 1)", (tenant.tenant_id, filer["uuid"]))
    r = delete(tenant, "seeded")
    assert body(r) == {"error": "Conflict", "message": "Filer 'seeded' has accounts and cannot be deleted"}
    server.sql("DELETE FROM accounts WHERE uuid = '00000000-0000-4000-8000-00000000aa02'")
    assert delete(tenant, "seeded").status_code == 204


def test_other_tenant_cannot_delete_or_patch(server, tenant):
    """Every write is scoped to the token's tenant (the full matrix is in
    test_isolation.py)."""
    create(tenant, "mine", tin="123456789")
    other = server.new_tenant("other")
    assert body(delete(other, "mine")) == not_found("mine")
    assert body(patch(other, "mine", {"name": "x"})) == not_found("mine")
    assert body(get(tenant, "mine"))["data"]["name"] == "Filer"
