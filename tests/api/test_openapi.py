"""docs/openapi.yaml itself: the document the response checks rely on must
be a sound OpenAPI 3.1 description of every public endpoint."""
import pathlib
import re

import pytest
from jsonschema import Draft202012Validator

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
