"""Accounts (POST/GET/PATCH /v1/accounts): black-box tests against build/taxd.

Rules checked, in the words of spec.md and docs/decisions.md where they have
them:
  - "POST /v1/accounts: 409 when the id is already in use"; a retry after a
    lost response gets 409 and "the client reads the record back by its id"
    (spec § Retry safety 3);
  - 404 bodies "name the missing resource": the account, the account owner
    (checked first) or the filer, by the id as sent;
  - validation failures are 400 with `issues` whose `path` names the field
    and, for fixed-value fields, `values` lists the accepted values;
  - austria_tax_year is required with AUSTRIA and refused otherwise, also on
    the merged record of a PATCH (merge patch semantics);
  - lists are ordered by caller id with opaque cursors and an optional owner
    filter;
  - every read and write is scoped to the token's tenant.
Every response is also validated against docs/openapi.yaml by conftest.

Owners and filers are made through their own endpoints (POST
/v1/account-owners, POST /v1/filers).
"""
from urllib.parse import quote

import pytest

from conftest import GATEWAY_DENY, INVALID_HEADER, RFC3339_MS_Z_RE, UUID4_RE, body

METHODS = ["FIFO", "HIFO", "AUSTRIA"]
ENUM_MESSAGE = 'Invalid option: expected one of "FIFO"|"HIFO"|"AUSTRIA"'
REQUIRED_YEAR = "Required when cost_basis_method is AUSTRIA"
ONLY_AUSTRIA = "Only allowed when cost_basis_method is AUSTRIA"
CLEAR_YEAR = "Set to null explicitly to change cost_basis_method from AUSTRIA"

# Ids that need percent-encoding in a path: '/', '%', '+', space, non-ASCII.
RESERVED_IDS = ["a/b", "50%", "a+b", "a b", "k\u00f6ln-\u6771\u4eac", "x/%2F+ \u00e9"]


# ------------------------------------------------------------------ helpers

def path_of(account_id):
    return "/v1/accounts/" + quote(account_id, safe="")


def call(tenant, method, path, json=None, token=None, **kw):
    headers = dict(tenant.auth(token))
    return tenant.server.api().request(method, path, headers=headers, json=json, **kw)


def post(tenant, payload):
    return call(tenant, "POST", "/v1/accounts", json=payload)


def patch(tenant, account_id, payload):
    return call(tenant, "PATCH", path_of(account_id), json=payload)


def get(tenant, account_id):
    return call(tenant, "GET", path_of(account_id))


def make_owner(tenant, owner_id):
    r = call(tenant, "POST", "/v1/account-owners",
             json={"id": owner_id, "name": f"Owner {owner_id}", "account_owner_type": "individual"})
    assert r.status_code == 201, f"creating owner {owner_id!r}: {r.status_code} {r.text}"


def make_filer(tenant, filer_id):
    r = call(tenant, "POST", "/v1/filers", json={"id": filer_id, "name": f"Filer {filer_id}"})
    assert r.status_code == 201, f"creating filer {filer_id!r}: {r.status_code} {r.text}"


def create(tenant, payload):
    r = post(tenant, payload)
    assert r.status_code == 201, f"{r.status_code} {r.text}"
    return body(r)["data"]


def expected_record(created, **fields):
    """The record with its service-made fields (uuid, times) taken from
    `created`, everything else as listed."""
    rec = {"name": None, "filer_id": "default", "cost_basis_method": "FIFO",
           "austria_tax_year": None}
    rec.update(fields)
    rec.update({k: created[k] for k in ("uuid", "created_at", "updated_at")})
    return rec


def not_found(message):
    return {"error": "Not Found", "message": message}


def invalid(*issues):
    return {"error": "Bad Request", "message": "Invalid account", "issues": list(issues)}


def custom(field, message):
    return {"code": "custom", "path": [field], "message": message}


def enum_issue(field="cost_basis_method"):
    return {"code": "invalid_value", "path": [field], "message": ENUM_MESSAGE, "values": METHODS}


def assert_status(r, status, expected_body):
    assert r.status_code == status, f"expected {status}, got {r.status_code} {r.text}"
    assert body(r) == expected_body


@pytest.fixture
def owned(server):
    """A fresh tenant with account owner "o1"."""
    t = server.new_tenant("accounts")
    make_owner(t, "o1")
    return t


# --------------------------------------------------------------------- create

def test_create_answers_201_with_defaults(owned):
    """An account without filer_id uses the default filer "default"; the
    method defaults to FIFO; optional fields answer null."""
    r = post(owned, {"id": "acc-1", "account_owner_id": "o1"})
    assert r.status_code == 201, r.text
    data = body(r)["data"]
    assert UUID4_RE.match(data["uuid"]), data
    assert RFC3339_MS_Z_RE.match(data["created_at"]) and data["created_at"] == data["updated_at"]
    assert data == expected_record(data, id="acc-1", account_owner_id="o1")
    assert_status(get(owned, "acc-1"), 200, {"data": data})


def test_create_with_every_field(owned):
    make_filer(owned, "f2")
    data = create(owned, {"id": "acc-2", "account_owner_id": "o1", "filer_id": "f2",
                          "name": "Brokerage \u00e9", "cost_basis_method": "HIFO"})
    assert data == expected_record(data, id="acc-2", account_owner_id="o1", filer_id="f2",
                                   name="Brokerage \u00e9", cost_basis_method="HIFO")


def test_create_null_optionals_mean_absent(owned):
    data = create(owned, {"id": "acc-n", "account_owner_id": "o1", "filer_id": None,
                          "name": None, "cost_basis_method": None, "austria_tax_year": None})
    assert data == expected_record(data, id="acc-n", account_owner_id="o1")


def test_austria_with_year(owned):
    data = create(owned, {"id": "at", "account_owner_id": "o1", "cost_basis_method": "AUSTRIA",
                          "austria_tax_year": 2024})
    assert data == expected_record(data, id="at", account_owner_id="o1",
                                   cost_basis_method="AUSTRIA", austria_tax_year=2024)


def test_austria_without_year_is_400(owned):
    r = post(owned, {"id": "at", "account_owner_id": "o1", "cost_basis_method": "AUSTRIA"})
    assert_status(r, 400, invalid(custom("austria_tax_year", REQUIRED_YEAR)))
    assert get(owned, "at").status_code == 404


@pytest.mark.parametrize("method", ["HIFO", "FIFO", None])
def test_year_without_austria_is_400(owned, method):
    """HIFO (or FIFO, or the default) with a year: refused, nothing stored."""
    payload = {"id": "y", "account_owner_id": "o1", "austria_tax_year": 2024}
    if method is not None:
        payload["cost_basis_method"] = method
    assert_status(post(owned, payload), 400, invalid(custom("austria_tax_year", ONLY_AUSTRIA)))
    assert get(owned, "y").status_code == 404


@pytest.mark.parametrize("value", ["LIFO", "fifo", "", 1])
def test_cost_basis_method_lists_values(owned, value):
    r = post(owned, {"id": "e", "account_owner_id": "o1", "cost_basis_method": value})
    assert_status(r, 400, invalid(enum_issue()))


@pytest.mark.parametrize("payload,issue", [
    ({"account_owner_id": "o1"},
     {"code": "invalid_type", "path": ["id"], "expected": "string",
      "message": "Invalid input: expected string, received undefined"}),
    ({"id": "x"},
     {"code": "invalid_type", "path": ["account_owner_id"], "expected": "string",
      "message": "Invalid input: expected string, received undefined"}),
    ({"id": "", "account_owner_id": "o1"},
     {"code": "too_small", "path": ["id"], "origin": "string", "minimum": 1, "inclusive": True,
      "message": "Too small: expected string to have >=1 characters"}),
    ({"id": "x" * 257, "account_owner_id": "o1"},
     {"code": "too_big", "path": ["id"], "origin": "string", "maximum": 256, "inclusive": True,
      "message": "Too big: expected string to have <=256 characters"}),
    ({"id": "\u00e9" * 129, "account_owner_id": "o1"},
     {"code": "custom", "path": ["id"], "message": "Too big: expected id to have <=256 bytes"}),
    ({"id": "x", "account_owner_id": "\u00e9" * 129},
     {"code": "custom", "path": ["account_owner_id"],
      "message": "Too big: expected id to have <=256 bytes"}),
    ({"id": "x", "account_owner_id": "o1", "filer_id": "\u00e9" * 129},
     {"code": "custom", "path": ["filer_id"], "message": "Too big: expected id to have <=256 bytes"}),
    ({"id": "x", "account_owner_id": "o1", "name": ""},
     {"code": "too_small", "path": ["name"], "origin": "string", "minimum": 1, "inclusive": True,
      "message": "Too small: expected string to have >=1 characters"}),
    ({"id": "x", "account_owner_id": "o1", "cost_basis_method": "AUSTRIA", "austria_tax_year": 1999},
     {"code": "too_small", "path": ["austria_tax_year"], "origin": "number", "minimum": 2000,
      "inclusive": True, "message": "Too small: expected number to be >=2000"}),
    ({"id": "x", "account_owner_id": "o1", "cost_basis_method": "AUSTRIA", "austria_tax_year": 2101},
     {"code": "too_big", "path": ["austria_tax_year"], "origin": "number", "maximum": 2100,
      "inclusive": True, "message": "Too big: expected number to be <=2100"}),
    ({"id": "x", "account_owner_id": "o1", "cost_basis_method": "AUSTRIA", "austria_tax_year": "2024"},
     {"code": "invalid_type", "path": ["austria_tax_year"], "expected": "number",
      "message": "Invalid input: expected number, received string"}),
])
def test_create_validation_names_the_field(owned, payload, issue):
    assert_status(post(owned, payload), 400, invalid(issue))


def test_longest_ids_and_name_are_accepted(owned):
    """256 bytes of id (128 two-byte characters) and a 256-character name of
    four-byte characters are stored and answered unchanged."""
    long_owner = "\u00e9" * 128
    make_owner(owned, long_owner)
    account_id = "\u00e9" * 128
    name = "\U0001F600" * 256
    data = create(owned, {"id": account_id, "account_owner_id": long_owner, "name": name})
    assert data == expected_record(data, id=account_id, account_owner_id=long_owner, name=name)
    assert_status(get(owned, account_id), 200, {"data": data})


def test_create_body_must_be_json(owned):
    r = owned.server.api().request("POST", "/v1/accounts", headers=owned.auth())
    assert_status(r, 400, {"error": "Bad Request", "message": "Request body is required"})
    r = owned.server.api().request("POST", "/v1/accounts",
                                   headers={**owned.auth(), "content-type": "text/plain"},
                                   data=b'{"id":"x","account_owner_id":"o1"}')
    assert_status(r, 400, {"error": "Bad Request",
                           "message": "Content-Type must be application/json"})


# ------------------------------------------------------------- 409 and 404

def test_retry_after_lost_response_gets_409_then_reads_back(owned):
    """Spec § Retry safety 3: a retry after a success returns 409, so the
    client reads the record back by its id."""
    payload = {"id": "retry-me", "account_owner_id": "o1", "name": "Savings"}
    first = create(owned, payload)
    r = post(owned, payload)
    assert_status(r, 409, {"error": "Conflict",
                           "message": "Account with id 'retry-me' already exists"})
    assert_status(get(owned, "retry-me"), 200, {"data": first})


def test_409_even_with_other_fields(owned):
    """The taken id decides first: a different body (even with a missing
    owner) still answers 409, and the stored record is unchanged."""
    first = create(owned, {"id": "taken", "account_owner_id": "o1"})
    r = post(owned, {"id": "taken", "account_owner_id": "nobody", "cost_basis_method": "HIFO"})
    assert_status(r, 409, {"error": "Conflict", "message": "Account with id 'taken' already exists"})
    assert_status(get(owned, "taken"), 200, {"data": first})


def test_missing_owner_is_404_naming_it(owned):
    r = post(owned, {"id": "a", "account_owner_id": "ghost/1 %"})
    assert_status(r, 404, not_found("Account owner 'ghost/1 %' not found"))
    assert get(owned, "a").status_code == 404


def test_missing_filer_is_404_naming_it(owned):
    r = post(owned, {"id": "a", "account_owner_id": "o1", "filer_id": "no-such-filer"})
    assert_status(r, 404, not_found("Filer 'no-such-filer' not found"))
    assert get(owned, "a").status_code == 404


def test_owner_is_checked_before_filer(owned):
    r = post(owned, {"id": "a", "account_owner_id": "ghost", "filer_id": "no-such-filer"})
    assert_status(r, 404, not_found("Account owner 'ghost' not found"))


@pytest.mark.parametrize("account_id", RESERVED_IDS)
def test_unknown_account_404_names_the_decoded_id(owned, account_id):
    assert_status(get(owned, account_id), 404,
                  not_found(f"Account with id '{account_id}' not found"))
    assert_status(patch(owned, account_id, {"name": "n"}), 404,
                  not_found(f"Account with id '{account_id}' not found"))


@pytest.mark.parametrize("account_id", RESERVED_IDS)
def test_reserved_characters_round_trip(owned, account_id):
    data = create(owned, {"id": account_id, "account_owner_id": "o1"})
    assert data["id"] == account_id
    assert_status(get(owned, account_id), 200, {"data": data})


def test_id_that_is_not_utf8_is_404(owned):
    """%FF decodes to a byte that no stored id can hold; the message shows it
    as U+FFFD (a JSON string cannot carry the raw byte)."""
    r = call(owned, "GET", "/v1/accounts/a%FFb")
    assert_status(r, 404, not_found("Account with id 'a\ufffdb' not found"))


def test_unknown_account_needs_token_and_scope(server):
    t = server.new_tenant("scoped", scopes="assets")
    r = server.api().get("/v1/accounts/x")
    assert_status(r, 401, INVALID_HEADER)
    assert_status(t.get("/v1/accounts/x"), 403, GATEWAY_DENY)
    assert_status(call(t, "POST", "/v1/accounts", json={"id": "x", "account_owner_id": "o"}),
                  403, GATEWAY_DENY)


# ---------------------------------------------------------------------- PATCH

def test_patch_replaces_present_fields_and_keeps_absent_ones(owned):
    make_owner(owned, "o2")
    make_filer(owned, "f2")
    made = create(owned, {"id": "p", "account_owner_id": "o1", "name": "Old"})
    r = patch(owned, "p", {"account_owner_id": "o2", "filer_id": "f2", "name": "New",
                           "cost_basis_method": "HIFO"})
    assert r.status_code == 200, r.text
    data = body(r)["data"]
    assert data["uuid"] == made["uuid"] and data["created_at"] == made["created_at"]
    assert RFC3339_MS_Z_RE.match(data["updated_at"]) and data["updated_at"] >= made["updated_at"]
    assert data == expected_record(data, id="p", account_owner_id="o2", filer_id="f2", name="New",
                                   cost_basis_method="HIFO")
    assert_status(get(owned, "p"), 200, {"data": data})

    r = patch(owned, "p", {"name": None})
    assert r.status_code == 200, r.text
    assert body(r)["data"] == dict(data, name=None, updated_at=body(r)["data"]["updated_at"])


def test_patch_without_changes_keeps_updated_at(owned):
    made = create(owned, {"id": "same", "account_owner_id": "o1", "name": "N"})
    assert_status(patch(owned, "same", {}), 200, {"data": made})
    assert_status(patch(owned, "same", {"id": "same", "uuid": made["uuid"], "name": "N",
                                        "account_owner_id": "o1"}), 200, {"data": made})


def test_patch_takes_the_uuid_back_in_either_case_but_the_id_exactly(owned):
    made = create(owned, {"id": "cased", "account_owner_id": "o1"})
    r = patch(owned, "cased", {"uuid": made["uuid"].upper(), "name": "Upper uuid"})
    assert r.status_code == 200, r.text
    assert body(r)["data"]["uuid"] == made["uuid"] and body(r)["data"]["name"] == "Upper uuid"
    assert_status(patch(owned, "cased", {"id": "CASED"}), 400,
                  invalid(custom("id", "Cannot be changed")))


def test_patch_cannot_change_id_or_uuid(owned):
    made = create(owned, {"id": "fixed", "account_owner_id": "o1"})
    r = patch(owned, "fixed", {"id": "other", "uuid": "00000000-0000-4000-8000-000000000000",
                               "name": "changed?"})
    assert_status(r, 400, invalid(custom("id", "Cannot be changed"),
                                  custom("uuid", "Cannot be changed")))
    assert_status(get(owned, "fixed"), 200, {"data": made})


@pytest.mark.parametrize("payload,issue", [
    ({"account_owner_id": None},
     {"code": "invalid_type", "path": ["account_owner_id"], "expected": "string",
      "message": "Invalid input: expected string, received null"}),
    ({"filer_id": None},
     {"code": "invalid_type", "path": ["filer_id"], "expected": "string",
      "message": "Invalid input: expected string, received null"}),
    ({"id": None},
     {"code": "invalid_type", "path": ["id"], "expected": "string",
      "message": "Invalid input: expected string, received null"}),
    ({"cost_basis_method": None}, enum_issue()),
    ({"cost_basis_method": "LIFO"}, enum_issue()),
    ({"name": ""},
     {"code": "too_small", "path": ["name"], "origin": "string", "minimum": 1, "inclusive": True,
      "message": "Too small: expected string to have >=1 characters"}),
    ({"account_owner_id": "\u00e9" * 129},
     {"code": "custom", "path": ["account_owner_id"],
      "message": "Too big: expected id to have <=256 bytes"}),
])
def test_patch_validation(owned, payload, issue):
    made = create(owned, {"id": "v", "account_owner_id": "o1"})
    assert_status(patch(owned, "v", payload), 400, invalid(issue))
    assert_status(get(owned, "v"), 200, {"data": made})


def test_patch_austria_rules_on_the_merged_record(owned):
    made = create(owned, {"id": "m", "account_owner_id": "o1"})
    # FIFO -> AUSTRIA needs a year in the same patch.
    assert_status(patch(owned, "m", {"cost_basis_method": "AUSTRIA"}), 400,
                  invalid(custom("austria_tax_year", REQUIRED_YEAR)))
    # A year on a FIFO account is refused.
    assert_status(patch(owned, "m", {"austria_tax_year": 2024}), 400,
                  invalid(custom("austria_tax_year", ONLY_AUSTRIA)))
    assert_status(get(owned, "m"), 200, {"data": made})

    r = patch(owned, "m", {"cost_basis_method": "AUSTRIA", "austria_tax_year": 2024})
    assert r.status_code == 200, r.text
    austria = body(r)["data"]
    assert austria == dict(made, cost_basis_method="AUSTRIA", austria_tax_year=2024,
                           updated_at=austria["updated_at"])

    # The year alone may change; it cannot be cleared while the method is AUSTRIA.
    r = patch(owned, "m", {"austria_tax_year": 2025})
    assert r.status_code == 200 and body(r)["data"]["austria_tax_year"] == 2025, r.text
    assert_status(patch(owned, "m", {"austria_tax_year": None}), 400,
                  invalid(custom("austria_tax_year", REQUIRED_YEAR)))

    # Leaving AUSTRIA with a stored year must say "austria_tax_year": null.
    assert_status(patch(owned, "m", {"cost_basis_method": "HIFO"}), 400,
                  invalid(custom("austria_tax_year", CLEAR_YEAR)))
    assert_status(patch(owned, "m", {"cost_basis_method": "FIFO", "austria_tax_year": 2026}), 400,
                  invalid(custom("austria_tax_year", ONLY_AUSTRIA)))
    assert body(get(owned, "m"))["data"]["austria_tax_year"] == 2025

    r = patch(owned, "m", {"cost_basis_method": "FIFO", "austria_tax_year": None})
    assert r.status_code == 200, r.text
    assert body(r)["data"] == dict(made, updated_at=body(r)["data"]["updated_at"])


def test_patch_missing_references_are_404(owned):
    made = create(owned, {"id": "r", "account_owner_id": "o1"})
    assert_status(patch(owned, "r", {"account_owner_id": "ghost"}), 404,
                  not_found("Account owner 'ghost' not found"))
    assert_status(patch(owned, "r", {"filer_id": "no-filer"}), 404,
                  not_found("Filer 'no-filer' not found"))
    assert_status(patch(owned, "r", {"account_owner_id": "ghost", "filer_id": "no-filer"}), 404,
                  not_found("Account owner 'ghost' not found"))
    assert_status(get(owned, "r"), 200, {"data": made})


def test_patch_order_of_checks(owned):
    """Shape (400) before the account (404) before the merged rules (400)."""
    assert_status(patch(owned, "nope", {"cost_basis_method": "LIFO"}), 400, invalid(enum_issue()))
    assert_status(patch(owned, "nope", {"austria_tax_year": 2024}), 404,
                  not_found("Account with id 'nope' not found"))
    create(owned, {"id": "ord", "account_owner_id": "o1"})
    assert_status(patch(owned, "ord", {"austria_tax_year": 2024, "account_owner_id": "ghost"}), 400,
                  invalid(custom("austria_tax_year", ONLY_AUSTRIA)))


def test_patch_body_is_required(owned):
    create(owned, {"id": "b", "account_owner_id": "o1"})
    r = owned.server.api().request("PATCH", path_of("b"), headers=owned.auth())
    assert_status(r, 400, {"error": "Bad Request", "message": "Request body is required"})


# ----------------------------------------------------------------------- list

def list_page(tenant, query=""):
    r = call(tenant, "GET", "/v1/accounts" + query)
    assert r.status_code == 200, r.text
    return body(r)


def walk(tenant, base_query, limit):
    """Every page of a list; returns (ids per page, records)."""
    pages, records, cursor = [], [], None
    while True:
        q = f"{base_query}{'&' if base_query else '?'}limit={limit}"
        if cursor is not None:
            q += "&cursor=" + quote(cursor, safe="")
        b = list_page(tenant, q)
        pages.append([a["id"] for a in b["data"]])
        records += b["data"]
        cursor = b["meta"]["next_cursor"]
        if cursor is None:
            return pages, records
        assert len(pages) < 50, "cursor never ended"


def test_list_is_ordered_by_id_and_paginated(owned):
    ids = ["b", "a/1", "C", "a", "\u00e9t\u00e9", "a 2"]
    made = {i: create(owned, {"id": i, "account_owner_id": "o1"}) for i in ids}
    in_order = sorted(ids, key=lambda s: s.encode())  # byte order, as SQLite compares
    pages, records = walk(owned, "", 2)
    assert pages == [in_order[0:2], in_order[2:4], in_order[4:6]]
    assert records == [made[i] for i in in_order]
    assert list_page(owned) == {"data": [made[i] for i in in_order], "meta": {"next_cursor": None}}
    pages, _ = walk(owned, "", 4)
    assert pages == [in_order[0:4], in_order[4:6]]


def test_list_of_empty_tenant(server):
    t = server.new_tenant("empty")
    assert list_page(t) == {"data": [], "meta": {"next_cursor": None}}


@pytest.mark.parametrize("query,issue", [
    ("?limit=0", {"code": "too_small", "path": ["limit"], "origin": "number", "minimum": 1,
                  "inclusive": True, "message": "Too small: expected number to be >=1"}),
    ("?limit=101", {"code": "too_big", "path": ["limit"], "origin": "number", "maximum": 100,
                    "inclusive": True, "message": "Too big: expected number to be <=100"}),
    ("?cursor=%21%21", {"code": "custom", "path": ["cursor"], "message": "Invalid cursor"}),
])
def test_list_query_validation(owned, query, issue):
    r = call(owned, "GET", "/v1/accounts" + query)
    assert_status(r, 400, {"error": "Bad Request", "message": "Invalid query parameters",
                           "issues": [issue]})


def test_list_filtered_by_owner(owned):
    make_owner(owned, "o 2/x")
    mine = [create(owned, {"id": f"o1-{n}", "account_owner_id": "o1"}) for n in range(3)]
    theirs = [create(owned, {"id": f"o2-{n}", "account_owner_id": "o 2/x"}) for n in range(2)]
    assert list_page(owned, "?account_owner_id=o1")["data"] == mine
    _, records = walk(owned, "?account_owner_id=" + quote("o 2/x", safe=""), 1)
    assert records == theirs
    pages, _ = walk(owned, "?account_owner_id=o1", 2)
    assert pages == [["o1-0", "o1-1"], ["o1-2"]]
    # An unknown owner has no accounts: an empty list, not 404.
    assert list_page(owned, "?account_owner_id=ghost") == {"data": [], "meta": {"next_cursor": None}}
    # The filter follows a PATCH that moves an account to another owner.
    assert patch(owned, "o1-0", {"account_owner_id": "o 2/x"}).status_code == 200
    assert [a["id"] for a in list_page(owned, "?account_owner_id=o1")["data"]] == ["o1-1", "o1-2"]


# ------------------------------------------------------------------- tenancy

def test_tenant_isolation(server):
    """Records addressed by caller ids are looked up within the token's
    tenant: another tenant's account is not found, the same caller ids can be
    used by two tenants, and another tenant's owner is not found either."""
    a = server.new_tenant("A")
    b = server.new_tenant("B")
    make_owner(a, "o1")
    a_rec = create(a, {"id": "shared", "account_owner_id": "o1", "name": "A's"})

    assert_status(get(b, "shared"), 404, not_found("Account with id 'shared' not found"))
    assert_status(patch(b, "shared", {"name": "B's"}), 404,
                  not_found("Account with id 'shared' not found"))
    assert list_page(b) == {"data": [], "meta": {"next_cursor": None}}
    assert list_page(b, "?account_owner_id=o1")["data"] == []
    # A's owner does not exist for B.
    assert_status(post(b, {"id": "shared", "account_owner_id": "o1"}), 404,
                  not_found("Account owner 'o1' not found"))

    # The same caller ids are free in B.
    make_owner(b, "o1")
    b_rec = create(b, {"id": "shared", "account_owner_id": "o1", "cost_basis_method": "HIFO"})
    assert b_rec["uuid"] != a_rec["uuid"]
    assert_status(get(a, "shared"), 200, {"data": a_rec})
    assert_status(get(b, "shared"), 200, {"data": b_rec})
    assert list_page(a)["data"] == [a_rec]
    assert list_page(b)["data"] == [b_rec]


def test_patch_cannot_reach_another_tenants_filer(server):
    a = server.new_tenant("A")
    b = server.new_tenant("B")
    make_filer(a, "a-filer")
    make_owner(b, "o1")
    create(b, {"id": "acc", "account_owner_id": "o1"})
    assert_status(patch(b, "acc", {"filer_id": "a-filer"}), 404,
                  not_found("Filer 'a-filer' not found"))
    assert_status(post(b, {"id": "acc2", "account_owner_id": "o1", "filer_id": "a-filer"}), 404,
                  not_found("Filer 'a-filer' not found"))
