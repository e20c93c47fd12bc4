"""The harness that runs this suite on PostgreSQL (tests/pg/cluster.sh and
conftest's Database), checked on its own so that `make api` already proves it:
  - SQLite's ?/?N placeholders become correctly quoted PostgreSQL literals;
  - tests marked sqlite_only are skipped, with the reason, only when
    TAXD_TEST_PG is set;
  - cluster.sh starts a private cluster (idempotently), `env` names a URL the
    role taxd logs in with, a PgDatabase reads and writes rows and refuses to
    be used as a file, and `stop` removes everything (twice is fine)."""
import os
import subprocess
from pathlib import Path

import pytest

import conftest
from conftest import PgDatabase, SqliteDatabase, pg_inline, pg_literal, psql

CLUSTER = Path(__file__).resolve().parents[1] / "pg" / "cluster.sh"


def test_literals_are_quoted_for_postgresql():
    assert pg_literal("it's") == "'it''s'"
    assert pg_literal("back\\slash") == "'back\\slash'"  # standard_conforming_strings: kept as is
    assert pg_literal(None) == "NULL" and pg_literal(True) == "1" and pg_literal(7) == "7"
    assert pg_literal(b"\x00\xff") == "'\\x00ff'::bytea"
    with pytest.raises(ValueError):
        pg_literal("nul\0")


def test_placeholders_are_replaced_outside_quotes_only():
    assert pg_inline("SELECT ? WHERE a = '?' AND b = ?", ("x", 2)) == "SELECT 'x' WHERE a = '?' AND b = 2"
    assert pg_inline("SELECT ?2, ?1, ?2", (1, "o'k")) == "SELECT 'o''k', 1, 'o''k'"
    assert pg_inline('SELECT "?" FROM t WHERE id = ?', ("i",)) == 'SELECT "?" FROM t WHERE id = \'i\''


class _Item:
    def __init__(self, marked):
        self.marked, self.added = marked, []

    def get_closest_marker(self, name):
        return object() if (name == "sqlite_only" and self.marked) else None

    def add_marker(self, m):
        self.added.append(m)


@pytest.mark.parametrize("pg", [None, "postgresql://u:p@127.0.0.1:1/postgres"])
def test_sqlite_only_is_skipped_only_on_postgresql(monkeypatch, pg):
    monkeypatch.setattr(conftest, "TAXD_TEST_PG", pg)
    own, shared = _Item(True), _Item(False)
    conftest.pytest_collection_modifyitems(None, [own, shared])
    assert shared.added == []
    if pg is None:
        assert own.added == []
    else:
        [mark] = own.added
        assert mark.name == "skip" and "sqlite_only" in mark.kwargs["reason"]


def test_sqlite_database_is_the_file_it_always_was(tmp_path):
    db = SqliteDatabase(tmp_path / "taxd.db")
    assert db.args() == ["--db", str(tmp_path / "taxd.db")] and os.fspath(db) == str(tmp_path / "taxd.db")
    assert db.key_path("tin") == Path(f"{tmp_path / 'taxd.db'}.tin.key")
    db.sql("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, b BLOB)")
    db.script([("INSERT INTO t VALUES (?, ?, ?)", ("a", 1, b"\x00")), ("INSERT INTO t VALUES (?2, ?1, NULL)", (2, "b"))])
    assert db.sql("SELECT * FROM t ORDER BY id") == [("a", 1, b"\x00"), ("b", 2, None)]
    assert db.rows("SELECT id, n FROM t WHERE id = ?", ("b",)) == [{"id": "b", "n": 2}]
    assert db.sql("UPDATE t SET n = n + 1 RETURNING id") and db.row_counts() == {"t": 2}
    assert db.write_held() is False


@pytest.fixture
def cluster(tmp_path):
    """A cluster of this test's own (its own state file), removed at the end."""
    env = dict(os.environ, TAXD_PG_STATE=str(tmp_path / "state"))
    env.pop("TAXD_PG_PORT", None)

    def run(*args):
        return subprocess.run([str(CLUSTER), *args], capture_output=True, text=True, env=env, timeout=120)
    yield run
    run("stop")


def test_cluster_script_and_postgresql_database(cluster, tmp_path):
    p = cluster("start")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "", "start prints nothing on stdout (the URLs hold passwords)"
    state = dict(line.split("=", 1) for line in (tmp_path / "state").read_text().split())
    pgdir = state["PG_DIR"].strip("'")
    assert Path(pgdir).is_dir() and oct((tmp_path / "state").stat().st_mode & 0o777) == "0o600"
    again = cluster("start")
    assert again.returncode == 0 and "already running" in again.stderr
    env = cluster("env").stdout.strip()
    assert env.startswith("export TAXD_TEST_PG=postgresql://taxd:") and "@127.0.0.1:" in env
    url = env.split("=", 1)[1]
    assert psql(url, "SELECT current_user").strip() == "taxd"

    db = PgDatabase(tmp_path / "srv", url)
    try:
        assert db.args() == ["--db", db.url, "--key-dir", str(tmp_path / "srv" / "keys")]
        assert db.key_path("token") == tmp_path / "srv" / "keys" / "token.key"
        with pytest.raises(TypeError):
            os.fspath(db)
        db.sql('CREATE TABLE t (id TEXT COLLATE "C" PRIMARY KEY, n BIGINT, b BYTEA)')
        db.script([("INSERT INTO t VALUES (?, ?, ?)", ("it's", 1, b"\x00\xff")),
                   ("INSERT INTO t VALUES (?2, ?1, NULL)", (2, "b?"))])
        assert db.sql("SELECT * FROM t ORDER BY id") == [("b?", 2, None), ("it's", 1, b"\x00\xff")]
        assert db.rows("SELECT count(*) AS n, max(n) AS n2 FROM t") == [{"n": 2, "n2": 2}]
        assert db.sql("UPDATE t SET n = n + 1 WHERE id = ? RETURNING id", ("b?",)) == [("b?",)]
        assert db.row_counts() == {"t": 2} and db.size_bytes() > 0 and db.write_held() is False
    finally:
        db.drop()
    assert psql(url, f"SELECT count(*) FROM pg_database WHERE datname = '{db.name}'").strip() == "0"

    assert cluster("stop").returncode == 0
    assert not Path(pgdir).exists() and not (tmp_path / "state").exists()
    p = cluster("stop")
    assert p.returncode == 0 and "no cluster" in p.stderr
