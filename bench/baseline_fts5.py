#!/usr/bin/env python3
"""Baseline for `cargo bench --bench index`: the plainest index a person would write in Python.

Walks DOCS/**/*.md, splits each file at ATX headings with a regex (no Markdown parser, no
front matter, no sanitising or redaction), and inserts the sections into an in-memory SQLite
FTS5 table (porter unicode61) in one transaction. Optionally times MATCH queries built the
way docs-agent builds them (each word quoted, ORed; same stopwords and term cap).

Prints `key value...` lines on stdout for the Rust bench to read:
  files N / sections N / sqlite VERSION
  build_ms MS / build_cpu_ms MS   (one pair per --reps)
  search_us US US ...         (one line, every search latency, with --queries)

Usage: baseline_fts5.py DOCS [--reps N] [--queries FILE --searches M --k K]
"""

import argparse
import os
import re
import sqlite3
import sys
import time

HEADING = re.compile(r"^#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
MAX_TERMS = 32
MAX_TERM_CHARS = 64
STOPWORDS = set(
    "a about an and are as at be by can do does for from how i if in is it its me my of on or "
    "our should so that the their there this to was we what when where which who why will "
    "with you your".split()
)


def walk(docs):
    """(relative path, text) of every Markdown file, sorted by path."""
    out = []
    for root, dirs, files in os.walk(docs):
        dirs.sort()
        for name in files:
            if name.lower().endswith((".md", ".markdown")):
                full = os.path.join(root, name)
                try:
                    with open(full, encoding="utf-8") as f:
                        out.append((os.path.relpath(full, docs), f.read()))
                except (OSError, UnicodeDecodeError):
                    pass
    out.sort()
    return out


def sections(path, text):
    """(path, heading, start_line, body) per ATX section; text before the first heading too."""
    stem = os.path.splitext(os.path.basename(path))[0]
    cuts = [(m.start(), m.end(), m.group(1)) for m in HEADING.finditer(text)]
    heading, body_start, start = stem, 0, 0
    for begin, end, title in cuts:
        body = text[body_start:begin].strip()
        if body:
            yield path, heading, text.count("\n", 0, start) + 1, body
        heading, body_start, start = title, end, begin
    body = text[body_start:].strip()
    if body:
        yield path, heading, text.count("\n", 0, start) + 1, body


def build(docs):
    """The index and its counts; the time covers walking, splitting and inserting."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE sections USING fts5(heading, body, path UNINDEXED, "
        "start_line UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    files = walk(docs)
    rows = [s for path, text in files for s in sections(path, text)]
    with conn:  # one transaction
        conn.executemany(
            "INSERT INTO sections (path, heading, start_line, body) VALUES (?, ?, ?, ?)", rows
        )
    return conn, len(files), len(rows)


def terms(text):
    """docs-agent's query::terms: alphanumeric words, lower-cased, unique, stopwords dropped."""
    words, word = [], []
    for c in text + " ":
        if c.isalnum():
            word.append(c)
        elif word:
            words.append("".join(word[:MAX_TERM_CHARS]).lower())
            word = []
    seen = []
    for w in words:
        if w not in seen:
            seen.append(w)
        if len(seen) >= MAX_TERMS * 4:
            break
    content = [w for w in seen if w not in STOPWORDS]
    return (content or seen)[:MAX_TERMS]


def fts_query(text):
    t = terms(text)
    return " OR ".join(f'"{w}"' for w in t) if t else None


def search_latencies(conn, queries, searches, k):
    """Microseconds per search, `searches` searches cycling through `queries` (one warm-up pass)."""
    sql = (
        "SELECT path, heading, start_line, body, bm25(sections, 5.0, 1.0) AS rank "
        "FROM sections WHERE sections MATCH ? ORDER BY rank LIMIT ?"
    )
    for q in queries:
        match = fts_query(q)
        if match:
            conn.execute(sql, (match, k)).fetchall()
    out = []
    for i in range(searches):
        start = time.perf_counter()
        match = fts_query(queries[i % len(queries)])
        if match:
            conn.execute(sql, (match, k)).fetchall()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("docs")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--queries")
    p.add_argument("--searches", type=int, default=2000)
    p.add_argument("--k", type=int, default=5)
    args = p.parse_args()
    print("sqlite", sqlite3.sqlite_version)
    conn = None
    for _ in range(max(args.reps, 1)):
        if conn is not None:
            conn.close()
        start, cpu = time.perf_counter(), time.process_time()
        conn, files, rows = build(args.docs)
        print("build_ms", f"{(time.perf_counter() - start) * 1e3:.3f}")
        print("build_cpu_ms", f"{(time.process_time() - cpu) * 1e3:.3f}")
    print("files", files)
    print("sections", rows)
    if args.queries:
        with open(args.queries, encoding="utf-8") as f:
            queries = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        lat = search_latencies(conn, queries, args.searches, args.k)
        print("search_us", " ".join(f"{x:.2f}" for x in lat))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
