#!/usr/bin/env python3
"""Answers measured with a real small model (issues 10 and 32).

Starts llama-server with the kit's model on 127.0.0.1 (or uses --base-url), then:
  answers  each question of the chosen sets, the answerable ones and the off-topic ones (questions
           the docs do not answer, checked by hand: `bench/questions/*.off-topic.jsonl`), once per
           mode, a mode at a time over a set (so each keeps the server's prompt cache as it would
           alone):
             first    docs-agent as configured by default (the release binary, or --binary)
             stuffed  the baseline users would otherwise run: the top 4 chunks of ~1,000
                      characters stuffed into one prompt, cite [id], no checks (stuffed.py)
             before   another docs-agent binary (--before PATH), e.g. one built before a change
             plain    docs-agent with retrieve-first and verification off (before issue 10)
             rerank   docs-agent with the reranker at --reranker URL (`[retrieval.reranker]`)
           and, with --paraphrases, each set's questions asked in words the docs do not use
           (`bench/questions/*.paraphrase.jsonl`), reported as the set "NAME paraphrase"
  eval     `docs-agent eval --model URL --retrieval` (and without --retrieval): breaches must be 0;
           pass rates per category are reported.

Measured per question, reported per set, half (dev / held-out) and mode:
  gold cited      the answer cites a gold section as a verified source (a gold path without an
                  anchor: any section of it); the stuffed baseline's [id] taken at its word
  fact right      one of the question's key phrases is in the answer
  gold in context a gold section is among what the model was given (the harness's evidence,
                  read from the trace; the baseline's chunks)
  not covered     the answer says the docs do not cover it: on answerable questions an error,
                  on off-topic ones the right answer
  fallback        the retrieval-only answer replaced the model's
  invented        "not covered" because the model's answer named a term no passage holds and the
                  docs never use (the trace's `replaced` event says "names ..."): answerable / off-topic
  off-topic answered  an off-topic question answered in the model's own words (shown as an answer):
                  by construction it states what the docs do not hold
  seconds         wall time per answerable question, spawn to exit (median, p90)
  rerank ms       what the reranker took per question (the trace's `search` line), median over the
                  set's questions, answerable and off-topic
  tokens          prompt tokens (and of them, those the server reused from its cache) and
                  completion tokens, summed over a question's model calls; model calls

usage: bench/real-model/bench.py [--sets workspace,polar-docs,business-central-docs]
         [--modes first,stuffed,rerank] [--reranker URL] [--paraphrases] [--before PATH]
         [--split all|dev|held-out] [--limit N]
         [--off-limit N] [--eval] [--no-answers] [--model 1.5b|0.5b] [--threads 2]
         [--base-url URL] [--binary PATH] [--json FILE]

Corpora are read from DOCS_AGENT_CORPORA (default ../shared/corpora beside the checkout) and
copied into target/real-model/ (never into the repository).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stuffed import Stuffed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "bench" / "real-model" / "kit.sh"
QUESTIONS = ROOT / "bench" / "questions"
WORK = ROOT / "target" / "real-model"
BINARY = ROOT / "target" / "release" / "docs-agent"
# The trace keeps the whole of a tool result, so what the model read can be checked.
CONFIG = "[limits]\ntrace_result_chars = 100000\n"
FENCE = re.compile(r'<untrusted source="([^"]+)">')
RERANKED = re.compile(r"reranked the best \d+ sections in (\d+) ms")


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


def load(name, split, limit, off_topic=False, paraphrase=False):
    path = QUESTIONS / (f"{name}.off-topic.jsonl" if off_topic else f"{name}.paraphrase.jsonl" if paraphrase
                        else f"{name}.jsonl")
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [dict(r, off_topic=off_topic) for r in rows if split == "all" or r["split"] == split]
    return rows[:limit] if limit else rows


def matches(source, gold):
    return any(source == g or ("#" not in g and source.split("#")[0] == g) for g in gold)


def parse_cli(stdout):
    """(verified sources, answer text) from the CLI's output."""
    answer, _, listed = stdout.partition("\n\nSources:\n")
    verified = []
    for line in listed.splitlines():
        if line.startswith("- ") and "(not verified" not in line:
            verified.append(line[2:].split(" (")[0].strip())
    return verified, answer


def ask_cli(binary, base_url, ws, question, extra_env):
    env = dict(os.environ, LLM_BASE_URL=base_url, LLM_MODEL="local", WORKSPACE=str(ws),
               DOCS_AGENT_CONFIG=str(WORK / "bench.toml"), **extra_env)
    started = time.monotonic()
    p = subprocess.run([str(binary), question], env=env, capture_output=True, text=True, timeout=900, cwd=WORK)
    wall = time.monotonic() - started
    usage, shown, why, rerank_ms = {}, None, None, None
    for line in p.stderr.splitlines():
        at = line.find("{")
        if at < 0:
            continue
        try:
            v = json.loads(line[at:])
        except ValueError:
            continue
        if v.get("event") == "usage":
            usage = v
        if v.get("event") == "replaced":
            why = v.get("why")
        if v.get("event") == "search":
            took = RERANKED.search(str(v.get("message", "")))
            if took and rerank_ms is None:
                rerank_ms = int(took.group(1))
        # The harness's own search: the first search_docs of the turn, step 0.
        if shown is None and v.get("tool") == "search_docs" and str(v.get("step")) == "0":
            shown = FENCE.findall(str(v.get("result", "")))
    verified, answer = parse_cli(p.stdout)
    kind = "fallback" if answer.startswith("Retrieval-only answer") else \
        "not_covered" if answer.startswith("The docs do not cover this") else "model"
    if kind == "not_covered":
        verified = []  # the sections it lists might help; they are not an answer
    return {
        "exit": p.returncode, "answer": answer, "wall": wall, "cited": verified, "shown": shown or [],
        "kind": kind, "why": why, "rerank_ms": rerank_ms, "model_calls": usage.get("model_calls"), "prompt_tokens": usage.get("prompt_tokens"),
        "cached_tokens": usage.get("cached_tokens"), "completion_tokens": usage.get("completion_tokens"),
    }


def measure(mode, args, base_url, ws, stuffed, row):
    if mode == "stuffed":
        r = stuffed.ask(base_url, row["question"])
        r["kind"] = "not_covered" if r["not_covered"] else "model"
        r["model_calls"] = 1
    elif mode == "plain":
        r = ask_cli(args.binary, base_url, ws, row["question"],
                    {"DOCS_AGENT_RETRIEVE_FIRST": "false", "DOCS_AGENT_VERIFY": "false"})
    elif mode == "rerank":
        r = ask_cli(args.binary, base_url, ws, row["question"], {"DOCS_AGENT_RERANKER_URL": args.reranker})
    else:
        r = ask_cli(args.before if mode == "before" else args.binary, base_url, ws, row["question"], {})
    gold, key = row.get("gold", []), row.get("key", [])
    answer = r["answer"]
    return {
        "set": row["set"], "id": row["id"], "split": row["split"], "mode": mode, "off_topic": row["off_topic"],
        "cites_gold": any(matches(s, gold) for s in r["cited"]),
        "cites_gold_file": any(s.split("#")[0] == g.split("#")[0] for s in r["cited"] for g in gold),
        "fact": any(k.lower() in answer.lower() for k in key),
        "gold_in_context": any(matches(s, gold) for s in r["shown"]),
        "not_covered": r["kind"] == "not_covered", "fallback": r["kind"] == "fallback",
        "answered": r["kind"] == "model",
        "wall_s": round(r["wall"], 2), "model_calls": r.get("model_calls"),
        "prompt_tokens": r.get("prompt_tokens"), "cached_tokens": r.get("cached_tokens"),
        "completion_tokens": r.get("completion_tokens"), "exit": r.get("exit", 0), "answer": answer[:600],
        "why": r.get("why"), "invented": "names " in (r.get("why") or ""), "rerank_ms": r.get("rerank_ms"),
    }


def answers(base_url, args):
    results = []
    modes = args.modes.split(",")
    for name in args.sets.split(","):
        ws = workspace_for(name)
        rows = [dict(r, set=name) for r in load(name, args.split, args.limit)]
        rows += [dict(r, set=name) for r in load(name, args.split, args.off_limit, off_topic=True)]
        if args.paraphrases:
            rows += [dict(r, set=f"{name} paraphrase") for r in load(name, args.split, args.limit, paraphrase=True)]
        stuffed = Stuffed(ws) if "stuffed" in modes else None
        for mode in modes:
            for i, row in enumerate(rows, 1):
                r = measure(mode, args, base_url, ws, stuffed, row)
                results.append(r)
                log(f"[{name} {mode} {i}/{len(rows)}{' off-topic' if r['off_topic'] else ''}] gold={r['cites_gold']} "
                    f"fact={r['fact']} in-context={r['gold_in_context']} not-covered={r['not_covered']} "
                    f"fallback={r['fallback']} {r['wall_s']} s, {r['prompt_tokens']} prompt tokens")
    return results


def pct(rows, key):
    return f"{100 * sum(r[key] for r in rows) / len(rows):.0f}%" if rows else "-"


def median(values):
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.0f}" if values else "-"


def table(results):
    groups = {}
    for r in results:
        groups.setdefault((r["set"], r["split"], r["mode"]), []).append(r)
    lines = ["| set | half | mode | n (answerable / off-topic) | gold cited | fact right | gold in context | "
             "not covered: answerable | not covered: off-topic | fallback | invented (answerable / off-topic) | "
             "off-topic answered | median s | p90 s | rerank ms (median) | prompt tokens (reused) | completion tokens | model calls |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, half, mode), rs in sorted(groups.items()):
        on = [r for r in rs if not r["off_topic"]]
        off = [r for r in rs if r["off_topic"]]
        walls = sorted(r["wall_s"] for r in on) or [0.0]
        calls = [r["model_calls"] for r in on if r["model_calls"] is not None]
        p90 = walls[min(len(walls) - 1, int(round(0.9 * (len(walls) - 1))))]
        lines.append(
            f"| {name} | {half} | {mode} | {len(on)} / {len(off)} | {pct(on, 'cites_gold')} | {pct(on, 'fact')} | "
            f"{pct(on, 'gold_in_context')} | {pct(on, 'not_covered')} | {pct(off, 'not_covered')} | "
            f"{pct(on, 'fallback')} | {sum(r['invented'] for r in on)} / {sum(r['invented'] for r in off)} | "
            f"{pct(off, 'answered')} | {statistics.median(walls):.1f} | {p90:.1f} | "
            f"{median(r.get('rerank_ms') for r in rs)} | "
            f"{median(r['prompt_tokens'] for r in on)} ({median(r['cached_tokens'] for r in on)}) | "
            f"{median(r['completion_tokens'] for r in on)} | {sum(calls) / len(calls) if calls else 0:.2f} |")
    lines += ["", "Why the model's answer was replaced by the evidence (answerable questions, each fault the "
              "trace's `replaced` event names; one answer can have several):", ""]
    faults = {}
    for r in results:
        if r["off_topic"] or not r.get("why"):
            continue
        for fault in r["why"].split(": the model's answer ", 1)[-1].split("; "):
            fault = re.sub(r"^(states|quotes) .*?, which", r"\1 ..., which", fault)
            faults.setdefault((r["set"], r["mode"]), {}).setdefault(fault, 0)
            faults[(r["set"], r["mode"])][fault] += 1
    for (name, mode), counts in sorted(faults.items()):
        listed = ", ".join(f"{fault}: {n}" for fault, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        lines.append(f"- {name}, {mode}: {listed}")
    return "\n".join(lines)


def evals(binary, base_url):
    out = {}
    for label, extra in [("retrieval on", ["--retrieval"]), ("retrieval off", [])]:
        log(f"eval pack against the real model, {label} ...")
        p = subprocess.run([str(binary), "eval", "--cases", "evals", "--model", base_url, "--jobs", "1", *extra],
                           cwd=ROOT, capture_output=True, text=True, timeout=7200)
        rows = [line for line in p.stdout.splitlines() if line.startswith("|")]
        out[label] = {"exit": p.returncode, "table": "\n".join(rows)}
        print(f"\n### eval pack, {label} (exit {p.returncode}: 0 means no breach)\n" + "\n".join(rows))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="workspace,polar-docs,business-central-docs")
    ap.add_argument("--modes", default="first,stuffed")
    ap.add_argument("--split", default="all", choices=["all", "dev", "held-out"])
    ap.add_argument("--limit", type=int, default=0, help="answerable questions per set (0: all)")
    ap.add_argument("--off-limit", type=int, default=0, help="off-topic questions per set (0: all)")
    ap.add_argument("--eval", action="store_true", help="also run the eval pack against the model")
    ap.add_argument("--no-answers", action="store_true", help="skip the answer benchmark")
    ap.add_argument("--model", default="1.5b", choices=["1.5b", "0.5b"])
    ap.add_argument("--threads", default="2")
    ap.add_argument("--port", default="18090")
    ap.add_argument("--base-url", help="use this OpenAI-compatible server instead of starting one")
    ap.add_argument("--binary", default=str(BINARY), help="the docs-agent binary to measure")
    ap.add_argument("--before", help="another docs-agent binary, measured as mode `before`")
    ap.add_argument("--reranker", help="a /v1/rerank server's base URL, measured as mode `rerank`")
    ap.add_argument("--paraphrases", action="store_true", help="also ask each set's paraphrase questions")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    if args.before and "before" not in args.modes.split(","):
        args.modes += ",before"
    if args.reranker and "rerank" not in args.modes.split(","):
        args.modes += ",rerank"
    if "rerank" in args.modes.split(",") and not args.reranker:
        sys.exit("bench: mode rerank needs --reranker URL (../shared/reranker/serve-reranker.sh starts one)")

    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "bench.toml").write_text(CONFIG)
    args.binary = Path(args.binary).resolve()
    if not args.binary.exists():
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
            results = answers(base_url, args)
            report["answers"] = results
            print("\n### answers\n" + table(results))
        if args.eval:
            report["eval"] = evals(args.binary, base_url)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
    finally:
        if server:
            os.kill(server, 15)


if __name__ == "__main__":
    main()
