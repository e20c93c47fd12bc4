"""The PostgreSQL schema is SQLite's (issue 17, item 1).

store_pg_schema_script() (src/store/schema_pg.c) creates on PostgreSQL the
schema a SQLite database has after every migration of src/store/migrations.c.
These tests compare the two catalogs, table by table: the columns in order
(name, nullability, type class, default, collation "C" for text), the primary
keys and unique constraints, the foreign keys with their ON DELETE, the number
of CHECK constraints, and every named index (its columns, uniqueness and the
columns and literals of its WHERE). The differences schema_pg.c documents are
listed here by name (EXPECTED_*), so any other difference fails.

They also run the advisory-locked migration (store_pg_migrate, through
build/pg/migrate_main): once on a new database, as a no-op on a current one,
from two processes released together (both succeed: one creates, the other
finds it done), its refusal of a newer schema version and of one older than
the first release's, and the upgrade in place of a database that the first
release with PostgreSQL (ed1151e, schema v14) made: it ends with the catalog
of a new database and keeps every row as it was.

Needs a PostgreSQL server: TAXD_TEST_PG is an admin URL
(postgresql://user:pw@127.0.0.1:PORT/postgres) allowed to create databases;
without it every test is skipped, saying so.
"""
import os
import json
import random
import re
import sqlite3
import subprocess
import time
import uuid

import pytest

from conftest import REPO, run_taxd

PG_ADMIN_URL = os.environ.get("TAXD_TEST_PG")
pytestmark = pytest.mark.skipif(
    not PG_ADMIN_URL,
    reason="TAXD_TEST_PG is not set (an admin URL of a PostgreSQL server, e.g. "
           "postgresql://postgres@127.0.0.1:55418/postgres)")

PRINT_SCHEMA = REPO / "build" / "pg" / "print_schema"
MIGRATE = REPO / "build" / "pg" / "migrate_main"
PSQL_TIMEOUT_S = 60

# Tables whose SQLite rowid the store uses (schema_pg.c, "rowid"): on
# PostgreSQL a last column rowid, NOT NULL, with a unique index <table>_rowid.
EXPECTED_ROWID_TABLES = {"tenants", "events", "deliveries"}
# Columns NOT NULL on PostgreSQL only (identities; SQLite's trigger fills it).
EXPECTED_NOT_NULL_ON_PG = {("accounts", "seq")}
# Index columns that PostgreSQL leaves out (B-tree entry limit).
EXPECTED_INDEX_COLUMNS_DROPPED = {"transactions_ledger": ["lines"]}
# PostgreSQL's own version table stands for PRAGMA user_version.
EXPECTED_PG_ONLY_TABLES = {"schema_version"}

TYPE_CLASS_SQLITE = {"TEXT": "text", "INTEGER": "integer", "BLOB": "blob"}
TYPE_CLASS_PG = {"text": "text", "bigint": "integer", "bytea": "blob"}
FK_ACTION_PG = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL",
                "d": "SET DEFAULT"}


# ---- helpers

def _swap_db(url, dbname):
    """url with its database replaced by dbname."""
    head, sep, query = url.partition("?")
    scheme, rest = head.split("://", 1)
    hostpart = rest.split("/", 1)[0]
    return f"{scheme}://{hostpart}/{dbname}" + (sep + query if sep else "")


def psql(url, sql=None, stdin=None, check=True):
    cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t", url]
    if sql is not None:
        cmd += ["-c", sql]
    else:
        cmd += ["-1", "-f", "-"]
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=PSQL_TIMEOUT_S)
    if check and r.returncode != 0:
        raise AssertionError(f"psql failed ({r.returncode}): {r.stderr}")
    return r


def rows(url, sql):
    out = psql(url, sql).stdout
    return [line.split("\t") for line in out.splitlines() if line != ""]


@pytest.fixture(scope="module")
def tools():
    r = subprocess.run(["make", "-s", "pg-tools"], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return PRINT_SCHEMA, MIGRATE


@pytest.fixture
def new_db():
    """Makes fresh, empty PostgreSQL databases; drops them afterwards."""
    made = []

    def make():
        name = "taxd_schema_" + uuid.uuid4().hex[:12]
        psql(PG_ADMIN_URL, f'CREATE DATABASE "{name}"')
        made.append(name)
        return _swap_db(PG_ADMIN_URL, name)

    yield make
    for name in made:
        psql(PG_ADMIN_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', check=False)


def script_text(tools):
    return subprocess.run([str(tools[0])], capture_output=True, text=True, check=True).stdout


def applied_db(tools, new_db):
    url = new_db()
    psql(url, stdin=script_text(tools))
    return url


# ---- the SQLite side: a fresh v13 database made by taxd

@pytest.fixture(scope="module")
def sqlite_catalog(tmp_path_factory):
    path = tmp_path_factory.mktemp("pgschema") / "s.db"
    r = run_taxd(["admin", "--db", str(path), "tenant", "list"])
    assert r.returncode == 0, r.stderr
    return sqlite_describe(path)


def _literals_and_names(predicate):
    """The string literals, numbers and identifiers of an index's WHERE, so a
    SQLite and a PostgreSQL spelling of one predicate compare equal."""
    if predicate is None:
        return None
    p = re.sub(r"::[a-z ]+(\[\])?", "", predicate)
    literals = sorted(re.findall(r"'[^']*'", p))
    p = re.sub(r"'[^']*'", " ", p)
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+", p)}
    words -= {"is", "not", "null", "and", "or", "in", "any", "array", "where"}
    return (literals, sorted(words))


def sqlite_describe(path):
    db = sqlite3.connect(path)
    cat = {"tables": {}, "version": db.execute("PRAGMA user_version").fetchone()[0]}
    for (table, sql) in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%' ORDER BY name"):
        cols = []
        pk_cols = []
        for (_cid, name, ctype, notnull, dflt, pk) in db.execute(f"PRAGMA table_info({table})"):
            cols.append({"name": name, "type": TYPE_CLASS_SQLITE[ctype.upper()],
                         "notnull": bool(notnull) or pk > 0, "default": dflt})
            if pk:
                pk_cols.append((pk, name))
        keys = set()
        if pk_cols:
            keys.add(("pk", tuple(n for _, n in sorted(pk_cols))))
        indexes = {}
        for (_seq, iname, unique, origin, partial) in db.execute(f"PRAGMA index_list({table})"):
            icols = tuple(r[2] for r in db.execute(f"PRAGMA index_info({iname})"))
            if origin == "pk":
                keys.add(("pk", icols))
            elif origin == "u":
                keys.add(("u", icols))
            else:
                isql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?",
                                  (iname,)).fetchone()[0]
                m = re.search(r"\bWHERE\b(.*)$", isql, re.S | re.I)
                indexes[iname] = {"columns": list(icols), "unique": bool(unique),
                                  "where": _literals_and_names(m.group(1) if m else None)}
        fks = set()
        for r in db.execute(f"PRAGMA foreign_key_list({table})"):
            fks.add((r[3], r[2], r[4], r[6]))
        checks = len(re.findall(r"\bCHECK\s*\(", sql, re.I))
        cat["tables"][table] = {"columns": cols, "keys": keys, "indexes": indexes,
                                "fks": fks, "checks": checks}
    db.close()
    return cat


# ---- the PostgreSQL side

def pg_describe(url):
    cat = {"tables": {}}
    tables = [r[0] for r in rows(url, "SELECT tablename FROM pg_tables"
                                      " WHERE schemaname = current_schema() ORDER BY 1")]
    for table in tables:
        cols = []
        for (name, nullable, dtype, dflt, coll, ident) in rows(url, f"""
                SELECT column_name, is_nullable, data_type, coalesce(column_default, '\\N'),
                       coalesce(collation_name, ''), is_identity
                FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = '{table}'
                ORDER BY ordinal_position"""):
            if dflt == "\\N":
                dflt = None
            else:
                dflt = re.sub(r"::[a-z ]+$", "", dflt)
            cols.append({"name": name, "type": TYPE_CLASS_PG[dtype],
                         "notnull": nullable == "NO", "default": dflt,
                         "collation": coll, "identity": ident == "YES"})
        keys = set()
        indexes = {}
        for (iname, primary, unique, constraint, icols, pred) in rows(url, f"""
                SELECT c.relname, i.indisprimary, i.indisunique,
                       EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid
                                 AND k.contype IN ('p', 'u') AND k.conrelid = i.indrelid),
                       (SELECT string_agg(a.attname, ',' ORDER BY k.n)
                          FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
                          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum),
                       coalesce(pg_get_expr(i.indpred, i.indrelid), '\\N')
                FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE i.indrelid = '{table}'::regclass"""):
            icols = tuple(icols.split(","))
            if primary == "t":
                keys.add(("pk", icols))
            elif constraint == "t":
                keys.add(("u", icols))
            else:
                indexes[iname] = {"columns": list(icols), "unique": unique == "t",
                                  "where": _literals_and_names(None if pred == "\\N" else pred)}
        fks = set()
        for (ref, frm, to, deltype) in rows(url, f"""
                SELECT confrelid::regclass::text,
                       (SELECT string_agg(a.attname, ',') FROM unnest(conkey) k
                          JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k),
                       (SELECT string_agg(a.attname, ',') FROM unnest(confkey) k
                          JOIN pg_attribute a ON a.attrelid = confrelid AND a.attnum = k),
                       confdeltype
                FROM pg_constraint WHERE conrelid = '{table}'::regclass AND contype = 'f'"""):
            fks.add((frm, ref, to, FK_ACTION_PG[deltype]))
        checks = int(rows(url, f"SELECT count(*) FROM pg_constraint WHERE conrelid ="
                               f" '{table}'::regclass AND contype = 'c'")[0][0])
        cat["tables"][table] = {"columns": cols, "keys": keys, "indexes": indexes,
                                "fks": fks, "checks": checks}
    return cat


def expected_pg_from_sqlite(sq):
    """SQLite's catalog with the documented differences applied."""
    want = {}
    for table, t in sq["tables"].items():
        cols = [dict(c) for c in t["columns"]]
        for c in cols:
            if (table, c["name"]) in EXPECTED_NOT_NULL_ON_PG:
                c["notnull"] = True
        indexes = {n: dict(i) for n, i in t["indexes"].items()}
        for name, dropped in EXPECTED_INDEX_COLUMNS_DROPPED.items():
            if name in indexes:
                indexes[name]["columns"] = [c for c in indexes[name]["columns"]
                                            if c not in dropped]
        if table in EXPECTED_ROWID_TABLES:
            cols.append({"name": "rowid", "type": "integer", "notnull": True, "default": None})
            indexes[f"{table}_rowid"] = {"columns": ["rowid"], "unique": True, "where": None}
        want[table] = {"columns": cols, "keys": t["keys"], "indexes": indexes,
                       "fks": t["fks"], "checks": t["checks"]}
    return want


def pg_comparable(pg):
    out = {}
    for table, t in pg["tables"].items():
        if table in EXPECTED_PG_ONLY_TABLES:
            continue
        cols = [{k: c[k] for k in ("name", "type", "notnull", "default")} for c in t["columns"]]
        out[table] = {"columns": cols, "keys": t["keys"], "indexes": t["indexes"],
                      "fks": t["fks"], "checks": t["checks"]}
    return out


# ---- the schema

def latest(tools):
    """This build's schema version (store_pg_schema_version), as text."""
    return subprocess.run([str(tools[0]), "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[0]


def test_the_script_and_sqlite_carry_the_same_version(tools, sqlite_catalog):
    out = subprocess.run([str(tools[0]), "--version"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == out[1] == str(sqlite_catalog["version"]), \
        "store_pg_schema_version() must be store_migrations_latest()"


def test_postgresql_has_the_tables_columns_keys_and_indexes_of_sqlite(tools, new_db,
                                                                       sqlite_catalog):
    pg = pg_describe(applied_db(tools, new_db))
    want = expected_pg_from_sqlite(sqlite_catalog)
    got = pg_comparable(pg)
    assert sorted(got) == sorted(want), "the same tables"
    for table in sorted(want):
        for part in ("columns", "keys", "fks", "checks", "indexes"):
            assert got[table][part] == want[table][part], f"{table}: {part} differ"
    assert set(pg["tables"]) - set(sqlite_catalog["tables"]) == EXPECTED_PG_ONLY_TABLES


def test_every_text_column_compares_bytes_and_sequences_fill_themselves(tools, new_db):
    """TEXT COLLATE "C" everywhere (keyset pages walk byte order); the rowid
    and seq columns that SQLite fills by itself are identities here."""
    url = applied_db(tools, new_db)
    pg = pg_describe(url)
    for table, t in pg["tables"].items():
        for c in t["columns"]:
            if c["type"] == "text":
                assert c["collation"] == "C", f"{table}.{c['name']} is not COLLATE \"C\""
    identities = {(table, c["name"]) for table, t in pg["tables"].items()
                  for c in t["columns"] if c["identity"]}
    assert identities == {("tenants", "rowid"), ("events", "rowid"), ("deliveries", "rowid"),
                          ("accounts", "seq"), ("transactions", "seq")}
    # B sorts before a in bytes, after it in most locales' collations
    psql(url, "INSERT INTO deleted_tenants (id, deleted_at) VALUES ('a', 1), ('B', 1)")
    assert [r[0] for r in rows(url, "SELECT id FROM deleted_tenants ORDER BY id")] == ["B", "a"]


def test_a_transaction_with_the_longest_lines_fits_its_indexes(tools, new_db):
    """transactions_ledger leaves `lines` out on PostgreSQL: a B-tree entry
    holds at most 2704 bytes, and 300 line items are far more."""
    url = applied_db(tools, new_db)
    rnd = random.Random(17)  # random digits: PostgreSQL compresses a repeated line away

    def digits(n):
        return "".join(rnd.choice("0123456789") for _ in range(n))

    lines = ";".join(f"rA{digits(12)} {digits(20)}.{digits(18)}@{digits(14)}.{digits(5)}"
                     for _ in range(300))
    psql(url, stdin=f"""
        INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', 1);
        INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type, created_at,
          updated_at) VALUES ('o', 't', 'o', 'o', 'individual', 1, 1);
        INSERT INTO filers (uuid, tenant_id, id, name, is_default, created_at, updated_at)
          VALUES ('f', 't', 'f', 'f', 1, 1, 1);
        INSERT INTO accounts (uuid, tenant_id, id, owner_uuid, filer_uuid, cost_basis_method,
          created_at, updated_at) VALUES ('a', 't', 'a', 'o', 'f', 'FIFO', 1, 1);
        INSERT INTO transactions (tenant, account, datetime, type, id, lines, created_at,
          updated_at, uuid, body)
          SELECT n.rowid, a.seq, 1, 'trade', 'x', '{lines}', 1, 1, '\\x{"00" * 16}'::bytea, '{{}}'
          FROM tenants n, accounts a;
    """)
    assert rows(url, "SELECT seq, length(lines) FROM transactions") == [["1", str(len(lines))]]


def test_the_script_refuses_a_second_run_and_changes_nothing(tools, new_db):
    url = applied_db(tools, new_db)
    before = pg_describe(url)
    r = psql(url, stdin=script_text(tools), check=False)
    assert r.returncode != 0
    assert "taxd schema already applied" in r.stderr
    assert pg_describe(url) == before
    assert rows(url, "SELECT singleton, version FROM schema_version") == [["1", latest(tools)]]
    assert rows(url, "SELECT singleton, version FROM settings") == [["1", "0"]]


# ---- the migration (store_pg_migrate)

def migrate(tools, url, go_file=None):
    args = [str(tools[1]), url] + ([str(go_file)] if go_file else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_migrate_creates_the_schema_once_and_then_does_nothing(tools, new_db):
    url = new_db()
    r = migrate(tools, url)
    assert (r.returncode, r.stdout.strip()) == (0, "migrated"), r.stdout + r.stderr
    assert rows(url, "SELECT version FROM schema_version") == [[latest(tools)]]
    made = pg_describe(url)
    r = migrate(tools, url)
    assert (r.returncode, r.stdout.strip()) == (0, "migrated"), r.stdout + r.stderr
    assert pg_describe(url) == made


def test_two_nodes_starting_together_migrate_once(tools, new_db, tmp_path):
    """Each pair connects first, then both are released by one file: the
    advisory lock makes the second wait and find the schema made (without
    it, one of them fails creating tables the other made)."""
    for round_ in range(4):
        url = new_db()
        go = tmp_path / f"go{round_}"
        procs = [subprocess.Popen([str(tools[1]), url, str(go)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        # both connected (each holds a session) before the release
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            n = rows(PG_ADMIN_URL, "SELECT count(*) FROM pg_stat_activity"
                                   f" WHERE datname = '{url.rsplit('/', 1)[1].split('?')[0]}'")
            if int(n[0][0]) >= 2:
                break
            time.sleep(0.02)
        go.write_text("go")
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert (p.returncode, out.strip()) == (0, "migrated"), out + err
        assert rows(url, "SELECT count(*), max(version) FROM schema_version") == [["1", latest(tools)]]


def test_migrate_refuses_a_newer_schema_without_the_password(tools, new_db):
    url = new_db()
    assert migrate(tools, url).returncode == 0
    newer = int(latest(tools)) + 1
    psql(url, f"UPDATE schema_version SET version = {newer}")
    with_password = url.replace("://", "://postgres:s3cret-pw-XYZ@", 1) \
        if "@" not in url.split("://", 1)[1] else url
    r = migrate(tools, with_password)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip() == \
        f"error: database schema version {newer} is newer than this taxd ({latest(tools)})"
    assert "s3cret-pw-XYZ" not in r.stdout + r.stderr
    assert rows(url, "SELECT version FROM schema_version") == [[str(newer)]]


# ---- upgrades of a database an earlier release made

# The first release with a PostgreSQL schema (v14); each later PostgreSQL
# release is upgraded from it by store_pg_migrate's UPGRADES.
FIRST_PG_RELEASE = "ed1151e2fc9fe2fb1ca4ce88a3854bda97d6a539"


def _release_database(url, keys):
    """A database made by the first PostgreSQL release: a tenant through its
    `admin`, then an account owner and a W-9 submission as that release's
    store writes them (its columns only; sealed bytes stand in for the seals)."""
    import test_upgrade as up
    old = up.build_release(FIRST_PG_RELEASE)
    p = up.run_bin(old, ["admin", "--db", url, "--key-dir", str(keys), "tenant", "create",
                         "--name", "old"])
    assert p.returncode == 0, p.stderr
    tenant = json.loads(p.stdout)["tenant_id"]
    assert rows(url, "SELECT version FROM schema_version") == [["14"]]
    psql(url, stdin=f"""
        INSERT INTO account_owners (uuid, tenant_id, id, name, account_owner_type, created_at,
          updated_at) VALUES ('o', '{tenant}', 'o1', 'Jane', 'individual', 1, 1);
        INSERT INTO tax_documents (id, tenant_id, owner_uuid, document_type, document_sealed,
          tin_sealed, data_collection_status, needs_resubmission, tax_documentation_status, issues,
          tin_status, tin_validated_at, expiration_date, treaty_claim_status, vat_status,
          vat_validated_at, created_at)
          VALUES ('d1', '{tenant}', 'o', 'W-9', '\\x0102', '\\x0304', 'COMPLETE', 0, 'VALID', '[]',
          'VALID_SSN_MATCH', 7, NULL, NULL, NULL, NULL, 5);
        INSERT INTO tax_documentation_current (owner_uuid, object, document_id)
          VALUES ('o', 'w_form_questionnaire', 'd1');
    """)
    return tenant


def _v14_rows(url, cols):
    return rows(url, f"SELECT {', '.join(f'coalesce({c}::text, {chr(39)}NULL{chr(39)})' for c in cols)}"
                     " FROM tax_documents ORDER BY id")


def test_migrate_upgrades_the_first_releases_database_and_keeps_its_rows(tools, new_db, tmp_path):
    url = new_db()
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    tenant = _release_database(url, keys)
    cols = [r[0] for r in rows(url, "SELECT column_name FROM information_schema.columns"
                                    " WHERE table_schema = current_schema()"
                                    " AND table_name = 'tax_documents' ORDER BY ordinal_position")]
    before = _v14_rows(url, cols)
    current = rows(url, "SELECT * FROM tax_documentation_current")
    counts = {t: rows(url, f'SELECT count(*) FROM "{t}"') for t in
              [r[0] for r in rows(url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]}

    r = migrate(tools, url)
    assert (r.returncode, r.stdout.strip()) == (0, "migrated"), r.stdout + r.stderr
    assert rows(url, "SELECT version FROM schema_version") == [[latest(tools)]]
    fresh = new_db()
    assert migrate(tools, fresh).returncode == 0
    assert pg_describe(url) == pg_describe(fresh), "the upgraded catalog is a new database's"
    # every row kept; the submission from before is 'native', its new columns NULL
    assert _v14_rows(url, cols) == before
    assert rows(url, "SELECT * FROM tax_documentation_current") == current
    for table, n in counts.items():
        assert rows(url, f'SELECT count(*) FROM "{table}"') == n, table
    assert rows(url, "SELECT model, coalesce(source, 'NULL'), coalesce(questionnaire, 'NULL'),"
                     " coalesce(tin_type, 'NULL'), coalesce(vat_note, 'NULL') FROM tax_documents") == \
        [["native", "NULL", "NULL", "NULL", "NULL"]]
    # the new table takes rows of the old submission
    psql(url, "INSERT INTO tax_documentation_files (id, tenant_id, owner_uuid, document_id, created_at)"
              f" VALUES ('f1', '{tenant}', 'o', 'd1', 9)")
    # a second start migrates nothing more
    made = pg_describe(url)
    r = migrate(tools, url)
    assert (r.returncode, r.stdout.strip()) == (0, "migrated"), r.stdout + r.stderr
    assert pg_describe(url) == made


def test_migrate_refuses_a_version_older_than_the_first_release(tools, new_db):
    url = new_db()
    assert migrate(tools, url).returncode == 0
    psql(url, "UPDATE schema_version SET version = 13")
    r = migrate(tools, url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip() == (f"error: database schema version 13 has no upgrade to this taxd"
                                f" ({latest(tools)}) on PostgreSQL")
