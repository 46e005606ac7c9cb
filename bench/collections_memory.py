#!/usr/bin/env python3
"""`serve` holding several collections (issue 38): its resident memory with one ERP-sized
collection (business-central-docs, ~2,800 files) and with three of them, each its own copy of
the corpus with its own index, measured in the same run on the same binary: after start, and
after 200 searches spread over the collections. Also the time to first `serving on` (the
indexes are built before it). Reported as ratios against the one-collection baseline; nothing
is asserted.

usage: bench/collections_memory.py [BINARY]   (default target/release/docs-agent; build it first)
The corpus is read from DOCS_AGENT_CORPORA (default ../shared/corpora).
"""
import hashlib, json, os, pathlib, re, shutil, subprocess, sys, tempfile, threading, time
import urllib.parse

from serve_probe import TOKEN, get, status

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINARY = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / 'target' / 'release' / 'docs-agent')
CORPUS = os.path.join(os.environ.get('DOCS_AGENT_CORPORA', str(ROOT.parent / 'shared' / 'corpora')), 'business-central-docs')
QUERIES = [l.strip() for l in open(ROOT / 'bench' / 'queries.txt') if l.strip() and not l.startswith('#')] or ['payment tolerance']
SEARCHES = 200


def serve(count):
    """Starts serve over `count` collections, each a copy of the corpus; measures it; stops it."""
    base = pathlib.Path(tempfile.mkdtemp())
    names = [f'erp{i}' for i in range(count)]
    collections = ''
    for name in names:
        shutil.copytree(CORPUS, base / name / 'docs')
        collections += f'\n[[collections]]\nname = "{name}"\nworkspace = "{base / name}"\n'
    sha = hashlib.sha256(TOKEN.encode()).hexdigest()
    (base / 'docs-agent.toml').write_text(
        f'state_dir = "{base / "state"}"\n[serve]\nlisten = "127.0.0.1:0"\n\n'
        f'[[serve.tokens]]\nprincipal = "bench"\nsha256 = "{sha}"\nroles = ["ask", "admin"]\ncollections = ["*"]\n'
        + collections)
    env = dict(os.environ, LLM_MODEL='scripted', DOCS_AGENT_CONFIG=str(base / 'docs-agent.toml'))
    env.pop('WORKSPACE', None)
    started = time.perf_counter()
    p = subprocess.Popen([BINARY, 'serve'], cwd=base, env=env, stderr=subprocess.PIPE, text=True)
    url = None
    for line in p.stderr:
        found = re.search(r'serving on (http://\S+)', line)
        if found:
            url = found.group(1)
            break
    if url is None:
        raise SystemExit(f'serve did not start with {count} collection(s)')
    to_serve = time.perf_counter() - started
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    out = {'collections': count, 'to_serve_s': to_serve, 'start': status(p.pid)}
    ready = get(url, '/readyz', timeout=60)
    out['files'] = ready['files']
    for i in range(SEARCHES):
        name = names[i % count]
        q = urllib.parse.quote(QUERIES[i % len(QUERIES)])
        get(url, f'/v1/search?q={q}&collection={name}', timeout=60)
    out['searched'] = status(p.pid)
    p.terminate()
    p.wait(timeout=30)
    shutil.rmtree(base, ignore_errors=True)
    return out


def main():
    if not os.path.isdir(CORPUS):
        raise SystemExit(f'no corpus at {CORPUS}: set DOCS_AGENT_CORPORA')
    one = serve(1)
    three = serve(3)
    print(f'serve with N copies of business-central-docs as N collections ({one["files"]} files each), '
          f'{SEARCHES} searches spread over them')
    print(f'{"":34}{"1 collection":>14}{"3 collections":>15}{"ratio":>8}')
    rows = [
        ('to serving on (indexes built), s', one['to_serve_s'], three['to_serve_s']),
        ('RSS after start, MiB', one['start']['VmRSS'], three['start']['VmRSS']),
        ('RSS after searches, MiB', one['searched']['VmRSS'], three['searched']['VmRSS']),
        ('peak RSS (VmHWM), MiB', one['searched']['VmHWM'], three['searched']['VmHWM']),
    ]
    for label, a, b in rows:
        print(f'{label:34}{a:>14.1f}{b:>15.1f}{b / a:>7.2f}x')
    print(json.dumps({'one': one, 'three': three}))


main()
