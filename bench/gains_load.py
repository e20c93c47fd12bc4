"""Bulk import for the gains report benchmark (make bench-gains): accounts
and trades written straight into a taxd database, like bench/report_load.py,
but with disposals, so that every account has gains rows in tax year 2025.

usage: gains_load.py DB TENANT_ID TRANSACTIONS ACCOUNTS

Each account gets TRANSACTIONS / ACCOUNTS trades over 5 assets, all in 2025:
for each asset, a buy for USD, then a sale of part of it for USD, in turn
(half the trades are disposals; a sale relieves one or two lots). Every
account is left dirty; `taxd admin inventory recalc --all` then computes it.
Prints one JSON line: {"transactions","accounts","seconds"}.
"""
import json
import sqlite3
import sys
import time
import uuid

from report_load import ASSETS, asset_uuids, body, load_accounts

BASE_MS = 1735689600000          # 2025-01-01T00:00:00Z


def trade(i, accounts):
    """The i-th trade: account, asset, lines text, datetime, is_sale."""
    account = i % len(accounts)
    k = i // len(accounts)                 # the account's k-th trade
    asset = ASSETS[(k // 2) % len(ASSETS)]
    when = BASE_MS + i * 20                # 1,000,000 trades within 2025
    if k % 2 == 0:
        quantity, usd = f"{k % 7 + 2}.{i % 10}", f"{(i % 89 + 1) * 100}.{i % 100:02d}"
        return account, asset, f"sUSD {usd};r{asset} {quantity}", when, (usd, quantity, False)
    quantity, usd = f"1.{i % 10}", f"{(i % 83 + 1) * 100}.{i % 100:02d}"
    return account, asset, f"s{asset} {quantity};rUSD {usd}", when, (usd, quantity, True)


def load_transactions(db, tenant, count, accounts, assets):
    now = int(time.time() * 1000)
    tenant_key = db.execute("SELECT rowid FROM tenants WHERE id = ?", (tenant,)).fetchone()[0]
    seq = dict(db.execute("SELECT uuid, seq FROM accounts WHERE tenant_id = ?", (tenant,)))
    refs = {code: 0 for code in assets}
    batch = 20000
    for start in range(0, count, batch):
        txs = []
        for i in range(start, min(count, start + batch)):
            a, asset, lines, when, (usd, quantity, sale) = trade(i, accounts)
            tx_id = f"tx-{i:08d}"
            doc = json.loads(body(tx_id, f"acct-{a:06d}", asset, quantity, usd, when))
            if sale:
                doc["sent"], doc["received"] = doc["received"], doc["sent"]
            txs.append((tenant_key, seq[accounts[a]], when, tx_id, lines, now, now,
                        uuid.uuid4().bytes, json.dumps(doc, separators=(",", ":"))))
            refs["USD"] += 1
            refs[asset] += 1
        db.executemany("INSERT INTO transactions (tenant, account, datetime, type, id, lines,"
                       " subtype, created_at, updated_at, uuid, body)"
                       " VALUES (?, ?, ?, 'trade', ?, ?, NULL, ?, ?, ?, ?)", txs)
    db.executemany("UPDATE assets SET tx_refs = tx_refs + ? WHERE uuid = ?",
                   ((n, assets[code]) for code, n in refs.items()))


def main():
    path, tenant, count, account_count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    began = time.monotonic()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("BEGIN IMMEDIATE")
    assets = asset_uuids(db, tenant)
    accounts = load_accounts(db, tenant, account_count)
    db.execute("UPDATE accounts SET dirty_from = ? WHERE tenant_id = ?", (BASE_MS, tenant))
    load_transactions(db, tenant, count, accounts, assets)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    print(json.dumps({"transactions": count, "accounts": account_count,
                      "seconds": round(time.monotonic() - began, 2)}))


if __name__ == "__main__":
    main()
