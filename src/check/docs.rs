//! The docs part of `docs-agent check`: problems a docs team can fix, each with file and line:
//! front matter that is not valid YAML, a code fence that is never closed (everything after it
//! would be hidden from search), and relative links to a page or anchor that does not exist
//! (so citations would point nowhere).

use std::collections::{HashMap, HashSet};

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag};

use super::Problem;
use crate::doc_kind::DocKind;
use crate::index::walk::DocFile;
use crate::index::{formats, mdx};

/// Checks every file; `files` are the readable docs found by the index walk. Markdown and MDX
/// get every check (MDX once its JSX is removed, on the same lines); an MDX file the MDX parser
/// rejects is reported; text and HTML files only provide anchors for links.
pub fn check_docs(files: &[DocFile]) -> Vec<Problem> {
    let anchors: HashMap<&str, HashSet<String>> = files
        .iter()
        .map(|f| (f.path.as_str(), formats::chunk_file(&f.path, &f.text).into_iter().map(|c| c.anchor).collect()))
        .collect();
    let mut problems = Vec::new();
    for file in files {
        match DocKind::of(&file.path) {
            Some(DocKind::Markdown) | None => {
                front_matter(file, &mut problems);
                fences_and_links(file, &file.text, &anchors, &mut problems);
            }
            Some(DocKind::Mdx) => match mdx::to_markdown(&file.text) {
                Ok(markdown) => {
                    front_matter(file, &mut problems);
                    fences_and_links(file, &markdown, &anchors, &mut problems);
                }
                Err(e) => problems.push(Problem {
                    file: file.path.clone(),
                    line: None,
                    message: format!("{e}; it is indexed as Markdown, JSX and all, until it is fixed"),
                }),
            },
            Some(DocKind::Text | DocKind::Html | DocKind::Pdf) => {}
        }
    }
    problems
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

fn problem(file: &DocFile, line: usize, message: String) -> Problem {
    Problem { file: file.path.clone(), line: Some(line), message }
}

fn front_matter(file: &DocFile, problems: &mut Vec<Problem>) {
    let text = file.text.trim_start_matches('\u{feff}');
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return;
    };
    let Some(end) = rest.find("\n---") else {
        return problems.push(problem(file, 1, "front matter starts with `---` but is never closed".into()));
    };
    if let Err(e) = yaml_serde::from_str::<yaml_serde::Value>(&rest[..end]) {
        let line = e.location().map_or(1, |l| l.line() + 1);
        problems.push(problem(file, line, format!("front matter is not valid YAML: {e}")));
    }
}

fn fences_and_links(file: &DocFile, text: &str, anchors: &HashMap<&str, HashSet<String>>, problems: &mut Vec<Problem>) {
    let options =
        Options::ENABLE_YAML_STYLE_METADATA_BLOCKS | Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let block = &text[range.clone()];
                let opener: String = block.trim_start().chars().take_while(|c| *c == '`' || *c == '~').collect();
                let closed = block.trim_end().lines().count() > 1
                    && block.trim_end().lines().last().is_some_and(|l| l.trim().starts_with(&opener));
                if !closed && range.end >= text.trim_end().len() {
                    let line = line_of(text, range.start);
                    problems.push(problem(
                        file,
                        line,
                        format!("code fence opened with {opener} is never closed; the rest of the file is code"),
                    ));
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                if let Some(message) = broken_link(&file.path, &dest_url, anchors) {
                    problems.push(problem(file, line_of(text, range.start), message));
                }
            }
            _ => {}
        }
    }
}

/// Why a relative link to a document or anchor is broken, if it is.
fn broken_link(from: &str, dest: &str, anchors: &HashMap<&str, HashSet<String>>) -> Option<String> {
    if dest.contains("://") || dest.starts_with("mailto:") || dest.starts_with('/') {
        return None;
    }
    let (page, anchor) = dest.split_once('#').map_or((dest, None), |(p, a)| (p, Some(a)));
    let target = if page.is_empty() {
        from.to_string()
    } else {
        DocKind::of(page)?;
        resolve(from, page)?
    };
    let Some(known) = anchors.get(target.as_str()) else {
        return Some(format!("link to `{dest}`: {target} does not exist"));
    };
    match anchor {
        Some(a) if !a.is_empty() && !known.contains(a) => {
            Some(format!("link to `{dest}`: {target} has no heading with anchor `#{a}`"))
        }
        _ => None,
    }
}

/// `docs/a/b.md` + `../c.md` → `docs/c.md`; `None` when the link climbs out of the workspace.
fn resolve(from: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, text: &str) -> DocFile {
        DocFile { path: path.into(), text: text.into() }
    }

    #[test]
    fn reports_docs_problems_with_lines() {
        let files = vec![
            doc("docs/a.md", "# A\n\n## Window\ntext\n"),
            doc(
                "docs/sub/b.md",
                "# B\n\nSee [a](../a.md#window) and [x](../a.md#nope).\n\n[gone](missing.md)\n[web](https://x.example/a.md)\n",
            ),
            doc("docs/c.md", "---\ntitle: [unclosed\n---\n# C\n\n```bash\n# not a heading\n"),
            doc("docs/d.md", "# D\n\n```\ncode\n```\n\n[self](#d) [bad](#zzz)\n"),
        ];
        let got: Vec<String> = check_docs(&files).iter().map(|p| p.to_string()).collect();
        let expected_fragments = [
            "docs/sub/b.md:3: link to `../a.md#nope`: docs/a.md has no heading with anchor `#nope`",
            "docs/sub/b.md:5: link to `missing.md`: docs/sub/missing.md does not exist",
            "docs/c.md:3: front matter is not valid YAML",
            "docs/c.md:6: code fence opened with ``` is never closed",
            "docs/d.md:7: link to `#zzz`",
        ];
        for fragment in expected_fragments {
            assert!(got.iter().any(|g| g.contains(fragment)), "missing {fragment:?} in {got:#?}");
        }
        assert_eq!(got.len(), expected_fragments.len(), "{got:#?}");
    }

    #[test]
    fn resolves_relative_paths() {
        assert_eq!(resolve("docs/a/b.md", "../c.md").as_deref(), Some("docs/c.md"));
        assert_eq!(resolve("docs/b.md", "./x/y.md").as_deref(), Some("docs/x/y.md"));
        assert_eq!(resolve("docs/b.md", "../../../x.md"), None);
    }
}
