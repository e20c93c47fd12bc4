"""Account-owner tokens (issue 19, item 1; docs/taxbit-sdk.md § 6.2):
POST /v1/oauth/account-owner-token and what the gateway lets such a token do.

Rules checked, against the real binary:
  - the endpoint answers what /v1/oauth/token answers (access_token,
    token_type Bearer, expires_in 86400; the JWT lives 86,400 s and names the
    owner's uuid in `aoi`);
  - bad credentials: the same 401 body as /v1/oauth/token; a wrong tenant_id
    the same 403; a missing account_owner_id 400;
  - an owner unknown to the tenant, or another tenant's owner: 404
    "Account owner with id '<id>' not found";
  - the token reaches its owner's routes (GET/PATCH the owner, POST/GET its
    tax documentation); another owner's: 403 gateway deny; every other route:
    403 gateway deny; the credential's scopes still apply;
  - revoking the credential stops its owner tokens (401 Invalid token);
  - an owner token has a bucket of its own: exhausting it leaves the tenant's
    tenant-token requests and another owner's token unaffected.
Every response is also checked against docs/openapi.yaml by conftest.
"""
import base64
import datetime
import json

import pytest

from conftest import (FORBIDDEN, GATEWAY_DENY, INVALID_CLIENT, INVALID_TOKEN, SETTINGS_PROPAGATION_S,
                      Tenant, body, poll, set_rule, wait_for_limit_header)

TOKEN = "/v1/oauth/token"
OWNER_TOKEN = "/v1/oauth/account-owner-token"
YEAR = datetime.datetime.now(datetime.timezone.utc).year
W9 = {"document_type": "W-9", "name": "Ada Lovelace", "entity_classification": "INDIVIDUAL",
      "tin_type": "SSN", "tin": "123-45-6789",
      "address": {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701",
                  "country_code": "US"},
      "certified": True, "signature_date": f"{YEAR - 1}-05-10"}


def owner_path(owner_id, rest=""):
    return f"/v1/account-owners/{owner_id}{rest}"


def grant(tenant, **extra):
    b = {"grant_type": "client_credentials", "client_id": tenant.client_id,
         "client_secret": tenant.client_secret}
    b.update(extra)
    return b


def mint_owner(tenant, owner_id, status=200, **extra):
    r = tenant.server.api().post(OWNER_TOKEN, json=grant(tenant, account_owner_id=owner_id, **extra))
    assert r.status_code == status, r.text
    return r


def claims(token):
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.fixture
def owners(server):
    """A fresh tenant with owners "a" and "b"; returns (tenant, uuid of a, uuid of b)."""
    t = server.new_tenant("owners")
    return t, t.new_owner("a"), t.new_owner("b")


# ------------------------------------------------------------------ minting

def test_mint_answers_like_the_token_endpoint(owners):
    t, uuid_a, _ = owners
    r = mint_owner(t, "a")
    b = body(r)
    assert set(b) == {"access_token", "token_type", "expires_in"}
    assert b["token_type"] == "Bearer" and b["expires_in"] == 86400
    c = claims(b["access_token"])
    assert c["exp"] - c["iat"] == 86400
    assert c["aoi"] == uuid_a and c["tid"] == t.tenant_id and c["sub"] == t.client_id
    assert "x-ratelimit-limit" not in r.headers
    assert "aoi" not in claims(t.mint())  # a tenant token names no owner


def test_bad_credentials_same_401_as_token_endpoint(owners):
    t, _, _ = owners
    api = t.server.api()
    for bad in ({"client_secret": "wrong"}, {"client_id": "nobody"}):
        plain = api.post(TOKEN, json=dict(grant(t), **bad))
        owner = api.post(OWNER_TOKEN, json=dict(grant(t, account_owner_id="a"), **bad))
        assert plain.status_code == owner.status_code == 401
        assert body(plain) == body(owner) == INVALID_CLIENT
    # wrong secret for an unknown owner: still the 401, nothing said about the owner
    r = api.post(OWNER_TOKEN, json=dict(grant(t, account_owner_id="nope"), client_secret="wrong"))
    assert r.status_code == 401 and body(r) == INVALID_CLIENT


def test_wrong_tenant_403_and_missing_owner_400(owners):
    t, _, _ = owners
    assert body(mint_owner(t, "a", status=403, tenant_id="someone-else")) == FORBIDDEN
    r = t.server.api().post(OWNER_TOKEN, json=grant(t))
    assert r.status_code == 400, r.text
    assert ["account_owner_id"] in [i.get("path") for i in body(r).get("issues", [])], r.text


def test_unknown_owner_and_another_tenants_owner_404(server, owners):
    t, _, _ = owners
    other = server.new_tenant("other")
    other.new_owner("theirs")
    for owner_id in ("nope", "theirs"):
        b = body(mint_owner(t, owner_id, status=404))
        assert b == {"error": "Not Found", "message": f"Account owner with id '{owner_id}' not found"}


# ------------------------------------------------------------------ the gateway

def test_owner_token_reaches_its_owners_routes(owners):
    t, uuid_a, _ = owners
    tok = t.owner_token("a")
    r = t.request("GET", owner_path("a"), token=tok)
    assert r.status_code == 200 and body(r)["data"]["uuid"] == uuid_a
    r = t.request("PATCH", owner_path("a"), token=tok, json={"name": "Renamed"})
    assert r.status_code == 200 and body(r)["data"]["name"] == "Renamed", r.text
    r = t.request("POST", owner_path("a", "/tax-documentation"), token=tok, json=W9)
    assert r.status_code == 201, r.text
    r = t.request("GET", owner_path("a", "/tax-documentation"), token=tok)
    assert r.status_code == 200, r.text


def test_owner_token_denied_on_another_owners_routes(owners):
    t, _, _ = owners
    tok = t.owner_token("a")
    for method, path, kw in (("GET", owner_path("b"), {}),
                             ("PATCH", owner_path("b"), {"json": {"name": "X"}}),
                             ("POST", owner_path("b", "/tax-documentation"), {"json": W9}),
                             ("GET", owner_path("b", "/tax-documentation"), {}),
                             ("GET", owner_path("nope"), {})):
        r = t.request(method, path, token=tok, **kw)
        assert r.status_code == 403 and body(r) == GATEWAY_DENY, f"{method} {path}: {r.status_code} {r.text}"
    assert t.request("GET", owner_path("b")).status_code == 200  # the tenant token still may


@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/account-owners"),
    ("POST", "/v1/account-owners"),
    ("GET", "/v1/accounts"),
    ("POST", "/v1/accounts"),
    ("GET", "/v1/accounts/acc-1/transactions"),
    ("POST", "/v1/transactions/external-id"),
    ("GET", "/v1/filers"),
    ("GET", "/v1/tax-documents"),
    ("POST", "/v1/reports/inventory-summary"),
    ("GET", "/v1/gains"),
])
def test_owner_token_denied_on_every_other_route(owners, method, path):
    t, _, _ = owners
    tok = t.owner_token("a")
    r = t.request(method, path, token=tok, json={} if method == "POST" else None)
    assert r.status_code == 403 and body(r) == GATEWAY_DENY, f"{method} {path}: {r.status_code} {r.text}"


def test_credential_scopes_still_apply(server, owners):
    t, _, _ = owners
    c = server.admin("credentials", "create", "--tenant", t.tenant_id, "--scopes", "tax-documents")
    narrow = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    tok = narrow.owner_token("a")
    r = narrow.request("GET", owner_path("a"), token=tok)  # accounts scope: not granted
    assert r.status_code == 403 and body(r) == GATEWAY_DENY
    assert narrow.request("GET", owner_path("a", "/tax-documentation"), token=tok).status_code == 200


def test_revoked_credential_stops_owner_tokens(server, owners):
    t, _, _ = owners
    c = server.admin("credentials", "create", "--tenant", t.tenant_id)
    cred = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    tok = cred.owner_token("a")
    assert cred.request("GET", owner_path("a"), token=tok).status_code == 200
    server.admin("credentials", "revoke", "--client-id", cred.client_id)
    r = poll(lambda: (lambda r: [r] if r.status_code == 401 else None)(
        cred.request("GET", owner_path("a"), token=tok)),
        SETTINGS_PROPAGATION_S, interval=0.01, what="revoked owner token to be refused")[0]
    assert body(r) == INVALID_TOKEN
    assert body(mint_owner(cred, "a", status=401)) == INVALID_CLIENT


# ------------------------------------------------------------------ rate limits

def test_owner_bucket_leaves_tenant_and_other_owners_alone(server, owners):
    t, _, _ = owners
    burst = 4
    set_rule(server, 1, burst, tenant=t)
    wait_for_limit_header(t, "/v1/filers", burst)
    tok_a, tok_b = t.owner_token("a"), t.owner_token("b")
    path_a = owner_path("a")
    for _ in range(3 * burst):
        r = t.request("GET", path_a, token=tok_a)
        if r.status_code == 429:
            break
        assert r.status_code == 200, r.text
    else:
        raise AssertionError(f"owner a's token saw no 429 with burst {burst}")
    assert body(r)["error"] == "rate_limit_exceeded"
    # Right after: the tenant's own token on the same route, and owner b's token,
    # each start from a full bucket.
    tenant_r = t.request("GET", path_a)
    assert tenant_r.status_code == 200, tenant_r.text
    assert int(tenant_r.headers["x-ratelimit-remaining"]) == burst - 1
    other_r = t.request("GET", owner_path("b"), token=tok_b)
    assert other_r.status_code == 200, other_r.text
    assert int(other_r.headers["x-ratelimit-remaining"]) == burst - 1
