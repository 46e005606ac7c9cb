//! `cargo bench --bench fuzz`: a mutation fuzzer over the parsers that read outside input, for a
//! fixed time per target, counting executions and crashes (a panic is a crash; the bench exits
//! 1 if there is any). No new crate: inputs are seeds (the sample workspace's files and crafted
//! text) mutated by a seeded xorshift — bytes flipped, inserted, deleted, duplicated, spliced
//! from another seed, or tokens from a dictionary of the formats' own syntax put in.
//!
//! Targets: the Markdown chunker, the skill front-matter parser, the redactor (which must also
//! stay idempotent), the fence and sanitiser, the link neutraliser, the SSE reader and the text
//! tool-call parser.
//!
//! Environment: `BENCH_FUZZ_SECS` (10 per target), `BENCH_SEED` (20261202).

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use docs_agent::guard;
use docs_agent::index::{chunk, formats};
use docs_agent::model::{sse, textcall};
use docs_agent::skills::Skills;

/// Syntax of the formats under test, put into inputs whole.
const DICTIONARY: &[&str] = &[
    "\n# ",
    "\n## ",
    "```",
    "~~~",
    "\n---\n",
    "{#anchor}",
    "<untrusted source=\"x\">",
    "</untrusted>",
    "<system>",
    "data: ",
    "data: [DONE]\n\n",
    "\n\n",
    "\r\n",
    "{\"choices\":[{\"delta\":{\"content\":\"",
    "\"}}]}",
    "{\"name\": \"search_docs\", \"arguments\": {\"query\": \"",
    "<tool_call>",
    "</tool_call>",
    "name: ",
    "description: ",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_",
    "[REDACTED]",
    "](",
    "![",
    "<b>",
    "&#65;",
    "\u{200B}",
    "\u{202E}",
    "\u{1b}[2J",
    "<a href=\"https://evil.example/\">",
    "https://",
    "password: \"",
    "\"",
    "\\",
    "😀",
    "é",
    "\u{0}",
    "[x]: https://evil.example",
    "<!--",
    "-->",
    "|---|",
    "* ",
    "> ",
];

/// Crafted seeds besides the sample workspace's files.
const SEEDS: &[&str] = &[
    "---\nname: cite-sources\ndescription: Cite every answer.\n---\n\n# Cite\n\nAlways cite.\n",
    "data: {\"choices\":[{\"delta\":{\"content\":\"Refunds take 14 days.\"}}]}\n\ndata: [DONE]\n\n",
    "{\"name\": \"search_docs\", \"arguments\": {\"query\": \"refund window\"}}",
    "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/refunds.md\"}}</tool_call>",
    "See [docs](https://evil.example/x) and ![img](https://evil.example/i.png) <img src=x>.",
    "key AKIAIOSF[ODNN7EXAMPLE](https://x.example/) and token=\"hunter2hunter2\"\n-----BEGIN PRIVATE KEY-----\nMIIE\n",
];

/// A small deterministic random source (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// `seed` mutated a few times.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(data.len() + 1);
        match rng.below(6) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 => data.insert(at, rng.next() as u8),
            2 if !data.is_empty() => {
                let end = (at + rng.below(64)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 if !data.is_empty() => {
                let start = rng.below(data.len());
                let end = (start + rng.below(256)).min(data.len());
                let piece = data[start..end].to_vec();
                data.splice(at..at, piece);
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                let start = rng.below(other.len());
                let end = (start + rng.below(512)).min(other.len());
                data.splice(at..at, other[start..end].iter().copied());
            }
            _ => {
                let token = DICTIONARY[rng.below(DICTIONARY.len())].as_bytes();
                data.splice(at..at, token.iter().copied());
            }
        }
        data.truncate(64 * 1024);
    }
    data
}

/// One fuzz target: what it does with an input; `Err` is a broken property (not a panic).
type Target = fn(&[u8]) -> Result<(), String>;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn chunker(data: &[u8]) -> Result<(), String> {
    let source = text(data);
    let _ = formats::chunk_file("docs/fuzz.md", &source);
    let _ = chunk::chunk_markdown(&source, "fuzz");
    Ok(())
}

fn front_matter(data: &[u8]) -> Result<(), String> {
    let _ = Skills::parse("cite-sources", "skills/cite-sources/SKILL.md", &text(data));
    Ok(())
}

fn redactor(data: &[u8]) -> Result<(), String> {
    let source = text(data);
    let once = guard::redact::redact(&source).into_owned();
    let twice = guard::redact::redact(&once);
    if twice != once {
        return Err(format!("redaction is not idempotent on {source:?}"));
    }
    let _ = guard::redact::redact_truncated(&source, source.len() / 2);
    Ok(())
}

fn fence(data: &[u8]) -> Result<(), String> {
    let source = text(data);
    let fenced = guard::fence::Fenced::new("docs/fuzz.md#x", &source);
    let _ = guard::fence::found_in(fenced.as_str()).count();
    let _ = guard::fence::sanitize(&source);
    Ok(())
}

fn links(data: &[u8]) -> Result<(), String> {
    let source = text(data);
    let _ = guard::links::neutralize_links(&source, &["docs.example.com".to_string()]);
    let _ = guard::outbound(&source, &[]);
    Ok(())
}

fn sse_reader(data: &[u8]) -> Result<(), String> {
    let mut stream = sse::Stream::default();
    let mut sink = |_: &str| {};
    // Fed in two pieces, cut anywhere, as a network would.
    let cut = data.len() / 3;
    if stream.feed(&data[..cut], &mut sink).is_ok() && stream.feed(&data[cut..], &mut sink).is_ok() {
        let _ = stream.finish(&mut sink);
    }
    Ok(())
}

fn tool_calls(data: &[u8]) -> Result<(), String> {
    let _ = textcall::parse(&text(data), &["search_docs", "read_file", "write_file", "load_skill"]);
    Ok(())
}

/// Every file under `dir`, as seeds.
fn files(dir: &Path, out: &mut Vec<Vec<u8>>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files(&path, out);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push(bytes);
            }
        }
    }
}

fn main() -> ExitCode {
    let secs = std::env::var("BENCH_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(10u64);
    let seed = std::env::var("BENCH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(20_261_202u64);
    let mut seeds: Vec<Vec<u8>> = SEEDS.iter().map(|s| s.as_bytes().to_vec()).collect();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace"), &mut seeds);
    // Panics are counted, not printed one by one.
    std::panic::set_hook(Box::new(|_| {}));
    let targets: [(&str, Target); 7] = [
        ("chunker", chunker),
        ("skill front matter", front_matter),
        ("redactor (and idempotence)", redactor),
        ("fence and sanitiser", fence),
        ("link neutraliser and outbound guard", links),
        ("SSE reader", sse_reader),
        ("text tool-call parser", tool_calls),
    ];
    println!("{} seeds, {secs} s per target, seed {seed}\n", seeds.len());
    println!("| target | executions | crashes | broken properties |");
    println!("|---|---:|---:|---:|");
    let mut failed = false;
    for (name, target) in targets {
        let mut rng = Rng(seed.max(1));
        let (mut runs, mut crashes, mut broken) = (0u64, 0u64, 0u64);
        let mut first: Option<String> = None;
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            let base = &seeds[rng.below(seeds.len())];
            let input = mutate(&mut rng, &seeds, base);
            runs += 1;
            match catch_unwind(AssertUnwindSafe(|| target(&input))) {
                Ok(Ok(())) => {}
                Ok(Err(problem)) => {
                    broken += 1;
                    first.get_or_insert(problem);
                }
                Err(_) => {
                    crashes += 1;
                    first.get_or_insert(format!("panic on {:?}", text(&input)));
                }
            }
        }
        println!("| {name} | {runs} | {crashes} | {broken} |");
        if let Some(first) = first {
            failed = true;
            eprintln!("{name}: first failure: {}", first.chars().take(600).collect::<String>());
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
