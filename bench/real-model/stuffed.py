"""The baseline users would otherwise run: top-k chunks stuffed into one prompt (issue 32).

What Open WebUI's default RAG and LangChain's starter templates do, on the same model server
docs-agent uses: the docs cut into chunks of about 1,000 characters with 100 of overlap (at
paragraph, then line, then word boundaries, as a recursive character splitter does), the 4
best chunks for the question's words by BM25 (SQLite FTS5, as docs-agent's own search uses),
each put in the prompt as `<source id="N" name="path">`, with an instruction to cite `[N]`,
and no check of what comes back. The instruction follows the structure of Open WebUI's default
RAG template (task, guidelines, context, query), in our own words.

A citation `[N]` is taken to name the section its chunk starts in (the last heading before it,
as a GitHub-style anchor), so gold sections compare as they do for docs-agent.
"""

import json
import re
import sqlite3
import time
import urllib.request
from pathlib import Path

CHUNK_CHARS = 1000
OVERLAP_CHARS = 100
TOP_K = 4
MAX_TOKENS = 512

TEMPLATE = """### Task
Answer the user's query from the context below. Cite a source inline as [id], using the id of its <source> tag, for each statement it supports.

### Guidelines
- If the context does not hold the answer, say that you do not know.
- Answer in the language of the query.
- Do not write XML tags in the answer.
- Keep citations short and tied to the statement they support.

### Output
A clear, direct answer to the query, with inline [id] citations.

<context>
{context}
</context>

<user_query>
{query}
</user_query>"""

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
NOT_COVERED = re.compile(
    r"(?i)\b(?:(?:do|does|did)\s*(?:not|n't)\s+(?:cover|mention|say|state|specify|contain|include|provide|address|answer|describe|discuss)"
    r"|(?:is|are)\s*(?:not|n't)\s+(?:covered|mentioned|specified|stated|provided|described|addressed|available|found)"
    r"|(?:no|not any)\s+(?:information|mention|details?)\s+(?:about|on|regarding|in|of)"
    r"|(?:can|could)\s*(?:not|n't)\s+find|unable to find|not (?:able|possible) to (?:find|answer|determine)"
    r"|i\s+(?:do\s*(?:not|n't)|don't)\s+know)\b")


def slug(heading, seen):
    """A GitHub-style anchor, unique in its file."""
    text = re.sub(r"[`*_~]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
    n = seen.get(text, 0)
    seen[text] = n + 1
    return text if n == 0 else f"{text}-{n}"


def split(text, limit=CHUNK_CHARS):
    """Pieces of at most `limit` characters, cut at paragraphs, then lines, then spaces."""
    if len(text) <= limit:
        return [text]
    for sep in ("\n\n", "\n", " "):
        if sep not in text:
            continue
        parts, current = [], ""
        for piece in text.split(sep):
            candidate = current + sep + piece if current else piece
            if len(candidate) <= limit:
                current = candidate
            else:
                if current:
                    parts.append(current)
                current = piece
        if current:
            parts.append(current)
        out = []
        for part in parts:
            out.extend(split(part, limit) if len(part) > limit else [part])
        return out
    return [text[i:i + limit] for i in range(0, len(text), limit)]


def chunks(path, text):
    """(path, anchor, text) chunks of one file, each starting with the overlap of the last."""
    sections, anchor, seen, start, lines = [], "", {}, 0, text.split("\n")
    body = []
    fenced = False
    for line in lines:
        if line.strip().startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            if "".join(body).strip():
                sections.append((anchor, "\n".join(body)))
            anchor, body = slug(m.group(2), seen), [line]
        else:
            body.append(line)
    if "".join(body).strip():
        sections.append((anchor, "\n".join(body)))
    out, tail = [], ""
    for anchor, section in sections:
        for piece in split(section, CHUNK_CHARS - OVERLAP_CHARS):
            out.append((path, anchor, (tail + piece).strip()))
            tail = piece[-OVERLAP_CHARS:] + " "
    return out


class Stuffed:
    """The baseline over one workspace's docs."""

    def __init__(self, workspace):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE c USING fts5(text, path UNINDEXED, anchor UNINDEXED)")
        docs = Path(workspace) / "docs"
        rows = []
        for f in sorted(docs.rglob("*")):
            if f.suffix.lower() in (".md", ".mdx", ".markdown", ".txt") and f.is_file():
                rel = "docs/" + str(f.relative_to(docs))
                rows.extend(chunks(rel, f.read_text(errors="replace")))
        self.db.executemany("INSERT INTO c (path, anchor, text) VALUES (?, ?, ?)", [(p, a, t) for p, a, t in rows])

    def retrieve(self, question):
        words = ['"%s"' % w.lower() for w in re.findall(r"\w+", question)]
        if not words:
            return []
        return self.db.execute("SELECT path, anchor, text FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT ?",
                               (" OR ".join(words), TOP_K)).fetchall()

    def ask(self, base_url, question):
        started = time.monotonic()
        found = self.retrieve(question)
        context = "\n".join(f'<source id="{i}" name="{p}">{t}</source>' for i, (p, _, t) in enumerate(found, 1))
        body = {"model": "local", "temperature": 0, "max_tokens": MAX_TOKENS,
                "messages": [{"role": "user", "content": TEMPLATE.format(context=context, query=question)}]}
        request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(request, timeout=900))
        wall = time.monotonic() - started
        text = reply["choices"][0]["message"].get("content") or ""
        usage = reply.get("usage", {})
        cited = []
        # Read generously: [2], [2, 3], [id: 2], [source 2].
        numbers = [n for group in re.findall(r"\[(?:id|source)?\s*[:=]?\s*(\d+(?:\s*,\s*\d+)*)\]", text, re.I)
                   for n in re.findall(r"\d+", group)]
        for n in numbers:
            i = int(n) - 1
            if 0 <= i < len(found):
                path, anchor, _ = found[i]
                source = f"{path}#{anchor}" if anchor else path
                if source not in cited:
                    cited.append(source)
        shown = [f"{p}#{a}" if a else p for p, a, _ in found]
        return {
            "answer": text, "wall": wall, "cited": cited, "shown": shown,
            "not_covered": bool(NOT_COVERED.search(text)) and not cited,
            "prompt_tokens": usage.get("prompt_tokens"),
            "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            "completion_tokens": usage.get("completion_tokens"),
        }
