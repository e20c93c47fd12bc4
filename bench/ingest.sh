#!/bin/sh
# make bench-ingest: bulk loading of transactions through the HTTP API.
#
# Part "ingest": BENCH_TX transactions over BENCH_ACCOUNTS accounts x 5
# assets, in shuffled datetime order, posted by BENCH_CLIENTS (16) concurrent
# keep-alive clients (bench/ingest_load.c). Reports transactions/s and the
# server's peak memory (VmHWM), against two references measured in the same
# run:
#   - the store's ceiling: the same transactions written straight through
#     store_tx_upsert (bench/store_ingest.c, linked with taxd's objects), through
#     the same group commit as taxd, BENCH_STORE_THREADS writers,
#     alternating with taxd in BENCH_ROUNDS rounds (the machine's load drifts);
#   - the bare database: the very rows taxd wrote, re-inserted into a copy of
#     the starting database by Python's sqlite3 with the same statements, one
#     transaction per 1,000 transactions (one writer, no per-request work);
#   - the HTTP floor: nginx answering the same POSTs with `return 200`, from
#     its own prefix, loaded by the same client.
# Part "one-account": BENCH_ONE_ACCOUNT_TX transactions of one account loaded
# in datetime order and in reverse order (each into a fresh database), then
# the first read of GET /v1/inventory/summaries?account_id=..., which runs
# the recalculation. Reports both times and their ratio (target: reverse at
# most 2x in order).
#
# Part "resume": the account of part one-account loaded in datetime order
# (loaded again when that part did not run), already recalculated; then
# BENCH_RESUME_ROUNDS rounds, each timing three things through HTTP in a
# rotating order: appending one transaction after the last and reading the
# summaries; inserting one in the middle and reading; and, as the reference,
# a read after the account's ledger was marked unusable (the recalculation
# from the first transaction). Reports medians and the ratios full / append
# and full / middle.
#
# BENCH_PARTS="ingest one-account resume" (default) chooses the parts; each
# writes its own section of docs/benchmarks.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

TX=${BENCH_TX:-1000000}
ACCOUNTS=${BENCH_ACCOUNTS:-10000}
CLIENTS=${BENCH_CLIENTS:-16}
STORE_THREADS=${BENCH_STORE_THREADS:-16}
ROUNDS=${BENCH_ROUNDS:-4}
ONE_TX=${BENCH_ONE_ACCOUNT_TX:-100000}
RESUME_ROUNDS=${BENCH_RESUME_ROUNDS:-7}
PARTS=${BENCH_PARTS:-"ingest one-account resume"}
TAXD=./build/taxd
PY=/usr/bin/python3

work=$(mktemp -d)
taxd_pid=""
cleanup() {
    [ -n "$taxd_pid" ] && kill "$taxd_pid" 2>/dev/null && wait "$taxd_pid" 2>/dev/null
    [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# ---- tools: the load generator and the store reference (taxd's objects)
mkdir -p "$work/bin"
CFLAGS_BENCH="-std=c17 -D_GNU_SOURCE -Isrc -O2 -Wall -Wextra -Werror -Wshadow"
cc $CFLAGS_BENCH -o "$work/bin/ingest_load" bench/ingest_load.c -lpthread
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
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
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
    $PY - "$port" "$token" "$2" "$3" <<'PY'
import http.client, json, sys, threading
port, token, count, prefix = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
H = {"authorization": "Bearer " + token, "content-type": "application/json"}
def send(conn, path, body, want):
    conn.request("POST", path, json.dumps(body), H)
    r = conn.getresponse(); text = r.read()
    assert r.status == want, (path, r.status, text)
c = http.client.HTTPConnection("127.0.0.1", port)
send(c, "/v1/account-owners", {"id": "owner", "name": "Bench", "account_owner_type": "individual"}, 201)
for code in ("BTC", "ETH", "SOL", "ADA", "DOT"):
    send(c, "/v1/assets", {"code": code, "name": code, "type": "crypto"}, 201)
def worker(k):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(k, count, 8):
        send(conn, "/v1/accounts", {"id": f"{prefix}{i}", "account_owner_id": "owner"}, 201)
threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
PY
    stop_taxd
}

count_rows() { # db
    $PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM transactions').fetchone()[0])" "$1"
}

# ======================================================== part: ingest
part_ingest() {
    db="$work/ingest/taxd.db"; mkdir -p "$work/ingest"
    echo "bench-ingest: $ACCOUNTS accounts ..." >&2
    new_db "$db" "$ACCOUNTS" a
    cp "$db" "$work/ingest/start.db"     # the starting point of both references

    # -- taxd through HTTP and the store's ceiling, alternating in rounds of
    # N/ROUNDS transactions (each writes the same transactions into its own
    # database): on a shared machine the load drifts, and alternating spreads
    # the drift over both sides of the ratio.
    cp "$work/ingest/start.db" "$work/ingest/store.db"
    start_taxd "$db"
    hwm_idle=$(vm_kb "$taxd_pid" VmHWM)
    chunk=$(( (TX + ROUNDS - 1) / ROUNDS ))
    h_secs=0; s_secs=0; p50s=""; p99s=""; h_2xx=0; h_bad=0; s_fail=0; from=0
    while [ "$from" -lt "$TX" ]; do
        count=$chunk; [ $((from + count)) -gt "$TX" ] && count=$((TX - from))
        echo "bench-ingest: transactions $from.. ($count) through HTTP, then the store ..." >&2
        http=$("$work/bin/ingest_load" --port "$port" --token "$token" --tx "$TX" --accounts "$ACCOUNTS" \
            --clients "$CLIENTS" --order shuffled --from "$from" --count "$count")
        h_secs=$(calc "$h_secs+$(jfield "$http" seconds)" .3f)
        p50s="$p50s $(jfield "$http" p50_ms)"; p99s="$p99s $(jfield "$http" p99_ms)"
        h_2xx=$((h_2xx + $(jfield "$http" 2xx)))
        h_bad=$((h_bad + $(jfield "$http" 4xx) + $(jfield "$http" 5xx) + $(jfield "$http" errors)))
        store=$("$work/bin/store_ingest" ingest --db "$work/ingest/store.db" --tenant "$tenant" --tx "$TX" \
            --accounts "$ACCOUNTS" --threads "$STORE_THREADS" --order shuffled --from "$from" --count "$count")
        s_secs=$(calc "$s_secs+$(jfield "$store" seconds)" .3f)
        s_fail=$((s_fail + $(jfield "$store" failures)))
        from=$((from + count))
    done
    hwm=$(vm_kb "$taxd_pid" VmHWM); rss=$(vm_kb "$taxd_pid" VmRSS)
    stop_taxd
    rows=$(count_rows "$db")
    [ "$rows" = "$TX" ] && [ "$h_bad" = 0 ] || { echo "bench: $rows rows stored, $h_bad non-2xx" >&2; exit 1; }
    [ "$s_fail" = 0 ] && [ "$(count_rows "$work/ingest/store.db")" = "$TX" ] ||
        { echo "bench: the store reference failed" >&2; exit 1; }
    h_tps=$(calc "$TX/$h_secs" .1f); s_tps=$(calc "$TX/$s_secs" .1f)
    p50=$(echo $p50s | tr ' ' '\n' | median); p99=$(echo $p99s | tr ' ' '\n' | median)

    # -- the bare database: taxd's own rows, re-inserted 1,000 per transaction
    cp "$work/ingest/start.db" "$work/ingest/bare.db"
    echo "bench-ingest: $TX transactions into the bare database ..." >&2
    bare=$($PY - "$db" "$work/ingest/bare.db" <<'PY'
import sqlite3, sys, time
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2], isolation_level=None)
for p in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
    dst.execute("PRAGMA " + p)
acct = dict(src.execute("SELECT uuid, id FROM accounts"))
lines = {}
for row in src.execute("SELECT * FROM transaction_lines ORDER BY transaction_uuid, kind, idx"):
    lines.setdefault(row[0], []).append(row)
links = {}
for t, a in src.execute("SELECT transaction_uuid, asset_uuid FROM transaction_assets"):
    links.setdefault(t, []).append(a)
rows = src.execute("SELECT uuid, tenant_id, id, account_uuid, datetime, type, subtype, body, created_at,"
                   " updated_at FROM transactions ORDER BY created_at, uuid").fetchall()
elapsed, n = 0.0, 0
for start in range(0, len(rows), 1000):
    batch = rows[start:start + 1000]
    t0 = time.perf_counter()
    dst.execute("BEGIN IMMEDIATE")
    for r in batch:
        dst.execute("INSERT INTO transactions VALUES (?,?,?,?,?,?,?,?,?,?)", r)
        dst.executemany("INSERT INTO transaction_lines VALUES (?,?,?,?,?,?)", lines[r[0]])
        dst.executemany("INSERT OR IGNORE INTO transaction_assets VALUES (?,?)", [(r[0], a) for a in links[r[0]]])
        dst.execute("UPDATE accounts SET dirty_from = min(coalesce(dirty_from, ?2), ?2),"
                    " inventory_version = inventory_version + 1 WHERE uuid = ?1", (r[3], r[4]))
        ev = dst.execute("SELECT id FROM events WHERE account_uuid = ? AND type = 'INVENTORY_UPDATE'"
                         " AND claimed_at IS NULL LIMIT 1", (r[3],)).fetchone()
        if ev:
            dst.execute("UPDATE events SET from_ms = min(from_ms, ?2), latest_ms = max(latest_ms, ?2)"
                        " WHERE id = ?1", (ev[0], r[4]))
        else:
            dst.execute("INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id,"
                        " from_ms, from_tx, latest_ms, latest_tx, has_ids) VALUES"
                        " (?, ?, 'INVENTORY_UPDATE', ?, ?, ?, ?, ?, ?, ?, 1)",
                        (r[0], r[1], r[8], r[3], acct[r[3]], r[4], r[2], r[4], r[2]))
    dst.execute("COMMIT")
    elapsed += time.perf_counter() - t0
    n += len(batch)
print(f'{{"transactions":{n},"seconds":{elapsed:.3f},"tps":{n / elapsed:.1f}}}')
PY
)

    # -- the HTTP floor: nginx answering the same POSTs
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
    floor=$("$work/bin/ingest_load" --port "$nport" --token x --tx "$TX" --accounts "$ACCOUNTS" \
        --clients "$CLIENTS" --order shuffled)
    kill "$(cat "$work/nginx/nginx.pid")"; rm -f "$work/nginx/nginx.pid"

    b_tps=$(jfield "$bare" tps); n_tps=$(jfield "$floor" rps)
    cat > "$work/ingest.md" <<MD
## Transaction ingest (\`make bench-ingest\`)

Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: $TX transactions (trades: 3 in 4 buy an
asset for USD with a USD rate, 1 in 4 sell) over $ACCOUNTS accounts x 5 assets, in shuffled datetime
order, \`POST /v1/transactions/external-id\` from $CLIENTS concurrent keep-alive clients, one
request in flight each (\`bench/ingest_load.c\`, a C client: wrk runs for a duration rather than a
count of distinct ids, and a Python client cannot load taxd on two cores). taxd with its defaults
(16 threads, SQLite WAL, synchronous=FULL, group commit: \`src/store/commit.c\`). taxd and the
store ceiling alternate in $ROUNDS rounds of $chunk transactions (a shared machine drifts);
the figures are totals over the rounds.

| writer | transactions/s | vs taxd | notes |
|---|---|---|---|
| taxd over HTTP | **$h_tps** | 1.00 | p50 $p50 ms, p99 $p99 ms (medians of the rounds); 2xx $h_2xx, non-2xx $h_bad |
| store ceiling: \`store_tx_upsert\` straight, $STORE_THREADS threads | $s_tps | $(calc "$s_tps/$h_tps" .2f) | the same transactions through the same group commit, no HTTP, no JSON (\`bench/store_ingest.c\`) |
| bare database: Python sqlite3, 1,000 per commit | $b_tps | $(calc "$b_tps/$h_tps" .2f) | the rows taxd wrote, same tables and indexes, one writer, no per-request work |
| HTTP floor: nginx \`return 200\` | $n_tps | $(calc "$n_tps/$h_tps" .2f) | the same POSTs and client, $(nproc) workers |

taxd / store ceiling: **$(calc "$h_tps/$s_tps" .2f)**; taxd / bare database: $(calc "$h_tps/$b_tps" .3f).
Writes that arrive while a commit is in progress queue and are then committed together, each in its
own savepoint, so the 16 clients share fsyncs; the store ceiling runs the same writes through the same
path. Both are bound by the single SQLite writer (every upsert also updates the account's watermark,
its outbox event and the asset links). The bare database is one writer re-inserting the finished rows
1,000 per commit with no validation, lookups or events: a bound no request-at-a-time writer reaches.
Peak memory of taxd (VmHWM): **$(calc "$hwm/1024" .1f) MiB** after the load ($(calc "$hwm_idle/1024" .1f) MiB
before it; VmRSS at the end $(calc "$rss/1024" .1f) MiB).
Reproduce: \`make bench-ingest\` (\`BENCH_TX\`, \`BENCH_ACCOUNTS\`, \`BENCH_CLIENTS\`,
\`BENCH_STORE_THREADS\`, \`BENCH_ROUNDS\`; \`BENCH_PARTS=ingest\` for this part only); this run:
\`BENCH_TX=$TX BENCH_ACCOUNTS=$ACCOUNTS BENCH_PARTS=ingest make bench-ingest\`.
MD
    write_section ingest "$work/ingest.md"
    cat "$work/ingest.md"
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

Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: $ONE_TX transactions of one account (the
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
                " dirty_from = (SELECT min(datetime) FROM transactions t WHERE t.account_uuid = accounts.uuid)"
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

Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: one account of $loaded transactions (the
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

for part in $PARTS; do
    case "$part" in
        ingest) part_ingest ;;
        one-account) part_one_account ;;
        resume) part_resume ;;
        *) echo "bench: unknown part $part" >&2; exit 2 ;;
    esac
done
