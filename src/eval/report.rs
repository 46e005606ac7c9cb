//! What an eval run reports: a per-category table on stdout, JUnit XML for CI systems, JSON.

use std::collections::BTreeMap;
use std::io::Write;

use quick_xml::Writer;
use quick_xml::events::{BytesCData, BytesDecl, BytesEnd, BytesStart, Event};

use super::run::CaseResult;

/// Counts for one category.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Tally {
    /// Cases run.
    pub cases: usize,
    /// Cases whose checks all held.
    pub passed: usize,
    /// Must-hold cases that failed.
    pub must_hold_failed: usize,
    /// Quality cases that failed.
    pub quality_failed: usize,
    /// Cases that broke an invariant (whichever model answers, these are failures).
    pub breaches: usize,
}

/// Counts per category, in name order.
pub fn tallies(results: &[CaseResult]) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for r in results {
        let t = out.entry(r.category.clone()).or_default();
        t.cases += 1;
        t.breaches += usize::from(r.breach);
        match (r.passed, r.must_hold) {
            (true, _) => t.passed += 1,
            (false, true) => t.must_hold_failed += 1,
            (false, false) => t.quality_failed += 1,
        }
    }
    out
}

/// The per-category table, then every failure.
pub fn table(results: &[CaseResult], out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "\n| category | cases | passed | pass rate | breaches | must-hold failed | quality failed |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|")?;
    let row = |out: &mut dyn Write, name: &str, t: Tally| {
        writeln!(
            out,
            "| {name} | {} | {} | {:.0}% | {} | {} | {} |",
            t.cases,
            t.passed,
            rate(t),
            t.breaches,
            t.must_hold_failed,
            t.quality_failed
        )
    };
    let mut total = Tally::default();
    for (name, t) in tallies(results) {
        row(out, &name, t)?;
        total.cases += t.cases;
        total.passed += t.passed;
        total.breaches += t.breaches;
        total.must_hold_failed += t.must_hold_failed;
        total.quality_failed += t.quality_failed;
    }
    row(out, "**all**", total)?;
    for r in results.iter().filter(|r| !r.passed) {
        let kind = if r.breach {
            "BREACH"
        } else if r.must_hold {
            "MUST-HOLD"
        } else {
            "quality"
        };
        writeln!(out, "\nFAIL [{kind}] {}/{} (stop: {})", r.category, r.name, r.stop)?;
        for failure in &r.failures {
            writeln!(out, "  - {failure}")?;
        }
    }
    writeln!(out, "\n{} passed, {} failed", total.passed, total.cases - total.passed)
}

/// `text` with the characters XML 1.0 cannot hold (most C0 controls) replaced by U+FFFD.
fn xml_safe(text: &str) -> String {
    text.chars().map(|c| if c < ' ' && !matches!(c, '\t' | '\n' | '\r') { '\u{FFFD}' } else { c }).collect()
}

fn rate(t: Tally) -> f64 {
    if t.cases == 0 { 100.0 } else { 100.0 * t.passed as f64 / t.cases as f64 }
}

/// Why the JUnit XML could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write JUnit XML: {0}")]
pub struct JunitError(#[source] std::io::Error);

/// JUnit XML: one `testsuite` per category, one `testcase` per case.
pub fn junit(results: &[CaseResult]) -> Result<Vec<u8>, JunitError> {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    let xml = JunitError;
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None))).map_err(xml)?;
    let tallies = tallies(results);
    let total_failed = results.iter().filter(|r| !r.passed).count();
    let mut suites = BytesStart::new("testsuites");
    suites.push_attribute(("name", "docs-agent eval"));
    suites.push_attribute(("tests", results.len().to_string().as_str()));
    suites.push_attribute(("failures", total_failed.to_string().as_str()));
    writer.write_event(Event::Start(suites)).map_err(xml)?;
    for (category, tally) in &tallies {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| &r.category == category).collect();
        let seconds: f64 = cases.iter().map(|r| r.ms as f64 / 1000.0).sum();
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", xml_safe(category).as_str()));
        suite.push_attribute(("tests", tally.cases.to_string().as_str()));
        suite.push_attribute(("failures", (tally.cases - tally.passed).to_string().as_str()));
        suite.push_attribute(("errors", "0"));
        suite.push_attribute(("time", format!("{seconds:.3}").as_str()));
        writer.write_event(Event::Start(suite)).map_err(xml)?;
        for r in cases {
            let mut case = BytesStart::new("testcase");
            case.push_attribute(("classname", xml_safe(&format!("eval.{}", r.category)).as_str()));
            case.push_attribute(("name", xml_safe(&r.name).as_str()));
            case.push_attribute(("time", format!("{:.3}", r.ms as f64 / 1000.0).as_str()));
            if r.passed {
                writer.write_event(Event::Empty(case)).map_err(xml)?;
                continue;
            }
            writer.write_event(Event::Start(case)).map_err(xml)?;
            let mut failure = BytesStart::new("failure");
            let kind = if r.must_hold { "must-hold" } else { "quality" };
            failure.push_attribute(("type", kind));
            failure.push_attribute(("message", xml_safe(r.failures.first().map_or("failed", String::as_str)).as_str()));
            writer.write_event(Event::Start(failure)).map_err(xml)?;
            let body = xml_safe(&r.failures.join("\n")).replace("]]>", "]] >");
            writer.write_event(Event::CData(BytesCData::new(body))).map_err(xml)?;
            writer.write_event(Event::End(BytesEnd::new("failure"))).map_err(xml)?;
            writer.write_event(Event::End(BytesEnd::new("testcase"))).map_err(xml)?;
        }
        writer.write_event(Event::End(BytesEnd::new("testsuite"))).map_err(xml)?;
    }
    writer.write_event(Event::End(BytesEnd::new("testsuites"))).map_err(xml)?;
    Ok(writer.into_inner())
}

/// The results and tallies as JSON.
pub fn json(results: &[CaseResult]) -> Result<Vec<u8>, serde_json::Error> {
    let value = serde_json::json!({ "categories": tallies(results), "cases": results });
    serde_json::to_vec_pretty(&value)
}
