#!/bin/sh
# make bench-gains: the gains report for 10,000 accounts and 1,000,000
# transactions beside a sqlite3 floor; writes the "gains" section of
# docs/benchmarks.md (BENCH_GAINS_TX, BENCH_GAINS_ACCOUNTS: smaller runs).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
/usr/bin/python3 bench/gains_report.py "$PWD/build/taxd" "$OUT"
write_section gains "$OUT" "report"
cat "$OUT"
