#!/usr/bin/env bash
# A private, throw-away PostgreSQL cluster for the API suite (make api-pg).
#
#   tests/pg/cluster.sh start   make and start a fresh cluster (no-op when this state's cluster runs)
#   tests/pg/cluster.sh stop    stop it and remove its directory (no-op when none)
#   tests/pg/cluster.sh restart [SECONDS]
#                               restart the running cluster (pg_ctl restart -m fast: the fault
#                               tests); with SECONDS, stop (-m fast), stay down that long, start:
#                               an outage long enough for requests to land in it
#   tests/pg/cluster.sh url     print the URL of the login role `taxd` (database "postgres")
#   tests/pg/cluster.sh env     print `export TAXD_TEST_PG=<that URL>` for eval
#
# Why it looks like this: CI runs as root and PostgreSQL refuses to run as root, so the
# cluster belongs to user `postgres` (created when missing); several engineers and CI jobs
# share one machine, so each cluster lives in a fresh temporary directory, listens on
# 127.0.0.1 only, on a free port, with its unix socket inside that directory (never
# /var/run/postgresql), and needs a password (scram-sha-256) generated per cluster.
# Tests connect as `taxd` (LOGIN CREATEDB, not a superuser): each test server creates and
# drops a database of its own.
#
# The state file (TAXD_PG_STATE, default build/pg/state of this checkout, mode 0600) is a
# sourceable list of PG_DIR, PG_DATA, PG_BIN, PG_PORT, PG_RUNAS, PG_SUPERUSER_URL and
# PG_TAXD_URL. TAXD_PG_PORT picks the port (default: a free one). Passwords appear in
# the state file and the URLs only, never on stdout of `start`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
STATE=${TAXD_PG_STATE:-$repo/build/pg/state}

say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# ---------------------------------------------------------------------------- install

pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install_postgresql() {
    [ -n "$(pg_bindir)" ] && return 0
    say "installing postgresql from Debian"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    # Debian's package would otherwise create and start a cluster on port 5432; the
    # suite needs only the binaries.
    $sudo mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.d/taxd-no-main.conf >/dev/null
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends postgresql postgresql-client
    [ -n "$(pg_bindir)" ] || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb"
}

# ------------------------------------------------------------------------------ users

# The user the server runs as: `postgres` when we are root (created when missing),
# ourselves otherwise.
runas_user() {
    if [ "$(id -u)" -ne 0 ]; then id -un; return; fi
    if ! id -u postgres >/dev/null 2>&1; then
        say "creating system user postgres"
        useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres
    fi
    echo postgres
}

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_RUNAS" -- "$@"; else "$@"; fi
}

# ------------------------------------------------------------------------------ state

load_state() {
    [ -f "$STATE" ] || return 1
    # shellcheck disable=SC1090
    . "$STATE"
}

running() {
    [ -n "${PG_DATA:-}" ] && [ -d "$PG_DATA" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

port_busy() {
    python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try: s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError: sys.exit(0)
sys.exit(1)' "$1"
}

# ---------------------------------------------------------------------------- commands

destroy() {
    # Stops the cluster of the loaded state (if any runs) and removes its directory and state.
    if [ -n "${PG_DATA:-}" ] && [ -d "$PG_DATA" ]; then
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 30 stop >/dev/null 2>&1 \
            || as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    case "${PG_DIR:-}" in
        /*/taxd-pg.*) rm -rf -- "$PG_DIR" ;;
    esac
    rm -f -- "$STATE"
}

cmd_start() {
    if load_state; then
        if running; then say "already running on port $PG_PORT ($STATE)"; return 0; fi
        say "removing a stale cluster ($PG_DIR)"
        destroy
    fi
    install_postgresql
    PG_BIN=$(pg_bindir)
    PG_RUNAS=$(runas_user)
    local port=${TAXD_PG_PORT:-}
    if [ -n "$port" ]; then
        port_busy "$port" && die "port $port is in use (TAXD_PG_PORT)"
    else
        port=$(free_port)
    fi
    PG_PORT=$port
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/taxd-pg.XXXXXX")
    PG_DATA=$PG_DIR/data
    # From here a failure removes whatever was made.
    trap 'rc=$?; if [ $rc -ne 0 ]; then say "start failed; cleaning up"; [ -f "$PG_DIR/log" ] && tail -n 20 "$PG_DIR/log" >&2; destroy; fi' EXIT
    chmod 0700 "$PG_DIR"
    mkdir -p "$PG_DIR/sock"
    local super_pw taxd_pw
    super_pw=$(openssl rand -hex 24)
    taxd_pw=$(openssl rand -hex 24)
    ( umask 077; printf '%s\n' "$super_pw" > "$PG_DIR/pwfile" )
    [ "$(id -u)" -eq 0 ] && chown -R "$PG_RUNAS:" "$PG_DIR"

    as_pg "$PG_BIN/initdb" -D "$PG_DATA" --username=postgres --pwfile="$PG_DIR/pwfile" \
        --auth=scram-sha-256 --encoding=UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1 \
        || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    rm -f "$PG_DIR/pwfile"
    # Test servers each keep a pool; multi-node tests run several at once.
    as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null <<EOF
# tests/pg/cluster.sh
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR/sock'
max_connections = 300
EOF
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/log" -w -t 60 start >/dev/null \
        || die "pg_ctl start failed (port $PG_PORT)"

    PGPASSWORD=$super_pw "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR/sock" -p "$PG_PORT" \
        -U postgres -d postgres -c "CREATE ROLE taxd LOGIN CREATEDB PASSWORD '$taxd_pw'" \
        || die "could not create role taxd"

    PG_SUPERUSER_URL="postgresql://postgres:$super_pw@127.0.0.1:$PG_PORT/postgres"
    PG_TAXD_URL="postgresql://taxd:$taxd_pw@127.0.0.1:$PG_PORT/postgres"
    mkdir -p "$(dirname "$STATE")"
    ( umask 077; cat > "$STATE" <<EOF
PG_DIR='$PG_DIR'
PG_DATA='$PG_DATA'
PG_BIN='$PG_BIN'
PG_PORT='$PG_PORT'
PG_RUNAS='$PG_RUNAS'
PG_SUPERUSER_URL='$PG_SUPERUSER_URL'
PG_TAXD_URL='$PG_TAXD_URL'
EOF
    )
    trap - EXIT
    say "started PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT in $PG_DIR (state $STATE)"
}

cmd_stop() {
    if ! load_state; then say "no cluster ($STATE)"; return 0; fi
    destroy
    say "stopped and removed $PG_DIR"
}

cmd_restart() {
    load_state || die "no cluster: run '$0 start' first ($STATE)"
    local pause=${1:-}
    if [ -n "$pause" ]; then
        case "$pause" in *[!0-9.]*) die "restart: SECONDS must be a number, not '$pause'" ;; esac
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null || die "pg_ctl stop failed"
        sleep "$pause"
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/log" -w -t 60 start >/dev/null \
            || die "pg_ctl start failed (port $PG_PORT)"
        return 0
    fi
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/log" -m fast -w -t 60 restart >/dev/null \
        || die "pg_ctl restart failed"
}

cmd_url() {
    load_state || die "no cluster: run '$0 start' first ($STATE)"
    running || die "the cluster of $STATE is not running"
    echo "$PG_TAXD_URL"
}

cmd_env() {
    echo "export TAXD_TEST_PG=$(cmd_url)"
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    restart) cmd_restart "${2:-}" ;;
    url) cmd_url ;;
    env) cmd_env ;;
    *) echo "usage: $0 start|stop|restart [SECONDS]|url|env" >&2; exit 2 ;;
esac
