"""An HTTPS webhook receiver for the tests: what a customer endpoint sees.

A test CA and a server certificate for 127.0.0.1 / localhost are made with
the openssl command at start (nothing is checked in), so taxd can be given
the CA bundle with --webhook-ca-file. The server speaks HTTP/1.1 with
keep-alive (protocol_version "HTTP/1.1", Content-Length on every answer),
does each TLS handshake in the connection's own thread, records every
request (arrival time, path, headers, raw body, connection) and answers
from a script per path: a queue of answers ({"status", "delay", "headers"})
consumed in order, then the path's default (200 unless set).

Used two ways:
  - imported by pytest (tests/api/test_webhooks.py): Receiver(workdir);
  - standalone for the C driver test (tests/unit/test_webhooks_engine.c):
      /usr/bin/python3 tests/api/webhook_receiver.py --dir DIR
    writes DIR/ca.pem, then DIR/ports.json {"https": P, "control": Q} once
    ready, and serves a plain-HTTP control API on 127.0.0.1:Q:
      POST /script {"path", "responses": [...], "default": {...}}
      GET  /requests            every recorded request as JSON
      POST /reset               forget requests and scripts
    It exits when its stdin closes or on SIGTERM.
"""
import base64
import json
import os
import signal
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def make_certificates(directory):
    """A CA and a server certificate signed by it (SAN 127.0.0.1, localhost).
    Returns (ca.pem, server.pem, server.key)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca_key, ca_pem = d / "ca.key", d / "ca.pem"
    key, csr, pem = d / "server.key", d / "server.csr", d / "server.pem"
    ext = d / "server.ext"
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def run(*args):
        subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(ca_key), "-out", str(ca_pem), "-days", "2", "-subj", "/CN=taxd test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(pem), "-days", "2", "-extfile", str(ext))
    return ca_pem, pem, key


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the receiver records instead
        pass

    def do_POST(self):
        self._handle()

    def do_GET(self):
        self._handle()

    def _handle(self):
        receiver = self.server.receiver
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        answer = receiver._next_answer(self.path)
        receiver._record({
            "t": time.monotonic(),
            "wall": time.time(),
            "method": self.command,
            "path": self.path,
            "version": self.request_version,
            "headers": [(k.lower(), v) for k, v in self.headers.items()],
            "body": body,
            "conn": "%s:%d" % self.client_address[:2],
            "status": answer.get("status", 200),
        })
        delay = answer.get("delay", 0)
        if delay:
            time.sleep(delay)
        payload = json.dumps(answer.get("body", {"ok": True})).encode()
        try:
            self.send_response(answer.get("status", 200))
            for k, v in answer.get("headers", {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True  # the client gave up (a timeout)


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def finish_request(self, request, client_address):
        # Runs in the connection's thread: a slow handshake never blocks accept().
        try:
            tls = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        pass


class _Serving:
    """A socketserver run on a daemon thread: start() serves, stop() closes."""

    def _serve(self, server):
        self.server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Receiver(_Serving):
    """The HTTPS endpoint with its script and its record of requests."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.ca_pem, cert, key = make_certificates(self.workdir / "pki")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests = []
        self._scripts = {}
        self._defaults = {}
        self._serve(_TLSServer(("127.0.0.1", 0), _Handler))
        self.server.ssl_context = ctx
        self.server.receiver = self
        self.port = self.server.server_address[1]

    def url(self, path="/hook"):
        return "https://127.0.0.1:%d%s" % (self.port, path)

    # -- script
    def script(self, path, responses=(), default=None):
        """Answers for `path`: `responses` in order, then `default`."""
        with self._lock:
            self._scripts[path] = list(responses)
            if default is not None:
                self._defaults[path] = dict(default)

    def _next_answer(self, path):
        with self._lock:
            queue = self._scripts.get(path)
            if queue:
                return queue.pop(0)
            return self._defaults.get(path, {"status": 200})

    # -- record
    def _record(self, req):
        with self._cond:
            self._requests.append(req)
            self._cond.notify_all()

    def requests(self, path=None):
        with self._lock:
            return [r for r in self._requests if path is None or r["path"] == path]

    def wait_for(self, count, path=None, timeout=30.0):
        """Blocks until `count` requests (to `path`) arrived; returns them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = [r for r in self._requests if path is None or r["path"] == path]
                if len(got) >= count:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"receiver got {len(got)} of {count} requests to {path} within {timeout}s")
                self._cond.wait(left)

    def reset(self):
        with self._lock:
            self._requests.clear()
            self._scripts.clear()
            self._defaults.clear()


def header(req, name):
    """Every value of header `name` (lowercase) in a recorded request."""
    return [v for k, v in req["headers"] if k == name]


class _ProxyHandler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(8192).decode("latin-1").strip()
        while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
            pass  # the request's headers
        self.server.owner._record(line)
        self.wfile.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                         b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                         b"Content-Length: 0\r\nConnection: close\r\n\r\n")


class Proxy407(_Serving):
    """An HTTP forward proxy in front of every endpoint that refuses each
    CONNECT with 407 Proxy Authentication Required: what a delivery meets
    when a proxy wants credentials. Records each request line."""

    def __init__(self):
        self._lock = threading.Lock()
        self._lines = []
        self._serve(socketserver.ThreadingTCPServer(("127.0.0.1", 0), _ProxyHandler))
        self.server.daemon_threads = True
        self.server.owner = self
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def _record(self, line):
        with self._lock:
            self._lines.append(line)

    def requests(self):
        with self._lock:
            return list(self._lines)


# ---------------------------------------------------------------- standalone

def _control_handler(receiver):
    class Control(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def _reply(self, obj):
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            reqs = []
            for r in receiver.requests():
                r = dict(r)
                r["body_b64"] = base64.b64encode(r["body"]).decode()
                r["body"] = r["body"].decode("utf-8", "replace")
                reqs.append(r)
            self._reply(reqs)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            doc = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/script":
                receiver.script(doc["path"], doc.get("responses", ()), doc.get("default"))
            elif self.path == "/reset":
                receiver.reset()
            self._reply({"ok": True})

    return Control


def main(argv):
    if len(argv) != 3 or argv[1] != "--dir":
        print("usage: webhook_receiver.py --dir DIR", file=sys.stderr)
        return 2
    out = Path(argv[2])
    receiver = Receiver(out).start()
    (out / "ca.pem").write_bytes(Path(receiver.ca_pem).read_bytes())
    control = ThreadingHTTPServer(("127.0.0.1", 0), _control_handler(receiver))
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    tmp = out / "ports.json.tmp"
    tmp.write_text(json.dumps({"https": receiver.port, "control": control.server_address[1]}))
    os.replace(tmp, out / "ports.json")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def watch_stdin():
        try:
            sys.stdin.buffer.read()
        finally:
            stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    stop.wait()
    control.shutdown()
    receiver.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
