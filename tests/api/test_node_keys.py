"""Every node of one database must hold the same key files (issue 17): the
first node records a one-way fingerprint of each fixed key, and a node
started with another key file is refused before it listens; a PostgreSQL
URL without a key directory is refused too. Runs on SQLite (several
processes on one file are nodes as well)."""
import base64
import os

from conftest import run_taxd


def start_once(db, *extra):
    """`taxd serve` that must stop by itself (a refusal) within the timeout."""
    return run_taxd(["serve", "--db", str(db), "--listen", "127.0.0.1:0", *extra], timeout=30)


def test_a_node_with_another_tin_key_is_refused(tmp_path):
    db = tmp_path / "taxd.db"
    # the first node records the fingerprints (admin opens the service like serve)
    first = run_taxd(["admin", "--db", str(db), "tenant", "list"])
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "taxd.db.tin.key"
    assert key_file.exists()
    key_file.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    p = start_once(db)
    assert p.returncode != 0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert any("tin.key" in l and "refusing to start" in l for l in lines), p.stderr
    # and the admin tool, which seals TINs too, is refused the same way
    q = run_taxd(["admin", "--db", str(db), "tenant", "list"])
    assert q.returncode != 0 and "refusing to start" in q.stderr


def test_the_same_keys_in_a_key_directory_are_accepted(tmp_path):
    db = tmp_path / "taxd.db"
    keys = tmp_path / "keys"
    p = run_taxd(["admin", "--db", str(db), "--key-dir", str(keys), "tenant", "list"])
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in keys.iterdir()) == [
        "links.key", "secret.key", "tin.key", "token.key", "webhook.key"]
    assert oct(keys.stat().st_mode & 0o777) == "0o700"
    again = run_taxd(["admin", "--db", str(db), "--key-dir", str(keys), "tenant", "list"])
    assert again.returncode == 0, again.stderr
    # the same database with the keys beside the file (other, new keys): refused
    other = run_taxd(["admin", "--db", str(db), "tenant", "list"])
    assert other.returncode != 0 and "refusing to start" in other.stderr


def test_a_postgres_url_needs_a_key_directory(tmp_path):
    p = start_once("postgresql://taxd:s3cret-pw@127.0.0.1:1/taxd")
    assert p.returncode != 0
    assert "--key-dir" in p.stderr
    assert "s3cret-pw" not in p.stderr + p.stdout
