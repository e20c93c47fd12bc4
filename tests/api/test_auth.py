"""Authentication: the token endpoint, the bearer token and its checks
(spec § Authentication, § Errors 401/403, § Limits token lifetime)."""
import json
import re
import time

import jwt
import pytest
import requests
import requests.adapters

from conftest import (FORBIDDEN, GATEWAY_DENY, INVALID_CLIENT, INVALID_HEADER, INVALID_TOKEN,
                      SETTINGS_PROPAGATION_S, UUID4_RE, Server, admin, assert_no_rl_headers, assert_rl_headers,
                      body, check_against_openapi, forge_jwt, poll)

TOKEN = "/v1/oauth/token"
FILER = "/v1/filers/default"


def token_body(t, **extra):
    b = {"grant_type": "client_credentials", "client_id": t.client_id, "client_secret": t.client_secret}
    b.update(extra)
    return b


# ------------------------------------------------------------ token endpoint

def test_token_mint_success_shape(server, api, tenant, openapi):
    """A token is minted through the token endpoint and lasts 24 hours:
    200 {"access_token", "expires_in": 86400, "token_type": "Bearer"}."""
    r = api.post(TOKEN, json=token_body(tenant))
    assert r.status_code == 200, r.text
    b = body(r)
    assert b["expires_in"] == 86400
    assert b["token_type"] == "Bearer"
    assert isinstance(b["access_token"], str) and b["access_token"].count(".") == 2
    openapi.check(r, "POST", TOKEN)


def test_token_endpoint_has_no_ratelimit_headers(server, api, tenant):
    """Rate-limit headers appear only after a token was verified: no answer of
    the token endpoint (200, 400, 401, 403) carries them."""
    other = server.new_tenant("other")
    answers = [
        api.post(TOKEN, json=token_body(tenant)),
        api.post(TOKEN, json=token_body(tenant, client_secret="nope")),
        api.post(TOKEN, json={"grant_type": "password"}),
        api.post(TOKEN, json=token_body(tenant, tenant_id=other.tenant_id)),
    ]
    assert [r.status_code for r in answers] == [200, 401, 400, 403]
    for r in answers:
        assert_no_rl_headers(r)


def test_token_claims(server, tenant):
    """The token is a JWT HS256 with a kid header; claims iss "taxd", sub =
    client_id, tid = tenant_id, iat, exp = iat + 86400 (lasts 24 hours); no
    scope claim for a credential without scopes."""
    before = int(time.time())
    tok = tenant.mint()
    after = int(time.time())
    header = jwt.get_unverified_header(tok)
    assert header["alg"] == "HS256"
    assert header["typ"] == "JWT"
    kid, key = server.signing_keys()[0]
    assert header["kid"] == kid, "the first key of <db>.token.key signs"
    claims = jwt.decode(tok, options={"verify_signature": False})
    assert claims["iss"] == "taxd"
    assert claims["sub"] == tenant.client_id
    assert claims["tid"] == tenant.tenant_id
    assert "scope" not in claims
    assert isinstance(claims["iat"], int) and isinstance(claims["exp"], int)
    assert before - 2 <= claims["iat"] <= after + 2
    assert claims["exp"] == claims["iat"] + 86400
    # and the signature is the real key's
    verified = jwt.decode(tok, key, algorithms=["HS256"], options={"verify_aud": False})
    assert verified["tid"] == tenant.tenant_id


def test_token_scope_claim_lists_credential_scopes(server):
    """scope claim: space-separated scopes of the credential."""
    t = server.new_tenant("scoped", scopes="reports,accounts")
    claims = jwt.decode(t.mint(), options={"verify_signature": False})
    assert sorted(claims["scope"].split(" ")) == ["accounts", "reports"]


def test_token_with_matching_tenant_id(api, tenant):
    """tenant_id is optional; when it is the credential's tenant the token is minted."""
    r = api.post(TOKEN, json=token_body(tenant, tenant_id=tenant.tenant_id))
    assert r.status_code == 200, r.text
    assert jwt.decode(body(r)["access_token"], options={"verify_signature": False})["tid"] == tenant.tenant_id


def test_token_tenant_mismatch_is_403(server, api, tenant, openapi):
    """When the tenant does not match, the response is 403 with error
    Forbidden and message Forbidden."""
    other = server.new_tenant("other")
    for tid in (other.tenant_id, "00000000-0000-4000-8000-000000000000"):
        r = api.post(TOKEN, json=token_body(tenant, tenant_id=tid))
        assert r.status_code == 403, f"tenant_id {tid}: {r.status_code} {r.text}"
        assert body(r) == FORBIDDEN
        assert_no_rl_headers(r)
        openapi.check(r, "POST", TOKEN)


@pytest.mark.parametrize("case", ["wrong_secret", "unknown_client", "secret_of_other_client"])
def test_token_invalid_client_credentials(server, api, tenant, openapi, case):
    """Wrong secret or unknown client: 401 {"error":"Unauthorized","message":"Invalid client credentials"}."""
    b = token_body(tenant)
    if case == "wrong_secret":
        b["client_secret"] = tenant.client_secret[:-1] + ("A" if tenant.client_secret[-1] != "A" else "B")
    elif case == "unknown_client":
        b["client_id"] = "no-such-client-" + tenant.client_id
    else:
        b["client_secret"] = server.new_tenant("other").client_secret
    r = api.post(TOKEN, json=b)
    assert r.status_code == 401, r.text
    assert body(r) == INVALID_CLIENT
    assert_no_rl_headers(r)
    openapi.check(r, "POST", TOKEN)


def test_token_wrong_grant_type(api, tenant, openapi):
    """Validation failure: issues with code invalid_value, path ["grant_type"]
    and the accepted values ["client_credentials"]."""
    r = api.post(TOKEN, json=token_body(tenant, grant_type="password"))
    assert r.status_code == 400
    b = body(r)
    assert b["error"] == "Bad Request"
    assert isinstance(b["message"], str)
    issues = [i for i in b["issues"] if i["path"] == ["grant_type"]]
    assert len(issues) == 1, b
    assert issues[0]["code"] == "invalid_value"
    assert issues[0]["values"] == ["client_credentials"]
    assert isinstance(issues[0]["message"], str) and issues[0]["message"]
    openapi.check(r, "POST", TOKEN)


@pytest.mark.parametrize("missing", ["grant_type", "client_id", "client_secret"])
def test_token_missing_field(api, tenant, openapi, missing):
    """Validation failure: a missing field is an issue with code invalid_type
    and the path naming the field."""
    b = token_body(tenant)
    del b[missing]
    r = api.post(TOKEN, json=b)
    assert r.status_code == 400
    rb = body(r)
    assert rb["error"] == "Bad Request"
    paths = {tuple(i["path"]): i for i in rb["issues"]}
    assert (missing,) in paths, rb
    # a missing string is invalid_type; a missing fixed-value field may be
    # reported Zod-style as invalid_value with the accepted values
    if missing == "grant_type" and paths[(missing,)]["code"] == "invalid_value":
        assert paths[(missing,)]["values"] == ["client_credentials"]
    else:
        assert paths[(missing,)]["code"] == "invalid_type"
    assert len(rb["issues"]) == 1, "only the missing field is an issue"
    openapi.check(r, "POST", TOKEN)


def test_token_all_fields_missing_lists_each(api, openapi):
    """Every failed rule is an issue: an empty object names all three fields."""
    r = api.post(TOKEN, json={})
    assert r.status_code == 400
    paths = sorted(tuple(i["path"]) for i in body(r)["issues"])
    assert paths == [("client_id",), ("client_secret",), ("grant_type",)]
    codes = {i["path"][0]: i["code"] for i in body(r)["issues"]}
    assert codes["client_id"] == codes["client_secret"] == "invalid_type"
    assert codes["grant_type"] in ("invalid_type", "invalid_value")
    openapi.check(r, "POST", TOKEN)


def test_token_wrong_field_type(api, tenant):
    """A field of the wrong type is an invalid_type issue at its path."""
    r = api.post(TOKEN, json=token_body(tenant, client_id=12))
    assert r.status_code == 400
    issues = body(r)["issues"]
    assert [i["path"] for i in issues] == [["client_id"]]
    assert issues[0]["code"] == "invalid_type"


@pytest.mark.parametrize("kind", ["not_json_content_type", "no_content_type", "malformed", "duplicate_keys",
                                  "empty", "array"])
def test_token_bad_request_bodies(api, tenant, openapi, kind):
    """400 Malformed request: a body that is not application/json, not JSON,
    has duplicate keys, is empty or not an object gets the standard envelope
    with error "Bad Request"."""
    good = json.dumps(token_body(tenant))
    if kind == "not_json_content_type":
        r = api.post(TOKEN, data=good, headers={"content-type": "text/plain"})
    elif kind == "no_content_type":
        r = api.post(TOKEN, data=good.encode())
    elif kind == "malformed":
        r = api.post(TOKEN, data=good[:-1], headers={"content-type": "application/json"})
    elif kind == "duplicate_keys":
        dup = good[:-1] + ', "client_id": "x"}'
        r = api.post(TOKEN, data=dup, headers={"content-type": "application/json"})
    elif kind == "empty":
        r = api.post(TOKEN, data=b"", headers={"content-type": "application/json"})
    else:
        r = api.post(TOKEN, data="[1,2]", headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    b = body(r)
    assert b["error"] == "Bad Request"
    assert isinstance(b["message"], str) and b["message"]
    assert_no_rl_headers(r)
    openapi.check(r, "POST", TOKEN)


def test_token_content_type_with_charset_accepted(api, tenant):
    """application/json with parameters (charset) is JSON."""
    r = api.post(TOKEN, data=json.dumps(token_body(tenant)),
                 headers={"content-type": "Application/JSON; charset=utf-8"})
    assert r.status_code == 200, r.text


def test_token_unknown_fields_ignored(api, tenant):
    """Unknown request body fields are ignored (the contract is additive)."""
    r = api.post(TOKEN, json=token_body(tenant, scope="everything", extra={"nested": [1, 2]}))
    assert r.status_code == 200, r.text


# ------------------------------------------------------ authorization header

@pytest.mark.parametrize("header", [
    None, "", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Bearer  {tok}", "bearerx", "Bearer{tok}",
    "Token {tok}", "Bearer\t{tok}", "{tok}",
])
def test_malformed_authorization_header(server, tenant, openapi, header):
    """When the authorization header is missing or malformed, the response is
    401 with message Invalid authorization header and error Unauthorized, and
    carries no rate-limit headers."""
    headers = {}
    if header is not None:
        headers["authorization"] = header.replace("{tok}", tenant.token)
    r = server.api().get(FILER, headers=headers)
    assert r.status_code == 401, r.text
    assert body(r) == INVALID_HEADER
    assert_no_rl_headers(r)
    openapi.check(r, "GET", "/v1/filers/{filerId}")


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_bearer_scheme_any_case(server, tenant, scheme):
    """The scheme is "Bearer" in any case followed by exactly one space and the token."""
    r = server.api().get(FILER, headers={"authorization": f"{scheme} {tenant.token}"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "x" * 2000, "..", "eyJhbGciOiJIUzI1NiJ9.e30."])
def test_garbage_token_is_invalid_token(server, openapi, garbage):
    """When the token is invalid, the response is 401 with message Invalid token and error Unauthorized."""
    r = server.api().get(FILER, headers={"authorization": f"bearer {garbage}"})
    assert r.status_code == 401
    assert body(r) == INVALID_TOKEN
    assert_no_rl_headers(r)
    openapi.check(r, "GET", "/v1/filers/{filerId}")


# --------------------------------------------------------------- forged JWTs

def _claims(t, **over):
    now = int(time.time())
    c = {"iss": "taxd", "sub": t.client_id, "tid": t.tenant_id, "iat": now, "exp": now + 3600}
    c.update(over)
    return c


def test_pyjwt_token_with_real_key_is_accepted(server, tenant):
    """Control for the forgery tests: a PyJWT-made HS256 token with the right
    kid and key is a valid token (so the rejections below are about the flaw)."""
    kid, key = server.signing_keys()[0]
    tok = jwt.encode(_claims(tenant), key, algorithm="HS256", headers={"kid": kid})
    r = tenant.get(FILER, token=tok)
    assert r.status_code == 200, r.text


def test_nbf_and_full_lifetime_are_accepted(server, tenant):
    """Control for the nbf and lifetime forgeries: an nbf in the past or
    within the 60 s clock skew, and an exp exactly 24 hours after iat, are a
    valid token."""
    kid, key = server.signing_keys()[0]
    now = int(time.time())
    for name, claims in [("nbf_past", _claims(tenant, nbf=now - 10)),
                         ("nbf_within_skew", _claims(tenant, nbf=now + 30)),
                         ("exp_at_lifetime", _claims(tenant, exp=now + 86400))]:
        tok = forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid}, claims, key=key)
        r = tenant.get(FILER, token=tok)
        assert r.status_code == 200, f"{name}: {r.status_code} {r.text}"


def _forgeries(server, t):
    kid, key = server.signing_keys()[0]
    now = int(time.time())
    return {
        "alg_none": forge_jwt({"alg": "none", "typ": "JWT", "kid": kid}, _claims(t)),
        "alg_none_with_sig": forge_jwt({"alg": "none", "typ": "JWT", "kid": kid}, _claims(t), key=key)[:-1],
        "wrong_key": jwt.encode(_claims(t), b"k" * 32, algorithm="HS256", headers={"kid": kid}),
        "hs512_real_key": jwt.encode(_claims(t), key, algorithm="HS512", headers={"kid": kid}),
        "hs384_real_key": forge_jwt({"alg": "HS384", "typ": "JWT", "kid": kid}, _claims(t), key=key, alg="HS384"),
        "unknown_kid": jwt.encode(_claims(t), key, algorithm="HS256", headers={"kid": "not-" + kid}),
        "no_kid": forge_jwt({"alg": "HS256", "typ": "JWT"}, _claims(t), key=key),
        "expired": jwt.encode(_claims(t, iat=now - 90000, exp=now - 3600), key, algorithm="HS256",
                              headers={"kid": kid}),
        "expired_one_second": jwt.encode(_claims(t, iat=now - 86401, exp=now - 1), key, algorithm="HS256",
                                         headers={"kid": kid}),
        "no_exp": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid},
                            {k: v for k, v in _claims(t).items() if k != "exp"}, key=key),
        "no_tid": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid},
                            {k: v for k, v in _claims(t).items() if k != "tid"}, key=key),
        "string_exp": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid}, _claims(t, exp=str(now + 3600)), key=key),
        "typ_not_jwt": forge_jwt({"alg": "HS256", "typ": "XYZ", "kid": kid}, _claims(t), key=key),
        "nbf_future": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid}, _claims(t, nbf=now + 3600), key=key),
        "nbf_string": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid}, _claims(t, nbf=str(now - 10)), key=key),
        "exp_ten_years": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid},
                                   _claims(t, exp=now + 10 * 365 * 86400), key=key),
        "exp_lifetime_plus_one": forge_jwt({"alg": "HS256", "typ": "JWT", "kid": kid},
                                           _claims(t, iat=now - 10, exp=now - 10 + 86401), key=key),
    }


FORGERY_KINDS = ["alg_none", "alg_none_with_sig", "wrong_key", "hs512_real_key", "hs384_real_key", "unknown_kid",
                 "no_kid", "expired", "expired_one_second", "no_exp", "no_tid", "string_exp", "typ_not_jwt",
                 "nbf_future", "nbf_string", "exp_ten_years", "exp_lifetime_plus_one"]


@pytest.mark.parametrize("kind", FORGERY_KINDS)
def test_forged_token_is_invalid(server, tenant, openapi, kind):
    """When the token is invalid or expired, the response is 401 with message
    Invalid token and error Unauthorized (forged: alg none, wrong key, another
    algorithm, unknown kid, expired, missing claims)."""
    tok = _forgeries(server, tenant)[kind]
    r = tenant.get(FILER, token=tok)
    assert r.status_code == 401, f"{kind}: {r.status_code} {r.text}"
    assert body(r) == INVALID_TOKEN
    assert_no_rl_headers(r)
    openapi.check(r, "GET", "/v1/filers/{filerId}")


def test_tampered_payload_is_invalid(server, tenant):
    """A real token whose payload was changed (another tenant) keeps a
    signature that no longer matches: 401 Invalid token."""
    other = server.new_tenant("victim")
    h, p, s = tenant.token.split(".")
    claims = jwt.decode(tenant.token, options={"verify_signature": False})
    claims["tid"] = other.tenant_id
    from conftest import b64url
    forged = ".".join([h, b64url(json.dumps(claims, separators=(",", ":")).encode()), s])
    r = tenant.get(FILER, token=forged)
    assert r.status_code == 401
    assert body(r) == INVALID_TOKEN


# ------------------------------------------------------------------- scopes

def test_scope_deny_is_gateway_403(server, openapi):
    """When the credentials are not allowed the resource the response is 403,
    the gateway deny: a single field Message with a capital M; it is given
    after a token was verified, so it carries the rate-limit headers."""
    t = server.new_tenant("reports-only", scopes="reports")
    for path, template in [(FILER, "/v1/filers/{filerId}"), ("/v1/filers", "/v1/filers"),
                           ("/v1/filers/does-not-exist", "/v1/filers/{filerId}")]:
        r = t.get(path)
        assert r.status_code == 403, f"{path}: {r.status_code} {r.text}"
        assert body(r) == GATEWAY_DENY
        assert_rl_headers(r)
        openapi.check(r, "GET", template)


@pytest.mark.parametrize("scopes", ["accounts", "reports,accounts", "accounts,transactions,assets"])
def test_accounts_scope_allows_filers(server, scopes):
    """Filers need the scope accounts: a credential holding it is allowed."""
    t = server.new_tenant("acc", scopes=scopes)
    assert t.get(FILER).status_code == 200
    assert t.get("/v1/filers").status_code == 200


def test_credential_without_scopes_allows_filers(server, tenant):
    """A credential without scopes may call every tenant route."""
    assert tenant.get(FILER).status_code == 200
    assert tenant.get("/v1/filers").status_code == 200


# ------------------------------------------------------------ key rotation

def test_key_rotation_keeps_two_keys(tmp_path_factory, taxd_bin):
    """The kid selects one of up to two active keys, so the key can be
    rotated: after `taxd admin keys rotate-token` and a restart the new key
    signs and tokens of the previous one still verify; a second rotation
    retires the oldest key, and its tokens are then Invalid token."""
    d = tmp_path_factory.mktemp("rotate")
    s = Server(d).start()
    try:
        t = s.new_tenant("rotating")
        old = t.mint()
    finally:
        s.stop_and_check()
    old_kid = jwt.get_unverified_header(old)["kid"]

    def restart_after_rotation(previous):
        out = admin(s.db, "keys", "rotate-token")
        assert out["previous_kid"] == previous and out["signing_kid"] != previous, out
        server = Server(d).start()
        t.server = server
        return server, out["signing_kid"]

    s, new_kid = restart_after_rotation(old_kid)
    try:
        assert t.get(FILER, token=old).status_code == 200, "a token of the previous key still verifies"
        new = t.mint()
        assert jwt.get_unverified_header(new)["kid"] == new_kid
        assert t.get(FILER, token=new).status_code == 200
    finally:
        s.stop_and_check()
    s, _ = restart_after_rotation(new_kid)
    try:
        r = t.get(FILER, token=old)
        assert r.status_code == 401 and body(r) == INVALID_TOKEN, "the oldest key is retired"
        assert t.get(FILER, token=new).status_code == 200
    finally:
        s.stop_and_check()


# ------------------------------------------------------------ revocation

def test_revocation_invalidates_existing_tokens_within_a_second(server, tenant):
    """Operator changes (revocation) take effect in the running server within
    one second: a token of a revoked credential is then 401 Invalid token,
    without rate-limit headers. Three revocations in turn: the median delay
    from the admin command's exit to the first refusal must be under a
    second (the server reloads every 200 ms), and none may pass the polling
    bound, so one stall of a loaded machine does not decide the result."""
    from conftest import Tenant
    delays = []
    for _ in range(3):
        cred = server.admin("credentials", "create", "--tenant", tenant.tenant_id)
        t = Tenant(server, cred["tenant_id"], cred["client_id"], cred["client_secret"])
        tok = t.token
        assert t.get(FILER, token=tok).status_code == 200
        out = server.admin("credentials", "revoke", "--client-id", t.client_id)
        assert out["client_id"] == t.client_id
        t0 = time.monotonic()
        r = poll(lambda: (lambda r: [r] if r.status_code == 401 else None)(t.get(FILER, token=tok)),
                 SETTINGS_PROPAGATION_S, interval=0.01, what="revoked token to be refused")[0]
        delays.append(time.monotonic() - t0)
        assert body(r) == INVALID_TOKEN
        assert_no_rl_headers(r)
    assert sorted(delays)[1] < 1.0, delays


def test_revoked_credential_cannot_mint(server, api, tenant):
    """A revoked client is refused by the token endpoint: 401 Invalid client credentials."""
    server.admin("credentials", "revoke", "--client-id", tenant.client_id)
    r = poll(lambda: (lambda r: [r] if r.status_code == 401 else None)(api.post(TOKEN, json=token_body(tenant))),
             SETTINGS_PROPAGATION_S, what="revoked credential to be refused")[0]
    assert body(r) == INVALID_CLIENT


def test_revocation_leaves_other_credentials_of_tenant(server, tenant):
    """Revocation is per credential: another credential of the same tenant keeps working."""
    second = server.admin("credentials", "create", "--tenant", tenant.tenant_id)
    old = tenant.token
    server.admin("credentials", "revoke", "--client-id", tenant.client_id)
    from conftest import Tenant
    t2 = Tenant(server, second["tenant_id"], second["client_id"], second["client_secret"])
    poll(lambda: tenant.get(FILER, token=old).status_code == 401, SETTINGS_PROPAGATION_S,
         what="revocation to take effect")
    assert t2.get(FILER).status_code == 200


# ------------------------------------------------------------ token expiry

def test_token_lasts_24_hours(hooks_server):
    """A token lasts 24 hours: 1 s before exp it works, at exp (clock moved
    by 86,400,000 ms) the response is 401 Invalid token, without rate-limit headers."""
    s = hooks_server
    t = s.new_tenant("expiry")
    tok = t.mint()
    api = s.api()
    r = api.post("/_test/clock", json={"offset_ms": 86399000})
    assert r.status_code == 200 and body(r) == {"offset_ms": 86399000}
    # iat is the mint time rounded down to the second, so a request made in the
    # second after minting would already be past exp at +86399 s: check validity
    # at +86398 s (one second of slack), expiry at exactly +86400 s.
    r = api.post("/_test/clock", json={"offset_ms": 86398000})
    assert body(r) == {"offset_ms": 86398000}
    ok = t.get(FILER, token=tok)
    assert ok.status_code == 200, ok.text
    r = api.post("/_test/clock", json={"offset_ms": 86400000})
    assert r.status_code == 200 and body(r) == {"offset_ms": 86400000}
    r = t.get(FILER, token=tok)
    assert r.status_code == 401
    assert body(r) == INVALID_TOKEN
    assert_no_rl_headers(r)
    # moving the clock back makes it valid again: it is the clock, not a revocation
    api.post("/_test/clock", json={"offset_ms": 0})
    assert t.get(FILER, token=tok).status_code == 200


def test_token_minted_under_shifted_clock_carries_shifted_iat(hooks_server):
    """Every "now" comes from the service clock: a token minted after the clock
    moved a day has iat a day later, and is valid then."""
    s = hooks_server
    t = s.new_tenant("shift")
    s.api().post("/_test/clock", json={"offset_ms": 86400000})
    tok = t.mint()
    claims = jwt.decode(tok, options={"verify_signature": False})
    assert claims["iat"] >= int(time.time()) + 86400 - 5
    assert t.get(FILER, token=tok).status_code == 200


def test_clock_hook_answer_and_uuid(hooks_server):
    """POST /_test/clock answers 200 {"offset_ms": N}; the tenant id is a version 4 UUID."""
    s = hooks_server
    t = s.new_tenant("x")
    assert UUID4_RE.match(t.tenant_id)
    r = s.api().post("/_test/clock", json={"offset_ms": -5000})
    assert r.status_code == 200
    assert body(r) == {"offset_ms": -5000}


# ------------------------------------------------ throttling failed secrets

RETRY_IN_RE = r"^Rate limit exceeded\. Retry in ([0-9]+) seconds\.$"


class _FromAddress(requests.adapters.HTTPAdapter):
    """Connects from a chosen loopback address (the whole of 127/8 is local)."""

    def __init__(self, address):
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def mint_from(server, address, b):
    with requests.Session() as s:
        s.mount("http://", _FromAddress(address))
        r = s.post(server.url + TOKEN, json=b, timeout=30)
    check_against_openapi(r)
    return r


def wrong(t):
    return token_body(t, client_secret="not-the-secret")


def assert_throttled(r):
    assert r.status_code == 429, r.text
    b = body(r)
    assert b["error"] == "rate_limit_exceeded"
    m = re.match(RETRY_IN_RE, b["message"])
    assert m, b
    assert r.headers["Retry-After"] == m.group(1)
    assert 1 <= int(m.group(1)) <= 60
    assert_no_rl_headers(r)
    return int(m.group(1))


def test_failed_secrets_are_throttled_per_client_id_and_address(hooks_server, openapi):
    """5 failed secrets of one client id from one address within a minute:
    further attempts from that address for that id answer 429
    rate_limit_exceeded "Rate limit exceeded. Retry in N seconds." with
    Retry-After: N, the right secret included (else the throttle would tell
    a guesser which guess was right). The same client id from another
    address, and another client id from the throttled address, still mint:
    nobody can lock a known client out from elsewhere. The window ends."""
    s = hooks_server
    t, other = s.new_tenant("victim"), s.new_tenant("bystander")
    for _ in range(5):
        assert mint_from(s, "127.0.0.2", wrong(t)).status_code == 401
    r = mint_from(s, "127.0.0.2", wrong(t))
    assert_throttled(r)
    openapi.check(r, "POST", TOKEN)
    assert_throttled(mint_from(s, "127.0.0.2", token_body(t)))  # the right secret too
    # not locked out from elsewhere; other clients from the same address unaffected
    assert mint_from(s, "127.0.0.1", token_body(t)).status_code == 200
    assert mint_from(s, "127.0.0.3", token_body(t)).status_code == 200
    assert mint_from(s, "127.0.0.2", token_body(other)).status_code == 200
    assert mint_from(s, "127.0.0.1", wrong(t)).status_code == 401  # its own count
    # the window ends a minute after the first failure
    assert s.api().post("/_test/clock", json={"offset_ms": 61000}).status_code == 200
    assert mint_from(s, "127.0.0.2", token_body(t)).status_code == 200


def test_unknown_client_ids_are_throttled_alike(hooks_server):
    """An unknown client id counts like a wrong secret (the answers must not
    tell which ids exist)."""
    s = hooks_server
    b = {"grant_type": "client_credentials", "client_id": "cl_nobody", "client_secret": "x"}
    for _ in range(5):
        assert mint_from(s, "127.0.0.2", b).status_code == 401
    assert_throttled(mint_from(s, "127.0.0.2", b))


def test_a_success_forgets_earlier_failures(hooks_server):
    """Four typos, then the right secret: the count starts again, so four
    more failures are still 401, not 429."""
    s = hooks_server
    t = s.new_tenant("typos")
    for _ in range(4):
        assert mint_from(s, "127.0.0.2", wrong(t)).status_code == 401
    assert mint_from(s, "127.0.0.2", token_body(t)).status_code == 200
    for _ in range(4):
        assert mint_from(s, "127.0.0.2", wrong(t)).status_code == 401
    assert mint_from(s, "127.0.0.2", token_body(t)).status_code == 200
