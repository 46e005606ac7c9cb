//! `docs-agent report gaps`: the docs' gaps ([`crate::report::gaps`]) on the terminal, or as JSON.

use std::io::Write;

use super::args::{Global, ReportWhat};
use super::{Exit, Failure};
use crate::report::gaps::{self, Gap};

/// Longest question or comment shown on a terminal.
const SHOWN_CHARS: usize = 160;
/// Other wordings of a gap shown on a terminal.
const WORDINGS: usize = 3;

/// Runs `report WHAT`.
pub fn run(global: &Global, serve: bool, what: ReportWhat) -> Result<Exit, Failure> {
    let ReportWhat::Gaps { days, limit, json } = what;
    let config = super::load_log_config(global, serve)?;
    super::sandbox::enter(global, &super::sandbox::for_workspace(&config, super::sandbox::Use::Converse)?)?;
    let log = super::sessions::open_log(&config)?;
    let found = gaps::report(&log, days, &|_| true).map_err(|e| (Exit::Failure, e.to_string()))?;
    let mut out = crate::guard::sink::stdout();
    let written = if json {
        let body = gaps::json(&found, days, limit);
        writeln!(out, "{body}")
    } else {
        write!(out, "{}", text(&found, days, limit))
    };
    written.map_err(|e| (Exit::Failure, format!("cannot write the report: {e}")))?;
    Ok(Exit::Ok)
}

/// The report, readable.
fn text(found: &[Gap], days: u64, limit: usize) -> String {
    let clip = |t: &str| crate::guard::clip(&t.replace('\n', " "), SHOWN_CHARS);
    if found.is_empty() {
        return format!("No unanswered questions in the last {days} days.\n");
    }
    let questions: usize = found.iter().map(|g| g.count).sum();
    let mut out = format!(
        "{} unanswered question(s) in the last {days} days, in {} group(s), most asked first:\n",
        questions,
        found.len()
    );
    for (n, gap) in found.iter().take(limit).enumerate() {
        let reasons: Vec<String> = gap.reasons.iter().map(|(r, k)| format!("{} {k}", r.as_str())).collect();
        out.push_str(&format!(
            "\n{}. \"{}\" asked {}x ({})\n",
            n + 1,
            clip(&gap.question),
            gap.count,
            reasons.join(", ")
        ));
        let mut others: Vec<&str> = Vec::new();
        for asked in gap.asked.iter().skip(1) {
            if asked.question != gap.question && !others.contains(&asked.question.as_str()) {
                others.push(&asked.question);
            }
        }
        if !others.is_empty() {
            let shown: Vec<String> = others.iter().take(WORDINGS).map(|q| format!("\"{}\"", clip(q))).collect();
            out.push_str(&format!("   also asked as: {}\n", shown.join(", ")));
        }
        if gap.closest.is_empty() {
            out.push_str("   closest sections: none (no search found anything)\n");
        } else {
            let closest: Vec<String> = gap.closest.iter().map(|c| format!("{} ({})", c.section, c.questions)).collect();
            out.push_str(&format!("   closest sections: {}\n", closest.join(", ")));
        }
        for asked in gap.asked.iter().filter(|a| !a.comment.is_empty()).take(WORDINGS) {
            out.push_str(&format!("   comment: \"{}\" (session {})\n", clip(&asked.comment), asked.session));
        }
    }
    if found.len() > limit {
        out.push_str(&format!("\n{} more group(s); --limit shows more.\n", found.len() - limit));
    }
    out
}
