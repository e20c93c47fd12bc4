"""Report triggers are bounded (issue 15, item 1), and the status GET keeps
the spec's metadata complete.

Rules checked (docs/decisions.md, "Report triggers are bounded"):
  - the trigger has a default per-tenant limit of its own (an endpoint rule
    that applies unless the operator sets one; the operator's rule for the
    route, for one tenant or for all, replaces it): over it, 429 with the
    spec's body {"error":"rate_limit_exceeded","message":"Too many requests."}
    and Retry-After;
  - at most --report-max-active reports pending or processing at once per
    tenant: over it, the same 429 body with Retry-After; another tenant is not
    affected, and a completed report frees its place;
  - requested and skipped account ids are stored once each: the attack of the
    issue re-run with bounded size (20 triggers of 50,000 ids of 256 bytes,
    4 at a time) grows the database (file plus -wal) by at most 1.2x the
    bytes of the ids of the accepted triggers, and the server's peak memory
    (VmHWM) stays under 300 MB;
  - a completed report's status GET still lists every requested id that was
    skipped (never truncated or paged), in order of first appearance, once.
"""
import json
import os
import threading
import time

import pytest

from conftest import (ENDPOINT_LIMIT, SETTINGS_PROPAGATION_S, TAXD_BIN, assert_rl_headers, body,
                      poll, set_rule)

TRIGGER = "/v1/reports/inventory-summary"
ROUTE = "POST /v1/reports/inventory-summary"
TEST_HEADER = "x-taxd-test-report"
REPORT_TIMEOUT_S = 120

ATTACK_TRIGGERS = 20
ATTACK_SENDERS = 4
ATTACK_IDS = 50000
ID_BYTES = 256
DB_GROWTH_FACTOR = 1.2
PEAK_RSS_MAX_KB = 300 * 1024


# ------------------------------------------------------------------ helpers

def post_trigger(tenant, payload=None, data=None, headers=None):
    h = dict(tenant.auth())
    h.update(headers or {})
    if data is not None:
        h["content-type"] = "application/json"
        return tenant.server.api().post(TRIGGER, data=data, headers=h, timeout=120)
    return tenant.server.api().post(TRIGGER, json=payload, headers=h)


def status(tenant, report_id):
    r = tenant.get(f"{TRIGGER}/{report_id}", timeout=120)
    assert r.status_code == 200, r.text[:500]
    return r


def wait_done(tenant, report_id, timeout=REPORT_TIMEOUT_S):
    def done():
        r = tenant.get(f"{TRIGGER}/{report_id}", timeout=120)
        assert r.status_code == 200, r.text[:500]
        b = body(r)
        return b if b["status"] in ("completed", "failed") else None
    return poll(done, timeout, interval=0.1, what=f"report {report_id} to finish")


def assert_limited(r):
    """The spec's second 429 body, with a Retry-After of whole seconds >= 1."""
    assert r.status_code == 429, f"{r.status_code}: {r.text[:300]}"
    assert body(r) == ENDPOINT_LIMIT, r.text
    assert r.headers.get("retry-after", "").isdigit(), r.headers
    assert int(r.headers["retry-after"]) >= 1
    assert_rl_headers(r)


def db_bytes(server):
    return server.db.size_bytes()


def peak_rss_kb(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def attack_ids(n):
    """50,000 distinct ids of exactly 256 bytes, distinct between triggers."""
    return [f"t{n:02d}-{i:06d}-".ljust(ID_BYTES, "x") for i in range(ATTACK_IDS)]


# ------------------------------------------------------------------ trigger limit

def test_trigger_has_a_default_limit_of_its_own(make_server):
    """With no operator rule, the trigger's own default rule applies (here
    lowered to burst 3 with --report-trigger-burst): the headers show it, and
    the fourth trigger at once is 429 with the spec's body and Retry-After.
    The tenant's other routes keep the default bucket."""
    s = make_server("--report-trigger-rate", "1", "--report-trigger-burst", "3",
                    "--report-max-active", "100")
    t = s.new_tenant("trig")
    codes = []
    for _ in range(4):
        r = post_trigger(t, {})
        codes.append(r.status_code)
    assert codes[:3] == [202, 202, 202], codes
    assert_limited(r)
    limit, remaining = assert_rl_headers(r)
    assert (limit, remaining) == (3, 0), (limit, remaining)
    # another tenant has a bucket of its own under the same default rule
    other = s.new_tenant("other")
    assert post_trigger(other, {}).status_code == 202
    # the status route is not limited by the trigger's rule
    r = t.get("/v1/filers/default")
    assert r.status_code == 200 and assert_rl_headers(r)[0] == 1000


def test_operator_rule_replaces_the_default(make_server):
    """The operator's endpoint rule for the route (all tenants, then one
    tenant) replaces the built-in default, within the settings' propagation."""
    s = make_server("--report-trigger-rate", "1", "--report-trigger-burst", "2",
                    "--report-max-active", "100")
    t = s.new_tenant("op")
    set_rule(s, 50, 40, route=ROUTE)

    def limit_is(n):
        def probe():
            r = post_trigger(t, {})
            return r.status_code == 202 and assert_rl_headers(r)[0] == n
        return probe
    poll(limit_is(40), SETTINGS_PROPAGATION_S + 2, interval=0.1, what="the all-tenants rule")
    set_rule(s, 60, 30, tenant=t, route=ROUTE)
    poll(limit_is(30), SETTINGS_PROPAGATION_S + 2, interval=0.1, what="the tenant's rule")


# ------------------------------------------------------------------ pending/processing limit

def test_reports_pending_or_processing_at_once_are_limited(make_server):
    """With --report-max-active 2: two reports held in processing (test pause)
    make the third trigger 429 with the spec's body and Retry-After; another
    tenant still triggers; once they completed the tenant triggers again."""
    s = make_server("--test-hooks", "--report-max-active", "2", "--report-workers", "1")
    t = s.new_tenant("busy")
    held = []
    for _ in range(2):
        r = post_trigger(t, {}, headers={TEST_HEADER: "pause=1500"})
        assert r.status_code == 202, r.text
        held.append(body(r)["report_id"])
    assert_limited(post_trigger(t, {}))
    other = s.new_tenant("calm")
    assert post_trigger(other, {}).status_code == 202
    for rid in held:
        assert wait_done(t, rid)["status"] == "completed"
    assert post_trigger(t, {}).status_code == 202


def test_max_active_default_is_4(make_server):
    """The default: four reports pending or processing per tenant (--report-
    workers 1 and the test pause keep them all waiting)."""
    s = make_server("--test-hooks", "--report-workers", "1")
    t = s.new_tenant("four")
    for _ in range(4):
        r = post_trigger(t, {}, headers={TEST_HEADER: "pause=600"})
        assert r.status_code == 202, r.text
    assert_limited(post_trigger(t, {}))


# ------------------------------------------------------------------ storage and memory

def test_skipped_ids_complete_and_in_order(make_server):
    """The status GET of a completed report lists every skipped id once, in
    order of first appearance, with duplicates counted as requested; ids that
    are accounts created after completion stay skipped (fixed at completion);
    JSON escapes in ids come back as sent."""
    s = make_server()
    t = s.new_tenant("skip")
    h = t.auth()
    r = s.api().post("/v1/account-owners", headers=h,
                     json={"id": "o1", "name": "O", "account_owner_type": "individual"})
    assert r.status_code == 201, r.text
    r = s.api().post("/v1/accounts", headers=h, json={"id": "a1", "account_owner_id": "o1"})
    assert r.status_code == 201, r.text
    ids = [f"m{i:05d}" for i in range(3000)]
    ids[10] = 'q"uote\\back\u00e9\u2603'
    sent = ids[:1500] + ["a1"] + ids[1500:] + ids[:5] + ["a1"]
    rb = body(post_trigger(t, {"account_ids": sent}))
    b = wait_done(t, rb["report_id"])
    assert b["status"] == "completed", b
    meta = b["metadata"]
    assert meta == {"total_accounts_requested": len(sent), "total_accounts_included": 1,
                    "skipped_account_ids": {"not_found_in_organization": ids}}, \
        {k: (v if k != "skipped_account_ids" else "...") for k, v in meta.items()}
    # an account created afterwards does not change the completed report
    r = s.api().post("/v1/accounts", headers=h, json={"id": ids[0], "account_owner_id": "o1"})
    assert r.status_code == 201, r.text
    again = body(status(t, rb["report_id"]))["metadata"]
    assert again["skipped_account_ids"]["not_found_in_organization"] == ids


ATTACK_RETRIES = 2  # a 429 is retried after its Retry-After, at most this many times


def _send(tenant, payloads, results, lock):
    """Sends each payload; a 429 is sent again after its Retry-After (each
    attempt is recorded), as a client that honours the header would."""
    for n, data in payloads:
        for attempt in range(ATTACK_RETRIES + 1):
            r = post_trigger(tenant, data=data())
            with lock:
                results.append((n, r.status_code, r.headers.get("retry-after"),
                                body(r).get("report_id") if r.status_code == 202 else body(r)))
            if r.status_code != 429 or attempt == ATTACK_RETRIES:
                break
            time.sleep(min(int(r.headers.get("retry-after") or 1), 5))


@pytest.mark.timeout(600)
def test_attack_of_large_triggers_is_bounded(make_server):
    """Issue 15, item 1, re-run with bounded size: 20 triggers of 50,000 ids of
    256 bytes, 4 senders at a time. The database (file plus -wal) grows by at
    most 1.2x the bytes of the ids of the triggers accepted (202), and the
    server's peak memory stays under 300 MB, the status GETs of every accepted
    report included (each must still list all 50,000 skipped ids).

    Settings: the default trigger rule and the default of 4 reports pending
    or processing per tenant; a sender retries a 429 after its Retry-After
    at most twice (without retries the accepted count, 6 to 10 on an idle
    machine, fell to 4 under load), so the accepted count still depends on
    how fast reports complete: at least 6 must be accepted for the measure
    to mean something (the attack of the issue: all 20).
    The database is measured after a graceful stop (file plus -wal; the stop
    checkpoints the WAL, a transient bounded by journal_size_limit)."""
    if "asan" in os.path.basename(os.path.dirname(TAXD_BIN)) or "asan" in TAXD_BIN:
        pytest.skip("a measurement of the plain build: the sanitizer's memory is no figure")
    s = make_server()
    t = s.new_tenant("attack")
    t.token  # minted before the baseline
    before = db_bytes(s)
    results, lock = [], threading.Lock()
    payloads = [(n, (lambda n=n: json.dumps({"account_ids": attack_ids(n)}).encode()))
                for n in range(ATTACK_TRIGGERS)]
    threads = [threading.Thread(target=_send, args=(t, payloads[k::ATTACK_SENDERS], results, lock))
               for k in range(ATTACK_SENDERS)]
    began = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    sent_s = time.monotonic() - began
    accepted = [(n, rid) for n, code, _, rid in results if code == 202]
    refused = [(code, ra, b) for _, code, ra, b in results if code != 202]
    for code, ra, b in refused:
        assert code == 429 and b == ENDPOINT_LIMIT and ra and int(ra) >= 1, (code, ra, b)

    def check_one(item):
        n, rid = item
        b = wait_done(t, rid)
        assert b["status"] == "completed", b
        meta = b["metadata"]
        assert meta["total_accounts_requested"] == ATTACK_IDS
        skipped = meta["skipped_account_ids"]["not_found_in_organization"]
        assert len(skipped) == ATTACK_IDS and skipped[0] == attack_ids(n)[0]
        assert skipped[-1] == attack_ids(n)[-1]

    errors = []

    def checker(items):
        try:
            for item in items:
                check_one(item)
        except BaseException as exc:  # reported below
            errors.append(exc)
    readers = [threading.Thread(target=checker, args=(accepted[k::ATTACK_SENDERS],))
               for k in range(ATTACK_SENDERS)]
    for th in readers:
        th.start()
    for th in readers:
        th.join()
    assert not errors, errors[0]

    peak = peak_rss_kb(s)
    running = db_bytes(s) - before
    # The WAL is a bounded transient (journal_size_limit, checkpoints): what
    # stays is measured after a graceful stop, which checkpoints it.
    s.stop_and_check()
    grown = db_bytes(s) - before
    id_bytes = len(accepted) * ATTACK_IDS * ID_BYTES
    print(f"\nattack: {len(accepted)}/{ATTACK_TRIGGERS} accepted in {sent_s:.1f} s; "
          f"database grew {grown / 1e6:.1f} MB for {id_bytes / 1e6:.1f} MB of ids "
          f"({grown / max(id_bytes, 1):.2f}x; {running / 1e6:.1f} MB with the WAL while "
          f"running); peak RSS {peak / 1024:.0f} MB")
    assert len(accepted) >= 6, f"only {len(accepted)} triggers accepted: {refused[:3]}"
    assert grown <= DB_GROWTH_FACTOR * id_bytes, (grown, id_bytes)
    assert peak < PEAK_RSS_MAX_KB, f"peak RSS {peak} kB"
