"""The SDK harness itself (tests/sdk), against tests/sdk/mock.mjs instead of taxd:
whether Taxbit's real client, driven by run.mjs (jsdom) and browser.mjs
(headless Chromium), completes each questionnaire against a server that answers
as docs/taxbit-sdk.md § 1.2 says, and fails, rather than hangs, when it cannot.
So a failure of tests/api/test_taxbit_sdk.py is taxd's, not the harness's.

Rules checked:
  - each questionnaire (DPS, W-9, W-8BEN, W-8BEN-E) reaches onSuccess; the body
    the SDK POSTs as text/plain;charset=UTF-8 carries the values typed
    (sdksupport.EXPECTED) and is what onSuccess reports; useTaxbit reads the
    status and the submission back, and for a W-form its document URL
    downloads a PDF;
  - in Chromium, from a page on another origin, every call is preceded by a
    CORS preflight from that origin; without the server's CORS answer the
    client fails with "Failed to fetch" within its deadline;
  - a value the SDK's own validation refuses stops the driver on that step,
    naming the message, instead of hanging.
"""
import json

import pytest
import requests

from sdksupport import (EXPECTED, KINDS, QUESTIONNAIRE, Mock, assert_subset, explain, free_port, sdk_run,
                        snake, values)


@pytest.fixture(scope="module")
def mock():
    m = Mock()
    yield m
    m.stop()


def posted(mock, token):
    return [e for e in mock.log() if e["authorization"] == f"Bearer {token}" and e["method"] == "POST"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_questionnaire_completes_against_the_mock(mock, kind):
    token = f"owner-{kind}"
    out = sdk_run(mock.url, token, kind)
    assert out["success"], explain(out)
    subs = [e for e in posted(mock, token) if e["path"] == "/v1/tax-documentation/submissions"]
    assert len(subs) == 1
    assert subs[0]["content_type"] == "text/plain;charset=UTF-8"
    sent = json.loads(subs[0]["body"])
    assert_subset(EXPECTED[kind], sent)
    assert sent == snake(out["clientData"])        # onSuccess reports what was sent
    assert snake(out["serverData"]) == sent        # useTaxbit reads it back
    paths = [(r["method"], r["path"].split("?")[0]) for r in out["requests"]]
    assert paths[:2] == [("GET", "/v1/tax-documentation-status"), ("POST", "/v1/tax-documentation/submissions")]
    assert all(200 <= r["status"] < 300 for r in out["requests"]), explain(out)
    if kind == "dps":
        assert out["documentUrl"] is None
        assert out["statusData"]["dpsQuestionnaire"]["dataCollectionStatus"] == "COMPLETE"
    else:
        assert ("POST", "/v1/tax-documentation/document") in paths
        assert out["statusData"]["wFormQuestionnaire"]["dataCollectionStatus"] == "COMPLETE"
        r = requests.get(out["documentUrl"], timeout=10)
        assert r.status_code == 200 and r.content.startswith(b"%PDF-")


def test_a_value_the_sdk_refuses_stops_the_driver(mock, tmp_path):
    v = values("w9")
    v["fields"]["accountHolderUsTin"] = "123-45-6789"   # on the SDK's deny list
    f = tmp_path / "w9.json"
    f.write_text(json.dumps(v))
    out = sdk_run(mock.url, "owner-refused", "w9", values_file=f, timeout=20)
    assert not out["success"]
    assert "stuck on step accountHolderTaxInformation" in out["error"] and "Invalid" in out["error"], out["error"]
    assert posted(mock, "owner-refused") == []


def test_browser_from_another_origin_uses_cors(tmp_path):
    page_port = free_port()
    origin = f"http://localhost:{page_port}"
    m = Mock(cors_origins=[origin])
    try:
        out = sdk_run(m.url, "owner-browser", "w9", browser=True, page_port=page_port)
        assert out["success"], explain(out)
        assert out["pageOrigin"] == origin and out["documentUrl"]
        seen = [e for e in m.log() if e["origin"] == origin]
        assert {e["method"] for e in seen} == {"OPTIONS", "GET", "POST"}
        assert all(e["method"] == "OPTIONS" or e["authorization"] == "Bearer owner-browser" for e in seen)
        sub = next(e for e in seen if e["method"] == "POST" and e["path"].endswith("/submissions"))
        assert sub["content_type"] == "text/plain;charset=UTF-8"
        assert_subset(EXPECTED["w9"], json.loads(sub["body"]))
    finally:
        m.stop()


def test_browser_without_cors_fails_fast(tmp_path):
    m = Mock(cors_origins=[])
    try:
        out = sdk_run(m.url, "owner-nocors", "w9", browser=True, timeout=20)
        assert not out["success"]
        assert out["errors"] == ["Failed to fetch"], explain(out)
        assert [e["method"] for e in m.log()] == ["OPTIONS"]   # the preflight, never the call
    finally:
        m.stop()
