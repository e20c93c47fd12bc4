"""Bulk import for the report benchmark: writes accounts and transactions
straight into a taxd database (not through the HTTP API), the way an
operator's migration would, and marks every account dirty so taxd
recalculates them lazily.

usage: report_load.py DB TENANT_ID TRANSACTIONS ACCOUNTS
       report_load.py DB TENANT_ID 0 ACCOUNTS --summaries-only

Every account gets TRANSACTIONS / ACCOUNTS trades, spread round-robin over
5 assets (BTC ETH SOL ADA DOT): each buys some quantity for USD, so every
(account, asset) ends with lots that have a cost basis. Rows are written in
primary-key order (uuids are generated, then sorted) inside one transaction
with synchronous off: the load is a setup step, not what is measured.
With --summaries-only no transactions are written: each account gets its 5
inventory summaries directly and is clean, the way a recalculation leaves
it. That builds reports far larger than the SQLite page caches cheaply, to
show that memory does not follow the report's size.
Prints one JSON line: {"transactions","accounts","seconds"}.
"""
import json
import sqlite3
import sys
import time
import uuid

ASSETS = ["BTC", "ETH", "SOL", "ADA", "DOT"]
BASE_MS = 1704067200000          # 2024-01-01T00:00:00Z


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def sorted_uuids(n):
    return sorted(str(uuid.uuid4()) for _ in range(n))


def asset_uuids(db, tenant):
    have = dict(db.execute("SELECT code, uuid FROM assets WHERE tenant_id = ?", (tenant,)))
    now = int(time.time() * 1000)
    for code in ASSETS:
        if code not in have:
            have[code] = str(uuid.uuid4())
            db.execute("INSERT INTO assets (uuid, tenant_id, code, name, type, decimals, created_at)"
                       " VALUES (?, ?, ?, ?, 'crypto', NULL, ?)", (have[code], tenant, code, code, now))
    return have


def load_accounts(db, tenant, count, dirty=True):
    now = int(time.time() * 1000)
    filer = db.execute("SELECT uuid FROM filers WHERE tenant_id = ? AND is_default = 1",
                       (tenant,)).fetchone()[0]
    owner = str(uuid.uuid4())
    db.execute("INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type,"
               " created_at, updated_at) VALUES (?, ?, 'owner-1', 'Bench Owner', 'individual', ?, ?)",
               (owner, tenant, now, now))
    uuids = sorted_uuids(count)
    db.executemany("INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid,"
                   " cost_basis_method, created_at, updated_at, dirty_from, inventory_version)"
                   " VALUES (?, ?, ?, ?, ?, 'FIFO', ?, ?, ?, 1)",
                   ((u, tenant, f"acct-{i:06d}", owner, filer, now, now,
                     BASE_MS if dirty else None) for i, u in enumerate(uuids)))
    return uuids


def trade(i, accounts):
    """The i-th trade: account, asset, quantity, USD paid, datetime."""
    account = i % len(accounts)
    asset = ASSETS[(i // len(accounts)) % len(ASSETS)]
    quantity = f"{i % 97 + 1}.{i % 10}"
    usd = f"{(i % 89 + 1) * 100}.{i % 100:02d}"
    return account, asset, quantity, usd, BASE_MS + i * 1000


def body(tx_id, account_id, asset, quantity, usd, when):
    line = lambda code, amount, type_: {"asset_amount": {"amount": amount,
                                                          "asset": {"code": code, "type": type_}}}
    return json.dumps({"id": tx_id, "account_id": account_id, "datetime": iso(when),
                       "type": "trade", "sent": [line("USD", usd, "fiat")],
                       "received": [line(asset, quantity, "crypto")]}, separators=(",", ":"))


def load_transactions(db, tenant, count, accounts, assets):
    """Rows as taxd's store writes them (schema v10, store/transactions.c):
    the line items in the row's lines text, the assets' reference counts."""
    now = int(time.time() * 1000)
    tenant_key = db.execute("SELECT rowid FROM tenants WHERE id = ?", (tenant,)).fetchone()[0]
    seq = dict(db.execute("SELECT uuid, seq FROM accounts WHERE tenant_id = ?", (tenant,)))
    refs = {code: 0 for code in assets}
    batch = 20000
    for start in range(0, count, batch):
        txs = []
        for i in range(start, min(count, start + batch)):
            a, asset, quantity, usd, when = trade(i, accounts)
            tx_id = f"tx-{i:08d}"
            txs.append((tenant_key, seq[accounts[a]], when, tx_id, f"sUSD {usd};r{asset} {quantity}",
                        now, now, uuid.uuid4().bytes,
                        body(tx_id, f"acct-{a:06d}", asset, quantity, usd, when)))
            refs["USD"] += 1
            refs[asset] += 1
        db.executemany("INSERT INTO transactions (tenant, account, datetime, type, id, lines,"
                       " subtype, created_at, updated_at, uuid, body)"
                       " VALUES (?, ?, ?, 'trade', ?, ?, NULL, ?, ?, ?, ?)", txs)
    db.executemany("UPDATE assets SET tx_refs = tx_refs + ? WHERE uuid = ?",
                   ((n, assets[code]) for code, n in refs.items()))


def load_summaries(db, accounts):
    """Five summaries per account, as a recalculation would have stored them."""
    seq = dict(db.execute("SELECT uuid, seq FROM accounts"))
    rows = []
    for n, account in enumerate(accounts):
        for k, code in enumerate(ASSETS):
            quantity = f"{(n + k) % 97 + 1}.{n % 10}"
            cost = f"{((n + k) % 89 + 1) * 1000}.{n % 100:02d}"
            rows.append((seq[account], code, quantity, cost, quantity, f"{(n % 89 + 1) * 10}.5"))
        if len(rows) >= 50000:
            db.executemany("INSERT INTO inventory_summaries (account, asset_code, total_quantity, total_cost,"
                           " quantity_with_basis, average_unit_cost) VALUES (?, ?, ?, ?, ?, ?)", rows)
            rows = []
    db.executemany("INSERT INTO inventory_summaries (account, asset_code, total_quantity, total_cost,"
                           " quantity_with_basis, average_unit_cost) VALUES (?, ?, ?, ?, ?, ?)", rows)


def main():
    path, tenant, count, account_count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    began = time.monotonic()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("BEGIN IMMEDIATE")
    assets = asset_uuids(db, tenant)
    summaries_only = "--summaries-only" in sys.argv[5:]
    accounts = load_accounts(db, tenant, account_count, dirty=not summaries_only)
    if summaries_only:
        load_summaries(db, accounts)
    else:
        load_transactions(db, tenant, count, accounts, assets)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    print(json.dumps({"transactions": count, "accounts": account_count,
                      "seconds": round(time.monotonic() - began, 2)}))


if __name__ == "__main__":
    main()
