#!/bin/sh
# recalc: times `taxd admin inventory recalc --all` on a generated import
# (bench/recalc_gen.sh: TX transactions over ACCOUNTS accounts, every account
# dirty from its first transaction) and reports its peak memory, twice:
# resident in all (RSS, which counts the pages of the database file the run
# maps: the OS's page cache, shared and reclaimable) and the process's own
# memory (RssAnon: heap and stacks), sampled every 50 ms. The own memory
# must not grow with the number of accounts. Optionally (RECALC_COMPARE=1)
# runs bench/recalc_compare.sh afterwards.
#
#   bench/recalc.sh [TX [ACCOUNTS]]     (default 1000000 10000)
#
# Work files go to $RECALC_WORK (default build/recalc-bench).
set -eu
cd "$(dirname "$0")/.."
TX=${1:-1000000}
ACCOUNTS=${2:-10000}
work=${RECALC_WORK:-$PWD/build/recalc-bench}
mkdir -p "$work"
make -s build/taxd >/dev/null

base="$work/base-$TX-$ACCOUNTS.db"
if [ ! -f "$base" ]; then
    echo "generating $TX transactions over $ACCOUNTS accounts..." >&2
    bench/recalc_gen.sh build/taxd "$base" "$TX" "$ACCOUNTS" >/dev/null
fi
run="$work/run.db"
rm -f "$run" "$run-wal" "$run-shm"
cp "$base" "$run"
for k in "$base".*.key; do cp "$k" "$run.${k##*.db.}"; done

build/taxd admin --db "$run" inventory recalc --all >"$work/out.json" 2>"$work/err.log" &
pid=$!
anon=0
while kill -0 "$pid" 2>/dev/null; do
    a=$(sed -n 's/^RssAnon:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
    sleep 0.05
done
wait "$pid" || { cat "$work/err.log" >&2; exit 1; }
# the whole resident peak comes from a second, timed run on a fresh copy
rm -f "$run" "$run-wal" "$run-shm"
cp "$base" "$run"
rss=$( { /usr/bin/time -f '%M' build/taxd admin --db "$run" inventory recalc --all \
    >"$work/out2.json"; } 2>&1 | tail -1)
echo "{\"tx\":$TX,\"accounts\":$ACCOUNTS,\"run\":$(cat "$work/out.json"),\"rerun\":$(cat "$work/out2.json"),\"peak_rss_kb\":$rss,\"peak_own_kb\":$anon}"
if [ "${RECALC_COMPARE:-0}" = 1 ]; then
    bench/recalc_compare.sh
fi
