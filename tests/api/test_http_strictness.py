"""HTTP framing strictness (RFC 9112 § 6; issue "Up for everyone under hostile
load", item 5), over raw sockets: what a proxy in front of taxd and taxd
itself read as one request must be the same bytes, so every ambiguous framing
is refused and the connection closed; nothing after it is ever served.

Each case runs twice: as the first request of a connection (judged by taxd's
acceptor on the raw head) and as the second request of a kept-alive
connection (judged from the fields libmicrohttpd parsed)."""
import json
import re
import socket
import time

import pytest

HEALTH = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
TOKEN = b"POST /v1/oauth/token HTTP/1.1\r\nHost: t\r\n"
STATUS_LINE = re.compile(rb"HTTP/1\.1 (\d{3}) ")


def exchange(server, raw, timeout=5.0):
    """Sends raw, reads until the server closes (or timeout). Returns
    (bytes, closed_by_server)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    s.sendall(raw)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                return out, True
            out += chunk
    except socket.timeout:
        return out, False
    finally:
        s.close()
    return out, False


def responses(raw):
    """The status codes of every response in raw, and the last body."""
    codes = [int(m.group(1)) for m in STATUS_LINE.finditer(raw)]
    body = raw.rsplit(b"\r\n\r\n", 1)[-1]
    return codes, body


CASES = [
    # name, head fields, body, status, message
    ("length-and-chunked", b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n",
     400, "Content-Length and Transfer-Encoding must not both be sent"),
    ("chunked-and-length", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", b"0\r\n\r\n",
     400, "Content-Length and Transfer-Encoding must not both be sent"),
    ("two-lengths", b"Content-Length: 2\r\nContent-Length: 5\r\n", b"{}xyz",
     400, "Content-Length is given twice with different values"),
    ("unknown-coding", b"Transfer-Encoding: gzip\r\n", b"",
     501, "Transfer-Encoding other than chunked is not supported"),
    ("coding-list", b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n",
     501, "Transfer-Encoding other than chunked is not supported"),
    ("negative-length", b"Content-Length: -1\r\n", b"", 400, "Content-Length is not a valid length"),
    ("huge-length", b"Content-Length: 18446744073709551616\r\n", b"",
     400, "Content-Length is not a valid length"),
]


@pytest.mark.parametrize("name,fields,body,status,message", CASES, ids=[c[0] for c in CASES])
def test_first_request_framing_is_refused_once_and_closed(server, name, fields, body, status,
                                                          message):
    raw = TOKEN + fields + b"\r\n" + body + HEALTH  # a smuggled request after the body
    out, closed = exchange(server, raw)
    codes, last = responses(out)
    assert codes == [status], (name, out)
    assert closed, f"{name}: the connection must be closed after the refusal"
    assert json.loads(last) == {"error": {400: "Bad Request", 501: "Not Implemented"}[status],
                                "message": message}
    assert b"\r\nx-request-id: " in out.lower(), "every response carries x-request-id"
    assert b"connection: close" in out.lower()


# libmicrohttpd 0.9.75 answers a malformed Content-Length on a kept-alive
# connection itself, before taxd sees the request, and repeats its header
# block (docs/decisions.md, "HTTP framing"): checked separately below.
KEPT_ALIVE = [c for c in CASES if c[0] not in ("negative-length", "huge-length")]


@pytest.mark.parametrize("name,fields,body,status,message", KEPT_ALIVE,
                         ids=[c[0] for c in KEPT_ALIVE])
def test_kept_alive_request_framing_is_refused_and_closed(server, name, fields, body, status,
                                                          message):
    raw = HEALTH + TOKEN + fields + b"\r\n" + body + HEALTH
    out, closed = exchange(server, raw)
    codes, last = responses(out)
    assert codes == [200, status], (name, out)
    assert closed, f"{name}: the connection must be closed after the refusal"
    assert json.loads(last)["message"] == message


@pytest.mark.parametrize("length", [b"-1", b"18446744073709551616"])
def test_kept_alive_malformed_length_is_refused_and_closed(server, length):
    out, closed = exchange(server, HEALTH + TOKEN + b"Content-Length: " + length + b"\r\n\r\n"
                           + HEALTH)
    codes, _ = responses(out)
    assert codes[0] == 200 and codes[1] in (400, 413), out
    assert set(codes[1:]) <= {400, 413}, f"nothing after the refusal is served: {out!r}"
    assert closed


def test_valid_framing_still_served_kept_alive(server):
    """The strict rules refuse nothing valid: a chunked body and a
    Content-Length body on one connection, then a GET, all answered."""
    chunked = TOKEN + b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n" \
        + b"2\r\n{}\r\n0\r\n\r\n"
    sized = TOKEN + b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"
    out, closed = exchange(server, chunked + sized + HEALTH + b"GET /healthz HTTP/1.1\r\n"
                           b"Host: t\r\nConnection: close\r\n\r\n")
    codes, _ = responses(out)
    assert codes == [400, 400, 200, 200], out  # the token endpoint wants credentials: 400
    assert closed


def test_oversized_head_is_431(server):
    out, closed = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: "
                           + b"a" * 40000 + b"\r\n\r\n")
    codes, body = responses(out)
    assert codes == [431], out
    assert json.loads(body) == {"error": "Request Header Fields Too Large",
                                "message": "The request's header fields are too large"}
    assert closed
