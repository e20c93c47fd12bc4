"""Shared by the event-catalog tests (TIN validation, tax documentation, tax
forms): a real HTTPS receiver, a taxd serve that trusts its CA, subscriptions
made by the operator command, and the received event objects checked against
the spec's rules that hold for every type (spec § Events: one event in
`data`, `event_type` first, optional fields absent rather than null).

A test module imports the fixtures it uses:
    from eventsupport import events_receiver, events_server, EventInbox
"""
import base64
import hashlib
import hmac
import json
import re
import uuid

import pytest

from conftest import Server
from webhook_contract import shared_contract
from webhook_receiver import Receiver, header

WAIT_S = 30.0  # bound for a delivery to arrive (2 shared cores, ASan)
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.fixture(scope="module")
def events_receiver(tmp_path_factory):
    """The receiver of the module; at the end every delivery it recorded is
    checked against the `webhooks:` section of docs/openapi.yaml."""
    r = Receiver(tmp_path_factory.mktemp("receiver")).start()
    yield r
    try:
        shared_contract().check_all(r.requests())
    finally:
        r.stop()


@pytest.fixture(scope="module")
def events_server(tmp_path_factory, taxd_bin, events_receiver):
    s = Server(tmp_path_factory.mktemp("srv"),
               args=("--webhook-ca-file", str(events_receiver.ca_pem))).start()
    yield s
    s.stop_and_check()


_inboxes = iter(range(1, 1_000_000))


class EventInbox:
    """One subscription of `tenant` to `event_types`, on a receiver path of
    its own. next() waits for the next event and checks the envelope, the
    signature (Python's hmac) and the rules common to every event."""

    def __init__(self, server, receiver, tenant, *event_types):
        self.receiver = receiver
        self.path = f"/events/{next(_inboxes)}"
        out = server.admin("subscription", "create", "--tenant", tenant.tenant_id,
                           "--url", receiver.url(self.path), "--events", ",".join(event_types))
        self.subscription_id, self.secret = out["subscription_id"], out["secret"]
        self.seen = 0

    def next(self, timeout=WAIT_S):
        req = self.receiver.wait_for(self.seen + 1, self.path, timeout=timeout)[self.seen]
        self.seen += 1
        raw = req["body"]
        expected = "v1=" + base64.b64encode(
            hmac.new(self.secret.encode(), raw, hashlib.sha256).digest()).decode()
        assert header(req, "x-service-signature") == [expected]
        doc = json.loads(raw)
        assert list(doc) == ["timestamp", "data"] and len(doc["data"]) == 1, doc
        event = doc["data"][0]
        assert list(event)[:2] == ["event_type", "event_id"], event
        assert uuid.UUID(event["event_id"]).version == 4
        assert_no_nulls(event)
        return event

    def events(self):
        """Every event received so far on this inbox (no waiting, no checks)."""
        return [json.loads(r["body"])["data"][0] for r in self.receiver.requests(self.path)]


def assert_no_nulls(value, where="event"):
    """Optional fields are absent, never null (spec § Delivery rules 7)."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert v is not None, f"{where}.{k} is null"
            assert_no_nulls(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            assert_no_nulls(v, f"{where}[{i}]")


def assert_uuid4(text):
    assert isinstance(text, str) and uuid.UUID(text).version == 4 and str(uuid.UUID(text)) == text, text


def assert_iso_datetime(text):
    assert isinstance(text, str) and ISO_8601.match(text), text


def assert_iso_date(text):
    assert isinstance(text, str) and ISO_DATE.match(text), text
