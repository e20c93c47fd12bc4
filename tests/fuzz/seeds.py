#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

The seeds are small, valid and interesting inputs: JSON bodies taken from the
API tests and the spec's examples, tokens signed with the fuzz targets' key,
request targets, decimals at the edges of their range, report rows and links.
Each file is named after what it shows. The output is deterministic and
committed; re-run after changing a target's input format:

    /usr/bin/python3 tests/fuzz/seeds.py

The input format of each target is described at the top of its .c file.
"""
import base64
import hashlib
import hmac
import json
import os
import shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
CORPORA = {}


def seed(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    CORPORA.setdefault(target, {})[name] = data


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------- transactions
# Bodies as tests/api/test_transactions.py and test_transactions_batch.py send them.

def line(code="BTC", amount="1.5", type_="crypto", rates=None):
    item = {"asset_amount": {"amount": amount, "asset": {"code": code, "type": type_}}}
    if rates is not None:
        item["rates"] = rates
    return item


def usd(amount):
    return {"amount": amount, "asset": {"code": "USD", "type": "fiat"}}


T0 = "2024-03-01T10:00:00.000Z"
TX = {
    "trade": {"id": "t1", "account_id": "a1", "datetime": "2024-01-02T03:04:05+02:00",
              "type": "trade", "sent": [line("USD", "30000.00", "fiat")],
              "received": [line("BTC", "1.50", rates=[usd("20000.00")])]},
    "deposit": {"id": "t2", "account_id": "a1", "datetime": T0, "type": "deposit",
                "received": [line(rates=[usd("20000")])]},
    "withdraw": {"id": "t3", "account_id": "a1", "datetime": "2024-03-01T10:00:00Z",
                 "type": "withdraw", "sent": [line("ETH", "0.25")]},
    "income": {"id": "t4", "account_id": "acct-\u00e9", "datetime": "2024-12-31T23:59:59.999-05:00",
               "type": "income", "received": [line("USDC", "100", "crypto", [usd("1")])]},
    "expense": {"id": "t5", "account_id": "a1", "datetime": "2024-02-29T12:00:00.5Z",
                "type": "expense", "sent": [line("USD", "12.50", "fiat")],
                "fees": [line("ETH", "0.0010", "crypto")]},
    "optional_parts": {"id": "t6", "account_id": "a1", "datetime": T0, "type": "deposit",
                       "subtype": "airdrop",
                       "received": [line(rates=[usd("20000"), {"amount": "18000.5",
                                                              "asset": {"code": "EUR", "type": "fiat"}}])],
                       "fees": [line("ETH", "0.0010")],
                       "metadata": {"note": "k\u00f6ln \u6771\u4eac \u0001\u001f",
                                    "nested": {"list": [1, "two", None, True, -0.5, 1e300]}}},
    "null_optional": {"id": "t7", "account_id": "a1", "datetime": T0, "type": "deposit",
                      "subtype": None, "metadata": None, "extra_field": {"x": 1},
                      "received": [line("NFT-1.x_y", "1", "nft")]},
    "edges": {"id": "x" * 256, "account_id": "a", "datetime": "0001-01-01T00:00:00+00:00",
              "type": "trade",
              "sent": [line("USD", "99999999999999999999.999999999999999999", "fiat")],
              "received": [line("SEC", "0.000000000000000001", "security",
                                [usd("0"), usd("00012.3400000000000000000000")])]},
    "year_9999": {"id": "t8", "account_id": "a1", "datetime": "9999-12-31T23:59:59.999Z",
                  "type": "withdraw", "sent": [line("BTC", "1e5")]},
    "offset_past_year": {"id": "t9", "account_id": "a1", "datetime": "9999-12-31T23:59:59-23:59",
                         "type": "withdraw", "sent": [line()]},
    "bad_amounts": {"id": "t10", "account_id": "a1", "datetime": T0, "type": "trade",
                    "sent": [line("USD", "-1", "fiat"), line("BTC", "0"), line("B TC", "1.0000000000000000001")],
                    "received": [line("BTC", "123456789012345678901", rates=[usd("-0.5")])]},
    "wrong_arrays": {"id": "t11", "account_id": "a1", "datetime": T0, "type": "deposit",
                     "sent": [line()], "received": []},
}
for name, body in TX.items():
    seed("fuzz_tx", name + ".json", compact(body))
seed("fuzz_tx", "trade_pretty.json", json.dumps(TX["trade"], indent=2))
seed("fuzz_tx", "batch.json", compact([TX["trade"], TX["deposit"], TX["bad_amounts"], TX["deposit"]]))
seed("fuzz_tx", "escapes.json",
     '{"id":"\\u00e9\\ud83d\\ude00\\/","account_id":"a\\"b","datetime":"2024-03-01T10:00:00.000Z",'
     '"type":"deposit","received":[{"asset_amount":{"amount":"1","asset":{"code":"BTC","type":"crypto"}}}]}')
seed("fuzz_tx", "duplicate_key.json", '{"id":"a","id":"b"}')
seed("fuzz_tx", "not_object.json", '"trade"')

# ---------------------------------------------------------------- body (the synthetic schema of fuzz_body.c)

BODY = {
    "valid_full": {"id": "i1", "kind": "individual", "amount": "12.50", "when": T0,
                   "born": "1980-02-29", "count": 7, "flag": None,
                   "address": {"line1": "1 Main St", "country": "US"},
                   "items": [{"item": {"line1": "x"}}]},
    "valid_min": {"id": "x"},
    "wrong_types": {"id": 5, "kind": "robot", "amount": 1.5, "when": "yesterday",
                    "born": "1899-12-31", "count": 101, "flag": "yes", "address": [],
                    "items": {}},
    "missing_nested": {"id": "", "address": {"country": "USA"}, "items": [{}, {"item": {"line1": ""}}]},
    "too_many_items": {"id": "i", "items": [{"item": {"line1": "a"}}] * 9},
    "datetimes": {"id": "d", "when": "9999-12-31T23:59:59-23:59", "born": "9999-12-31"},
    "datetime_low": {"id": "d", "when": "0000-01-01T00:00:00+23:59", "born": "2024-02-30"},
}
for name, body in BODY.items():
    seed("fuzz_body", name + ".json", compact(body))
for name in ("trade", "optional_parts", "edges"):
    seed("fuzz_body", "tx_" + name + ".json", compact(TX[name]))
seed("fuzz_body", "account.json", compact({"id": "a1", "account_owner_id": "o1", "name": "Main",
                                           "cost_basis_method": "FIFO"}))
seed("fuzz_body", "owner.json", compact({"id": "o1", "name": "Ada", "birth_date": "1990-01-01",
                                         "tin": "123-45-6789", "address": {"line1": "x", "country": "US"}}))
seed("fuzz_body", "report_trigger.json", compact({"account_ids": ["a1", "a2"], "format": "jsonl"}))
seed("fuzz_body", "subscription.json", compact({"url": "https://example.test/hook",
                                                "events": ["INVENTORY_UPDATE"]}))
seed("fuzz_body", "duplicate_key.json", '{"id":"a","id":"b"}')
seed("fuzz_body", "deep.json", '{"id":"x","address":' * 20 + '{}' + '}' * 20)
seed("fuzz_body", "big_int.json", '{"id":"x","count":123456789012345678901234567890}')
seed("fuzz_body", "bad_utf8.json", b'{"id":"\xc3\x28"}')

# ---------------------------------------------------------------- tokens (key: 32 bytes of 7, kid "kfuzz")

KEY = bytes([7]) * 32
NOW = 1700000000


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(payload, header=None, key=KEY):
    header = header or {"alg": "HS256", "typ": "JWT", "kid": "kfuzz"}
    signing = b64url(compact(header).encode()) + "." + b64url(compact(payload).encode())
    sig = hmac.new(key, signing.encode(), hashlib.sha256).digest()
    return signing + "." + b64url(sig)


CLAIMS = {"iss": "taxd", "sub": "client-1", "tid": "tenant-1", "scope": "transactions accounts",
          "iat": NOW - 10, "exp": NOW + 3600}
TOKENS = {
    "valid": jwt(CLAIMS),
    "valid_no_scope": jwt({k: v for k, v in CLAIMS.items() if k != "scope"}),
    "valid_nbf": jwt(dict(CLAIMS, nbf=NOW - 5)),
    "expired": jwt(dict(CLAIMS, iat=NOW - 90000, exp=NOW - 1)),
    "nbf_future": jwt(dict(CLAIMS, nbf=NOW + 3600)),
    "iat_future": jwt(dict(CLAIMS, iat=NOW + 61)),
    "exp_ten_years": jwt(dict(CLAIMS, exp=NOW + 315360000)),
    "unknown_scope": jwt(dict(CLAIMS, scope="root")),
    "wrong_key": jwt(CLAIMS, key=bytes([8]) * 32),
    "unknown_kid": jwt(CLAIMS, header={"alg": "HS256", "typ": "JWT", "kid": "other"}),
    "alg_none": jwt(CLAIMS, header={"alg": "none", "kid": "kfuzz"}).rsplit(".", 1)[0] + ".",
    "alg_hs512": jwt(CLAIMS, header={"alg": "HS512", "kid": "kfuzz"}),
    "crit": jwt(CLAIMS, header={"alg": "HS256", "kid": "kfuzz", "crit": ["exp"]}),
    "float_exp": jwt(dict(CLAIMS, exp=1.7e9)),
    "dup_tid": jwt(CLAIMS).replace(b64url(compact(CLAIMS).encode()),
                                   b64url(b'{"tid":"a","tid":"b"}')),
    "long_tid": jwt(dict(CLAIMS, tid="t" * 80)),
    "two_parts": "eyJhbGciOiJIUzI1NiJ9.e30",
}
for name, token in TOKENS.items():
    seed("fuzz_token", name, token)
seed("fuzz_token", "bearer_valid", "Bearer " + TOKENS["valid"])
seed("fuzz_token", "bearer_lower_two_spaces", "bearer  " + TOKENS["expired"])
seed("fuzz_token", "bearer_empty", "Bearer ")

# ---------------------------------------------------------------- request targets

for name, target in {
    "filer": "/v1/filers/default",
    "filers_query": "/v1/filers?limit=10&cursor=abc%3D%3D",
    "external_id": "/v1/transactions/external-id/t%2F1%20x",
    "two_params": "/v1/a/x%2Fy/b/%E2%82%AC?cursor=&cursor=2",
    "bad_escape": "/v1/filers/%zz?cursor=%4",
    "nul_escape": "/v1/filers/a%00b?cursor=%00",
    "plus": "/v1/filers?cursor=a+b%2B",
    "dot_segments": "/v1/../v1/./filers//x/",
    "download": "/v1/reports/inventory-summary/0b7c1e36-9a7e-4a27-8f53-5f0a5f8f2c11/download"
                "?expires=1700000900&nonce=AAAAAAAAAAAAAAAAAAAAAA&signature=" + "A" * 43,
    "no_path": "?cursor=1",
    "root": "/",
}.items():
    seed("fuzz_url", name, target)

# ---------------------------------------------------------------- decimals: "a b c" (fuzz_decimal.c)

for name, text in {
    "simple": "1.5 -2 3",
    "zeros": "0 -0 0.000",
    "trailing": "1.50 20000.00 00012.3400000000000000000000",
    "max": "99999999999999999999.999999999999999999 -99999999999999999999.999999999999999999 "
           "0.000000000000000001",
    "range": "100000000000000000000 1.0000000000000000001 0.0000000000000000005",
    "half_even": "0.000000000000000001 0.5 2",
    "div": "1 3 7",
    "big_mul": "12345678901.123456789 98765432109.987654321 0.000000001",
    "syntax": "1. .5 +1",
    "exp": "1e5 - 1.2.3",
}.items():
    seed("fuzz_decimal", name, text)

# ---------------------------------------------------------------- webhook payloads (fuzz_payload.c)

EVENT = {"event_id": "3f1e8b0e-6f7b-4a55-9d1e-0c2b6b0c9d11", "type": "INVENTORY_UPDATE",
         "tenant_id": "tenant-1", "account_id": "a1",
         "earliest_transaction_datetime": "2024-03-01T10:00:00.000Z",
         "latest_transaction_datetime": "2024-03-02T10:00:00.000Z",
         "latest_transaction_id": "t2", "update_from_transaction_id": "t1"}
for name, value in {
    "inventory_update": EVENT,
    "deleted": {k: v for k, v in EVENT.items() if "transaction_id" not in k},
    "tin_validation": {"event_id": "e2", "type": "TIN_VALIDATION_COMPLETED",
                       "account_owner_id": "o1", "status": "VALID", "ok": True, "retry": None},
    "tax_document": {"event_id": "e3", "type": "TAX_DOCUMENT_STATUS_CHANGED",
                     "form_type": "1099_DA", "year": 2024, "ids": ["a", "b"], "count": -9007199254740993},
    "controls": {"s": "\u0002\u0001\b\t\n\u000b\f\r\u001f\u007f\"\\/"},
    "unicode": {"k\u00f6ln": "\u6771\u4eac \U0001F600 \u2028\u2029"},
    "real": {"x": 1.5},
    "nested": [[[[{}]]], [], {"": ""}],
}.items():
    seed("fuzz_payload", name + ".json", compact(value))
seed("fuzz_payload", "escaped_input.json", '{"a":"\\u001F\\u00e9\\ud83d\\ude00\\/"}')
seed("fuzz_payload", "bad_utf8", b'"\xc3\x28\xed\xa0\x80"')

# ---------------------------------------------------------------- signatures: secret1 \n secret2 \n header \n body

SECRET = "whsec_" + b64url(bytes(range(24)))
BODY_SENT = compact({"timestamp": "2024-03-01T10:00:00.000Z", "data": [EVENT]})


def v1(secret, body):
    return "v1=" + base64.b64encode(hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()).decode()


for name, (s1, s2, header, body) in {
    "genuine": (SECRET, "", v1(SECRET, BODY_SENT), BODY_SENT),
    "rotation": (SECRET, "old-secret", v1(SECRET, BODY_SENT) + "," + v1("old-secret", BODY_SENT), BODY_SENT),
    "old_first": (SECRET, "old-secret", v1("old-secret", BODY_SENT) + "," + v1(SECRET, BODY_SENT), BODY_SENT),
    "tampered_body": (SECRET, "", v1(SECRET, BODY_SENT), BODY_SENT.replace("a1", "a2")),
    "truncated_sig": (SECRET, "", v1(SECRET, BODY_SENT)[:-2], BODY_SENT),
    "empty_parts": (SECRET, "", ",,v1=,v2=" + v1(SECRET, BODY_SENT)[3:] + ",", BODY_SENT),
    "empty_body": ("s", "", v1("s", ""), ""),
}.items():
    seed("fuzz_signature", name, "\n".join([s1, s2, header, body]))

# ---------------------------------------------------------------- report rows: 8 fields separated by NUL

FIELDS = ["account_id", "asset_code", "asset_type", "total_quantity", "total_cost",
          "average_unit_cost", "total_quantity_with_cost_basis", "fiat_currency"]
for name, row in {
    "plain": ["a1", "BTC", "crypto", "1.5", "30000", "20000", "1.5", "USD"],
    "no_average": ["a2", "ETH", "crypto", "0", "0", "", "0", "USD"],
    "negative": ["a3", "USD", "fiat", "-5", "-5", "1", "-5", "USD"],
    "formula": ["=HYPERLINK(\"http://x\")", "+1", "-2", "1", "2", "3", "4", "@SUM(A1)"],
    "tab_cr": ["\tcmd", "\rx", "crypto", "1", "1", "1", "1", "USD"],
    "quotes_commas": ["a,\"b\"\r\nc", "B,C", "cry\"pto", "1", "1", "1", "1", "U\nSD"],
    "unicode": ["k\u00f6ln \u6771\u4eac \u2028", "\u00e9", "nft", "1", "1", "1", "1", "EUR"],
    "controls": ["\u0001\u001f\u007f\\/", "A", "fiat", "1", "1", "1", "1", "USD"],
    "long_id": ["\u0001" * 256, "\"" * 32, "security", "-99999999999999999999.999999999999999999",
                "99999999999999999999.999999999999999999", "0.000000000000000001",
                "-99999999999999999999.999999999999999999", "USD"],
}.items():
    seed("fuzz_report", name, "\0".join(row))

# ---------------------------------------------------------------- links: base \0 id \0 now \0 field \0 tampering
# tampering: "=text" replaces the value; otherwise (position, byte) pairs edit it.

UUID = "0b7c1e36-9a7e-4a27-8f53-5f0a5f8f2c11"
for name, parts in {
    "unchanged": ["https://taxd.example", UUID, "1700000000", "-", ""],
    "other_id": ["http://127.0.0.1:8080", UUID, "1700000000", "i", "=" + UUID[:-1] + "2"],
    "id_edit": ["", UUID, "1700000000", "i", "\x23A"],
    "later_expiry": ["", UUID, "1700000000", "e", "=1700009999"],
    "leading_zero_expiry": ["", UUID, "1700000000", "e", "=01700000900"],
    "expiry_digit": ["", UUID, "1700000000", "e", "\x099"],
    "nonce": ["", UUID, "0", "n", "=AAAAAAAAAAAAAAAAAAAAAA"],
    "nonce_last_char": ["", UUID, "0", "n", "\x15B"],
    "signature_last_char": ["", UUID, "1", "s", "\x2aB"],
    "signature_two_chars": ["", UUID, "1", "s", "\x01A\x29-"],
    "padded_signature": ["", UUID, "1", "s", "=" + "A" * 43 + "="],
    "query_chars": ["https://x/p?q=1", "a&b=c%", "1700000000", "i", "=a&b=c"],
}.items():
    seed("fuzz_links", name, "\0".join(parts))


# ---------------------------------------------------------------- the client (fuzz_client_*.c)
# Batch answers as taxd gives them (docs/openapi.yaml TransactionBatchResult): each element
# carries its stored record (created/updated/unchanged) or its error body (error).
# fuzz_client_answer input: byte 0 = n - 1, bytes 1-2 the status (big endian), the body.

def record(tx, created="2024-03-01T10:00:00.000Z", updated=None):
    rec = dict(tx, created_at=created, updated_at=updated or created)
    return rec


def refused(http_status, message, issues=None):
    return {"status": "error", "message": message, "data": issues if issues is not None else []}


BATCH = [
    {"index": 0, "status": "created", "data": record(TX["trade"])},
    {"index": 1, "status": "updated", "data": record(TX["deposit"], updated="2024-03-02T00:00:00.000Z")},
    {"index": 2, "status": "unchanged", "data": record(TX["withdraw"])},
    {"index": 3, "status": "error", "http_status": 404,
     "data": refused(404, "Account 'zz' not found")},
    {"index": 4, "status": "error", "http_status": 400,
     "data": refused(400, "Validation failed",
                     [{"code": "custom", "path": ["id"],
                       "message": "Duplicate id 't1' in the batch (first at index 0)"}])},
    {"index": 5, "status": "error", "http_status": 400,
     "data": refused(400, "Validation failed",
                     [{"code": "invalid_type", "path": ["sent", 0, "asset_amount", "amount"],
                       "message": "Expected string, received number", "expected": "string"}])},
]


def answer_seed(name, n, status, body):
    if isinstance(body, str):
        body = body.encode()
    seed("fuzz_client_answer", name, bytes([n - 1, status >> 8, status & 0xFF]) + body)


answer_seed("batch_all_statuses.json", 6, 200, compact({"data": BATCH}))
answer_seed("batch_pretty.json", 6, 200, json.dumps({"data": BATCH}, indent=2))
answer_seed("batch_one_created.json", 1, 200, compact({"data": BATCH[:1]}))
answer_seed("batch_one_refused.json", 1, 200, compact({"data": [dict(BATCH[3], index=0)]}))
answer_seed("batch_keys_reordered.json", 2, 200,
            '{"meta":{"x":[{}]},"data":[{"data":{"id":"a]}\\\"{"},"status":"created","index":0},'
            '{"http_status":400,"data":{"message":"m\u00e9","data":[]},"index":1,"status":"error"}]}')
answer_seed("batch_escaped_status.json", 1, 200,
            '{"data":[{"index":0,"status":"cr\u0065ated","data":{}}]}')
answer_seed("batch_repeated_keys.json", 1, 200,
            '{"data":[{"index":0,"status":"created","status":"error","http_status":999,'
            '"data":{"message":"a"},"data":{"message":"b","data":[1]}}]}')
answer_seed("batch_http_status_odd.json", 3, 200,
            '{"data":[{"index":0,"status":"error","http_status":-404,"data":{}},'
            '{"index":1,"status":"error","http_status":4.04e2,"data":{}},'
            '{"index":2,"status":"error","http_status":12345678901,"data":{}}]}')
# What the fuzzer found (kept so that every smoke run replays it): a body cut right
# after "data": was read one byte past its end.
answer_seed("found_cut_after_key", 1, 200, b'{"data":\r')
# ... and an error body whose message is empty (the caller had nothing to print).
answer_seed("found_empty_message", 1, 502, '{"Message":""}')
# Error bodies of every shape the client reads (tests/client/faultproxy.py, spec § Errors).
for name, (status, body) in {
    "error_json": (503, compact({"error": "Service Unavailable", "message": "Service Unavailable (injected)"})),
    "error_Message": (502, compact({"Message": "Bad Gateway (injected)"})),
    "error_message_only": (500, compact({"message": "Internal Server Error (injected)"})),
    "error_html": (504, "<html><head><title>504 Gateway Timeout</title></head><body><center>"
                        "<h1>504 Gateway Timeout</h1></center><hr><center>gateway</center></body></html>\n"),
    "error_empty": (502, ""),
    "error_429_seconds": (429, compact({"error": "rate_limit_exceeded",
                                        "message": "Rate limit exceeded. Try again in 3 seconds."})),
    "error_429_standard": (429, compact({"error": "Too Many Requests", "message": "Too Many Requests"})),
    "error_401": (401, '{"message":"Invalid token","error":"Unauthorized"}'),
    "error_validation": (400, compact({"error": "Bad Request", "message": "Validation failed",
                                       "issues": [{"code": "too_small", "path": ["name"],
                                                   "message": "String must contain at least 1 character(s)"}]})),
    "error_transactions_shape": (404, compact({"status": "error", "message": "Account 'zz' not found",
                                               "data": [], "error": {"code": 404}})),
    "error_controls": (500, b"\x1b[31mred\x07\r\n\x00<b>bold</b>\xff\xfe"),
}.items():
    answer_seed(name, 1, status, body)

# fuzz_client_retry: 8 bytes now_ms, 2 bytes status, transport code, flag bits, the value.
NOW_MS = 784111777000 - 5000  # five seconds before RFC 9110's example date


def retry_seed(name, value, status=503, transport=0, bits=0b0010, now=NOW_MS):
    seed("fuzz_client_retry", name, now.to_bytes(8, "big", signed=True) + bytes([status >> 8, status & 0xFF,
                                                                                 transport, bits]) + value.encode())


for name, value in {
    "imf_fixdate": "Sun, 06 Nov 1994 08:49:37 GMT",
    "rfc850": "Sunday, 06-Nov-94 08:49:37 GMT",
    "asctime": "Sun Nov  6 08:49:37 1994",
    "lower_case_month": "Sun, 06 nov 1994 08:49:37 GMT",
    "leap_day": "Thu, 29 Feb 2024 00:00:00 GMT",
    "year_2100": "Fri, 01 Jan 2100 00:00:00 GMT",
    "utc_not_gmt": "Sun, 06 Nov 1994 08:49:37 UTC",
    "leap_second": "Sat, 31 Dec 2016 23:59:60 GMT",
    "delta": "120",
    "delta_spaces": " \t3 \t",
    "delta_zero": "0",
    "delta_huge": "99999999999999999999999",
    "delta_edge": "9223372036854770",
    "negative": "-1",
    "fraction": "1.5",
    "words": "12 seconds",
    "empty": "",
}.items():
    retry_seed(name, value)
retry_seed("decide_401_refreshed", "", status=401, bits=0b1010)
retry_seed("decide_409_create", "", status=409, bits=0b0110)
retry_seed("decide_timeout_create", "", status=0, transport=5, bits=0b0100)
# now_negative was fuzz_client_retry's first find: the date minus a clock that far overflowed.
retry_seed("now_negative", "Sun, 06 Nov 1994 08:49:37 GMT", now=-(2 ** 63))
retry_seed("now_max", "Sun, 06 Nov 1994 08:49:37 GMT", now=2 ** 63 - 1)

# fuzz_client_webhook: secret \n second secret \n header \n body (real envelopes).
DELIVERY = compact({"timestamp": "2024-03-01T10:00:00.000Z",
                    "data": [dict(EVENT, event_type=EVENT["type"])]})
for name, (s1, s2, header, body) in {
    "genuine": (SECRET, "", v1(SECRET, DELIVERY), DELIVERY),
    "rotation": (SECRET, "old-secret", v1(SECRET, DELIVERY) + "," + v1("old-secret", DELIVERY), DELIVERY),
    "rotation_spaced": ("old-secret", "", v1(SECRET, DELIVERY) + ", " + v1("old-secret", DELIVERY), DELIVERY),
    "future_scheme": (SECRET, "", "v2=abc," + v1(SECRET, DELIVERY), DELIVERY),
    "tampered": (SECRET, "", v1(SECRET, DELIVERY), DELIVERY.replace("a1", "a2")),
    "pretty_two_events": (SECRET, "", "v1=", json.dumps(
        {"timestamp": "2024-03-01T10:00:00.000Z", "extra": {"x": [1, 2.5e-3]},
         "data": [dict(EVENT, event_type="INVENTORY_UPDATE"),
                  {"event_type": "TIN_VALIDATION_COMPLETED", "event_id": "e2", "status": "VALID",
                   "note": "k\u00f6ln \"q\" \\ \u001f", "n": -12345678901234}]}, indent=2)),
    "escaped_data_key": ("s", "", "", '{"d\\u0061ta":[{"event_type":"X","n":1.0}]}'),
    "no_event_id": ("s", "", "", '{"data":[{"event_type":"X"},{"event_type":"Y","event_id":7}]}'),
    "empty_data": ("s", "", "", '{"data":[]}'),
    "not_envelope": ("s", "", "", '[{"event_type":"X"}]'),
}.items():
    seed("fuzz_client_webhook", name, "\n".join([s1, s2, header, body]))

# fuzz_client_csv: whole files as taxctl import reads them.
CSV_COLUMNS = ("id,account_id,datetime,type,subtype,sent_asset,sent_amount,sent_usd_rate,"
               "received_asset,received_amount,received_usd_rate,fee_asset,fee_amount,fee_usd_rate")
with open(os.path.join(os.path.dirname(ROOT), "..", "..", "examples", "trades.csv"), "rb") as f:
    seed("fuzz_client_csv", "examples_trades.csv", f.read())
seed("fuzz_client_csv", "import_test_rows.csv", CSV_COLUMNS + "\n"
     "t0,a0,2024-01-01T00:00:00Z,deposit,,,,,ETH,0.000000000000000001,2000,,,\n"
     "t1,a1,2024-01-01T00:00:01.250+01:00,trade,buy,USD,1.5,,BTC,99999999999999999999.999999999999999999,"
     "30000.25,USD,0.1,\n"
     "t2,a2,2024-02-29T23:59:59-05:00,withdraw,,BTC:crypto,0.5,,,,,,,\n")
seed("fuzz_client_csv", "quoted_and_crlf.csv",
     "\ufeffid,account_id,datetime,type,received_asset,received_amount\r\n"
     "\"q,1\",\"a \"\"x\"\"\",2024-03-01T10:00:00Z,income,NFT-1.x_y:nft,1\r\n"
     "\"multi\nline\",a,2024-03-01T10:00:00Z,deposit,EUR:fiat,12.50\r\n\r\n")
seed("fuzz_client_csv", "bad_lines.csv", CSV_COLUMNS + "\n"
     "x,a,2024-13-01T00:00:00Z,trade,,USD,-1,,B TC,1e5,abc,,,\n"
     ",,,,,,,,,,,,,\n"
     "\"open quote,a,2024-01-01T00:00:00Z\n"
     "y,a,2024-01-01T00:00:00Z,withdraw\n")
seed("fuzz_client_csv", "columns_reordered.csv",
     "type,fee_amount,fee_asset,datetime,account_id,id,sent_amount,sent_asset\n"
     "expense,0.001,ETH,2024-01-01T00:00:00.5Z,acct-\u00e9,\u6771\u4eac,12,USD\n")
seed("fuzz_client_csv", "unknown_column.csv", "id,account_id,datetime,type,colour\nx,a,b,c,d\n")


# ---------------------------------------------------------------- Taxbit's COMPREHENSIVE model
# The bodies observed from the SDK (docs/taxbit-sdk.md § 1.3) and a disregarded entity.

SDK_SIGNED = "2026-11-25T03:01:36.705Z"
COMPREHENSIVE = {
    "dps_de": {"account_holder": {"address": {"city": "Berlin", "country": "DE", "first_line": "Hauptstr. 1",
                                              "postal_code": "10115"},
                                  "date_of_birth": "03/14/1980", "name": "J\u00fcrgen M\u00fcller",
                                  "tax_residences": [{"country": "DE", "tin": "12345678901",
                                                      "tin_not_required": False}],
                                  "vatin_not_required": True, "is_individual": True},
               "document_type": "COMPREHENSIVE", "is_confirmed_correct_complete": True,
               "questionnaire": "DPS", "schema_version": "1.0", "signature_date": SDK_SIGNED},
    "w9": {"account_holder": {"address": {"city": "Seattle", "country": "US", "state_or_province": "WA",
                                          "first_line": "1 Main St", "postal_code": "98101"},
                              "name": "Jane Q Public", "tin": "231456789", "is_us_person": True,
                              "us_account_type": "INDIVIDUAL"},
           "document_type": "COMPREHENSIVE", "has_certified": True, "questionnaire": "W-FORM",
           "schema_version": "1.0", "signature": "Jane Q Public", "signature_date": SDK_SIGNED},
    "w8bene_gr": {"account_holder": {"address": {"city": "Athens", "country": "GR", "first_line": "Odos 1"},
                                     "country_of_citizenship": "GR", "name": "Alpha AE", "ftin": "",
                                     "ftin_not_legally_required": True, "is_us_person": False,
                                     "foreign_account_type": "CORPORATION"},
                  "document_type": "COMPREHENSIVE", "has_certified": True, "questionnaire": "W-FORM",
                  "schema_version": "1.0", "signature": "M P", "signature_date": SDK_SIGNED},
    "dre_sm_llc": {"account_holder": {"is_us_person": True, "us_account_type": "SM_LLC",
                                      "us_smllc_election": False},
                   "regarded_owner": {"name": "Pat Owner", "dba_name": "Pat LLC",
                                      "address": {"city": "Austin", "country": "US", "state_or_province": "TX",
                                                  "first_line": "2 Oak Rd", "postal_code": "78701"},
                                      "tin": "912-70-1234", "is_us_person": True, "us_account_type": "INDIVIDUAL"},
                   "document_type": "COMPREHENSIVE", "has_certified": True, "questionnaire": "W-FORM",
                   "schema_version": "1.0", "signature": "Pat Owner", "signature_date": SDK_SIGNED},
}
for name, body in COMPREHENSIVE.items():
    seed("fuzz_comprehensive", name + ".json", compact(body))
seed("fuzz_comprehensive", "not_object.json", '"COMPREHENSIVE"')


def main():
    for target, files in CORPORA.items():
        directory = os.path.join(ROOT, target)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        for name, data in files.items():
            with open(os.path.join(directory, name), "wb") as f:
                f.write(data)
    print("seeds:", ", ".join(f"{t} {len(f)}" for t, f in sorted(CORPORA.items())))


if __name__ == "__main__":
    main()
