"""Taxbit's own browser client against taxd (issue 19, item 7; docs/taxbit-sdk.md):
the real `TaxbitQuestionnaire` and `useTaxbit` of @taxbit/react-sdk 1.0.0-beta.6
(tests/sdk, pinned), with only the origin of the SDK's hard-coded base URL swapped
for taxd's by a fetch wrapper, driven through every step by the values in
tests/sdk/values/. The harness itself is checked against a mock in
test_sdk_harness.py, so a failure here is taxd's.

Rules checked, per questionnaire (DPS, W-9, W-8BEN, W-8BEN-E), against the real binary:
  - the SDK reaches onSuccess with an account-owner token (every call it
    makes answers 2xx; the submission POST, sent as text/plain, answers JSON);
  - useTaxbit reads back the status (data_collection_status COMPLETE, the
    derived type, Taxbit's tin_status / vat_status values) and, with
    unmask=true, exactly the submission the SDK sent, TINs in clear;
  - taxd stored it: GET /v1/account-owners/{id}/tax-documentation shows the
    document type COMPLETE, and GET .../tax-documentation-data with the tenant
    token answers the submitted fields as typed, TINs never in clear;
  - the submission emits ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS for that owner
    (at a real HTTPS receiver) with the document type COMPLETE;
  - for a W-form, useTaxbit's generateDocumentUrl gives a URL that downloads a
    PDF (`%PDF-`) whose text (pdftotext) holds the name typed, non-Latin
    letters included; DPS offers no document.
And in Debian's headless Chromium, from a page on another origin:
  - the W-9 completes through CORS preflights when taxd runs with
    --cors-origin naming the page's origin, PDF URL included;
  - from an origin not listed, the client fails ("Failed to fetch").
"""
import pytest
import requests

from conftest import HTTP_TIMEOUT_S, Server, body, check_request_id, poll
from eventsupport import EventInbox, events_receiver  # noqa: F401 (fixture)
from sdksupport import (CLEAR_TINS, EXPECTED, FORM, KINDS, QUESTIONNAIRE, TIN_KEYS, assert_subset, explain,
                        free_port, pdf_text, sdk_run, snake)

STATUS = "ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS"
STATE_KEY = {"dps": "dps_questionnaire", "w9": "w_form_questionnaire", "w8ben": "w_form_questionnaire",
             "w8bene": "w_form_questionnaire"}
W9_TIN_STATUSES = {"PENDING", "VALID_SSN_MATCH"}  # the match list holds its SSN and name


@pytest.fixture(scope="module")
def page_port():
    return free_port()


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory, taxd_bin, events_receiver, page_port):  # noqa: F811
    root = tmp_path_factory.mktemp("srv")
    match = root / "tins.csv"  # the W-9's SSN and name match: the check says VALID
    match.write_text("SSN,231-45-6789,Jane Q Public\n")
    s = Server(root, args=("--webhook-ca-file", str(events_receiver.ca_pem), "--tin-match-file", str(match),
                           "--cors-origin", f"http://localhost:{page_port}")).start()
    yield s
    s.stop_and_check()


def stored_document(data, questionnaire):
    """The COMPREHENSIVE document of `questionnaire` in the answer of GET
    .../tax-documentation-data: `data` a list of documents (latest per
    questionnaire) or an object keyed by questionnaire."""
    if isinstance(data, dict) and questionnaire in data:
        return data[questionnaire]
    assert isinstance(data, list), f"unexpected tax-documentation-data: {data!r}"
    found = [d for d in data if d.get("questionnaire") == questionnaire]
    assert found, f"no {questionnaire} document in {data!r}"
    return found[0]


def status_event(inbox, owner_uuid, key, form):
    """The status event of this owner that shows `form` COMPLETE (a W-9 may
    emit a second one when its TIN check ends)."""
    seen = []
    for _ in range(3):
        e = inbox.next()
        seen.append(e)
        obj = e.get(key) or {}
        if (e["account_owner_id"] == owner_uuid and obj.get("data_collection_status") == "COMPLETE"
                and (key == "dps_questionnaire" or obj.get("type") == form)):
            return e
    raise AssertionError(f"no {STATUS} with {form} COMPLETE for the owner: {seen}")


def download(server, url):
    """GET of the document link without any token (the link is the credential)."""
    with requests.Session() as s:
        r = s.get(url, timeout=HTTP_TIMEOUT_S, allow_redirects=False)
    check_request_id(server, r)
    return r


def check_pdf(server, url, name, tmp_path):
    r = download(server, url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/pdf")
    assert r.content.startswith(b"%PDF-")
    text = pdf_text(r.content, tmp_path)
    assert name in " ".join(text.split()), f"{name!r} not in the PDF's text:\n{text[:2000]}"


def check_run(out, kind):
    """What the client itself saw: success, every call 2xx, the status and the
    submission read back by useTaxbit."""
    assert out["success"], explain(out)
    assert out["errors"] == [], explain(out)
    assert all(200 <= r["status"] < 300 for r in out["requests"]), explain(out)
    post = next(r for r in out["requests"] if r["method"] == "POST" and r["path"].endswith("/submissions"))
    assert post["content_type"].startswith("application/json"), post
    sent = snake(out["clientData"])
    assert_subset(EXPECTED[kind], sent)              # the driver typed what the values file says
    assert snake(out["serverData"]) == sent          # unmask=true answers the submission as sent
    st = snake(out["statusData"])
    obj = st[STATE_KEY[kind]]
    assert obj["data_collection_status"] == "COMPLETE", st
    if kind == "dps":
        assert obj["vat_status"] == "NOT_REQUIRED", st   # the values tick "VAT not required"
        assert out["documentUrl"] is None
    else:
        assert obj["type"] == FORM[kind] and obj["needs_resubmission"] is False, st
        assert obj["tin_status"] in (W9_TIN_STATUSES if kind == "w9" else {"FOREIGN"}), st
        assert out["documentUrl"], explain(out)
    return sent


@pytest.mark.parametrize("kind", KINDS)
def test_questionnaire_completes_and_is_stored(sdk_server, events_receiver, kind, tmp_path):  # noqa: F811
    t = sdk_server.new_tenant(f"sdk-{kind}")
    inbox = EventInbox(sdk_server, events_receiver, t, STATUS)
    owner_type = "entity" if kind == "w8bene" else "individual"
    owner_uuid = t.new_owner(f"o-{kind}", owner_type)
    token = t.owner_token(f"o-{kind}")

    out = sdk_run(sdk_server.url, token, kind)
    check_run(out, kind)
    key, form = STATE_KEY[kind], FORM[kind]

    # taxd's own state of the owner
    r = t.request("GET", f"/v1/account-owners/o-{kind}/tax-documentation")
    assert r.status_code == 200, r.text
    obj = body(r)["data"][key]
    assert obj["data_collection_status"] == "COMPLETE", body(r)
    if key == "w_form_questionnaire":
        assert obj["type"] == form, body(r)

    # the server-side route, tenant token: the fields as typed, TINs masked
    r = t.request("GET", f"/v1/account-owners/o-{kind}/tax-documentation-data")
    assert r.status_code == 200, r.text
    doc = stored_document(body(r)["data"], QUESTIONNAIRE[kind])
    assert_subset(EXPECTED[kind], doc, skip_keys=TIN_KEYS)
    for tin in CLEAR_TINS[kind]:
        assert tin not in r.text, "a TIN in clear on the tenant's route"

    e = status_event(inbox, owner_uuid, key, form)
    assert e[key]["data_collection_status"] == "COMPLETE"

    if kind != "dps":
        check_pdf(sdk_server, out["documentUrl"], EXPECTED[kind]["account_holder"]["name"], tmp_path)
    if kind == "w9":  # the TIN check matched the list: Taxbit's word for it on the SDK's route
        def matched():
            w = body(t.request("GET", "/v1/tax-documentation-status", token))["w_form_questionnaire"]
            return w if w["tin_status"] != "PENDING" else None
        w = poll(matched, 60, what="the W-9's TIN check")
        assert w["tin_status"] == "VALID_SSN_MATCH" and w["needs_resubmission"] is False, w


def test_w9_in_chromium_from_another_origin(sdk_server, page_port, tmp_path):
    t = sdk_server.new_tenant("sdk-browser")
    t.new_owner("o-browser")
    token = t.owner_token("o-browser")
    out = sdk_run(sdk_server.url, token, "w9", browser=True, page_port=page_port)
    assert out["pageOrigin"] == f"http://localhost:{page_port}"
    check_run(out, "w9")
    r = t.request("GET", "/v1/account-owners/o-browser/tax-documentation")
    assert r.status_code == 200 and body(r)["data"]["w_form_questionnaire"]["type"] == "W-9", r.text
    check_pdf(sdk_server, out["documentUrl"], "Jane Q Public", tmp_path)


def test_chromium_from_an_unlisted_origin_is_refused(sdk_server, page_port):
    t = sdk_server.new_tenant("sdk-no-cors")
    t.new_owner("o-no-cors")
    token = t.owner_token("o-no-cors")
    other = free_port()
    assert other != page_port
    out = sdk_run(sdk_server.url, token, "w9", browser=True, page_port=other, timeout=20)
    assert not out["success"]
    assert out["errors"] == ["Failed to fetch"], explain(out)
    r = t.request("GET", "/v1/account-owners/o-no-cors/tax-documentation")
    assert r.status_code == 200 and "w_form_questionnaire" not in body(r)["data"], r.text
