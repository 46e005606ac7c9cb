#!/usr/bin/env python3
"""Whole-process time of a scripted question on business-central-docs (issue 11): the index
built in memory by every process (index.path = memory) against the index file, first build,
warm, and with one document changed before each question.

usage: bench/warm_cli.py [BINARY]   (default target/release/docs-agent; build it first)
The corpus is copied into a temporary workspace (DOCS_AGENT_CORPORA, default ../shared/corpora).
"""
import os, pathlib, shutil, statistics, subprocess, sys, tempfile, time
ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / 'target' / 'release' / 'docs-agent')
src = os.path.join(os.environ.get('DOCS_AGENT_CORPORA', str(ROOT.parent / 'shared' / 'corpora')), 'business-central-docs')
ws = tempfile.mkdtemp()
shutil.copytree(src, os.path.join(ws, 'docs'))
os.makedirs(os.path.join(ws, 'notes'))
# The state in the workspace's .docs-agent/ (as releases before the state folder kept it).
env = dict(os.environ, WORKSPACE=ws, LLM_MODEL='scripted', DOCS_AGENT_STATE_DIR=os.path.join(ws, '.docs-agent'))
q = 'how do I set up payment tolerance'
def run(extra=None, n=1):
    e = dict(env, **(extra or {}))
    ts = []
    for _ in range(n):
        t = time.perf_counter(); p = subprocess.run([BIN, q], cwd=ws, env=e, capture_output=True); ts.append((time.perf_counter() - t) * 1e3)
        assert p.returncode == 0, p.stderr[-500:]
    return ts
mem = run({'DOCS_AGENT_INDEX': 'memory'}, 7)
first = run(n=1)
warm = run(n=15)
inc = []
files = [p for p in pathlib.Path(ws, 'docs').rglob('*.md')]
for i in range(7):
    f = files[i * 97]
    f.write_text(f.read_text() + f"\n\nEdited {i} zanzibar.\n")
    inc += run(n=1)
size = os.path.getsize(os.path.join(ws, '.docs-agent', 'index.db'))
med = statistics.median
print(f"business-central-docs ({len(files)} files), scripted question, whole process, ms:")
print(f"  index in memory (rebuilt by every process, as before): median {med(mem):.0f} (n={len(mem)})")
print(f"  first question with the index file (builds it):         {first[0]:.0f}")
print(f"  warm (file up to date):                                 median {med(warm):.0f} (n={len(warm)}), min {min(warm):.0f}")
print(f"  one file changed before the question:                   median {med(inc):.0f} (n={len(inc)})")
print(f"  index file: {size/1e6:.1f} MB")
shutil.rmtree(ws)
