#!/bin/sh
# make bench: requests/s and p99 of an authenticated GET through the whole
# request path (auth, rate limit with the limit raised, one database read),
# against nginx answering the same body with `return 200` on loopback, in the
# same run. Writes its section of docs/benchmarks.md.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

work=$(mktemp -d)
taxd_pid=""; nginx_pid=""
cleanup() {
    [ -n "$taxd_pid" ] && kill "$taxd_pid" 2>/dev/null && wait "$taxd_pid" 2>/dev/null
    [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

TAXD=${BENCH_TAXD:-./build/taxd}  # BENCH_TAXD: another build to compare
db="$work/taxd.db"
creds=$($TAXD admin --db "$db" tenant create --name bench)
field() { printf '%s' "$creds" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
tenant=$(field tenant_id); client=$(field client_id); secret=$(field client_secret)
$TAXD admin --db "$db" ratelimit set --tenant "$tenant" --rate 100000000 --burst 100000000 >/dev/null

cores=$(nproc)
port=$(free_port)
$TAXD serve --db "$db" --listen "127.0.0.1:$port" 2>"$work/taxd.log" &
taxd_pid=$!
wait_http "http://127.0.0.1:$port/healthz" 10

token=$(curl -s -X POST "http://127.0.0.1:$port/v1/oauth/token" -H 'content-type: application/json' \
    -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$client\",\"client_secret\":\"$secret\"}" |
    sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
url="http://127.0.0.1:$port/v1/filers/default"
body=$(curl -s "$url" -H "authorization: Bearer $token")
case "$body" in *'"is_default":true'*) ;; *) echo "bench: unexpected answer: $body" >&2; exit 1;; esac

# nginx from its own prefix, same body, as many workers as taxd has cores.
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
    server {
        listen 127.0.0.1:$nport;
        location / { default_type application/json; return 200 '$body'; }
    }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf"
wait_http "http://127.0.0.1:$nport/" 10

# Alternate the two servers over several rounds and take each one's median:
# on a shared machine the load drifts, and alternating spreads the drift over
# both sides of the ratio.
rounds=${BENCH_ROUNDS:-3}
for i in $(seq 1 "$rounds"); do
    wrk_run "$url" "$work/taxd.$i.wrk" "authorization: Bearer $token"
    wrk_run "http://127.0.0.1:$nport/" "$work/nginx.$i.wrk"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
collect() { # side metric
    for i in $(seq 1 "$rounds"); do "$2" "$work/$1.$i.wrk"; done
}
to_ms() { awk '{ v = $1; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.2f\n", v }'; }
t_rps=$(collect taxd wrk_rps | median); n_rps=$(collect nginx wrk_rps | median)
t_p99=$(collect taxd wrk_p99 | to_ms | median); n_p99=$(collect nginx wrk_p99 | to_ms | median)
t_all=$(collect taxd wrk_rps | tr '\n' ' '); n_all=$(collect nginx wrk_rps | tr '\n' ' ')
t_bad=$(collect taxd wrk_non2xx | awk '{ s += $1 } END { print s + 0 }')
ratio=$(/usr/bin/python3 -c "print(f'{$t_rps/$n_rps:.2f}')")

cat > "$work/section.md" <<MD
## HTTP path (\`make bench\`)

Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: wrk -t2 -c64 -d${BENCH_SECONDS:-10}s --latency,
$rounds rounds alternating taxd and nginx; medians below (all rounds, requests/s: taxd $t_all; nginx $n_all).
taxd: \`GET /v1/filers/default\` with a bearer token (JWT verification, rate limit with the
tenant's limit raised, one SQLite read), 16 threads (the default).
nginx: the same JSON body from \`return 200\`, $cores workers, keepalive_requests raised.

| server | requests/s | p99 latency | non-2xx |
|---|---|---|---|
| taxd | $t_rps | $t_p99 ms | $t_bad |
| nginx (reference) | $n_rps | $n_p99 ms | 0 |

Ratio taxd / nginx: **$ratio** (target: at least 0.5). p99 target: under 10 ms.
Reproduce: \`make bench\` (\`BENCH_SECONDS\`, \`BENCH_ROUNDS\` to change the run).
MD
write_section http "$work/section.md"
cat "$work/section.md"
