//! The module graph against ARCHITECTURE.md's layer diagram, read from the source alone
//! (nothing is run): every `crate::`, `super::` and `self::` path in code that is not a test
//! (comments, `tests.rs` files and everything from a `#[cfg(test)]` line on are left out).
//!
//! - A top-level module uses only modules on the diagram's rows below its own.
//! - Every top-level module is on the diagram, and every name on it is a module.
//! - Inside a top-level module, the modules one level down form no cycle either, except the
//!   ones ARCHITECTURE.md lists under "Cycles kept on purpose", each with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root: `["session", "store", "postgres"]`.
type ModPath = Vec<String>;

/// One use of another module: from, to, and the file that makes it.
#[derive(Debug)]
struct Edge {
    from: ModPath,
    to: ModPath,
    file: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The module path of a source file: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`.
fn module_of(file: &Path) -> ModPath {
    let relative = file.strip_prefix(root().join("src")).expect("a file under src/");
    let mut parts: ModPath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// True when `path` names a module (a file or a folder with a `mod.rs`).
fn is_module(path: &[String]) -> bool {
    let mut file = root().join("src");
    for part in path {
        file.push(part);
    }
    file.with_extension("rs").is_file() || file.join("mod.rs").is_file()
}

/// The source files of the library: `src/**/*.rs` but the binaries' roots and test files.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).expect("src/ is readable").flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("src"), &mut files);
    files.retain(|f| !matches!(module_of(f).as_slice(), [] | [_] if f.ends_with("lib.rs") || f.ends_with("main.rs")));
    files
}

/// The code of a file without its comments and its tests: the item after each `#[cfg(test)]`
/// (a `mod tests;` line, or a block to its closing brace).
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = match line.find("//") {
            // `//` inside a string (a URL) is rare in paths that matter; a comment is cut.
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        if line.trim_start().starts_with("#[cfg(test)]") {
            let mut depth = 0i64;
            for skipped in lines.by_ref() {
                depth += skipped.matches('{').count() as i64 - skipped.matches('}').count() as i64;
                let done = skipped.trim_end().ends_with(';') || skipped.trim_end().ends_with('}');
                if depth <= 0 && done && !skipped.trim_start().starts_with("#[") {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Reads a use tree at `text`: `a::b`, `a::{b, c::d}`, `a::b::{self, c}`; every path it names,
/// each as its segments.
fn paths(text: &str) -> Vec<ModPath> {
    fn tree(chars: &[char], at: &mut usize, prefix: &ModPath, out: &mut Vec<ModPath>) {
        let mut path = prefix.clone();
        loop {
            while *at < chars.len() && chars[*at].is_whitespace() {
                *at += 1;
            }
            if *at < chars.len() && chars[*at] == '{' {
                *at += 1;
                loop {
                    tree(chars, at, &path, out);
                    while *at < chars.len() && chars[*at].is_whitespace() {
                        *at += 1;
                    }
                    match chars.get(*at) {
                        Some(',') => *at += 1,
                        Some('}') => {
                            *at += 1;
                            return;
                        }
                        _ => return,
                    }
                    while *at < chars.len() && chars[*at].is_whitespace() {
                        *at += 1;
                    }
                    if chars.get(*at) == Some(&'}') {
                        *at += 1;
                        return;
                    }
                }
            }
            let start = *at;
            while *at < chars.len() && (chars[*at].is_alphanumeric() || chars[*at] == '_') {
                *at += 1;
            }
            if start == *at {
                break;
            }
            let segment: String = chars[start..*at].iter().collect();
            if segment != "self" {
                path.push(segment);
            }
            if chars.get(*at) == Some(&':') && chars.get(*at + 1) == Some(&':') {
                *at += 2;
            } else {
                break;
            }
        }
        out.push(path);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &Vec::new(), &mut out);
    out
}

/// Every module-to-module use in the library, resolved to the longest prefix that is a module.
fn edges() -> Vec<Edge> {
    let start = regex::Regex::new(r"\b(crate::|(?:super::)+|self::)").expect("a valid regex");
    let mut edges = Vec::new();
    for file in sources() {
        let from = module_of(&file);
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        let code = code(&text);
        for found in start.find_iter(&code) {
            let anchor = found.as_str();
            let base: ModPath = if anchor.starts_with("crate") {
                Vec::new()
            } else if anchor.starts_with("self") {
                from.clone()
            } else {
                // A `mod.rs` is its folder's module: `super` from it is the folder's parent.
                let ups = anchor.matches("super").count();
                from[..from.len().saturating_sub(ups)].to_vec()
            };
            for tail in paths(&code[found.end()..]) {
                let mut full = base.clone();
                full.extend(tail);
                while !full.is_empty() && !is_module(&full) {
                    full.pop();
                }
                if !full.is_empty() {
                    edges.push(Edge {
                        from: from.clone(),
                        to: full,
                        file: file.strip_prefix(root()).unwrap_or(&file).display().to_string(),
                    });
                }
            }
        }
    }
    edges
}

/// The rows of ARCHITECTURE.md's layer diagram, top first: the block after `## Layers`,
/// one row per line, `label  module module ...`, the label ending at two spaces.
fn layers() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable");
    let after = text.split("\n## Layers").nth(1).expect("ARCHITECTURE.md has a `## Layers` section");
    let block = after.split("```text\n").nth(1).and_then(|b| b.split("```").next()).expect("a ```text block");
    block
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with(' '))
        .map(|line| {
            let modules = line.split_once("  ").map_or("", |(_, rest)| rest);
            let modules = modules.split('(').next().unwrap_or("");
            modules.split_whitespace().filter(|w| *w != "·").map(str::to_string).collect()
        })
        .collect()
}

/// Strongly connected components with more than one node (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for next in w.graph.get(v).into_iter().flatten() {
            let next = next.as_str();
            if !w.index.contains_key(next) {
                visit(w, next);
                let low = w.low[v].min(w.low[next]);
                w.low.insert(v, low);
            } else if w.stack.contains(&next) {
                let low = w.low[v].min(w.index[next]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(top) = w.stack.pop() {
                component.push(top.to_string());
                if top == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    let nodes: BTreeSet<&str> =
        graph.iter().flat_map(|(k, v)| std::iter::once(k.as_str()).chain(v.iter().map(String::as_str))).collect();
    for node in nodes {
        if !walk.index.contains_key(node) {
            visit(&mut walk, node);
        }
    }
    walk.found
}

#[test]
fn the_use_tree_reader_expands_groups_and_self() {
    let read = |t: &str| paths(t).into_iter().map(|p| p.join("::")).collect::<Vec<_>>();
    assert_eq!(read("a::b::{self, c::d, e::{f, g}};"), ["a::b", "a::b::c::d", "a::b::e::f", "a::b::e::g"]);
    assert_eq!(read("{x, y::z}"), ["x", "y::z"]);
    assert_eq!(read("guard::scrub(&text)"), ["guard::scrub"]);
    assert_eq!(read("{a,\n    b,\n}"), ["a", "b"]);
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_only_one() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
            .collect();
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
}

#[test]
fn the_comment_and_test_stripper_keeps_only_code() {
    let text = "use crate::a; // uses crate::b\n/// see crate::c\nlet u = \"http://x\";\n#[cfg(test)]\nmod tests;\n\
                use crate::e;\n#[cfg(test)]\nmod inline {\n    use crate::d;\n    fn f() {}\n}\nuse crate::g;\n";
    let kept = code(text);
    assert!(["crate::a", "http://x", "crate::e", "crate::g"].iter().all(|k| kept.contains(k)), "{kept}");
    assert!(!kept.contains("crate::b") && !kept.contains("crate::c") && !kept.contains("crate::d"), "{kept}");
}

#[test]
fn top_level_modules_use_only_the_rows_below_their_own() {
    let rows = layers();
    let row_of: BTreeMap<&str, usize> =
        rows.iter().enumerate().flat_map(|(i, row)| row.iter().map(move |m| (m.as_str(), i))).collect();
    let mut problems = Vec::new();
    for name in row_of.keys() {
        if !is_module(&[name.to_string()]) {
            problems.push(format!("`{name}` is on the layer diagram but src/ has no such module"));
        }
    }
    let tops: BTreeSet<String> = sources().iter().map(|f| module_of(f)[0].clone()).collect();
    for top in &tops {
        if !row_of.contains_key(top.as_str()) {
            problems
                .push(format!("src/{top} is not on ARCHITECTURE.md's layer diagram: put it on the row of its layer"));
        }
    }
    let mut seen = BTreeSet::new();
    for edge in edges() {
        let (from, to) = (&edge.from[0], &edge.to[0]);
        if from == to {
            continue;
        }
        let (Some(&a), Some(&b)) = (row_of.get(from.as_str()), row_of.get(to.as_str())) else { continue };
        if a >= b && seen.insert((from.clone(), to.clone(), edge.file.clone())) {
            problems.push(format!(
                "{}: `{from}` uses `{to}`, which is {} on the layer diagram",
                edge.file,
                if a == b { "on its own row" } else { "above it" }
            ));
        }
    }
    assert!(problems.is_empty(), "the module graph breaks ARCHITECTURE.md's layers:\n{}", problems.join("\n"));
}

#[test]
fn no_cycle_between_the_modules_inside_a_top_level_module() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable");
    let kept_section = text.split("\n### Cycles kept on purpose").nth(1).unwrap_or("");
    let kept_section = kept_section.split("\n## ").next().unwrap_or("");
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for edge in edges() {
        if edge.from.len() >= 2 && edge.to.len() >= 2 && edge.from[0] == edge.to[0] && edge.from[1] != edge.to[1] {
            let (top, a, b) = (&edge.from[0], &edge.from[1], &edge.to[1]);
            graphs.entry(top.clone()).or_default().entry(a.clone()).or_default().insert(b.clone());
        }
    }
    let mut problems = Vec::new();
    for (top, graph) in &graphs {
        for cycle in cycles(graph) {
            let named = cycle.iter().map(|m| format!("{top}::{m}")).collect::<Vec<_>>().join(" <-> ");
            let listed = kept_section.lines().any(|l| l.contains(&format!("`{named}`")));
            if !listed {
                problems.push(named);
            }
        }
    }
    assert!(
        problems.is_empty(),
        "cycles inside a module that ARCHITECTURE.md does not argue for under \"Cycles kept on purpose\":\n{}",
        problems.join("\n")
    );
}
