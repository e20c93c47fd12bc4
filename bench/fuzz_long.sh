#!/bin/sh
# The recorded fuzz run (docs/operations.md, "Fuzzing"): each target for
# SECONDS (default 600) from its seed corpus alone, one at a time, at the lowest
# CPU priority so that it can share the machine. Prints one line per target and
# appends them, dated, to build/fuzz/long.txt.
#   bench/fuzz_long.sh [SECONDS] [TARGET...]     (default: every tests/fuzz/fuzz_*.c)
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-$(ls tests/fuzz/fuzz_*.c | sed 's|tests/fuzz/\(.*\)\.c|\1|')}
for t in $targets; do make --no-print-directory "build/fuzz/$t"; done
mkdir -p build/fuzz
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $seconds s per target" >>build/fuzz/long.txt
nice -n 19 tests/fuzz/run.sh long "$seconds" $targets | tee -a build/fuzz/long.txt
