"""Retry safety of creates that reject duplicate ids (spec § Retry safety 3:
"Creates that reject duplicate ids (account owners, accounts): a retry after
a success returns 409, so the client reads the record back by its id"), for
account owners, accounts and filers.

The lost response is real: the first POST goes over a raw socket that waits
for the first byte of the answer (so the server has decided the outcome)
and hangs up without reading it, as a client whose connection dropped would.
The client then does exactly what the spec tells it to: resend the same
create, get 409 (error "Conflict", message stating the id already exists),
and read the record back with GET by its id. A retry never overwrites: a
resend carrying other values still gets 409 and leaves the record as first
created.
"""
import json
import socket
import urllib.parse

import pytest
import requests

from conftest import (HTTP_TIMEOUT_S, UUID4_RE, body, check_against_openapi, check_json_content_type,
                      check_request_id)


def send(tenant, method, path, json_body=None):
    """One authenticated request through the suite's response checks."""
    with requests.Session() as s:
        r = s.request(method, tenant.server.url + path, headers=tenant.auth(), json=json_body,
                      timeout=HTTP_TIMEOUT_S, allow_redirects=False)
    check_request_id(tenant.server, r)
    check_json_content_type(r)
    check_against_openapi(r)
    return r


def post_and_lose_the_response(tenant, path, payload):
    """Sends the POST and hangs up once the answer has started, unread."""
    data = json.dumps(payload).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{tenant.server.port}\r\n"
            f"Authorization: Bearer {tenant.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", tenant.server.port), timeout=HTTP_TIMEOUT_S) as sock:
        sock.sendall(head + data)
        assert sock.recv(1), "the server closed the connection without answering"


def quote(value):
    return urllib.parse.quote(value, safe="")


def make_owner(tenant, owner_id):
    r = send(tenant, "POST", "/v1/account-owners",
             {"id": owner_id, "name": "Owner", "account_owner_type": "individual"})
    assert r.status_code == 201, f"POST /v1/account-owners: {r.status_code} {r.text}"


# Each case: (kind in messages, collection, setup(tenant) -> None, first body, changed body).
CASES = {
    "account-owners": ("Account owner", "/v1/account-owners", None,
                       {"id": "owner/1 é", "name": "Ada Lovelace", "account_owner_type": "individual"},
                       {"id": "owner/1 é", "name": "Someone Else", "account_owner_type": "entity"}),
    "accounts": ("Account", "/v1/accounts", lambda t: make_owner(t, "holder"),
                 {"id": "account/1 é", "account_owner_id": "holder"},
                 {"id": "account/1 é", "account_owner_id": "holder", "name": "Renamed by a retry"}),
    "filers": ("Filer", "/v1/filers", None,
               {"id": "filer/1 é", "name": "Filer One", "tin": "12-3456789"},
               {"id": "filer/1 é", "name": "Another name", "tin": "99-9999999"}),
}


def list_ids(tenant, collection):
    ids, cursor = [], None
    for _ in range(20):
        r = send(tenant, "GET", collection + "?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        assert r.status_code == 200, r.text
        b = body(r)
        ids += [item["id"] for item in b["data"]]
        cursor = b["meta"]["next_cursor"]
        if cursor is None:
            return ids
    raise AssertionError("more pages than expected")


@pytest.mark.parametrize("resource", list(CASES))
def test_retry_after_lost_response_gets_409_then_reads_back(server, resource):
    kind, collection, setup, first, changed = CASES[resource]
    tenant = server.new_tenant("retry-" + resource)
    if setup is not None:
        setup(tenant)
    record_id = first["id"]
    conflict = {"error": "Conflict", "message": f"{kind} with id '{record_id}' already exists"}

    post_and_lose_the_response(tenant, collection, first)

    # The client retries the same create: 409, the id is in use.
    r = send(tenant, "POST", collection, first)
    assert r.status_code == 409, f"retry: {r.status_code} {r.text}"
    assert body(r) == conflict

    # It reads the record back by its id: the first request's record.
    r = send(tenant, "GET", f"{collection}/{quote(record_id)}")
    assert r.status_code == 200, f"read back: {r.status_code} {r.text}"
    stored = body(r)["data"]
    assert UUID4_RE.match(stored["uuid"]), stored
    for key, value in first.items():
        if key == "tin":
            assert stored["tin"] == "*" * (len(value) - 4) + value[-4:]
        else:
            assert stored[key] == value, (key, stored)

    # A retry carrying other values is refused the same way and changes nothing.
    r = send(tenant, "POST", collection, changed)
    assert r.status_code == 409, f"changed retry: {r.status_code} {r.text}"
    assert body(r) == conflict
    r = send(tenant, "GET", f"{collection}/{quote(record_id)}")
    assert body(r) == {"data": stored}

    # Exactly one record with the id exists.
    assert list_ids(tenant, collection).count(record_id) == 1
