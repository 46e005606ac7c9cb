//! Citation check for answers: a model can cite a page it never read (invented, or planted by an
//! injection). Every `docs/…md` mention in the answer is checked against the sources the tools
//! actually returned in this run; one that was never retrieved is marked, so the reader knows
//! it is not backed by the docs the harness showed the model.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// What follows a citation the run never retrieved.
pub const UNVERIFIED: &str = " [unverified citation]";

/// A docs path of any type the index reads, optionally with an anchor, as answers cite them.
/// The extensions go longest first, so `a.mdx` is not read as `a.md`.
static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    let mut extensions = crate::doc_kind::EXTENSIONS.to_vec();
    extensions.sort_by_key(|e| std::cmp::Reverse(e.len()));
    // An anchor is a heading's slug, or `page=N` in a PDF.
    let pattern = format!(r"docs/[A-Za-z0-9_./-]+\.(?:{})(?:#[A-Za-z0-9_=-]*)?", extensions.join("|"));
    Regex::new(&pattern).expect("the citation pattern is built from constant extensions")
});

/// The files (without anchors) of every fenced result in a tool's output.
pub fn sources_in(tool_output: &str) -> impl Iterator<Item = String> + '_ {
    handles_in(tool_output).map(|source| source.split('#').next().unwrap_or("").to_string())
}

/// The sources (`path#anchor`) of every fenced result in a tool's output.
pub fn handles_in(tool_output: &str) -> impl Iterator<Item = String> + '_ {
    super::fence::found_in(tool_output).map(|found| found.source)
}

/// Every `docs/…md[#anchor]` the answer cites, in order, once each.
pub fn cited(answer: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in CITATION.find_iter(answer) {
        if !out.iter().any(|c| c == m.as_str()) {
            out.push(m.as_str().to_string());
        }
    }
    out
}

/// `text` with every citation taken out (each replaced by a space).
pub fn without_citations(text: &str) -> Cow<'_, str> {
    CITATION.replace_all(text, " ")
}

/// Marks every cited docs file that is not in `retrieved`.
pub fn mark_unverified<'a>(answer: &'a str, retrieved: &BTreeSet<String>) -> Cow<'a, str> {
    let unverified: Vec<_> = CITATION
        .find_iter(answer)
        .filter(|m| {
            let path = m.as_str().split('#').next().unwrap_or("");
            !retrieved.contains(path)
        })
        .collect();
    if unverified.is_empty() {
        return Cow::Borrowed(answer);
    }
    let mut out = String::with_capacity(answer.len() + unverified.len() * UNVERIFIED.len());
    let mut at = 0;
    for m in unverified {
        out.push_str(&answer[at..m.end()]);
        out.push_str(UNVERIFIED);
        at = m.end();
    }
    out.push_str(&answer[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_only_what_was_never_retrieved() {
        let output = "2 sections:\n<untrusted source=\"docs/refunds.md#window\">\nx\n</untrusted>\n\
                      <untrusted source=\"docs/admin/roles.md\">\ny\n</untrusted>";
        let retrieved: BTreeSet<String> = sources_in(output).collect();
        assert_eq!(
            retrieved.iter().map(String::as_str).collect::<Vec<_>>(),
            ["docs/admin/roles.md", "docs/refunds.md"]
        );
        let cases: &[(&str, &str)] = &[
            ("See docs/refunds.md#window.", "See docs/refunds.md#window."),
            ("See docs/refunds.md#how-to-issue.", "See docs/refunds.md#how-to-issue."),
            ("Per docs/admin/roles.md, yes.", "Per docs/admin/roles.md, yes."),
            ("See docs/guide.mdx#setup.", "See docs/guide.mdx#setup [unverified citation]."),
            (
                "See docs/page.html and docs/a.txt",
                "See docs/page.html [unverified citation] and docs/a.txt [unverified citation]",
            ),
            (
                "Per docs/secret-roadmap.md#launch and docs/refunds.md.",
                "Per docs/secret-roadmap.md#launch [unverified citation] and docs/refunds.md.",
            ),
            ("[x](docs/taxes.md)", "[x](docs/taxes.md [unverified citation])"),
            ("No citations at all.", "No citations at all."),
        ];
        for (answer, expected) in cases {
            assert_eq!(mark_unverified(answer, &retrieved), *expected, "answer {answer:?}");
        }
    }
}
