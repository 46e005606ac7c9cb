#!/usr/bin/env python3
"""What the MCP server costs against the REST API it sits beside (issue 15, part 5).

    python3 bench/mcp_load.py [BINARY] [CALLS]

Starts `BINARY serve` (default target/release/docs-agent, else target/debug/docs-agent) on the
sample workspace with the scripted model, and `BINARY mcp` on the same workspace, then times
CALLS (default 500) sequential searches each way, one keep-alive connection each, in three
interleaved rounds:

- baseline: `GET /v1/search?q=...` (the REST search);
- `POST /mcp` `tools/call search_docs` (stateless MCP over HTTP: a server made per request);
- `docs-agent mcp` over stdio, `tools/call search_docs` (one process, one session).

Prints calls/s and the median latency for each, and the MCP ways as ratios of the baseline.
Standard library only; nothing is asserted.
"""

import hashlib
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-mcp-token-0123456789abcdef"
QUERIES = ["refund window", "failed payment retries", "rotate an API key", "credit note", "tax exempt customer"]


def binary():
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    release = ROOT / "target/release/docs-agent"
    return release if release.exists() else ROOT / "target/debug/docs-agent"


def timed(n, call):
    latencies = []
    started = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        call(QUERIES[i % len(QUERIES)])
        latencies.append(time.perf_counter() - t)
    return n / (time.perf_counter() - started), statistics.median(latencies) * 1000


def main():
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    exe = binary()
    folder = Path(tempfile.mkdtemp(prefix="docs-agent-mcp-bench-"))
    shutil.copytree(ROOT / "workspace", folder / "ws")
    sha = hashlib.sha256(TOKEN.encode()).hexdigest()
    # A free port chosen here: with DOCS_AGENT_LOG=warn, serve does not log its address.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (folder / "docs-agent.toml").write_text(
        f'[serve]\nlisten = "127.0.0.1:{port}"\nrate_per_minute = 1000000\nmax_sessions_per_principal = 100000000\nsessions_per_minute = 100000000\nmax_turns_per_principal = 100000\nmax_followers_per_principal = 100000\n'
        f'[[serve.tokens]]\nprincipal = "bench"\nsha256 = "{sha}"\nroles = ["ask"]\n'
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WORKSPACE": str(folder / "ws"),
        "LLM_MODEL": "scripted",
        "DOCS_AGENT_SESSION_LOG": str(folder / "data/sessions.db"),
        "DOCS_AGENT_CONFIG": str(folder / "docs-agent.toml"),
        "DOCS_AGENT_LOG": "warn",
    }
    server = subprocess.Popen([str(exe), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    host = "127.0.0.1"
    for _ in range(200):
        try:
            socket.create_connection((host, port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise SystemExit("serve did not start")
    rest = http.client.HTTPConnection(host, int(port))
    mcp_http = http.client.HTTPConnection(host, int(port))
    auth = {"Authorization": f"Bearer {TOKEN}"}

    def rest_search(query):
        rest.request("GET", "/v1/search?q=" + query.replace(" ", "+") + "&k=5", headers=auth)
        body = rest.getresponse().read()
        assert b"hits" in body, body[:200]

    ids = iter(range(1, 10**9))

    def http_search(query):
        message = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                   "params": {"name": "search_docs", "arguments": {"query": query, "limit": 5}}}
        headers = dict(auth, **{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                "MCP-Protocol-Version": "2025-11-25"})
        mcp_http.request("POST", "/mcp", body=json.dumps(message), headers=headers)
        body = mcp_http.getresponse().read()
        assert b"untrusted" in body, body[:200]

    stdio = subprocess.Popen([str(exe), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def rpc(message):
        stdio.stdin.write(json.dumps(message) + "\n")
        stdio.stdin.flush()
        if "id" not in message:
            return None
        while True:
            reply = json.loads(stdio.stdout.readline())
            if reply.get("id") == message["id"]:
                return reply

    rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stdio_search(query):
        reply = rpc({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                     "params": {"name": "search_docs", "arguments": {"query": query, "limit": 5}}})
        assert "untrusted" in json.dumps(reply), reply

    ways = [("GET /v1/search (baseline)", rest_search), ("POST /mcp search_docs", http_search),
            ("mcp over stdio search_docs", stdio_search)]
    for _, call in ways:  # warm-up
        timed(20, call)
    results = {name: [] for name, _ in ways}
    for _ in range(3):
        for name, call in ways:
            results[name].append(timed(calls, call))
    server.terminate()
    stdio.stdin.close()
    stdio.wait(timeout=10)
    server.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)

    print(f"{exe} ({calls} sequential calls x 3 rounds, median of the rounds)")
    base = statistics.median(r[0] for r in results[ways[0][0]])
    for name, _ in ways:
        rate = statistics.median(r[0] for r in results[name])
        latency = statistics.median(r[1] for r in results[name])
        print(f"  {name:28} {rate:8.0f} calls/s  median {latency:6.2f} ms  {rate / base:5.2f}x")


if __name__ == "__main__":
    main()
