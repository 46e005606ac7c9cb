#!/usr/bin/env bash
# Scale-out load bench (issue 16): asks/s and sessions/s of `docs-agent serve` with its sessions
# in SQLite (one replica) against PostgreSQL (one replica, then two replicas on one database),
# in one run on this machine, with bench/ask_load.py as the client (its connections spread over
# the replicas, as a load balancer would; a session's message goes to the other replica).
#
#   bench/replicas.sh [ROUNDS]      # default 2 rounds; needs root or the postgres user's rights
#
# It builds the release binary, starts a PostgreSQL cluster of its own on loopback (Debian's
# postgresql package; durable: fsync on, synchronous_commit on), and runs each setup in turn,
# ROUNDS times interleaved, each measure 3 s of warm-up then DURATION (10) s. Scripted model,
# index in memory, request log off (DOCS_AGENT_LOG=warn), limits raised so that none refuses.
# Prints one line per measure and a table of medians, with ratios to SQLite on one replica.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
DURATION=${DURATION:-10}
CONCURRENCY=${CONCURRENCY:-16}
T=$(mktemp -d /tmp/docs-agent-replicas-bench.XXXXXX)
chmod 711 "$T"   # the postgres user passes through to its folder
PIDS=()
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
    [ -f "$T/pg/data/postmaster.pid" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$T/pg/data" -m fast stop > /dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cargo build --release --locked --bin docs-agent 2>&1 | tail -1 >&2
BIN=$PWD/target/release/docs-agent

# PostgreSQL, as Debian installs it, run by the postgres user in a folder of ours
mkdir -p "$T/pg/data" && chown -R postgres "$T/pg" && chmod 700 "$T/pg/data"
PG_PORT=$(free_port)
runuser -u postgres -- "$PG_BIN/initdb" -D "$T/pg/data" -U docs -A trust -E UTF8 --no-instructions > /dev/null
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$T/pg/data" -l "$T/pg/log" -w \
    -o "-k $T/pg -p $PG_PORT -c listen_addresses=127.0.0.1 -c max_connections=200" start > /dev/null
PG_URL="postgres://docs@127.0.0.1:$PG_PORT"
echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT (fsync on)" >&2

(umask 077 && "$BIN" init --to "$T/init.toml" > "$T/token" 2> /dev/null)
{ printf '[serve]\nrate_per_minute = 100000000\nmax_concurrent = 1024\nmax_open_sessions = 100000000\nmax_sessions_per_principal = 100000000\nsessions_per_minute = 100000000\nmax_turns_per_principal = 100000\nmax_followers_per_principal = 100000\n\n'
  grep -v '^#' "$T/init.toml"; } > "$T/bench.toml"
cp -r workspace "$T/ws"

# start LOG: a replica on a free port, its sessions at LOG (a file or a postgres:// URL); its
# address is added to URLS (no command substitution: the replica would hold its pipe open)
start() {
    local log=$1 port
    port=$(free_port)
    local where=(DOCS_AGENT_SESSION_LOG="$log")
    [[ $log == postgres://* ]] && where=(DOCS_AGENT_SESSION_LOG_URL="$log")
    env -i PATH=/usr/bin:/bin DOCS_AGENT_CONFIG="$T/bench.toml" WORKSPACE="$T/ws" LLM_MODEL=scripted \
        DOCS_AGENT_INDEX=memory DOCS_AGENT_LOG=warn "${where[@]}" \
        "$BIN" serve --listen "127.0.0.1:$port" >> "$T/serve.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && { URLS+=("http://127.0.0.1:$port"); return; }
        sleep 0.1
    done
    echo "a replica did not start: $(tail -5 "$T/serve.log")" >&2
    exit 1
}
stop_all() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; done
    PIDS=()
}

RESULTS=$T/results
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
    for setup in sqlite-1 postgres-1 postgres-2; do
        URLS=()
        # each measure on an empty log: a SQLite file, or a PostgreSQL database, of its own
        db="docs_${round}_${setup//-/_}"
        [[ $setup == postgres-* ]] && runuser -u postgres -- "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U docs "$db"
        case $setup in
            sqlite-1) mkdir -p "$T/run-$round" && start "$T/run-$round/sessions.db" ;;
            postgres-1) start "$PG_URL/$db" ;;
            postgres-2) start "$PG_URL/$db" && start "$PG_URL/$db" ;;
        esac
        for mode in ask session; do
            line=$(bench/ask_load.py "${URLS[@]}" --token-file "$T/token" --mode "$mode" \
                --concurrency "$CONCURRENCY" --warmup 3 --duration "$DURATION" --json)
            echo "round $round $setup $mode $line" >&2
            echo "$setup $mode $line" >> "$RESULTS"
        done
        stop_all
    done
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    setup, mode, data = line.split(" ", 2)
    data = json.loads(data)
    rate = data.get("asks_per_s", data.get("sessions_per_s"))
    rows.setdefault((setup, mode), []).append((rate, data["p50_ms"], data["p99_ms"], data["errors"]))
print("| setup | asks/s (range) | ask p99 | sessions/s (range) | session p50 | session p99 | errors |")
print("|---|---:|---:|---:|---:|---:|---:|")
spread = lambda rows: f"{min(r[0] for r in rows):,.0f}–{max(r[0] for r in rows):,.0f}"
base = {m: statistics.median(r[0] for r in rows[("sqlite-1", m)]) for m in ("ask", "session")}
for setup in ("sqlite-1", "postgres-1", "postgres-2"):
    a, s = rows[(setup, "ask")], rows[(setup, "session")]
    ar, sr = statistics.median(r[0] for r in a), statistics.median(r[0] for r in s)
    errors = sum(r[3] for r in a + s)
    print(f"| {setup} | {ar:,.0f} ({ar / base['ask']:.2f}x; {spread(a)}) | {statistics.median(r[2] for r in a):.1f} ms "
          f"| {sr:,.0f} ({sr / base['session']:.2f}x; {spread(s)}) | {statistics.median(r[1] for r in s):.1f} ms "
          f"| {statistics.median(r[2] for r in s):.1f} ms | {errors} |")
PY
