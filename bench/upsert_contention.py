"""Single-node upsert rate on PostgreSQL (or SQLite), and under contention on one account:
the cost of the transaction writes' locking (docs/decisions.md, "Concurrent writes on PostgreSQL").
wrk posts single upserts for 5 s with 8 connections in three mixes:
  spread  new ids on 8 accounts (the common case: little contention)
  hot     new ids on one account (every write queues on that account's row)
  same    one id rewritten with changing amounts (the worst case: one row)
Run from the repository root:
  TAXD_BIN=$PWD/build/taxd [TAXD_TEST_PG=url] /usr/bin/python3 bench/upsert_contention.py"""
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, "tests/api")
import pytest  # noqa: F401  (conftest imports it)
from conftest import Server, set_rule
from test_reports import make_account, make_owner

LUA = r"""
local n = 0
local mix = "%s"
request = function()
  n = n + 1
  local id, acct, amt
  local tid = tostring(math.random(1, 1000000000))
  if mix == "same" then id = "same"; acct = "a1"; amt = tostring(n %% 97 + 1)
  elseif mix == "hot" then id = "h" .. tid; acct = "a1"; amt = "1"
  else id = "s" .. tid; acct = "a" .. tostring(n %% 8 + 1); amt = "1" end
  local body = '{"id":"' .. id .. '","account_id":"' .. acct .. '","datetime":"2024-03-01T10:00:00Z",' ..
    '"type":"trade","sent":[{"asset_amount":{"amount":"10","asset":{"code":"USD","type":"fiat"}}}],' ..
    '"received":[{"asset_amount":{"amount":"' .. amt .. '","asset":{"code":"BTC","type":"crypto"}}}]}'
  return wrk.format("POST", "/v1/transactions/external-id", {["content-type"]="application/json",
    ["authorization"]="Bearer %s"}, body)
end
"""

for mix in ("spread", "hot", "same"):
    wd = Path(tempfile.mkdtemp(prefix="upsertbench"))
    s = Server(wd, args=("--no-workers",)).start()
    try:
        t = s.new_tenant("b")
        set_rule(s, 1000000, 1000000, tenant=t)
        make_owner(t)
        for i in range(8):
            make_account(t, f"a{i + 1}")
        script = wd / "post.lua"
        script.write_text(LUA % (mix, t.token))
        time.sleep(1.2)  # the rule reaches the server
        out = subprocess.run(["wrk", "-t2", "-c8", "-d5s", "-s", str(script), s.url],
                             capture_output=True, text=True).stdout
        rps = re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)
        lat = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", out)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        print(f"{mix:7s} rps {rps:>9s}  latency avg {lat.group(1)} max {lat.group(3)}"
              f"  non-2xx {non2xx.group(1) if non2xx else 0}", flush=True)
    finally:
        s.stop_and_check()
