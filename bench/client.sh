#!/bin/sh
# make bench-client: `taxctl import` beside the raw batch endpoint (issue 18
# item 4). In one run, each on a fresh database made through the API (a
# tenant with its rate limit raised, BENCH_ACCOUNTS accounts, the assets):
#
# raw      bench/ingest_load.c --batch BENCH_BATCH (1,000) --clients C:
#          BENCH_CLIENT_TX (1,000,000) transactions of bench/ingest_gen.h, in
#          its shuffled order, as JSON arrays, one request in flight per client;
# taxctl   the same transactions, in the same order, as the CSV `taxctl
#          import transactions` reads (bench/client_gen.c), with
#          --batch-size BENCH_BATCH --connections C: parsing, local checks,
#          the journal fsync'd per batch and the answers read included;
# resumed  the same import killed (-9) at a random point between 20% and 60%
#          of the journaled batches, then run again: its second run must skip
#          what the journal held, exit 0, and leave exactly N transactions.
# C is BENCH_CLIENT_CONNECTIONS (4, as bench-ingest's batch part). The ratio
# taxctl / raw (target >= 0.8) and the resumed import go to the section
# "client-import" of docs/benchmarks.md. Smoke check:
#   BENCH_CLIENT_TX=20000 BENCH_ACCOUNTS=1000 make bench-client
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

TX=${BENCH_CLIENT_TX:-1000000}
ACCOUNTS=${BENCH_ACCOUNTS:-10000}
BATCH=${BENCH_BATCH:-1000}
CONNS=${BENCH_CLIENT_CONNECTIONS:-4}
TAXD=${BENCH_TAXD:-$PWD/build/taxd}
TAXCTL=${BENCH_TAXCTL:-$PWD/build/client/taxctl}
PY=/usr/bin/python3

work=$(mktemp -d)
taxd_pid=""
cleanup() {
    [ -n "$taxd_pid" ] && kill "$taxd_pid" 2>/dev/null && wait "$taxd_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkdir -p "$work/bin"
CFLAGS_BENCH="-std=c17 -D_GNU_SOURCE -Isrc -O2 -Wall -Wextra -Werror -Wshadow"
cc $CFLAGS_BENCH -o "$work/bin/ingest_load" bench/ingest_load.c -lpthread
cc $CFLAGS_BENCH -o "$work/bin/client_gen" bench/client_gen.c

field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
jfield() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"; }
now() { date +%s.%N; }
calc() { $PY -c "print(f'{$1:$2}')"; }
judge() { $PY -c "print('PASS' if $1 $2 $3 else 'SHORT')"; }
stamp() { date -u +%Y-%m-%dT%H:%MZ; }
machine() {
    printf '%s cores, %s GiB memory, load average %s' "$(nproc)" \
        "$(awk '$1 == "MemTotal:" { printf "%.1f", $2 / 1048576 }' /proc/meminfo)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}
fail() { echo "bench-client: $*" >&2; exit 1; }

start_taxd() { # db
    port=$(free_port)
    $TAXD serve --db "$1" --listen "127.0.0.1:$port" 2>>"$work/taxd.log" &
    taxd_pid=$!
    wait_http "http://127.0.0.1:$port/healthz" 20
    token=$(curl -s -X POST "http://127.0.0.1:$port/v1/oauth/token" -H 'content-type: application/json' \
        -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$client\",\"client_secret\":\"$secret\"}" |
        sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
    [ -n "$token" ] || fail "no token"
}
stop_taxd() { kill "$taxd_pid"; wait "$taxd_pid" || true; taxd_pid=""; }

# new_db DIR: DIR/taxd.db with a tenant (rate limit raised), an owner, the
# accounts a0.. and the five assets; taxd left running on it.
new_db() {
    rm -rf "$1"; mkdir -p "$1"
    creds=$($TAXD admin --db "$1/taxd.db" tenant create --name bench)
    tenant=$(field "$creds" tenant_id); client=$(field "$creds" client_id); secret=$(field "$creds" client_secret)
    $TAXD admin --db "$1/taxd.db" ratelimit set --tenant "$tenant" --rate 100000000 --burst 100000000 >/dev/null
    start_taxd "$1/taxd.db"
    echo "bench-client: $ACCOUNTS accounts into $1 ..." >&2
    $PY bench/make_accounts.py "$port" "$token" "$ACCOUNTS"
}

count_rows() { $PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM transactions').fetchone()[0])" "$1"; }

# taxctl_run OUT: taxctl import of the CSV against the running taxd (exec'd,
# so that a background run's $! is taxctl itself, for the kill)
taxctl_run() {
    exec env TAXD_URL="http://127.0.0.1:$port" TAXD_CLIENT_ID="$client" TAXD_CLIENT_SECRET="$secret" \
        TAXCTL_CONFIG="$work/no-config" "$TAXCTL" import transactions "$work/tx.csv" \
        --batch-size "$BATCH" --connections "$CONNS" --no-progress > "$1" 2> "$1.err"
}
journal_records() { # answered batches in the journal (its two header lines aside)
    n=$( (wc -l < "$work/tx.csv.taxctl-journal") 2>/dev/null || echo 2)
    echo $((n - 2))
}

echo "bench-client: generating $TX transactions over $ACCOUNTS accounts ..." >&2
"$work/bin/client_gen" "$TX" "$ACCOUNTS" > "$work/tx.csv"
csv_mib=$(calc "$(stat -c %s "$work/tx.csv")/1048576" .0f)

# ---- raw
new_db "$work/raw"
echo "bench-client: raw, $TX transactions, batches of $BATCH, $CONNS clients ..." >&2
load=$("$work/bin/ingest_load" --port "$port" --token "$token" --tx "$TX" --accounts "$ACCOUNTS" \
    --clients "$CONNS" --order shuffled --batch "$BATCH")
stop_taxd
bad=$(( $(jfield "$load" 4xx) + $(jfield "$load" 5xx) + $(jfield "$load" errors) ))
[ "$bad" = 0 ] || fail "raw load had non-2xx answers: $load"
raw_tps=$(jfield "$load" tx_per_s)
raw_rows=$(count_rows "$work/raw/taxd.db")
rm -rf "$work/raw"

# ---- taxctl
new_db "$work/taxctl"
echo "bench-client: taxctl import, $TX transactions ..." >&2
t0=$(now)
rc=0; (taxctl_run "$work/taxctl.out") || rc=$?
t1=$(now)
stop_taxd
[ "$rc" = 0 ] || fail "taxctl import exited $rc: $(tail -5 "$work/taxctl.out.err")"
ctl_s=$(calc "$t1-$t0" .2f)
ctl_tps=$(calc "$TX/($t1-$t0)" .1f)
ctl_rows=$(count_rows "$work/taxctl/taxd.db")
[ "$ctl_rows" = "$TX" ] && [ "$raw_rows" = "$TX" ] || fail "rows: raw $raw_rows, taxctl $ctl_rows, want $TX"
ratio=$(calc "$ctl_tps/$raw_tps" .2f)
rm -rf "$work/taxctl"

# ---- killed and resumed
new_db "$work/resume"
batches=$(( (TX + BATCH - 1) / BATCH ))
kill_at=$($PY -c "import random; print(random.randint(max(1, $batches * 2 // 10), max(2, $batches * 6 // 10)))")
echo "bench-client: taxctl import killed after $kill_at of $batches batches, then resumed ..." >&2
rm -f "$work/tx.csv.taxctl-journal" "$work/tx.csv.taxctl-refused.jsonl"
t0=$(now)
(taxctl_run "$work/first.out") & ctl_pid=$!
while [ "$(journal_records)" -lt "$kill_at" ]; do
    kill -0 "$ctl_pid" 2>/dev/null || fail "the import ended before $kill_at batches were journaled"
    sleep 0.05
done
kill -9 "$ctl_pid"; wait "$ctl_pid" 2>/dev/null || true
t1=$(now)
held=$($PY - "$work/tx.csv.taxctl-journal" <<'PY'
import sys
n = 0
for rec in open(sys.argv[1]).read().splitlines()[2:]:
    for tok in rec.split():
        a, _, b = tok[1:].partition("-")
        n += int(b or a) - int(a) + 1
print(n)
PY
)
rc=0; (taxctl_run "$work/second.out") || rc=$?
t2=$(now)
stop_taxd
[ "$rc" = 0 ] || fail "the resumed import exited $rc: $(tail -5 "$work/second.out.err")"
skipped=$(sed -n 's/.*skipped: \([0-9]*\).*/\1/p' "$work/second.out")
written=$(sed -n 's/.*written: \([0-9]*\).*/\1/p' "$work/second.out")
res_rows=$(count_rows "$work/resume/taxd.db")
[ "$res_rows" = "$TX" ] || fail "the resumed import left $res_rows transactions, want $TX"
[ "$skipped" -ge "$held" ] || fail "the second run skipped $skipped, but the journal held $held"
first_s=$(calc "$t1-$t0" .1f); second_s=$(calc "$t2-$t1" .1f)

cat > "$work/section.md" <<MD
## taxctl import beside the raw batch endpoint (\`make bench-client\`)

Measured $(stamp) on $(machine): $TX transactions (the trades of bench/ingest_gen.h, in its shuffled
order) over $ACCOUNTS accounts x 5 assets, each side into a fresh database (taxd defaults, SQLite), with the
same $CONNS connections and $BATCH transactions per request. Raw: \`bench/ingest_load.c --batch $BATCH
--clients $CONNS\` (JSON prebuilt by snprintf, answers only counted). taxctl: \`taxctl import transactions
FILE.csv --batch-size $BATCH --connections $CONNS --no-progress\` on the same transactions as a $csv_mib MiB CSV
(bench/client_gen.c): the whole file checked first, then parsed, converted, sent through libtaxdclient's
sender, every answer read, and the journal fsync'd per batch.

| | transactions/s | taxctl / raw | target |
|---|---|---|---|
| raw batch endpoint (ingest_load) | $raw_tps | | |
| taxctl import | $ctl_tps ($ctl_s s) | **$ratio** | >= 0.8: **$(judge "$ratio" ">=" 0.8)** |

Killed and resumed: the import was killed (-9) after $kill_at of $batches batches were journaled ($first_s s;
the journal held $held lines), then the same command was run again ($second_s s): it skipped $skipped lines,
wrote $written, exited 0, and the database holds exactly $res_rows transactions.
Reproduce: \`BENCH_CLIENT_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_CLIENT_CONNECTIONS=$CONNS make bench-client\`.
MD
write_section client-import "$work/section.md" "ingest-batch"
cat "$work/section.md"
