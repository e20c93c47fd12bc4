"""Rate limits (spec § Limits, § Errors 429): the tenant x method x route
bucket, an endpoint's own limit, load shedding, and the x-ratelimit-* and
Retry-After headers. Every test uses a fresh tenant with low limits so that
buckets never depend on other tests."""
import math
import threading
import time

import requests

from conftest import (ENDPOINT_LIMIT, GATEWAY_DENY, INVALID_HEADER, INVALID_TOKEN, NODE_SHED, SETTINGS_PROPAGATION_S,
                      TENANT_LIMIT_RE, assert_no_rl_headers, assert_rl_headers, body, get_metrics, metric, poll,
                      probe_get, set_rule, wait_for_limit_header)

FILER = "/v1/filers/default"
FILER_T = "/v1/filers/{filerId}"
ROUTE = "GET /v1/filers/{filerId}"


def exhaust(tenant, paths, limit_burst, max_requests=50):
    """Sends requests (cycling through paths) until a 429; returns
    (the 429 response, number of non-429 answers, seconds taken)."""
    t0 = time.monotonic()
    ok = 0
    for i in range(max_requests):
        r = tenant.get(paths[i % len(paths)])
        if r.status_code == 429:
            return r, ok, time.monotonic() - t0
        assert r.status_code in (200, 404), r.text
        ok += 1
    raise AssertionError(f"no 429 after {max_requests} requests with burst {limit_burst}")


def test_default_limit_headers(tenant, openapi):
    """Rate-limit headers x-ratelimit-limit (burst, 1,000 by default) and
    x-ratelimit-remaining on authenticated responses: a tenant's first request
    leaves 999."""
    r = tenant.get(FILER)
    assert r.status_code == 200
    assert assert_rl_headers(r) == (1000, 999)
    openapi.check(r, "GET", FILER_T)


def test_remaining_decreases_by_one_per_request(server, tenant):
    """x-ratelimit-remaining decreases by one per request (up to the refill of
    1 token per second under a rate-1 rule)."""
    set_rule(server, 1, 10, tenant=tenant)
    wait_for_limit_header(tenant, "/v1/filers", 10)
    seen = []
    for _ in range(6):
        r = tenant.get(FILER)
        assert r.status_code == 200
        seen.append((time.monotonic(), assert_rl_headers(r)))
    assert seen[0][1] == (10, 9), "a fresh bucket holds the burst; the first request leaves burst - 1"
    for (t_a, (_, rem_a)), (t_b, (lim_b, rem_b)) in zip(seen, seen[1:]):
        assert lim_b == 10
        refill = math.ceil(t_b - t_a)  # whole tokens that could have refilled at 1/s
        assert rem_a - 1 <= rem_b <= rem_a - 1 + refill, f"remaining went {rem_a} -> {rem_b}: {seen}"


def test_tenant_bucket_429_with_retry_after(server, tenant, openapi):
    """429 body error rate_limit_exceeded with a message stating seconds to
    wait ("Rate limit exceeded. Retry in N seconds.") and the same value in
    Retry-After; the 429 carries the rate-limit headers (remaining 0)."""
    set_rule(server, 1, 3, tenant=tenant)
    wait_for_limit_header(tenant, "/v1/filers", 3)
    r, ok, took = exhaust(tenant, [FILER], 3)
    assert 3 <= ok <= 3 + math.ceil(took), f"{ok} requests passed a burst of 3 in {took:.2f}s"
    b = body(r)
    assert b["error"] == "rate_limit_exceeded"
    m = TENANT_LIMIT_RE.match(b["message"])
    assert m, f"message {b['message']!r}"
    n = int(m.group(1))
    assert n >= 1
    assert r.headers.get("retry-after") == str(n), f"Retry-After {r.headers.get('retry-after')!r} vs message N={n}"
    assert assert_rl_headers(r) == (3, 0)
    assert set(b) >= {"error", "message"}
    openapi.check(r, "GET", FILER_T)


def test_retry_after_is_enough(server, tenant):
    """Client action on 429: wait for the Retry-After header; after waiting
    that many seconds the request is allowed."""
    set_rule(server, 1, 2, tenant=tenant)
    wait_for_limit_header(tenant, "/v1/filers", 2)
    r, _, _ = exhaust(tenant, [FILER], 2)
    wait = int(r.headers["retry-after"])
    assert 1 <= wait <= 2, "with 1 token per second one token comes back within a second or two"
    time.sleep(wait + 0.05)  # the contract's own instruction, not a synchronisation
    assert tenant.get(FILER).status_code == 200


def test_buckets_are_per_route_template_and_tenant(server, tenant):
    """The API rate is per tenant, per method and route: exhausting
    GET /v1/filers/{filerId} with different ids (404s count too) leaves
    GET /v1/filers untouched, and another tenant is unaffected."""
    other = server.new_tenant("other")
    set_rule(server, 1, 3, tenant=tenant)
    wait_for_limit_header(tenant, "/v1/filers", 3)
    r, ok, took = exhaust(tenant, ["/v1/filers/a", "/v1/filers/b", "/v1/filers/c", "/v1/filers/d"], 3)
    assert ok <= 3 + math.ceil(took), "different raw ids must share the template's bucket"
    assert TENANT_LIMIT_RE.match(body(r)["message"])
    # any id of the template is now limited, including the default filer
    assert tenant.get(FILER).status_code == 429
    # another route of the same tenant has its own bucket (it may have been used by the poll above)
    lst = tenant.get("/v1/filers")
    assert lst.status_code in (200,), lst.text
    # another tenant is unaffected and keeps the default limit
    o = other.get(FILER)
    assert o.status_code == 200
    assert assert_rl_headers(o) == (1000, 999)


def test_exhausted_buckets_do_not_stop_minting(server, tenant, openapi):
    """The token endpoint verifies no token, so no tenant bucket applies to it:
    with GET /v1/filers/{filerId} exhausted the tenant still mints tokens, and
    that answer has no rate-limit headers."""
    set_rule(server, 1, 2, tenant=tenant)
    wait_for_limit_header(tenant, FILER, 2)
    exhaust(tenant, [FILER], 2)
    r = server.api().post("/v1/oauth/token", json={"grant_type": "client_credentials",
                                                    "client_id": tenant.client_id,
                                                    "client_secret": tenant.client_secret})
    assert r.status_code == 200
    assert_no_rl_headers(r)


def test_tenant_limit_counted_in_metrics(server, tenant):
    """taxd_ratelimit_rejections_total{layer="tenant"} counts the tenant bucket's 429s."""
    before = metric(get_metrics(server), "taxd_ratelimit_rejections_total", layer="tenant")
    set_rule(server, 1, 2, tenant=tenant)
    wait_for_limit_header(tenant, FILER, 2)
    exhaust(tenant, [FILER], 2)
    after = get_metrics(server)
    assert metric(after, "taxd_ratelimit_rejections_total", layer="tenant") >= before + 1
    assert metric(after, "taxd_http_requests_total", route=ROUTE, status="429") >= 1


def test_endpoint_limit_for_one_tenant(server, tenant, openapi):
    """Some endpoints have their own limits: an endpoint rule set for a tenant
    answers 429 rate_limit_exceeded "Too many requests." with Retry-After,
    only on that route and only for that tenant."""
    other = server.new_tenant("other")
    before = metric(get_metrics(server), "taxd_ratelimit_rejections_total", layer="endpoint")
    set_rule(server, 1, 2, tenant=tenant, route=ROUTE)

    def probe():
        r = tenant.get(FILER)
        assert r.status_code in (200, 429), r.text
        return [r] if r.status_code == 429 else None
    # the rule reaches the server within a second; then the burst of 2 goes fast
    r = poll(probe, SETTINGS_PROPAGATION_S + 2, interval=0.02, what="the endpoint limit")[0]
    assert body(r) == ENDPOINT_LIMIT
    ra = r.headers.get("retry-after")
    assert ra is not None and ra.isdigit() and int(ra) >= 1, f"Retry-After {ra!r}"
    assert_rl_headers(r)
    openapi.check(r, "GET", FILER_T)
    # the tenant default bucket is not what refused: its limit header is still the default burst
    assert int(r.headers["x-ratelimit-limit"]) in (1000, 2)
    assert tenant.get("/v1/filers").status_code == 200
    assert other.get(FILER).status_code == 200
    after = get_metrics(server)
    assert metric(after, "taxd_ratelimit_rejections_total", layer="endpoint") >= before + 1


def test_endpoint_limit_for_all_tenants(make_server):
    """An endpoint rule without a tenant applies to every tenant (each its own
    bucket): both answer "Too many requests." on that route, other routes are free."""
    s = make_server()
    a, b = s.new_tenant("a"), s.new_tenant("b")
    set_rule(s, 1, 2, route=ROUTE)
    for t in (a, b):
        def probe(t=t):
            r = t.get(FILER)
            assert r.status_code in (200, 429), r.text
            return [r] if r.status_code == 429 else None
        r = poll(probe, SETTINGS_PROPAGATION_S + 2, interval=0.02, what="the all-tenants endpoint limit")[0]
        assert body(r) == ENDPOINT_LIMIT
        assert int(r.headers["retry-after"]) >= 1
        assert t.get("/v1/filers").status_code == 200


def test_tenant_own_default_applies_to_every_route(server, tenant):
    """The operator can set a tenant's own default: every route bucket of that
    tenant then reports that burst; other tenants keep 1,000."""
    other = server.new_tenant("other")
    set_rule(server, 50, 7, tenant=tenant)
    wait_for_limit_header(tenant, "/v1/filers", 7)
    assert assert_rl_headers(tenant.get(FILER))[0] == 7
    assert assert_rl_headers(other.get(FILER))[0] == 1000


def test_ratelimit_headers_absent_where_no_token_verified(server, tenant):
    """x-ratelimit-* appear only on responses after a token was verified: not
    on 401, the token endpoint, /healthz, /metrics, or router 404/405."""
    api = server.api()
    for r in [api.get(FILER), api.get(FILER, headers={"authorization": "bearer nope"}),
              api.post("/v1/oauth/token", json={}), api.get("/healthz"), api.get("/metrics"),
              api.get("/nope", headers=tenant.auth()), api.request("PUT", FILER, headers=tenant.auth())]:
        assert_no_rl_headers(r)


def test_ratelimit_headers_present_whatever_the_status(server, tenant):
    """The headers are on every response after a token verified, whatever the
    status: 200, 404, 400, 403 (scope deny), 429."""
    deny = server.new_tenant("deny", scopes="reports")
    rs = [tenant.get(FILER), tenant.get("/v1/filers/nope"), tenant.get("/v1/filers?limit=0"), deny.get(FILER)]
    assert [r.status_code for r in rs] == [200, 404, 400, 403]
    for r in rs:
        assert_rl_headers(r)
    set_rule(server, 1, 2, tenant=tenant)
    wait_for_limit_header(tenant, FILER, 2)
    r, _, _ = exhaust(tenant, [FILER], 2)
    assert_rl_headers(r)


def test_authentication_and_scopes_answer_before_rate_limits(server, tenant):
    """Order of checks: authentication (401/403), then rate limits (429). With
    the tenant's bucket empty, a bad header or token is still 401 (without
    rate-limit headers), and a credential whose scopes do not cover the route
    still gets the gateway deny, not a 429."""
    deny = server.new_tenant("deny", scopes="reports")
    for t in (tenant, deny):
        set_rule(server, 1, 2, tenant=t)
    wait_for_limit_header(tenant, FILER, 2)
    poll(lambda: deny.get(FILER).headers.get("x-ratelimit-limit") == "2", SETTINGS_PROPAGATION_S,
         what="the rule on the denied credential's tenant")
    exhaust(tenant, [FILER], 2)
    for headers, expected in [({}, INVALID_HEADER), ({"authorization": "Bearer x.y.z"}, INVALID_TOKEN),
                              ({"authorization": f"Bearer {tenant.token}x"}, INVALID_TOKEN)]:
        r = server.api().get(FILER, headers=headers)
        assert (r.status_code, body(r)) == (401, expected)
        assert_no_rl_headers(r)
    answers = [deny.get(FILER) for _ in range(5)]  # the denied requests drain the bucket too
    assert [(r.status_code, body(r)) for r in answers] == [(403, GATEWAY_DENY)] * 5
    assert assert_rl_headers(answers[-1]) == (2, 0), "the bucket is empty, yet the scope deny answers"


# ------------------------------------------------------------- load shedding

def test_load_shedding(make_server, openapi):
    """When more requests are in progress than the node allows, it sheds load:
    429 {"error":"Too Many Requests","message":"Too Many Requests"}; the held
    request still completes, and the next request succeeds."""
    s = make_server("--test-hooks", "--max-in-flight", "1")
    t = s.new_tenant("shed")
    tok = t.token
    before = metric(get_metrics(s), "taxd_ratelimit_rejections_total", layer="node")
    held = {}

    def hold():
        try:
            # the pause itself may be shed if the previous request is still counted
            # in flight (see test_load_shedding_counts_only_in_flight): retry, bounded
            for _ in range(50):
                held["r"] = requests.get(s.url + "/_test/pause?ms=5000", headers=t.auth(tok), timeout=60)
                if held["r"].status_code != 429:
                    break
                time.sleep(0.02)
        except Exception as exc:  # reported below
            held["exc"] = exc

    th = threading.Thread(target=hold)
    th.start()
    shed = None
    try:
        deadline = time.monotonic() + 60
        while th.is_alive() and time.monotonic() < deadline:
            r = probe_get(t, FILER, token=tok)
            if r is None:
                continue
            if r.status_code == 429:
                shed = r
                break
            assert r.status_code == 200, r.text
            time.sleep(0.02)
    finally:
        th.join(60)
    assert "exc" not in held, f"the held request failed: {held.get('exc')}"
    assert held["r"].status_code == 200 and held["r"].json() == {}
    assert shed is not None, "no 429 while a request was held with --max-in-flight 1"
    assert body(shed) == NODE_SHED
    openapi.check(shed, "GET", FILER_T)
    # once the held request is done the node serves again (polled: the held
    # request's completion can lag its answer, see the next test)
    poll(lambda: t.get(FILER, token=tok).status_code == 200, 10, what="a 200 after the held request ended")
    assert metric(get_metrics(s), "taxd_ratelimit_rejections_total", layer="node") >= before + 1


def test_load_shedding_counts_only_in_flight(make_server):
    """Shedding is about requests in progress, not a rate: with --max-in-flight 1
    a client sending one request at a time (each after the previous answer
    arrived) is never shed."""
    s = make_server("--max-in-flight", "1")
    t = s.new_tenant("seq")
    api = s.api()
    for i in range(1000):
        # mostly /healthz (no bucket, so the tenant's rate limit cannot interfere)
        r = t.get(FILER) if i % 10 == 0 else api.get("/healthz")
        assert r.status_code == 200, f"request {i}: {r.status_code} {r.text}"
