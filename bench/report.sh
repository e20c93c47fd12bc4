#!/bin/sh
# make bench-report: inventory-summary reports at several sizes against a
# sqlite3 GROUP BY floor; writes the "report" section of docs/benchmarks.md.
# BENCH_REPORT_SIZES: comma-separated transaction counts (default
# 10000,100000,1000000); BENCH_REPORT_SKIPPED: sizes to name as not run.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
SIZES="${BENCH_REPORT_SIZES:-10000,100000,1000000}"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
/usr/bin/python3 bench/report.py "$PWD/build/taxd" "$SIZES" "$OUT"
if [ -n "${BENCH_REPORT_NOTE:-}" ]; then
    printf '\n%s\n' "$BENCH_REPORT_NOTE" >> "$OUT"
fi
write_section report "$OUT"
cat "$OUT"
