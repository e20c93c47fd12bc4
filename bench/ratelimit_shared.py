"""The cost of shared rate limits: one node, wrk on one key, --rate-limits local vs shared.
Run from the repository root: TAXD_BIN=$PWD/build/taxd [TAXD_TEST_PG=url] /usr/bin/python3 bench/ratelimit_shared.py"""
import os, subprocess, sys, re, time
sys.path.insert(0, "tests/api")
import pytest  # noqa
from conftest import Server, set_rule
from pathlib import Path
import tempfile
res = {}
for mode in ("local", "shared"):
    for rate, burst in ((1000000, 1000000), (1000000, 50)):
        wd = Path(tempfile.mkdtemp(prefix="rlbench"))
        s = Server(wd, args=("--rate-limits", mode, "--no-workers")).start()
        try:
            t = s.new_tenant("b")
            set_rule(s, rate, burst, tenant=t)
            time.sleep(1.0)
            out = subprocess.run(["wrk", "-t2", "-c8", "-d5s", "-H", f"authorization: Bearer {t.token}",
                                  s.url + "/v1/accounts"], capture_output=True, text=True).stdout
            rps = re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)
            non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            print(mode, rate, burst, "k=", max(1, burst // 50), "rps", rps, "non2xx", non2xx.group(1) if non2xx else 0, flush=True)
        finally:
            s.stop_and_check()
