"""Webhook deliveries against the `webhooks:` section of docs/openapi.yaml
(issue 15, What must be true 9): one taxd produces every event type of the
catalog for a real HTTPS receiver, in both credential modes and during a
secret rotation, and every delivery recorded is checked with
webhook_contract.py: the body against the event's schema (no undeclared
field), each header against its parameter, the credential against the
webhook's security, and the signature against the documented signing rule.

The check itself is shown to catch a document that is wrong: the same
recorded deliveries fail against copies of the document with one schema,
one header or one field broken.

Every other module that records deliveries (test_webhooks.py and the
event-catalog modules through eventsupport.py) runs the same check on all
its deliveries at teardown.
"""
import copy
import datetime
import json
import re

import pytest

from conftest import REPO, Server, poll, shared_openapi
from webhook_contract import WebhookContract, shared_contract
from webhook_receiver import Receiver

WAIT_S = 30.0
EVENT_C = REPO / "src" / "webhooks" / "event.c"
YEAR = datetime.datetime.now(datetime.timezone.utc).year
W9 = {"document_type": "W-9", "name": "Jane Q Public", "entity_classification": "INDIVIDUAL",
      "tin_type": "SSN", "tin": "123-45-6789",
      "address": {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701",
                  "country_code": "US"},
      "certified": True, "signature_date": f"{YEAR - 1}-05-10"}


def catalog():
    """The event types taxd knows (WEBHOOK_EVENT_TYPES in src/webhooks/event.c)."""
    text = EVENT_C.read_text()
    block = text[text.index("WEBHOOK_EVENT_TYPES[] = {"):]
    block = block[:block.index("};")]
    return re.findall(r'"([A-Z_]+)"', block)


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    r = Receiver(tmp_path_factory.mktemp("receiver")).start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, taxd_bin, receiver):
    s = Server(tmp_path_factory.mktemp("srv"), args=("--webhook-ca-file", str(receiver.ca_pem))).start()
    yield s
    s.stop_and_check()


def call(tenant, method, path, body=None):
    return tenant.server.api().request(method, path, headers=tenant.auth(), json=body)


def subscribe(server, tenant, receiver, path, events):
    out = server.admin("subscription", "create", "--tenant", tenant.tenant_id, "--url", receiver.url(path),
                       "--events", ",".join(events))
    return out["subscription_id"], out["secret"]


def event_of(req):
    return json.loads(req["body"])["data"][0]


def types_on(receiver, path):
    return [event_of(r)["event_type"] for r in receiver.requests(path)]


def wait_types(receiver, path, wanted, what):
    return poll(lambda: wanted <= set(types_on(receiver, path)), WAIT_S, interval=0.1, what=what)


@pytest.fixture(scope="module")
def recorded(server, receiver, tmp_path_factory):
    """Drives one tenant through every event of the catalog. Returns
    {path: (requests, secrets newest first)} for three subscriptions: all
    events with the source marker, INVENTORY_UPDATE with HTTP Basic, and
    INVENTORY_UPDATE during a secret rotation (two signatures)."""
    t = server.new_tenant("contract")
    every = catalog()
    all_path, basic_path, rotated_path = "/contract/all", "/contract/basic", "/contract/rotated"
    _, all_secret = subscribe(server, t, receiver, all_path, every)
    basic_sub, basic_secret = subscribe(server, t, receiver, basic_path, ["INVENTORY_UPDATE"])
    pw = tmp_path_factory.mktemp("pw") / "password"
    pw.write_text("pa:ss\u00e9\n")
    server.admin("subscription", "set-basic", "--subscription", basic_sub, "--user", "contract",
                 "--password-file", str(pw))
    rotated_sub, old_secret = subscribe(server, t, receiver, rotated_path, ["INVENTORY_UPDATE"])
    new_secret = server.admin("subscription", "rotate-secret", "--subscription", rotated_sub)["secret"]

    # ACCOUNT_OWNER_TIN_VALIDATION, then a W-9: ACCOUNT_OWNER_TAX_DOCUMENTATION_STATUS,
    # TAX_DOCUMENTATION_TIN_VALIDATION and a second status event.
    r = call(t, "POST", "/v1/account-owners", {"id": "owner-1", "name": "Jane Q Public",
                                               "account_owner_type": "individual",
                                               "tin": "123-45-6789", "tin_type": "SSN"})
    assert r.status_code == 201, r.text
    r = call(t, "POST", "/v1/account-owners/owner-1/tax-documentation", W9)
    assert r.status_code == 201, r.text
    # RTTM_TIN_VALIDATION
    r = call(t, "POST", "/v1/tin-validations", {"name": "Acme", "tin": "12-3456789", "tin_type": "EIN"})
    assert r.status_code == 202, r.text
    # INVENTORY_UPDATE with transaction ids
    r = call(t, "POST", "/v1/accounts", {"id": "acct \"1\" \u00e9", "account_owner_id": "owner-1"})
    assert r.status_code == 201, r.text
    r = call(t, "POST", "/v1/transactions/external-id", {
        "id": "tx-1", "account_id": "acct \"1\" \u00e9", "datetime": f"{YEAR - 1}-03-01T10:00:00.000Z",
        "type": "deposit",
        "received": [{"asset_amount": {"amount": "1.5", "asset": {"code": "BTC", "type": "crypto"}}}]})
    assert r.status_code == 201, r.text
    for path in (all_path, basic_path, rotated_path):
        wait_types(receiver, path, {"INVENTORY_UPDATE"}, f"INVENTORY_UPDATE on {path}")
    # INVENTORY_UPDATE without ids: a deletion, in an event of its own (the first was claimed)
    r = call(t, "DELETE", "/v1/transactions/external-id/tx-1")
    assert r.status_code == 204, r.text
    # FORM_STATUS_UPDATE: Generated, Filed, and Deleted
    made = server.admin("forms", "generate", "--tenant", t.tenant_id, "--tax-year", str(YEAR - 1),
                        "--form-type", "TRANSACTION_SUMMARY", "--account", "acct \"1\" \u00e9")
    server.admin("forms", "file", "--form", made["forms"][0]["form_id"])
    made = server.admin("forms", "generate", "--tenant", t.tenant_id, "--tax-year", str(YEAR - 1),
                        "--form-type", "GAIN_LOSS_SUMMARY", "--account", "acct \"1\" \u00e9")
    server.admin("forms", "delete", "--form", made["forms"][0]["form_id"])

    wait_types(receiver, all_path, set(every), "every event type of the catalog")

    def deletion_seen():
        events = [event_of(r) for r in receiver.requests(all_path)]
        return any(e["event_type"] == "INVENTORY_UPDATE" and "latest_transaction_id" not in e for e in events)
    poll(deletion_seen, WAIT_S, interval=0.1, what="the INVENTORY_UPDATE of the deletion")

    def forms_seen():
        statuses = {e.get("status") for e in map(event_of, receiver.requests(all_path))
                    if e["event_type"] == "FORM_STATUS_UPDATE"}
        return {"Generated", "Filed", "Deleted"} <= statuses
    poll(forms_seen, WAIT_S, interval=0.1, what="FORM_STATUS_UPDATE Generated, Filed and Deleted")
    wait_types(receiver, basic_path, {"INVENTORY_UPDATE"}, "the Basic subscription's delivery")
    return {
        all_path: (receiver.requests(all_path), [all_secret]),
        basic_path: (receiver.requests(basic_path), [basic_secret]),
        rotated_path: (receiver.requests(rotated_path), [new_secret, old_secret]),
    }


def test_the_document_describes_exactly_the_catalog(openapi):
    """The `webhooks:` section has one entry per event type taxd knows, and
    WebhookEvent's event_type enumerates the same names."""
    types = catalog()
    assert len(types) == 6, types
    assert set(openapi.doc.get("webhooks") or {}) == set(types)
    envelope_types = openapi.deref({"$ref": "#/components/schemas/WebhookEvent"})["properties"]["event_type"]
    assert set(envelope_types["enum"]) == set(types)


def test_every_event_type_as_delivered_matches_the_document(recorded):
    """Rule: every delivery of every event type matches its webhook in the
    document, body, headers, credential and signature."""
    contract = shared_contract()
    seen = set()
    for path, (requests, secrets) in recorded.items():
        contract.check_all(requests, secrets)
        seen |= {event_of(r)["event_type"] for r in requests}
    assert seen == set(catalog())


def test_both_credential_modes_and_both_signature_forms_were_checked(recorded):
    """The recorded deliveries include the Basic mode and a two-signature
    header, so the check above covered both forms of each."""
    basic = recorded["/contract/basic"][0]
    assert basic and all(dict(r["headers"]).get("authorization", "").startswith("Basic ") for r in basic)
    rotated = recorded["/contract/rotated"][0]
    assert rotated and all("," in dict(r["headers"])["x-service-signature"] for r in rotated)


def _broken(mutate):
    doc = copy.deepcopy(shared_openapi().doc)
    mutate(doc)
    return WebhookContract(doc)


def _schemas(doc):
    return doc["components"]["schemas"]


BREAKS = {
    "an event field required that taxd does not send":
        lambda d: _schemas(d)["InventoryUpdateEvent"]["required"].append("account_name"),
    "a field taxd sends left undeclared":
        lambda d: _schemas(d)["FormStatusUpdateEvent"]["properties"].pop("alternate_account_id"),
    "a field's type wrong":
        lambda d: _schemas(d)["FormStatusUpdateEvent"]["properties"]["tax_year"].update(type="string"),
    "a status value missing":
        lambda d: _schemas(d)["TinCheckResult"].update(enum=["VALID"]),
    "the envelope's timestamp without milliseconds":
        lambda d: _schemas(d)["Timestamp"].update(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"),
    "the signature header in hex":
        lambda d: d["components"]["parameters"]["WebhookSignature"]["schema"].update(pattern="^v1=[0-9a-f]{64}$"),
    "the trace id header left out":
        lambda d: d["webhooks"]["INVENTORY_UPDATE"]["post"].update(parameters=[
            p for p in d["webhooks"]["INVENTORY_UPDATE"]["post"]["parameters"]
            if not p["$ref"].endswith("/WebhookTraceId")]),
    "HTTP Basic not allowed":
        lambda d: d["webhooks"]["INVENTORY_UPDATE"]["post"].update(security=[{}]),
    "a webhook missing": lambda d: d["webhooks"].pop("RTTM_TIN_VALIDATION"),
}


@pytest.mark.parametrize("what", sorted(BREAKS))
def test_the_check_fails_on_a_broken_document(recorded, what):
    """The check is strict enough to matter: each break of the document makes
    the same recorded deliveries fail."""
    contract = _broken(BREAKS[what])
    requests = [r for reqs, _ in recorded.values() for r in reqs]
    with pytest.raises(AssertionError):
        contract.check_all(requests)


def test_a_wrong_secret_fails_the_signature_rule(recorded):
    requests, _ = recorded["/contract/all"]
    with pytest.raises(AssertionError):
        shared_contract().check(requests[0], ["not the secret"])
