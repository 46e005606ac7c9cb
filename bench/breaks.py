#!/usr/bin/env python3
"""Deliberate breaks: does the suite still catch each guarantee when it is broken on purpose?

Each `bench/breaks/NN-name.patch` breaks one guarantee (its first line says which). This script
copies the checkout as it is (committed or not) to `target/breaks/tree`, checks that the suite
passes there unbroken, then for each patch: applies it, runs the README's test command
(`cargo test --locked`, every test, no stopping at the first failure) and the eval pack
(`docs-agent eval`), records what failed, and undoes the patch.

A break that no test and no eval case catches is a survivor; one caught by a single test is
thin. The report (a Markdown table, also written to `target/breaks/report.md`) lists, for each
break, the tests that failed (`lib:` marks unit tests beside the code) and the eval cases.
The exit code is 0 only when every break fails at least two tests, and no patch is stale.

    bench/breaks.py                 # every break (about 3 minutes each on 2 cores)
    bench/breaks.py 04 07           # only the breaks whose names start with 04 or 07
    bench/breaks.py --no-eval       # tests only
    bench/breaks.py --no-baseline   # skip the unbroken run (when you just ran it)

A patch that no longer applies or no longer compiles is reported as stale: the code it broke
has moved, so rewrite the patch against the new code (`git diff > bench/breaks/NN-name.patch`
after breaking the same guarantee by hand, with the one-line description on top).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATCHES = ROOT / "bench" / "breaks"
WORK = ROOT / "target" / "breaks"
TREE = WORK / "tree"
#: A suite that hangs (a break can make a stream never end) is stopped after this long.
SUITE_TIMEOUT_SECS = 40 * 60

RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)")
FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")
RESULT = re.compile(r"^test result: ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("only", nargs="*", help="run only the breaks whose names start with these")
    parser.add_argument("--no-eval", action="store_true", help="do not run the eval pack")
    parser.add_argument("--no-baseline", action="store_true", help="do not run the unbroken suite first")
    args = parser.parse_args()

    patches = sorted(PATCHES.glob("*.patch"))
    if args.only:
        patches = [p for p in patches if any(p.name.startswith(o) for o in args.only)]
    if not patches:
        print(f"no patches in {PATCHES} match {args.only}", file=sys.stderr)
        return 2

    copy_checkout()
    env = dict(os.environ, CARGO_TARGET_DIR=str(WORK / "target"), CARGO_TERM_COLOR="never")

    if not args.no_baseline:
        say("unbroken: building and running the suite (a first run builds every crate: several minutes)")
        outcome = run_suite(env, not args.no_eval)
        if outcome["error"] or outcome["tests"] or outcome["evals"]:
            print(f"the suite fails with no break applied; fix that first:\n{describe(outcome)}", file=sys.stderr)
            return 1
        say(f"unbroken: passes ({outcome['secs']:.0f} s)")

    rows = []
    for i, patch in enumerate(patches, 1):
        description = patch.read_text().splitlines()[0].removeprefix("Break:").strip()
        say(f"[{i}/{len(patches)}] {patch.stem}: {description}")
        applied = git("apply", str(patch))
        if applied.returncode != 0:
            rows.append(row(patch, description, {"error": "stale: the patch no longer applies"}))
            say(f"    stale: {applied.stderr.strip()}")
            continue
        try:
            outcome = run_suite(env, not args.no_eval)
        finally:
            restore()
        rows.append(row(patch, description, outcome))
        say(f"    {rows[-1]['verdict']}: {len(outcome.get('tests', []))} tests, "
            f"{len(outcome.get('evals', []))} eval cases failed ({outcome.get('secs', 0):.0f} s)")

    report = table(rows)
    (WORK / "report.md").write_text(report)
    print(report)
    bad = [r for r in rows if r["verdict"] != "caught"]
    if bad:
        print(f"{len(bad)} of {len(rows)} breaks are not caught by two tests: "
              + ", ".join(r["name"] for r in bad), file=sys.stderr)
        return 1
    print(f"all {len(rows)} breaks caught (report in {WORK / 'report.md'})", file=sys.stderr)
    return 0


def copy_checkout() -> None:
    """The checkout's files as they are now (tracked and new, not ignored), in a fresh tree that
    is its own git repository, so every patch applies to it and is undone exactly."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    if TREE.exists():
        shutil.rmtree(TREE)
    for name in filter(None, listed):
        source = ROOT / name
        if not source.is_file() or name.startswith("bench/breaks/"):
            continue
        target = TREE / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # A plain copy, stamped now: cargo must see every file as newer than what it built
        # from a broken tree in an earlier run (copy2 would keep the old times).
        shutil.copy(source, target)
    for step in (["init", "-q"], ["add", "-A"], ["-c", "user.name=breaks", "-c", "user.email=breaks@localhost",
                                                  "commit", "-q", "-m", "unbroken"]):
        result = git(*step)
        if result.returncode != 0:
            sys.exit(f"cannot prepare {TREE}: git {' '.join(step)}: {result.stderr}")


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=TREE, capture_output=True, text=True)


def restore() -> None:
    git("checkout", "-q", "--", ".")
    git("clean", "-qfd")


def run_suite(env: dict, with_eval: bool) -> dict:
    """Runs the tests (and the eval pack): the failed tests as `binary: name`, the failed eval
    cases as `category: name`, or an error when the code does not build."""
    started = time.monotonic()
    try:
        # One pipe for both streams, so `Running X` (cargo, stderr) comes before the lines of
        # the test binary it started (stdout).
        tests = subprocess.run(
            ["cargo", "test", "--locked", "--no-fail-fast"],
            cwd=TREE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=SUITE_TIMEOUT_SECS,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"the suite did not finish in {SUITE_TIMEOUT_SECS} s", "secs": time.monotonic() - started}
    failed, binary, results = [], "?", 0
    for line in tests.stdout.splitlines():
        if m := RUNNING.match(line):
            binary = label(m.group(1))
        elif m := FAILED.match(line.strip()):
            failed.append(f"{binary}: {m.group(1)}")
        elif RESULT.match(line):
            results += 1
    if results == 0:
        tail = "\n".join(tests.stdout.strip().splitlines()[-15:])
        return {"error": f"does not build (stale: rewrite the patch):\n{tail}", "secs": time.monotonic() - started}
    evals = []
    if with_eval:
        report = WORK / "eval.json"
        report.unlink(missing_ok=True)
        try:
            subprocess.run(
                ["cargo", "run", "--locked", "-q", "--", "eval", "--json", str(report)],
                cwd=TREE, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_SECS,
            )
            cases = json.loads(report.read_text())["cases"]
            evals = [f"{c['category']}: {c['name']}" for c in cases if not c["passed"]]
        except subprocess.TimeoutExpired:
            evals = [f"the eval pack did not finish in {SUITE_TIMEOUT_SECS} s"]
        except (OSError, ValueError, KeyError) as e:
            evals = [f"the eval pack did not report ({e})"]
    return {"error": None, "tests": failed, "evals": evals, "secs": time.monotonic() - started}


def label(path: str) -> str:
    """`lib` for unit tests beside the code, `main` for the binary's, else the test file's stem."""
    if path.startswith("src/lib.rs"):
        return "lib"
    if path.startswith("src/main.rs"):
        return "main"
    return Path(path).stem


def row(patch: Path, description: str, outcome: dict) -> dict:
    tests, evals = outcome.get("tests", []), outcome.get("evals", [])
    if outcome.get("error"):
        verdict = "stale"
    elif not tests and not evals:
        verdict = "SURVIVED"
    elif len(tests) < 2:
        verdict = "thin"
    else:
        verdict = "caught"
    return {"name": patch.stem, "description": description, "tests": tests, "evals": evals,
            "error": outcome.get("error"), "verdict": verdict}


def table(rows: list) -> str:
    lines = [
        "| break | what it breaks | tests that fail | of them unit (`lib`) | eval cases that fail | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        unit = sum(1 for t in r["tests"] if t.startswith(("lib:", "main:")))
        lines.append(f"| {r['name']} | {r['description']} | {len(r['tests'])} | {unit} | {len(r['evals'])} | {r['verdict']} |")
    lines.append("")
    for r in rows:
        lines.append(f"- **{r['name']}** ({r['verdict']})")
        if r["error"]:
            lines.append(f"  - {r['error'].splitlines()[0]}")
        lines.extend(f"  - test {t}" for t in r["tests"])
        lines.extend(f"  - eval {e}" for e in r["evals"])
    return "\n".join(lines) + "\n"


def describe(outcome: dict) -> str:
    parts = [outcome["error"]] if outcome.get("error") else []
    parts += [f"test {t}" for t in outcome.get("tests", [])] + [f"eval {e}" for e in outcome.get("evals", [])]
    return "\n".join(parts)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
