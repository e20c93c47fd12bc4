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
