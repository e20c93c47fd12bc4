#!/bin/sh
# recalc_gen: fills a fresh database with TX transactions over ACCOUNTS
# accounts, every account dirty from its first transaction, for the
# recalculation benchmark (bench/recalc.sh) and the before/after comparison
# (bench/recalc_compare.sh).
#
#   bench/recalc_gen.sh TAXD_BIN DB TX ACCOUNTS
#
# Prints the tenant id. The tenant is made by `taxd admin tenant create` (so
# the schema is the binary's own); the rows are then inserted by one SQL
# script (sqlite3), a million transactions in seconds, where the API or
# store_tx_upsert would take many minutes with an fsync per commit. The
# script writes what a recalculation reads and nothing else (no outbox
# events, no asset reference counts); bodies are short stand-ins. It writes
# the v10 layout (store/transactions.c): the line items as each row's lines
# text, the account and tenant by their integer keys.
#
# Transaction k (0..TX-1) goes to account k mod ACCOUNTS; its j = k div
# ACCOUNTS is its index within the account, its asset is one of five by j,
# and two transactions of an account share each datetime (ties, ordered by
# type then id) with 30 days between pairs, so holdings cross the one-year
# term. Per account the method is FIFO, HIFO or AUSTRIA by account index mod
# 3. With m = j + account index, by m: mostly buy trades (USD for the asset, with a USD rate), a sell
# trade every 4th (0.5 of the asset for USD), a deposit (no basis), income,
# a withdraw and a crypto-to-crypto trade now and then, and an asset fee on
# every 10th trade, so shortfalls, lots without basis and AUSTRIA
# carry-overs all occur.
set -eu
taxd=$1 db=$2 tx=$3 accounts=$4

rm -f "$db" "$db-wal" "$db-shm"
tenant=$("$taxd" admin --db "$db" tenant create --name recalc-bench |
    sed -n 's/.*"tenant_id":"\([^"]*\)".*/\1/p')
[ -n "$tenant" ] || { echo "recalc_gen: tenant create failed" >&2; exit 1; }

sqlite3 "$db" >/dev/null <<SQL
.bail on
PRAGMA foreign_keys = OFF;
PRAGMA synchronous = OFF;
BEGIN;
INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type, created_at, updated_at)
  VALUES ('00000000-0000-4000-8000-000000000001', '$tenant', 'owner', 'Owner', 'individual', 0, 0);
CREATE TEMP TABLE n(i INTEGER PRIMARY KEY);
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < max($tx, $accounts))
  INSERT INTO n SELECT i FROM c;
CREATE TEMP TABLE acct(i INTEGER PRIMARY KEY, uuid TEXT);
INSERT INTO acct SELECT i, lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
    || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-'
    || hex(randomblob(6))) FROM n WHERE i < $accounts;
INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, name, cost_basis_method,
                      austria_tax_year, created_at, updated_at, dirty_from, inventory_version)
  SELECT a.uuid, '$tenant', 'a' || a.i, '00000000-0000-4000-8000-000000000001',
         (SELECT uuid FROM filers WHERE tenant_id = '$tenant' AND is_default = 1),
         NULL, CASE a.i % 3 WHEN 0 THEN 'FIFO' WHEN 1 THEN 'HIFO' ELSE 'AUSTRIA' END,
         CASE a.i % 3 WHEN 2 THEN 2021 END, 0, 0, 1577836800000, 1
  FROM acct a;
INSERT OR IGNORE INTO assets (uuid, tenant_id, code, name, type, decimals, created_at)
  SELECT lower(hex(randomblob(16))), '$tenant', column1, column1, 'crypto', NULL, 0
  FROM (VALUES ('BTC'), ('ETH'), ('SOL'), ('ADA'), ('DOT'));
-- t: one row per transaction with what its lines need.
CREATE TEMP TABLE t(k INTEGER PRIMARY KEY, m INTEGER, uuid TEXT, acct TEXT, dt INTEGER, type TEXT,
                    asset TEXT, other TEXT, qty TEXT, rate TEXT, usd TEXT);
INSERT INTO t
  SELECT k, k / $accounts + k % $accounts, lower(hex(randomblob(16))), (SELECT uuid FROM acct WHERE acct.i = k % $accounts),
         1577836800000 + ((k / $accounts) / 2) * 2592000000 + (k % $accounts) * 1000,
         CASE WHEN (k / $accounts + k % $accounts) % 20 = 1 THEN 'deposit'
              WHEN (k / $accounts + k % $accounts) % 20 = 9 THEN 'withdraw'
              WHEN (k / $accounts + k % $accounts) % 20 = 13 THEN 'income' ELSE 'trade' END,
         CASE (k / $accounts) % 5 WHEN 0 THEN 'BTC' WHEN 1 THEN 'ETH' WHEN 2 THEN 'SOL'
              WHEN 3 THEN 'ADA' ELSE 'DOT' END,
         CASE (k / $accounts + 1) % 5 WHEN 0 THEN 'BTC' WHEN 1 THEN 'ETH' WHEN 2 THEN 'SOL'
              WHEN 3 THEN 'ADA' ELSE 'DOT' END,
         CASE WHEN k % 1000 = 0 THEN '1'
              ELSE rtrim(rtrim(printf('1.%03d', k % 1000), '0'), '.') END,
         printf('%d.25', 100 + k % 997), printf('%d.5', (100 + k % 997) * 2)
  FROM (SELECT i AS k FROM n WHERE i < $tx);
-- tl: the line items (kind 0 sent, 1 received, 2 fees), then written into each
-- transaction's lines text as store/transactions.c encodes it (schema v10)
CREATE TEMP TABLE tl(uuid TEXT, kind INTEGER, idx INTEGER, asset TEXT, amount TEXT, rate TEXT);
INSERT INTO tl (uuid, kind, idx, asset, amount, rate)
  SELECT uuid, 0, 0, 'USD', usd, NULL FROM t WHERE type = 'trade' AND m % 4 <> 3 AND m % 20 <> 17
  UNION ALL
  SELECT uuid, 1, 0, asset, qty, rate FROM t WHERE type = 'trade' AND m % 4 <> 3 AND m % 20 <> 17
  UNION ALL -- a sell
  SELECT uuid, 0, 0, asset, '0.5', rate FROM t WHERE type = 'trade' AND m % 4 = 3
  UNION ALL
  SELECT uuid, 1, 0, 'USD', printf('%d.125', (100 + k % 997) / 2), NULL FROM t
    WHERE type = 'trade' AND m % 4 = 3
  UNION ALL -- crypto to crypto (an AUSTRIA carry-over)
  SELECT uuid, 0, 0, other, '0.25', rate FROM t WHERE type = 'trade' AND m % 20 = 17
  UNION ALL
  SELECT uuid, 1, 0, asset, qty, NULL FROM t WHERE type = 'trade' AND m % 20 = 17
  UNION ALL -- a fee in the asset on every 10th trade
  SELECT uuid, 2, 0, asset, '0.001', rate FROM t WHERE type = 'trade' AND m % 10 = 2
  UNION ALL
  SELECT uuid, 1, 0, asset, qty, NULL FROM t WHERE type = 'deposit'
  UNION ALL
  SELECT uuid, 1, 0, asset, '0.3', rate FROM t WHERE type = 'income'
  UNION ALL
  SELECT uuid, 0, 0, asset, '0.25', NULL FROM t WHERE type = 'withdraw';
CREATE INDEX temp.tl_uuid ON tl (uuid, kind, idx);
INSERT INTO transactions (tenant, account, datetime, type, id, lines, subtype, created_at,
                          updated_at, uuid, body)
  SELECT (SELECT rowid FROM tenants WHERE id = '$tenant'),
         (SELECT seq FROM accounts WHERE uuid = t.acct), dt, type, 't' || k,
         coalesce((SELECT group_concat(x, ';') FROM (SELECT CASE l.kind WHEN 0 THEN 's'
             WHEN 1 THEN 'r' ELSE 'f' END || l.asset || ' ' || l.amount
             || coalesce('@' || l.rate, '') AS x FROM tl l WHERE l.uuid = t.uuid
             ORDER BY l.kind, l.idx)), ''),
         NULL, 0, 0, randomblob(16),
         printf('{"id":"t%d","account_id":"a%d","datetime":%d,"type":"%s","subtype":null,' ||
                '"sent":[],"received":[],"fees":[],"metadata":null}', k, k % $accounts, dt, type)
  FROM t ORDER BY k;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
echo "$tenant"
