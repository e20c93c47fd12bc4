"""Routing, the filer endpoints, error bodies and x-request-id
(spec § Errors, § Logging, and the filer rules named in the error conventions)."""
import pytest

from conftest import (INVALID_HEADER, RFC3339_MS_Z_RE, UUID4_RE, assert_no_rl_headers, assert_rl_headers, body,
                      raw_request)

FILER_T = "/v1/filers/{filerId}"


# ------------------------------------------------------------------ router

@pytest.mark.parametrize("path", ["/", "/v1", "/v1/nothing", "/v2/filers", "/v1/filers/default/extra",
                                  "/v1/filers/", "/V1/filers", "/healthz/x"])
def test_unknown_path_is_404_before_auth(server, tenant, openapi, path):
    """The router answers first: a path no route has is 404 with error
    "Not Found", with or without a token, and without rate-limit headers."""
    api = server.api()
    for headers in ({}, tenant.auth(), {"authorization": "Basic x"}):
        r = api.get(path, headers=headers)
        assert r.status_code == 404, f"{path} {headers}: {r.status_code} {r.text}"
        b = body(r)
        assert b["error"] == "Not Found"
        assert isinstance(b["message"], str)
        assert_no_rl_headers(r)
        openapi.check_component(r, "RouterNotFound")


@pytest.mark.parametrize("method,path,allowed", [
    ("POST", "/v1/filers/default", {"GET"}),
    ("PUT", "/v1/filers/default", {"GET"}),
    ("PATCH", "/v1/filers", {"GET"}),
    ("GET", "/v1/oauth/token", {"POST"}),
    ("DELETE", "/v1/oauth/token", {"POST"}),
    ("POST", "/healthz", {"GET"}),
    ("POST", "/metrics", {"GET"}),
])
def test_wrong_method_is_405_with_allow(server, tenant, openapi, method, path, allowed):
    """A known path with a method it does not have is 405 "Method Not Allowed"
    with an Allow header naming its methods; the router answers before
    authentication, so no 401 and no rate-limit headers."""
    api = server.api()
    for headers in ({}, tenant.auth()):
        r = api.request(method, path, headers=headers)
        assert r.status_code == 405, f"{method} {path}: {r.status_code} {r.text}"
        b = body(r)
        assert b["error"] == "Method Not Allowed"
        assert isinstance(b["message"], str)
        methods = {m.strip() for m in r.headers.get("allow", "").split(",") if m.strip()}
        # later routes may add methods (e.g. DELETE /v1/filers/{id}); the allowed ones must be there
        assert allowed <= methods, f"Allow: {r.headers.get('allow')!r}"
        assert method not in methods
        assert_no_rl_headers(r)
        openapi.check_component(r, "MethodNotAllowed")


# ------------------------------------------------------------------ filers

def test_default_filer(tenant, openapi):
    """Every tenant has a default filer with id "default": 200 {"data":{"id":"default",
    "uuid":<uuid v4>,"name":"Default filer","is_default":true,"created_at","updated_at"}}
    with RFC 3339 UTC millisecond timestamps."""
    r = tenant.get("/v1/filers/default")
    assert r.status_code == 200, r.text
    d = body(r)["data"]
    assert d["id"] == "default"
    assert UUID4_RE.match(d["uuid"]), d["uuid"]
    assert d["name"] == "Default filer"
    assert d["is_default"] is True
    assert RFC3339_MS_Z_RE.match(d["created_at"]), d["created_at"]
    assert RFC3339_MS_Z_RE.match(d["updated_at"]), d["updated_at"]
    assert d["updated_at"] >= d["created_at"]
    openapi.check(r, "GET", FILER_T)


def test_default_filer_is_per_tenant(server, tenant):
    """Data is tenant-scoped: two tenants each have their own default filer (different uuid)."""
    other = server.new_tenant("other")
    a = body(tenant.get("/v1/filers/default"))["data"]
    b = body(other.get("/v1/filers/default"))["data"]
    assert a["uuid"] != b["uuid"]


def test_filer_is_stable(tenant):
    """GET is safe to retry: the same filer is answered twice."""
    a = body(tenant.get("/v1/filers/default"))
    b = body(tenant.get("/v1/filers/default"))
    assert a == b


@pytest.mark.parametrize("raw,decoded", [
    ("missing-filer", "missing-filer"),
    ("a%2Fb%25c%2Bd%20e%C3%A9", "a/b%c+d eé"),
    ("a+b", "a+b"),
    ("%64efault2", "default2"),
    ("%E2%82%AC", "€"),
])
def test_unknown_filer_404_names_the_id(server, tenant, openapi, raw, decoded):
    """404 bodies: error is "Not Found" and the message names the missing
    resource; ids in paths are percent-decoded exactly once (%2F is '/', %25
    is '%', '+' stays '+')."""
    r = raw_request(server, "GET", "/v1/filers/" + raw, headers=tenant.auth())
    assert r.status_code == 404, r.text
    b = body(r)
    assert b["error"] == "Not Found"
    assert decoded in b["message"], f"message {b['message']!r} should name {decoded!r}"
    assert_rl_headers(r)
    openapi.check(r, "GET", FILER_T)


def test_percent_encoded_default_is_the_default_filer(server, tenant):
    """Ids are compared after decoding once: /v1/filers/%64efault is the filer "default"."""
    r = raw_request(server, "GET", "/v1/filers/%64efault", headers=tenant.auth())
    assert r.status_code == 200, r.text
    assert body(r)["data"]["id"] == "default"


def test_double_encoded_id_is_decoded_once(server, tenant):
    """Decoded once, not twice: %2564efault is the id "%64efault", not "default"."""
    r = raw_request(server, "GET", "/v1/filers/%2564efault", headers=tenant.auth())
    assert r.status_code == 404
    assert "%64efault" in body(r)["message"]


@pytest.mark.parametrize("raw", ["%zz", "%4", "a%00b", "a%"])
def test_malformed_percent_encoding_is_an_error_not_a_crash(server, tenant, raw):
    """A malformed escape or an encoded NUL in an id is refused with a 4xx JSON error (400 or 404)."""
    r = raw_request(server, "GET", "/v1/filers/" + raw, headers=tenant.auth())
    assert r.status_code in (400, 404), r.text
    b = body(r)
    assert b["error"] in ("Bad Request", "Not Found")


def test_filer_list(tenant, openapi):
    """GET /v1/filers: 200 {"data":[...],"meta":{"next_cursor":null}}; a new
    tenant has just its default filer."""
    r = tenant.get("/v1/filers")
    assert r.status_code == 200, r.text
    b = body(r)
    assert b["meta"] == {"next_cursor": None}
    assert [f["id"] for f in b["data"]] == ["default"]
    assert b["data"][0] == body(tenant.get("/v1/filers/default"))["data"]
    openapi.check(r, "GET", "/v1/filers")


@pytest.mark.parametrize("limit", ["1", "100", "50"])
def test_filer_list_limit_in_range(tenant, limit):
    """limit 1..100 is accepted."""
    r = tenant.get("/v1/filers?limit=" + limit)
    assert r.status_code == 200, r.text
    assert len(body(r)["data"]) == 1
    assert body(r)["meta"]["next_cursor"] is None


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5", "", "99999999999999999999999"])
def test_filer_list_limit_out_of_range(tenant, openapi, limit):
    """limit outside 1..100 is 400 with issues naming the limit; the answer
    follows token verification, so it carries the rate-limit headers."""
    r = tenant.get("/v1/filers?limit=" + limit)
    assert r.status_code == 400, f"limit={limit!r}: {r.status_code} {r.text}"
    b = body(r)
    assert b["error"] == "Bad Request"
    assert b["issues"], b
    assert any(i["path"] == ["limit"] for i in b["issues"]), b
    assert_rl_headers(r)
    openapi.check(r, "GET", "/v1/filers")


def test_unknown_query_parameters_ignored(tenant):
    """Unknown parameters are ignored (the contract is additive)."""
    assert tenant.get("/v1/filers/default?foo=bar").status_code == 200
    assert tenant.get("/v1/filers?foo=bar&limit=10").status_code == 200


# ------------------------------------------------------------- x-request-id

def test_request_id_on_every_kind_of_response(server, tenant):
    """Every response carries the header x-request-id: router 404, 405, 401
    (both kinds), 403, 404, 400, 200, healthz, metrics, token endpoint."""
    api = server.api()
    responses = [
        api.get("/nope"),
        api.request("PUT", "/v1/filers/default"),
        api.get("/v1/filers/default"),
        api.get("/v1/filers/default", headers={"authorization": "bearer x"}),
        server.new_tenant("deny", scopes="reports").get("/v1/filers/default"),
        tenant.get("/v1/filers/nope"),
        tenant.get("/v1/filers?limit=0"),
        tenant.get("/v1/filers/default"),
        api.get("/healthz"),
        api.get("/metrics"),
        api.post("/v1/oauth/token", json={}),
    ]
    assert [r.status_code for r in responses] == [404, 405, 401, 401, 403, 404, 400, 200, 200, 200, 400]
    ids = [r.headers.get("x-request-id") for r in responses]
    assert all(ids), ids
    assert len(set(ids)) == len(ids), f"x-request-id values repeat: {ids}"


def test_request_ids_unique_across_many_requests(server, tenant):
    """x-request-id identifies one request: 200 requests give 200 distinct ids."""
    api = server.api()
    ids = set()
    for i in range(100):
        ids.add(api.get("/healthz").headers["x-request-id"])
        ids.add(tenant.get("/v1/filers/default").headers["x-request-id"])
    assert len(ids) == 200


def test_401_body_exact(server, openapi):
    """401 bodies: message "Invalid authorization header", error "Unauthorized"."""
    r = server.api().get("/v1/filers")
    assert r.status_code == 401
    assert body(r) == INVALID_HEADER
    openapi.check(r, "GET", "/v1/filers")
