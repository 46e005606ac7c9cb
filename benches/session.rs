//! `cargo bench --bench session`: the session log must not be the bottleneck of a turn (aim:
//! under 1 ms to append an event durably and to rebuild a 200-event projection). Reported as
//! numbers and as ratios against baselines timed in the same run: a JSON line appended to a plain
//! file and fsynced (the least a durable append can cost), and parsing the same 200 JSON lines.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::io::Write;
use std::time::Instant;

use docs_agent::session::event::{CallRecord, Event, Origin};
use docs_agent::session::projection::project;
use docs_agent::session::store::Log;

const APPENDS: usize = 300;
const PROJECTIONS: usize = 200;
const TURNS: usize = 100;

fn event(i: usize) -> Event {
    match i % 3 {
        0 => Event::UserMessage { text: format!("question {i} about the refund window and the second approver") },
        1 => Event::AssistantMessage {
            text: String::new(),
            tool_calls: vec![CallRecord {
                id: format!("c{i}"),
                name: "search_docs".into(),
                arguments: format!("{{\"query\":\"q{i}\"}}"),
            }],
            usage: None,
            estimated: None,
            origin: Origin::Model,
        },
        _ => Event::ToolResult {
            call_id: format!("c{}", i - 1),
            text: "<untrusted source=\"docs/refunds.md#window\">\nRefunds are possible within 14 days.\n</untrusted>"
                .repeat(4),
            decision: docs_agent::tools::Decision::Allowed,
        },
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut log = Log::open(&dir.path().join("bench.db")).map_err(|e| e.to_string())?;
    let mut plain = std::fs::File::create(dir.path().join("plain.jsonl")).map_err(|e| e.to_string())?;
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for i in 0..APPENDS {
        let e = event(i);
        let line = serde_json::to_string(&e).map_err(|e| e.to_string())?;
        let t = Instant::now();
        log.append("bench", e).map_err(|e| e.to_string())?;
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        plain
            .write_all(line.as_bytes())
            .and_then(|()| plain.write_all(b"\n"))
            .and_then(|()| plain.sync_data())
            .map_err(|e| e.to_string())?;
        base.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (ours_med, base_med) = (median(ours.clone()), median(base.clone()));
    println!("## Durable append, {APPENDS} events (ms)\n");
    println!("| what | p50 | p99 | x baseline (p50) |\n|---|---:|---:|---:|");
    println!(
        "| session log append (SQLite WAL, synchronous=FULL) | {ours_med:.3} | {:.3} | {:.2} |",
        percentile(ours, 0.99),
        ours_med / base_med
    );
    println!("| baseline: JSON line + fdatasync | {base_med:.3} | {:.3} | 1.00 |", percentile(base, 0.99));

    let events = log.events_after("bench", (APPENDS - 200) as u64).map_err(|e| e.to_string())?;
    let lines: Vec<String> = events.iter().map(|s| serde_json::to_string(&s.event).unwrap_or_default()).collect();
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for _ in 0..PROJECTIONS {
        let t = Instant::now();
        let read = log.events_after("bench", (APPENDS - 200) as u64).map_err(|e| e.to_string())?;
        let messages = project("system prompt", &read);
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(messages);
        let t = Instant::now();
        let parsed: Vec<Event> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
        base.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(parsed);
    }
    let (ours_med, base_med) = (median(ours.clone()), median(base.clone()));
    println!("\n## Read 200 events and project them, {PROJECTIONS} times (ms)\n");
    println!("| what | p50 | p99 | x baseline (p50) |\n|---|---:|---:|---:|");
    println!("| log read + projection | {ours_med:.3} | {:.3} | {:.2} |", percentile(ours, 0.99), ours_med / base_med);
    println!("| baseline: parse the same 200 JSON lines | {base_med:.3} | {:.3} | 1.00 |", percentile(base, 0.99));
    println!("\nAim: under 1 ms for both (issue 4).");
    turns(dir.path())
}

/// One scripted turn (search, then answer: 5 events) driven through `session::turn`, with the
/// log on disk against the same turn with the log in memory: what durability adds to a turn.
fn turns(dir: &std::path::Path) -> Result<(), String> {
    use docs_agent::agent::Harness;
    use docs_agent::config::Sources;
    use docs_agent::model::Model;
    use docs_agent::runtime::{self, Flavor};
    use docs_agent::session::cancel::Cancel;
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace");
    let sources = Sources {
        file: None,
        env: Default::default(),
        flags: vec![("workspace", workspace.display().to_string()), ("llm.model", "scripted".into())],
    };
    let config = docs_agent::service::settings::load(&sources).map_err(|e| e.to_string())?;
    let harness = Harness::open(&config).map_err(|e| e.to_string())?;
    let deps = harness.deps(&config);
    let model = Model::from_config(&config.llm, 256).map_err(|e| e.to_string())?;
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| e.to_string())?;
    let mut on_disk = Log::open(&dir.join("turns.db")).map_err(|e| e.to_string())?;
    let mut in_memory = Log::in_memory().map_err(|e| e.to_string())?;
    let mut times = [Vec::new(), Vec::new()];
    for (which, log) in [&mut on_disk, &mut in_memory].into_iter().enumerate() {
        for _ in 0..TURNS {
            let id = docs_agent::session::start(log, &config, "scripted").map_err(|e| e.to_string())?;
            let t = Instant::now();
            log.append(&id, Event::UserMessage { text: "how long is the refund window".into() })
                .map_err(|e| e.to_string())?;
            let end =
                runtime.block_on(deps.turn(&model, log, &id).drive(&mut Cancel::never())).map_err(|e| e.to_string())?;
            times[which].push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(end);
        }
    }
    let [disk, memory] = times;
    let (disk_med, memory_med) = (median(disk.clone()), median(memory.clone()));
    println!("\n## One scripted turn (question, search, result, answer, stop), {TURNS} turns (ms)\n");
    println!("| what | p50 | p99 | x baseline (p50) |\n|---|---:|---:|---:|");
    println!("| turn, log on disk | {disk_med:.3} | {:.3} | {:.2} |", percentile(disk, 0.99), disk_med / memory_med);
    println!("| baseline: the same turn, log in memory | {memory_med:.3} | {:.3} | 1.00 |", percentile(memory, 0.99));
    Ok(())
}
