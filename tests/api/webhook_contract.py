"""Webhook deliveries checked against the `webhooks:` section of
docs/openapi.yaml, as conftest.check_against_openapi checks API responses.

check(req) takes one request recorded by webhook_receiver.Receiver and checks
what a receiver built from the document would rely on:
  - the event type of `data[0]` is a documented webhook, and the request is a
    POST with a content type its requestBody documents;
  - the body matches that webhook's request schema (envelope and event), and
    every field of every event is declared in the event's schema (the schemas
    allow additional fields for the future, so this is what keeps the document
    complete today);
  - every header parameter: present when required, at most once, its value
    matching its schema; no header beyond the documented ones and HTTP's own;
  - the credential: exactly one of `x-service-source` (no credential) and an
    `authorization: Basic` header, which a security requirement of the webhook
    must allow (an http basic scheme);
  - with the subscription's secrets given: the signing rule of the document,
    HMAC-SHA256 over the exact body, base64, `v1=`, newest secret first.

check_all(requests) runs check on each and reports every failure at once.
"""
import base64
import binascii
import hashlib
import hmac
import json

from jsonschema import Draft202012Validator, RefResolver

# Headers of HTTP itself (RFC 9110/9112), not part of the webhook contract.
TRANSPORT_HEADERS = {"host", "content-length", "content-type", "authorization", "accept", "expect",
                     "connection", "transfer-encoding"}


class WebhookContract:
    def __init__(self, doc):
        self.doc = doc
        self.resolver = RefResolver.from_schema(doc)

    def deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            _, obj = self.resolver.resolve(obj["$ref"])
        return obj

    def _errors(self, schema, value):
        v = Draft202012Validator(schema, resolver=self.resolver)
        return [f"{list(e.path)}: {e.message}" for e in v.iter_errors(value)]

    def operation(self, event_type):
        hooks = self.doc.get("webhooks") or {}
        assert event_type in hooks, f"docs/openapi.yaml documents no webhook {event_type!r}"
        op = self.deref(hooks[event_type]).get("post")
        assert op is not None, f"webhook {event_type} documents no POST"
        return op

    def check(self, req, secrets=None):
        """Raises AssertionError naming what does not match the document."""
        assert req["method"] == "POST", f"a delivery is a POST, got {req['method']}"
        raw = req["body"]
        doc = json.loads(raw)
        data = doc.get("data") if isinstance(doc, dict) else None
        assert isinstance(data, list) and data and isinstance(data[0], dict), f"no event in {raw[:200]!r}"
        event_type = data[0].get("event_type")
        where = f"{event_type} delivery to {req['path']}"
        op = self.operation(event_type)
        sent = {}
        for k, v in req["headers"]:
            sent.setdefault(k.lower(), []).append(v)
        self._check_body(op, doc, sent, where)
        self._check_headers(op, sent, where)
        self._check_credential(op, sent, where)
        if secrets is not None:
            self._check_signature(sent, raw, secrets, where)

    def _check_body(self, op, doc, sent, where):
        content = op["requestBody"]["content"]
        ct = (sent.get("content-type") or [""])[0].split(";")[0].strip().lower()
        media = {k.lower(): v for k, v in content.items()}.get(ct)
        assert media is not None, f"{where}: content-type {ct!r} not documented (have {list(content)})"
        errors = self._errors(media["schema"], doc)
        assert not errors, f"{where}: body does not match docs/openapi.yaml: {errors[:5]}"
        envelope = self.deref(media["schema"])
        extra = set(doc) - self._declared(envelope)
        assert not extra, f"{where}: envelope fields {sorted(extra)} are not declared in its schema"
        event_schema = self.deref(self.deref(envelope["properties"]["data"])["items"])
        declared = self._declared(event_schema)
        for i, event in enumerate(doc["data"]):
            extra = set(event) - declared
            assert not extra, f"{where}: data[{i}] fields {sorted(extra)} are not declared in its schema"

    def _declared(self, schema):
        """The property names a schema declares, with those of its allOf parts."""
        schema = self.deref(schema)
        names = set(schema.get("properties") or {})
        for part in schema.get("allOf") or []:
            names |= self._declared(part)
        return names

    def _check_headers(self, op, sent, where):
        documented = set()
        for p in op.get("parameters") or []:
            p = self.deref(p)
            if p["in"] != "header":
                continue
            name = p["name"].lower()
            documented.add(name)
            values = sent.get(name, [])
            if p.get("required"):
                assert values, f"{where}: required header {name} missing"
            assert len(values) <= 1, f"{where}: header {name} sent {len(values)} times"
            for v in values:
                errors = self._errors(p["schema"], v)
                assert not errors, f"{where}: header {name}={v!r} does not match docs/openapi.yaml: {errors}"
        extra = set(sent) - documented - TRANSPORT_HEADERS
        assert not extra, f"{where}: headers {sorted(extra)} are not documented"

    def _check_credential(self, op, sent, where):
        auth = sent.get("authorization", [])
        source = sent.get("x-service-source", [])
        assert bool(auth) != bool(source), \
            f"{where}: exactly one of authorization and x-service-source is sent (got {len(auth)}, {len(source)})"
        requirements = op.get("security", self.doc.get("security", []))
        schemes = self.doc["components"].get("securitySchemes", {})
        if not auth:
            assert {} in requirements, f"{where}: sent without a credential, which its security does not allow"
            return
        assert len(auth) == 1 and auth[0].startswith("Basic "), f"{where}: authorization is not Basic"
        try:
            user_pass = base64.b64decode(auth[0][len("Basic "):], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise AssertionError(f"{where}: the Basic credential is not base64 of UTF-8")
        assert ":" in user_pass, f"{where}: the Basic credential has no user:password"
        basic = [name for req in requirements for name in req
                 if schemes.get(name, {}).get("type") == "http" and
                 schemes[name].get("scheme", "").lower() == "basic"]
        assert basic, f"{where}: sent with HTTP Basic, which its security does not name"

    @staticmethod
    def _check_signature(sent, raw, secrets, where):
        expected = ",".join(
            "v1=" + base64.b64encode(hmac.new(s.encode(), raw, hashlib.sha256).digest()).decode()
            for s in secrets)
        assert sent.get("x-service-signature") == [expected], \
            f"{where}: x-service-signature {sent.get('x-service-signature')} is not the documented signature"

    def check_all(self, requests, secrets=None):
        failures = []
        for req in requests:
            try:
                self.check(req, secrets)
            except (AssertionError, ValueError) as exc:
                failures.append(str(exc))
        assert not failures, f"{len(failures)} of {len(requests)} deliveries break docs/openapi.yaml:\n" + \
            "\n".join(failures[:10])


def shared_contract():
    """The contract of the document the API checks use (loaded once)."""
    from conftest import shared_openapi
    return WebhookContract(shared_openapi().doc)
