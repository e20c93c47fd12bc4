"""Tax documentation: POST/GET /v1/account-owners/{accountOwnerId}/tax-documentation
and the events they cause (spec § Event catalog: ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS,
TAX_DOCUMENTATION_TIN_VALIDATION; docs/decisions.md § Tax documentation).

Rules checked:
  - a submission answers 201 {"data": {"tax_documentation_id": UUID v4, ...}};
  - "Every change of the state emits ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS
    (account_owner_id and exactly the objects on file; an object not on file is
    absent, and W-9-only and W-8-only fields appear only for their form)",
    checked field by field at a real HTTPS receiver for every document type;
  - GET answers the same objects as the last status event;
  - `issues` is an array of {issue_type, created_at, details[{field, description}]},
    empty when nothing is wrong;
  - each document type has its own schema: malformed bodies are 400 in the
    validation shape, and nothing is recorded;
  - the owner is looked up by the caller's id within the token's tenant: 404
    naming it when unknown, the same body for another tenant's owner;
  - a W-9's TIN never appears in a response, the log or the database in clear;
  - a W-9's TIN result emits TAX_DOCUMENTATION_TIN_VALIDATION and then a status
    event with the new tin_status (needs the TIN check engine, from the
    tin-validations branch: skipped while POST /v1/tin-validations is not routed).
Every response is also checked against docs/openapi.yaml by conftest.
"""
import datetime
import re
from pathlib import Path

import pytest

from conftest import body
from eventsupport import (EventInbox, assert_iso_date, assert_iso_datetime, assert_uuid4,
                          events_receiver, events_server)  # noqa: F401 (fixtures)

STATUS = "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS"
TIN_EVENT = "TAX_DOCUMENTATION_TIN_VALIDATION"
YEAR = datetime.datetime.now(datetime.timezone.utc).year
SIGNED = f"{YEAR - 1}-05-10"
EXPIRES = f"{YEAR + 2}-12-31"  # the end of the third calendar year after signing
W9_TIN = "123-45-6789"

W_FORM_COMMON = {"data_collection_status", "type", "needs_resubmission", "tax_documentation_status",
                 "issues"}
W9_KEYS = W_FORM_COMMON | {"tin_status"}                      # + tin_validation_date once validated
W8_KEYS = W_FORM_COMMON | {"expiration_date", "treaty_claim_status"}
DPS_KEYS = {"data_collection_status", "expiration_date", "vat_status"}  # + vat_validation_date
SELF_KEYS = {"data_collection_status", "needs_resubmission", "tax_documentation_status", "issues"}

ADDRESS_DE = {"line1": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115", "country_code": "DE"}
ADDRESS_US = {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701",
              "country_code": "US"}

W9 = {"document_type": "W-9", "name": "Ada Lovelace", "entity_classification": "INDIVIDUAL",
      "tin_type": "SSN", "tin": W9_TIN, "address": ADDRESS_US, "certified": True,
      "signature_date": SIGNED}
W8BEN = {"document_type": "W-8BEN", "name": "Karl Weber", "country_of_citizenship": "DE",
         "permanent_residence_address": ADDRESS_DE, "foreign_tin": "12345678901",
         "date_of_birth": "1980-02-29",
         "treaty_claim": {"country_code": "DE", "article": "10", "withholding_rate": "15",
                          "income_type": "Dividends"},
         "certified": True, "signature_date": SIGNED}
W8BENE = {"document_type": "W-8BEN-E", "name": "Weber GmbH", "country_of_organization": "DE",
          "chapter3_status": "CORPORATION", "permanent_residence_address": ADDRESS_DE,
          "foreign_tin_not_required_reason": "Not issued to this entity type",
          "certified": True, "signature_date": SIGNED}
DPS = {"document_type": "DPS", "name": "Weber GmbH", "seller_type": "ENTITY", "address": ADDRESS_DE,
       "tax_residences": [{"country_code": "DE", "tin": "12345678901"}], "vat_number": "DE123456789",
       "certified": True, "signature_date": SIGNED}
SELF_CERT = {"document_type": "SELF_CERTIFICATION", "name": "Karl Weber",
             "account_holder_type": "INDIVIDUAL", "address": ADDRESS_DE, "date_of_birth": "1980-02-29",
             "tax_residences": [{"country_code": "DE", "tin": "12345678901"}],
             "certified": True, "signature_date": SIGNED}


def url(owner_id):
    return f"/v1/account-owners/{owner_id}/tax-documentation"


def call(tenant, method, path, **kw):
    headers = dict(kw.pop("headers", {}) or {})
    headers.update(tenant.auth())
    return tenant.server.api().request(method, path, headers=headers, **kw)


def new_owner(tenant, owner_id="o1"):
    r = call(tenant, "POST", "/v1/account-owners",
             json={"id": owner_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    return body(r)["data"]["uuid"]


def submit(tenant, owner_id, doc, status=201):
    r = call(tenant, "POST", url(owner_id), json=doc)
    assert r.status_code == status, r.text
    return body(r)


def submitted(tenant, owner_id, doc):
    data = submit(tenant, owner_id, doc)["data"]
    assert_uuid4(data["tax_documentation_id"])
    assert data["document_type"] == doc["document_type"] and data["account_owner_id"] == owner_id
    return data["tax_documentation_id"]


def state(tenant, owner_id):
    r = call(tenant, "GET", url(owner_id))
    assert r.status_code == 200, r.text
    return body(r)["data"]


def check_issues(issues, expected_types):
    """The spec's issue shape, and the issue types in order."""
    assert isinstance(issues, list)
    for issue in issues:
        assert set(issue) == {"issue_type", "created_at", "details"}, issue
        assert isinstance(issue["issue_type"], str)
        assert_iso_datetime(issue["created_at"])
        assert isinstance(issue["details"], list) and issue["details"], issue
        for d in issue["details"]:
            assert set(d) == {"field", "description"} and all(isinstance(v, str) for v in d.values()), d
    assert [i["issue_type"] for i in issues] == expected_types


def payload(event):
    return {k: v for k, v in event.items() if k not in ("event_type", "event_id")}


@pytest.fixture(scope="module")
def tenant(events_server):
    return events_server.new_tenant("taxdocs")


# ---------------------------------------------------------------- status events, per document type

def test_status_event_for_each_document_type(events_server, events_receiver, tenant):
    """Each submission emits one status event carrying exactly the objects on
    file; W-9-only and W-8-only fields only for their form; GET answers the
    same objects as the last event."""
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS)
    owner_uuid = new_owner(tenant, "each")
    assert state(tenant, "each") == {"account_owner_id": owner_uuid}  # nothing on file

    submitted(tenant, "each", W8BEN)
    e = inbox.next()
    assert list(e) == ["event_type", "event_id", "account_owner_id", "w_form_questionnaire"]
    assert e["event_type"] == STATUS
    assert_uuid4(e["account_owner_id"])
    assert e["account_owner_id"] == owner_uuid
    w = e["w_form_questionnaire"]
    assert set(w) == W8_KEYS
    assert w["type"] == "W-8BEN" and w["data_collection_status"] == "COMPLETE"
    assert w["needs_resubmission"] is False and w["tax_documentation_status"] == "VALID"
    assert w["expiration_date"] == EXPIRES and w["treaty_claim_status"] == "VALID"
    assert_iso_date(w["expiration_date"])
    check_issues(w["issues"], [])
    assert state(tenant, "each") == payload(e)

    submitted(tenant, "each", DPS)
    e = inbox.next()
    assert list(e)[2:] == ["account_owner_id", "w_form_questionnaire", "dps_questionnaire"]
    assert e["w_form_questionnaire"] == w  # unchanged, still on file
    d = e["dps_questionnaire"]
    assert set(d) == DPS_KEYS | {"vat_validation_date"}
    assert d["data_collection_status"] == "COMPLETE" and d["vat_status"] == "VALID"
    assert d["expiration_date"] == EXPIRES
    assert_iso_date(d["expiration_date"])
    assert_iso_datetime(d["vat_validation_date"])
    assert state(tenant, "each") == payload(e)

    submitted(tenant, "each", dict(SELF_CERT, tax_residences=[{"country_code": "DE"},
                                                               {"country_code": "FR", "tin": "X1"}]))
    e = inbox.next()
    assert list(e)[2:] == ["account_owner_id", "w_form_questionnaire", "dps_questionnaire",
                           "self_certification"]
    s = e["self_certification"]
    assert set(s) == SELF_KEYS
    assert s["data_collection_status"] == "INCOMPLETE" and s["needs_resubmission"] is True
    assert s["tax_documentation_status"] == "INVALID"
    check_issues(s["issues"], ["MISSING_TIN"])
    assert s["issues"][0]["details"][0]["field"] == "tax_residences[0].tin"
    assert state(tenant, "each") == payload(e)

    # A W-9 replaces the W-8 as the current W-form: W-8-only fields go, W-9-only come.
    # The W-9's TIN check then changes tin_status: a second status event,
    # possibly delivered first (spec § Delivery rules 2).
    submitted(tenant, "each", W9)
    pair = [inbox.next(), inbox.next()]
    e = next(x for x in pair if x["w_form_questionnaire"]["tin_status"] == "PENDING")
    checked = next(x for x in pair if x is not e)
    w9 = e["w_form_questionnaire"]
    assert set(w9) == W9_KEYS  # tin_validation_date absent until validated
    assert w9["type"] == "W-9" and w9["tin_status"] == "PENDING"
    assert w9["needs_resubmission"] is False and w9["tax_documentation_status"] == "VALID"
    check_issues(w9["issues"], [])
    assert e["dps_questionnaire"] == d and e["self_certification"] == s
    assert checked["w_form_questionnaire"]["tin_status"] != "PENDING"
    assert state(tenant, "each") == payload(checked)

    submitted(tenant, "each", W8BENE)
    e = inbox.next()
    w8e = e["w_form_questionnaire"]
    assert set(w8e) == W8_KEYS and w8e["type"] == "W-8BEN-E"
    assert w8e["treaty_claim_status"] == "NOT_CLAIMED" and w8e["issues"] == []
    assert state(tenant, "each") == payload(e)


def test_each_object_alone(events_server, events_receiver, tenant):
    """Any combination may be present: an owner with only a DPS questionnaire
    (or only a self-certification) has no other object, not even empty ones."""
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS)
    uuid_dps = new_owner(tenant, "only-dps")
    uuid_self = new_owner(tenant, "only-self")
    submitted(tenant, "only-dps", dict(DPS, vat_number=None))
    e = inbox.next()
    assert payload(e) == {"account_owner_id": uuid_dps, "dps_questionnaire": {
        "data_collection_status": "COMPLETE", "expiration_date": EXPIRES, "vat_status": "NOT_PROVIDED"}}
    submitted(tenant, "only-self", SELF_CERT)
    e = inbox.next()
    assert payload(e) == {"account_owner_id": uuid_self, "self_certification": {
        "data_collection_status": "COMPLETE", "needs_resubmission": False,
        "tax_documentation_status": "VALID", "issues": []}}
    assert state(tenant, "only-self") == payload(e)


def test_identical_resubmission_emits_again(events_server, events_receiver, tenant):
    """Every accepted submission is a new current submission, so it emits a
    status event even when it repeats the previous one (decisions)."""
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS)
    new_owner(tenant, "again")
    first = submitted(tenant, "again", SELF_CERT)
    second = submitted(tenant, "again", SELF_CERT)
    assert first != second
    assert payload(inbox.next()) == payload(inbox.next())


# ---------------------------------------------------------------- soft problems are issues

def test_w8_soft_problems_become_issues(events_server, events_receiver, tenant):
    """A readable W-8 that would not stand is accepted with issues, and needs a resubmission."""
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS)
    new_owner(tenant, "w8-issues")
    doc = dict(W8BEN, country_of_citizenship="US", foreign_tin=None, certified=False,
               treaty_claim={"country_code": "FR", "article": "12", "withholding_rate": "0"},
               signature_date=f"{YEAR - 4}-06-01")
    submitted(tenant, "w8-issues", doc)
    w = inbox.next()["w_form_questionnaire"]
    check_issues(w["issues"], ["MISSING_CERTIFICATION", "US_INDICIA", "MISSING_FOREIGN_TIN",
                               "TREATY_COUNTRY_MISMATCH", "EXPIRED"])
    assert w["needs_resubmission"] is True and w["tax_documentation_status"] == "INVALID"
    assert w["data_collection_status"] == "INCOMPLETE"
    assert w["treaty_claim_status"] == "INVALID" and w["expiration_date"] == f"{YEAR - 1}-12-31"
    fields = [d["field"] for i in w["issues"] for d in i["details"]]
    assert fields == ["certified", "country_of_citizenship", "foreign_tin", "treaty_claim.country_code",
                      "signature_date"]


def test_dps_vat_number_of_the_wrong_structure(tenant):
    new_owner(tenant, "vat")
    submitted(tenant, "vat", dict(DPS, vat_number="DE12345"))
    d = state(tenant, "vat")["dps_questionnaire"]
    assert d["vat_status"] == "INVALID"
    assert_iso_datetime(d["vat_validation_date"])


# ---------------------------------------------------------------- 400s, per schema

BAD = [
    ("not an object", ["W-9"], []),
    ("unknown type", dict(W9, document_type="W-4"), ["document_type"]),
    ("no type", {k: v for k, v in W9.items() if k != "document_type"}, ["document_type"]),
    ("W-9 without tin", {k: v for k, v in W9.items() if k != "tin"}, ["tin"]),
    ("W-9 tin of 8 digits", dict(W9, tin="12345678"), ["tin"]),
    ("W-9 tin type", dict(W9, tin_type="FOREIGN"), ["tin_type"]),
    ("W-9 certified a string", dict(W9, certified="yes"), ["certified"]),
    ("W-9 address without country", dict(W9, address={"line1": "x", "city": "y"}),
     ["address", "country_code"]),
    ("W-8BEN without date_of_birth", {k: v for k, v in W8BEN.items() if k != "date_of_birth"},
     ["date_of_birth"]),
    ("W-8BEN lowercase country", dict(W8BEN, country_of_citizenship="de"), ["country_of_citizenship"]),
    ("W-8BEN treaty rate over 100", dict(W8BEN, treaty_claim={"country_code": "DE", "article": "10",
                                                               "withholding_rate": "150"}),
     ["treaty_claim", "withholding_rate"]),
    ("W-8BEN treaty rate a number", dict(W8BEN, treaty_claim={"country_code": "DE", "article": "10",
                                                               "withholding_rate": 15}),
     ["treaty_claim", "withholding_rate"]),
    ("W-8BEN-E chapter 3 status", dict(W8BENE, chapter3_status="LLC"), ["chapter3_status"]),
    ("W-8BEN-E without country", {k: v for k, v in W8BENE.items() if k != "country_of_organization"},
     ["country_of_organization"]),
    ("DPS without residences", dict(DPS, tax_residences=[]), ["tax_residences"]),
    ("DPS seller type", dict(DPS, seller_type="PERSON"), ["seller_type"]),
    ("DPS residence country", dict(DPS, tax_residences=[{"country_code": "Germany"}]),
     ["tax_residences", 0, "country_code"]),
    ("self-cert holder type missing", {k: v for k, v in SELF_CERT.items() if k != "account_holder_type"},
     ["account_holder_type"]),
    ("signature in the future", dict(SELF_CERT, signature_date=f"{YEAR + 1}-01-01"), ["signature_date"]),
    ("signature not a date", dict(SELF_CERT, signature_date="2024-02-30"), ["signature_date"]),
    ("W-8BEN born in 9999", dict(W8BEN, date_of_birth="9999-12-31"), ["date_of_birth"]),
    ("W-8BEN born before 1900", dict(W8BEN, date_of_birth="1899-12-31"), ["date_of_birth"]),
    ("self-cert born before 1900", dict(SELF_CERT, date_of_birth="1899-12-31"), ["date_of_birth"]),
    # issue 19, item 6: ISO 3166-1 membership wherever a country code is checked
    ("W-9 address country ZZ", dict(W9, address=dict(ADDRESS_US, country_code="ZZ")),
     ["address", "country_code"]),
    ("W-8BEN citizenship XK", dict(W8BEN, country_of_citizenship="XK"), ["country_of_citizenship"]),
    ("W-8BEN treaty country EL", dict(W8BEN, treaty_claim={"country_code": "EL", "article": "10",
                                                            "withholding_rate": "15"}),
     ["treaty_claim", "country_code"]),
    ("W-8BEN mailing country XX", dict(W8BEN, mailing_address=dict(ADDRESS_DE, country_code="XX")),
     ["mailing_address", "country_code"]),
    ("W-8BEN-E organization EU", dict(W8BENE, country_of_organization="EU"),
     ["country_of_organization"]),
    ("DPS residence country UK", dict(DPS, tax_residences=[{"country_code": "UK", "tin": "1"}]),
     ["tax_residences", 0, "country_code"]),
    ("self-cert residence XI", dict(SELF_CERT, tax_residences=[{"country_code": "XI", "tin": "1"}]),
     ["tax_residences", 0, "country_code"]),
    # at most 120 years back, by year difference (UTC), as Taxbit's client
    ("W-8BEN born 121 years ago", dict(W8BEN, date_of_birth=f"{YEAR - 121}-12-31"), ["date_of_birth"]),
    ("DPS born 121 years ago", dict(DPS, seller_type="INDIVIDUAL", date_of_birth=f"{YEAR - 121}-01-01"),
     ["date_of_birth"]),
]


def test_country_not_iso_message_and_birth_window_bounds(tenant):
    """The ISO issue names the rule, never the value; born exactly 120 years
    ago (by year) is accepted, and so is a minor: taxd has no 18+ rule, like
    the SDK (docs/decisions.md)."""
    new_owner(tenant, "iso")
    b = submit(tenant, "iso", dict(W8BEN, country_of_citizenship="ZZ"), status=400)
    assert b["issues"] == [{"code": "custom", "path": ["country_of_citizenship"],
                            "message": "Invalid country code: not an ISO 3166-1 alpha-2 country"}]
    b = submit(tenant, "iso", dict(W8BEN, date_of_birth=f"{YEAR - 121}-06-01"), status=400)
    assert b["issues"] == [{"code": "custom", "path": ["date_of_birth"],
                            "message": "date_of_birth cannot be more than 120 years ago"}]
    submitted(tenant, "iso", dict(W8BEN, date_of_birth=f"{YEAR - 120}-01-01"))
    submitted(tenant, "iso", dict(W8BEN, date_of_birth=f"{YEAR}-01-01"))
    submitted(tenant, "iso", dict(W8BEN, country_of_citizenship="GR",
                                  permanent_residence_address=dict(ADDRESS_DE, country_code="GR"),
                                  treaty_claim=None))


@pytest.mark.parametrize("name,doc,path", BAD, ids=[b[0] for b in BAD])
def test_400_per_schema(tenant, name, doc, path):
    owner = "bad-" + re.sub(r"[^a-z0-9]+", "-", name.lower())
    new_owner(tenant, owner)
    b = submit(tenant, owner, doc, status=400)
    assert b["error"] == "Bad Request" and b["message"] == "Invalid tax documentation", b
    assert path in [i["path"] for i in b["issues"]], b["issues"]
    if path == ["document_type"]:
        assert b["issues"][0]["values"] == ["W-9", "W-8BEN", "W-8BEN-E", "DPS", "SELF_CERTIFICATION"]
    assert "account_owner_id" in state(tenant, owner) and len(state(tenant, owner)) == 1  # nothing recorded


def test_400_malformed_json(tenant):
    new_owner(tenant, "malformed")
    r = call(tenant, "POST", url("malformed"), data=b'{"document_type":', headers={"content-type": "application/json"})
    assert r.status_code == 400 and body(r)["message"].startswith("Malformed JSON")


# ---------------------------------------------------------------- 404s

def test_404_unknown_owner_and_other_tenant(events_server, tenant):
    other = events_server.new_tenant("other")
    new_owner(other, "theirs")
    for owner in ("nobody", "theirs"):
        for method, kw in (("POST", {"json": W9}), ("GET", {})):
            r = call(tenant, method, url(owner), **kw)
            assert r.status_code == 404, r.text
            assert body(r) == {"error": "Not Found", "message": f"Account owner with id '{owner}' not found"}


# ---------------------------------------------------------------- the W-9 TIN stays secret

def test_w9_tin_never_in_clear(events_server, tenant):
    texts = []
    new_owner(tenant, "secret")
    texts.append(call(tenant, "POST", url("secret"), json=W9).text)
    texts.append(call(tenant, "POST", url("secret"), json=dict(W9, tin=W9_TIN + "0")).text)  # 400
    texts.append(call(tenant, "POST", url("secret"), json=dict(W9, tin_type="X")).text)      # 400
    texts.append(call(tenant, "GET", url("secret")).text)
    texts.append(events_server.stderr_text())
    for text in texts:
        assert W9_TIN not in text and "123456789" not in text, text[:300]
    rows = events_server.sql("SELECT tin_sealed, document_sealed FROM tax_documents WHERE document_type = 'W-9'")
    assert rows and all(len(tin) == len(W9_TIN) + 28 for tin, _ in rows)
    assert all(b"Ada Lovelace" not in doc for _, doc in rows)  # the document is sealed as a whole
    if events_server.db.backend != "sqlite":
        return  # the bytes of the database files: SQLite's file and WAL only
    db = Path(events_server.db)
    for f in (db, Path(str(db) + "-wal")):
        if f.exists():
            raw = f.read_bytes()
            assert W9_TIN.encode() not in raw and b"123456789" not in raw, f"clear TIN in {f.name}"


# ---------------------------------------------------------------- the W-9 TIN result (needs the merge)

def test_w9_tin_result_events(events_server, events_receiver, tenant):
    """TAX_DOCUMENTATION_TIN_VALIDATION names the submission, then a status
    event carries the W-9's new tin_status and its tin_validation_date."""
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS, TIN_EVENT)
    owner_uuid = new_owner(tenant, "w9-flow")
    doc_id = submitted(tenant, "w9-flow", W9)
    # Delivery order is not guaranteed (spec § Delivery rules 2): classify the three events.
    received = [inbox.next() for _ in range(3)]
    statuses = [e for e in received if e["event_type"] == STATUS]
    results = [e for e in received if e["event_type"] == TIN_EVENT]
    assert len(statuses) == 2 and len(results) == 1, received
    pending = [e for e in statuses if e["w_form_questionnaire"]["tin_status"] == "PENDING"]
    after = [e for e in statuses if e["w_form_questionnaire"]["tin_status"] != "PENDING"]
    assert len(pending) == 1 and len(after) == 1, statuses
    assert set(pending[0]["w_form_questionnaire"]) == W9_KEYS
    result, after = results[0], after[0]
    assert list(result) == ["event_type", "event_id", "tax_documentation_id", "account_owner_id",
                            "account_owner_external_id", "status", "validation_date"]
    assert result["tax_documentation_id"] == doc_id
    assert result["account_owner_id"] == owner_uuid and result["account_owner_external_id"] == "w9-flow"
    assert result["status"] in ("VALID", "INVALID_FORMAT", "MISMATCH"), result
    # A well-formed SSN and no --tin-match-file on this server: nothing to match it against.
    assert result["status"] == "MISMATCH", result
    assert_iso_datetime(result["validation_date"])
    w = after["w_form_questionnaire"]
    assert set(w) == W9_KEYS | {"tin_validation_date"}
    assert w["tin_status"] == result["status"] and w["tin_validation_date"] == result["validation_date"]
    if result["status"] in ("MISMATCH", "INVALID_FORMAT"):
        assert w["needs_resubmission"] is True and w["issues"][-1]["issue_type"].startswith("TIN_")
    assert state(tenant, "w9-flow") == payload(after)


def test_scope_tax_documents(events_server):
    """The routes need the scope `tax-documents`: a credential limited to
    `accounts` is refused, one with `tax-documents` reaches the handler."""
    accounts_only = events_server.new_tenant("scoped", scopes="accounts")
    for method, kw in (("POST", {"json": W9}), ("GET", {})):
        assert call(accounts_only, method, url("x"), **kw).status_code == 403
    docs_only = events_server.new_tenant("scoped2", scopes="tax-documents")
    for method, kw in (("POST", {"json": W9}), ("GET", {})):
        assert call(docs_only, method, url("x"), **kw).status_code == 404
