"""`taxd admin inventory recalc`: the operator's bulk recalculation after an
import or a backfill (src/admin/inventory.h, inventory_recalc_all).

Rules checked:
  - after the reference dataset is posted, `recalc --tenant ID` recalculates
    every dirty account of the tenant (accounts and transactions counted),
    leaves them clean, and what the API then reads (no lazy recalculation
    left to do) is exactly the hand-worked reference;
  - a second run finds nothing to do (idempotent); `--all` covers every
    tenant; `--tenant ID --account ID` recalculates one account;
  - usage errors exit 2 and an unknown tenant or account exits 1, with the
    admin contract ({"error": ...} on stderr).
The rows themselves are compared with the lazy path's, account by account, in
tests/unit/test_recalc_all.c, and with the code before this command in
bench/recalc_compare.sh.
"""
import json

import pytest

from test_inventory import REFERENCE, all_pairs, assert_matches_reference, load, post_tx


def dirty_accounts(server, tenant_id):
    return server.sql("SELECT count(*) FROM accounts WHERE tenant_id = ?"
                      " AND dirty_from IS NOT NULL", (tenant_id,))[0][0]


def test_recalc_tenant_then_reads_match_reference(server):
    t = server.new_tenant("recalc")
    pairs = all_pairs()
    load(t, pairs)
    accounts = len(REFERENCE["accounts"])
    assert dirty_accounts(server, t.tenant_id) == accounts
    out = server.admin("inventory", "recalc", "--tenant", t.tenant_id)
    assert out["accounts"] == accounts
    assert out["transactions"] == len(pairs)
    assert out["failed"] == 0
    assert out["seconds"] >= 0
    assert dirty_accounts(server, t.tenant_id) == 0
    again = server.admin("inventory", "recalc", "--tenant", t.tenant_id, "--batch", "1")
    assert (again["accounts"], again["transactions"]) == (0, 0)
    assert_matches_reference(t)


def test_recalc_all_and_one_account(server):
    t1, t2 = server.new_tenant("all-1"), server.new_tenant("all-2")
    load(t1, all_pairs())
    load(t2, all_pairs())
    out = server.admin("inventory", "recalc", "--all")
    assert out["accounts"] >= 2 * len(REFERENCE["accounts"])
    assert dirty_accounts(server, t1.tenant_id) == dirty_accounts(server, t2.tenant_id) == 0
    # a backfill into one account: --account recalculates it alone
    a = REFERENCE["accounts"][0]
    first = dict(a["transactions"][0], id="backfill-1")
    post_tx(t1, a["id"], first)
    assert dirty_accounts(server, t1.tenant_id) == 1
    one = server.admin("inventory", "recalc", "--tenant", t1.tenant_id, "--account", a["id"])
    assert (one["accounts"], one["failed"]) == (1, 0)
    assert dirty_accounts(server, t1.tenant_id) == 0
    assert_matches_reference(t2)


@pytest.mark.parametrize("args, code", [
    ((), 2),
    (("--all", "--tenant", "x"), 2),
    (("--account", "a"), 2),
    (("--all", "--batch", "0"), 2),
    (("--all", "--bogus", "1"), 2),
    (("--tenant", "00000000-0000-4000-8000-000000000000"), 1),
])
def test_recalc_errors(server, args, code):
    p = server.admin_raw("inventory", "recalc", *args)
    assert p.returncode == code, p.stderr
    assert p.stdout == ""
    assert "error" in json.loads(p.stderr.strip().splitlines()[-1])


def test_recalc_unknown_account(server):
    t = server.new_tenant("unknown-account")
    p = server.admin_raw("inventory", "recalc", "--tenant", t.tenant_id, "--account", "nope")
    assert p.returncode == 1
    assert "nope" in json.loads(p.stderr.strip().splitlines()[-1])["error"]
