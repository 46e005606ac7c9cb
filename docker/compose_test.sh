#!/usr/bin/env bash
# The compose stack, run for real (issue 14): the README's compose commands, on a Docker engine
# that reaches no registry. Images come from this checkout (docker/prebuilt.sh); Ollama is
# played by ollama-stand-in, tagged as the compose file's Ollama image. Installs docker.io and
# docker-compose from Debian's packages and starts dockerd when they are missing (needs root).
#
#   docker/compose_test.sh            # prints each check, the image size and the time taken
#
# It runs in a temporary copy of compose.yaml, workspace/ and the image's files, so the notes
# it writes land there, not in the checkout; the project (containers, networks, volumes) is
# removed at the end, pass or fail.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
say() { printf '== %s\n' "$*" >&2; }
ok() { printf 'ok   %s\n' "$*" >&2; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }
KEY=sk-test-4eC39HqLyjWDarjtT1zdp7dc   # the test key planted in the sample docs

say "docker"
WORK=$(mktemp -d)
DOCKERD=
LISTENER=
STAND_IN=
IMAGE=
SCALE_IMAGE=
SCALE_BUILD=
cleanup() {
    [ -n "$LISTENER" ] && kill "$LISTENER" 2> /dev/null
    if [ -f "$WORK/compose.yaml" ]; then
        (cd "$WORK" && compose --profile init --profile scale --profile rerank down -v --remove-orphans \
            > /dev/null 2>&1) || true
    fi
    [ -n "$STAND_IN" ] && docker rmi -f "$STAND_IN" > /dev/null 2>&1
    [ -n "$IMAGE" ] && docker rmi -f "$IMAGE" > /dev/null 2>&1
    [ -n "$SCALE_BUILD" ] && kill "$SCALE_BUILD" 2> /dev/null
    [ -n "$SCALE_IMAGE" ] && docker rmi -f "$SCALE_IMAGE" > /dev/null 2>&1
    rm -rf "$WORK"
    # a dockerd this script started is stopped again
    [ -n "$DOCKERD" ] && kill "$DOCKERD" 2> /dev/null
    true
}
trap cleanup EXIT
missing=
for tool in dockerd:docker.io docker-compose:docker-compose curl:curl python3:python3 debootstrap:debootstrap; do
    command -v "${tool%%:*}" > /dev/null || missing="$missing ${tool##*:}"
done
if [ -n "$missing" ]; then
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing > /dev/null
fi
if ! docker info > /dev/null 2>&1; then
    dockerd > /tmp/docs-agent-dockerd.log 2>&1 &
    DOCKERD=$!
    for _ in $(seq 1 60); do docker info > /dev/null 2>&1 && break; sleep 1; done
    docker info > /dev/null 2>&1 || fail "dockerd did not start (/tmp/docs-agent-dockerd.log)"
fi
if docker compose version > /dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
compose() { "${COMPOSE[@]}" "$@"; }
say "$(docker version -f 'engine {{.Server.Version}}'), $("${COMPOSE[@]}" version --short 2>/dev/null || true)"

say "images, built here"
# The scale profile's postgres and lb, from Debian's packages, built meanwhile (about a minute).
SCALE_IMAGE="docs-agent-test/scale-stand-in:$$"
docker/scale-stand-in.sh "$SCALE_IMAGE" > "$WORK/scale-stand-in.log" 2>&1 &
SCALE_BUILD=$!
docker/prebuilt.sh
# The stand-in gets a tag of its own (never the real Ollama image's), named in an override file.
STAND_IN="docs-agent-test/ollama-stand-in:$$"
docker build -q -f docker/stand-in.Dockerfile -t "$STAND_IN" . > /dev/null

# The Dockerfile's builder unpacks the same archive with GNU tar as root: the owners and
# modes the image needs must survive that too (the compose build below uses Docker's ADD).
UNPACKED="$WORK/unpacked"
mkdir "$UNPACKED"
tar -xpf dist/rootfs.tar --numeric-owner -C "$UNPACKED"
owners=$(stat -c '%n %u:%g %a' "$UNPACKED/data" "$UNPACKED/etc/docs-agent" "$UNPACKED/workspace/notes" \
    "$UNPACKED/workspace/docs" "$UNPACKED/tmp" | sed "s|$UNPACKED||")
[ "$owners" = "$(printf '%s\n' '/data 10001:10001 700' '/etc/docs-agent 10001:10001 700' \
    '/workspace/notes 10001:10001 750' '/workspace/docs 0:0 755' '/tmp 0:0 1777')" ] \
    || fail "rootfs.tar unpacked by tar -xp: $owners"
rm -rf "$UNPACKED"
ok "the image's files keep their owners and modes unpacked by tar (the Dockerfile) as by ADD"

cp -R compose.yaml .dockerignore workspace docker dist "$WORK"/
# notes left by an earlier run in the checkout are not this run's
find "$WORK/workspace/notes" -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
# This run's own tags, so the machine's docs-agent:local is left alone.
IMAGE="docs-agent-test/agent:$$"
{
    printf 'services:\n  ollama:\n    image: %s\n' "$STAND_IN"
    # The reranker too: the stand-in answers TEI's POST /rerank, listening on TEI's port 80; its
    # health check is its own `list` (the stand-in's image has no curl).
    printf '  reranker:\n    image: %s\n    command: ["serve"]\n' "$STAND_IN"
    printf '    environment:\n      OLLAMA_HOST: 0.0.0.0:80\n    healthcheck:\n      test: ["CMD", "/bin/ollama", "list"]\n'
    for svc in agent api init tokens api-a api-b; do printf '  %s:\n    image: %s\n' "$svc" "$IMAGE"; done
    printf '  postgres:\n    image: %s\n' "$SCALE_IMAGE"
    printf '  lb:\n    image: %s\n    command: ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]\n' "$SCALE_IMAGE"
} > "$WORK/compose.test.yaml"
chown 10001:10001 "$WORK/workspace/notes"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export COMPOSE_PROJECT_NAME="docsagenttest$$" DOCS_AGENT_DOCKERFILE=docker/prebuilt.Dockerfile DOCS_AGENT_PORT=$PORT
export COMPOSE_FILE=compose.yaml:compose.test.yaml
cd "$WORK"
# Waits (60 s at most) until BASE/readyz answers 200; `code` holds the last status seen.
until_ready() {
    code=000
    for _ in $(seq 1 60); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz") && [ "$code" = 200 ] && return 0
        sleep 1
    done
    return 1
}
# The status of GET PATH on the api with TOKEN, asked each second until it is 200, for at most
# SECONDS: until_200 TOKEN PATH SECONDS.
until_200() {
    local code=000
    for _ in $(seq 1 "$3"); do
        code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
            "http://127.0.0.1:$PORT$2") && [ "$code" = 200 ] && break
        sleep 1
    done
    printf '%s' "$code"
}

healthy() {
    for _ in $(seq 1 90); do
        [ "$(docker inspect -f '{{.State.Health.Status}}' "$(compose ps -q "$1")" 2>/dev/null)" = healthy ] && return 0
        sleep 1
    done
    fail "$1 never became healthy"
}
compose build > /dev/null 2>&1 || compose build
SIZE=$(docker image inspect "$IMAGE" -f '{{.Size}}')
ok "the agent image: $((SIZE / 1000000)).$(( (SIZE / 100000) % 10 )) MB (aim: under 20 MB)"

say "without Ollama"
out=$(LLM_MODEL=scripted compose run --rm -T agent "how long is the refund window" 2> /dev/null)
grep -q "docs/refunds.md#window" <<< "$out" || fail "scripted question: $out"
ok "LLM_MODEL=scripted answers"
out=$(compose run --rm -T agent search "refund window" 2> /dev/null) || fail "search"
grep -q "^docs/refunds.md#window" <<< "$out" || fail "search: $out"
ok "search"
compose run --rm -T agent check > /dev/null 2>&1 || fail "check"
ok "check"
out=$(compose run --rm -T agent eval 2> /dev/null) || fail "eval: $(tail -3 <<< "$out")"
ok "eval: $(tail -1 <<< "$out")"
out=$(LLM_MODEL=extractive compose run --rm -T agent "how long is the refund window" 2> /dev/null)
grep -q "docs/refunds.md#window" <<< "$out" || fail "extractive question: $out"
ok "LLM_MODEL=extractive answers"
out=$(echo "a-token-of-twenty-characters" | compose run --rm -T agent hash-token 2> /dev/null)
[[ "$out" =~ ^[0-9a-f]{64}$ ]] || fail "hash-token: $out"
ok "hash-token"
out=$(compose run --rm -T agent sessions list 2>&1) || fail "sessions list: $out"
ok "sessions list"
# An MCP client starts `docker compose run --rm -T agent mcp` and speaks JSON-RPC on its stdin.
mcp_in='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"compose-test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"refund window","limit":1}}}'
out=$(LLM_MODEL=scripted compose run --rm -T agent mcp 2> /dev/null <<< "$mcp_in") || fail "mcp: $out"
grep -q '"name":"docs-agent"' <<< "$out" && grep -qF 'untrusted source=\"docs/refunds.md#window' <<< "$out" \
    || fail "mcp over stdio in the container: $out"
ok "mcp over stdio, in the sandboxed container"
[ -z "$(compose ps -q ollama)" ] || fail "something started ollama"

say "the rerank profile: a reranker on the sealed network (played by the stand-in, in TEI's shape)"
compose --profile rerank up -d reranker > /dev/null 2>&1 \
    || fail "up reranker: $(compose --profile rerank up -d reranker 2>&1 | tail -5)"
healthy reranker
# docs-agent asks in the `documents` shape first; the stand-in, as TEI, answers 422 naming
# `texts`, and only TEI's shape gets scores: an answer means the switch was made.
out=$(DOCS_AGENT_RERANKER_URL=http://reranker:80 compose --profile rerank run --rm -T agent check 2>&1) \
    || fail "check with the reranker: $out"
line=$(grep -F "info: retrieval.reranker: http://reranker:80/rerank answers (" <<< "$out") \
    || fail "check does not say the reranker answers: $out"
ok "check: $line"
out=$(DOCS_AGENT_RERANKER_URL=http://reranker:80 LLM_MODEL=extractive compose --profile rerank run --rm -T agent \
    "how long is the refund window" 2> "$WORK/rerank.err") \
    || fail "question with the reranker: $(cat "$WORK/rerank.err")"
grep -q "docs/refunds.md#window" <<< "$out" || fail "extractive question with the reranker: $out"
line=$(grep -F '"event":"search"' "$WORK/rerank.err" | grep -F '"message":"reranked the best ') \
    || fail "the trace has no reranked search: $(grep -F '"event":"search"' "$WORK/rerank.err" || cat "$WORK/rerank.err")"
ok "LLM_MODEL=extractive answers from reranked sections: $line"
compose --profile rerank rm -sf reranker > /dev/null 2>&1 || fail "rm reranker"

say "the README's first commands"
compose up -d ollama > /dev/null 2>&1
healthy ollama
err=$(mktemp)
out=$(compose run --rm -T agent "how long is the refund window" 2> "$err") || fail "question: $(cat "$err")"
grep -q "^- docs/refunds.md#window (Refunds > Window)" <<< "$out" || fail "no verified citation: $out"
grep -q "pulling it first" "$err" || fail "the first question did not pull the model: $(cat "$err")"
ok "a question pulls the model, then answers citing docs/refunds.md#window"

say "the same question on a terminal (as the README runs it, without -T)"
command -v script > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq util-linux > /dev/null
# the screen, with carriage returns and the progress line's terminal codes taken out
screen=$(script -qec "${COMPOSE[*]} run --rm agent 'how long is the refund window'" /dev/null < /dev/null \
    | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | tr '\r' '\n')
grep -q "^- docs/refunds.md#window (Refunds > Window)" <<< "$screen" || fail "on a terminal: $screen"
grep -q '^  search_docs "how long is the refund window": ' <<< "$screen" || fail "no brief trace line: $screen"
! grep -q '^{' <<< "$screen" || fail "JSON trace lines among the answer on a terminal: $screen"
ok "on a terminal the answer shows with a brief trace line, no JSON"

say "the compromised model's write"
question="what is in the onboarding integrations"
LLM_MODEL=scripted compose run --rm -T agent "$question" > /dev/null 2>&1 || true
[ ! -e workspace/notes/leak.txt ] || fail "a write without approval landed"
ok "denied without approval (no terminal, no APPROVE)"
LLM_MODEL=scripted APPROVE=yes compose run --rm -T agent "$question" > /dev/null 2>&1 || fail "approved write"
[ -f workspace/notes/leak.txt ] || fail "the approved note is not on the host"
grep -q "\[REDACTED" workspace/notes/leak.txt && ! grep -q "$KEY" workspace/notes/leak.txt || fail "the note is not redacted"
ok "approved: notes/leak.txt on the host, redacted"

say "inside the agent's container"
# Egress is tried only against a listener started here, on every address of this machine: the
# Docker bridge's and the host's own. A container on Docker's default bridge reaches it first,
# so the refusals below are the sealed network's.
# A bridge docker0 made by this very dockerd start may list no gateway: docker0's own
# address is the gateway then.
BRIDGE_IP=$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}')
[ -n "$BRIDGE_IP" ] || BRIDGE_IP=$(python3 - <<'PY'
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    print(socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", b"docker0"))[20:24]))
except OSError:
    pass
PY
)
HOST_IP=$(hostname -I | awk '{print $1}')
[ -n "$BRIDGE_IP" ] && [ -n "$HOST_IP" ] || fail "cannot tell this machine's addresses (bridge: '$BRIDGE_IP' from $(docker network inspect bridge -f '{{json .IPAM.Config}}'), host: '$HOST_IP')"
LISTEN_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])')
python3 -m http.server "$LISTEN_PORT" --bind 0.0.0.0 > /dev/null 2>&1 &
LISTENER=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$LISTEN_PORT/" && break; sleep 0.2; done
curl -s -o /dev/null "http://127.0.0.1:$LISTEN_PORT/" || fail "the listener on port $LISTEN_PORT did not start"
control=$(docker run --rm --network bridge -v "$WORK/dist/ollama-stand-in:/probe:ro" --entrypoint /probe \
    "$STAND_IN" probe "connect:$BRIDGE_IP:$LISTEN_PORT" "connect:$HOST_IP:$LISTEN_PORT" 2> /dev/null)
for addr in "$BRIDGE_IP" "$HOST_IP"; do
    grep -qF "connect $addr:$LISTEN_PORT ok" <<< "$control" || fail "the listener is not reachable from Docker's bridge: $control"
done
probe=$(compose run --rm -T -v "$WORK/dist/ollama-stand-in:/probe:ro" --entrypoint /probe agent probe \
    write:/etc/probe write:/usr/local/bin/probe write:/workspace/docs/probe.md write:/workspace/notes/probe.md \
    write:/data/probe connect:ollama:11434 "connect:$BRIDGE_IP:$LISTEN_PORT" "connect:$HOST_IP:$LISTEN_PORT" 2> /dev/null)
expect() { grep -qF "$1" <<< "$probe" || fail "inside the container, expected '$1' in: $probe"; }
expect "uid 10001 gid 10001 CapEff 0000000000000000 NoNewPrivs 1"
expect "write /etc/probe refused: Read-only file system"
expect "write /usr/local/bin/probe refused: Read-only file system"
expect "write /workspace/docs/probe.md refused: Read-only file system"
expect "write /workspace/notes/probe.md ok"
expect "write /data/probe ok"
expect "connect ollama:11434 ok"
expect "connect $BRIDGE_IP:$LISTEN_PORT refused"
expect "connect $HOST_IP:$LISTEN_PORT refused"
ok "uid 10001, no capabilities, no_new_privs; read-only root; writes only notes/ and /data (and the /tmp tmpfs); reaches ollama, not this machine's listener (which Docker's bridge reaches)"

say "the api"
# started before `init`: it waits for its config instead of exiting in a restart loop
compose up -d api > /dev/null 2>&1
waiting=
for _ in $(seq 1 60); do
    logs=$(compose logs api 2>&1 || true)
    grep -qF "waiting for /etc/docs-agent/docs-agent.toml" <<< "$logs" && waiting=yes && break
    sleep 1
done
[ -n "$waiting" ] || fail "api before init: $(compose logs api 2>&1 | tail -5)"
[ "$(docker inspect -f '{{.RestartCount}}' "$(compose ps -q api)")" = 0 ] || fail "api restarted before init"
token=$(compose run --rm -T init 2> /dev/null) || fail "init"
[ ${#token} -eq 48 ] || fail "init printed no token"
healthy api
until_ready "http://127.0.0.1:$PORT" || fail "api /readyz: $code"
answer=$(curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"question":"how long is the refund window"}' "http://127.0.0.1:$PORT/v1/ask")
grep -q '"path":"docs/refunds.md"' <<< "$answer" || fail "api /v1/ask: $answer"
mcp=$(curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-11-25' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"refund window"}}}' \
    "http://127.0.0.1:$PORT/mcp")
grep -qF 'docs/refunds.md#window' <<< "$mcp" || fail "api /mcp: $mcp"
ok "api up before init waits for its config; init's token; api healthy and answering on 127.0.0.1:$PORT (/v1/ask, /mcp)"
again=$(compose run --rm -T init 2>&1) && fail "a second init replaced the config: $again"
grep -qF -- "--replace" <<< "$again" || fail "a second init does not say how to start again: $again"
new_token=$(compose run --rm -T init --replace 2> /dev/null) || fail "init --replace"
[ ${#new_token} -eq 48 ] && [ "$new_token" != "$token" ] || fail "init --replace printed no new token"
compose restart api > /dev/null 2>&1
healthy api
code=$(until_200 "$new_token" /metrics 60)
[ "$code" = 200 ] || fail "the replaced token after a restart: $code"
old=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$PORT/metrics")
[ "$old" = 401 ] || fail "the old token still works after init --replace: $old"
ok "init --replace: a new token works after a restart, the old one no longer does"

say "tokens add: another caller, taken by the running api without a restart"
added=$(compose run --rm -T tokens add bo --role ask 2> /dev/null) || fail "tokens add"
[ ${#added} -eq 48 ] || fail "tokens add printed no token"
code=$(until_200 "$added" /v1/me 30)
[ "$code" = 200 ] || fail "the added token on the running api: $code"
ok "tokens add: the running api takes the new caller's token"

say "the scale profile: postgres, two api replicas, a load balancer"
wait "$SCALE_BUILD" || fail "the scale stand-in image: $(tail -5 "$WORK/scale-stand-in.log")"
SCALE_BUILD=
SCALE_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DOCS_AGENT_SCALE_PORT=$SCALE_PORT
export DOCS_AGENT_DB_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
LB="http://127.0.0.1:$SCALE_PORT"
compose --profile scale up -d lb > /dev/null 2>&1 || fail "up lb: $(compose --profile scale up -d lb 2>&1 | tail -5)"
healthy api-a
healthy api-b
# GET with the token through lb; prints the body, then the replica that answered
via_lb() {
    curl -s -D "$WORK/headers" -H "Authorization: Bearer $new_token" -H 'content-type: application/json' "$@"
    printf '\n%s\n' "$(tr -d '\r' < "$WORK/headers" | sed -n 's/^[Xx]-[Dd]ocs-[Aa]gent-[Rr]eplica: //p')"
}
# Waits (30 s at most) until lb sends requests to both replicas; `seen` names those it reached.
both_behind_lb() {
    for _ in $(seq 1 30); do
        seen=$(for _ in 1 2 3 4; do via_lb "$LB/readyz" | tail -1; done | sort -u | tr '\n' ' ')
        [ "$seen" = "api-a api-b " ] && return 0
        sleep 1
    done
    return 1
}
until_ready "$LB" || fail "lb /readyz: $code ($(compose logs --tail 5 lb api-a api-b 2>&1))"
# lb's health checks see both replicas up before it sends to both
both_behind_lb || fail "lb does not spread requests over both replicas: '$seen'"
out=$(via_lb -X POST -d '{}' "$LB/v1/sessions")
session=$(head -1 <<< "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])') || fail "a session through lb: $out"
made_on=$(tail -1 <<< "$out")
# A follower through lb, while the session's messages go to either replica.
curl -sN -m 60 -H "Authorization: Bearer $new_token" -H "Accept: text/event-stream" "$LB/v1/sessions/$session/events" > "$WORK/follower" &
FOLLOWER=$!
answered_on=
for _ in 1 2 3 4; do
    out=$(via_lb -d '{"text":"how long is the refund window"}' "$LB/v1/sessions/$session/messages")
    grep -q '"stop":"answered".*docs/refunds.md#window' <<< "$out" || fail "a message through lb: $out"
    answered_on="$answered_on $(tail -1 <<< "$out")"
done
grep -q "$( [ "$made_on" = api-a ] && echo api-b || echo api-a)" <<< "$answered_on" \
    || fail "the session made on $made_on never took a message on the other replica: $answered_on"
answers=0
for _ in $(seq 1 40); do
    answers=$(grep -c '^event: answer' "$WORK/follower" || true)
    [ "$answers" -ge 4 ] && break
    sleep 0.5
done
kill "$FOLLOWER" 2> /dev/null || true
[ "$answers" -ge 4 ] || fail "the follower through lb saw $answers of 4 answers: $(tail -5 "$WORK/follower")"
ok "a session made on $made_on took messages on$answered_on; its follower through lb saw all 4 answers live"
rows=$(compose exec -T -e PGPASSWORD="$DOCS_AGENT_DB_PASSWORD" postgres psql -h 127.0.0.1 -U docs_agent -d docs_agent \
    -tAc "select count(*) from docs_agent_events where session = '$session'" 2>&1) || fail "psql: $rows"
[ "$rows" -gt 8 ] || fail "the session's events are not in postgres: $rows"
ok "its $rows events are in postgres"

# kill -9 of one replica: lb sends everything to the other, the session goes on there
docker kill -s KILL "$(compose ps -q api-b)" > /dev/null
for i in 1 2 3 4; do
    out=$(via_lb -d '{"text":"how long is the refund window"}' "$LB/v1/sessions/$session/messages")
    grep -q '"stop":"answered".*docs/refunds.md#window' <<< "$out" && [ "$(tail -1 <<< "$out")" = api-a ] \
        || fail "message $i after api-b was killed: $out"
done
events=$(via_lb "$LB/v1/sessions/$session/events")
events=$(head -1 <<< "$events")   # no pipe into head: under pipefail, curl would die of SIGPIPE
[ "$(grep -o '"type":"answer"' <<< "$events" | wc -l)" = 8 ] || fail "the session after the kill: $events"
ok "api-b killed (-9): the next 4 messages answered on api-a, the session whole (8 answers)"
compose --profile scale up -d --no-deps api-b > /dev/null 2>&1 || fail "api-b back"
healthy api-b
both_behind_lb || fail "api-b is not back behind lb: '$seen'"
ok "api-b back behind lb"

say "collections: two git repositories served as two collections, kept in sync (docker/collections)"
# Two bare repositories made here, as a forge's mirrors would be; the api reads them in place.
GITWORK="$WORK/gitwork"
mkdir -p "$GITWORK" "$WORK/repos"
g() { git -c user.email=ci@example.com -c user.name=ci -c init.defaultBranch=main "$@"; }
for name in billing hr; do
    g init -q --bare "$WORK/repos/$name.git"
    g init -q "$GITWORK/$name"
done
cp -R "$WORK/workspace/docs" "$GITWORK/billing/docs"
printf '# Leave\n\n## Holiday allowance\n\nEvery employee gets 31 holiday days a year.\n' > "$GITWORK/hr/leave.md"
for name in billing hr; do
    (cd "$GITWORK/$name" && g add -A && g commit -qm first && g push -q "$WORK/repos/$name.git" HEAD:main) \
        || fail "the $name repository"
done
chmod -R a+rX "$WORK/repos"
# The example's config, looking every 10 s, with a caller that reads both collections.
COLLECTIONS_CONFIG="$WORK/collections-config"
mkdir -p "$COLLECTIONS_CONFIG"
sed 's/every = "30s"/every = "10s"/' docker/collections/config/docs-agent.toml > "$COLLECTIONS_CONFIG/docs-agent.toml"
both=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
printf '\n[[serve.tokens]]\nprincipal = "ci"\nsha256 = "%s"\nroles = ["ask"]\ncollections = ["*"]\n' \
    "$(printf '%s' "$both" | sha256sum | cut -d' ' -f1)" >> "$COLLECTIONS_CONFIG/docs-agent.toml"
chmod -R a+rX "$COLLECTIONS_CONFIG"
export DOCS_AGENT_COLLECTIONS_CONFIG="$COLLECTIONS_CONFIG" DOCS_AGENT_GIT_DIR="$WORK/repos"
collections() { COMPOSE_FILE=compose.yaml:compose.test.yaml:docker/collections/compose.yaml compose "$@"; }
collections up -d api > /dev/null 2>&1 || fail "up api with collections: $(collections up -d api 2>&1 | tail -5)"
healthy api
until_ready "http://127.0.0.1:$PORT" || fail "collections: /readyz: $code $(collections logs api 2>&1 | tail -5)"
get() { curl -s -H "Authorization: Bearer $both" "http://127.0.0.1:$PORT$1"; }
out=$(get "/v1/search?q=refund+window&collection=billing")
grep -qF '"path":"docs/refunds.md"' <<< "$out" || fail "billing from its repository: $out"
out=$(get "/v1/search?q=holiday+allowance&collection=hr")
grep -qF '"path":"docs/leave.md"' <<< "$out" || fail "hr from its repository: $out"
out=$(get "/v1/search?q=holiday+allowance&collection=billing")
grep -qF 'leave.md' <<< "$out" && fail "hr's docs found in billing: $out"
ok "billing and hr answer from their own repositories, and only from them"
# A commit pushed to hr is served within a look or two (every 10 s).
printf '\n## Parental leave\n\nParents get 20 weeks of zephyr leave.\n' >> "$GITWORK/hr/leave.md"
(cd "$GITWORK/hr" && g commit -qam second && g push -q "$WORK/repos/hr.git" HEAD:main) || fail "push to hr"
commit=$(git -C "$WORK/repos/hr.git" rev-parse main)
synced=
for _ in $(seq 1 60); do
    get "/v1/search?q=zephyr&collection=hr" | grep -qF '"anchor":"parental-leave"' && synced=yes && break
    sleep 1
done
[ -n "$synced" ] || fail "the pushed commit was not served: $(collections logs api 2>&1 | grep -i source | tail -3)"
get /v1/me | grep -qF "\"revision\":\"$commit\"" || fail "/v1/me does not name hr's new commit: $(get /v1/me)"
ok "a commit pushed to hr is served within seconds (revision $(cut -c1-12 <<< "$commit")), billing untouched"

say "passed in $(( $(date +%s) - START )) s"
