#!/usr/bin/env python3
"""docs-agent's MCP server, driven by a real MCP client: the official Python SDK (`mcp` on PyPI).

Run by `.ci/run` after `cargo test` (which builds target/debug/docs-agent):

    python3 -m pip install 'mcp==2.3.0' && python3 tests/mcp/client.py

Against both transports, with the scripted model:
- stdio: `docs-agent mcp`, started by the client as Claude Code or codex would;
- streamable HTTP: `/mcp` under `docs-agent serve`, with a bearer token (and refused without
  one, or with a token that lacks the `ask` role).

Each transport: initialize, list the tools, call each one, list and read resources, and bad
arguments (a missing field, a wrong type, a path outside docs/, an unknown tool) come back as
clean errors; then a client of the newest revision (2026-07-28: `server/discover`, no
handshake) lists and calls too. A secret planted in the docs never shows in anything the client receives.

The transcripts are written to target/mcp/transcript-{stdio,http}.txt. Exit 0 when every
check passed; 1 with the failures listed otherwise.
"""

import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("DOCS_AGENT_BIN", ROOT / "target/debug/docs-agent"))
OUT = ROOT / "target/mcp"
ASKER = "mcp-asker-token-0123456789abcdef"
APPROVER_ONLY = "mcp-approver-token-0123456789abcdef"
# A live-looking Stripe key, planted in one doc: the redactor must catch it on every way out.
SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"

failures = []


class Transcript:
    """What the client sent and what it received, one exchange after another."""

    def __init__(self, name):
        self.name = name
        self.lines = []

    def exchange(self, request, response):
        self.lines.append(f"> {request}")
        for line in response.splitlines() or [""]:
            self.lines.append(f"< {line}")
        self.lines.append("")

    def save(self):
        OUT.mkdir(parents=True, exist_ok=True)
        text = "\n".join(self.lines) + "\n"
        (OUT / f"transcript-{self.name}.txt").write_text(text)
        return text


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"\n     {detail}"))
    if not condition:
        failures.append(name)


def text_of(result):
    return "\n".join(getattr(block, "text", "") for block in result.content)


def clip(text, lines=12):
    kept = text.splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + [f"… ({len(text.splitlines()) - lines} more lines)"]
    return "\n".join(kept)


async def exercise(session, transcript, label):
    """The same checks over either transport."""
    seen = []  # everything the client received, for the secret check

    init = await session.initialize()
    transcript.exchange(
        "initialize",
        json.dumps(
            {
                "protocolVersion": init.protocol_version,
                "serverInfo": {"name": init.server_info.name, "version": init.server_info.version},
                "capabilities": sorted(k for k, v in init.capabilities.model_dump().items() if v),
                "instructions": init.instructions,
            },
            indent=1,
        ),
    )
    check(f"{label}: initialize names docs-agent", init.server_info.name == "docs-agent", init.server_info)

    tools = await session.list_tools()
    names = sorted(t.name for t in tools.tools)
    transcript.exchange(
        "tools/list",
        "\n".join(f"{t.name}: {t.description.split('. ')[0]}. input {json.dumps(t.input_schema.get('required', []))}" for t in tools.tools),
    )
    check(f"{label}: tools/list has search_docs, read_section, ask", names == ["ask", "read_section", "search_docs"], names)
    check(
        f"{label}: every tool is marked read-only",
        all(t.annotations and t.annotations.read_only_hint for t in tools.tools),
        [t.annotations for t in tools.tools],
    )

    found = await session.call_tool("search_docs", {"query": "refund window", "limit": 3})
    text = text_of(found)
    seen.append(text)
    transcript.exchange('tools/call search_docs {"query": "refund window", "limit": 3}', clip(text))
    sections = (found.structured_content or {}).get("sections", [])
    check(f"{label}: search_docs finds the refunds section", not found.is_error and any(s["path"] == "docs/refunds.md" for s in sections), text[:300])
    check(f"{label}: search_docs fences what it found", text.count('<untrusted source="') == len(sections) > 0, text[:300])

    first = next(s for s in sections if s["path"] == "docs/refunds.md") if sections else {"path": "docs/refunds.md", "anchor": ""}
    read = await session.call_tool("read_section", {"path": first["path"], "anchor": first["anchor"]})
    text = text_of(read)
    seen.append(text)
    transcript.exchange(f"tools/call read_section {json.dumps({'path': first['path'], 'anchor': first['anchor']})}", clip(text))
    check(f"{label}: read_section reads the section, fenced", not read.is_error and text.startswith('<untrusted source="docs/refunds.md'), text[:300])

    told = []

    async def progress(value, total, message):
        told.append(message)

    asked = await session.call_tool("ask", {"question": "How long is the refund window?"}, progress_callback=progress)
    transcript.exchange("(progress while ask runs)", "\n".join(str(m) for m in told))
    if label == "stdio":
        check(f"{label}: ask tells its steps as progress", any(str(m).startswith("search_docs") for m in told), told)
    else:
        # Over HTTP the reply stays one JSON answer within serve's request time limit.
        check(f"{label}: ask answers in one reply, without progress", told == [], told)
    text = text_of(asked)
    seen.append(text)
    transcript.exchange('tools/call ask {"question": "How long is the refund window?"}', clip(text, 20))
    citations = (asked.structured_content or {}).get("citations", [])
    check(f"{label}: ask answers with a verified citation", not asked.is_error and any(c["verified"] for c in citations), text[:400])
    check(f"{label}: ask lists its sources", "Sources:" in text and "docs/refunds.md" in text, text[:400])
    try:
        await session.validate_tool_result("search_docs", found)
        await session.validate_tool_result("ask", asked)
        check(f"{label}: structured results match the tools' output schemas", True)
    except Exception as error:
        check(f"{label}: structured results match the tools' output schemas", False, str(error))

    leaked = await session.call_tool("search_docs", {"query": "staging key for the sandbox"})
    text = text_of(leaked)
    seen.append(text)
    transcript.exchange('tools/call search_docs {"query": "staging key for the sandbox"}', clip(text))
    check(f"{label}: the planted doc is found, its key redacted", "docs/leaky.md" in text and "[REDACTED" in text, text[:400])

    for request, arguments, expect in [
        ("search_docs", {}, "query"),
        ("search_docs", {"query": 42}, "query"),
        ("search_docs", {"query": "refunds", "limit": 500}, "limit"),
        ("read_section", {"path": "../../etc/passwd"}, "docs"),
        ("read_section", {"path": "docs/refunds.md", "anchor": "no-such-anchor"}, "no section"),
        ("ask", {"question": "  "}, "question"),
        ("ask", {"question": "refunds?", "model": "other"}, "model"),
    ]:
        bad = await session.call_tool(request, arguments)
        text = text_of(bad)
        seen.append(text)
        transcript.exchange(f"tools/call {request} {json.dumps(arguments)}", f"isError={bad.is_error}\n{text}")
        check(f"{label}: {request} {json.dumps(arguments)} is a clean error", bad.is_error and expect in text and "panic" not in text, text)

    try:
        await session.call_tool("write_file", {"path": "notes/x.md", "content": "x"})
        check(f"{label}: an unknown tool is refused", False, "write_file was answered")
    except Exception as error:  # the SDK raises the JSON-RPC error
        transcript.exchange('tools/call write_file {"path": "notes/x.md", ...}', f"error: {error}")
        check(f"{label}: an unknown tool is refused, naming the tools", "the tools are ask, read_section, search_docs" in str(error), str(error))

    listed = await session.list_resources()
    uris = [r.uri for r in listed.resources]
    transcript.exchange(
        "resources/list",
        "\n".join(f"{r.uri}  ({r.title})" for r in listed.resources[:8]) + f"\n… {len(uris)} on this page, next cursor {listed.next_cursor!r}",
    )
    check(f"{label}: resources/list names sections by path#anchor", any(u.startswith("docs-agent://docs/refunds.md#") for u in uris), uris[:5])
    everything = list(uris)
    cursor = listed.next_cursor
    while cursor:
        page = await session.list_resources(cursor=cursor)
        everything += [r.uri for r in page.resources]
        cursor = page.next_cursor
    check(f"{label}: every page together lists each section once", len(everything) == len(set(everything)) and len(everything) > len(uris) / 2, len(everything))

    target = next(u for u in uris if u.startswith("docs-agent://docs/refunds.md#"))
    contents = await session.read_resource(target)
    text = contents.contents[0].text
    seen.append(text)
    transcript.exchange(f"resources/read {target}", clip(text))
    check(f"{label}: resources/read gives the section, fenced", text.startswith('<untrusted source="docs/refunds.md#'), text[:200])

    try:
        await session.read_resource("file:///etc/passwd")
        check(f"{label}: a URI outside the docs is refused", False, "answered")
    except Exception as error:
        transcript.exchange("resources/read file:///etc/passwd", f"error: {error}")
        check(f"{label}: a URI outside the docs is refused", "not a docs section" in str(error), str(error))

    everything_seen = "\n".join(seen) + "\n".join(transcript.lines)
    check(f"{label}: the planted secret never reaches the client", SECRET not in everything_seen, "the key was shown")


async def discover(session, transcript, label):
    """A client of the newest protocol revision (2026-07-28) asks `server/discover` instead of
    the handshake, and sends each request on its own."""
    found = await session.discover()
    transcript.exchange("server/discover", f"protocolVersion {session.protocol_version}, supported {found.supported_versions}")
    tools = await session.list_tools()
    result = await session.call_tool("search_docs", {"query": "refund window", "limit": 1})
    transcript.exchange('tools/call search_docs {"query": "refund window", "limit": 1}', clip(text_of(result), 4))
    check(
        f"{label}: a 2026-07-28 client discovers, lists and calls",
        session.protocol_version == "2026-07-28" and len(tools.tools) == 3 and not result.is_error,
        (session.protocol_version, len(tools.tools), text_of(result)[:200]),
    )


async def over_stdio(workspace, env):
    transcript = Transcript("stdio")
    params = StdioServerParameters(command=str(BINARY), args=["mcp"], env=env)
    with open(OUT / "stdio-stderr.log", "w") as errlog:
        # A session of each kind of client: the handshake's, then 2026-07-28's.
        for step in (exercise, discover):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await step(session, transcript, "stdio")
    return transcript.save()


async def over_http(base):
    transcript = Transcript("http")
    url = f"{base}/mcp"
    for token, status, name in [(None, 401, "without a token"), (APPROVER_ONLY, 403, "without the ask role")]:
        request = urllib.request.Request(url, method="POST", data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            urllib.request.urlopen(request, timeout=10)
            got = 200
        except urllib.error.HTTPError as error:
            got = error.code
        transcript.exchange(f"POST /mcp tools/list {name}", f"HTTP {got}")
        check(f"http: /mcp {name} is {status}", got == status, got)
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {ASKER}"})
    async with client:
        for step in (exercise, discover):
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await step(session, transcript, "http")
    return transcript.save()


def start_serve(directory, env):
    """`docs-agent serve` on a free loopback port; its base URL, from the line it logs."""
    server = subprocess.Popen([str(BINARY), "serve"], cwd=directory, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in server.stderr:
        seen.append(line)
        match = re.search(r"serving on (http://\S+)", line)
        if match:
            return server, match.group(1)
    raise SystemExit("serve did not start:\n" + "".join(seen))


def main():
    if not BINARY.exists():
        raise SystemExit(f"{BINARY} is missing: run `cargo build` first (or set DOCS_AGENT_BIN)")
    OUT.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="docs-agent-mcp-"))
    workspace = directory / "ws"
    shutil.copytree(ROOT / "workspace", workspace)
    (workspace / "docs/leaky.md").write_text(
        "# Sandbox\n\n## Staging key\n\nThe staging key for the sandbox is " + SECRET + ".\n"
    )
    sha = lambda token: hashlib.sha256(token.encode()).hexdigest()
    (directory / "docs-agent.toml").write_text(
        f"""
[serve]
listen = "127.0.0.1:0"
[[serve.tokens]]
principal = "ide"
sha256 = "{sha(ASKER)}"
roles = ["ask"]
[[serve.tokens]]
principal = "approver"
sha256 = "{sha(APPROVER_ONLY)}"
roles = ["approve"]
"""
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WORKSPACE": str(workspace),
        "LLM_MODEL": "scripted",
        "DOCS_AGENT_SESSION_LOG": str(directory / "data/sessions.db"),
        "DOCS_AGENT_CONFIG": str(directory / "docs-agent.toml"),
    }
    stdio_text = asyncio.run(over_stdio(workspace, env))
    server, base = start_serve(directory, env)
    try:
        http_text = asyncio.run(over_http(base))
    finally:
        server.terminate()
        server.wait(timeout=20)
    shutil.rmtree(directory, ignore_errors=True)
    print("\n== transcript over stdio (target/mcp/transcript-stdio.txt)\n" + stdio_text)
    print("== transcript over HTTP: target/mcp/transcript-http.txt (" + str(len(http_text.splitlines())) + " lines)")
    if failures:
        print(f"\n{len(failures)} check(s) failed: " + "; ".join(failures))
        sys.exit(1)
    print("\nevery MCP check passed over stdio and HTTP")


if __name__ == "__main__":
    main()
