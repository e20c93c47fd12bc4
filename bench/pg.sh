#!/usr/bin/env bash
# make bench-pg: taxd on PostgreSQL beside taxd on SQLite, measured back to back
# in the same run (issue 17, item 7). Writes the "pg" section of
# docs/benchmarks.md ("PostgreSQL (issue 17)").
#
# A private cluster (tests/pg/cluster.sh, a state file of this run's own) with
# pg_stat_statements loaded, PostgreSQL's defaults otherwise (fsync and
# synchronous_commit on, shared_buffers 128 MB). Parts:
#
# http      GET /v1/filers/default with a bearer token (bench/http.sh's route),
#           wrk -c64 for BENCH_SECONDS (10), BENCH_ROUNDS (3) rounds alternating
#           SQLite (1 node), PostgreSQL with 1, 2 and 3 `taxd serve` nodes on one
#           database (one wrk per node, the 64 connections split between them,
#           requests/s summed); medians.
# ingest    BENCH_TX (1,000,000) transactions over BENCH_ACCOUNTS (10,000)
#           accounts (bench/ingest_load.c, bench/ingest_gen.h): one per request
#           from BENCH_CLIENTS (16) clients, and in arrays of BENCH_BATCH (1,000)
#           from BENCH_BATCH_CLIENTS (4), each into a fresh database; the floor
#           ../shared/bench/ingest_floor.c at 16 and BENCH_BATCH per commit
#           right before; SQLite and PostgreSQL one node; PostgreSQL single
#           with 2 and 3 nodes (the transactions split between the nodes,
#           each with its share of the clients).
# trips     database round trips per request, from pg_stat_statements (every
#           statement taxd sends is one round trip; BEGIN and COMMIT count):
#           calls during a load minus calls during an idle window as long
#           (the engines' and the settings refresher's polling), per request.
#
# report    inventory-summary reports on the same BENCH_REPORT_TX (BENCH_TX)
#           transactions on both backends (bench/pg_report.py: loaded into
#           SQLite, moved by `taxd admin migrate-db`).
#
# BENCH_NODES ("1 2 3"): the PostgreSQL node counts. BENCH_PARTS ("http
# ingest report"). Work files under $TMPDIR, removed at exit with the cluster.
# Full run: make bench-pg (about 40 minutes on 2 cores at N = 1,000,000).
# Smoke: BENCH_TX=20000 BENCH_ACCOUNTS=1000 BENCH_SECONDS=5 make bench-pg
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

TX=${BENCH_TX:-1000000}
ACCOUNTS=${BENCH_ACCOUNTS:-10000}
CLIENTS=${BENCH_CLIENTS:-16}
BATCH=${BENCH_BATCH:-1000}
BATCH_CLIENTS=${BENCH_BATCH_CLIENTS:-4}
SECONDS_=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
NODES=${BENCH_NODES:-"1 2 3"}
PARTS=${BENCH_PARTS:-"http ingest report"}
FLOOR_SRC=${BENCH_FLOOR_SRC:-../shared/bench/ingest_floor.c}
TAXD=${BENCH_TAXD:-$PWD/build/taxd}
PY=/usr/bin/python3

work=$(mktemp -d "${TMPDIR:-/tmp}/taxd-bench-pg.XXXXXX")
chmod 0711 "$work"
export TAXD_PG_STATE=$work/pg.state
node_pids=()
cleanup() {
    local p
    for p in "${node_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${node_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    tests/pg/cluster.sh stop >/dev/null 2>&1 || true
    [ -n "${BENCH_LOG:-}" ] && cp "$work/taxd.log" "$BENCH_LOG" 2>/dev/null  # taxd's log lines, for a failed run
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "bench-pg: $*" >&2; }
fail() { say "$*"; exit 1; }
jfield() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"; }
field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
calc() { $PY -c "print(f'{$1:$2}')"; }
ratio() { $PY -c "x = $1; print(f'{x:.2f}' if x >= 0.095 else f'{x:.2g}')"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stamp() { date -u +%Y-%m-%dT%H:%MZ; }
machine() {
    printf '%s cores, %s GiB memory, load average %s' "$(nproc)" \
        "$(awk '$1 == "MemTotal:" { printf "%.1f", $2 / 1048576 }' /proc/meminfo)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}

# ---- tools
mkdir -p "$work/bin"
cc -std=c17 -D_GNU_SOURCE -Isrc -O2 -o "$work/bin/ingest_load" bench/ingest_load.c -lpthread
[ -f "$FLOOR_SRC" ] || fail "the floor's source $FLOOR_SRC is missing (BENCH_FLOOR_SRC)"
cc -O2 -o "$work/bin/ingest_floor" "$FLOOR_SRC" -lsqlite3

# ---- the cluster, with pg_stat_statements
tests/pg/cluster.sh start
# shellcheck disable=SC1090
. "$TAXD_PG_STATE"
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_RUNAS" -- "$@"; else "$@"; fi; }
as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null <<EOF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.max = 5000
EOF
as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/log" -w -t 60 restart >/dev/null
psql_super() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "${PG_SUPERUSER_URL%/postgres}/$1" -c "$2"; }
pg_version=$("$PG_BIN/postgres" --version | awk '{print $3}')

# ---- databases and nodes
# new_target NAME BACKEND: sets target and keyargs (a fresh database of its own)
new_target() {
    mkdir -p "$work/$1"
    if [ "$2" = pg ]; then
        psql_super postgres "CREATE DATABASE bench_$1 OWNER taxd"
        psql_super "bench_$1" "CREATE EXTENSION pg_stat_statements"
        target="${PG_TAXD_URL%/postgres}/bench_$1"
        keyargs=(--key-dir "$work/$1/keys")
    else
        target="$work/$1/taxd.db"
        keyargs=()
    fi
}

ports=()
# start_node: one more `taxd serve` on target; its port appended to ports
start_node() {
    local p
    p=$(free_port)
    "$TAXD" serve --db "$target" "${keyargs[@]}" --listen "127.0.0.1:$p" 2>>"$work/taxd.log" &
    node_pids+=("$!")
    ports+=("$p")
    wait_http "http://127.0.0.1:$p/healthz" 30
}
stop_nodes() {
    local p
    for p in "${node_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${node_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    node_pids=(); ports=()
}

# setup ACCOUNTS: a tenant with its limit raised, then one node started, the
# owner, five assets and the accounts a0.. made through it; sets token.
setup() {
    local creds client secret
    creds=$("$TAXD" admin --db "$target" "${keyargs[@]}" tenant create --name bench)
    client=$(field "$creds" client_id); secret=$(field "$creds" client_secret)
    "$TAXD" admin --db "$target" "${keyargs[@]}" ratelimit set --tenant "$(field "$creds" tenant_id)" \
        --rate 100000000 --burst 100000000 >/dev/null
    start_node
    token=$(curl -s -X POST "http://127.0.0.1:${ports[0]}/v1/oauth/token" -H 'content-type: application/json' \
        -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$client\",\"client_secret\":\"$secret\"}" |
        sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
    [ -n "$token" ] || fail "no token"
    [ "$1" -gt 0 ] || return 0
    $PY bench/make_accounts.py "${ports[0]}" "$token" "$1"
}

# statement calls so far in database DB (pg_stat_statements, this database only)
calls() {
    psql_super "$1" "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
                     WHERE d.datname = '$1' AND s.query NOT ILIKE '%pg_stat_statements%'"
}
reset_calls() { psql_super "$1" "SELECT pg_stat_statements_reset()" >/dev/null; }

# trips DB SECONDS REQUESTS CALLS_DURING: round trips per request, net of the
# idle polling measured now over as long a window
trips() {
    local idle
    reset_calls "$1"; sleep "$2"; idle=$(calls "$1")
    calc "($4 - $idle) / $3" .1f
}

# ===================================================================== http
part_http() {
    at=$(stamp); mach=$(machine)
    say "part http: SQLite and PostgreSQL databases"
    new_target http_sqlite sqlite; setup 0; sq_port=${ports[0]}; sq_token=$token
    local sq_pids=("${node_pids[@]}"); node_pids=(); ports=()
    new_target http_pg pg; setup 0; pg_token=$token
    local maxn=1 n
    for n in $NODES; do [ "$n" -gt "$maxn" ] && maxn=$n; done
    while [ "${#ports[@]}" -lt "$maxn" ]; do start_node; done
    node_pids+=("${sq_pids[@]}")
    local url_path=/v1/filers/default r i k
    for r in $(seq 1 "$ROUNDS"); do
        say "part http: round $r/$ROUNDS"
        wrk -t2 -c64 -d"${SECONDS_}s" --latency -H "authorization: Bearer $sq_token" \
            "http://127.0.0.1:$sq_port$url_path" >"$work/http.sqlite.$r"
        for n in $NODES; do
            local wrks=()
            for i in $(seq 0 $((n - 1))); do
                wrk -t1 -c$((64 / n)) -d"${SECONDS_}s" --latency -H "authorization: Bearer $pg_token" \
                    "http://127.0.0.1:${ports[$i]}$url_path" >"$work/http.pg$n.$r.$i" &
                wrks+=("$!")
            done
            for k in "${wrks[@]}"; do wait "$k"; done
        done
    done
    sq_rps=$(for r in $(seq 1 "$ROUNDS"); do wrk_rps "$work/http.sqlite.$r"; done | median)
    sq_p99=$(for r in $(seq 1 "$ROUNDS"); do wrk_p99 "$work/http.sqlite.$r"; done | sed -n 1p)
    http_rows=""
    for n in $NODES; do
        rps=$(for r in $(seq 1 "$ROUNDS"); do
            for i in $(seq 0 $((n - 1))); do wrk_rps "$work/http.pg$n.$r.$i"; done | awk '{ s += $1 } END { print s }'
        done | median)
        bad=$(cat "$work"/http.pg$n.*.* | sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        http_rows+="| PostgreSQL, $n node(s) | $rps | $(ratio "$rps/$sq_rps") | $bad |"$'\n'
    done
    # round trips of one GET, on one node
    local m=2000 t0 t1 c
    reset_calls bench_http_pg
    t0=$(date +%s.%N)
    $PY - "${ports[0]}" "$pg_token" "$m" <<'PY'
import http.client, sys
port, token, m = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(m):
    c.request("GET", "/v1/filers/default", headers={"authorization": "Bearer " + token})
    r = c.getresponse(); r.read(); assert r.status == 200
PY
    c=$(calls bench_http_pg); t1=$(date +%s.%N)
    get_stmts=$(psql_super bench_http_pg "SELECT calls || ' x ' || left(regexp_replace(query, '\s+', ' ', 'g'), 90)
        FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench_http_pg'
        AND calls >= $m / 2 ORDER BY calls DESC LIMIT 6" || true)
    get_trips=$(trips bench_http_pg "$(calc "$t1 - $t0" .1f)" "$m" "$c")
    stop_nodes
    cat >"$work/http.md" <<MD
### HTTP path (measured $at on $mach)

\`GET /v1/filers/default\` with a bearer token (JWT, rate limit raised, one database read), wrk
-c64 ${SECONDS_} s, $ROUNDS rounds alternating the rows below; medians of requests/s (2 and 3 nodes:
one wrk per node on one database, 64 connections split between them, their requests/s summed).
SQLite: $sq_rps requests/s (p99 of the first round $sq_p99).

| server | requests/s | / SQLite | non-2xx |
|---|---|---|---|
| SQLite, 1 node | $sq_rps | 1.00 | 0 |
${http_rows}
Database round trips per GET on PostgreSQL: **$get_trips** ($m requests on one node, pg_stat_statements,
net of the idle polling of as long a window). Statements called at least once per two requests:
\`\`\`
${get_stmts:-none: the route reads nothing from the database on every request}
\`\`\`
MD
}

# =================================================================== ingest
# ingest_run NAME BACKEND BATCH CLIENTS NODES: a fresh database, the load split
# over NODES nodes; sets tps, bad, rows, tx_trips
ingest_run() {
    local name=$1 backend=$2 batch=$3 clients=$4 n=$5 i share t0 t1 c outs=()
    new_target "$name" "$backend"
    say "part ingest: $name ($TX transactions, batch $batch, $clients clients, $n node(s)) ..."
    setup "$ACCOUNTS"
    while [ "${#ports[@]}" -lt "$n" ]; do start_node; done
    [ "$backend" = pg ] && reset_calls "bench_$name"
    share=$((TX / n))
    t0=$(date +%s.%N)
    for i in $(seq 0 $((n - 1))); do
        "$work/bin/ingest_load" --port "${ports[$i]}" --token "$token" --tx "$TX" --accounts "$ACCOUNTS" \
            --clients $((clients / n > 0 ? clients / n : 1)) --order shuffled \
            --from $((i * share)) --count "$share" $([ "$batch" = 0 ] || echo "--batch $batch") \
            >"$work/$name.load.$i" 2>>"$work/$name.load.err" &
        outs+=("$!")
    done
    for i in "${outs[@]}"; do wait "$i" || true; done
    t1=$(date +%s.%N)
    tps=$(calc "$share * $n / ($t1 - $t0)" .0f)
    bad=$(for i in $(seq 0 $((n - 1))); do
        l=$(cat "$work/$name.load.$i"); echo $(( $(jfield "$l" 4xx) + $(jfield "$l" 5xx) + $(jfield "$l" errors) ))
    done | awk '{ s += $1 } END { print s + 0 }')
    tx_trips="-"
    if [ "$backend" = pg ]; then
        c=$(calls "bench_$name")
        tx_trips=$(trips "bench_$name" "$(calc "$t1 - $t0" .1f)" "$share" "$c")
        [ "$n" = 1 ] || tx_trips=$(calc "$tx_trips / $n" .1f)
        rows=$(psql_super "bench_$name" "SELECT count(*) FROM transactions")
    else
        rows=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM transactions').fetchone()[0])" "$target")
    fi
    stop_nodes
    # A refused transaction is a finding to report, not a reason to stop: the
    # table shows the non-2xx answers beside the rate (the rate counts only
    # the rows stored).
    [ "$rows" = $((share * n - bad)) ] ||
        fail "$name: $rows rows stored of $((share * n)) with $bad refused: a 2xx without its row"
    [ "$bad" = 0 ] || say "$name: $bad non-2xx answers ($(head -n 1 "$work/$name.load.err" | cut -c1-160))"
    tps=$(calc "$rows / ($t1 - $t0)" .0f)
}

floor_tps() { # BATCH
    say "part ingest: the floor, $TX transactions, $1 per commit ..."
    local fl
    fl=$("$work/bin/ingest_floor" "$work/floor.db" "$TX" "$1" "$ACCOUNTS")
    rm -f "$work/floor.db" "$work/floor.db-wal" "$work/floor.db-shm"
    jfield "$fl" tx_per_s | awk '{ printf "%.0f\n", $1 }'
}

part_ingest() {
    at=$(stamp); mach=$(machine)
    local rows_md="" f n per
    f=$(floor_tps 16)
    ingest_run single_sqlite sqlite 0 "$CLIENTS" 1; s_sq=$tps
    rows_md+="| single | floor (16 per commit) | 1 | $f | 1.00 | - | - | 0 |"$'\n'
    rows_md+="| single | SQLite | 1 | $s_sq | $(ratio "$s_sq/$f") | 1.00 | - | $bad |"$'\n'
    for n in $NODES; do
        ingest_run "single_pg$n" pg 0 "$CLIENTS" "$n"
        rows_md+="| single | PostgreSQL | $n | $tps | $(ratio "$tps/$f") | $(ratio "$tps/$s_sq") | $tx_trips | $bad |"$'\n'
    done
    f=$(floor_tps "$BATCH")
    ingest_run batch_sqlite sqlite "$BATCH" "$BATCH_CLIENTS" 1; b_sq=$tps
    rows_md+="| batch of $BATCH | floor ($BATCH per commit) | 1 | $f | 1.00 | - | - | 0 |"$'\n'
    rows_md+="| batch of $BATCH | SQLite | 1 | $b_sq | $(ratio "$b_sq/$f") | 1.00 | - | $bad |"$'\n'
    ingest_run batch_pg pg "$BATCH" "$BATCH_CLIENTS" 1
    per=$(calc "$tx_trips * $BATCH" .0f)
    rows_md+="| batch of $BATCH | PostgreSQL | 1 | $tps | $(ratio "$tps/$f") | $(ratio "$tps/$b_sq") | $tx_trips ($per per request) | $bad |"$'\n'
    cat >"$work/ingest.md" <<MD
### Ingest, single and batch (measured $at on $mach)

$TX transactions over $ACCOUNTS accounts (bench/ingest_gen.h's trades, shuffled) into a fresh
database per row, \`POST /v1/transactions/external-id\`: one per request from $CLIENTS clients, or
arrays of $BATCH from $BATCH_CLIENTS clients (bench/ingest_load.c); with 2 and 3 nodes the
transactions and the clients are split between the nodes. The floor (\`../shared/bench/ingest_floor.c\`,
one SQLite writer, synchronous=FULL) ran right before each half. Round trips: statements per
transaction from pg_stat_statements, net of idle polling.

| load | store | nodes | transactions/s stored | / floor | / SQLite | round trips per transaction | non-2xx |
|---|---|---|---|---|---|---|---|
${rows_md}
MD
}

# report: bench/pg_report.py, the same rows on both backends (moved by migrate-db)
part_report() {
    : >"$work/report.md"
    /usr/bin/python3 bench/pg_report.py "$PWD/build/taxd" "$(tests/pg/cluster.sh url)" \
        "${BENCH_REPORT_TX:-$TX}" "$work/report.md"
}

for p in $PARTS; do "part_$p"; done

{
    cat <<MD
## PostgreSQL (issue 17, \`make bench-pg\`)

taxd on PostgreSQL $pg_version beside taxd on SQLite, in the same run, on **$(nproc) shared cores**: other
engineers' builds and tests ran on the machine at the same time, so read each figure as a ratio
against its SQLite or floor twin measured minutes apart, not as an absolute. The PostgreSQL server
runs on the same two cores as taxd and the load generator, with its defaults (fsync and
synchronous_commit on, shared_buffers 128 MB); every node's pool and the server share those cores,
so 2 and 3 nodes show the **cost per node**, not a speed-up (the model below says what more cores
give). N = $TX transactions, $ACCOUNTS accounts$([ "$TX" = 1000000 ] || echo " (**smaller than the 1,000,000 of a full run**: \`make bench-pg\` runs the full size)").
Reproduce: \`BENCH_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_SECONDS=$SECONDS_ BENCH_ROUNDS=$ROUNDS make bench-pg\`.

MD
    for p in $PARTS; do [ -f "$work/$p.md" ] && cat "$work/$p.md" && echo; done
} >"$work/section.md"
write_section pg "$work/section.md" "gains-pages webhooks report"
cat "$work/section.md"
