"""Taxbit's tax-documentation routes over plain HTTP (issue 19, items 2, 3
and 5; docs/taxbit-sdk.md § 1.2 and § 6.1; docs/decisions.md "Taxbit's
tax-documentation routes"). The real SDK drives the same routes in
test_taxbit_sdk.py; here each rule is checked directly:
  - the SDK routes take only an owner token (a tenant token: 403 deny), read
    JSON sent as text/plain, answer status unwrapped ({} when nothing is on
    file) and submissions as {"data": [...]} with only the latest;
  - a COMPREHENSIVE submission is stored, answered back exactly as sent with
    unmask=true to the owner's token, masked otherwise; unmask with a tenant
    token is 403; every such answer is Cache-Control: no-store;
  - the status event of a COMPREHENSIVE submission is the native one
    (taxd's values, the same keys); Taxbit's values appear on the status
    routes only;
  - the server-side routes take the path's owner, refuse a body whose form
    is not the path's, and read native submissions in Taxbit's model;
  - documents: 404 without a W-form, 409 for an INCOMPLETE one, 201
    FINISHED, a signed URL that downloads a PDF with the name in it (checked
    with pdftotext), 404 for another owner, 403 for an altered link.
Every response is also checked against docs/openapi.yaml by conftest.
"""
import datetime
import subprocess

import pytest
import requests

from conftest import GATEWAY_DENY, body, run_taxd
from eventsupport import EventInbox, events_receiver, events_server  # noqa: F401 (fixtures)

STATUS_EVENT = "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS"
NOW = datetime.datetime.now(datetime.timezone.utc)
SIGNED_AT = NOW.strftime("%Y-%m-%dT%H:%M:%S.") + f"{NOW.microsecond // 1000:03d}Z"
SDK_STATUS = "/v1/tax-documentation-status"
SUBMISSIONS = "/v1/tax-documentation/submissions"
DOCUMENT = "/v1/tax-documentation/document"
SOURCE = "Taxbit React SDK v1.0.0-beta.6"
W9_TIN = "231456789"

# The bodies the SDK sent in the spikes of docs/taxbit-sdk.md § 1.3.
W9 = {"account_holder": {"address": {"city": "Seattle", "country": "US", "state_or_province": "WA",
                                     "first_line": "1 Main St", "postal_code": "98101"},
                         "name": "Jane Q Public", "ftin_not_legally_required": False, "tin": W9_TIN,
                         "is_us_person": True, "us_account_type": "INDIVIDUAL"},
      "document_type": "COMPREHENSIVE", "has_certified": True, "is_not_subject_backup_withholding": True,
      "questionnaire": "W-FORM", "schema_version": "1.0", "signature": "Jane Q Public",
      "signature_date": SIGNED_AT, "source": SOURCE}
W8BEN = {"account_holder": {"address": {"city": "Kraków", "country": "PL", "first_line": "ul. Długa 5"},
                            "country_of_citizenship": "PL", "date_of_birth": "07/02/1975",
                            "name": "Łukasz Dvořák Иванов", "ftin": "44051401359",
                            "ftin_not_legally_required": False, "is_us_person": False,
                            "foreign_account_type": "INDIVIDUAL"},
         "document_type": "COMPREHENSIVE", "has_certified": True, "is_not_subject_backup_withholding": False,
         "questionnaire": "W-FORM", "schema_version": "1.0", "signature": "Łukasz Dvořák Иванов",
         "signature_date": SIGNED_AT, "source": SOURCE}
DPS = {"account_holder": {"address": {"city": "Berlin", "country": "DE", "first_line": "Hauptstr. 1",
                                      "postal_code": "10115"},
                          "date_of_birth": "03/14/1980", "name": "Jürgen Müller",
                          "ftin_not_legally_required": False,
                          "tax_residences": [{"country": "DE", "tin": "12345678901", "tin_not_required": False}],
                          "vatin_not_required": True, "is_individual": True},
       "document_type": "COMPREHENSIVE", "is_not_subject_backup_withholding": False,
       "is_confirmed_correct_complete": True, "questionnaire": "DPS", "schema_version": "1.0",
       "signature_date": SIGNED_AT, "source": SOURCE}
NATIVE_W9 = {"document_type": "W-9", "name": "Ada Lovelace", "entity_classification": "INDIVIDUAL",
             "tin_type": "SSN", "tin": "123-45-6789",
             "address": {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701",
                         "country_code": "US"},
             "certified": True, "signature_date": NOW.strftime("%Y-%m-%d")}
NATIVE_W8_WITHOUT_TIN = {"document_type": "W-8BEN", "name": "Karl Weber", "country_of_citizenship": "DE",
                         "permanent_residence_address": {"line1": "Hauptstr. 1", "city": "Berlin",
                                                         "postal_code": "10115", "country_code": "DE"},
                         "date_of_birth": "1980-02-29", "certified": True,
                         "signature_date": NOW.strftime("%Y-%m-%d")}


def sdk_submit(tenant, token, doc, status=201):
    """POSTs doc as the SDK does: a JSON string with text/plain;charset=UTF-8."""
    import json
    r = tenant.request("POST", SUBMISSIONS, token,
                       data=json.dumps(doc).encode(), headers={"content-type": "text/plain;charset=UTF-8"})
    assert r.status_code == status, r.text
    return body(r)


def tdd(owner_id, rest=""):
    return f"/v1/account-owners/{owner_id}/tax-documentation-data{rest}"


@pytest.fixture(scope="module")
def tenant(events_server):
    return events_server.new_tenant("taxbit")


def owner(tenant, owner_id):
    return tenant.new_owner(owner_id), tenant.owner_token(owner_id)


# ---------------------------------------------------------------- who may call

def test_sdk_routes_refuse_a_tenant_token(tenant):
    for method, path in (("GET", SDK_STATUS), ("GET", SUBMISSIONS + "?questionnaire=DPS"),
                         ("POST", DOCUMENT)):
        r = tenant.request(method, path)
        assert r.status_code == 403 and body(r) == GATEWAY_DENY, (method, path, r.text)


def test_owner_token_reaches_only_its_own_server_side_routes(tenant):
    _, token = owner(tenant, "own")
    tenant.new_owner("other")
    assert tenant.request("GET", tdd("own"), token).status_code == 200
    r = tenant.request("GET", tdd("other"), token)
    assert r.status_code == 403 and body(r) == GATEWAY_DENY


# ---------------------------------------------------------------- submissions and status

def test_status_is_unwrapped_and_empty_when_nothing_is_on_file(tenant):
    _, token = owner(tenant, "empty")
    r = tenant.request("GET", SDK_STATUS, token)
    assert r.status_code == 200 and body(r) == {}
    r = tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM&unmask=true", token)
    assert r.status_code == 200 and body(r) == {"data": []}
    assert r.headers["cache-control"] == "no-store"


def test_w9_round_trip_event_and_status(events_server, events_receiver, tenant):
    inbox = EventInbox(events_server, events_receiver, tenant, STATUS_EVENT)
    uuid, token = owner(tenant, "w9")
    created = sdk_submit(tenant, token, W9)["data"]
    assert created["document_type"] == "W-9" and created["questionnaire"] == "W-FORM"

    # The event is taxd's own, with its values and keys, as for a native W-9.
    events = [inbox.next(), inbox.next()]  # the submission's, then the TIN check's (any order)
    pending = next(e for e in events if e["w_form_questionnaire"]["tin_status"] == "PENDING")
    assert pending["account_owner_id"] == uuid
    assert set(pending["w_form_questionnaire"]) == {"data_collection_status", "type", "needs_resubmission",
                                                    "tax_documentation_status", "issues", "tin_status"}
    assert pending["w_form_questionnaire"]["type"] == "W-9"

    # Read back exactly as sent, TIN in clear, to the owner's token only.
    r = tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM&unmask=true", token)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert body(r) == {"data": [W9]}
    masked = body(tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM", token))["data"][0]
    assert masked["account_holder"]["tin"] == "*****6789"
    assert body(tenant.request("GET", SUBMISSIONS + "?questionnaire=DPS", token)) == {"data": []}

    # Taxbit's words on the status route: the check ran (no match list: MISMATCH).
    status = body(tenant.request("GET", SDK_STATUS, token))
    assert set(status) == {"w_form_questionnaire"}
    w = status["w_form_questionnaire"]
    assert w["type"] == "W-9" and w["data_collection_status"] == "COMPLETE"
    assert w["tin_status"] == "MISMATCH" and w["needs_resubmission"] is True
    assert w["tin_validation_date"].endswith("Z")
    server_side = body(tenant.request("GET", "/v1/account-owners/w9/tax-documentation-status"))
    assert server_side == {"data": status}


def test_dps_status_words(tenant):
    _, token = owner(tenant, "dps")
    sdk_submit(tenant, token, DPS)
    d = body(tenant.request("GET", SDK_STATUS, token))["dps_questionnaire"]
    assert d["vat_status"] == "NOT_REQUIRED" and d["data_collection_status"] == "COMPLETE"
    assert d["expiration_date"].endswith("T00:00:00.000Z")
    data = body(tenant.request("GET", SUBMISSIONS + "?questionnaire=DPS&unmask=true", token))["data"]
    assert data == [DPS]


def test_only_the_latest_is_answered(tenant):
    _, token = owner(tenant, "latest")
    sdk_submit(tenant, token, W9)
    sdk_submit(tenant, token, W8BEN)
    data = body(tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM&unmask=true", token))["data"]
    assert data == [W8BEN]
    assert body(tenant.request("GET", SDK_STATUS, token))["w_form_questionnaire"]["tin_status"] == "FOREIGN"


def test_query_and_body_errors(tenant):
    _, token = owner(tenant, "errors")
    for query in ("", "?questionnaire=W9", "?questionnaire=DPS&unmask=yes"):
        r = tenant.request("GET", SUBMISSIONS + query, token)
        assert r.status_code == 400, (query, r.text)
    r = tenant.request("POST", SUBMISSIONS, token, data=b"{}",
                       headers={"content-type": "text/plain;charset=latin1"})
    assert r.status_code == 400
    b = sdk_submit(tenant, token, {}, status=400)
    assert b["issues"], b
    # nothing was stored
    assert body(tenant.request("GET", SDK_STATUS, token)) == {}


def test_unmask_needs_the_owner_token(tenant):
    _, token = owner(tenant, "unmask")
    sdk_submit(tenant, token, W9)
    r = tenant.request("GET", tdd("unmask", "?unmask=true"))
    assert r.status_code == 403 and "unmask" in body(r)["message"]
    masked = body(tenant.request("GET", tdd("unmask")))["data"]
    assert len(masked) == 1 and masked[0]["account_holder"]["tin"] == "*****6789"
    assert masked[0]["id"] and masked[0]["created_at"].endswith("Z")
    clear = body(tenant.request("GET", tdd("unmask", "?unmask=true"), token))["data"]
    assert clear[0]["account_holder"]["tin"] == W9_TIN


def test_tin_never_in_a_log_line(events_server, tenant):
    _, token = owner(tenant, "quiet")
    sdk_submit(tenant, token, W9)
    tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM&unmask=true", token)
    assert W9_TIN not in events_server.stderr_text()


# ---------------------------------------------------------------- server-side routes

def test_server_side_form_must_match_the_path(tenant):
    tenant.new_owner("paths")
    r = tenant.request("POST", tdd("paths", "/w-8ben"), json=W9)
    assert r.status_code == 400 and any(i["path"] == ["account_holder"] for i in body(r)["issues"]), r.text
    r = tenant.request("POST", tdd("paths", "/w-9"), json=W9)
    assert r.status_code == 201 and body(r)["data"]["document_type"] == "W-9"
    r = tenant.request("POST", tdd("paths", "/self-certification"), json=DPS)
    assert r.status_code == 201 and body(r)["data"]["document_type"] == "DPS"
    r = tenant.request("POST", tdd("nobody", "/w-9"), json=W9)
    assert r.status_code == 404
    data = body(tenant.request("GET", tdd("paths")))["data"]
    assert sorted(d["questionnaire"] for d in data) == ["DPS", "W-FORM"]


def test_native_submission_read_in_taxbits_model(tenant):
    _, token = owner(tenant, "native")
    r = tenant.request("POST", "/v1/account-owners/native/tax-documentation", json=NATIVE_W9)
    assert r.status_code == 201, r.text
    doc = body(tenant.request("GET", SUBMISSIONS + "?questionnaire=W-FORM&unmask=true", token))["data"][0]
    assert doc["document_type"] == "COMPREHENSIVE" and doc["questionnaire"] == "W-FORM"
    holder = doc["account_holder"]
    assert holder["name"] == "Ada Lovelace" and holder["us_account_type"] == "INDIVIDUAL"
    assert holder["tin"].replace("-", "") == "123456789"
    assert holder["address"]["first_line"] == "1 Main St" and holder["address"]["country"] == "US"


# ---------------------------------------------------------------- documents

def pdf_text(content, tmp_path):
    f = tmp_path / "form.pdf"
    f.write_bytes(content)
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(f), "-"], check=True, capture_output=True,
                          text=True).stdout


def test_document_of_a_w8ben(tenant, tmp_path):
    _, token = owner(tenant, "pdf")
    r = tenant.request("POST", DOCUMENT, token)
    assert r.status_code == 404, r.text  # no W-form on file
    sdk_submit(tenant, token, DPS)
    assert tenant.request("POST", DOCUMENT, token).status_code == 404  # DPS has no PDF
    sdk_submit(tenant, token, W8BEN)
    r = tenant.request("POST", DOCUMENT, token)  # no body, no content type, as the SDK sends it
    assert r.status_code == 201, r.text
    made = body(r)
    assert made["status"] == "FINISHED" and made["type"] == "W-8BEN"
    r = tenant.request("GET", f"{DOCUMENT}/{made['id']}", token)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    got = body(r)
    assert got["id"] == made["id"] and got["status"] == "FINISHED"
    dl = requests.get(got["url"], timeout=30)  # a file, not JSON: outside the API wrapper's checks
    assert dl.status_code == 200 and dl.headers["content-type"] == "application/pdf"
    assert dl.headers["cache-control"] == "no-store" and "x-request-id" in dl.headers
    assert dl.headers["content-disposition"] == f'attachment; filename="W-8BEN-{made["id"]}.pdf"'
    assert dl.content.startswith(b"%PDF-")
    text = pdf_text(dl.content, tmp_path)
    assert "Łukasz Dvořák Иванов" in text and "W-8BEN" in text
    # a link is the credential: altered, refused
    bad = tenant.server.api().get(got["url"].replace(tenant.server.url, "")[:-2] + "AA")
    assert bad.status_code == 403 and body(bad)["reason"] == "invalid_signature"


def test_document_is_the_owners_alone(tenant):
    _, token = owner(tenant, "mine")
    _, other = owner(tenant, "theirs")
    sdk_submit(tenant, token, W9)
    doc_id = body(tenant.request("POST", DOCUMENT, token))["id"]
    assert tenant.request("GET", f"{DOCUMENT}/{doc_id}", other).status_code == 404
    r = tenant.request("GET", tdd("mine", f"/document/{doc_id}"))
    assert r.status_code == 200 and body(r)["data"]["id"] == doc_id


def test_incomplete_w_form_has_no_document(tenant):
    _, token = owner(tenant, "incomplete")
    r = tenant.request("POST", "/v1/account-owners/incomplete/tax-documentation", json=NATIVE_W8_WITHOUT_TIN)
    assert r.status_code == 201, r.text
    state = body(tenant.request("GET", "/v1/account-owners/incomplete/tax-documentation"))["data"]
    assert state["w_form_questionnaire"]["data_collection_status"] == "INCOMPLETE"
    r = tenant.request("POST", DOCUMENT, token)
    assert r.status_code == 409, r.text
    assert tenant.request("POST", tdd("incomplete", "/document")).status_code == 409


@pytest.mark.parametrize("font", ["/nonexistent/font.ttf", "/etc/hostname"])
def test_serve_refuses_a_font_it_cannot_draw_with(tmp_path, font):
    """Every W-form's PDF needs the font: a missing file or one that is no
    TrueType font stops `serve` at start instead of failing each download."""
    p = run_taxd(["serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "t.db"), "--pdf-font", font])
    assert p.returncode != 0 and "--pdf-font" in p.stderr, p.stderr
