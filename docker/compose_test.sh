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
if ! command -v dockerd > /dev/null || ! command -v docker-compose > /dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose > /dev/null
fi
command -v curl > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl > /dev/null
if ! docker info > /dev/null 2>&1; then
    (dockerd > /tmp/docs-agent-dockerd.log 2>&1 &)
    for _ in $(seq 1 60); do docker info > /dev/null 2>&1 && break; sleep 1; done
    docker info > /dev/null 2>&1 || fail "dockerd did not start (/tmp/docs-agent-dockerd.log)"
fi
if docker compose version > /dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
say "$(docker version -f 'engine {{.Server.Version}}'), $("${COMPOSE[@]}" version --short 2>/dev/null || true)"

say "images, built here"
docker/prebuilt.sh
OLLAMA_IMAGE=$(awk '/image: ollama\/ollama:/ {print $2; exit}' compose.yaml)
docker build -q -f docker/stand-in.Dockerfile -t "$OLLAMA_IMAGE" . > /dev/null

WORK=$(mktemp -d)
cp -R compose.yaml .dockerignore workspace docker dist "$WORK"/
chown 10001:10001 "$WORK/workspace/notes"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export COMPOSE_PROJECT_NAME="docsagenttest$$" DOCS_AGENT_DOCKERFILE=docker/prebuilt.Dockerfile DOCS_AGENT_PORT=$PORT
cd "$WORK"
compose() { "${COMPOSE[@]}" "$@"; }
cleanup() { compose --profile init down -v --remove-orphans > /dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
healthy() {
    for _ in $(seq 1 90); do
        [ "$(docker inspect -f '{{.State.Health.Status}}' "$(compose ps -q "$1")" 2>/dev/null)" = healthy ] && return 0
        sleep 1
    done
    fail "$1 never became healthy"
}
compose build > /dev/null 2>&1 || compose build
SIZE=$(docker image inspect docs-agent:local -f '{{.Size}}')
ok "the agent image: $((SIZE / 1000000)).$(( (SIZE / 100000) % 10 )) MB (aim: under 20 MB)"

say "without Ollama"
out=$(LLM_MODEL=scripted compose run --rm -T agent "how long is the refund window" 2> /dev/null)
grep -q "docs/refunds.md#window" <<< "$out" || fail "scripted question: $out"
ok "LLM_MODEL=scripted answers"
compose run --rm -T agent search "refund window" 2> /dev/null | grep -q "^docs/refunds.md#window" || fail "search"
ok "search"
compose run --rm -T agent check > /dev/null 2>&1 || fail "check"
ok "check"
out=$(compose run --rm -T agent eval 2> /dev/null) || fail "eval: $(tail -3 <<< "$out")"
ok "eval: $(tail -1 <<< "$out")"
[ -z "$(compose ps -q ollama)" ] || fail "something started ollama"

say "the README's first commands"
compose up -d ollama > /dev/null 2>&1
healthy ollama
err=$(mktemp)
out=$(compose run --rm -T agent "how long is the refund window" 2> "$err") || fail "question: $(cat "$err")"
grep -q "^- docs/refunds.md#window (Refunds > Window)" <<< "$out" || fail "no verified citation: $out"
grep -q "pulling it first" "$err" || fail "the first question did not pull the model: $(cat "$err")"
ok "a question pulls the model, then answers citing docs/refunds.md#window"

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
# Docker bridge's and the host's own.
BRIDGE_IP=$(docker network inspect bridge -f '{{(index .IPAM.Config 0).Gateway}}')
HOST_IP=$(hostname -I | awk '{print $1}')
python3 -m http.server 18779 --bind 0.0.0.0 > /dev/null 2>&1 & LISTENER=$!
probe=$(compose run --rm -T -v "$WORK/dist/ollama-stand-in:/probe:ro" --entrypoint /probe agent probe \
    write:/etc/probe write:/usr/local/bin/probe write:/workspace/docs/probe.md write:/workspace/notes/probe.md \
    write:/data/probe connect:ollama:11434 "connect:$BRIDGE_IP:18779" "connect:$HOST_IP:18779" 2> /dev/null)
kill "$LISTENER" 2> /dev/null || true
expect() { grep -qF "$1" <<< "$probe" || fail "inside the container, expected '$1' in: $probe"; }
expect "uid 10001 gid 10001 CapEff 0000000000000000 NoNewPrivs 1"
expect "write /etc/probe refused: Read-only file system"
expect "write /usr/local/bin/probe refused: Read-only file system"
expect "write /workspace/docs/probe.md refused: Read-only file system"
expect "write /workspace/notes/probe.md ok"
expect "write /data/probe ok"
expect "connect ollama:11434 ok"
expect "connect $BRIDGE_IP:18779 refused"
expect "connect $HOST_IP:18779 refused"
ok "uid 10001, no capabilities, no_new_privs; read-only root; writes only notes/ and /data (and the /tmp tmpfs); reaches ollama, not this machine's listener"

say "the api"
token=$(compose run --rm -T init 2> /dev/null) || fail "init"
[ ${#token} -eq 48 ] || fail "init printed no token"
compose up -d api > /dev/null 2>&1
healthy api
code=000
for _ in $(seq 1 60); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz") && [ "$code" = 200 ] && break
    sleep 1
done
[ "$code" = 200 ] || fail "api /readyz: $code"
answer=$(curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"question":"how long is the refund window"}' "http://127.0.0.1:$PORT/v1/ask")
grep -q '"path":"docs/refunds.md"' <<< "$answer" || fail "api /v1/ask: $answer"
ok "init's token; api healthy and answering on 127.0.0.1:$PORT"

say "passed in $(( $(date +%s) - START )) s"
