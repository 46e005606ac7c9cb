#!/usr/bin/env python3
"""What a question's vector and a section's vector cost on embedding servers measured side by side: requests to
each server alternate (one at a time, never two at once), so every model sees the same load on the machine.

usage: latency.py [--questions FILE.jsonl] [--corpus DIR] [--sections N] [--rounds R] NAME=URL=MODEL[=QUERY_PREFIX] ...
  e.g. latency.py minilm=http://127.0.0.1:18121/v1=all-minilm-l6-v2 \\
                  bge=http://127.0.0.1:18120/v1=bge-small-en-v1.5='Represent this sentence for searching relevant passages: '

Questions: every question of the file (default the ERP tickets, bench/questions/business-central-docs.jsonl), one
per request with the query prefix, as docs-agent asks. Sections: N (default 256) passages of the corpus's Markdown
files cut at headings and clipped to 1,000 characters (the bench's BENCH_INPUT_CHARS), sent 32 per request as the
bench does. Prints the median and 90th percentile ms per question, and ms per section (each request's time / 32)."""
import argparse, glob, json, os, random, re, statistics, time, urllib.request

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--questions", default=os.path.join(here, "../questions/business-central-docs.jsonl"))
ap.add_argument("--corpus", default=os.path.join(here, "../../../shared/corpora/business-central-docs"))
ap.add_argument("--sections", type=int, default=256); ap.add_argument("--rounds", type=int, default=1)
ap.add_argument("servers", nargs="+")
a = ap.parse_args()

servers = []
for s in a.servers:
    name, url, model, *prefix = s.split("=", 3)
    servers.append((name, url.rstrip("/") + "/embeddings", model, prefix[0] if prefix else ""))

questions = [json.loads(l)["question"] for l in open(a.questions) if l.strip()]
random.seed(7)
files = sorted(glob.glob(os.path.join(a.corpus, "**/*.md"), recursive=True))
sections = []
for f in random.sample(files, min(len(files), a.sections)):
    parts = [p.strip() for p in re.split(r"\n(?=#{1,6} )", open(f, encoding="utf-8", errors="replace").read()) if p.strip()]
    if parts:
        sections.append(random.choice(parts)[:1000])
sections = sections[: a.sections]


def ask(url, model, texts):
    body = json.dumps({"model": model, "input": texts}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        data = json.load(r)["data"]
    assert len(data) == len(texts)
    return (time.perf_counter() - started) * 1e3


for name, url, model, prefix in servers:  # warm up
    ask(url, model, [prefix + questions[0]])
q_ms = {s[0]: [] for s in servers}
s_ms = {s[0]: [] for s in servers}
for _ in range(a.rounds):
    for q in questions:
        for name, url, model, prefix in servers:
            q_ms[name].append(ask(url, model, [prefix + q]))
    for i in range(0, len(sections), 32):
        batch = sections[i:i + 32]
        for name, url, model, _ in servers:
            s_ms[name].append(ask(url, model, batch) / len(batch))
pct = lambda v, p: sorted(v)[min(len(v) - 1, int(round((len(v) - 1) * p)))]
print(f"{len(questions)} questions x {a.rounds}, {len(sections)} sections ({len(sections) // 32} requests of 32) x {a.rounds}; load average {os.getloadavg()[0]:.1f}")
for name, *_ in servers:
    print(f"{name}: question {statistics.median(q_ms[name]):.1f} ms median, {pct(q_ms[name], 0.9):.1f} ms p90; "
          f"section {statistics.median(s_ms[name]):.1f} ms median, {pct(s_ms[name], 0.9):.1f} ms p90")
