//! The redactor's tests: every rule on its own samples (see [`super::rules`]), the catalog's
//! shape, and the properties of [`redact`] and [`redact_truncated`] on any input.

use super::*;

/// Ordinary text that must come back untouched, and borrowed.
const NEGATIVES: &[&str] = &[
    "password:\n  policy: strict\n  rotation: 90d",
    "password:\n\n## Next heading",
    // Found by the eval pack (over-redaction), each once redacted:
    "Reset your password: https://acme.example/account/reset",
    "Password: case-sensitive",
    "password: administrators",
    "Secret: confidential",
    "see https://acme.example/help/risk-admin-settings-2024-overview",
    "Bearer 2024-01-15 release notes",
    "request 550e8400-e29b-41d4-a716-446655440000 failed",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "a risk-based approach for desk-based work in the task-list view",
    "desk-test-environment, risk_live_monitoring_dashboard, desk-admin-configuration-guide",
    "publishable pk_live_51H0abcdEFGHijklMNOP and pk_test_TYooMQauvdEDq54NiTphI7jx",
    "see https://example.com/path?query=1#frag and http://localhost:8080/api",
    "ssh://git@github.com/owner/repo and git@github.com:owner/repo.git",
    "write to jane.doe@example.com or mailto:someone@example.com",
    "Bearer tokens are described in RFC 6750.",
    "Use Bearer authentication; the bearer of the token is trusted.",
    "Authorization: Bearer <TOKEN>",
    "-H \"Authorization: Bearer $POLAR_OAT\"",
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "password: see the admin panel",
    "password: \"<your password>\" and passphrase = '${PASSPHRASE}'",
    "the Password field says \"Enter your password\"",
    "Password: administrators choose it during setup",
    "  accessToken: process.env.POLAR_ACCESS_TOKEN,",
    "token: session.token",
    "  webhookSecret: POLAR_WEBHOOK_SECRET,",
    "  accessToken: polarAccessToken,",
    "token=\"<YOUR_BEARER_TOKEN_HERE>\"",
    "SECRET=\"${WEBHOOK_SECRET}\" and password=$DB_PASSWORD",
    "secret=os.getenv('POLAR_WEBHOOK_SECRET')",
    "$clientSecret = ConvertTo-SecureString -String $secret -AsPlainText",
    "Basic authentication is supported. [Change Basic Settings](ui-change-basic-settings.md)",
    "# Heading\n\n- item **bold** `code` [link](https://example.com/docs)\n\n| a | b |\n|---|---|",
    "12345678901234567890 and 3.14159 and 2024-01-15T10:30:00Z",
    "The file starts with `-----BEGIN PRIVATE KEY-----` and ends with the END line.",
    "max_tokens: 4096, token_type: Bearer, tokens: 100000",
    "password-reset flow; the Password field; Token: string",
    "eyJ is how a JWT starts",
    "  accessToken: process.env.POLAR_ACCESS_TOKEN!, webhookSecret: Deno.env.get('X'),",
    "  accessToken: process.env[\"POLAR_ACCESS_TOKEN\"] ?? \"\",",
    "  accessToken: POLAR_ACCESS_TOKEN(),",
    "        $signingSecret = base64_encode($config->signingSecret);",
    "POLAR_ACCESS_TOKEN=\"polar_pat_...\" and \"access_token\": \"polar_at_XXX\", \"id_token\": \"ID_TOKEN\"",
    "Authorization: Bearer polar_oat_xxxxxxxxxxxxxxxxx",
    "héllo wörld 😀 ünïcödé",
    "",
];

/// Emoji, accents and secrets mixed, for the cut-point sweep and idempotence.
const MIXED: &str = "😀 héllo token=\"hunter2hunter2\" ✨ AKIAIOSFODNN7EXAMPLE café \
    postgres://u:pässwörd1@db 🎉 ghp_1234567890abcdefghijklmnopqrstuvwxyz ü\n\
    -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC 😀";

/// The secrets of [`MIXED`].
const MIXED_SECRETS: &[&str] = &[
    "hunter2hunter2",
    "AKIAIOSFODNN7EXAMPLE",
    "pässwörd1",
    "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
];

/// The first piece of `secret` of `len` bytes that `output` still shows.
fn leaked<'a>(output: &str, secret: &'a str, len: usize) -> Option<&'a str> {
    (0..=secret.len().saturating_sub(len))
        .filter_map(|start| secret.get(start..start + len))
        .find(|piece| output.contains(piece))
}

/// Checks a cut result: a prefix of the full redaction, marked when cut.
fn check_cut(text: &str, max: usize, output: &str) {
    let full = redact(text);
    if max >= full.len() {
        assert_eq!(output, full, "max {max}");
        return;
    }
    let head = output.strip_suffix(TRUNCATED).unwrap_or_else(|| panic!("max {max}: no marker in {output:?}"));
    assert!(head.len() <= max, "max {max}: head {head:?} too long");
    assert!(full.starts_with(head), "max {max}: {head:?} is not a prefix");
}

/// A sample's text with its marks taken out, and the text redaction must make of it.
fn unmark(marked: &str) -> (String, String) {
    let input = marked.replace(['⟦', '⟧'], "");
    let mut expected = String::new();
    let mut rest = marked;
    while let Some(open) = rest.find('⟦') {
        expected.push_str(&rest[..open]);
        let close = rest[open..].find('⟧').map(|at| open + at).expect("every ⟦ has its ⟧");
        expected.push_str(REDACTED);
        rest = &rest[close + '⟧'.len_utf8()..];
    }
    expected.push_str(rest);
    (input, expected)
}

#[test]
fn every_rule_compiles_and_names_are_unique() {
    let mut names = engine::check_rules();
    let count = names.len();
    assert!(count >= 200, "the catalog has {count} rules");
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "duplicate rule name");
}

#[test]
fn every_rule_has_a_hit_and_a_near_miss() {
    let samples = rules::samples();
    for name in engine::check_rules() {
        let hits = samples.iter().filter(|s| s.rule == name && s.hit).count();
        let misses = samples.iter().filter(|s| s.rule == name && !s.hit).count();
        assert!(hits >= 1 && misses >= 1, "rule {name} has {hits} hits and {misses} near misses");
    }
    let names = engine::check_rules();
    for sample in &samples {
        assert!(names.contains(&sample.rule), "a sample names no rule: {}", sample.rule);
    }
}

#[test]
fn every_hit_is_redacted_by_its_rule_and_nothing_else_changes() {
    let mut failures = Vec::new();
    for sample in rules::samples().iter().filter(|s| s.hit) {
        let (input, expected) = unmark(sample.text);
        if !engine::rules_firing(&input).contains(&sample.rule) {
            failures.push(format!("{} does not fire on {input:?}", sample.rule));
        } else if !engine::prefilter_admits(sample.rule, &input) {
            failures.push(format!("{}: no keyword of it in {input:?}", sample.rule));
        }
        let output = redact(&input);
        if output != expected {
            failures.push(format!("{} on {input:?}:\n   got {output:?}\n  want {expected:?}", sample.rule));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn near_misses_come_back_borrowed() {
    let mut failures = Vec::new();
    for sample in rules::samples().iter().filter(|s| !s.hit) {
        let output = redact(sample.text);
        if !matches!(output, Cow::Borrowed(_)) {
            failures.push(format!("{}: {:?} became {output:?}", sample.rule, sample.text));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn false_positives_come_back_borrowed() {
    for input in NEGATIVES {
        let output = redact(input);
        assert!(matches!(output, Cow::Borrowed(_)), "{input:?} became {output:?}");
    }
}

#[test]
fn redaction_is_idempotent() {
    let samples: Vec<String> = rules::samples().iter().map(|sample| unmark(sample.text).0).collect();
    let inputs = samples.iter().map(String::as_str).chain(NEGATIVES.iter().copied());
    for input in inputs.chain([MIXED]) {
        let once = redact(input);
        let twice = redact(&once);
        assert!(matches!(twice, Cow::Borrowed(_)), "{input:?}: {once:?} became {twice:?}");
    }
}

#[test]
fn a_redaction_that_opens_a_word_boundary_is_followed_up() {
    // `bearer` is glued to the AWS id, so it only has a word boundary once the id is gone
    // (and, glued to the marker, it goes as a possible tail of the key).
    let input = "AKIAIOSFODNN7EXAMPLEbearer a1b2c3d4e5";
    assert_eq!(redact(input), "[REDACTED][REDACTED] [REDACTED]");
}

#[test]
fn floor_char_boundary_table() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 0, ""),
        ("", 5, ""),
        ("abc", 0, ""),
        ("abc", 2, "ab"),
        ("abc", 3, "abc"),
        ("abc", 99, "abc"),
        ("héllo", 1, "h"),
        ("héllo", 2, "h"),
        ("héllo", 3, "hé"),
        ("😀x", 3, ""),
        ("😀x", 4, "😀"),
        ("a😀", 4, "a"),
    ];
    for &(text, max, expected) in cases {
        assert_eq!(floor_char_boundary(text, max), expected, "{text:?} at {max}");
    }
}

#[test]
fn truncation_table() {
    let cases: &[(&str, usize, &str)] = &[
        ("short", 10, "short"),
        ("exactly", 7, "exactly"),
        ("abcdef", 3, "abc…[truncated]"),
        ("héllo", 2, "h…[truncated]"),
        ("😀😀", 5, "😀…[truncated]"),
        ("ab[REDACTED]cd", 5, "ab…[truncated]"),
        ("ab[REDACTED]cd", 12, "ab[REDACTED]…[truncated]"),
        ("key AKIAIOSFODNN7EXAMPLE tail", 10, "key …[truncated]"),
        ("key AKIAIOSFODNN7EXAMPLE tail", 14, "key [REDACTED]…[truncated]"),
        ("anything", 0, "…[truncated]"),
    ];
    for &(text, max, expected) in cases {
        assert_eq!(redact_truncated(text, max), expected, "{text:?} at {max}");
    }
}

#[test]
fn a_secret_straddling_the_cut_leaves_no_prefix() {
    for key in ["sk-test-4eC39HqLyjWDarjtT1zdp7", "ghp_1234567890abcdefghijklmnopqrstuvwxyz"] {
        let text = format!("{}{key}", "a".repeat(95));
        for max in 0..=text.len() + 1 {
            let output = redact_truncated(&text, max);
            assert_eq!(leaked(&output, key, 4), None, "max {max}: {output:?}");
            check_cut(&text, max, &output);
        }
    }
}

#[test]
fn multibyte_chars_at_the_cut_never_panic() {
    for text in ["é".repeat(60), "😀".repeat(30), format!("{}é😀x", "x".repeat(99))] {
        for max in 0..=text.len() + 2 {
            check_cut(&text, max, &redact_truncated(&text, max));
        }
    }
}

#[test]
fn every_cut_point_of_mixed_text_is_safe() {
    for max in 0..=MIXED.len() + 4 {
        let output = redact_truncated(MIXED, max);
        for secret in MIXED_SECRETS {
            assert_eq!(leaked(&output, secret, 8), None, "max {max}: {output:?}");
        }
        check_cut(MIXED, max, &output);
    }
}

/// Pieces that random inputs are glued from: secret prefixes, separators, quotes,
/// placeholders and multi-byte chars, so the fuzz hits rule edges.
const FRAGMENTS: &[&str] = &[
    "a",
    "Z",
    "7",
    " ",
    "\n",
    "é",
    "😀",
    "\"",
    "'",
    "`",
    ":",
    "=",
    "@",
    "/",
    "-",
    "_",
    ".",
    "$",
    "<",
    "[",
    "]",
    "(",
    "password",
    "token",
    "api_key",
    "Bearer ",
    "Basic ",
    "Authorization: ",
    "ghp_",
    "sk-",
    "sk_live_",
    "sk-test-",
    "AKIA",
    "xoxb-",
    "eyJ",
    "whsec_",
    "AIza",
    "glpat-",
    "https://",
    "u:p4ss",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "0123456789",
    "abcdefghij",
    "ABCDEFGHIJ",
    "dXNlcjpwYXNz",
    "[REDACTED]",
    "...",
];

#[test]
fn random_texts_never_panic_and_stay_idempotent() {
    let mut next = super::super::xorshift(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let pieces = next() % 40;
        let text: String = (0..pieces).map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]).collect();
        let once = redact(&text);
        assert_eq!(redact(&once), once, "not idempotent on {text:?}");
        let max = (next() % (text.len() as u64 + 2)) as usize;
        check_cut(&text, max, &redact_truncated(&text, max));
    }
}

#[test]
fn a_secret_longer_than_the_rule_cap_is_redacted_to_its_end() {
    let long = format!("ghp_{}", "a1".repeat(400));
    let out = redact(&format!("token {long} end")).into_owned();
    assert_eq!(out, "token [REDACTED] end");
    let value = "Zx9".repeat(200);
    let out = redact(&format!("api_key={value}\n")).into_owned();
    assert!(!out.contains("Zx9Zx9"), "{out}");
}

#[test]
fn json_escaped_urls_are_redacted() {
    let text = r#"{"hook": "https:\/\/hooks.slack.com\/services\/T0ABCDEF1\/B0ABCDEF2\/q1W2e3R4t5Y6u7I8o9P0a1S2", "db": "postgres:\/\/admin:s3cr3tPa55@db.example"}"#;
    let out = redact(text);
    assert!(!out.contains("q1W2e3R4t5Y6u7I8o9P0a1S2"), "{out}");
    assert!(!out.contains("s3cr3tPa55"), "{out}");
}

#[test]
fn candidates_that_fail_their_check_cost_a_bounded_scan() {
    // Each of these made redaction quadratic before the quantifiers were capped
    // (a 144 KB line took 40 s); now they finish in a linear pass.
    for line in [
        "token=...".repeat(16_000),
        "xoxb-".repeat(30_000),
        format!("{}://:<x@", "a".repeat(150_000)),
        "sk-proj-".repeat(20_000),
    ] {
        let out = redact(&line);
        assert!(out.len() <= line.len(), "redaction never grows clean text");
    }
}

#[test]
fn a_secret_cut_by_a_line_break_goes_in_both_pieces() {
    assert_eq!(redact("key AKIAIOSF\nODNN7EXAMPLE here"), "key [REDACTED]\n[REDACTED] here");
    assert_eq!(redact("ghp_1234567890abcdefghij\r\nklmnopqrstuvwxyz."), "[REDACTED]\r\n[REDACTED].");
    // A key whole at the end of its line keeps the next line's word.
    assert_eq!(
        redact("The shared sandbox key is sk-test-4eC39HqLyjWDarjtT1zdp7dc\nand it only works"),
        "The shared sandbox key is [REDACTED]\nand it only works"
    );
    // A key cut after enough characters to match on its own still loses its tail.
    assert_eq!(redact("sk_test_4eC39HqLyj\nWDarjtT1zdp7dc rest"), "[REDACTED]\n[REDACTED] rest");
    // Prose that wraps between two words, and a version after a word, stay.
    for text in ["the refund window is\nfourteen days", "see release\nv2.4.1 notes", "Microsoft\nDynamics 365"] {
        assert!(matches!(redact(text), Cow::Borrowed(_)), "{text:?}");
    }
}

/// A secret written escaped, once (a JSON string) or twice (a debug print of one), goes whole:
/// a private key whose line breaks are `\n`, a quoted password whose quotes are `\"`.
#[test]
fn a_secret_written_escaped_goes_whole() {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nq0FaKe2mXyzPEM1234567==\n-----END PRIVATE KEY-----";
    let question = format!("why does password: \"correct horse battery\" fail with {pem}");
    let once = serde_json::to_string(&serde_json::json!({"query": question})).expect("json");
    let twice = format!("{:?}", once);
    for line in [
        format!("DEBUG rmcp: request {once}"),
        format!("{{\"message\":{}}}", serde_json::to_string(&format!("request {once}")).expect("json")),
        format!("received {twice}"),
    ] {
        let out = redact(&line);
        for piece in ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "q0FaKe2mXyzPEM1234567", "correct horse battery"] {
            assert!(!out.contains(piece), "{piece} in {out}");
        }
        assert!(out.contains("why does password"), "the rest stays: {out}");
    }
    // Escapes around ordinary text change nothing.
    let plain = r#"{"query":"how long is the refund window?\nand \"yearly\" plans"}"#;
    assert!(matches!(redact(plain), Cow::Borrowed(_)), "{plain}");
}
