#!/usr/bin/env python3
"""Usage: bench/ask_load.py URL [URL...] [--token-file F | DOCS_AGENT_TOKEN=T] [--mode ask|session] [--concurrency 16] [--warmup 3] [--duration 20] [--json]

A load generator for running `docs-agent serve` replicas: CONCURRENCY keep-alive connections,
spread over the URLs in turn (as a load balancer would), each sending requests with the bearer
token back to back:
  --mode ask      `POST /v1/ask {"question": "how long is the refund window"}`: one one-shot
                  question per request (the default);
  --mode session  `POST /v1/sessions`, then `POST /v1/sessions/{id}/messages` with that
                  question: a durable session and its first turn, counted when both succeed.
                  With several URLs, the message goes to the next URL from the one that made the
                  session, so every session moves between replicas.
Requests finished in the WARMUP seconds are not counted; then it counts for DURATION seconds
and prints asks/s (or sessions/s), p50 and p99 latency (ms), errors and the total number of
requests sent (warm-up included, to divide a log's size by). Standard library only (asyncio,
one thread, HTTP/1.1 written by hand), so it needs nothing installed; the client takes about
one core, as `cargo bench --bench load`'s does.
"""

import argparse
import asyncio
import json
import os
import sys
import time
from urllib.parse import urlsplit

BODY = json.dumps({"question": "how long is the refund window"}).encode()


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[round((len(sorted_values) - 1) * p)]


async def read_response(reader):
    """Reads one response; returns its status code and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            body += (await reader.readexactly(size + 2))[:size]
            if size == 0:
                break
    if headers.get("connection", "").lower() == "close":
        raise ConnectionResetError("server closed the connection")
    return status, body


def post(host, port, path, token, body):
    """One POST request's bytes."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


class Connection:
    """A keep-alive connection to one replica, opened again after an error."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def send(self, request):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(request)
        return await read_response(self.reader)

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def one_ask(first, _second, token):
    status, _ = await first.send(post(first.host, first.port, "/v1/ask", token, BODY))
    return 200 <= status < 300


async def one_session(first, second, token):
    status, body = await first.send(post(first.host, first.port, "/v1/sessions", token, b"{}"))
    if status != 201 and status != 200:
        return False
    session = json.loads(body)["id"]
    message = json.dumps({"text": "how long is the refund window"}).encode()
    status, _ = await second.send(post(second.host, second.port, f"/v1/sessions/{session}/messages", token, message))
    return 200 <= status < 300


async def worker(first, second, one, token, start, stop, out):
    while True:
        now = time.perf_counter()
        if now >= stop:
            break
        t = time.perf_counter()
        try:
            ok = await one(first, second, token)
            done = time.perf_counter()
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError, KeyError):
            done, ok = time.perf_counter(), False
            first.close()
            second.close()
        out["sent"] += 1
        if start <= done < stop:
            if ok:
                out["latencies"].append((done - t) * 1e3)
            else:
                out["errors"] += 1
    first.close()
    second.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="+", help="the servers (replicas), e.g. http://127.0.0.1:8080")
    parser.add_argument("--mode", choices=["ask", "session"], default="ask")
    parser.add_argument("--token-file", help="a file holding the bearer token (else $DOCS_AGENT_TOKEN)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    token = open(args.token_file).read().strip() if args.token_file else os.environ.get("DOCS_AGENT_TOKEN", "")
    if not token:
        sys.exit("no token: --token-file or DOCS_AGENT_TOKEN")
    targets = [(u.hostname, u.port or 80) for u in map(urlsplit, args.url)]
    one = one_ask if args.mode == "ask" else one_session
    unit = "asks" if args.mode == "ask" else "sessions"
    out = {"latencies": [], "errors": 0, "sent": 0}
    began = time.perf_counter()
    start, stop = began + args.warmup, began + args.warmup + args.duration
    workers = []
    for i in range(args.concurrency):
        first = Connection(*targets[i % len(targets)])
        second = Connection(*targets[(i + 1) % len(targets)]) if len(targets) > 1 else first
        workers.append(worker(first, second, one, token, start, stop, out))
    await asyncio.gather(*workers)
    lat = sorted(out["latencies"])
    result = {
        f"{unit}_per_s": round(len(lat) / args.duration, 1),
        "p50_ms": round(percentile(lat, 0.50), 2),
        "p99_ms": round(percentile(lat, 0.99), 2),
        "ok": len(lat),
        "errors": out["errors"],
        "sent": out["sent"],
        "concurrency": args.concurrency,
        "replicas": len(targets),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result[f'{unit}_per_s']:.0f} {unit}/s, p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
            f"{result['errors']} errors ({result['sent']} sent, {args.concurrency} connections)"
        )


if __name__ == "__main__":
    asyncio.run(main())
