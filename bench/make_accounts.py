"""The accounts a benchmark's transactions name, made through the API: one
owner, the five crypto assets of bench/ingest_gen.h, and COUNT accounts
PREFIX0..PREFIX{COUNT-1} from 8 keep-alive connections.

usage: make_accounts.py PORT TOKEN COUNT [PREFIX]   (PREFIX defaults to "a")"""
import http.client
import json
import sys
import threading

port, token, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
prefix = sys.argv[4] if len(sys.argv) > 4 else "a"
H = {"authorization": "Bearer " + token, "content-type": "application/json"}


def send(conn, path, body, want):
    conn.request("POST", path, json.dumps(body), H)
    r = conn.getresponse()
    text = r.read()
    assert r.status == want, (path, r.status, text)


c = http.client.HTTPConnection("127.0.0.1", port)
send(c, "/v1/account-owners", {"id": "owner", "name": "Bench", "account_owner_type": "individual"}, 201)
for code in ("BTC", "ETH", "SOL", "ADA", "DOT"):
    send(c, "/v1/assets", {"code": code, "name": code, "type": "crypto"}, 201)


def worker(k):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(k, count, 8):
        send(conn, "/v1/accounts", {"id": f"{prefix}{i}", "account_owner_id": "owner"}, 201)


threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
