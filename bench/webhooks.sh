#!/bin/sh
# make bench-webhooks: webhook deliveries per second and event-to-delivered
# latency, against nginx serving HTTPS on loopback with `return 200`.
#
#  1. Throughput: BENCH_EVENTS (20,000) INVENTORY_UPDATE events are queued
#     with their deliveries in one transaction (as the outbox writes them)
#     for one subscription whose rate limit is raised; taxd serve delivers
#     them. BENCH_ROUNDS (5) rounds, each followed by a run of the bare
#     libcurl loop below; the medians of both are compared.
#  2. References against the same endpoint and body in the same run: a bare
#     libcurl multi loop (bench/webhook_curl_loop.c: 64 transfers at once,
#     the dispatcher's bound per subscription, no database, no signing), the
#     durable floor (bench/webhook_durable_loop.c: that loop fed from and
#     recording into a taxd database of its own with the least SQL per
#     delivery, on a second thread) and wrk (-t2 -c64). Each round runs taxd,
#     the bare loop and the floor in turn.
#  3. Latency with an empty queue: BENCH_LATENCY_EVENTS transactions written
#     one at a time through the API (each commit wakes the dispatcher);
#     delivered_at - events.created_at, p50 and p99.
# Writes its section of docs/benchmarks.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

work=$(mktemp -d)
taxd_pid=""
cleanup() {
    [ -n "$taxd_pid" ] && kill "$taxd_pid" 2>/dev/null && wait "$taxd_pid" 2>/dev/null
    [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

TAXD=./build/taxd
EVENTS=${BENCH_EVENTS:-20000}
ROUNDS=${BENCH_ROUNDS:-5}
LATENCY_EVENTS=${BENCH_LATENCY_EVENTS:-200}
cores=$(nproc)
py=/usr/bin/python3

# A test CA and a certificate for 127.0.0.1 (the test receiver's helper).
$py -c 'import sys; sys.path.insert(0, "tests/api"); import webhook_receiver as w; w.make_certificates(sys.argv[1])' "$work/pki"
ca="$work/pki/ca.pem"

# nginx from its own prefix: HTTPS, keep-alive, `return 200`.
nport=$(free_port)
mkdir -p "$work/nginx/logs"
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes $cores;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    server {
        listen 127.0.0.1:$nport ssl reuseport;
        ssl_certificate $work/pki/server.pem;
        ssl_certificate_key $work/pki/server.key;
        location / { default_type application/json; return 200 '{"ok":true}'; }
    }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf"
i=0
until curl -s -o /dev/null --cacert "$ca" "https://127.0.0.1:$nport/"; do
    i=$((i + 1)); [ "$i" -gt 200 ] && { echo "bench: nginx did not come up" >&2; exit 1; }
    sleep 0.05
done
url="https://127.0.0.1:$nport/hook"

# taxd with a tenant and one subscription (rate limit raised).
db="$work/taxd.db"
creds=$($TAXD admin --db "$db" tenant create --name bench)
field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
tenant=$(field "$creds" tenant_id); client=$(field "$creds" client_id); secret=$(field "$creds" client_secret)
$TAXD admin --db "$db" ratelimit set --tenant "$tenant" --rate 100000000 --burst 100000000 >/dev/null
sub=$(field "$($TAXD admin --db "$db" subscription create --tenant "$tenant" --url "$url" \
    --events INVENTORY_UPDATE --rate-limit 1000000)" subscription_id)
port=$(free_port)
$TAXD serve --db "$db" --listen "127.0.0.1:$port" --webhook-ca-file "$ca" 2>"$work/taxd.log" &
taxd_pid=$!
wait_http "http://127.0.0.1:$port/healthz" 10

sql() { sqlite3 -cmd ".timeout 10000" "$db" "$1"; }

# The durable floor's own database (same schema), tenant and subscription.
floor_db="$work/floor.db"
floor_tenant=$(field "$($TAXD admin --db "$floor_db" tenant create --name floor)" tenant_id)
floor_sub=$(field "$($TAXD admin --db "$floor_db" subscription create --tenant "$floor_tenant" \
    --url "$url" --events INVENTORY_UPDATE --rate-limit 1000000)" subscription_id)

# 1. Throughput, alternating with the libcurl reference (the machine's speed
# drifts between runs; medians of the rounds are compared).
# queue_events DB TENANT ROUND: EVENTS events with their deliveries in one
# transaction.
queue_events() {
    $py - "$1" "$2" "$EVENTS" "$3" <<'PY'
import sqlite3, sys, time, uuid
db, tenant, n, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
con = sqlite3.connect(db, timeout=30, isolation_level=None)
con.execute("BEGIN IMMEDIATE")
now = int(time.time() * 1000)
for i in range(n):
    e = str(uuid.uuid4())
    con.execute("INSERT INTO events (id, tenant_id, type, created_at, account_uuid, account_id, from_ms,"
                " from_tx, latest_ms, latest_tx, has_ids) VALUES (?, ?, 'INVENTORY_UPDATE', ?, ?, ?,"
                " 1709290800000, ?, 1709290800000, ?, 1)",
                (e, tenant, now, str(uuid.uuid4()), f"account-{rnd}-{i}", f"tx-{i}", f"tx-{i}"))
    con.execute("INSERT INTO deliveries (id, subscription_id, event_id, trace_id, state, next_attempt_at,"
                " created_at) SELECT 'dlv_' || lower(hex(randomblob(16))), id, ?,"
                " 'trc_' || lower(hex(randomblob(16))), 'pending', ?, ? FROM subscriptions"
                " WHERE tenant_id = ?", (e, now, now, tenant))
con.execute("COMMIT")
PY
}

# thread_ms NAME: CPU time so far of taxd's threads named NAME, in ms.
ticks=$(getconf CLK_TCK)
thread_ms() {
    for t in /proc/"$taxd_pid"/task/*; do
        [ "$(cat "$t/comm")" = "$1" ] && awk -v hz="$ticks" '{ print ($14 + $15) * 1000 / hz }' "$t/stat"
    done | awk '{ s += $1 } END { print s + 0 }'
}

# taxd_round ROUND: queues a round and waits for it; prints deliveries/s,
# then the CPU time per delivery (us) of the store thread and of the sending
# thread. Rate = deliveries / (last delivered_at - first first_attempt_at)
# of the round, read from the database (finding the externally written rows
# is not counted).
taxd_round() {
    mark=$(sql "SELECT coalesce(max(rowid), 0) FROM deliveries")
    store0=$(thread_ms webhooks-store); send0=$(thread_ms webhooks)
    queue_events "$db" "$tenant" "$1"
    # One waiting process with one connection: a sqlite3 process started
    # every 50 ms would take CPU from the taxd it measures.
    $py - "$db" "$mark" "$EVENTS" <<'PY' || { echo "bench: deliveries did not finish" >&2; exit 1; }
import sqlite3, sys, time
db, mark, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = sqlite3.connect(db, timeout=10)
deadline = time.monotonic() + 300
while con.execute("SELECT count(*) FROM deliveries WHERE rowid > ? AND state IN ('delivered', 'failed')",
                  (mark,)).fetchone()[0] < n:
    if time.monotonic() > deadline:
        sys.exit(1)
    time.sleep(0.1)
PY
    store1=$(thread_ms webhooks-store); send1=$(thread_ms webhooks)
    span=$(sql "SELECT max(delivered_at) - min(first_attempt_at) FROM deliveries WHERE rowid > $mark")
    $py -c "print(f'{$EVENTS / max($span, 1) * 1000:.0f} {($store1 - $store0) * 1000 / $EVENTS:.1f} {($send1 - $send0) * 1000 / $EVENTS:.1f}')"
}

# floor_round ROUND: the durable floor over a round queued in its own
# database; prints deliveries/s, then the CPU per delivery (us) of its store
# thread and of its sending thread.
floor_round() {
    queue_events "$floor_db" "$floor_tenant" "$1"
    out=$("$work/durable_loop" "$url" "$ca" "$floor_db" "$floor_sub" 64 "$work/body.json")
    printf '%s' "$out" |
        sed -n 's/.* rps \([0-9.]*\) .* store_us_per_delivery \([0-9.]*\) send_us_per_delivery \([0-9.]*\).*/\1 \2 \3/p'
}

# The body taxd sends (one of them) for the references.
write_body() {
    $py - "$db" > "$work/body.json" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
e = con.execute("SELECT id, account_uuid, account_id FROM events LIMIT 1").fetchone()
sys.stdout.write('{"timestamp":"2026-01-01T00:00:00.000Z","data":[{"event_type":"INVENTORY_UPDATE",'
                 f'"event_id":"{e[0]}","id":"{e[0]}","account_id":"{e[1]}","alternate_account_id":"{e[2]}",'
                 '"latest_transaction_datetime":"2024-03-01T11:00:00.000Z",'
                 '"update_from_datetime":"2024-03-01T11:00:00.000Z","latest_transaction_id":"tx-0",'
                 '"update_from_transaction_id":"tx-0"}]}')
PY
}

cc -O2 -o "$work/curl_loop" bench/webhook_curl_loop.c -lcurl
cc -O2 -o "$work/durable_loop" bench/webhook_durable_loop.c -lcurl -lsqlite3 -lpthread
t_all=""; c_all=""; f_all=""; ts_all=""; tt_all=""; fs_all=""; ft_all=""
for round in $(seq 1 "$ROUNDS"); do
    set -- $(taxd_round "$round")
    t_all="$t_all $1"; ts_all="$ts_all $2"; tt_all="$tt_all $3"
    [ "$round" -eq 1 ] && write_body
    c_out=$("$work/curl_loop" "$url" "$ca" "$EVENTS" 64 "$work/body.json")
    c_all="$c_all $(printf '%s' "$c_out" | sed -n 's/.* rps \([0-9.]*\).*/\1/p')"
    set -- $(floor_round "$round")
    [ $# -eq 3 ] || { echo "bench: the durable floor failed" >&2; exit 1; }
    f_all="$f_all $1"; fs_all="$fs_all $2"; ft_all="$ft_all $3"
done
median() { printf '%s\n' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
t_rps=$(median "$t_all"); c_rps=$(median "$c_all"); f_rps=$(median "$f_all")
t_store_us=$(median "$ts_all"); t_send_us=$(median "$tt_all"); f_store_us=$(median "$fs_all")
f_send_us=$(median "$ft_all")
failed=$(sql "SELECT count(*) FROM deliveries WHERE state = 'failed'")
attempts=$(sql "SELECT sum(attempts) FROM deliveries")
total=$((EVENTS * ROUNDS))
ratios() { $py -c "t = '$1'.split(); c = '$2'.split(); print(' '.join(f'{float(a) / float(b):.2f}' for a, b in zip(t, c)))"; }
round_ratios=$(ratios "$t_all" "$c_all"); floor_ratios=$(ratios "$f_all" "$c_all")
taxd_floor_ratios=$(ratios "$t_all" "$f_all")

cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = [[$(cat "$work/body.json")]]
LUA
wrk -t2 -c64 -d"${BENCH_SECONDS:-10}"s -s "$work/post.lua" "$url" > "$work/wrk.out"
w_rps=$(wrk_rps "$work/wrk.out")

# 3. Latency with an empty queue, through the API.
api="http://127.0.0.1:$port"
token=$(curl -s -X POST "$api/v1/oauth/token" -H 'content-type: application/json' \
    -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$client\",\"client_secret\":\"$secret\"}" |
    sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
auth="authorization: Bearer $token"
curl -s -o /dev/null -X POST "$api/v1/account-owners" -H "$auth" -H 'content-type: application/json' \
    -d '{"id":"o1","name":"Owner","account_owner_type":"individual"}'
mark=$(sql "SELECT max(created_at) FROM events")
for n in $(seq 1 "$LATENCY_EVENTS"); do
    curl -s -o /dev/null -X POST "$api/v1/accounts" -H "$auth" -H 'content-type: application/json' \
        -d "{\"id\":\"lat-$n\",\"account_owner_id\":\"o1\"}"
    curl -s -o /dev/null -X POST "$api/v1/transactions/external-id" -H "$auth" -H 'content-type: application/json' \
        -d "{\"id\":\"lat-tx-$n\",\"account_id\":\"lat-$n\",\"datetime\":\"2024-03-01T10:00:00Z\",\"type\":\"deposit\",\"received\":[{\"asset_amount\":{\"amount\":\"1\",\"asset\":{\"code\":\"BTC\",\"type\":\"crypto\"}}}]}"
    sleep 0.02
done
i=0
while [ "$(sql "SELECT count(*) FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.created_at > $mark AND d.state = 'delivered'")" -lt "$LATENCY_EVENTS" ]; do
    i=$((i + 1)); [ "$i" -gt 600 ] && { echo "bench: latency deliveries did not finish" >&2; exit 1; }
    sleep 0.05
done
sql "SELECT d.delivered_at - e.created_at FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.created_at > $mark ORDER BY 1" > "$work/latency"
pct() { awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }' "$work/latency"; }
p50=$(pct 50); p99=$(pct 99)

ratio=$($py -c "print(f'{$t_rps / $c_rps:.2f}')")
verdict=$($py -c "print('met' if $t_rps / $c_rps >= 0.70 else 'not reached')")
cat > "$work/section.md" <<MD
## Webhook deliveries (\`make bench-webhooks\`)

Measured $(date -u +%Y-%m-%dT%H:%MZ) on $cores cores against nginx serving HTTPS on loopback
(\`return 200\`, $cores workers, keep-alive), HTTP/1.1, the same ~400-byte body.
taxd: $EVENTS INVENTORY_UPDATE events queued with their deliveries in one transaction, one
subscription with its rate limit raised, \`taxd serve\` with its defaults (one dispatcher: a
sending thread and a store thread, at most 64 attempts in flight per subscription); each delivery
rendered, signed, sent, its event claimed and its outcome recorded (SQLite, synchronous=FULL, batched
transactions on the store thread). $ROUNDS rounds, each followed by a run of the bare libcurl loop
and one of the durable floor: the speed of this shared machine drifts by up to 2x between runs a
second apart, so the medians are compared.
Load on the machine when this ran (1-minute average): $(cut -d' ' -f1 /proc/loadavg).

| sender | deliveries/s (median) | vs bare libcurl | rounds |
|---|---|---|---|
| taxd dispatcher | **$t_rps** | **$ratio** | $(echo $t_all) ($total delivered, $attempts attempts, $failed failed) |
| bare libcurl multi loop (reference) | $c_rps | 1.00 | $(echo $c_all) (\`bench/webhook_curl_loop.c\`: 64 at once, no database, no signing) |
| durable floor (reference) | $f_rps | $($py -c "print(f'{$f_rps / $c_rps:.2f}')") | $(echo $f_all) (\`bench/webhook_durable_loop.c\`: the bare loop fed from and recording into a database with the least SQL per delivery) |
| wrk -t2 -c64 (reference) | $w_rps | $($py -c "print(f'{$w_rps / $c_rps:.2f}')") | one run of ${BENCH_SECONDS:-10} s, the same POST |

Round by round, taxd / libcurl: $round_ratios; durable floor / libcurl: $floor_ratios;
taxd / durable floor: $taxd_floor_ratios.
CPU per delivery (medians of the rounds): taxd's store thread $t_store_us us, its sending thread
$t_send_us us; the durable floor's store thread $f_store_us us, its sending thread $f_send_us us.
Target: at least 0.70 of the bare libcurl loop: **$verdict**.
MD
cat bench/webhooks_notes.md >> "$work/section.md"
cat >> "$work/section.md" <<MD

Event created to delivered with an empty queue ($LATENCY_EVENTS transactions through the API, one
at a time): **p50 $p50 ms**, p99 $p99 ms (target: p50 under 50 ms).
Reproduce: \`make bench-webhooks\` (\`BENCH_EVENTS\`, \`BENCH_ROUNDS\`, \`BENCH_LATENCY_EVENTS\`, \`BENCH_SECONDS\`).
MD
write_section webhooks "$work/section.md"
cat "$work/section.md"
