#!/usr/bin/env python3
"""Usage: bench/ask_load.py URL [--token-file F | DOCS_AGENT_TOKEN=T] [--concurrency 16] [--warmup 3] [--duration 20] [--json]

A load generator for a running `docs-agent serve`: CONCURRENCY keep-alive connections, each
sending `POST /v1/ask {"question": "how long is the refund window"}` with the bearer token
back to back. Requests finished in the WARMUP seconds are not counted; then it counts for
DURATION seconds and prints asks/s, p50 and p99 latency (ms), errors and the total number of
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
    """Reads one response; returns its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    if headers.get("connection", "").lower() == "close":
        raise ConnectionResetError("server closed the connection")
    return status


async def worker(host, port, request, start, stop, out):
    reader = writer = None
    while True:
        now = time.perf_counter()
        if now >= stop:
            break
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            t = time.perf_counter()
            writer.write(request)
            status = await read_response(reader)
            done = time.perf_counter()
            ok = 200 <= status < 300
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            done, ok = time.perf_counter(), False
            if writer is not None:
                writer.close()
            reader = writer = None
        out["sent"] += 1
        if start <= done < stop:
            if ok:
                out["latencies"].append((done - t) * 1e3)
            else:
                out["errors"] += 1
    if writer is not None:
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--token-file", help="a file holding the bearer token (else $DOCS_AGENT_TOKEN)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    token = open(args.token_file).read().strip() if args.token_file else os.environ.get("DOCS_AGENT_TOKEN", "")
    if not token:
        sys.exit("no token: --token-file or DOCS_AGENT_TOKEN")
    url = urlsplit(args.url)
    host, port = url.hostname, url.port or 80
    request = (
        f"POST /v1/ask HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY
    out = {"latencies": [], "errors": 0, "sent": 0}
    began = time.perf_counter()
    start, stop = began + args.warmup, began + args.warmup + args.duration
    await asyncio.gather(*(worker(host, port, request, start, stop, out) for _ in range(args.concurrency)))
    lat = sorted(out["latencies"])
    result = {
        "asks_per_s": round(len(lat) / args.duration, 1),
        "p50_ms": round(percentile(lat, 0.50), 2),
        "p99_ms": round(percentile(lat, 0.99), 2),
        "ok": len(lat),
        "errors": out["errors"],
        "sent": out["sent"],
        "concurrency": args.concurrency,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['asks_per_s']:.0f} asks/s, p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
            f"{result['errors']} errors ({result['sent']} sent, {args.concurrency} connections)"
        )


if __name__ == "__main__":
    asyncio.run(main())
