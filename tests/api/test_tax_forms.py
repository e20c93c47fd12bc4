"""Tax forms: `taxd admin forms generate|file|delete|show`, GET
/v1/tax-documents, and the FORM_STATUS_UPDATE event.

Rules checked, in the words of spec.md (§ Tax form status, § Event catalog)
and of the tax forms issue:
  - "(none) -> Generated -> Filed (contents unchanged) or Deleted; a Filed
    form cannot be deleted; Filed and Deleted are final; generating again
    after a deletion makes a new form" (a new form_id); generating over a
    Generated form refreshes it in place (same form_id) and emits again;
  - every transition emits FORM_STATUS_UPDATE to a real subscribed HTTPS
    receiver with exactly organization_id, account_id (the account's uuid v4),
    alternate_account_id (its caller id), form_type, tax_year (an integer)
    and status; refused transitions exit non-zero with a JSON error on stderr
    and emit nothing;
  - GET lists Generated and Filed forms but not Deleted ones, with
    GAIN_LOSS_SUMMARY and TRANSACTION_SUMMARY contents matching a hand-worked
    set of transactions posted through the API; a transaction posted after
    filing does not change the Filed form;
  - 400 for a missing or invalid account_id / tax_year, 404 naming an unknown
    account, the gateway deny without the scope, tenant isolation;
  - generating for every account of a tenant skips (and reports) Filed forms.
Every response is also validated against docs/openapi.yaml by conftest.
"""
import json
from urllib.parse import urlencode

import pytest

from conftest import GATEWAY_DENY, Tenant, body
from eventsupport import events_receiver, events_server, EventInbox, assert_uuid4  # noqa: F401

TX_PATH = "/v1/transactions/external-id"
EVENT_KEYS = ["event_type", "event_id", "organization_id", "account_id", "alternate_account_id",
              "form_type", "tax_year", "status"]


# ------------------------------------------------------------------ helpers

def call(tenant, method, path, json_body=None):
    kw = {"headers": tenant.auth()}
    if json_body is not None:
        kw["json"] = json_body
    return tenant.server.api().request(method, path, **kw)


def documents(tenant, **params):
    return call(tenant, "GET", "/v1/tax-documents?" + urlencode(params))


def listed(tenant, account_id, year=2024):
    r = documents(tenant, account_id=account_id, tax_year=year)
    assert r.status_code == 200, r.text
    return body(r)["data"]


def make_account(tenant, account_id, owner="owner-1"):
    r = call(tenant, "POST", "/v1/account-owners",
             {"id": owner, "name": "Form owner", "account_owner_type": "individual"})
    assert r.status_code in (201, 409), r.text
    r = call(tenant, "POST", "/v1/accounts",
             {"id": account_id, "account_owner_id": owner, "cost_basis_method": "FIFO"})
    assert r.status_code == 201, r.text
    return body(r)["data"]["uuid"]


def line(code, amount):
    kind = "fiat" if code == "USD" else "crypto"
    return {"asset_amount": {"amount": amount, "asset": {"code": code, "type": kind}}}


def post_trade(tenant, account_id, tx_id, at, give, take, fee=None):
    doc = {"id": tx_id, "account_id": account_id, "datetime": at, "type": "trade",
           "sent": [line(*give)], "received": [line(*take)]}
    if fee is not None:
        doc["fees"] = [line("USD", fee)]
    r = call(tenant, "POST", TX_PATH, doc)
    assert r.status_code == 201, r.text


def generate(server, tenant, form_type, year=2024, account=None):
    args = ["forms", "generate", "--tenant", tenant.tenant_id, "--tax-year", str(year),
            "--form-type", form_type]
    if account is not None:
        args += ["--account", account]
    return server.admin(*args)


def generate_one(server, tenant, form_type, account, year=2024):
    out = generate(server, tenant, form_type, year, account)
    assert list(out) == ["forms"] and len(out["forms"]) == 1, out
    form = out["forms"][0]
    assert list(form) == ["form_id", "account_id", "status"], form
    assert form["account_id"] == account and form["status"] == "Generated"
    assert_uuid4(form["form_id"])
    return form["form_id"]


def refused(server, *args):
    """The command exits non-zero with one JSON error object on stderr."""
    p = server.admin_raw(*args)
    assert p.returncode != 0, p.stdout
    assert p.stdout == ""
    err = json.loads(p.stderr.strip().splitlines()[-1])
    assert list(err) == ["error"] and isinstance(err["error"], str), err
    return err["error"]


def check_event(event, tenant, account_uuid, account_id, form_type, year, status):
    assert list(event) == EVENT_KEYS, event
    assert event["event_type"] == "FORM_STATUS_UPDATE"
    assert event["organization_id"] == tenant.tenant_id
    assert_uuid4(event["account_id"])
    assert event["account_id"] == account_uuid
    assert event["alternate_account_id"] == account_id
    assert event["form_type"] == form_type
    assert type(event["tax_year"]) is int and event["tax_year"] == year
    assert event["status"] == status


# ------------------------------------------------------------------ events and transitions

def test_every_transition_emits_form_status_update(events_server, events_receiver):
    server = events_server
    tenant = server.new_tenant("forms-events")
    inbox = EventInbox(server, events_receiver, tenant, "FORM_STATUS_UPDATE")
    uuid = make_account(tenant, "acct-1")

    gl = generate_one(server, tenant, "GAIN_LOSS_SUMMARY", "acct-1")
    check_event(inbox.next(), tenant, uuid, "acct-1", "GAIN_LOSS_SUMMARY", 2024, "Generated")

    filed = server.admin("forms", "file", "--form", gl)
    assert filed["form_id"] == gl and filed["status"] == "Filed" and filed["filed_at"]
    check_event(inbox.next(), tenant, uuid, "acct-1", "GAIN_LOSS_SUMMARY", 2024, "Filed")

    ts = generate_one(server, tenant, "1099_B", "acct-1", year=2023)
    check_event(inbox.next(), tenant, uuid, "acct-1", "1099_B", 2023, "Generated")
    deleted = server.admin("forms", "delete", "--form", ts)
    assert deleted["status"] == "Deleted" and deleted["deleted_at"]
    check_event(inbox.next(), tenant, uuid, "acct-1", "1099_B", 2023, "Deleted")


def test_refused_transitions_change_nothing_and_emit_nothing(events_server, events_receiver):
    server = events_server
    tenant = server.new_tenant("forms-refused")
    inbox = EventInbox(server, events_receiver, tenant, "FORM_STATUS_UPDATE")
    uuid = make_account(tenant, "acct-r")
    filed = generate_one(server, tenant, "GAIN_LOSS_SUMMARY", "acct-r")
    server.admin("forms", "file", "--form", filed)
    gone = generate_one(server, tenant, "TRANSACTION_SUMMARY", "acct-r")
    server.admin("forms", "delete", "--form", gone)
    for _ in range(4):
        inbox.next()

    assert "Filed" in refused(server, "forms", "file", "--form", filed)
    assert "cannot be deleted" in refused(server, "forms", "delete", "--form", filed)
    assert "Deleted" in refused(server, "forms", "file", "--form", gone)
    assert "Deleted" in refused(server, "forms", "delete", "--form", gone)
    assert "Filed" in refused(server, "forms", "generate", "--tenant", tenant.tenant_id,
                              "--tax-year", "2024", "--form-type", "GAIN_LOSS_SUMMARY",
                              "--account", "acct-r")
    assert "no form" in refused(server, "forms", "file", "--form", "nope")
    assert server.admin("forms", "show", "--form", filed)["status"] == "Filed"
    assert server.admin("forms", "show", "--form", gone)["status"] == "Deleted"

    # A sentinel change: the next event is its own, so the refusals emitted nothing.
    sentinel = generate_one(server, tenant, "1099_B", "acct-r")
    check_event(inbox.next(), tenant, uuid, "acct-r", "1099_B", 2024, "Generated")
    assert len(inbox.events()) == 5
    assert [f["form_id"] for f in listed(tenant, "acct-r")] == [sentinel, filed]


def test_regenerate_after_delete_makes_a_new_form(events_server, events_receiver):
    server = events_server
    tenant = server.new_tenant("forms-regen")
    inbox = EventInbox(server, events_receiver, tenant, "FORM_STATUS_UPDATE")
    uuid = make_account(tenant, "acct-g")
    first = generate_one(server, tenant, "DAC7", "acct-g")
    inbox.next()
    # Generating over a Generated form refreshes it in place: same id, one more event.
    assert generate_one(server, tenant, "DAC7", "acct-g") == first
    check_event(inbox.next(), tenant, uuid, "acct-g", "DAC7", 2024, "Generated")
    server.admin("forms", "delete", "--form", first)
    check_event(inbox.next(), tenant, uuid, "acct-g", "DAC7", 2024, "Deleted")
    second = generate_one(server, tenant, "DAC7", "acct-g")
    assert second != first
    check_event(inbox.next(), tenant, uuid, "acct-g", "DAC7", 2024, "Generated")
    assert server.admin("forms", "show", "--form", first)["status"] == "Deleted"
    assert [f["form_id"] for f in listed(tenant, "acct-g")] == [second]


# ------------------------------------------------------------------ content through the API

# Worked by hand (FIFO, tax year 2024 in UTC):
#   b1 2023-03-01 buy 2 BTC for 20000 USD + 10 fee    lot 2 BTC cost 20010
#   s1 2024-02-15 sell 1 BTC for 25000, fee 5         cost 10005, proceeds 24995: short, +14990
#   e1 2024-03-01 buy 10 ETH for 5000
#   e2 2024-04-01 sell 10 ETH for 4000                short, -1000 (a loss)
#   s2 2024-06-01 sell 0.5 BTC for 15000              held > 1 year: long, cost 5002.5, +9997.5
#   y1 2025-01-01T00:00:00Z sell 0.1 BTC for 7000     outside 2024
GAIN_LOSS_2024 = {
    "currency": "USD",
    "short_term": {
        "proceeds": "28995", "cost_basis": "15005", "gain_loss": "13990",
        "assets": [
            {"asset_code": "BTC", "quantity": "1", "proceeds": "24995", "cost_basis": "10005",
             "gain_loss": "14990"},
            {"asset_code": "ETH", "quantity": "10", "proceeds": "4000", "cost_basis": "5000",
             "gain_loss": "-1000"}]},
    "long_term": {
        "proceeds": "15000", "cost_basis": "5002.5", "gain_loss": "9997.5",
        "assets": [{"asset_code": "BTC", "quantity": "0.5", "proceeds": "15000",
                    "cost_basis": "5002.5", "gain_loss": "9997.5"}]},
    "total": {"proceeds": "43995", "cost_basis": "20007.5", "gain_loss": "23987.5"},
    # crypto before 2025 is on no 1099-DA: box C (short), F (long)
    "form_8949_boxes": [
        {"box": "C", "rows": 2, "proceeds": "28995", "cost_basis": "15005", "gain_loss": "13990"},
        {"box": "F", "rows": 1, "proceeds": "15000", "cost_basis": "5002.5", "gain_loss": "9997.5"}],
    "rows_without_cost_basis": 0,
    "rows_without_proceeds": 0,
    "rows_without_term": 0,
}


def tx_summary(trades, value):
    types = [{"type": t, "count": 0, "usd_value": "0", "count_without_usd_value": 0}
             for t in ("deposit", "income", "trade", "withdraw", "expense")]
    types[2].update(count=trades, usd_value=value)
    return {"currency": "USD", "transaction_types": types,
            "total": {"count": trades, "usd_value": value, "count_without_usd_value": 0}}


def post_the_year(tenant, account_id):
    post_trade(tenant, account_id, "b1", "2023-03-01T00:00:00Z", ("USD", "20000"), ("BTC", "2"), "10")
    post_trade(tenant, account_id, "s1", "2024-02-15T00:00:00Z", ("BTC", "1"), ("USD", "25000"), "5")
    post_trade(tenant, account_id, "e1", "2024-03-01T00:00:00Z", ("USD", "5000"), ("ETH", "10"))
    post_trade(tenant, account_id, "e2", "2024-04-01T00:00:00Z", ("ETH", "10"), ("USD", "4000"))
    post_trade(tenant, account_id, "s2", "2024-06-01T00:00:00Z", ("BTC", "0.5"), ("USD", "15000"))
    post_trade(tenant, account_id, "y1", "2025-01-01T00:00:00Z", ("BTC", "0.1"), ("USD", "7000"))


def test_contents_match_the_hand_worked_year(server):
    tenant = server.new_tenant("forms-content")
    make_account(tenant, "acct-c")
    post_the_year(tenant, "acct-c")
    gl = generate_one(server, tenant, "GAIN_LOSS_SUMMARY", "acct-c")
    ts = generate_one(server, tenant, "TRANSACTION_SUMMARY", "acct-c")
    rec = generate_one(server, tenant, "1099_B", "acct-c")
    gone = generate_one(server, tenant, "RMD_STATEMENT", "acct-c")
    server.admin("forms", "delete", "--form", gone)

    forms = {f["form_type"]: f for f in listed(tenant, "acct-c")}
    assert list(forms) == ["1099_B", "GAIN_LOSS_SUMMARY", "TRANSACTION_SUMMARY"]  # not Deleted
    g = forms["GAIN_LOSS_SUMMARY"]
    assert g["form_id"] == gl and g["status"] == "Generated" and g["tax_year"] == 2024
    assert g["account_id"] == "acct-c" and g["filed_at"] is None
    assert g["content"] == GAIN_LOSS_2024
    assert forms["TRANSACTION_SUMMARY"]["form_id"] == ts
    # s1 and y1 give no USD value for the BTC sent: valued by the USD received.
    assert forms["TRANSACTION_SUMMARY"]["content"] == tx_summary(4, "49000")
    assert forms["1099_B"]["form_id"] == rec and "note" in forms["1099_B"]["content"]

    # Filed: contents unchanged, even after new transactions of the year.
    server.admin("forms", "file", "--form", gl)
    post_trade(tenant, "acct-c", "s3", "2024-07-01T00:00:00Z", ("BTC", "0.1"), ("USD", "3000"))
    forms = {f["form_type"]: f for f in listed(tenant, "acct-c")}
    assert forms["GAIN_LOSS_SUMMARY"]["status"] == "Filed"
    assert forms["GAIN_LOSS_SUMMARY"]["content"] == GAIN_LOSS_2024
    assert forms["GAIN_LOSS_SUMMARY"]["filed_at"] is not None
    # A Generated form regenerated picks the new transaction up, same form_id.
    assert generate_one(server, tenant, "TRANSACTION_SUMMARY", "acct-c") == ts
    forms = {f["form_type"]: f for f in listed(tenant, "acct-c")}
    assert forms["TRANSACTION_SUMMARY"]["content"] == tx_summary(5, "52000")
    # The other years hold nothing of 2024.
    assert listed(tenant, "acct-c", 2025) == []


def test_generate_for_every_account_skips_filed_forms(server):
    tenant = server.new_tenant("forms-all")
    make_account(tenant, "a-1")
    make_account(tenant, "a-2")
    make_account(tenant, "a-3")
    filed = generate_one(server, tenant, "1099_MISC", "a-2")
    server.admin("forms", "file", "--form", filed)
    out = generate(server, tenant, "1099_MISC")
    assert [f["account_id"] for f in out["forms"]] == ["a-1", "a-3"]
    assert all(f["status"] == "Generated" for f in out["forms"])
    assert len(out["skipped"]) == 1
    skipped = out["skipped"][0]
    assert skipped["form_id"] == filed and skipped["account_id"] == "a-2"
    assert skipped["status"] == "Filed" and "Filed" in skipped["reason"]


# ------------------------------------------------------------------ errors and isolation

def issue_paths(r):
    assert r.status_code == 400, r.text
    b = body(r)
    assert b["error"] == "Bad Request" and b["message"] == "Invalid query parameters", b
    return [i["path"] for i in b["issues"]]


def test_query_errors_and_unknown_account(server):
    tenant = server.new_tenant("forms-400")
    make_account(tenant, "acct-q")
    assert issue_paths(documents(tenant, tax_year=2024)) == [["account_id"]]
    assert issue_paths(documents(tenant, account_id="", tax_year=2024)) == [["account_id"]]
    assert issue_paths(documents(tenant, account_id="acct-q")) == [["tax_year"]]
    for bad in ("abc", "2024.0", "1999", "2101", "-2024", ""):
        assert issue_paths(documents(tenant, account_id="acct-q", tax_year=bad)) == [["tax_year"]]
    r = documents(tenant, account_id="nobody", tax_year=2024)
    assert r.status_code == 404
    assert body(r) == {"error": "Not Found", "message": "Account with id 'nobody' not found"}
    assert listed(tenant, "acct-q") == []


def test_operator_input_is_validated(server):
    tenant = server.new_tenant("forms-cli")
    make_account(tenant, "acct-v")
    base = ["forms", "generate", "--tenant", tenant.tenant_id, "--form-type", "1099_B"]
    for year in ("1999", "2101", "20x4", ""):
        assert "--tax-year" in refused(server, *base, "--tax-year", year)
    assert "unknown form type" in refused(server, "forms", "generate", "--tenant",
                                          tenant.tenant_id, "--tax-year", "2024",
                                          "--form-type", "1099-B")
    assert "no tenant" in refused(server, "forms", "generate", "--tenant", "nope",
                                  "--tax-year", "2024", "--form-type", "1099_B")
    assert "no account" in refused(server, *base, "--tax-year", "2024", "--account", "ghost")
    assert "unknown option" in refused(server, *base, "--tax-year", "2024", "--acount", "x")
    assert listed(tenant, "acct-v") == []


def test_scope_is_required(server):
    base = server.new_tenant("forms-scope")
    make_account(base, "acct-s")
    c = server.admin("credentials", "create", "--tenant", base.tenant_id, "--scopes", "inventory")
    denied = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    r = documents(denied, account_id="acct-s", tax_year=2024)
    assert (r.status_code, body(r)) == (403, GATEWAY_DENY)
    c = server.admin("credentials", "create", "--tenant", base.tenant_id,
                     "--scopes", "tax-documents")
    allowed = Tenant(server, c["tenant_id"], c["client_id"], c["client_secret"])
    assert listed(allowed, "acct-s") == []


def test_tenant_isolation(server):
    a = server.new_tenant("forms-iso-a")
    b = server.new_tenant("forms-iso-b")
    make_account(a, "shared-id")
    make_account(a, "only-a")
    make_account(b, "shared-id")
    form = generate_one(server, a, "1099_INT", "shared-id")
    assert [f["form_id"] for f in listed(a, "shared-id")] == [form]
    assert listed(b, "shared-id") == []
    r = documents(b, account_id="only-a", tax_year=2024)
    assert r.status_code == 404
    assert "no account" in refused(server, "forms", "generate", "--tenant", b.tenant_id,
                                   "--tax-year", "2024", "--form-type", "1099_INT",
                                   "--account", "only-a")
    assert generate(server, b, "1099_INT")["forms"][0]["account_id"] == "shared-id"
    assert [f["form_id"] for f in listed(a, "shared-id")] == [form]


# ------------------------------------------------------------------ issue 16: 1099-DA, regeneration, corrections

from conftest import Server, poll  # noqa: E402


def make_austria_account(tenant, account_id):
    r = call(tenant, "POST", "/v1/accounts",
             {"id": account_id, "account_owner_id": "owner-1", "cost_basis_method": "AUSTRIA",
              "austria_tax_year": 2025})
    assert r.status_code == 201, r.text


def forms_by_type(tenant, account_id, year):
    return {f["form_type"]: f for f in listed(tenant, account_id, year)}


def test_1099_da_refused_before_2025_and_for_austria(server):
    """A 1099_DA is derived from gains from tax year 2025 on (DOMAIN_1099DA_FIRST_YEAR):
    an earlier year is refused before anything is written; an AUSTRIA account
    never gets a US form: refused with --account, skipped with its reason
    tenant-wide."""
    tenant = server.new_tenant("forms-da-refused")
    make_account(tenant, "us-1")
    make_austria_account(tenant, "at-1")
    err = refused(server, "forms", "generate", "--tenant", tenant.tenant_id, "--tax-year", "2024",
                  "--form-type", "1099_DA", "--account", "us-1")
    assert "2025" in err
    assert listed(tenant, "us-1") == []
    err = refused(server, "forms", "generate", "--tenant", tenant.tenant_id, "--tax-year", "2025",
                  "--form-type", "1099_DA", "--account", "at-1")
    assert "AUSTRIA" in err
    out = generate(server, tenant, "1099_DA", year=2025)
    assert [f["account_id"] for f in out["forms"]] == ["us-1"]
    assert [s["account_id"] for s in out["skipped"]] == ["at-1"]
    assert "AUSTRIA" in out["skipped"][0]["reason"]
    assert listed(tenant, "at-1", 2025) == []


def test_1099_da_records_from_the_gains_of_2025(server):
    """Hand-worked (FIFO; 2025 lots are before 2026-01-01, so noncovered):
      b1 2024-03-01 buy 2 BTC for 20000; b2 2025-02-01 buy 1 BTC for 30000
      s1 2025-06-01 sell 2.5 BTC for 50000: 2 from b1 (long) + 0.5 from b2
         (short): one noncovered record of 2.5 BTC, gross proceeds 50000, no
         basis, no date acquired, no common term;
      e1 2025-03-01 buy 10 ETH for 5000; e2 2025-04-01 sell 4 for 2400: one
         noncovered record, SHORT (every piece short);
      s2 2026-01-01T00:00:00Z sell 0.1 BTC: not in 2025."""
    tenant = server.new_tenant("forms-da-2025")
    make_account(tenant, "da-1")
    post_trade(tenant, "da-1", "b1", "2024-03-01T00:00:00Z", ("USD", "20000"), ("BTC", "2"))
    post_trade(tenant, "da-1", "b2", "2025-02-01T00:00:00Z", ("USD", "30000"), ("BTC", "1"))
    post_trade(tenant, "da-1", "s1", "2025-06-01T00:00:00Z", ("BTC", "2.5"), ("USD", "50000"))
    post_trade(tenant, "da-1", "e1", "2025-03-01T00:00:00Z", ("USD", "5000"), ("ETH", "10"))
    post_trade(tenant, "da-1", "e2", "2025-04-01T00:00:00Z", ("ETH", "4"), ("USD", "2400"))
    post_trade(tenant, "da-1", "s2", "2026-01-01T00:00:00Z", ("BTC", "0.1"), ("USD", "9000"))
    generate_one(server, tenant, "1099_DA", "da-1", year=2025)
    content = forms_by_type(tenant, "da-1", 2025)["1099_DA"]["content"]
    assert content == {
        "tax_year": 2025, "currency": "USD",
        "records": [
            {"transaction_id": "e2", "description": "ETH", "quantity": "4",
             "date_sold": "2025-04-01", "gross_proceeds": "2400", "term": "SHORT",
             "noncovered": True, "customer_provided_acquisition": False},
            {"transaction_id": "s1", "description": "BTC", "quantity": "2.5",
             "date_sold": "2025-06-01", "gross_proceeds": "50000", "noncovered": True,
             "customer_provided_acquisition": False}],
        "totals": {"records": 2, "gross_proceeds": "52400", "cost_basis": "0"},
        "without_proceeds": []}


@pytest.fixture
def hooked_events_server(tmp_path_factory, taxd_bin, events_receiver):
    s = Server(tmp_path_factory.mktemp("srv"),
               args=("--webhook-ca-file", str(events_receiver.ca_pem), "--test-hooks")).start()
    yield s
    s.stop_and_check()


def set_clock(server, offset_ms, *tenants):
    r = server.api().post("/_test/clock", json={"offset_ms": offset_ms})
    assert r.status_code == 200, r.text
    for t in tenants:
        t._token = None


def test_generated_forms_follow_their_account_at_most_every_10_minutes(
        hooked_events_server, events_receiver):
    """A Generated 1099_DA / GAIN_LOSS_SUMMARY whose account's transactions
    changed is regenerated in the background (same form_id, new content, the
    FORM_STATUS_UPDATE a manual refresh emits), but not before 10 minutes
    have passed since it was generated (test clock)."""
    server = hooked_events_server
    tenant = server.new_tenant("forms-follow")
    inbox = EventInbox(server, events_receiver, tenant, "FORM_STATUS_UPDATE")
    uuid = make_account(tenant, "f-1")
    post_trade(tenant, "f-1", "b1", "2025-01-10T00:00:00Z", ("USD", "100"), ("BTC", "1"))
    post_trade(tenant, "f-1", "s1", "2025-02-10T00:00:00Z", ("BTC", "0.5"), ("USD", "80"))
    gl = generate_one(server, tenant, "GAIN_LOSS_SUMMARY", "f-1", year=2025)
    da = generate_one(server, tenant, "1099_DA", "f-1", year=2025)
    inbox.next()
    inbox.next()
    before = forms_by_type(tenant, "f-1", 2025)
    assert before["GAIN_LOSS_SUMMARY"]["content"]["total"]["proceeds"] == "80"

    post_trade(tenant, "f-1", "s2", "2025-03-10T00:00:00Z", ("BTC", "0.5"), ("USD", "90"))
    # within 10 minutes: the forms stay as generated (the engine runs every 200 ms)
    set_clock(server, 9 * 60 * 1000, tenant)
    server.api().get("/_test/pause", params={"ms": 600})
    now = forms_by_type(tenant, "f-1", 2025)
    assert now["GAIN_LOSS_SUMMARY"]["generated_at"] == before["GAIN_LOSS_SUMMARY"]["generated_at"]
    assert now["1099_DA"]["content"] == before["1099_DA"]["content"]

    set_clock(server, 11 * 60 * 1000, tenant)

    def regenerated():
        f = forms_by_type(tenant, "f-1", 2025)
        done = (f["GAIN_LOSS_SUMMARY"]["content"]["total"]["proceeds"] == "170" and
                f["1099_DA"]["content"]["totals"]["gross_proceeds"] == "170")
        return f if done else None
    after = poll(regenerated, 30, interval=0.1, what="the regeneration")
    assert after["GAIN_LOSS_SUMMARY"]["form_id"] == gl and after["1099_DA"]["form_id"] == da
    assert after["GAIN_LOSS_SUMMARY"]["status"] == "Generated"
    got = sorted([inbox.next()["form_type"], inbox.next()["form_type"]])
    assert got == ["1099_DA", "GAIN_LOSS_SUMMARY"]
    # nothing changed since: no further regeneration, no further event
    set_clock(server, 30 * 60 * 1000, tenant)
    server.api().get("/_test/pause", params={"ms": 600})
    assert forms_by_type(tenant, "f-1", 2025)["1099_DA"]["generated_at"] == \
        after["1099_DA"]["generated_at"]
    assert len(inbox.events()) == 4
    check_event(inbox.events()[-1], tenant, uuid, "f-1", inbox.events()[-1]["form_type"], 2025,
                "Generated")


def test_a_filed_form_is_flagged_for_correction_never_rewritten(hooked_events_server):
    """A Filed form whose account changed afterwards keeps its content and
    gets correction_needed: true (GET /v1/tax-documents and `forms show`);
    a form whose account did not change is not flagged."""
    server = hooked_events_server
    tenant = server.new_tenant("forms-correct")
    make_account(tenant, "c-1")
    post_trade(tenant, "c-1", "b1", "2025-01-10T00:00:00Z", ("USD", "100"), ("BTC", "1"))
    post_trade(tenant, "c-1", "s1", "2025-02-10T00:00:00Z", ("BTC", "0.5"), ("USD", "80"))
    gl = generate_one(server, tenant, "GAIN_LOSS_SUMMARY", "c-1", year=2025)
    server.admin("forms", "file", "--form", gl)
    filed = forms_by_type(tenant, "c-1", 2025)["GAIN_LOSS_SUMMARY"]
    assert filed["correction_needed"] is False
    server.api().get("/_test/pause", params={"ms": 600})
    assert server.admin("forms", "show", "--form", gl)["correction_needed"] is False

    post_trade(tenant, "c-1", "s2", "2025-03-10T00:00:00Z", ("BTC", "0.5"), ("USD", "90"))
    f = poll(lambda: (lambda x: x if x["correction_needed"] else None)(
        forms_by_type(tenant, "c-1", 2025)["GAIN_LOSS_SUMMARY"]), 30, interval=0.1,
        what="the correction flag")
    assert f["status"] == "Filed" and f["content"] == filed["content"]
    assert f["generated_at"] == filed["generated_at"]
    assert server.admin("forms", "show", "--form", gl)["correction_needed"] is True
