#!/usr/bin/env python3
"""What the release binary puts in front of the model for every bench question, through the CLI
(issue 33): per question set and half, how often a gold section is among the evidence
(`docs-agent search --evidence`), first in it, among the top 8 of `docs-agent search -n 8`, and how
often the evidence is judged too weak (answered "not covered"), for the answerable questions and
the off-topic ones. No model runs. Embeddings come from the environment (DOCS_AGENT_EMBEDDINGS_MODEL,
DOCS_AGENT_EMBEDDINGS_URL, e.g. from `bench/embeddings/kit.sh serve minilm PORT`); without them
search is by keywords.

usage: bench/evidence_cli.py [SETS] [--binary PATH] [--jsonl FILE]
  SETS: comma-separated, of workspace, polar-docs, business-central-docs (default all three)
The corpora are copied into target/real-model/ws-NAME (as bench/real-model/bench.py does), whose
state folder (`docs-agent check` says where) keeps the index and vectors between runs. Asserts nothing.
"""
import argparse, json, os, re, shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def workspace(name):
    if name == 'workspace':
        # A copy, so the sample workspace's state is not this bench's.
        ws = ROOT / 'target' / 'real-model' / 'ws-workspace'
        if not ws.is_dir():
            shutil.copytree(ROOT / 'workspace', ws)
        return ws
    ws = ROOT / 'target' / 'real-model' / f'ws-{name}'
    if not (ws / 'docs').is_dir():
        corpora = Path(os.environ.get('DOCS_AGENT_CORPORA', ROOT.parent / 'shared' / 'corpora'))
        shutil.copytree(corpora / name, ws / 'docs')
    return ws

def gold_of(question):
    gold = question.get('gold', [])
    return lambda s: any(s == g or ('#' not in g and s.split('#')[0] == g) for g in gold)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('sets', nargs='?', default='workspace,polar-docs,business-central-docs')
    ap.add_argument('--binary', default=str(ROOT / 'target' / 'release' / 'docs-agent'))
    ap.add_argument('--jsonl')
    args = ap.parse_args()
    env = dict(os.environ, LLM_MODEL='extractive')
    rows = []
    for name in args.sets.split(','):
        ws = workspace(name)
        for kind, suffix in [('answerable', ''), ('off-topic', '.off-topic')]:
            for line in open(ROOT / 'bench' / 'questions' / f'{name}{suffix}.jsonl'):
                q = json.loads(line)
                run = lambda *a: subprocess.run([args.binary, '--workspace', str(ws), *a], capture_output=True,
                                                text=True, cwd=ws, env=env).stdout
                shown = run('search', '--evidence', q['question'])
                hits = [l.split()[0] for l in run('search', '-n', '8', q['question']).splitlines() if l.strip()]
                sources = re.findall(r'^\[\d+\] (\S+)', shown, re.M)
                is_gold = gold_of(q)
                rows.append({'set': name, 'kind': kind, 'id': q['id'], 'split': q['split'],
                             'weak': 'too weak' in shown, 'in_evidence': any(map(is_gold, sources)),
                             'first': bool(sources) and is_gold(sources[0]), 'top8': any(map(is_gold, hits))})
                print('.', end='', file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if args.jsonl:
        Path(args.jsonl).write_text(''.join(json.dumps(r) + '\n' for r in rows))
    print('| set | half | kind | n | gold in evidence | gold first | gold in top 8 | too weak |')
    print('|---|---|---|---:|---:|---:|---:|---:|')
    for name in args.sets.split(','):
        for kind in ['answerable', 'off-topic']:
            for split in ['dev', 'held-out']:
                r = [x for x in rows if x['set'] == name and x['kind'] == kind and x['split'] == split]
                if not r:
                    continue
                count = lambda key: sum(x[key] for x in r)
                gold = (f"{count('in_evidence')} | {count('first')} | {count('top8')}" if kind == 'answerable'
                        else '- | - | -')
                print(f"| {name} | {split} | {kind} | {len(r)} | {gold} | {count('weak')} |")

if __name__ == '__main__':
    main()
