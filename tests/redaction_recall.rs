//! The recall corpus of `cargo bench --bench redaction`, held to its aim: at least 99% of the
//! generated secrets (hundreds, in more than 150 formats, each in a few contexts) are redacted,
//! and no near miss (UUIDs, SHAs, hashes, slugs, base64 images, versions, publishable keys,
//! placeholders) is touched, by the library and by the real binary's `redact` command.

mod common;
#[path = "../benches/redaction/corpus.rs"]
mod corpus;

use docs_agent::guard::redact::redact;

const SEED: u64 = 20_261_202;

#[test]
fn the_corpus_is_as_broad_as_the_aim() {
    let cases = corpus::cases(SEED, 3);
    assert!(corpus::FORMATS.len() >= 150, "{} formats", corpus::FORMATS.len());
    assert!(cases.len() >= 400, "{} secrets", cases.len());
    assert!(corpus::near_misses(SEED, 3).len() >= 150);
}

#[test]
fn at_least_99_percent_of_generated_secrets_are_redacted() {
    let cases = corpus::cases(SEED, 3);
    let missed: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let output = redact(&case.text);
            let left = case.survivors(&output);
            (!left.is_empty()).then(|| format!("{}: {:?} -> {output:?}", case.format, case.text))
        })
        .collect();
    let recall = 1.0 - missed.len() as f64 / cases.len() as f64;
    assert!(recall >= 0.99, "recall {recall:.3}; missed:\n{}", missed.join("\n"));
}

#[test]
fn no_near_miss_is_touched() {
    let flagged: Vec<String> = corpus::near_misses(SEED ^ 0x5eed, 3)
        .iter()
        .filter_map(|text| {
            let output = redact(text);
            (output != *text).then(|| format!("{text:?} -> {output:?}"))
        })
        .collect();
    assert!(flagged.is_empty(), "{} false positives:\n{}", flagged.len(), flagged.join("\n"));
}

/// The same corpus through `docs-agent redact`, one process for all of it: what the binary
/// prints holds none of the secrets, and the near misses come out as they went in.
#[test]
fn the_binary_redacts_the_corpus_and_keeps_the_near_misses() {
    let workspace = common::sample_workspace();
    let cases = corpus::cases(SEED + 1, 2);
    let input: String = cases.iter().map(|case| format!("{}\n\n", case.text)).collect();
    let run = common::run_input(workspace.path(), &[], &["redact"], &input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let missed: Vec<&str> =
        cases.iter().filter(|case| !case.survivors(&run.stdout).is_empty()).map(|c| c.format).collect();
    let recall = 1.0 - missed.len() as f64 / cases.len() as f64;
    assert!(recall >= 0.99, "recall {recall:.3} through the binary; missed {missed:?}");

    let near: String = corpus::near_misses(SEED + 1, 2).iter().map(|text| format!("{text}\n\n")).collect();
    let run = common::run_input(workspace.path(), &[], &["redact"], &near);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let changed: Vec<(&str, &str)> =
        near.lines().zip(run.stdout.lines()).filter(|(before, after)| before != after).collect();
    assert!(changed.is_empty(), "near misses changed by the binary: {changed:?}");
    assert_eq!(near.lines().count(), run.stdout.lines().count());
}

/// Quoted secrets written with escapes (`\\`, `\"`), as JSON and shells write them, come out of
/// the binary with no piece of them left: neither the part before the escape nor the tail.
#[test]
fn quoted_secrets_with_escapes_leave_no_piece_through_the_binary() {
    let cases: [(&str, &[&str]); 4] = [
        (r#"{"password": "Tr0ub4dor\\3xyzzyQ"}"#, &["Tr0ub4dor", "3xyzzyQ"]),
        (r#"{"api_key": "a8Fk3LqZ\"0vXw9TmB2nRc"}"#, &["a8Fk3LqZ", "0vXw9TmB2nRc"]),
        (r#"password: "correct horse\" battery staple""#, &["correct horse", "battery staple"]),
        (r#"tool login --password "k3y with\\ space9" --verbose"#, &["k3y with", "space9"]),
    ];
    let workspace = common::sample_workspace();
    let input: String = cases.iter().map(|(text, _)| format!("{text}\n\n")).collect();
    let run = common::run_input(workspace.path(), &[], &["redact"], &input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (text, pieces) in cases {
        for piece in pieces {
            assert!(!run.stdout.contains(piece), "{piece:?} of {text:?} is left:\n{}", run.stdout);
        }
    }
}
