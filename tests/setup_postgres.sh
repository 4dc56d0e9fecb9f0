#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for tests/test_postgres.py (and the PostgreSQL rows of
# tests/test_facts.py), and write its DSN where the tests look for it.
#
# - Installs PostgreSQL from Debian (apt-get install postgresql) when no initdb is found.
# - Creates a cluster in $WORKSHOP_PG_DIR (default /tmp/agent-memory-workshop-pg/data), owned by
#   the `postgres` user when run as root, with trust authentication on 127.0.0.1 only:
#   a test server for this machine, never a deployment.
# - Listens on 127.0.0.1, port 5432 if free, otherwise a free port; the socket goes in the same dir.
# - Writes the DSN to $WORKSHOP_PG_DIR/dsn (the tests read it, or WORKSHOP_TEST_PG_DSN when set)
#   and prints `export WORKSHOP_TEST_PG_DSN=...` as its last line.
# Safe to run repeatedly: when the server already answers it only prints the DSN (well under a second).
set -euo pipefail

STATE="${WORKSHOP_PG_DIR:-/tmp/agent-memory-workshop-pg}"
DATA="$STATE/data"
RUN="$STATE/run"
DB="${WORKSHOP_PG_DB:-workshop}"
DSN_FILE="$STATE/dsn"
PY="${PYTHON:-python3}"
say() { echo "setup_postgres: $*" >&2; }

find_bin() {  # newest installed server version's bin dir (Debian keeps them per version)
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; fi
}

as_owner() {  # run a server command as the cluster owner (postgres when we are root)
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

answers() {  # true when the DSN in $DSN_FILE reaches a server that accepts queries
    [ -s "$DSN_FILE" ] && [ -n "$BIN" ] && "$BIN/psql" "$(cat "$DSN_FILE")" -XAtqc "SELECT 1" >/dev/null 2>&1
}

free_port() {
    "$PY" - <<'PY'
import socket
def free(port):  # SO_REUSEADDR as PostgreSQL sets it, so a port in TIME_WAIT counts as free
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
if free(5432):
    print(5432)
else:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])
PY
}

BIN="$(find_bin)"
if answers; then
    say "server already running"
    echo "export WORKSHOP_TEST_PG_DSN=$(cat "$DSN_FILE")"
    exit 0
fi

if [ -z "$BIN" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        say "PostgreSQL is not installed and installing it needs root: run 'sudo apt-get install -y postgresql' first"
        exit 1
    fi
    say "installing PostgreSQL from Debian (about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    BIN="$(find_bin)"
    if [ -z "$BIN" ]; then
        say "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/initdb was found"
        exit 1
    fi
fi

mkdir -p "$STATE"
chmod 755 "$STATE"
if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        say "no 'postgres' user (the Debian package creates it):" \
            "run apt-get install --reinstall postgresql-common"
        exit 1
    fi
    mkdir -p "$RUN"
    chown postgres: "$RUN"
fi
mkdir -p "$RUN"

if [ ! -s "$DATA/PG_VERSION" ]; then
    say "initialising a throwaway cluster in $DATA"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$DATA"; fi
    chmod 700 "$DATA"
    as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
fi

if as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    say "a server runs on $DATA but does not answer on the recorded DSN; restarting it"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
fi

PORT="$(free_port)"
say "starting PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT"
as_owner "$BIN/pg_ctl" -D "$DATA" -l "$RUN/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $RUN -c max_connections=200 -c fsync=off" start >/dev/null
"$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -XAtqc "SELECT 1 FROM pg_database WHERE datname = '$DB'" postgres \
    | grep -q 1 || "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB"

echo "postgresql://postgres@127.0.0.1:$PORT/$DB" > "$DSN_FILE.tmp"
mv "$DSN_FILE.tmp" "$DSN_FILE"
chmod 644 "$DSN_FILE"
if ! answers; then
    say "the server started but does not answer; see $RUN/server.log"
    exit 1
fi
echo "export WORKSHOP_TEST_PG_DSN=$(cat "$DSN_FILE")"
