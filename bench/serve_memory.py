#!/usr/bin/env python3
"""`serve` on business-central-docs (issue 11): resident memory after start and after 200
searches, and, when the binary keeps its index fresh, how long one changed document takes to
be searched (the update line serve prints) and the memory after it.

usage: bench/serve_memory.py [BINARY ...]   (default target/release/docs-agent; build it first)
Several binaries (an older build, say) are measured in the same run, one after the other, on
the same copy of the corpus (DOCS_AGENT_CORPORA, default ../shared/corpora).
"""
import hashlib, json, os, pathlib, re, shutil, statistics, subprocess, sys, tempfile, threading, time
import urllib.request

from serve_probe import TOKEN, get, status

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINS = sys.argv[1:] or [str(ROOT / 'target' / 'release' / 'docs-agent')]
src = os.path.join(os.environ.get('DOCS_AGENT_CORPORA', str(ROOT.parent / 'shared' / 'corpora')), 'business-central-docs')
QUERIES = [l.strip() for l in open(ROOT / 'bench' / 'queries.txt') if l.strip() and not l.startswith('#')] or ['payment tolerance']


def measure(binary):
    ws = tempfile.mkdtemp()
    shutil.copytree(src, os.path.join(ws, 'docs'))
    sha = hashlib.sha256(TOKEN.encode()).hexdigest()
    pathlib.Path(ws, 'docs-agent.toml').write_text(
        f'[serve]\nlisten = "127.0.0.1:0"\nmax_sessions_per_principal = 100000000\nsessions_per_minute = 100000000\nmax_turns_per_principal = 100000\nmax_followers_per_principal = 100000\n\n[[serve.tokens]]\nprincipal = "bench"\nsha256 = "{sha}"\nroles = ["ask", "admin"]\n')
    env = dict(os.environ, WORKSPACE=ws, LLM_MODEL='scripted')
    p = subprocess.Popen([binary, 'serve'], cwd=ws, env=env, stderr=subprocess.PIPE, text=True)
    lines = []
    first = p.stderr.readline()
    url = re.search(r'serving on (\S+)', first).group(1)
    threading.Thread(target=lambda: [lines.append(l) for l in p.stderr], daemon=True).start()
    out = {'start': status(p.pid)}
    for i in range(200):
        get(url, '/v1/search?q=' + urllib.parse.quote(QUERIES[i % len(QUERIES)]))
    out['searched'] = status(p.pid)
    ready = get(url, '/readyz')
    if 'index' in ready:
        updates = []
        files = sorted(pathlib.Path(ws, 'docs').rglob('*.md'))
        for i in range(5):
            f = files[(i + 1) * 311]
            before = get(url, '/readyz')['index']['generation']
            t = time.perf_counter()
            f.write_text(f.read_text() + f'\n\nEdited {i} zanzibarquux.\n')
            while get(url, '/readyz')['index']['generation'] == before:
                time.sleep(0.005)
            seen = (time.perf_counter() - t) * 1e3
            took = [int(m.group(1)) for l in lines if (m := re.search(r'generation \d+: .* \((\d+) ms\)', l))]
            updates.append((seen, took[-1] if took else None))
        out['updates'] = updates
        out['updated'] = status(p.pid)
    p.terminate()
    p.wait()
    shutil.rmtree(ws)
    return out


for binary in BINS:
    r = measure(binary)
    print(f'{binary}: business-central-docs, serve (workers = {os.cpu_count()}), MB')
    print(f"  after start:        RSS {r['start']['VmRSS']:.1f}")
    print(f"  after 200 searches: RSS {r['searched']['VmRSS']:.1f}, peak {r['searched']['VmHWM']:.1f}")
    if 'updates' in r:
        seen = [s for s, _ in r['updates']]
        took = [t for _, t in r['updates'] if t is not None]
        print(f"  one changed document: searched after a median {statistics.median(seen):.0f} ms (write to new generation,"
              f" n={len(seen)}); the update itself {statistics.median(took):.0f} ms")
        print(f"  after 5 updates:    RSS {r['updated']['VmRSS']:.1f}, peak {r['updated']['VmHWM']:.1f}")
