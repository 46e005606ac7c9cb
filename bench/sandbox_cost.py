#!/usr/bin/env python3
"""What entering the kernel sandbox costs a command (issue 13): `search` and a scripted `ask` on
a copy of the sample workspace, run alternately with the sandbox (the default) and with
`--no-sandbox`, the baseline of the same run. Prints medians and their ratio. Asserts nothing.
usage: bench/sandbox_cost.py [BINARY] [RUNS]   (default target/release/docs-agent, 40; build it first)
"""
import os, pathlib, shutil, statistics, subprocess, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else str(ROOT / 'target' / 'release' / 'docs-agent')
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
ws = tempfile.mkdtemp()
shutil.copytree(ROOT / 'workspace', ws, dirs_exist_ok=True)
env = {'PATH': os.environ.get('PATH', ''), 'WORKSPACE': ws, 'LLM_MODEL': 'scripted'}
COMMANDS = {'search': ['search', 'refund window'], 'ask (scripted)': ['how long is the refund window']}


def once(args):
    start = time.perf_counter()
    subprocess.run([BIN, *args], cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


print(f'{BIN}, {RUNS} runs of each, alternating; the index file is built by a first run\n')
print('| command | sandboxed median ms | --no-sandbox median ms | ratio |')
print('|---|---:|---:|---:|')
for name, args in COMMANDS.items():
    once(args)
    on, off = [], []
    for _ in range(RUNS):
        on.append(once(args))
        off.append(once(['--no-sandbox', *args]))
    a, b = statistics.median(on), statistics.median(off)
    print(f'| {name} | {a:.1f} | {b:.1f} | {a / b:.2f}x |')
shutil.rmtree(ws)
