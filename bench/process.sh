#!/usr/bin/env bash
# One scripted question through the whole docs-agent process, as a user runs it: wall time
# (spawn to exit) and peak RSS, against `/bin/true` and `python3 -c pass` spawned in the same
# run, interleaved so drift hits all three alike. Prints a Markdown table; asserts nothing.
#
# Usage: bench/process.sh [RUNS]   (default 30; builds target/release/docs-agent if needed)
# Aims (from the issue): median wall < 15 ms, peak RSS < 10 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"

cargo build --release --quiet --bin docs-agent
bin="$PWD/target/release/docs-agent"
workspace="$PWD/workspace"
question="how long is the refund window"

# The question must really be answered, or the timing means nothing.
if ! answer=$(LLM_MODEL=scripted WORKSPACE="$workspace" "$bin" "$question" 2>/dev/null); then
  echo "process.sh: docs-agent failed on the scripted question; run it by hand to see why" >&2
  exit 1
fi
case "$answer" in
  *"14 days"*) ;;
  *) echo "process.sh: unexpected answer (no '14 days'):" >&2; echo "$answer" >&2; exit 1 ;;
esac

# Wall time: each command spawned directly (posix_spawn + wait4). Peak RSS: a second, separate
# run under GNU time, because a child's max RSS also counts the memory image it had before
# exec, so measuring it from Python would report Python's own ~14 MiB for every command.
if [ ! -x /usr/bin/time ]; then
  echo "process.sh: needs GNU time for peak RSS: apt-get install -y time" >&2
  exit 1
fi
python3 - "$runs" "$bin" "$workspace" "$question" <<'PY'
import os, shutil, statistics, sys, tempfile, time

runs, binary, workspace, question = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
path = os.environ.get("PATH", "/usr/bin:/bin")
cwd = tempfile.mkdtemp(prefix="docs-agent-bench-")  # no docs-agent.toml can be picked up
os.chdir(cwd)
rss_file = os.path.join(cwd, "rss")
cases = [
    ("/bin/true", ["/bin/true"], {"PATH": path}),
    ("python3 -c pass", ["python3", "-c", "pass"], {"PATH": path}),
    ("docs-agent (scripted question)", [binary, question],
     {"PATH": path, "LLM_MODEL": "scripted", "WORKSPACE": workspace}),
]
quiet = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
         (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]

def spawn(argv, env):
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=quiet)
    _, status, _ = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"process.sh: {' '.join(argv)} exited with {code}")

def once(argv, env):
    """Wall ms of a direct run, then peak RSS MiB of a run under GNU time."""
    start = time.perf_counter()
    spawn(argv, env)
    wall = (time.perf_counter() - start) * 1e3
    spawn(["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv, env)
    with open(rss_file) as f:
        return wall, int(f.read().split()[-1]) / 1024

for _ in range(3):  # warm-up: page cache, dynamic loader
    for _, argv, env in cases:
        once(argv, env)
samples = {name: [] for name, _, _ in cases}
for _ in range(runs):
    for name, argv, env in cases:
        samples[name].append(once(argv, env))
# docs-agent keeps its index and sessions in .docs-agent/ under the folder it runs in.
shutil.rmtree(cwd)

def pct(v, p):
    s = sorted(v)
    return s[max(1, -(-len(s) * p // 100)) - 1]

true_ms = statistics.median(w for w, _ in samples["/bin/true"])
print(f"\n## Whole process, {runs} runs each, interleaved ({os.cpu_count()} cores)\n")
print("| command | wall median ms | p90 ms | min ms | x /bin/true | peak RSS median MiB | max MiB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, _, _ in cases:
    wall = [w for w, _ in samples[name]]
    rss = [r for _, r in samples[name]]
    print(f"| {name} | {statistics.median(wall):.2f} | {pct(wall, 90):.2f} | {min(wall):.2f} "
          f"| {statistics.median(wall) / true_ms:.1f} | {statistics.median(rss):.1f} | {max(rss):.1f} |")
agent = samples["docs-agent (scripted question)"]
wall, rss = statistics.median(w for w, _ in agent), max(r for _, r in agent)
print(f"\nAims: wall < 15 ms: {'met' if wall < 15 else 'MISSED'} ({wall:.2f} ms median); "
      f"peak RSS < 10 MiB: {'met' if rss < 10 else 'MISSED'} ({rss:.1f} MiB max)")
print("Peak RSS is GNU time's %M (max resident set, KiB) of a separate run; "
      "/bin/true's row is the floor that measurement has.")
PY
