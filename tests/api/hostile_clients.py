"""Attackers for tests/api/test_hostile.py, run as a separate process so that
their threads never hold the measuring test's interpreter lock (a latency
measured in the same process would be the GIL's, not taxd's).

  hostile_clients.py posts URL TOKEN COUNT BODY_FILE OUT_JSON [SECONDS]
      COUNT concurrent senders POST the body, each again and again for SECONDS
      (once when 0 or absent); writes [[status, retry_after, body], ...]
  hostile_clients.py slowloris PORT ADDRS PER_ADDR INTERVAL_S DURATION_S OUT_JSON
      from each address of ADDRS (comma-separated), PER_ADDR connections that
      send a partial request line, then one header line every INTERVAL_S, for
      DURATION_S; writes {"opened": n, "refused": n, "closed_after_s": [...]}:
      how long after its first byte each connection the server closed lived.
"""
import json
import resource
import select
import socket
import sys
import threading
import time
import urllib.error
import urllib.request


def post_once(url, token, body):
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "authorization": "Bearer " + token, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return [r.status, r.headers.get("retry-after"), r.read().decode()[:300]]
    except urllib.error.HTTPError as e:
        return [e.code, e.headers.get("retry-after"), e.read().decode()[:300]]
    except OSError as e:
        return [0, None, repr(e)]


def posts(url, token, count, body_file, out, seconds=0.0):
    body = open(body_file, "rb").read()
    results = []
    start = threading.Barrier(count)

    def one():
        start.wait()
        until = time.monotonic() + seconds
        while True:
            results.append(post_once(url, token, body))
            if time.monotonic() >= until:
                return

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump(results, open(out, "w"))


def slowloris(port, addrs, per_addr, interval, duration, out):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ep = select.epoll()
    socks = {}  # fd -> [socket, first byte time, request line completed]
    refused = 0
    for addr in addrs:
        for _ in range(per_addr):
            s = socket.socket()
            try:
                s.bind((addr, 0))
                s.connect(("127.0.0.1", port))
                s.setblocking(False)
                s.send(b"GET /healthz HTT")
                socks[s.fileno()] = [s, time.monotonic(), False]
                ep.register(s.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
            except OSError:
                refused += 1
                s.close()
    opened = len(socks)
    closed_after = []

    def close(fd):
        s, first, _ = socks.pop(fd)
        closed_after.append(time.monotonic() - first)
        ep.unregister(fd)
        s.close()

    end = time.monotonic() + duration
    next_line = time.monotonic() + interval
    while socks and time.monotonic() < end:
        for fd, _ in ep.poll(0.1):
            if fd not in socks:
                continue
            try:
                data = socks[fd][0].recv(4096)
            except OSError:
                data = b""
            if not data:
                close(fd)
        if time.monotonic() >= next_line:
            next_line += interval
            for fd in list(socks):
                entry = socks[fd]
                try:
                    entry[0].send(b"X-a: b\r\n" if entry[2] else b"P/1.1\r\n")
                    entry[2] = True
                except OSError:
                    close(fd)
    still_open = len(socks)
    for entry in socks.values():
        entry[0].close()
    json.dump({"opened": opened, "refused": refused, "closed_after_s": closed_after,
               "still_open": still_open}, open(out, "w"))


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "posts":
        posts(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6],
              float(sys.argv[7]) if len(sys.argv) > 7 else 0.0)
    elif kind == "slowloris":
        slowloris(int(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4]),
                  float(sys.argv[5]), float(sys.argv[6]), sys.argv[7])
