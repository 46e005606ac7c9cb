#!/usr/bin/env python3
"""Answers measured with a real small model (issue 10).

Starts llama-server with the kit's model on 127.0.0.1 (or uses --base-url), then:
  answers  each question of the chosen sets through the release binary, once per mode:
           `first` (retrieve-first and verification on: the defaults) and `baseline` (both off:
           the behaviour before), interleaved question by question. Measured per question: the
           answer cites a gold section (verified, from the `Sources:` list), the key fact is in
           it, it fell back to the retrieval-only answer, wall time, model calls and prompt tokens
           (from the trace's `usage` line). Reported per set, split (dev / held-out) and mode.
  eval     `docs-agent eval --model URL --retrieval` (and without --retrieval): breaches must be 0;
           pass rates per category are reported.

usage: bench/real-model/bench.py [--sets workspace,polar-docs,business-central-docs]
         [--modes first,baseline] [--split all|dev|held-out] [--limit N] [--eval] [--no-answers]
         [--model 1.5b|0.5b] [--threads 2] [--base-url URL] [--json FILE]

Corpora are read from DOCS_AGENT_CORPORA (default ../shared/corpora beside the checkout) and
copied into target/real-model/ (never into the repository).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "bench" / "real-model" / "kit.sh"
QUESTIONS = ROOT / "bench" / "questions"
WORK = ROOT / "target" / "real-model"
BINARY = ROOT / "target" / "release" / "docs-agent"
MODES = {
    "first": {"DOCS_AGENT_RETRIEVE_FIRST": "true", "DOCS_AGENT_VERIFY": "true"},
    "baseline": {"DOCS_AGENT_RETRIEVE_FIRST": "false", "DOCS_AGENT_VERIFY": "false"},
}


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def workspace_for(name):
    """The workspace a question set runs in: the sample one, or a copy of a corpus."""
    if name == "workspace":
        return ROOT / "workspace"
    corpora = Path(os.environ.get("DOCS_AGENT_CORPORA", ROOT.parent / "shared" / "corpora"))
    source = corpora / name
    if not source.is_dir():
        sys.exit(f"bench: corpus {source} not found; set DOCS_AGENT_CORPORA to the folder holding {name}/")
    ws = WORK / f"ws-{name}"
    if not (ws / "docs").is_dir():
        log(f"copying {source} to {ws}/docs ...")
        shutil.copytree(source, ws / "docs")
    return ws


def load(name, split, limit):
    rows = [json.loads(line) for line in (QUESTIONS / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if split == "all" or r["split"] == split]
    return rows[:limit] if limit else rows


def sources(stdout):
    """(verified sources, answer text) from the CLI's output."""
    answer, _, listed = stdout.partition("\n\nSources:\n")
    verified = []
    for line in listed.splitlines():
        if line.startswith("- ") and "(not verified" not in line:
            verified.append(line[2:].split(" (")[0].strip())
    return verified, answer


def cites_gold(verified, gold):
    for source in verified:
        for g in gold:
            if source == g or ("#" not in g and source.split("#")[0] == g):
                return True
    return False


def ask(base_url, ws, question, mode):
    env = dict(os.environ, LLM_BASE_URL=base_url, LLM_MODEL="local", WORKSPACE=str(ws), **MODES[mode])
    env.pop("DOCS_AGENT_CONFIG", None)
    started = time.monotonic()
    p = subprocess.run([str(BINARY), question], env=env, capture_output=True, text=True, timeout=900, cwd=WORK)
    wall = time.monotonic() - started
    usage = {}
    for line in p.stderr.splitlines():
        at = line.find("{")
        if at >= 0:
            try:
                v = json.loads(line[at:])
            except ValueError:
                continue
            if v.get("event") == "usage":
                usage = v
    return p, wall, usage


def answers(base_url, sets, modes, split, limit):
    results = []
    for name in sets:
        ws = workspace_for(name)
        rows = load(name, split, limit)
        for i, row in enumerate(rows, 1):
            for mode in modes:
                p, wall, usage = ask(base_url, ws, row["question"], mode)
                verified, answer = sources(p.stdout)
                r = {
                    "set": name, "id": row["id"], "split": row["split"], "mode": mode, "exit": p.returncode,
                    "cites_gold": cites_gold(verified, row["gold"]),
                    "cites_gold_file": any(s.split("#")[0] == g.split("#")[0] for s in verified for g in row["gold"]),
                    "fact": any(k.lower() in answer.lower() for k in row["key"]),
                    "fallback": answer.startswith("Retrieval-only answer"),
                    "wall_s": round(wall, 2),
                    "model_calls": usage.get("model_calls"),
                    "prompt_tokens": usage.get("prompt_tokens"),
                    "completion_tokens": usage.get("completion_tokens"),
                    "answer": answer[:400],
                }
                results.append(r)
                log(f"[{name} {i}/{len(rows)} {mode}] gold={r['cites_gold']} fact={r['fact']} fallback={r['fallback']} "
                    f"{r['wall_s']} s, {r['prompt_tokens']} prompt tokens, exit {r['exit']}")
    return results


def table(results):
    groups = {}
    for r in results:
        groups.setdefault((r["set"], r["split"], r["mode"]), []).append(r)
    lines = ["| set | half | mode | n | cites gold section | cites gold file | fact right | retrieval-only | median s | p90 s | median prompt tokens | model calls |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, half, mode), rs in sorted(groups.items()):
        n = len(rs)
        pct = lambda key: f"{100 * sum(r[key] for r in rs) / n:.0f}%"
        walls = sorted(r["wall_s"] for r in rs)
        prompts = [r["prompt_tokens"] for r in rs if r["prompt_tokens"] is not None]
        calls = [r["model_calls"] for r in rs if r["model_calls"] is not None]
        lines.append(f"| {name} | {half} | {mode} | {n} | {pct('cites_gold')} | {pct('cites_gold_file')} | {pct('fact')} | "
                     f"{pct('fallback')} | {statistics.median(walls):.1f} | {walls[int(0.9 * (n - 1))]:.1f} | "
                     f"{statistics.median(prompts) if prompts else '-'} | {sum(calls) / len(calls) if calls else '-':.2f} |")
    return "\n".join(lines)


def evals(base_url):
    out = {}
    for label, extra in [("retrieval on", ["--retrieval"]), ("retrieval off", [])]:
        log(f"eval pack against the real model, {label} ...")
        p = subprocess.run([str(BINARY), "eval", "--cases", "evals", "--model", base_url, "--jobs", "1", *extra],
                           cwd=ROOT, capture_output=True, text=True, timeout=7200)
        rows = [l for l in p.stdout.splitlines() if l.startswith("|")]
        out[label] = {"exit": p.returncode, "table": "\n".join(rows)}
        print(f"\n### eval pack, {label} (exit {p.returncode}: 0 means no breach)\n" + "\n".join(rows))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="workspace,polar-docs,business-central-docs")
    ap.add_argument("--modes", default="first,baseline")
    ap.add_argument("--split", default="all", choices=["all", "dev", "held-out"])
    ap.add_argument("--limit", type=int, default=0, help="questions per set (0: all)")
    ap.add_argument("--eval", action="store_true", help="also run the eval pack against the model")
    ap.add_argument("--no-answers", action="store_true", help="skip the answer benchmark")
    ap.add_argument("--model", default="1.5b", choices=["1.5b", "0.5b"])
    ap.add_argument("--threads", default="2")
    ap.add_argument("--port", default="18090")
    ap.add_argument("--base-url", help="use this OpenAI-compatible server instead of starting one")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()

    WORK.mkdir(parents=True, exist_ok=True)
    if not BINARY.exists():
        log("building the release binary ...")
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    server = None
    base_url = args.base_url
    if not base_url:
        model = subprocess.run([str(KIT), "fetch", args.model], check=True, capture_output=True, text=True).stdout.strip()
        pid = subprocess.run([str(KIT), "serve", model, args.port, args.threads], check=True, capture_output=True,
                             text=True).stdout.strip()
        server = int(pid)
        base_url = f"http://127.0.0.1:{args.port}/v1"
        log(f"llama-server {pid} serves {model} at {base_url}")
    try:
        report = {"base_url": base_url}
        if not args.no_answers:
            results = answers(base_url, args.sets.split(","), args.modes.split(","), args.split, args.limit)
            report["answers"] = results
            print("\n### answers\n" + table(results))
        if args.eval:
            report["eval"] = evals(base_url)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
    finally:
        if server:
            os.kill(server, 15)


if __name__ == "__main__":
    main()
