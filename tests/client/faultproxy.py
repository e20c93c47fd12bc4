"""A fault-injecting HTTP proxy for the client's black-box tests (issue 18).

It listens on 127.0.0.1 (a free port), forwards every request to a real
taxd, and follows a script the test sets: for the Nth request matching
(method, path prefix) it answers instead of taxd, or breaks the connection,
or waits. It records every request it saw, so a test counts attempts and
measures waits from the proxy's side (what reached the wire, not what the
client says it did).

Python 3 standard library only. Two ways to drive it:

  In process (pytest):
      proxy = FaultProxy(upstream=server.url).start()
      proxy.add("GET", "/v1/accounts", "status", status=503, shape="html", times=2)
      ... point the client at proxy.url ...
      proxy.attempts("GET", "/v1/accounts")
      proxy.stop()

  Out of process: `python3 faultproxy.py --upstream URL` prints
  {"port": N} on its first line; POST /_proxy/script with a JSON list of
  rules (the keyword arguments of add()) replaces the script, GET
  /_proxy/seen answers the record, POST /_proxy/reset clears both.

Actions (add()'s `action`):
  "401"          401 {"message":"Invalid token","error":"Unauthorized"}
  "429"          shape "seconds" (rate_limit_exceeded with the seconds in
                 the message and in Retry-After), "plain" ("Too many
                 requests.") or "standard" ("Too Many Requests"); retry_after
                 overrides the header: an int (seconds), a str sent as is
                 (an HTTP date), or None for no header at all
  "status"       any status with a body shape: "json" {"error","message"},
                 "Message" ({"Message":...}, capital M), "message_only" (no
                 `error`), "html" (text/html from a "gateway"), "empty";
                 or body=/content_type= given verbatim
  "reset_before" read the request, then reset the connection (RST): the
                 service never saw it
  "reset_after"  forward to taxd, then reset instead of answering: the
                 request took effect, its answer is lost
  "hang"         read the request and answer nothing for `seconds` (default
                 30), then close: longer than the client's timeout
  "hook"         call fn(request_record) (in process only), then forward:
                 e.g. move taxd's test clock between two requests

down() / up() stop and restart listening on the same port: while down a
connection is refused, so the client knows nothing was sent.

Every rule matches requests whose method equals `method` ("*" for any) and
whose path (query included) starts with `prefix` (and holds `contains`,
when given: "/download" picks a report's links); it acts on the matching
requests number nth .. nth+times-1 (1-based; times=None: every one from nth
on). The first rule that acts wins; a request no rule acts on is forwarded.
Each answer the proxy makes up carries an x-request-id of its own
("proxy-<n>") unless the rule says request_id=None.
"""
import email.utils
import http.client
import http.server
import json
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade", "expect", "content-length", "host"}


class Seen:
    """One request as the proxy saw it."""

    def __init__(self, n, method, path, authorized, t, action):
        self.n = n
        self.method = method
        self.path = path
        self.authorized = authorized  # an Authorization header was present
        self.t = t                    # time.monotonic() when its headers were read
        self.action = action          # "forward" or the rule's action
        self.status = None            # the status sent back (None: no answer)

    def as_dict(self):
        return {"n": self.n, "method": self.method, "path": self.path,
                "authorized": self.authorized, "t": self.t, "action": self.action,
                "status": self.status}

    def __repr__(self):
        return f"<{self.n} {self.method} {self.path} auth={self.authorized} {self.action} {self.status}>"


class Rule:
    def __init__(self, method, prefix, action, nth=1, times=1, contains=None, **params):
        self.method = method.upper()
        self.prefix = prefix
        self.contains = contains
        self.action = action
        self.nth = nth
        self.times = times
        self.params = params
        self.matched = 0

    def matches(self, method, path):
        return ((self.method == "*" or self.method == method) and path.startswith(self.prefix)
                and (self.contains is None or self.contains in path))

    def fires(self):
        """Counts one matching request; True when this one is to be acted on."""
        self.matched += 1
        if self.matched < self.nth:
            return False
        return self.times is None or self.matched < self.nth + self.times


def error_body(status, shape, message=None):
    """(content type, bytes) of an error answer in one of the shapes taxd's
    clients must read."""
    reason = http.client.responses.get(status, "Error")
    message = message or (f"{reason} (injected)")
    if shape == "json":
        return "application/json", json.dumps({"error": reason, "message": message}).encode()
    if shape == "Message":
        return "application/json", json.dumps({"Message": message}).encode()
    if shape == "message_only":
        return "application/json", json.dumps({"message": message}).encode()
    if shape == "html":
        return "text/html", (f"<html><head><title>{status} {reason}</title></head><body><center>"
                             f"<h1>{status} {reason}</h1></center><hr><center>gateway</center>"
                             f"</body></html>\n").encode()
    if shape == "empty":
        return None, b""
    raise ValueError(f"unknown body shape {shape!r}")


class FaultProxy:
    def __init__(self, upstream=None, host="127.0.0.1", port=0):
        self.upstream = upstream
        self._lock = threading.Lock()
        self._rules = []
        self._seen = []
        self._hangs = threading.Event()  # set at stop(): hanging handlers give up
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._handler = Handler
        self._open = set()  # connections being served, reset by down()
        self._server = _Server((host, port), Handler)
        self.port = self._server.server_address[1]
        self._thread = None
        self.is_down = False

    # -- lifecycle
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._hangs.set()
        if not self.is_down:
            self._server.shutdown()
            self._server.server_close()
        self._reset_open()

    def down(self):
        """Stops listening and resets every open connection: until up(), a
        connection is refused, so nothing of a request reaches the wire."""
        self._server.shutdown()
        self._server.server_close()
        self._reset_open()
        self.is_down = True

    def up(self):
        """Listens again on the same port."""
        self._server = _Server(("127.0.0.1", self.port), self._handler)
        self.is_down = False
        return self.start()

    def _reset_open(self):
        with self._lock:
            conns = list(self._open)
        for c in conns:
            try:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- the script
    def add(self, method, prefix, action, nth=1, times=1, **params):
        """Adds one rule (see the module's docstring); returns self."""
        with self._lock:
            self._rules.append(Rule(method, prefix, action, nth, times, **params))
        return self

    def set_script(self, rules):
        with self._lock:
            self._rules = [Rule(**r) for r in rules]

    def reset(self):
        with self._lock:
            self._rules = []
            self._seen = []

    # -- the record
    @property
    def seen(self):
        with self._lock:
            return list(self._seen)

    def matching(self, method="*", prefix=""):
        method = method.upper()
        return [s for s in self.seen
                if (method == "*" or s.method == method) and s.path.startswith(prefix)]

    def attempts(self, method="*", prefix=""):
        return len(self.matching(method, prefix))

    def gaps(self, method="*", prefix=""):
        """Seconds between consecutive matching requests."""
        ts = [s.t for s in self.matching(method, prefix)]
        return [b - a for a, b in zip(ts, ts[1:])]

    # -- used by the handler
    def _record(self, method, path, authorized):
        with self._lock:
            seen = Seen(len(self._seen) + 1, method, path, authorized, time.monotonic(), "forward")
            self._seen.append(seen)
            rule = None
            for r in self._rules:
                if r.matches(method, path) and r.fires():
                    rule = r
                    break
            if rule is not None:
                seen.action = rule.action
            return seen, rule


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        pass  # a reset or a client that gave up: expected here, and recorded


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner = None  # the FaultProxy, set by the subclass FaultProxy makes

    def log_message(self, fmt, *args):  # quiet: the record is the log
        pass

    def setup(self):
        super().setup()
        with self.owner._lock:
            self.owner._open.add(self.connection)

    def finish(self):
        with self.owner._lock:
            self.owner._open.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _dispatch(self):
        body = self._body()
        path = self.path
        if path.startswith("/_proxy/"):
            return self._control(path, body)
        seen, rule = self.owner._record(self.command, path, "authorization" in self.headers)
        if rule is None:
            return self._forward(seen, body)
        p = rule.params
        action = rule.action
        if action == "reset_before":
            return self._reset()
        if action == "reset_after":
            self._forward(seen, body, answer=False)
            return self._reset()
        if action == "hang":
            self.owner._hangs.wait(p.get("seconds", 30))
            self.close_connection = True
            return None
        if action == "hook":
            p["fn"](seen)
            return self._forward(seen, body)
        if action == "401":
            return self._answer(seen, 401, "application/json",
                                b'{"message":"Invalid token","error":"Unauthorized"}', p)
        if action == "429":
            return self._too_many(seen, p)
        if action == "status":
            status = p.get("status", 500)
            if "body" in p:
                data = p["body"].encode() if isinstance(p["body"], str) else p["body"]
                return self._answer(seen, status, p.get("content_type"), data, p)
            ctype, data = error_body(status, p.get("shape", "json"), p.get("message"))
            return self._answer(seen, status, ctype, data, p)
        raise ValueError(f"unknown action {action!r}")

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = lambda self: self._dispatch()

    # -- answers made up here
    def _too_many(self, seen, p):
        shape = p.get("shape", "seconds")
        retry_after = p.get("retry_after", 1)
        secs = retry_after if isinstance(retry_after, int) else 1
        body = {"seconds": {"error": "rate_limit_exceeded",
                            "message": f"Rate limit exceeded. Try again in {secs} seconds."},
                "plain": {"error": "rate_limit_exceeded", "message": "Too many requests."},
                "standard": {"error": "Too Many Requests", "message": "Too Many Requests"}}[shape]
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return self._answer(seen, 429, "application/json", json.dumps(body).encode(), p, headers)

    def _answer(self, seen, status, ctype, data, p, headers=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        rid = p.get("request_id", f"proxy-{seen.n}")
        if rid is not None:
            self.send_header("x-request-id", rid)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        seen.status = status

    def _reset(self):
        """Closes with an RST (SO_LINGER 0): the client sees a reset, not a
        clean end of the answer."""
        try:
            self.wfile.flush()
        except OSError:
            pass
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    # -- forwarding
    def _forward(self, seen, body, answer=True):
        up = urllib.parse.urlsplit(self.owner.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            conn.request(self.command, self.path, body=body if body or self.command in (
                "POST", "PUT", "PATCH") else None, headers=headers)
            r = conn.getresponse()
            data = r.read()
            rheaders = [(k, v) for k, v in r.getheaders() if k.lower() not in HOP_BY_HOP]
            status = r.status
        except OSError:
            conn.close()
            return self._reset()
        conn.close()
        if not answer:
            seen.status = None
            return None
        self.send_response(status)
        for k, v in rheaders:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        seen.status = status
        return None

    # -- the control endpoint (out-of-process use)
    def _control(self, path, body):
        if path == "/_proxy/script" and self.command == "POST":
            self.owner.set_script(json.loads(body or b"[]"))
            out = {"rules": len(self.owner._rules)}
        elif path == "/_proxy/seen" and self.command == "GET":
            out = [s.as_dict() for s in self.owner.seen]
        elif path == "/_proxy/reset" and self.command == "POST":
            self.owner.reset()
            out = {}
        else:
            data = b'{"message":"no such control route"}'
            self.send_response(404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def http_date(seconds_from_now):
    """An IMF-fixdate Retry-After value that many seconds ahead."""
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    proxy = FaultProxy(upstream=args.upstream, port=args.port).start()
    print(json.dumps({"port": proxy.port}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        proxy.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
