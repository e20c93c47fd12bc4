#!/bin/sh
# make bench-ingest: loading transactions into taxd, each figure beside a
# floor measured in the same run at the same N and number of accounts.
#
# The floor is ../shared/bench/ingest_floor.c (BENCH_FLOOR_SRC): one SQLite
# writer persisting what an ingest must (the transaction row with its body,
# two line items, the account's watermark; WAL, synchronous=FULL), BATCH
# transactions per COMMIT, no HTTP and no JSON. `ingest_floor DB N BATCH
# ACCOUNTS` prints {"tx_per_s", "db_bytes", ...}. It is a bound, not a
# competitor: the targets are fractions of it.
#
# The transactions are those of bench/ingest_gen.h (trades: 3 in 4 buy an
# asset for USD, 1 in 4 sell; over ACCOUNTS accounts x 5 assets; shuffled
# datetime order), posted by bench/ingest_load.c (C, keep-alive clients, one
# request in flight each). Every part starts from a fresh database made
# through the API (a tenant with its rate limit raised, the accounts, the
# assets). Parts, chosen by BENCH_PARTS (default: all of them, in this order:
# "single batch recalc upgrade load10m one-account resume"):
#
# single       BENCH_TX (1,000,000) transactions over BENCH_ACCOUNTS (10,000)
#              accounts, one per request (POST /v1/transactions/external-id),
#              BENCH_CLIENTS (16) clients; beside the floor at
#              BENCH_FLOOR_SINGLE_BATCH (16) per commit. Target: >= 0.5x.
#              Also bytes of database per transaction after a WAL checkpoint
#              (taxd stopped) beside the floor's db_bytes / N, taxd's peak
#              memory, and (BENCH_NGINX=1, the default) nginx answering the
#              same POSTs with `return 200` as the HTTP path's own bound.
#              Section "ingest" of docs/benchmarks.md.
# batch        the same transactions as JSON arrays of BENCH_BATCH (1,000) to
#              the same path (the batch endpoint), BENCH_BATCH_CLIENTS (4)
#              clients; beside the floor at BENCH_BATCH per commit. Target:
#              >= 0.5x. Fails, clearly, when the server answers 4xx to an
#              array (no batch endpoint) or any element's status is "error".
#              Bytes per transaction as in single. Section "ingest-batch".
# recalc       `taxd admin --db DB inventory recalc --all` on BENCH_TX
#              transactions over BENCH_ACCOUNTS accounts, all dirty (the
#              database of part batch or single when it ran in this run,
#              else one loaded here), taxd stopped: its time and peak RSS
#              (getrusage of the child). Target: <= 3 s. Fails, clearly,
#              when the admin command is unknown. Section "ingest-recalc".
# upgrade      builds the release BENCH_UPGRADE_FROM (2f8b27f, schema v9)
#              from git, loads BENCH_UPGRADE_TX (1,000,000) transactions with
#              it (its own bench/store_ingest.c linked with its own objects:
#              the store's write path, 16 threads, faster than its HTTP),
#              then times the first command of the new binary on that
#              database (`taxd admin --db DB tenant list`, which runs the
#              migrations) beside a second one (nothing left to migrate).
#              Section "ingest-upgrade".
# load10m      BENCH_10M_TX (10,000,000) transactions over
#              BENCH_10M_ACCOUNTS (BENCH_ACCOUNTS) accounts in batches of
#              BENCH_BATCH from BENCH_BATCH_CLIENTS clients into one taxd,
#              timed over each successive BENCH_10M_STEP (1,000,000): each
#              step's rate and the lowest / the first (target >= 0.7);
#              taxd's peak memory (VmHWM); the database's size; the
#              recalculation of all of it (the admin command, as in
#              recalc); then an all-accounts inventory-summary report on the
#              clean accounts, triggered and polled over HTTP (target <= 5 s).
#              Needs the batch endpoint and the admin command (checked
#              first). Takes 10+ minutes. Section "ingest-10m".
# one-account  BENCH_ONE_ACCOUNT_TX (100,000) transactions of one account
#              loaded in datetime order and in reverse order (each into a
#              fresh database), then the first read of GET
#              /v1/inventory/summaries?account_id=..., which runs the
#              recalculation. Both times and their ratio (target: reverse at
#              most 2x in order). Section "ingest-one-account".
# resume       the account of part one-account loaded in datetime order
#              (loaded again when that part did not run), recalculated; then
#              BENCH_RESUME_ROUNDS (7) rounds, each timing through HTTP in a
#              rotating order: appending one transaction after the last and
#              reading the summaries; inserting one in the middle and
#              reading; and, as the reference, a read after the account's
#              ledger was marked unusable (the recalculation from the first
#              transaction). Medians and the ratios full / append and
#              full / middle. Section "ingest-resume".
# ("ingest" is accepted as the old name of part single.)
#
# Other knobs: BENCH_TAXD, the binary measured (default build/taxd);
# BENCH_NGINX=0 skips nginx. Work files go under $TMPDIR (default /tmp) and
# are removed at exit: the 1M parts need ~2 GB each, load10m ~20 GB (it
# checks first).
#
# A part that fails says why and writes no section; the others still run and
# the script exits non-zero naming the failed parts. Each section states the
# machine, the date, N, accounts and clients, and is replaced whole by the
# next run (bench/lib.sh write_section). Smoke check:
#   BENCH_TX=20000 BENCH_ACCOUNTS=1000 BENCH_UPGRADE_TX=20000 \
#   BENCH_10M_TX=200000 BENCH_10M_STEP=20000 BENCH_ONE_ACCOUNT_TX=5000 make bench-ingest
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

TX=${BENCH_TX:-1000000}
ACCOUNTS=${BENCH_ACCOUNTS:-10000}
CLIENTS=${BENCH_CLIENTS:-16}
FLOOR_SINGLE=${BENCH_FLOOR_SINGLE_BATCH:-16}
BATCH=${BENCH_BATCH:-1000}
BATCH_CLIENTS=${BENCH_BATCH_CLIENTS:-4}
NGINX=${BENCH_NGINX:-1}
FLOOR_SRC=${BENCH_FLOOR_SRC:-../shared/bench/ingest_floor.c}
UPGRADE_FROM=${BENCH_UPGRADE_FROM:-2f8b27f}
UPGRADE_TX=${BENCH_UPGRADE_TX:-1000000}
TEN_TX=${BENCH_10M_TX:-10000000}
TEN_STEP=${BENCH_10M_STEP:-1000000}
TEN_ACCOUNTS=${BENCH_10M_ACCOUNTS:-$ACCOUNTS}
ONE_TX=${BENCH_ONE_ACCOUNT_TX:-100000}
RESUME_ROUNDS=${BENCH_RESUME_ROUNDS:-7}
PARTS=${BENCH_PARTS:-"single batch recalc upgrade load10m one-account resume"}
TAXD=${BENCH_TAXD:-$PWD/build/taxd}
PY=/usr/bin/python3

work=$(mktemp -d)
taxd_pid=""
cleanup() {
    [ -n "$taxd_pid" ] && kill "$taxd_pid" 2>/dev/null && wait "$taxd_pid" 2>/dev/null
    [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# ---- tools: the load generator, the floor, and the store's own writer
# (store_ingest, linked with taxd's objects: the one-account fallback)
mkdir -p "$work/bin"
CFLAGS_BENCH="-std=c17 -D_GNU_SOURCE -Isrc -O2 -Wall -Wextra -Werror -Wshadow"
cc $CFLAGS_BENCH -o "$work/bin/ingest_load" bench/ingest_load.c -lpthread
[ -f "$FLOOR_SRC" ] || { echo "bench: the floor's source $FLOOR_SRC is missing (BENCH_FLOOR_SRC)" >&2; exit 1; }
cc -O2 -o "$work/bin/ingest_floor" "$FLOOR_SRC" -lsqlite3
# (an archive, so only the objects the program needs are linked)
objs=$(find src -name '*.c' ! -path src/main.c | sort | sed 's|^|build/obj/|; s|\.c$|.o|')
ar rcs "$work/bin/libtaxd.a" $(for o in $objs; do [ -f "$o" ] && echo "$o"; done)
cc $CFLAGS_BENCH -o "$work/bin/store_ingest" bench/store_ingest.c "$work/bin/libtaxd.a" \
    -lmicrohttpd -ljansson -lsqlite3 -lcrypto -lcurl -lpthread

# ---- helpers
field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
jfield() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"; }
now() { date +%s.%N; }
calc() { $PY -c "print(f'{$1:$2}')"; }
# ratio EXPR: two decimals, or two significant digits below 0.1 (0.004 must not print as 0.00)
ratio() { $PY -c "x = $1; print(f'{x:.2f}' if x >= 0.095 else f'{x:.2g}')"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# judge VALUE OP TARGET: PASS when VALUE OP TARGET holds, else SHORT
judge() { $PY -c "import sys; print('PASS' if $1 $2 $3 else 'SHORT')"; }
stamp() { date -u +%Y-%m-%dT%H:%MZ; }
# the machine, as every section states it
machine() {
    printf '%s cores, %s GiB memory, load average %s' "$(nproc)" \
        "$(awk '$1 == "MemTotal:" { printf "%.1f", $2 / 1048576 }' /proc/meminfo)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}
fail() { echo "bench: $*" >&2; exit 1; }
port=""; token=""

start_taxd() { # db
    port=$(free_port)
    $TAXD serve --db "$1" --listen "127.0.0.1:$port" 2>>"$work/taxd.log" &
    taxd_pid=$!
    wait_http "http://127.0.0.1:$port/healthz" 20
    token=$(curl -s -X POST "http://127.0.0.1:$port/v1/oauth/token" -H 'content-type: application/json' \
        -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$client\",\"client_secret\":\"$secret\"}" |
        sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
    [ -n "$token" ] || { echo "bench: no token" >&2; exit 1; }
}

stop_taxd() {
    kill "$taxd_pid"; wait "$taxd_pid" || true; taxd_pid=""
}

vm_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# new_db DB ACCOUNTS PREFIX: a tenant with its rate limit raised, one owner,
# the accounts PREFIX0.. and the five assets, made through the API; leaves
# tenant/client/secret set and taxd stopped (its WAL checkpointed at close).
new_db() {
    creds=$($TAXD admin --db "$1" tenant create --name bench)
    tenant=$(field "$creds" tenant_id); client=$(field "$creds" client_id); secret=$(field "$creds" client_secret)
    $TAXD admin --db "$1" ratelimit set --tenant "$tenant" --rate 100000000 --burst 100000000 >/dev/null
    start_taxd "$1"
    $PY bench/make_accounts.py "$port" "$token" "$2" "$3"
    stop_taxd
}

count_rows() { # db
    $PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM transactions').fetchone()[0])" "$1"
}


# db_bytes DB: the database's size after a WAL checkpoint (taxd stopped)
db_bytes() {
    $PY - "$1" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
db.close()
wal = sys.argv[1] + "-wal"
print(os.path.getsize(sys.argv[1]) + (os.path.getsize(wal) if os.path.exists(wal) else 0))
PY
}

schema_version() { $PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])" "$1"; }

dirty_accounts() { # db: "dirty total"
    $PY -c "import sqlite3,sys; print(*sqlite3.connect(sys.argv[1]).execute('SELECT count(dirty_from), count(*) FROM accounts').fetchone())" "$1"
}

# floor_run N BATCH ACCOUNTS: ingest_floor's JSON line, on the disk taxd uses
floor_run() {
    echo "bench-ingest: the floor, $1 transactions over $3 accounts, $2 per commit ..." >&2
    fl=$("$work/bin/ingest_floor" "$work/floor.db" "$1" "$2" "$3")
    rm -f "$work/floor.db" "$work/floor.db-wal" "$work/floor.db-shm"
    printf '%s' "$fl"
}

# timed OUT CMD...: runs CMD (stdout to OUT, stderr to OUT.err) and prints
# {"seconds","maxrss_kb","rc"}: wall time and the child's peak RSS (getrusage)
timed() {
    $PY - "$@" <<'PY'
import json, resource, subprocess, sys, time
out, err = open(sys.argv[1], "wb"), open(sys.argv[1] + ".err", "wb")
t0 = time.perf_counter()
rc = subprocess.run(sys.argv[2:], stdout=out, stderr=err, stdin=subprocess.DEVNULL).returncode
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": round(seconds, 3), "rc": rc,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, separators=(",", ":")))
PY
}

# need_recalc_cmd PART: fails PART clearly when this build has no
# `taxd admin inventory recalc --all` (it arrives with another branch)
need_recalc_cmd() {
    rm -rf "$work/probe"; mkdir -p "$work/probe"
    if ! $TAXD admin --db "$work/probe/taxd.db" inventory recalc --all >"$work/probe/out" 2>&1 &&
        grep -q 'unknown command' "$work/probe/out"; then
        fail "part $1 needs the operator command \`taxd admin --db DB inventory recalc --all\`, which this build does not have ($(cat "$work/probe/out")); it arrives by merge from the branch that builds it"
    fi
}

# batch_absent PART OUT: the message when ingest_load stopped on a 4xx to an array
batch_absent() {
    fail "part $1: the server answered $(jfield "$2" rejected) to a JSON array of $BATCH transactions on POST /v1/transactions/external-id: this build has no batch endpoint (it arrives by merge from the branch that builds it), or it rejects batches of $BATCH (BENCH_BATCH)"
}

# load_http DIR N ACCOUNTS BATCH CLIENTS: a fresh DIR/taxd.db with ACCOUNTS
# accounts, then N transactions posted by CLIENTS clients, BATCH per request
# (0: one per request, the single body). Leaves taxd stopped; sets load
# (ingest_load's line), load_rc (3: a 4xx to an array), hwm_idle, hwm, rss.
load_http() {
    rm -rf "$1"; mkdir -p "$1"
    echo "bench-ingest: $3 accounts into $1 ..." >&2
    new_db "$1/taxd.db" "$3" a
    printf '%s %s %s\n' "$tenant" "$client" "$secret" > "$1/creds"
    start_taxd "$1/taxd.db"
    hwm_idle=$(vm_kb "$taxd_pid" VmHWM)
    echo "bench-ingest: $2 transactions, $([ "$4" = 0 ] && echo "one" || echo "$4") per request, $5 clients ..." >&2
    load_rc=0
    load=$("$work/bin/ingest_load" --port "$port" --token "$token" --tx "$2" --accounts "$3" \
        --clients "$5" --order shuffled $([ "$4" = 0 ] || echo "--batch $4")) || load_rc=$?
    hwm=$(vm_kb "$taxd_pid" VmHWM); rss=$(vm_kb "$taxd_pid" VmRSS)
    stop_taxd
}

# nonok LINE: non-2xx answers and transport errors in an ingest_load line
nonok() { echo $(( $(jfield "$1" 4xx) + $(jfield "$1" 5xx) + $(jfield "$1" errors) )); }
mib() { calc "$1/1024" .1f; }

GEN_TEXT="trades of bench/ingest_gen.h: 3 in 4 buy an asset for USD with a USD rate, 1 in 4 sell"
FLOOR_TEXT="\`ingest_floor\` (\`../shared/bench/ingest_floor.c\`: one SQLite writer storing the transaction row with its ~330-byte body, two line items and the account's watermark; WAL, synchronous=FULL; no HTTP, JSON or events)"

# ======================================================== part: single
part_single() {
    at=$(stamp); mach=$(machine)
    load_http "$work/single" "$TX" "$ACCOUNTS" 0 "$CLIENTS"
    db="$work/single/taxd.db"
    rows=$(count_rows "$db"); bad=$(nonok "$load")
    [ "$load_rc" = 0 ] && [ "$bad" = 0 ] && [ "$rows" = "$TX" ] ||
        fail "part single: $rows rows stored of $TX, $bad non-2xx answers or errors: $load"
    bytes=$(db_bytes "$db")
    floor=$(floor_run "$TX" "$FLOOR_SINGLE" "$ACCOUNTS")
    h_tps=$(jfield "$load" tx_per_s); f_tps=$(jfield "$floor" tx_per_s); f_bytes=$(jfield "$floor" db_bytes)
    ratio=$(ratio "$h_tps/$f_tps")
    nginx_line=""
    if [ "$NGINX" = 1 ]; then
        nport=$(free_port)
        mkdir -p "$work/nginx/logs"
        cat > "$work/nginx/nginx.conf" <<CONF
worker_processes $(nproc);
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_buffer_size 16k;
    server {
        listen 127.0.0.1:$nport;
        location / { default_type application/json; return 200 '{"data":{}}'; }
    }
}
CONF
        nginx -p "$work/nginx" -c "$work/nginx/nginx.conf"
        wait_http "http://127.0.0.1:$nport/" 10
        echo "bench-ingest: $TX POSTs to nginx ..." >&2
        ng=$("$work/bin/ingest_load" --port "$nport" --token x --tx "$TX" --accounts "$ACCOUNTS" \
            --clients "$CLIENTS" --order shuffled)
        kill "$(cat "$work/nginx/nginx.pid")"; rm -f "$work/nginx/nginx.pid"
        nginx_line="The HTTP path's own bound, nginx answering the same POSTs from the same client with \`return 200\` ($(nproc) workers): $(jfield "$ng" rps) requests/s, taxd / nginx $(ratio "$h_tps/$(jfield "$ng" rps)")."
    fi
    cat > "$work/single.md" <<MD
## Transaction ingest, one per request (\`make bench-ingest\`, part single)

Measured $at on $mach: $TX transactions ($GEN_TEXT) over $ACCOUNTS accounts x 5 assets, in
shuffled datetime order, one per \`POST /v1/transactions/external-id\` from $CLIENTS keep-alive
clients with one request in flight each (\`bench/ingest_load.c\`), into a fresh database; taxd with
its defaults (16 threads, WAL, synchronous=FULL, group commit). Floor: $FLOOR_TEXT at the same
N and accounts, $FLOOR_SINGLE transactions per commit (what $CLIENTS clients in flight can share),
run right after taxd on the same disk.

| | taxd | floor | taxd / floor | target |
|---|---|---|---|---|
| transactions/s | **$h_tps** | $f_tps ($FLOOR_SINGLE per commit) | **$ratio** | >= 0.5: **$(judge "$ratio" ">=" 0.5)** |
| bytes of database per transaction (after \`wal_checkpoint(TRUNCATE)\`) | $(calc "$bytes/$TX" .0f) | $(calc "$f_bytes/$TX" .0f) | $(ratio "$bytes/$f_bytes") | recorded |

taxd: $(jfield "$load" 2xx) answers 2xx, none other; p50 $(jfield "$load" p50_ms) ms, p99 $(jfield "$load" p99_ms) ms per
request; $(calc "$bytes/1048576" .1f) MiB of database (the floor: $(calc "$f_bytes/1048576" .1f) MiB; taxd's rows also carry uuid
keys, the asset links and each account's outbox event). Peak memory (VmHWM): $(mib "$hwm") MiB after the
load ($(mib "$hwm_idle") MiB before it). $nginx_line
Reproduce: \`BENCH_PARTS=single BENCH_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_CLIENTS=$CLIENTS make bench-ingest\`.
MD
    write_section ingest "$work/single.md"
    cat "$work/single.md"
}

# ======================================================== part: batch
part_batch() {
    at=$(stamp); mach=$(machine)
    load_http "$work/batch" "$TX" "$ACCOUNTS" "$BATCH" "$BATCH_CLIENTS"
    [ "$load_rc" = 3 ] && batch_absent batch "$load"
    db="$work/batch/taxd.db"
    rows=$(count_rows "$db"); bad=$(nonok "$load"); el_err=$(jfield "$load" el_error)
    el_ok=$(( $(jfield "$load" el_created) + $(jfield "$load" el_updated) + $(jfield "$load" el_unchanged) ))
    [ "$load_rc" = 0 ] && [ "$bad" = 0 ] && [ "$el_err" = 0 ] && [ "$rows" = "$TX" ] ||
        fail "part batch: $rows rows stored of $TX, $bad non-2xx answers or errors, $el_err elements with status error: $load"
    [ "$el_ok" = "$TX" ] || echo "bench-ingest: warning: $el_ok element results read for $TX transactions (an answer shape ingest_load does not count?)" >&2
    bytes=$(db_bytes "$db")
    floor=$(floor_run "$TX" "$BATCH" "$ACCOUNTS")
    h_tps=$(jfield "$load" tx_per_s); f_tps=$(jfield "$floor" tx_per_s); f_bytes=$(jfield "$floor" db_bytes)
    ratio=$(ratio "$h_tps/$f_tps")
    cat > "$work/batch.md" <<MD
## Transaction ingest in batches (\`make bench-ingest\`, part batch)

Measured $at on $mach: $TX transactions ($GEN_TEXT) over $ACCOUNTS accounts x 5 assets, in
shuffled datetime order, as JSON arrays of $BATCH (the batch endpoint, \`POST
/v1/transactions/external-id\` with an array body) from $BATCH_CLIENTS keep-alive clients with one
request in flight each (\`bench/ingest_load.c --batch $BATCH\`), into a fresh database; taxd with its
defaults. Floor: $FLOOR_TEXT at the same N and accounts, $BATCH transactions per commit, run right
after taxd on the same disk.

| | taxd | floor | taxd / floor | target |
|---|---|---|---|---|
| transactions/s | **$h_tps** | $f_tps ($BATCH per commit) | **$ratio** | >= 0.5: **$(judge "$ratio" ">=" 0.5)** |
| bytes of database per transaction (after \`wal_checkpoint(TRUNCATE)\`) | $(calc "$bytes/$TX" .0f) | $(calc "$f_bytes/$TX" .0f) | $(ratio "$bytes/$f_bytes") | recorded |

taxd: $(jfield "$load" requests) requests, all 200; elements created $(jfield "$load" el_created), updated
$(jfield "$load" el_updated), unchanged $(jfield "$load" el_unchanged), error 0; p50 $(jfield "$load" p50_ms) ms, p99
$(jfield "$load" p99_ms) ms per batch. Peak memory (VmHWM): $(mib "$hwm") MiB after the load ($(mib "$hwm_idle") MiB before it).
Reproduce: \`BENCH_PARTS=batch BENCH_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_BATCH=$BATCH BENCH_BATCH_CLIENTS=$BATCH_CLIENTS make bench-ingest\`.
MD
    write_section ingest-batch "$work/batch.md" "ingest"
    cat "$work/batch.md"
}

# recalc_all DB OUT: times `taxd admin inventory recalc --all` on DB (taxd
# stopped); sets rc_s, rc_kb, rc_out and dirty_before / dirty_after
recalc_all() {
    dirty_before=$(dirty_accounts "$1")
    echo "bench-ingest: taxd admin inventory recalc --all (dirty, total accounts: $dirty_before) ..." >&2
    r=$(timed "$2" "$TAXD" admin --db "$1" inventory recalc --all)
    [ "$(jfield "$r" rc)" = 0 ] || fail "taxd admin inventory recalc --all failed ($r): $(head -c 600 "$2.err") $(head -c 600 "$2")"
    rc_s=$(calc "$(jfield "$r" seconds)" .2f); rc_kb=$(jfield "$r" maxrss_kb)
    rc_out=$(head -c 400 "$2" | tr '\n' ' ')
    dirty_after=$(dirty_accounts "$1")
}

# ======================================================== part: recalc
part_recalc() {
    need_recalc_cmd recalc
    at=$(stamp); mach=$(machine)
    db=""
    for p in batch single; do
        if [ -f "$work/$p/taxd.db" ] && [ ! -f "$work/$p/recalculated" ] &&
            [ "$(count_rows "$work/$p/taxd.db")" = "$TX" ]; then
            db="$work/$p/taxd.db"; mark="$work/$p/recalculated"; src="the database part $p loaded in this run"; break
        fi
    done
    if [ -z "$db" ]; then
        load_http "$work/recalc" "$TX" "$ACCOUNTS" "$BATCH" "$BATCH_CLIENTS"; src="loaded for this part in batches of $BATCH"
        if [ "$load_rc" = 3 ]; then
            echo "bench-ingest: no batch endpoint: loading one transaction per request instead" >&2
            load_http "$work/recalc" "$TX" "$ACCOUNTS" 0 "$CLIENTS"; src="loaded for this part one per request"
        fi
        db="$work/recalc/taxd.db"; mark="$work/recalc/recalculated"
        [ "$(count_rows "$db")" = "$TX" ] || fail "part recalc: the load stored $(count_rows "$db") of $TX: $load"
    fi
    recalc_all "$db" "$work/recalc.out"
    touch "$mark"
    set -- $dirty_before; d_before=$1; n_acc=$2
    set -- $dirty_after; d_after=$1
    [ "$d_before" = "$n_acc" ] || echo "bench-ingest: warning: $d_before of $n_acc accounts dirty before the recalculation" >&2
    cat > "$work/recalc.md" <<MD
## Recalculation of every account (\`make bench-ingest\`, part recalc)

Measured $at on $mach: \`taxd admin --db DB inventory recalc --all\` on $TX transactions ($GEN_TEXT)
over $ACCOUNTS accounts x 5 assets ($src), $d_before of $n_acc accounts dirty (never read since
their transactions arrived), taxd stopped; one run, wall time and peak RSS from getrusage of the
command. Floor: none (the issue sets an absolute target).

| | taxd | target |
|---|---|---|
| recalculation of all $n_acc accounts | **$rc_s s** | <= 3 s: **$(judge "$rc_s" "<=" 3)** |
| peak RSS of the command | $(mib "$rc_kb") MiB | recorded |

Dirty accounts after it: $d_after. Its output: \`$rc_out\`
Reproduce: \`BENCH_PARTS=recalc BENCH_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS make bench-ingest\` (loads its own
database; after part batch or single it reuses theirs).
MD
    rm -rf "$work/single" "$work/batch" "$work/recalc" # no later part needs them
    write_section ingest-recalc "$work/recalc.md" "ingest-batch ingest"
    cat "$work/recalc.md"
}

# ======================================================== part: upgrade
part_upgrade() {
    at=$(stamp); mach=$(machine)
    old="$work/old"; rm -rf "$old"; mkdir -p "$old"
    rev=$(git rev-parse --short "$UPGRADE_FROM")
    echo "bench-ingest: building release $rev ..." >&2
    git archive "$UPGRADE_FROM" src Makefile scripts bench | tar -x -C "$old"
    make -C "$old" -j"$(nproc)" build/taxd >"$old/build.log" 2>&1 || fail "part upgrade: building $rev failed: $(tail -5 "$old/build.log")"
    oobjs=$(cd "$old" && find src -name '*.c' ! -path src/main.c | sort | sed "s|^|$old/build/obj/|; s|\.c\$|.o|")
    ar rcs "$old/libtaxd.a" $oobjs
    cc -std=c17 -D_GNU_SOURCE -I"$old/src" -O2 -o "$old/store_ingest" "$old/bench/store_ingest.c" "$old/libtaxd.a" \
        -lmicrohttpd -ljansson -lsqlite3 -lcrypto -lcurl -lpthread
    d="$work/upgrade"; rm -rf "$d"; mkdir -p "$d"; db="$d/taxd.db"
    new_taxd=$TAXD; TAXD="$old/build/taxd"
    echo "bench-ingest: $ACCOUNTS accounts with the old binary ..." >&2
    new_db "$db" "$ACCOUNTS" a
    TAXD=$new_taxd
    echo "bench-ingest: $UPGRADE_TX transactions through the old store (16 threads) ..." >&2
    t0=$(now)
    out=$("$old/store_ingest" ingest --db "$db" --tenant "$tenant" --tx "$UPGRADE_TX" --accounts "$ACCOUNTS" \
        --threads 16 --order shuffled)
    load_s=$(calc "$(now)-$t0" .1f)
    [ "$(jfield "$out" failures)" = 0 ] && [ "$(count_rows "$db")" = "$UPGRADE_TX" ] ||
        fail "part upgrade: the old store's load failed: $out"
    v_old=$(schema_version "$db"); b_old=$(db_bytes "$db")
    echo "bench-ingest: the new binary's first start on it (schema v$v_old) ..." >&2
    first=$(timed "$d/first.out" "$TAXD" admin --db "$db" tenant list)
    [ "$(jfield "$first" rc)" = 0 ] || fail "part upgrade: the new binary's first start failed: $(head -c 600 "$d/first.out.err")"
    second=$(timed "$d/second.out" "$TAXD" admin --db "$db" tenant list)
    v_new=$(schema_version "$db"); b_new=$(db_bytes "$db")
    [ "$(count_rows "$db")" = "$UPGRADE_TX" ] || fail "part upgrade: $(count_rows "$db") transactions after the upgrade, $UPGRADE_TX before"
    f_s=$(calc "$(jfield "$first" seconds)" .2f); s_s=$(calc "$(jfield "$second" seconds)" .2f)
    if [ "$v_old" = "$v_new" ]; then
        note="Old and new schema are both v$v_new: there was nothing to migrate, so the first start only opened the store; the figure becomes the migration's time once a new schema arrives by merge."
    else
        note="Migrations v$((v_old + 1))..v$v_new ran in the first start: about $(calc "$f_s-$s_s" .2f) s over an ordinary start."
    fi
    cat > "$work/upgrade.md" <<MD
## Upgrade of a loaded database (\`make bench-ingest\`, part upgrade)

Measured $at on $mach: release $rev (\`git archive $UPGRADE_FROM\`, built here) made a database of
$ACCOUNTS accounts x 5 assets and $UPGRADE_TX transactions ($GEN_TEXT, written through that
release's own store, \`bench/store_ingest.c\` of $rev with its objects, 16 threads, in $load_s s);
schema v$v_old, $(calc "$b_old/1048576" .1f) MiB. Then the new binary's first command on it, \`taxd admin --db DB
tenant list\` (opening the store runs the migrations), beside a second identical command. Floor: none
(recorded, no target).

| | first start (migrations) | second start | schema | database |
|---|---|---|---|---|
| new binary | **$f_s s**, peak RSS $(mib "$(jfield "$first" maxrss_kb)") MiB | $s_s s, peak RSS $(mib "$(jfield "$second" maxrss_kb)") MiB | v$v_old -> v$v_new | $(calc "$b_old/1048576" .1f) -> $(calc "$b_new/1048576" .1f) MiB |

$note
Reproduce: \`BENCH_PARTS=upgrade BENCH_UPGRADE_TX=$UPGRADE_TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_UPGRADE_FROM=$UPGRADE_FROM make bench-ingest\`.
MD
    write_section ingest-upgrade "$work/upgrade.md" "ingest-10m ingest-recalc ingest-batch ingest"
    cat "$work/upgrade.md"
}

# ======================================================== part: load10m
part_load10m() {
    need_recalc_cmd load10m
    at=$(stamp); mach=$(machine)
    rm -rf "$work/single" "$work/batch" "$work/recalc" # room: no later part needs them
    d="$work/load10m"; rm -rf "$d"; mkdir -p "$d"; db="$d/taxd.db"
    need_kb=$((TEN_TX * 2)) # ~1.5 KB per transaction in taxd, then the floor's copy
    free_kb=$(df -Pk "$work" | awk 'NR == 2 { print $4 }')
    [ "$free_kb" -ge "$need_kb" ] ||
        fail "part load10m: $((free_kb / 1048576)) GiB free under $work, about $((need_kb / 1048576)) GiB needed (set TMPDIR to a larger disk)"
    echo "bench-ingest: load10m: $TEN_ACCOUNTS accounts ..." >&2
    new_db "$db" "$TEN_ACCOUNTS" a
    start_taxd "$db"
    hwm_idle=$(vm_kb "$taxd_pid" VmHWM)
    from=0; rates=""; table=""; first_rate=""; t_all=0
    while [ "$from" -lt "$TEN_TX" ]; do
        count=$TEN_STEP; [ $((from + count)) -gt "$TEN_TX" ] && count=$((TEN_TX - from))
        rc=0
        out=$("$work/bin/ingest_load" --port "$port" --token "$token" --tx "$TEN_TX" --accounts "$TEN_ACCOUNTS" \
            --clients "$BATCH_CLIENTS" --batch "$BATCH" --order shuffled --from "$from" --count "$count") || rc=$?
        [ "$rc" = 3 ] && batch_absent load10m "$out"
        [ "$rc" = 0 ] && [ "$(nonok "$out")" = 0 ] && [ "$(jfield "$out" el_error)" = 0 ] ||
            fail "part load10m: transactions $from..: $out"
        rate=$(jfield "$out" tx_per_s); rates="$rates $rate"; t_all=$(calc "$t_all+$(jfield "$out" seconds)" .3f)
        [ -n "$first_rate" ] || first_rate=$rate
        echo "bench-ingest: load10m: transactions $from..$((from + count - 1)): $rate tx/s" >&2
        table="$table| $from..$((from + count - 1)) | $rate | $(ratio "$rate/$first_rate") | p99 $(jfield "$out" p99_ms) ms |
"
        from=$((from + count))
    done
    hwm=$(vm_kb "$taxd_pid" VmHWM)
    stop_taxd
    rows=$(count_rows "$db")
    [ "$rows" = "$TEN_TX" ] || fail "part load10m: $rows rows stored of $TEN_TX"
    bytes=$(db_bytes "$db")
    min_rate=$(echo $rates | tr ' ' '\n' | sort -g | head -1)
    drift=$(ratio "$min_rate/$first_rate")
    recalc_all "$db" "$d/recalc.out"
    start_taxd "$db"
    echo "bench-ingest: load10m: an all-accounts inventory-summary report ..." >&2
    rep=$($PY - "$port" "$token" "$db" <<'PY'
import http.client, json, sqlite3, sys, time
port, token, db = int(sys.argv[1]), sys.argv[2], sys.argv[3]
H = {"authorization": "Bearer " + token, "content-type": "application/json"}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
t0 = time.perf_counter()
c.request("POST", "/v1/reports/inventory-summary", "{}", H)
r = c.getresponse(); body = json.loads(r.read())
assert r.status == 202, (r.status, body)
rid = body["report_id"]
deadline = time.monotonic() + 1800
while True:
    c.request("GET", f"/v1/reports/inventory-summary/{rid}", headers=H)
    s = json.loads(c.getresponse().read())
    if s["status"] in ("completed", "failed") or time.monotonic() > deadline:
        break
    time.sleep(0.01)
client_s = time.perf_counter() - t0
assert s["status"] == "completed", s
ms = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(
    "SELECT finished_at - created_at FROM reports WHERE id = ?", (rid,)).fetchone()[0]
print(json.dumps({"client_s": round(client_s, 3), "server_s": ms / 1000}, separators=(",", ":")))
print("bench-ingest: report metadata: " + json.dumps(s.get("metadata")), file=sys.stderr)
PY
)
    rep_hwm=$(vm_kb "$taxd_pid" VmHWM)
    stop_taxd
    rep_s=$(calc "$(jfield "$rep" server_s)" .2f); rep_client=$(calc "$(jfield "$rep" client_s)" .2f)
    rm -rf "$d" # 10M transactions of disk, before the floor writes its own
    floor=$(floor_run "$TEN_TX" "$BATCH" "$TEN_ACCOUNTS")
    all_tps=$(calc "$TEN_TX/$t_all" .1f); f_tps=$(jfield "$floor" tx_per_s); f_bytes=$(jfield "$floor" db_bytes)
    cat > "$work/10m.md" <<MD
## Ten million transactions on one node (\`make bench-ingest\`, part load10m)

Measured $at on $mach: $TEN_TX transactions ($GEN_TEXT) over $TEN_ACCOUNTS accounts x 5 assets, in
shuffled datetime order, in batches of $BATCH from $BATCH_CLIENTS keep-alive clients into one taxd
(defaults), timed over each successive $TEN_STEP; then, taxd stopped, \`taxd admin inventory recalc
--all\`; then, taxd started again, one all-accounts inventory-summary report on the now clean
accounts (\`POST /v1/reports/inventory-summary\` \`{}\`, polled until completed; the time is the
report row's finished_at - created_at). Floor: $FLOOR_TEXT at the same N and accounts, $BATCH per
commit.

| transactions | transactions/s | / first | |
|---|---|---|---|
$table
| | taxd | floor | taxd / floor | target |
|---|---|---|---|---|
| lowest step / first step | **$drift** | | | >= 0.7: **$(judge "$drift" ">=" 0.7)** |
| whole load, transactions/s | $all_tps | $f_tps | $(ratio "$all_tps/$f_tps") | recorded |
| bytes of database per transaction | $(calc "$bytes/$TEN_TX" .0f) | $(calc "$f_bytes/$TEN_TX" .0f) | $(ratio "$bytes/$f_bytes") | recorded |
| recalculation of all accounts (\`taxd admin\`) | $rc_s s, peak RSS $(mib "$rc_kb") MiB | | | recorded |
| all-accounts report on clean accounts | **$rep_s s** | | | <= 5 s: **$(judge "$rep_s" "<=" 5)** |

taxd's peak memory (VmHWM) over the load: **$(mib "$hwm") MiB** ($(mib "$hwm_idle") MiB before it). Database
after a checkpoint: $(calc "$bytes/1073741824" .2f) GiB. The report as the client saw it (trigger to
\`completed\` polled every 10 ms): $rep_client s; the serving taxd's peak memory by then (VmHWM, a fresh
process after the recalculation): $(mib "$rep_hwm") MiB. Dirty accounts before / after the recalculation:
$(echo $dirty_before | cut -d' ' -f1) / $(echo $dirty_after | cut -d' ' -f1) of $(echo $dirty_before | cut -d' ' -f2).
Reproduce: \`BENCH_PARTS=load10m BENCH_10M_TX=$TEN_TX BENCH_10M_STEP=$TEN_STEP BENCH_10M_ACCOUNTS=$TEN_ACCOUNTS make bench-ingest\`.
MD
    write_section ingest-10m "$work/10m.md" "ingest-recalc ingest-batch ingest"
    cat "$work/10m.md"
}

# =================================================== part: one-account
# load_one ORDER: a fresh database with account solo0, ONE_TX transactions
# posted in ORDER, then the first summaries read. Sets load_s, read_s, read_status.
load_one() {
    d="$work/one-$1"; mkdir -p "$d"
    new_db "$d/taxd.db" 1 solo
    printf '%s %s %s\n' "$tenant" "$client" "$secret" > "$d/creds" # for part resume
    start_taxd "$d/taxd.db"
    echo "bench-ingest: one account, $ONE_TX transactions, order $1 ..." >&2
    t0=$(now)
    out=$("$work/bin/ingest_load" --port "$port" --token "$token" --tx "$ONE_TX" --accounts 1 \
        --account-prefix solo --clients "$CLIENTS" --order "$1")
    t1=$(now)
    read_status=$(curl -s -o "$d/summaries.json" -w '%{http_code}' \
        "http://127.0.0.1:$port/v1/inventory/summaries?account_id=solo0" -H "authorization: Bearer $token")
    t2=$(now)
    stop_taxd
    bad=$(( $(jfield "$out" 4xx) + $(jfield "$out" 5xx) + $(jfield "$out" errors) ))
    [ "$bad" = 0 ] || { echo "bench: non-2xx answers: $out" >&2; exit 1; }
    load_s=$(calc "$t1-$t0" .2f)
    if [ "$read_status" = 200 ]; then
        read_s=$(calc "$t2-$t1" .2f); how="GET /v1/inventory/summaries"
    else # the endpoint is not there yet: recalculate directly, as its first read would
        r=$("$work/bin/store_ingest" recalc --db "$d/taxd.db" --tenant "$tenant" --account solo0)
        read_s=$(calc "$(jfield "$r" seconds)" .2f); how="inventory_refresh called directly (the endpoint answered $read_status)"
    fi
}

part_one_account() {
    load_one asc;  asc_load=$load_s;  asc_read=$read_s;  asc_how=$how
    load_one desc; desc_load=$load_s; desc_read=$read_s; desc_how=$how
    asc_total=$(calc "$asc_load+$asc_read" .2f); desc_total=$(calc "$desc_load+$desc_read" .2f)
    ratio=$(calc "$desc_total/$asc_total" .2f)
    same=$($PY -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print("identical" if a == b else "DIFFERENT")' "$work/one-asc/summaries.json" "$work/one-desc/summaries.json")
    cat > "$work/one.md" <<MD
## One account loaded in reverse order (\`make bench-ingest\`)

Measured $(stamp) on $(machine): $ONE_TX transactions of one account (the
ingest mix, 5 assets), posted by $CLIENTS concurrent clients in datetime order and, into another
fresh database, in reverse datetime order (newest first); then the first read of the account's
inventory, which runs the recalculation. The recalculation is lazy (\`src/inventory/recalc.h\`):
writes only lower the account's watermark, so the order of arrival costs nothing at write time.

| order | load | first read | total |
|---|---|---|---|
| in datetime order | $asc_load s | $asc_read s | $asc_total s |
| reverse datetime order | $desc_load s | $desc_read s | $desc_total s |

Reverse / in order: **$ratio** (target: at most 2). First read: $asc_how; the two answers are
$same (arrival order must not change the inventory).
Reproduce: \`BENCH_PARTS=one-account BENCH_ONE_ACCOUNT_TX=$ONE_TX make bench-ingest\`.
MD
    write_section ingest-one-account "$work/one.md"
    cat "$work/one.md"
}

# =================================================== part: resume
part_resume() {
    [ -f "$work/one-asc/taxd.db" ] || load_one asc
    read -r tenant client secret < "$work/one-asc/creds"
    start_taxd "$work/one-asc/taxd.db"
    loaded=$(count_rows "$work/one-asc/taxd.db")
    echo "bench-ingest: resume, $RESUME_ROUNDS rounds on $loaded transactions ..." >&2
    out=$($PY - "$port" "$token" "$work/one-asc/taxd.db" "$RESUME_ROUNDS" "$ONE_TX" <<'PY'
import http.client, json, sqlite3, statistics, sys, time
port, token, db, rounds, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
H = {"authorization": "Bearer " + token, "content-type": "application/json"}
c = http.client.HTTPConnection("127.0.0.1", port)
def call(method, path, body=None):
    c.request(method, path, json.dumps(body) if body is not None else None, H)
    r = c.getresponse(); text = r.read()
    assert r.status in (200, 201), (path, r.status, text)
    return text
def read():
    return call("GET", "/v1/inventory/summaries?account_id=solo0")
def iso(seconds):  # 2020-01-01 + seconds (ingest_gen.h), with milliseconds
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1577836800 + int(seconds))) + ".500Z"
def buy(tid, seconds):
    return {"id": tid, "account_id": "solo0", "datetime": iso(seconds), "type": "trade",
            "sent": [{"asset_amount": {"amount": "100.5", "asset": {"code": "USD", "type": "fiat"}}}],
            "received": [{"asset_amount": {"amount": "0.01", "asset": {"code": "BTC", "type": "crypto"}},
                          "rates": [{"amount": "10050", "asset": {"code": "USD", "type": "fiat"}}]}]}
raw = sqlite3.connect(db, timeout=30)
def unusable():  # what a ledger from before migration v7 looks like: recompute from the first
    raw.execute("UPDATE accounts SET inventory_basis = NULL, inventory_version = inventory_version + 1,"
                " dirty_from = (SELECT min(datetime) FROM transactions t WHERE t.account = accounts.seq)"
                " WHERE id = 'solo0'")
    raw.commit()
read()  # the first read: recalculated, as the part's premise
times = {"append": [], "middle": [], "full": []}
for r in range(rounds):
    kinds = ["append", "middle", "full"]
    kinds = kinds[r % 3:] + kinds[:r % 3]  # rotate: the machine's drift spreads over all three
    for kind in kinds:
        if kind == "full":
            unusable(); t0 = time.perf_counter(); read()
        else:
            at = n + 1000 + r if kind == "append" else n // 2 + r
            t0 = time.perf_counter(); call("POST", "/v1/transactions/external-id", buy(f"resume-{kind}-{r}", at)); read()
        times[kind].append(time.perf_counter() - t0)
med = {k: statistics.median(v) for k, v in times.items()}
print(json.dumps({"append": med["append"], "middle": med["middle"], "full": med["full"],
                  "full_over_append": med["full"] / med["append"], "full_over_middle": med["full"] / med["middle"]}))
print("bench-ingest: resume rounds (s): " + json.dumps(times), file=sys.stderr)
PY
)
    stop_taxd
    append_ms=$(calc "$(jfield "$out" append)*1000" .0f); middle_ms=$(calc "$(jfield "$out" middle)*1000" .0f)
    full_ms=$(calc "$(jfield "$out" full)*1000" .0f)
    r_append=$(calc "$(jfield "$out" full_over_append)" .1f); r_middle=$(calc "$(jfield "$out" full_over_middle)" .1f)
    cat > "$work/resume.md" <<MD
## Recalculation from the watermark (\`make bench-ingest\`, part resume)

Measured $(stamp) on $(machine): one account of $loaded transactions (the
ingest mix: 5 assets, FIFO, three buys to one sale of half a lot, so most lots stay held), already
recalculated. Each of $RESUME_ROUNDS rounds times, in a rotating order, through HTTP with one
keep-alive client: POST one buy dated after the last transaction then GET its summaries (append);
POST one dated in the middle then GET (middle: half the account is recomputed); and GET after the
account's ledger was marked unusable (the reference: a recalculation from the first transaction,
as before this change). Medians:

| | append + read | middle + read | full recalculation (read) |
|---|---|---|---|
| time | $append_ms ms | $middle_ms ms | $full_ms ms |
| full / this | **$r_append** | **$r_middle** | 1 |

A resumed recalculation reads the held lots before the watermark (here most of the account's
lots), the reliefs and transactions from it, and writes only that tail (\`src/inventory/recalc.h\`).
Reproduce: \`BENCH_PARTS=resume BENCH_ONE_ACCOUNT_TX=$ONE_TX make bench-ingest\`.
MD
    write_section ingest-resume "$work/resume.md"
    cat "$work/resume.md"
}


# Each part runs in a subshell: a failure (with its message) ends that part
# only, stops the taxd it started, and is reported at the end.
failed=""
for part in $PARTS; do
    [ "$part" = ingest ] && part=single
    case "$part" in
        single|batch|recalc|upgrade|load10m|one-account|resume) ;;
        *) echo "bench: unknown part $part" >&2; exit 2 ;;
    esac
    echo "bench-ingest: == part $part ($(stamp))" >&2
    set +e
    (
        trap 'if [ -n "$taxd_pid" ]; then kill "$taxd_pid" 2>/dev/null; wait "$taxd_pid" 2>/dev/null; fi' EXIT
        trap 'exit 130' INT TERM
        set -e
        "part_$(echo "$part" | tr - _)"
    )
    rc=$?
    set -e
    [ "$rc" = 0 ] || { failed="$failed $part"; echo "bench-ingest: part $part FAILED ($(stamp))" >&2; }
done
[ -z "$failed" ] || { echo "bench-ingest: failed parts:$failed" >&2; exit 1; }
