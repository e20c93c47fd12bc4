/* store/migrations: the schema, one script per version, applied in order.
 *
 * Design. PRAGMA user_version records how many scripts a database has run.
 * store_open may run in several processes at once against a new file (a
 * server and a worker started together), so the version is read inside the
 * same BEGIN IMMEDIATE transaction that applies the scripts: the first opener
 * takes the write lock and migrates, the others wait on the busy handler and
 * then find nothing left to do. DDL is transactional in SQLite, so a failed
 * script leaves the database at its previous version.
 *
 * Schema conventions (see GUIDE.md section 7):
 * - every table is STRICT, so a value of the wrong type is an error instead of
 *   being silently converted (decimals live in TEXT columns);
 * - WITHOUT ROWID where rows are found by their primary key and are small, so
 *   a lookup walks one b-tree instead of an index and then the table;
 * - tenants keeps its rowid because "creation order" is insertion order, which
 *   created_at cannot give when two tenants share a millisecond or the test
 *   clock moves backwards;
 * - times are INTEGER milliseconds since the epoch; NULL means "not yet" where
 *   the C struct uses 0.
 *
 * Trade-off: sqlite3_exec runs each script without caching statements. That
 * is fine: migrations run once per store_open, never on a request path. */
#include "store/migrations.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/errmsg.h"
#include "core/ids.h"

static const char *const MIGRATIONS[] = {
    /* v1: tenants, their credentials, operator rate limits, the settings
     * version, and filers (each tenant has exactly one default filer). */
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"

    "CREATE TABLE credentials ("
    "  client_id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),"
    "  scopes INTEGER NOT NULL CHECK (scopes >= 0),"
    "  created_at INTEGER NOT NULL,"
    "  revoked_at INTEGER,"
    "  last_used_at INTEGER"
    ") STRICT, WITHOUT ROWID;"
    /* Serves the foreign key check and per-tenant listings to come. */
    "CREATE INDEX credentials_tenant ON credentials (tenant_id);"
    /* Revocations are few; a partial index makes the revoked walk read only them. */
    "CREATE INDEX credentials_revoked ON credentials (client_id) WHERE revoked_at IS NOT NULL;"

    /* tenant_id '' applies a route's rule to every tenant; route '' is the
     * tenant's default bucket; both empty would mean nothing. Tenant existence
     * is checked in C because '' cannot reference tenants. */
    "CREATE TABLE rate_limits ("
    "  tenant_id TEXT NOT NULL,"
    "  route TEXT NOT NULL,"
    "  rate INTEGER NOT NULL CHECK (rate > 0),"
    "  burst INTEGER NOT NULL CHECK (burst > 0),"
    "  PRIMARY KEY (tenant_id, route),"
    "  CHECK (tenant_id <> '' OR route <> '')"
    ") STRICT, WITHOUT ROWID;"

    "CREATE TABLE settings ("
    "  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    "  version INTEGER NOT NULL"
    ") STRICT;"
    "INSERT INTO settings (singleton, version) VALUES (1, 0);"

    /* UNIQUE (tenant_id, id) also serves the foreign key and the ordered list. */
    "CREATE TABLE filers ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  id TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  is_default INTEGER NOT NULL CHECK (is_default IN (0, 1)),"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, id)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE UNIQUE INDEX filers_one_default ON filers (tenant_id) WHERE is_default = 1;",

    /* v2: the tenant records (account owners, accounts, assets, filers' TINs)
     * and the transactions that reference accounts and assets.
     * TINs are stored only sealed (AES-256-GCM, see core/tin.h).
     * References are service uuids; caller ids are unique per tenant. */
    "ALTER TABLE filers ADD COLUMN tin_sealed BLOB;"

    "CREATE TABLE account_owners ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  id TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  account_owner_type TEXT NOT NULL CHECK (account_owner_type IN ('individual', 'entity')),"
    "  tax_country_code TEXT,"
    "  tin_sealed BLOB,"
    "  tin_type TEXT,"
    "  birth_date TEXT,"
    "  email TEXT,"
    "  address_line1 TEXT,"
    "  address_line2 TEXT,"
    "  address_city TEXT,"
    "  address_state TEXT,"
    "  address_postal_code TEXT,"
    "  address_country_code TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, id)"
    ") STRICT, WITHOUT ROWID;"

    "CREATE TABLE accounts ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  id TEXT NOT NULL,"
    "  owner_uuid TEXT NOT NULL REFERENCES account_owners(uuid),"
    "  filer_uuid TEXT NOT NULL REFERENCES filers(uuid),"
    "  name TEXT,"
    "  cost_basis_method TEXT NOT NULL CHECK (cost_basis_method IN ('FIFO', 'HIFO', 'AUSTRIA')),"
    "  austria_tax_year INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, id),"
    "  CHECK ((cost_basis_method = 'AUSTRIA') = (austria_tax_year IS NOT NULL))"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX accounts_owner ON accounts (owner_uuid);"
    "CREATE INDEX accounts_filer ON accounts (filer_uuid);"

    /* An asset's code and its name are each unique within a tenant. */
    "CREATE TABLE assets ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  code TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  type TEXT NOT NULL,"
    "  decimals INTEGER CHECK (decimals BETWEEN 0 AND 36),"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, code),"
    "  UNIQUE (tenant_id, name)"
    ") STRICT, WITHOUT ROWID;"
    /* USD exists for every tenant: give the tenants made before v2 theirs. */
    "INSERT INTO assets (uuid, tenant_id, code, name, type, decimals, created_at)"
    "  SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'"
    "         || substr(lower(hex(randomblob(2))), 2) || '-'"
    "         || substr('89ab', 1 + abs(random() % 4), 1) || substr(lower(hex(randomblob(2))), 2)"
    "         || '-' || lower(hex(randomblob(6))),"
    "         id, 'USD', 'US Dollar', 'fiat', 2, created_at FROM tenants;"

    /* A transaction as the caller sent it (body: its canonical JSON), keyed
     * by the caller's id within the tenant; the assets it mentions are
     * listed so that deleting a referenced asset can be refused. */
    "CREATE TABLE transactions ("
    "  uuid TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  id TEXT NOT NULL,"
    "  account_uuid TEXT NOT NULL REFERENCES accounts(uuid),"
    "  datetime INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  subtype TEXT,"
    "  body TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, id)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX transactions_account ON transactions (account_uuid, datetime);"
    "CREATE TABLE transaction_assets ("
    "  transaction_uuid TEXT NOT NULL REFERENCES transactions(uuid) ON DELETE CASCADE,"
    "  asset_uuid TEXT NOT NULL REFERENCES assets(uuid),"
    "  PRIMARY KEY (transaction_uuid, asset_uuid)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX transaction_assets_asset ON transaction_assets (asset_uuid);",

    /* v3: what the inventory engine reads and writes, and the event outbox.
     * A transaction's line items are kept normalized (kind 0 sent, 1 received,
     * 2 fees) so recalculation reads them without parsing JSON. An account's
     * dirty_from is the watermark: the earliest datetime a write affected
     * since its inventory was last computed (NULL: up to date);
     * inventory_version counts writes so a recalculation only clears the
     * watermark if no write happened meanwhile. */
    "CREATE TABLE transaction_lines ("
    "  transaction_uuid TEXT NOT NULL REFERENCES transactions(uuid) ON DELETE CASCADE,"
    "  kind INTEGER NOT NULL CHECK (kind IN (0, 1, 2)),"
    "  idx INTEGER NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  amount TEXT NOT NULL,"
    "  usd_rate TEXT,"
    "  PRIMARY KEY (transaction_uuid, kind, idx)"
    ") STRICT, WITHOUT ROWID;"
    "ALTER TABLE accounts ADD COLUMN dirty_from INTEGER;"
    "ALTER TABLE accounts ADD COLUMN inventory_version INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX accounts_dirty ON accounts (tenant_id) WHERE dirty_from IS NOT NULL;"

    "CREATE TABLE inventory_summaries ("
    "  account_uuid TEXT NOT NULL REFERENCES accounts(uuid),"
    "  asset_code TEXT NOT NULL,"
    "  total_quantity TEXT NOT NULL,"
    "  total_cost TEXT NOT NULL,"
    "  quantity_with_basis TEXT NOT NULL,"
    "  average_unit_cost TEXT,"
    "  PRIMARY KEY (account_uuid, asset_code)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE TABLE inventory_lots ("
    "  account_uuid TEXT NOT NULL REFERENCES accounts(uuid),"
    "  asset_code TEXT NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  transaction_id TEXT NOT NULL,"
    "  acquired_at INTEGER NOT NULL,"
    "  quantity TEXT NOT NULL,"
    "  cost TEXT,"
    "  PRIMARY KEY (account_uuid, asset_code, seq)"
    ") STRICT, WITHOUT ROWID;"
    /* Every relief of a lot (disposal, transfer out, Austrian carry-over). */
    "CREATE TABLE inventory_reliefs ("
    "  account_uuid TEXT NOT NULL REFERENCES accounts(uuid),"
    "  seq INTEGER NOT NULL,"
    "  transaction_id TEXT NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('disposal', 'transfer', 'carry')),"
    "  datetime INTEGER NOT NULL,"
    "  lot_transaction_id TEXT,"
    "  acquired_at INTEGER,"
    "  quantity TEXT NOT NULL,"
    "  cost TEXT,"
    "  proceeds TEXT,"
    "  term TEXT CHECK (term IN ('short', 'long')),"
    "  PRIMARY KEY (account_uuid, seq)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX inventory_reliefs_tx ON inventory_reliefs (account_uuid, transaction_id);"

    /* The outbox. An event row is written in the same transaction as the
     * change that causes it. INVENTORY_UPDATE keeps its range in columns so
     * an event not yet claimed for delivery can be widened to cover a further
     * change of the same account; other types keep their fields in payload.
     * from_tx / latest_tx are NULL when a deletion is part of the range. */
    "CREATE TABLE events ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  type TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  claimed_at INTEGER,"
    "  payload TEXT,"
    "  account_uuid TEXT,"
    "  account_id TEXT,"
    "  from_ms INTEGER,"
    "  from_tx TEXT,"
    "  latest_ms INTEGER,"
    "  latest_tx TEXT,"
    "  has_ids INTEGER"
    ") STRICT;"
    "CREATE INDEX events_open_inventory ON events (account_uuid)"
    "  WHERE claimed_at IS NULL AND type = 'INVENTORY_UPDATE';"
    "CREATE INDEX events_created ON events (created_at);",

    /* v4: inventory-summary reports. A report is claimed with a lease
     * (claimed_by, lease_until); expired_leases counts leases that ran out, so
     * a report that crashes its worker is failed after a bound instead of
     * cycling forever. The file lives in the database itself, in chunks,
     * so every process that shares the database can serve it and it is
     * deleted with the report. test_directive is set only with --test-hooks. */
    "CREATE TABLE reports ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'completed', 'failed')),"
    "  format TEXT NOT NULL CHECK (format IN ('csv', 'jsonl')),"
    "  account_ids TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  claimed_by TEXT,"
    "  lease_until INTEGER,"
    "  expired_leases INTEGER NOT NULL DEFAULT 0,"
    "  started_at INTEGER,"
    "  finished_at INTEGER,"
    "  metadata TEXT,"
    "  error_code TEXT,"
    "  error_message TEXT,"
    "  row_count INTEGER,"
    "  size_bytes INTEGER,"
    "  test_directive TEXT"
    ") STRICT;"
    "CREATE INDEX reports_work ON reports (status, lease_until);"
    "CREATE INDEX reports_expiry ON reports (expires_at);"
    "CREATE TABLE report_chunks ("
    "  report_id TEXT NOT NULL REFERENCES reports(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  data BLOB NOT NULL,"
    "  PRIMARY KEY (report_id, seq)"
    ") STRICT, WITHOUT ROWID;",

    /* v5: webhook subscriptions (the operator's), their signing secrets
     * (sealed: they must be recoverable to sign), and deliveries: one row per
     * (event, subscription), written in the same transaction as the event.
     * A subscription is served by one dispatcher at a time (lease_owner,
     * lease_until) so its rate holds across processes. */
    "CREATE TABLE subscriptions ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  url TEXT NOT NULL,"
    "  events TEXT NOT NULL,"
    "  rate_limit INTEGER NOT NULL CHECK (rate_limit > 0),"
    "  retry_attempts INTEGER NOT NULL CHECK (retry_attempts >= 0),"
    "  retry_window_s INTEGER NOT NULL CHECK (retry_window_s > 0),"
    "  timeout_s INTEGER NOT NULL CHECK (timeout_s > 0),"
    "  egress_address TEXT,"
    "  auth_mode TEXT NOT NULL CHECK (auth_mode IN ('source_marker', 'basic')),"
    "  basic_user TEXT,"
    "  basic_password_sealed BLOB,"
    "  state TEXT NOT NULL CHECK (state IN ('active', 'deauthorized')),"
    "  deauthorized_at INTEGER,"
    "  lease_owner TEXT,"
    "  lease_until INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX subscriptions_tenant ON subscriptions (tenant_id);"
    "CREATE TABLE subscription_secrets ("
    "  subscription_id TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  secret_sealed BLOB NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (subscription_id, seq)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE TABLE deliveries ("
    "  id TEXT PRIMARY KEY,"
    "  subscription_id TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,"
    "  event_id TEXT NOT NULL REFERENCES events(id),"
    "  trace_id TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('pending', 'held', 'delivered', 'failed')),"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  first_attempt_at INTEGER,"
    "  window_ends_at INTEGER,"
    "  next_attempt_at INTEGER NOT NULL,"
    "  last_status INTEGER,"
    "  last_error TEXT,"
    "  last_attempt_at INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  delivered_at INTEGER"
    ") STRICT;"
    "CREATE INDEX deliveries_due ON deliveries (subscription_id, state, next_attempt_at);"
    "CREATE INDEX deliveries_event ON deliveries (event_id);",

    /* v6: the rest of the event catalog. Each section belongs to one module;
     * every event they raise goes through the events table above. */

    /* -- TIN checks (src/tincheck/, store/tinchecks.c): one queue for the
     * real-time matching requests, the owners' TINs and the W-9s' TINs. A
     * check is claimed with a lease; its result and its event are written
     * in one transaction. */
    "CREATE TABLE tin_checks ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  kind TEXT NOT NULL CHECK (kind IN ('rttm', 'account_owner', 'tax_documentation')),"
    "  subject_id TEXT,"
    "  owner_uuid TEXT,"
    "  name TEXT NOT NULL,"
    "  tin_sealed BLOB NOT NULL,"
    "  tin_type TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  validated_at INTEGER,"
    "  claimed_by TEXT,"
    "  lease_until INTEGER"
    ") STRICT;"
    "CREATE INDEX tin_checks_pending ON tin_checks (created_at) WHERE validated_at IS NULL;"
    /* a new check of a subject supersedes its unfinished ones */
    "CREATE INDEX tin_checks_subject ON tin_checks (tenant_id, kind, subject_id)"
    " WHERE validated_at IS NULL;"
    /* -- end TIN checks */

    /* -- tax documentation (src/taxdocs/, store/taxdocs.c) */
    /* Every submission is kept in tax_documents (the document itself sealed
     * as a whole, the W-9 TIN sealed on its own, the derived state in
     * columns); tax_documentation_current names each owner's current
     * submission per object, so "the latest" is one row, not a max over ties
     * in time. */
    "CREATE TABLE tax_documents ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  owner_uuid TEXT NOT NULL REFERENCES account_owners(uuid),"
    "  document_type TEXT NOT NULL CHECK (document_type IN"
    "    ('W-9', 'W-8BEN', 'W-8BEN-E', 'DPS', 'SELF_CERTIFICATION')),"
    "  document_sealed BLOB NOT NULL,"
    "  tin_sealed BLOB,"
    "  data_collection_status TEXT NOT NULL,"
    "  needs_resubmission INTEGER NOT NULL CHECK (needs_resubmission IN (0, 1)),"
    "  tax_documentation_status TEXT,"
    "  issues TEXT,"
    "  tin_status TEXT,"
    "  tin_validated_at INTEGER,"
    "  expiration_date TEXT,"
    "  treaty_claim_status TEXT,"
    "  vat_status TEXT,"
    "  vat_validated_at INTEGER,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX tax_documents_owner ON tax_documents (owner_uuid);"
    "CREATE TABLE tax_documentation_current ("
    "  owner_uuid TEXT NOT NULL REFERENCES account_owners(uuid),"
    "  object TEXT NOT NULL CHECK (object IN"
    "    ('w_form_questionnaire', 'dps_questionnaire', 'self_certification')),"
    "  document_id TEXT NOT NULL REFERENCES tax_documents(id),"
    "  PRIMARY KEY (owner_uuid, object)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX tax_documentation_current_document ON tax_documentation_current (document_id);"
    /* -- end tax documentation */

    /* -- tax forms (src/forms/, store/forms.c). One live form per (account,
     * form type, tax year): the partial unique index leaves Deleted forms out,
     * so a deleted form stays as history and generating again inserts a new
     * row with a new id. content is the form's JSON, written at generation
     * and never changed once Filed. */
    "CREATE TABLE tax_forms ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  account_uuid TEXT NOT NULL REFERENCES accounts(uuid),"
    "  form_type TEXT NOT NULL,"
    "  tax_year INTEGER NOT NULL,"
    "  status TEXT NOT NULL CHECK (status IN ('Generated', 'Filed', 'Deleted')),"
    "  content TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  generated_at INTEGER NOT NULL,"
    "  filed_at INTEGER,"
    "  deleted_at INTEGER,"
    "  updated_at INTEGER NOT NULL,"
    "  CHECK ((status = 'Filed') = (filed_at IS NOT NULL)),"
    "  CHECK ((status = 'Deleted') = (deleted_at IS NOT NULL))"
    ") STRICT;"
    "CREATE UNIQUE INDEX tax_forms_live ON tax_forms (account_uuid, tax_year, form_type)"
    "  WHERE status <> 'Deleted';"
    /* -- end tax forms */
    "",

    /* v7: the inventory as a ledger a recalculation can resume from its
     * watermark (src/inventory/recalc.c). inventory_lots keeps every lot
     * ever acquired in acquisition order (seq: its index within the asset;
     * quantity '0' once fully relieved) with what it was acquired with
     * (orig_*); a relief names the lot it took from (lot_seq); a summary
     * says when its asset was first touched (since). accounts.inventory_basis
     * is the method the stored rows were computed with: NULL (rows written
     * before v7, or none) means they cannot seed a recalculation, which then
     * starts from the account's first transaction. */
    "ALTER TABLE accounts ADD COLUMN inventory_basis TEXT;"
    "ALTER TABLE inventory_lots ADD COLUMN orig_quantity TEXT;"
    "ALTER TABLE inventory_lots ADD COLUMN orig_cost TEXT;"
    "ALTER TABLE inventory_reliefs ADD COLUMN lot_seq INTEGER;"
    "ALTER TABLE inventory_summaries ADD COLUMN since INTEGER;"
    "CREATE INDEX inventory_lots_acquired ON inventory_lots (account_uuid, acquired_at);"
    "CREATE INDEX inventory_reliefs_datetime ON inventory_reliefs (account_uuid, datetime);",

    /* v8: indexes the delivery path only appends to or deletes from in
     * order. Dispatching an event used to move an entry of events keyed by
     * a random account uuid and a deliveries entry per state, so each
     * commit of a batch wrote about a page per delivery. Now an account's
     * open INVENTORY_UPDATE event is found as its newest one (events_account
     * never changes after the insert), the open events of a tenant are
     * listed by tenant and rowid (claimed roughly in rowid order), and only
     * pending deliveries are indexed by due time; the other states have
     * small partial indexes for the operator's commands. */
    "DROP INDEX events_open_inventory;"
    "CREATE INDEX events_account ON events (account_uuid) WHERE account_uuid IS NOT NULL;"
    "CREATE INDEX events_open ON events (tenant_id)"
    "  WHERE claimed_at IS NULL AND type = 'INVENTORY_UPDATE';"
    "DROP INDEX deliveries_due;"
    "CREATE INDEX deliveries_due ON deliveries (subscription_id, next_attempt_at)"
    "  WHERE state = 'pending';"
    "CREATE INDEX deliveries_subscription ON deliveries (subscription_id, created_at);"
    "CREATE INDEX deliveries_held ON deliveries (subscription_id) WHERE state = 'held';"
    "CREATE INDEX deliveries_failed ON deliveries (subscription_id, created_at)"
    "  WHERE state = 'failed';",

    /* v9: deliveries rebuilt with its state CHECK spelled as comparisons.
     * SQLite checks `x IN (list)` of three or more constants through a
     * temporary b-tree it opens at every row written (about a third of the
     * cost of recording an outcome); two comparisons or an OR of equalities
     * need none. The data and indexes are unchanged; nothing refers to
     * deliveries, so it can be dropped and renamed inside the migration's
     * transaction. */
    "CREATE TABLE deliveries_v9 ("
    "  id TEXT PRIMARY KEY,"
    "  subscription_id TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,"
    "  event_id TEXT NOT NULL REFERENCES events(id),"
    "  trace_id TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'held' OR state = 'delivered'"
    "    OR state = 'failed'),"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  first_attempt_at INTEGER,"
    "  window_ends_at INTEGER,"
    "  next_attempt_at INTEGER NOT NULL,"
    "  last_status INTEGER,"
    "  last_error TEXT,"
    "  last_attempt_at INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  delivered_at INTEGER"
    ") STRICT;"
    "INSERT INTO deliveries_v9 (rowid, id, subscription_id, event_id, trace_id, state, attempts,"
    "  first_attempt_at, window_ends_at, next_attempt_at, last_status, last_error,"
    "  last_attempt_at, created_at, delivered_at)"
    "  SELECT rowid, id, subscription_id, event_id, trace_id, state, attempts,"
    "  first_attempt_at, window_ends_at, next_attempt_at, last_status, last_error,"
    "  last_attempt_at, created_at, delivered_at FROM deliveries;"
    "DROP TABLE deliveries;"
    "ALTER TABLE deliveries_v9 RENAME TO deliveries;"
    "CREATE INDEX deliveries_event ON deliveries (event_id);"
    "CREATE INDEX deliveries_due ON deliveries (subscription_id, next_attempt_at)"
    "  WHERE state = 'pending';"
    "CREATE INDEX deliveries_subscription ON deliveries (subscription_id, created_at);"
    "CREATE INDEX deliveries_held ON deliveries (subscription_id) WHERE state = 'held';"
    "CREATE INDEX deliveries_failed ON deliveries (subscription_id, created_at)"
    "  WHERE state = 'failed';",

    /* v10: transactions laid out for the write path (issue "Ingest at
     * exchange scale"; docs/decisions.md, "The transactions layout").
     * - An account gets an internal integer key, seq, in creation order.
     * - transactions is a rowid table: seq (the rowid) is its internal key,
     *   so rows are appended in arrival order instead of being placed by a
     *   random text uuid; the public uuid is kept as 16 bytes and never
     *   indexed (nothing looks a transaction up by it). tenant is the
     *   tenants rowid of the account's tenant (the account's foreign key
     *   already proves it exists).
     * - The line items move into the row as one compact text (lines; see
     *   store/transactions.c, "The lines column"): a separate table keyed
     *   by a random uuid took a B-tree write per line.
     * - transactions_ledger is the recalculation's one index: an account's
     *   rows in datetime order with everything the engine reads, so it
     *   never visits the table (whose rows carry the ~350-byte body).
     * - transaction_assets gives way to a per-asset count of the
     *   transactions that name it (assets.tx_refs): the only question ever
     *   asked of the links was "is this asset referenced", and a count in
     *   the asset's row answers it without a row per (transaction, asset). */
    "ALTER TABLE accounts ADD COLUMN seq INTEGER;"
    "UPDATE accounts SET seq = r.n FROM (SELECT uuid, row_number() OVER"
    "  (ORDER BY created_at, uuid) AS n FROM accounts) r WHERE r.uuid = accounts.uuid;"
    "CREATE UNIQUE INDEX accounts_seq ON accounts (seq);"
    /* Every writer of accounts gets a seq without naming it (the column
     * cannot be NOT NULL: ALTER TABLE adds no such column to a full table). */
    "CREATE TRIGGER accounts_seq_assign AFTER INSERT ON accounts WHEN NEW.seq IS NULL BEGIN"
    "  UPDATE accounts SET seq = (SELECT coalesce(max(seq), 0) + 1 FROM accounts)"
    "  WHERE uuid = NEW.uuid;"
    " END;"

    "ALTER TABLE assets ADD COLUMN tx_refs INTEGER NOT NULL DEFAULT 0 CHECK (tx_refs >= 0);"
    "UPDATE assets SET tx_refs = (SELECT count(*) FROM transaction_assets l"
    "  WHERE l.asset_uuid = assets.uuid);"

    "CREATE TABLE transactions_v10 ("
    "  seq INTEGER PRIMARY KEY,"
    "  tenant INTEGER NOT NULL,"
    "  account INTEGER NOT NULL REFERENCES accounts(seq),"
    "  datetime INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  id TEXT NOT NULL,"
    "  lines TEXT NOT NULL,"
    "  subtype TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  uuid BLOB NOT NULL CHECK (length(uuid) = 16),"
    "  body TEXT NOT NULL"
    ") STRICT;"
    "INSERT INTO transactions_v10 (tenant, account, datetime, type, id, lines, subtype,"
    "  created_at, updated_at, uuid, body)"
    "  SELECT n.rowid, a.seq, t.datetime, t.type, t.id,"
    "   coalesce((SELECT group_concat(x, ';') FROM (SELECT CASE l.kind WHEN 0 THEN 's'"
    "     WHEN 1 THEN 'r' ELSE 'f' END || l.asset_code || ' ' || l.amount"
    "     || coalesce('@' || l.usd_rate, '') AS x FROM transaction_lines l"
    "     WHERE l.transaction_uuid = t.uuid ORDER BY l.kind, l.idx)), ''),"
    "   t.subtype, t.created_at, t.updated_at, taxd_uuid_blob(t.uuid), t.body"
    "  FROM transactions t JOIN accounts a ON a.uuid = t.account_uuid"
    "  JOIN tenants n ON n.id = t.tenant_id ORDER BY t.created_at, t.uuid;"
    "DROP TABLE transaction_assets;"
    "DROP TABLE transaction_lines;"
    "DROP TABLE transactions;"
    "ALTER TABLE transactions_v10 RENAME TO transactions;"
    "CREATE UNIQUE INDEX transactions_id ON transactions (tenant, id);"
    "CREATE INDEX transactions_ledger ON transactions (account, datetime, type, id, lines);"

    /* The inventory (summaries, lots, reliefs) keyed by the account's
     * integer seq instead of its random text uuid: a recalculation writes
     * one account's rows together, and now they sit in the order accounts
     * were created, with keys 30 bytes shorter. Rows are copied as they are.
     * No foreign key to accounts: the rows are derived data that only a
     * recalculation writes, for an account it has just read under the
     * account's inventory_version, and the check of every row cost 0.55 s
     * of a 1,000,000-transaction recalculation (about 13%). */
    "CREATE TABLE inventory_summaries_v10 ("
    "  account INTEGER NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  total_quantity TEXT NOT NULL,"
    "  total_cost TEXT NOT NULL,"
    "  quantity_with_basis TEXT NOT NULL,"
    "  average_unit_cost TEXT,"
    "  since INTEGER,"
    "  PRIMARY KEY (account, asset_code)"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO inventory_summaries_v10 SELECT a.seq, s.asset_code, s.total_quantity,"
    "  s.total_cost, s.quantity_with_basis, s.average_unit_cost, s.since"
    "  FROM inventory_summaries s JOIN accounts a ON a.uuid = s.account_uuid;"
    "DROP TABLE inventory_summaries;"
    "ALTER TABLE inventory_summaries_v10 RENAME TO inventory_summaries;"

    "CREATE TABLE inventory_lots_v10 ("
    "  account INTEGER NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  transaction_id TEXT NOT NULL,"
    "  acquired_at INTEGER NOT NULL,"
    "  quantity TEXT NOT NULL,"
    "  cost TEXT,"
    "  orig_quantity TEXT,"
    "  orig_cost TEXT,"
    "  PRIMARY KEY (account, asset_code, seq)"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO inventory_lots_v10 SELECT a.seq, l.asset_code, l.seq, l.transaction_id,"
    "  l.acquired_at, l.quantity, l.cost, l.orig_quantity, l.orig_cost"
    "  FROM inventory_lots l JOIN accounts a ON a.uuid = l.account_uuid;"
    "DROP TABLE inventory_lots;"
    "ALTER TABLE inventory_lots_v10 RENAME TO inventory_lots;"
    "CREATE INDEX inventory_lots_acquired ON inventory_lots (account, acquired_at);"

    "CREATE TABLE inventory_reliefs_v10 ("
    "  account INTEGER NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  transaction_id TEXT NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind = 'disposal' OR kind = 'transfer' OR kind = 'carry'),"
    "  datetime INTEGER NOT NULL,"
    "  lot_transaction_id TEXT,"
    "  acquired_at INTEGER,"
    "  quantity TEXT NOT NULL,"
    "  cost TEXT,"
    "  proceeds TEXT,"
    "  term TEXT CHECK (term = 'short' OR term = 'long'),"
    "  lot_seq INTEGER,"
    "  PRIMARY KEY (account, seq)"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO inventory_reliefs_v10 SELECT a.seq, r.seq, r.transaction_id, r.asset_code,"
    "  r.kind, r.datetime, r.lot_transaction_id, r.acquired_at, r.quantity, r.cost, r.proceeds,"
    "  r.term, r.lot_seq FROM inventory_reliefs r JOIN accounts a ON a.uuid = r.account_uuid;"
    "DROP TABLE inventory_reliefs;"
    "ALTER TABLE inventory_reliefs_v10 RENAME TO inventory_reliefs;"
    "CREATE INDEX inventory_reliefs_tx ON inventory_reliefs (account, transaction_id);"
    "CREATE INDEX inventory_reliefs_datetime ON inventory_reliefs (account, datetime);",

    /* v11: the ids of deleted tenants, so that every running process refuses
     * their tokens from its settings snapshot (a token names its tenant, and
     * tokens are not stored: without the id nothing would refuse them until
     * they expire); and the one row GET /readyz rewrites to prove that a
     * commit writes again (a row rewritten with the bytes it holds is not
     * written at all by SQLite, so the probe stores the time). */
    "CREATE TABLE deleted_tenants ("
    "  id TEXT PRIMARY KEY,"
    "  deleted_at INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "CREATE TABLE write_probe ("
    "  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    "  at INTEGER NOT NULL"
    ") STRICT;",

    /* v12: a report's requested ids are stored once, in a row of their own
     * that is written at the trigger and never rewritten (a report's row is
     * updated at every claim, renewal and completion, and SQLite rewrites a
     * whole row, 13 MB of ids included, on each update). The skipped ids are
     * no second copy: a bitmap over the positions of the requested array
     * (reports.skipped, fixed at completion) marks each one's first
     * appearance. Reports completed before keep their skipped ids in their
     * metadata, as they were. reports_active counts a tenant's reports
     * pending or processing for the trigger's limit (docs/decisions.md,
     * "Report triggers are bounded"). */
    "CREATE TABLE report_ids ("
    "  report_id TEXT PRIMARY KEY REFERENCES reports(id) ON DELETE CASCADE,"
    "  requested TEXT NOT NULL"
    ") STRICT;"
    "INSERT INTO report_ids (report_id, requested)"
    "  SELECT id, account_ids FROM reports WHERE account_ids IS NOT NULL;"
    "ALTER TABLE reports DROP COLUMN account_ids;"
    "ALTER TABLE reports ADD COLUMN skipped BLOB;"
    "CREATE INDEX reports_active ON reports (tenant_id)"
    "  WHERE status IN ('pending', 'processing');",

    /* v13: realized gains (issue 16).
     *
     * The ledger learns what the gains rows need: each lot's origin
     * ('acquired' in the account by a trade or income, 'transfer' a deposit
     * without basis, 'provided' a deposit lot with a customer-provided basis)
     * and the datetime of the transaction that entered it (entered_at; a
     * provided lot's acquired_at is its original acquisition, earlier than
     * its deposit, so the recalculation splits the ledger on entered_at);
     * each relief the method that chose its lot, the origin of that lot and,
     * for a disposal, its share of the transaction costs. Ledgers computed
     * before v13 follow the old rules (instants for the holding period, fees
     * of an exchange in the received lot's cost, no rounding to cents), so
     * every account is recomputed from its first transaction at its next
     * read or bulk recalculation: no basis, dirty from the first instant.
     *
     * disposition_methods: an account's standing orders (FIFO, HIFO, LIFO,
     * LOFO), each in force from effective_from; recorded_elsewhere marks one
     * dated before its creation because the platform kept it before taxd.
     * provided_lots: the customer-provided lots of a deposit, per asset,
     * keyed by the transaction's seq (an update keeps the seq; an edit of the
     * deposit deletes its lots in the same write).
     * tax_forms.source_version: the account's inventory_version the content
     * was computed from; correction_needed: a Filed form whose account
     * changed since (never rewritten: listed for a corrected form).
     * reports.kind and tax_year: the gains report beside the
     * inventory-summary one. */
    "ALTER TABLE inventory_lots ADD COLUMN origin TEXT"
    "  CHECK (origin IN ('acquired', 'transfer', 'provided'));"
    "ALTER TABLE inventory_lots ADD COLUMN entered_at INTEGER;"
    "CREATE INDEX inventory_lots_entered ON inventory_lots (account, entered_at);"
    /* the ledger is split on entered_at now: the index on acquired_at only
     * cost every save a second index to keep */
    "DROP INDEX inventory_lots_acquired;"
    "ALTER TABLE inventory_reliefs ADD COLUMN method TEXT;"
    "ALTER TABLE inventory_reliefs ADD COLUMN lot_origin TEXT"
    "  CHECK (lot_origin IN ('acquired', 'transfer', 'provided'));"
    "ALTER TABLE inventory_reliefs ADD COLUMN transaction_costs TEXT;"
    "UPDATE accounts SET inventory_basis = NULL,"
    "  dirty_from = -62135596800000, inventory_version = inventory_version + 1;"

    "CREATE TABLE disposition_methods ("
    "  uuid TEXT PRIMARY KEY,"
    "  account INTEGER NOT NULL REFERENCES accounts(seq),"
    "  method TEXT NOT NULL CHECK (method IN ('FIFO', 'HIFO', 'LIFO', 'LOFO')),"
    "  effective_from INTEGER NOT NULL,"
    "  recorded_elsewhere INTEGER NOT NULL DEFAULT 0 CHECK (recorded_elsewhere IN (0, 1)),"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE (account, effective_from)"
    ") STRICT;"

    "CREATE TABLE provided_lots ("
    "  transaction_seq INTEGER NOT NULL REFERENCES transactions(seq) ON DELETE CASCADE,"
    "  account INTEGER NOT NULL,"
    "  asset_code TEXT NOT NULL,"
    "  idx INTEGER NOT NULL,"
    "  quantity TEXT NOT NULL,"
    "  cost_basis TEXT NOT NULL,"
    "  acquired_at INTEGER NOT NULL,"
    "  PRIMARY KEY (transaction_seq, asset_code, idx)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX provided_lots_account ON provided_lots (account);"

    "ALTER TABLE tax_forms ADD COLUMN source_version INTEGER;"
    "ALTER TABLE tax_forms ADD COLUMN correction_needed INTEGER NOT NULL DEFAULT 0;"

    "ALTER TABLE reports ADD COLUMN kind TEXT NOT NULL DEFAULT 'inventory-summary'"
    "  CHECK (kind IN ('inventory-summary', 'gains'));"
    "ALTER TABLE reports ADD COLUMN tax_year INTEGER;",

    /* v14: many nodes on one database (issue 17).
     * key_fingerprints: a one-way fingerprint of each fixed key file the
     * first node started with, so a node started with other key files is
     * refused before it could seal or sign what the others cannot read.
     * rate_buckets: the shared token buckets of the rate limits that hold
     * across nodes (level in thousandths of a token, refilled from at). */
    "CREATE TABLE key_fingerprints ("
    "  name TEXT PRIMARY KEY,"
    "  fingerprint TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE rate_buckets ("
    "  key TEXT PRIMARY KEY,"
    "  level INTEGER NOT NULL,"
    "  at INTEGER NOT NULL"
    ") STRICT;",

    /* v15: Taxbit's model beside taxd's (issue 19).
     * tax_documents says which JSON document_sealed holds (model: taxd's
     * native document or Taxbit's COMPREHENSIVE one), where it came from
     * (source: api, sdk, tax-documentation-data), the questionnaire of a
     * COMPREHENSIVE submission, a W-9's TIN type and a DPS's VAT note, so
     * the answers built from them need not open the sealed document. Rows of
     * earlier versions keep every value: model 'native', the rest NULL
     * (their TIN type stays inside the sealed document, which SQL cannot
     * open to backfill).
     * tax_documentation_files: one row per document (PDF) made of a
     * submission; no bytes, which are drawn again from the sealed submission
     * at each download, so no TIN is ever stored in clear. Indexed on each
     * foreign key (a parent's delete, the tenant purge). */
    "ALTER TABLE tax_documents ADD COLUMN model TEXT NOT NULL DEFAULT 'native'"
    "  CHECK (model IN ('native', 'comprehensive'));"
    "ALTER TABLE tax_documents ADD COLUMN source TEXT;"
    "ALTER TABLE tax_documents ADD COLUMN questionnaire TEXT"
    "  CHECK (questionnaire IN ('DPS', 'W-FORM'));"
    "ALTER TABLE tax_documents ADD COLUMN tin_type TEXT;"
    "ALTER TABLE tax_documents ADD COLUMN vat_note TEXT;"
    "CREATE TABLE tax_documentation_files ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  owner_uuid TEXT NOT NULL REFERENCES account_owners(uuid),"
    "  document_id TEXT NOT NULL REFERENCES tax_documents(id),"
    "  created_at INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX tax_documentation_files_tenant ON tax_documentation_files (tenant_id);"
    "CREATE INDEX tax_documentation_files_owner ON tax_documentation_files (owner_uuid);"
    "CREATE INDEX tax_documentation_files_document ON tax_documentation_files (document_id);",
};

#define MIGRATION_COUNT ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))

int store_migrations_latest(void)
{
    return MIGRATION_COUNT;
}

const char *store_migrations_script(int version)
{
    return version >= 1 && version <= MIGRATION_COUNT ? MIGRATIONS[version - 1] : NULL;
}

/* Runs sql; on failure sets *err naming the step. */
static bool migrations_exec(sqlite3 *db, const char *sql, const char *step, char **err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return true;
    errmsg_set(err, "schema migration (%s): %s", step,
                       msg != NULL ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return false;
}

static bool migrations_read_version(sqlite3 *db, int *version, char **err)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int(stmt, 0);
    else
        errmsg_set(err, "schema migration (read user_version): %s", sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW;
}

/* Everything between BEGIN IMMEDIATE and COMMIT. fail_on_purpose (the
 * test hook): every pending script runs, then the migration fails as one
 * failing at its last step would, and the caller rolls back. */
static bool migrations_apply_locked(sqlite3 *db, bool fail_on_purpose, char **err)
{
    int current = 0;
    if (!migrations_read_version(db, &current, err))
        return false;
    if (current > MIGRATION_COUNT) {
        errmsg_set(err, "database schema version %d is newer than this taxd (%d)",
                           current, MIGRATION_COUNT);
        return false;
    }
    if (current == MIGRATION_COUNT)
        return true;
    for (int v = current; v < MIGRATION_COUNT; v++) {
        char step[32];
        snprintf(step, sizeof step, "version %d", v + 1);
        if (!migrations_exec(db, MIGRATIONS[v], step, err))
            return false;
    }
    if (fail_on_purpose) {
        errmsg_set(err, "schema migration (version %d): failed on purpose (test hook)",
                   MIGRATION_COUNT);
        return false;
    }
    /* PRAGMA takes no bound parameters; the value is our own integer. */
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", MIGRATION_COUNT);
    return migrations_exec(db, sql, "set user_version", err);
}

/* taxd_uuid_blob(text): the 16 bytes of a stored uuid's text, for v10's
 * compact uuids (SQLite 3.40 has no unhex). NULL for text that is not a
 * uuid, so a NOT NULL column refuses it and the migration fails naming it. */
static void uuid_blob_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    uint8_t bytes[IDS_UUID_BYTES];
    const char *text = (const char *)sqlite3_value_text(argv[0]);
    if (text == NULL || !ids_uuid_parse(text, bytes)) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_blob(ctx, bytes, sizeof bytes, SQLITE_TRANSIENT);
}

bool store_migrations_apply(sqlite3 *db, bool fail_on_purpose, char **err)
{
    int rc = sqlite3_create_function(db, "taxd_uuid_blob", 1,
                                     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
                                     NULL, uuid_blob_fn, NULL, NULL);
    if (rc != SQLITE_OK) {
        errmsg_set(err, "schema migration (register functions): %s", sqlite3_errstr(rc));
        return false;
    }
    if (!migrations_exec(db, "BEGIN IMMEDIATE", "begin", err))
        return false;
    if (migrations_apply_locked(db, fail_on_purpose, err) &&
        migrations_exec(db, "COMMIT", "commit", err))
        return true;
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); /* the first error is the one reported */
    return false;
}
