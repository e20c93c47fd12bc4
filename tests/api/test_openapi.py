"""docs/openapi.yaml itself: the document the response checks rely on must
be a sound OpenAPI 3.1 description of every public endpoint."""
import json
import os
import pathlib
import re
import subprocess
import threading
import time

import pytest
import requests
from jsonschema import Draft202012Validator

from conftest import OPENAPI_PATH, raw_request

ROUTES_C = pathlib.Path(__file__).resolve().parents[2] / "src" / "api" / "routes.c"


def routed_operations():
    """Every (method, template) in the server's route table, test hooks aside:
    the document must describe exactly these."""
    text = ROUTES_C.read_text()
    ops = {(m.lower(), p) for m, p in re.findall(r'\{"([A-Z]+)", "(/[^"]*)"', text)}
    return {(m, p) for m, p in ops if not p.startswith("/_test")}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _walk_refs(node, out):
    if isinstance(node, dict):
        if "$ref" in node:
            out.append(node["$ref"])
        for v in node.values():
            _walk_refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _walk_refs(v, out)


def test_openapi_version_and_operations(openapi):
    """OpenAPI 3.1 describing every endpoint (token, filers get/list, healthz, metrics), not the test hooks."""
    doc = openapi.doc
    assert str(doc["openapi"]).startswith("3.1")
    ops = {(m, p) for p, item in doc["paths"].items() for m in item if m in HTTP_METHODS}
    assert ops == routed_operations()
    assert not any(p.startswith("/_test") for p in doc["paths"])


def test_openapi_refs_resolve(openapi):
    """Every $ref points at something that exists."""
    refs = []
    _walk_refs(openapi.doc, refs)
    assert refs
    for ref in set(refs):
        assert ref.startswith("#/"), ref
        openapi.resolver.resolve(ref)


def test_openapi_component_schemas_are_valid_2020_12(openapi):
    """Every component schema is a valid JSON Schema 2020-12 (what OpenAPI 3.1 uses)."""
    for name, schema in openapi.doc["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", ["StandardError", "ValidationError", "ValidationIssue", "GatewayDeny",
                                  "RateLimitError", "TimeoutError", "TransactionsError", "LookupError"])
def test_openapi_error_components(openapi, name):
    """Components for the error shapes of the spec's Errors section exist."""
    assert name in openapi.doc["components"]["schemas"]


def test_openapi_error_shapes_match_examples(openapi):
    """The error components accept the spec's bodies and refuse the wrong shape."""
    def ok(name, value):
        v = openapi.schema_validator({"$ref": f"#/components/schemas/{name}"})
        return v.is_valid(value)
    assert ok("StandardError", {"error": "Not Found", "message": "x"})
    assert not ok("StandardError", {"message": "x"})
    assert ok("ValidationError", {"error": "Bad Request", "message": "m", "issues": [
        {"code": "invalid_value", "path": ["grant_type"], "message": "m", "values": ["client_credentials"]},
        {"code": "too_small", "path": ["items", 0, "id"], "message": "m", "minimum": 1}]})
    assert not ok("ValidationError", {"error": "Bad Request", "message": "m"})
    assert not ok("ValidationError", {"error": "Bad Request", "message": "m", "issues": [{"code": "x"}]})
    assert ok("GatewayDeny", {"Message": "User is not authorized to access this resource"})
    assert not ok("GatewayDeny", {"message": "lowercase"})
    assert ok("RateLimitError", {"error": "rate_limit_exceeded", "message": "Too many requests."})
    assert ok("RateLimitError", {"error": "Too Many Requests", "message": "Too Many Requests"})
    assert ok("TimeoutError", {"message": "Endpoint request timed out"})
    assert ok("TransactionsError", {"status": "error", "message": "m", "data": [{"code": "c", "message": "m",
                                                                               "path": ["a"]}],
                                    "error": {"errorType": "t", "errBody": [], "errorMessage": "m"}})
    assert ok("LookupError", {"status": "error", "message": "no transaction x for tenant y"})


def test_openapi_every_response_documents_request_id(openapi):
    """Every response carries the header x-request-id: each documented response declares it as required."""
    for path, item in openapi.doc["paths"].items():
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            for status, resp in op["responses"].items():
                resp = openapi.deref(resp)
                headers = {k.lower(): openapi.deref(v) for k, v in (resp.get("headers") or {}).items()}
                assert "x-request-id" in headers, f"{method} {path} {status}"
                assert headers["x-request-id"].get("required") is True


def test_openapi_security(openapi):
    """Every API call carries a bearer token (JWT); /healthz, /metrics and the token endpoint need none."""
    doc = openapi.doc
    scheme = doc["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "JWT"
    assert doc["security"] == [{"bearerAuth": []}]
    for path in ("/v1/oauth/token",):
        assert doc["paths"][path]["post"]["security"] == []
    for path in ("/healthz", "/livez", "/readyz", "/metrics"):
        assert doc["paths"][path]["get"]["security"] == []
    for path in ("/v1/filers", "/v1/filers/{filerId}"):
        assert "security" not in doc["paths"][path]["get"]
        responses = doc["paths"][path]["get"]["responses"]
        assert {"401", "403", "429"} <= set(responses)


# ------------------------------------------------- issue 15: a strict document

OPENAPI_TOOLS = pathlib.Path(__file__).resolve().parents[1] / "openapi"
REDOCLY = OPENAPI_TOOLS / "node_modules" / ".bin" / "redocly"
SRC = pathlib.Path(__file__).resolve().parents[2] / "src"


def test_redocly_lint_finds_no_problem():
    """The document is valid OpenAPI 3.1 for a real validator: Redocly CLI
    (pinned in tests/openapi, installed by scripts/install-deps) with the
    strict recommended ruleset (tests/openapi/redocly.yaml) reports no error
    and no warning, and each problem it is told to ignore still exists (the
    ignore file says why each is kept)."""
    if not REDOCLY.exists():
        pytest.fail(f"{REDOCLY} is missing: run scripts/install-deps (npm ci in tests/openapi)", pytrace=False)
    env = dict(os.environ, REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true", NO_COLOR="1")
    p = subprocess.run([str(REDOCLY), "lint", str(OPENAPI_PATH), "--config", str(OPENAPI_TOOLS / "redocly.yaml"),
                        "--format=json"], capture_output=True, text=True, timeout=120, env=env)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"redocly lint exited {p.returncode} without a JSON report:\n{p.stdout}\n{p.stderr}")
    problems = [f"{x['severity']} {x['ruleId']}: {x['message']} at {[l.get('pointer') for l in x['location']]}"
                for x in report["problems"]]
    assert report["totals"]["errors"] == 0 and report["totals"]["warnings"] == 0, "\n".join(problems)
    assert report["totals"]["ignored"] == 3, report["totals"]
    assert p.returncode == 0, p.stderr


def route_scopes():
    """{(method, template): scope name or None} from src/api/routes.c, with the
    names of src/core/scopes.c in the bit order of src/core/scopes.h."""
    bits = dict(re.findall(r"(SCOPE_[A-Z_]+) = 1u << (\d+)", (SRC / "core" / "scopes.h").read_text()))
    names_block = re.search(r"scope_names\[\] = \{(.*?)\};", (SRC / "core" / "scopes.c").read_text(), re.S)
    names = re.findall(r'"([^"]+)"', names_block.group(1))
    out = {}
    for m, p, scope in re.findall(r'\{"([A-Z]+)", "(/[^"]*)",\s*(SCOPE_[A-Z_]+|0)', ROUTES_C.read_text()):
        if not p.startswith("/_test"):
            out[(m.lower(), p)] = None if scope == "0" else names[int(bits[scope])]
    return out


def test_every_operation_names_the_scope_its_route_needs(openapi):
    """Each operation that needs a token says "Needs the scope `X`" with the
    name the server knows for its route's scope (TIN validations need
    `tax-documents`: there is no scope `tax_documents`); a route without a
    scope names none."""
    scopes = route_scopes()
    assert scopes == {k: scopes[k] for k in routed_operations()}
    for (method, path), scope in scopes.items():
        named = re.findall(r"Needs the scope `([^`]+)`", openapi.doc["paths"][path][method].get("description", ""))
        assert named == ([scope] if scope else []), f"{method} {path}: names {named}, the route needs {scope}"
    for tag in openapi.doc["tags"]:
        for named in re.findall(r"scope `([^`]+)`", tag.get("description", "")):
            assert named in set(scopes.values()), f"tag {tag['name']} names an unknown scope {named}"


def _responses(openapi):
    for path, item in openapi.doc["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                for status, resp in op["responses"].items():
                    yield method, path, status, openapi.deref(resp)


def _header(openapi, resp, name):
    headers = {k.lower(): openapi.deref(v) for k, v in (resp.get("headers") or {}).items()}
    return headers.get(name.lower())


def test_every_429_requires_retry_after(openapi):
    """Rule: every 429 carries Retry-After (the gateway's with the bucket's
    wait, load shedding's with 1): the document requires it on each, and on
    the load-shedding response it is exactly 1 with the exact body."""
    seen = set()
    for method, path, status, resp in _responses(openapi):
        if status != "429":
            continue
        seen.add((method, path))
        h = _header(openapi, resp, "Retry-After")
        assert h is not None and h.get("required") is True, f"{method} {path} 429 lacks a required Retry-After"
        assert h["schema"]["type"] == "integer" and h["schema"].get("minimum", h["schema"].get("const")) == 1
    # /healthz, /livez and /metrics run on the connection thread and are never
    # shed (src/api/routes.c, ROUTE_INLINE): no 429 documented there.
    never_shed = {("get", "/healthz"), ("get", "/livez"), ("get", "/metrics")}
    assert seen == set(routed_operations()) - never_shed
    shed = openapi.deref({"$ref": "#/components/responses/LoadShed"})
    assert _header(openapi, shed, "Retry-After")["schema"]["const"] == 1
    v = openapi.schema_validator(shed["content"]["application/json"]["schema"])
    assert v.is_valid({"error": "Too Many Requests", "message": "Too Many Requests"})
    assert not v.is_valid({"error": "rate_limit_exceeded", "message": "Too many requests."})


def test_transport_answers_require_no_rate_limit_headers(openapi):
    """Rule: the router and the transport answer before the gateway, so
    without x-ratelimit-*: the 400 of a malformed path parameter on every
    route with one (PATCH /v1/accounts/{accountId} included), 413 and 429
    (load shedding) everywhere. Their documented responses must not require
    the headers."""
    for method, path, status, resp in _responses(openapi):
        router_400 = status == "400" and "{" in path
        if router_400 or status in ("413", "429"):
            for name in ("x-ratelimit-limit", "x-ratelimit-remaining"):
                h = _header(openapi, resp, name)
                assert h is None or not h.get("required"), f"{method} {path} {status} requires {name}"


def test_malformed_path_parameters_match_the_document(server, tenant):
    """Every route with a path parameter answers a malformed percent-escape
    with the router's 400, and that answer matches the document
    (raw_request checks it), with a valid token and a body."""
    for method, template in sorted(routed_operations()):
        if "{" not in template:
            continue
        target = re.sub(r"\{[^}]+\}", "%zz", template)
        body = b"{}" if method in ("post", "patch") else None
        r = raw_request(server, method.upper(), target,
                        headers={**tenant.auth(), "content-type": "application/json"}, body=body)
        assert r.status_code == 400, (method, target, r.status_code, r.text)
        assert not any(h in r.headers for h in ("x-ratelimit-limit", "x-ratelimit-remaining")), (method, target)


def test_rate_limit_headers_say_they_report_the_tighter_bucket(openapi):
    """x-ratelimit-limit and -remaining report the tighter of the tenant's and
    the endpoint's buckets (api/gateway.c), and the document says so."""
    for name in ("XRateLimitLimit", "XRateLimitRemaining"):
        text = " ".join(openapi.doc["components"]["headers"][name]["description"].split())
        assert "tighter" in text and "tenant" in text and "endpoint" in text, name


def _request_schema(openapi, method, path):
    op = openapi.doc["paths"][path][method]
    return openapi.schema_validator(op["requestBody"]["content"]["application/json"]["schema"])


ASSET_OK = {"code": "OKC", "name": "Ok coin", "type": "crypto", "decimals": 8}


def test_an_assets_batch_with_invalid_elements_is_a_valid_request(openapi, tenant):
    """Rule: a batch answers each element on its own (200, an `error` result
    for an invalid one), so the document lets a validating client send a batch
    with invalid elements; only the array itself (1 to 1,000) is a rule of the
    whole request."""
    v = _request_schema(openapi, "post", "/v1/assets")
    batch = [ASSET_OK, {"code": "bad code!", "name": "x", "type": "crypto"}, {"name": "no code"}, "text"]
    assert v.is_valid(batch)
    assert v.is_valid(ASSET_OK) and not v.is_valid({"code": "bad code!", "name": "x", "type": "crypto"})
    assert not v.is_valid([]) and not v.is_valid([ASSET_OK] * 1001) and not v.is_valid(5)
    r = tenant.server.api().post("/v1/assets", json=batch, headers=tenant.auth())
    assert r.status_code == 200, r.text
    assert [x["status"] for x in r.json()["data"]] == ["created", "error", "error", "error"]
    r = tenant.server.api().post("/v1/assets", json=[], headers=tenant.auth())
    assert r.status_code == 400, r.text


def test_a_transactions_batch_with_invalid_elements_is_a_valid_request(openapi, tenant):
    """The same rule for the transactions batch."""
    v = _request_schema(openapi, "post", "/v1/transactions/external-id")
    batch = [{"id": "t1"}, "text", 7]
    assert v.is_valid(batch)
    assert not v.is_valid([]) and not v.is_valid([{}] * 1001)
    r = tenant.server.api().post("/v1/transactions/external-id", json=batch, headers=tenant.auth())
    assert r.status_code == 200, r.text
    assert [x["status"] for x in r.json()["data"]] == ["error"] * 3


def test_account_owner_patch_keeps_the_rules_of_create(openapi):
    """AccountOwnerPatch states every rule of AccountOwnerCreate (types,
    patterns, lengths, enumerations), each field optional."""
    schemas = openapi.doc["components"]["schemas"]
    create, patch = schemas["AccountOwnerCreate"], schemas["AccountOwnerPatch"]
    assert "required" not in patch
    for name, rule in create["properties"].items():
        def strip(x):
            return {k: v for k, v in x.items() if k != "description"}
        assert strip(patch["properties"][name]) == strip(rule), name


OWNER_PATCH_CASES = [
    ({"email": "a@b@c"}, False), ({"email": "@b"}, False), ({"tax_country_code": "us"}, False),
    ({"tin": "- -"}, False), ({"birth_date": "1999-1-1"}, False), ({"tin_type": "XYZ"}, False),
    ({"name": ""}, False), ({"name": None}, False), ({"address": {"line1": ""}}, False),
    ({"address": {"line1": "1 Main St", "country_code": "usa"}}, False), ({"id": ""}, False),
    ({"email": "a@b"}, True), ({"tax_country_code": "DE"}, True),
    ({"tin": "12-34 56", "tin_type": "FOREIGN"}, True), ({"birth_date": "1990-02-28"}, True),
    ({"email": None, "address": None}, True),
]


@pytest.mark.parametrize("patch,valid", OWNER_PATCH_CASES, ids=[str(c[0]) for c in OWNER_PATCH_CASES])
def test_account_owner_patch_schema_agrees_with_the_server(openapi, tenant, patch, valid):
    """What the PATCH schema refuses the server refuses (400), and what it
    accepts the server accepts (200)."""
    api = tenant.server.api()
    r = api.post("/v1/account-owners", json={"id": "patched", "name": "P", "account_owner_type": "individual"},
                 headers=tenant.auth())
    assert r.status_code in (201, 409), r.text
    assert _request_schema(openapi, "patch", "/v1/account-owners/{accountOwnerId}").is_valid(patch) == valid
    r = api.request("PATCH", "/v1/account-owners/patched", json=patch, headers=tenant.auth())
    assert r.status_code == (200 if valid else 400), r.text


def test_webhooks_state_the_response_rules(openapi):
    """Every webhook documents what each answer of the endpoint does:
    2xx delivered; 401, 403, 407 deauthorize; 429 and 5xx retried; anything
    else a failed attempt."""
    expected = {"2XX": "WebhookAccepted", "401": "WebhookDeauthorizes", "403": "WebhookDeauthorizes",
                "407": "WebhookDeauthorizes", "429": "WebhookRateLimited", "5XX": "WebhookRetried",
                "default": "WebhookFailed"}
    for name, item in openapi.doc["webhooks"].items():
        responses = item["post"]["responses"]
        assert {k: v["$ref"].rsplit("/", 1)[1] for k, v in responses.items()} == expected, name


def test_load_shedding_answers_as_documented(make_server):
    """Rule: load shedding answers 429 with Retry-After: 1 and its exact body,
    before authentication (no rate-limit headers), on a route documented with
    LoadShed (the signed download, no token) as on one documented with
    TooManyRequests; the suite checks both answers against the document (Api).
    Both are reads, the class the held request fills (writes are shed apart)."""
    s = make_server("--test-hooks", "--max-in-flight", "1")
    t = s.new_tenant("shed-doc")
    tok = t.token
    held = {}

    def hold():
        for _ in range(50):  # the pause itself may be shed while an earlier request is counted
            held["r"] = requests.get(s.url + "/_test/pause?ms=4000", headers=t.auth(tok), timeout=60)
            if held["r"].status_code != 429:
                break
            time.sleep(0.02)

    th = threading.Thread(target=hold)
    th.start()
    shed = {}
    try:
        deadline = time.monotonic() + 60
        probes = {"download": lambda: s.api().get(
                      "/v1/reports/inventory-summary/00000000-0000-4000-8000-000000000000/download", timeout=2),
                  "filer": lambda: t.get("/v1/filers/default", token=tok, timeout=2)}
        while th.is_alive() and time.monotonic() < deadline and len(shed) < 2:
            for name, probe in probes.items():
                try:
                    r = probe()
                except requests.exceptions.Timeout:
                    continue
                if r.status_code == 429:
                    shed[name] = r
            time.sleep(0.02)
    finally:
        th.join(60)
    assert set(shed) == {"download", "filer"}, f"shed only {sorted(shed)} while a request was held"
    for r in shed.values():
        assert r.headers["Retry-After"] == "1"
        assert r.json() == {"error": "Too Many Requests", "message": "Too Many Requests"}
        assert "x-ratelimit-limit" not in r.headers
