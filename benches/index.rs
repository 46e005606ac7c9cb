//! `cargo bench --bench index`: how fast docs-agent builds and searches its index on two real
//! docs corpora, against a plain Python sqlite3 FTS5 index (`bench/baseline_fts5.py`) measured
//! in the same run. Speed is reported as numbers and ratios against that baseline, never
//! asserted: the aims in `bench/README.md` are read off the table, not checked here.
//!
//! Flags after `--`: `--phases` adds a single-threaded breakdown of the build (walk, chunk,
//! clean, insert) and timings of FTS5 insert variants, to see where the build time goes.
//! Environment: `DOCS_AGENT_CORPORA` (default `/work/shared/corpora`), `BENCH_REPS` (5),
//! `BENCH_SEARCHES` (2000). The corpora are read in place, never copied.

use std::borrow::Borrow;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use docs_agent::guard::{fence, redact};
use docs_agent::index::{Index, chunk, walk};
use rusqlite::{Connection, params};

/// `index.max_file_bytes` as the default config sets it.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Hits per search, as `index.top_k` gives the agent.
const TOP_K: usize = 5;
/// The searches, one per line (`#` lines are comments); the Python baseline reads the same file.
const QUERIES: &str = include_str!("../bench/queries.txt");
/// The aims from the issue, printed beside the numbers.
const BUILD_AIM: f64 = 3.0;
const P99_AIM_MS: f64 = 5.0;

type Result<T> = std::result::Result<T, String>;

/// What the run measures, read once from flags and environment.
struct Settings {
    /// Folder holding `business-central-docs/` and `polar-docs/`.
    corpora: PathBuf,
    /// Timed builds per side (after one untimed warm-up each).
    reps: usize,
    /// Timed searches per corpus.
    searches: usize,
    /// Also print the phase breakdown and insert variants.
    phases: bool,
}

/// Everything measured on one corpus.
struct Report {
    /// Corpus folder name.
    name: &'static str,
    /// Files and sections docs-agent indexed.
    files: usize,
    sections: usize,
    /// Wall and CPU time of each timed `Index::build`.
    build: Vec<f64>,
    build_cpu: Vec<f64>,
    /// Microseconds per search.
    search_us: Vec<f64>,
    /// The Python baseline's numbers from the same run.
    base: Baseline,
}

/// What `bench/baseline_fts5.py` printed.
#[derive(Default)]
struct Baseline {
    /// Python's SQLite version (it differs from the bundled one).
    sqlite: String,
    /// Files and sections it indexed.
    files: usize,
    sections: usize,
    /// Wall and CPU ms of each build.
    build: Vec<f64>,
    build_cpu: Vec<f64>,
    /// Microseconds per search.
    search_us: Vec<f64>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench index: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let settings = settings()?;
    let queries: Vec<&str> = QUERIES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    println!(
        "docs-agent index bench: {} build reps, {} searches of {} queries, top {TOP_K}, {} cores, SQLite {} (bundled)",
        settings.reps,
        settings.searches,
        queries.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rusqlite::version(),
    );
    let mut reports = Vec::new();
    for name in ["business-central-docs", "polar-docs"] {
        reports.push(measure(&settings, name, &queries)?);
    }
    print_build(&reports);
    print_search(&reports);
    if settings.phases {
        phases(&settings.corpora.join("business-central-docs"), &queries)?;
    }
    Ok(())
}

fn settings() -> Result<Settings> {
    let number = |var: &str, default: usize| -> Result<usize> {
        match std::env::var(var) {
            Ok(v) => v
                .parse()
                .map_err(|_| format!("{var}={v:?} is not a whole number")),
            Err(_) => Ok(default),
        }
    };
    let corpora = std::env::var_os("DOCS_AGENT_CORPORA")
        .map_or_else(|| PathBuf::from("/work/shared/corpora"), PathBuf::from);
    Ok(Settings {
        corpora,
        reps: number("BENCH_REPS", 5)?.max(1),
        searches: number("BENCH_SEARCHES", 2000)?.max(1),
        phases: std::env::args().any(|a| a == "--phases"),
    })
}

/// Builds `name` with both indexers, alternating so drift hits both alike, then times searches.
fn measure(settings: &Settings, name: &'static str, queries: &[&str]) -> Result<Report> {
    let path = settings.corpora.join(name);
    let dir = Dir::open_ambient_dir(&path, cap_std::ambient_authority()).map_err(|e| {
        format!(
            "cannot open corpus {} ({e}); set DOCS_AGENT_CORPORA to the folder holding it",
            path.display()
        )
    })?;
    eprintln!("{name}: building...");
    let mut report = Report {
        name,
        files: 0,
        sections: 0,
        build: Vec::new(),
        build_cpu: Vec::new(),
        search_us: Vec::new(),
        base: Baseline::default(),
    };
    let mut index = None;
    for rep in 0..=settings.reps {
        let last = rep == settings.reps;
        let cpu = cpu_ms();
        let start = Instant::now();
        let built = Index::build(&dir, MAX_FILE_BYTES).map_err(|e| format!("{name}: {e}"))?;
        let wall = ms(start.elapsed());
        let cpu = cpu_ms() - cpu;
        let base = baseline(&path, last.then_some(settings.searches))?;
        if rep > 0 {
            report.build.push(wall);
            report.build_cpu.push(cpu);
            report.base.build.extend(base.build);
            report.base.build_cpu.extend(base.build_cpu);
        }
        if last {
            report.base.sqlite = base.sqlite;
            report.base.files = base.files;
            report.base.sections = base.sections;
            report.base.search_us = base.search_us;
        }
        index = Some(built);
    }
    let index = index.ok_or("no build ran")?;
    report.files = index.stats.files;
    report.sections = index.stats.sections;
    eprintln!("{name}: searching...");
    report.search_us = search_latencies(&index, queries, settings.searches)?;
    Ok(report)
}

/// Microseconds per `Index::search`, cycling through `queries` after one untimed pass.
fn search_latencies(index: &Index, queries: &[&str], searches: usize) -> Result<Vec<f64>> {
    for q in queries {
        index
            .search(q, TOP_K)
            .map_err(|e| format!("search {q:?}: {e}"))?;
    }
    let mut out = Vec::with_capacity(searches);
    for i in 0..searches {
        let q = queries[i % queries.len()];
        let start = Instant::now();
        let hits = index
            .search(q, TOP_K)
            .map_err(|e| format!("search {q:?}: {e}"))?;
        out.push(start.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(hits);
    }
    Ok(out)
}

/// One run of the Python baseline: a single timed build, plus searches when asked.
fn baseline(docs: &Path, searches: Option<usize>) -> Result<Baseline> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/baseline_fts5.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(docs);
    if let Some(n) = searches {
        let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/queries.txt");
        cmd.arg("--queries")
            .arg(queries)
            .arg("--searches")
            .arg(n.to_string());
        cmd.arg("--k").arg(TOP_K.to_string());
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run python3 {} ({e})", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut base = Baseline::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        let nums = || {
            rest.split_whitespace()
                .filter_map(|n| n.parse::<f64>().ok())
        };
        match key {
            "sqlite" => base.sqlite = rest.to_string(),
            "files" => base.files = rest.parse().unwrap_or(0),
            "sections" => base.sections = rest.parse().unwrap_or(0),
            "build_ms" => base.build.extend(nums()),
            "build_cpu_ms" => base.build_cpu.extend(nums()),
            "search_us" => base.search_us = nums().collect(),
            _ => {}
        }
    }
    Ok(base)
}

fn print_build(reports: &[Report]) {
    println!("\n## Index build (median of timed reps; CPU = user+sys of all threads)\n");
    println!(
        "| corpus | files | sections (ours / py) | ours ms | ours CPU ms | python ms | python CPU ms | speed-up (py/ours) | aim |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in reports {
        let (ours, base) = (median(&r.build), median(&r.base.build));
        println!(
            "| {} | {} | {} / {} | {:.1} | {:.0} | {:.1} | {:.0} | {:.2}x | {} |",
            r.name,
            r.files,
            r.sections,
            r.base.sections,
            ours,
            median(&r.build_cpu),
            base,
            median(&r.base.build_cpu),
            base / ours,
            verdict(base / ours >= BUILD_AIM, &format!("{BUILD_AIM}x")),
        );
    }
    if let Some(r) = reports.first() {
        println!(
            "\nPython baseline: sqlite3 {} (system), regex ATX split, executemany in one transaction, single thread.",
            r.base.sqlite
        );
        println!(
            "All reps (ms) for {}: ours {:?}; python {:?}",
            r.name,
            rounded(&r.build),
            rounded(&r.base.build)
        );
    }
}

fn print_search(reports: &[Report]) {
    println!("\n## Search latency (µs per search, top {TOP_K}, same queries both sides)\n");
    println!("| corpus | side | searches | p50 | p90 | p99 | max | aim p99 < {P99_AIM_MS} ms |");
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    for r in reports {
        for (side, lat) in [("docs-agent", &r.search_us), ("python", &r.base.search_us)] {
            let p99 = percentile(lat, 99.0);
            println!(
                "| {} | {side} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {} |",
                r.name,
                lat.len(),
                percentile(lat, 50.0),
                percentile(lat, 90.0),
                p99,
                percentile(lat, 100.0),
                if side == "python" {
                    "baseline".to_string()
                } else {
                    verdict(p99 / 1e3 < P99_AIM_MS, "")
                },
            );
        }
    }
    println!(
        "\ndocs-agent: Index::search (query building, MATCH + highlight + bm25, excerpt). python: the same SQL via sqlite3, fetchall."
    );
}

/// Single-threaded times of the build's public pieces, then FTS5 and search variants on the same rows.
fn phases(docs: &Path, queries: &[&str]) -> Result<()> {
    let dir = Dir::open_ambient_dir(docs, cap_std::ambient_authority())
        .map_err(|e| format!("cannot open {} ({e})", docs.display()))?;
    let mut rows = Vec::new();
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..3 {
        let start = Instant::now();
        let walked = walk::walk_docs(&dir, MAX_FILE_BYTES);
        times[0].push(ms(start.elapsed()));
        let start = Instant::now();
        let chunks: Vec<(&str, Vec<chunk::Chunk>)> = walked
            .files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    chunk::chunk_markdown(&f.text, stem(&f.path)),
                )
            })
            .collect();
        times[1].push(ms(start.elapsed()));
        let start = Instant::now();
        rows = chunks
            .into_iter()
            .flat_map(|(path, cs)| cs.into_iter().map(move |c| row(path, c)))
            .collect();
        times[2].push(ms(start.elapsed()));
    }
    let bytes: usize = rows.iter().map(|r| r.body.len() + r.heading.len()).sum();
    println!("\n## Build phases, single thread, business-central-docs (median of 3)\n");
    println!("| phase | ms |\n|---|---:|");
    println!("| walk_docs (list + read) | {:.1} |", median(&times[0]));
    println!(
        "| chunk_markdown (pulldown-cmark) | {:.1} |",
        median(&times[1])
    );
    println!(
        "| clean = fence::sanitize + redact::redact ({} rows, {:.1} MB) | {:.1} |",
        rows.len(),
        bytes as f64 / 1e6,
        median(&times[2])
    );
    println!("| FTS5 insert | see `as built` below |");
    insert_variants(&rows, queries)?;
    query_variants(&rows, queries)?;
    println!("\n## Pipelined build experiment (median of 3)\n");
    println!("walk + chunk + clean on one thread, FTS5 insert on the other as rows arrive:\n");
    println!("| insert settings | build ms |\n|---|---:|");
    for v in [AS_BUILT, TUNED] {
        println!("| {} | {:.1} |", v.label, pipelined(&dir, &v)?);
    }
    Ok(())
}

/// Index::build with chunking overlapped with the insert: one thread walks, chunks and cleans,
/// the caller's thread inserts as rows arrive (what `src/index` could do on 2 cores). Median ms.
fn pipelined(dir: &Dir, v: &Variant) -> Result<f64> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let mut conn = create(v).map_err(|e| e.to_string())?;
        let (send, receive) = std::sync::mpsc::sync_channel::<Vec<Row>>(256);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let walked = walk::walk_docs(dir, MAX_FILE_BYTES);
                for f in &walked.files {
                    let rows = chunk::chunk_markdown(&f.text, stem(&f.path))
                        .into_iter()
                        .map(|c| row(&f.path, c))
                        .collect();
                    if send.send(rows).is_err() {
                        return;
                    }
                }
            });
            insert_rows(&mut conn, receive.iter().flatten())
        })
        .map_err(|e| e.to_string())?;
        times.push(ms(start.elapsed()));
    }
    Ok(median(&times))
}

fn row(path: &str, c: chunk::Chunk) -> Row {
    Row {
        heading: clean(&c.heading_text()),
        body: clean(&c.body),
        path: path.to_string(),
        anchor: c.anchor,
        start: c.start_line as i64,
        end: c.end_line as i64,
    }
}

/// A section as `Index::build` inserts it (the bench's copy of the private `Row`).
struct Row {
    heading: String,
    body: String,
    path: String,
    anchor: String,
    start: i64,
    end: i64,
}

/// `index::clean`, rebuilt from the public pieces.
fn clean(text: &str) -> String {
    redact::redact(&fence::sanitize(text)).into_owned()
}

fn stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(s, _)| s)
}

/// One way to set up the FTS5 table, for the insert experiments.
struct Variant {
    /// Row name in the table.
    label: &'static str,
    /// Run on the fresh connection before the table exists.
    pragmas: &'static str,
    /// Extra `CREATE VIRTUAL TABLE` options, each starting with ", ".
    options: &'static str,
    /// The `tokenize = '…'` value.
    tokenizer: &'static str,
    /// FTS5 config commands (`pgsz`, `automerge`, `hashsize`...) run before the inserts.
    config: &'static [(&'static str, i64)],
}

const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";
const AS_BUILT: Variant = Variant {
    label: "as built (src/index)",
    pragmas: "",
    options: "",
    tokenizer: TOKENIZER,
    config: &[],
};
const VARIANTS: &[Variant] = &[
    AS_BUILT,
    Variant {
        label: "detail=column",
        options: ", detail=column",
        ..AS_BUILT
    },
    Variant {
        label: "no porter (unicode61 only)",
        tokenizer: "unicode61 remove_diacritics 2",
        ..AS_BUILT
    },
    Variant {
        label: "PRAGMA page_size=65536, cache_size=256 MB",
        pragmas: "PRAGMA page_size = 65536; PRAGMA cache_size = -262144;",
        ..AS_BUILT
    },
    Variant {
        label: "automerge=0 (no merging while inserting)",
        config: &[("automerge", 0)],
        ..AS_BUILT
    },
    Variant {
        label: "hashsize=64 MB",
        config: &[("hashsize", 64 << 20)],
        ..AS_BUILT
    },
    TUNED,
];
/// The insert settings that helped without changing results, together.
const TUNED: Variant = Variant {
    label: "hashsize=64 MB + automerge=0 + pgsz=16000",
    config: &[("hashsize", 64 << 20), ("automerge", 0), ("pgsz", 16000)],
    ..AS_BUILT
};

/// The SQL `Index::search` runs.
const SEARCH_SQL: &str = "SELECT path, anchor, heading, start_line, end_line, body, \
     highlight(sections, 1, char(57344), char(57345)), bm25(sections, ?3, 1.0) AS rank \
     FROM sections WHERE sections MATCH ?1 ORDER BY rank LIMIT ?2";

/// Times the FTS5 insert of the same rows per variant, and the search SQL on the result.
fn insert_variants(rows: &[Row], queries: &[&str]) -> Result<()> {
    println!(
        "\n## FTS5 insert variants, same rows (one transaction, statement reused; median of 3)\n"
    );
    println!("Search: the SQL of Index::search without the excerpt, 5 passes of the queries.\n");
    println!("| variant | insert ms | search p50 µs | p99 µs | top-5 same as as-built |");
    println!("|---|---:|---:|---:|---:|");
    let fts: Vec<String> = queries.iter().map(|q| fts_query(q, usize::MAX)).collect();
    let mut reference = Vec::new();
    for v in VARIANTS {
        let mut times = Vec::new();
        let mut conn = None;
        for _ in 0..3 {
            let (c, t) = insert(rows, v).map_err(|e| format!("{}: {e}", v.label))?;
            times.push(t);
            conn = Some(c);
        }
        let conn = conn.ok_or("no insert ran")?;
        let (lat, tops) = time_sql(&conn, &fts, |c, q| top_k(c, SEARCH_SQL, q))
            .map_err(|e| format!("{}: {e}", v.label))?;
        if reference.is_empty() {
            reference = tops.clone();
        }
        println!(
            "| {} | {:.1} | {:.0} | {:.0} | {}/{} |",
            v.label,
            median(&times),
            percentile(&lat, 50.0),
            percentile(&lat, 99.0),
            same(&tops, &reference),
            queries.len()
        );
    }
    Ok(())
}

/// Other ways to run the same search on the as-built table.
fn query_variants(rows: &[Row], queries: &[&str]) -> Result<()> {
    let (conn, _) = insert(rows, &AS_BUILT).map_err(|e| e.to_string())?;
    conn.execute_batch("INSERT INTO sections(sections, rank) VALUES('rank', 'bm25(5.0, 1.0)');")
        .map_err(|e| e.to_string())?;
    const RANK_SQL: &str = "SELECT path, anchor, heading, start_line, end_line, body, \
         highlight(sections, 1, char(57344), char(57345)), rank \
         FROM sections WHERE sections MATCH ?1 ORDER BY rank LIMIT ?2";
    const IDS_SQL: &str = "SELECT path, anchor FROM sections WHERE sections MATCH ?1 \
         ORDER BY bm25(sections, ?3, 1.0) LIMIT ?2";
    println!("\n## Search SQL variants on the as-built table (5 passes of the queries)\n");
    println!("| variant | p50 µs | p99 µs | top-5 same as src SQL |\n|---|---:|---:|---:|");
    let all: Vec<String> = queries.iter().map(|q| fts_query(q, usize::MAX)).collect();
    let (_, reference) =
        time_sql(&conn, &all, |c, q| top_k(c, SEARCH_SQL, q)).map_err(|e| e.to_string())?;
    let cases: [(&str, usize, &str); 5] = [
        (
            "src SQL (bm25 alias; body + highlight for every match)",
            usize::MAX,
            SEARCH_SQL,
        ),
        (
            "FTS5 rank column configured to bm25(5.0, 1.0)",
            usize::MAX,
            RANK_SQL,
        ),
        (
            "path + anchor only (no body, no highlight)",
            usize::MAX,
            IDS_SQL,
        ),
        ("src SQL, at most 12 terms", 12, SEARCH_SQL),
        ("src SQL, at most 6 terms", 6, SEARCH_SQL),
    ];
    for (label, max_terms, sql) in cases {
        let fts: Vec<String> = queries.iter().map(|q| fts_query(q, max_terms)).collect();
        let (lat, tops) =
            time_sql(&conn, &fts, |c, q| top_k(c, sql, q)).map_err(|e| format!("{label}: {e}"))?;
        println!(
            "| {label} | {:.0} | {:.0} | {}/{} |",
            percentile(&lat, 50.0),
            percentile(&lat, 99.0),
            same(&tops, &reference),
            queries.len()
        );
    }
    slowest(&conn, queries, &all).map_err(|e| e.to_string())
}

/// The slowest queries with how many sections they match: BM25 scores every match.
fn slowest(conn: &Connection, queries: &[&str], fts: &[String]) -> rusqlite::Result<()> {
    let mut rows = Vec::new();
    for (q, f) in queries.iter().zip(fts) {
        let (lat, _) = time_sql(conn, std::slice::from_ref(f), |c, q| {
            top_k(c, SEARCH_SQL, q)
        })?;
        let matched: i64 = conn.query_row(
            "SELECT count(*) FROM sections WHERE sections MATCH ?1",
            params![f],
            |r| r.get(0),
        )?;
        let terms = f.matches(" OR ").count() + 1;
        rows.push((median(&lat), matched, terms, *q));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("\n## Slowest queries (src SQL, median of 5)\n");
    println!("| µs | sections matched | terms | query |\n|---:|---:|---:|---|");
    for (us, matched, terms, q) in rows.iter().take(6) {
        let q: String = q.chars().take(70).collect();
        println!("| {us:.0} | {matched} | {terms} | {q} |");
    }
    Ok(())
}

/// docs-agent's FTS5 expression for `q`, keeping at most `max_terms` terms.
fn fts_query(q: &str, max_terms: usize) -> String {
    let terms = docs_agent::index::query::terms(q);
    let quoted: Vec<String> = terms
        .iter()
        .take(max_terms)
        .map(|t| format!("\"{t}\""))
        .collect();
    quoted.join(" OR ")
}

type Top = Vec<(String, String)>;

/// Latencies (µs) of `run` over 5 passes of `fts` after one untimed pass, and the first pass's results.
fn time_sql(
    conn: &Connection,
    fts: &[String],
    run: impl Fn(&Connection, &str) -> rusqlite::Result<Top>,
) -> rusqlite::Result<(Vec<f64>, Vec<Top>)> {
    let tops = fts
        .iter()
        .map(|q| run(conn, q))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut lat = Vec::new();
    for _ in 0..5 {
        for q in fts {
            let start = Instant::now();
            std::hint::black_box(run(conn, q)?);
            lat.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok((lat, tops))
}

/// (path, anchor) of the top hits, reading every column the search reads.
fn top_k(conn: &Connection, sql: &str, fts: &str) -> rusqlite::Result<Top> {
    if fts.is_empty() {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(sql)?;
    let has_weight = sql.contains("?3");
    let full = stmt.column_count() > 2;
    let map = |r: &rusqlite::Row<'_>| {
        if full {
            let body: String = r.get(5)?;
            let marked: String = r.get(6)?;
            std::hint::black_box((body, marked));
        }
        Ok((r.get(0)?, r.get(1)?))
    };
    if has_weight {
        stmt.query_map(params![fts, TOP_K as i64, 5.0], map)?
            .collect()
    } else {
        stmt.query_map(params![fts, TOP_K as i64], map)?.collect()
    }
}

fn same(a: &[Top], b: &[Top]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

fn insert(rows: &[Row], v: &Variant) -> rusqlite::Result<(Connection, f64)> {
    let start = Instant::now();
    let mut conn = create(v)?;
    insert_rows(&mut conn, rows.iter())?;
    Ok((conn, ms(start.elapsed())))
}

/// A fresh in-memory database with the `sections` table set up as `v` says.
fn create(v: &Variant) -> rusqlite::Result<Connection> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(v.pragmas)?;
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE sections USING fts5(heading, body, path UNINDEXED, anchor UNINDEXED, \
         start_line UNINDEXED, end_line UNINDEXED, tokenize = '{}'{});",
        v.tokenizer, v.options
    ))?;
    for (name, value) in v.config {
        conn.execute(
            "INSERT INTO sections(sections, rank) VALUES(?1, ?2)",
            params![name, value],
        )?;
    }
    Ok(conn)
}

fn insert_rows<R: Borrow<Row>>(
    conn: &mut Connection,
    rows: impl Iterator<Item = R>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare(
            "INSERT INTO sections (heading, body, path, anchor, start_line, end_line) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for r in rows {
            let r = r.borrow();
            stmt.execute(params![r.heading, r.body, r.path, r.anchor, r.start, r.end])?;
        }
    }
    tx.commit()
}

/// User+system CPU of this process (all threads, dead ones included), from /proc; 0 elsewhere.
fn cpu_ms() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `)` that ends the command name: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
    // USER_HZ is 100 on every Linux this runs on.
    (ticks(11) + ticks(12)) * 10.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(v: &[f64]) -> f64 {
    percentile(v, 50.0)
}

/// Nearest-rank percentile; NaN for no samples.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

fn rounded(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.round()).collect()
}

fn verdict(met: bool, aim: &str) -> String {
    let word = if met { "met" } else { "MISSED" };
    if aim.is_empty() {
        word.into()
    } else {
        format!("{word} ({aim})")
    }
}
