//! The checks a rule's match must pass besides its pattern: a match of a provider prefix that
//! looks like a word, a placeholder such as `YOUR_API_KEY` or code such as `process.env.TOKEN`
//! is no secret.

use std::ops::Range;

use super::REDACTED;

/// How a rule decides that a match of its pattern really is a secret.
#[derive(Clone, Copy, Debug)]
pub(super) enum Check {
    /// The pattern alone is precise enough.
    Always,
    /// The match looks random (a digit, or upper and lower case), unlike words
    /// glued by hyphens such as `desk-test-environment`.
    Random,
    /// The value is redacted unless it is a placeholder such as `<password>` or `${TOKEN}`.
    NotPlaceholder,
    /// A bearer-style token: 16+ token chars, or 6+ with a digit; not a placeholder
    /// such as `YOUR_ACCESS_TOKEN` nor code such as `process.env.TOKEN`.
    TokenLike,
    /// An unquoted `key = value` value; see [`bare_value_span`] for the heuristic.
    BareAssignment,
    /// Base64 that decodes to printable `user:password`.
    BasicCredentials,
    /// Not part of a `[REDACTED]` marker.
    NotMarker,
    /// A value assigned to a key that only hints at a secret (`stripeSecretKey`, `SENDGRID_KEY`):
    /// see [`is_high_entropy_value`].
    HighEntropy,
    /// A `Password=` value in a connection string: the line also names a server, a database or
    /// a user, and the value is no placeholder.
    ConnectionString,
    /// A value under `data:` or `stringData:` in a YAML document of `kind: Secret`.
    KubernetesSecret,
    /// The password of `user:password@host` without a scheme: an unquoted value
    /// ([`Check::BareAssignment`]) whose user is no URI scheme (`mailto:name@host`).
    Userinfo,
}

impl Check {
    /// The span to redact when the candidate at `span` of `text` is a secret.
    pub(super) fn accept(self, text: &str, span: Range<usize>) -> Option<Range<usize>> {
        let value = text.get(span.clone())?;
        let ok = match self {
            Check::Always => true,
            // A key glued to a word must look strongly random: `risk-admin-settings-2024` is a
            // slug, `textsk-test-4eC39HqLyjWD` a pasted key.
            Check::Random if alphanumeric_before(text, span.start) => looks_strongly_random(value),
            Check::Random => looks_random(value),
            Check::NotPlaceholder => !is_placeholder(value),
            Check::TokenLike => is_token_like(value),
            Check::BasicCredentials => is_basic_credentials(value),
            Check::BareAssignment => return bare_value_span(text, span),
            Check::Userinfo if after_scheme(text, span.start) => false,
            Check::Userinfo => return bare_value_span(text, span),
            // The word of the next marker (`[REDACTED][REDACTED]`) is no tail.
            Check::NotMarker => !REDACTED.contains(value),
            Check::HighEntropy => is_high_entropy_value(text, span.start, value),
            Check::ConnectionString => in_connection_string(text, span.start) && !is_placeholder(value.trim()),
            Check::KubernetesSecret => in_kubernetes_secret_data(text, span.start),
        };
        ok.then_some(span)
    }
}

/// True when the character before `at` is an ASCII letter or digit.
fn alphanumeric_before(text: &str, at: usize) -> bool {
    text.as_bytes().get(at.wrapping_sub(1)).is_some_and(u8::is_ascii_alphanumeric)
}

/// True when `value` has a digit and both upper and lower case letters.
fn looks_strongly_random(value: &str) -> bool {
    let has = |test: fn(&u8) -> bool| value.as_bytes().iter().any(test);
    has(u8::is_ascii_digit) && has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase)
}

/// True when `value` has a digit, or both upper and lower case letters.
fn looks_random(value: &str) -> bool {
    let has = |test: fn(&u8) -> bool| value.as_bytes().iter().any(test);
    has(u8::is_ascii_digit) || (has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase))
}

/// True for values that stand for a secret instead of being one: `<password>`,
/// `{token}`, `[REDACTED]`, `%TOKEN%`, `$TOKEN`, `${TOKEN}`, `$(cmd)`, elisions
/// (`sk_live_...`, `polar_at_XXX`) and constant names (`YOUR_API_KEY`). A `$`
/// followed by a digit (a bcrypt hash, `$2b$...`) is not a placeholder.
fn is_placeholder(value: &str) -> bool {
    let mut chars = value.chars();
    let marked = match (chars.next(), chars.next()) {
        (Some('<' | '{' | '['), _) => true,
        (Some('%' | '$'), Some(next)) => next.is_ascii_alphabetic() || matches!(next, '_' | '{' | '('),
        _ => false,
    };
    let elided = value.contains("...")
        || value.contains('…')
        || value.as_bytes().windows(3).any(|w| w.eq_ignore_ascii_case(b"xxx"));
    let constant_name = value.contains('_') && value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    let word = PLACEHOLDER_WORDS.iter().any(|word| value.eq_ignore_ascii_case(word));
    marked || elided || constant_name || word || is_filler(value) || is_public_key(value)
}

/// Values that docs write where a secret would go (`postgres://user:password@host`).
const PLACEHOLDER_WORDS: &[&str] = &["password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key"];

/// True for a value of one character repeated (`********`, `xxxxxxxx`, `0000`): a mask or a
/// placeholder, never a secret.
pub(super) fn is_filler(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next().is_some_and(|first| value.chars().count() >= 3 && chars.all(|c| c == first))
}

/// True for keys made to be public: Stripe and Paystack publishable keys (`pk_live_`,
/// `pk_test_`), Mapbox public tokens (`pk.eyJ`), Supabase publishable keys.
fn is_public_key(value: &str) -> bool {
    ["pk_live_", "pk_test_", "pk.eyJ", "sb_publishable_"].iter().any(|prefix| value.starts_with(prefix))
}

/// True for code that names a secret instead of holding one: a name path such as
/// `process.env.TOKEN` or `session.token`, a `camelCase` or `snake_case` name such as
/// `polarAccessToken`, or a call or index such as `getenv(` and `process.env[`.
/// A name on its own must have no digit; a trailing `!` or `?` (TypeScript) is ignored.
fn is_code_reference(value: &str) -> bool {
    let value = value.trim_end_matches(['!', '?']);
    let name_len = value.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(value.len());
    let (name, rest) = value.split_at(name_len);
    let has_hump = name.as_bytes().windows(2).any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    match rest.chars().next() {
        _ if name.is_empty() => false,
        // A call or an index (`getSecret()`, `env["TOKEN"]`), or an opened one cut by the value's
        // end (`os.getenv(`); a name with digits that never closes (`Tr0ub4dor(3xyzzyQ`) is none.
        Some('(' | '[') => !name.bytes().any(|b| b.is_ascii_digit()) || value.ends_with([')', ']']),
        Some(_) => false,
        None => {
            let no_digit = !name.bytes().any(|b| b.is_ascii_digit());
            no_digit && (name.contains(['.', '_']) || has_hump)
        }
    }
}

/// A bearer-style token: at least 16 token chars, or at least 6 with a digit.
/// This keeps "Bearer tokens are described in ..." and `Bearer YOUR_TOKEN` as they are.
fn is_token_like(value: &str) -> bool {
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_letter = value.bytes().any(|b| b.is_ascii_alphabetic());
    // A date or a version (`2024-01-15`, `1.2.3`) has digits but no letters.
    !is_placeholder(value) && !is_code_reference(value) && (value.len() >= 16 || (has_digit && has_letter))
}

/// The heuristic for an unquoted assigned value, chosen so that prose such as
/// "password: see the admin panel" and code such as `token: process.env.TOKEN`
/// stay readable while config lines lose their secrets.
///
/// The value (one run of 6+ non-space chars, trailing `,`/`;` left out) is a
/// secret unless it is a placeholder or a code reference; and then only if it
/// contains a digit or a symbol other than `_ . -`, or is 12+ chars long with
/// nothing else after it on its line.
fn bare_value_span(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let value = until_next_parameter(text.get(span.clone())?).trim_end_matches([',', ';']);
    // A closing quote with no opening one in the value ends it (`'DB_PASSWORD=x1y2z3'`).
    let value = if value.matches('\'').count() == 1 { value.trim_end_matches('\'') } else { value };
    let span = span.start..span.start + value.len();
    // A URL after `password:` is a link to a page (a password in a URL has its own rule).
    if value.len() < 6 || is_placeholder(value) || is_code_reference(value) || value.contains("://") {
        return None;
    }
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_symbol = value.bytes().any(|b| !b.is_ascii_alphanumeric() && !matches!(b, b'_' | b'.' | b'-'));
    // A long value of letters alone is a secret when it has a capital inside it
    // (`CorrectHorse`) or is a passphrase of 16+ letters, not a word or hyphenated words
    // (`administrators`, `case-sensitive`).
    let inner_capital =
        value.bytes().skip(1).any(|b| b.is_ascii_uppercase()) && value.bytes().any(|b| b.is_ascii_lowercase());
    let passphrase = value.len() >= 16 && !value.contains('-');
    let ends_line = text.get(span.end..).is_none_or(rest_of_line_is_blank);
    (has_digit || has_symbol || (value.len() >= 12 && ends_line && (inner_capital || passphrase)))
        .then(|| span.start..with_last_word(text, span.end))
}

/// `value` up to the next parameter of its line, when one follows it (`abc123&state=xyz`,
/// `pw1;Encrypt=True`): `&` or `;` then a name and `=`. Any other `&` or `;` is the value's.
fn until_next_parameter(value: &str) -> &str {
    let bytes = value.as_bytes();
    let starts_parameter = |at: usize| {
        let name = bytes[at + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        let len = name.count();
        len > 0 && bytes[at + 1].is_ascii_alphabetic() && bytes.get(at + 1 + len) == Some(&b'=')
    };
    match (0..bytes.len()).find(|&at| matches!(bytes[at], b'&' | b';') && at + 1 < bytes.len() && starts_parameter(at))
    {
        Some(at) => &value[..at],
        None => value,
    }
}

/// Where a value that ends at `end` really ends: past one more word when that word is the last
/// of its line and looks like part of a secret (a digit or a symbol in it), as a password with a
/// space in it is written unquoted (`DB_PASSWORD=Tr0ub4dor 3xyzzyQ`); else `end`. Prose after a
/// value (`… and restart`) is more than one word, or plain letters.
fn with_last_word(text: &str, end: usize) -> usize {
    let Some(after) = text.get(end..).and_then(|rest| rest.strip_prefix(' ')) else {
        return end;
    };
    let line = after.split('\n').next().unwrap_or("").trim_end_matches([' ', '\t', '\r']);
    let word = line.trim_end_matches(['"', '\'', '`', '}', ')', ']', ',', ';', '.']);
    let secret_like = word.bytes().any(|b| !b.is_ascii_alphabetic());
    if word.len() >= 3 && !word.contains(char::is_whitespace) && secret_like && !is_placeholder(word) {
        end + 1 + word.len()
    } else {
        end
    }
}

/// Schemes written as `scheme:name@host`, whose name is no password.
const ADDRESS_SCHEMES: &[&str] = &["mailto", "sip", "sips", "xmpp", "im", "pres", "tel", "news", "nntp", "mid", "cid"];

/// True when the `user:` before `at` (the `:` is at `at - 1`) is an address scheme.
fn after_scheme(text: &str, at: usize) -> bool {
    let Some(head) = text.get(..at.saturating_sub(1)) else {
        return false;
    };
    let user_start = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-')))
        .map_or(0, |i| i + 1);
    ADDRESS_SCHEMES.iter().any(|scheme| head[user_start..].eq_ignore_ascii_case(scheme))
}

/// True when `rest` has only blanks before its first line break (or its end).
/// Stops at the first other byte, so a long line costs nothing.
fn rest_of_line_is_blank(rest: &str) -> bool {
    rest.bytes().find(|b| !matches!(b, b' ' | b'\t' | b'\r')).is_none_or(|b| b == b'\n')
}

/// True when `value` is base64 for printable text holding a `:`, as in `user:password`.
/// Keeps "Basic authentication" and other prose after the word Basic untouched.
fn is_basic_credentials(value: &str) -> bool {
    let decoded = decode_base64(value.trim_end_matches('='));
    decoded.contains(&b':') && decoded.iter().all(|b| (0x20..0x7f).contains(b))
}

/// Decodes standard base64 without padding; bits that do not fill a byte are dropped.
/// Callers pass only base64 chars; any other char decodes as zero bits.
fn decode_base64(value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0u32);
    for byte in value.bytes() {
        let sextet = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        };
        bits = (bits << 6) | u32::from(sextet);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    out
}

/// Bits of Shannon entropy per character of `value`.
fn entropy(value: &str) -> f64 {
    let mut counts = [0u32; 256];
    for byte in value.bytes() {
        counts[usize::from(byte)] += 1;
    }
    let len = value.len() as f64;
    counts.iter().filter(|&&count| count > 0).map(|&count| f64::from(count) / len).map(|p| -p * p.log2()).sum()
}

/// Entropy per character above which an assigned value looks random: a random 16-character
/// token of letters and digits has about 3.8, a word or a slug less than 3.3.
const MIN_ENTROPY: f64 = 3.5;

/// The generic rule's test for a value assigned to a key that hints at a secret: the key has a
/// secret-like word as one of its parts (`stripeSecretKey`, not `keyboard_layout`), the value
/// mixes letters and digits and looks random ([`MIN_ENTROPY`]), is no placeholder or code, and
/// the key does not say it is public (`PUBLISHABLE_KEY`) or an id (`key_id`).
fn is_high_entropy_value(text: &str, at: usize, value: &str) -> bool {
    let value = value.trim_end_matches(['.', ',', ';']);
    let has = |test: fn(&u8) -> bool| value.as_bytes().iter().any(test);
    let parts = key_parts(key_before(text, at));
    let public = parts.iter().any(|part| matches!(part.as_str(), "public" | "publishable" | "pub" | "pubkey"));
    let id = parts.last().is_some_and(|last| matches!(last.as_str(), "id" | "ids"));
    parts.iter().any(|part| is_secret_word(part))
        && has(u8::is_ascii_digit)
        && has(u8::is_ascii_alphabetic)
        && entropy(value) >= MIN_ENTROPY
        && !public
        && !id
        && !is_placeholder(value)
        && !is_code_reference(value)
        && !holds_word(value)
}

/// Words that random values do not hold but names, code and prose do (`New-XOAuth2String`,
/// `example-token-2024`), as gitleaks' stopwords keep its generic rule quiet. A random run of
/// 16 or more letters and digits holds one of these by chance about once in a million.
const STOPWORDS: &[&str] = &[
    "string",
    "example",
    "sample",
    "test",
    "value",
    "config",
    "default",
    "admin",
    "user",
    "client",
    "server",
    "service",
    "public",
    "private",
    "change",
    "your",
    "demo",
    "dummy",
    "fake",
    "placeholder",
    "replace",
    "insert",
    "enter",
    "here",
    "function",
    "return",
    "secret",
    "token",
    "password",
    "auth",
    "key-",
    "new-",
    "get-",
    "set-",
    "http",
    "localhost",
    "version",
    "release",
    "update",
    "create",
    "delete",
    "invoice",
    "order",
    "payment",
];

/// True when `value` holds one of the [`STOPWORDS`], ASCII case ignored.
fn holds_word(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    STOPWORDS.iter().any(|word| lower.contains(word))
}

/// The lowercase parts of a key: split at `_`, `.`, `-` and where a lowercase letter meets a
/// capital (`stripeSecretKey` is stripe, secret, key).
fn key_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        let boundary = matches!(c, '_' | '.' | '-') || (previous_lower && c.is_ascii_uppercase());
        if boundary && !part.is_empty() {
            parts.push(std::mem::take(&mut part));
        }
        if !matches!(c, '_' | '.' | '-') {
            part.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

/// True for a key part that names a secret: `key`, `token`, `secret`, `password`, `creds` and
/// their compounds (`apikey`, `authtoken`, `dbpassword`), but not `keyboard` or `monkey`.
fn is_secret_word(part: &str) -> bool {
    const WORDS: &[&str] = &["key", "keys", "auth", "pass", "passphrase", "credential", "credentials", "creds"];
    const ENDINGS: &[&str] = &["token", "tokens", "secret", "secrets", "password", "passwd", "pwd", "creds"];
    const KEYS: &[&str] = &[
        "apikey",
        "secretkey",
        "accesskey",
        "privatekey",
        "signingkey",
        "masterkey",
        "licensekey",
        "authkey",
        "appkey",
        "encryptionkey",
    ];
    WORDS.contains(&part) || ENDINGS.iter().any(|end| part.ends_with(end)) || KEYS.iter().any(|key| part.ends_with(key))
}

/// The key of the assignment whose value starts at `at`: the last run of key characters
/// before the operator, on the same line.
fn key_before(text: &str, at: usize) -> &str {
    let line = text.get(..at).unwrap_or_default();
    let line = line.rsplit('\n').next().unwrap_or_default();
    let before_operator = line.trim_end_matches([' ', '\t', '"', '\'', '`', '\\', ':', '=', '>', '?', '|']);
    let start = before_operator
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .map_or(0, |at| at + 1);
    before_operator.get(start..).unwrap_or_default()
}

/// True when the line around `at` reads as a connection string: it names a server, host,
/// data source, database or user besides the password (ADO.NET, ODBC and JDBC alike).
fn in_connection_string(text: &str, at: usize) -> bool {
    let start = text.get(..at).and_then(|head| head.rfind('\n')).map_or(0, |at| at + 1);
    let end = text.get(at..).and_then(|tail| tail.find('\n')).map_or(text.len(), |found| at + found);
    let line = text.get(start..end).unwrap_or_default().to_ascii_lowercase();
    const PARTS: &[&str] = &[
        "server=",
        "data source=",
        "host=",
        "hostname=",
        "address=",
        "jdbc:",
        "database=",
        "initial catalog=",
        "user id=",
        "userid=",
        "uid=",
        "user=",
        "username=",
        "dsn=",
        "driver=",
        "endpoint=",
        "port=",
    ];
    PARTS.iter().any(|part| line.contains(part) || line.contains(&part.replace('=', " =")))
}

/// How far back [`in_kubernetes_secret_data`] looks for the document's `kind` and section.
const MANIFEST_WINDOW: usize = 16 * 1024;

/// True when `at` is inside a `data:` or `stringData:` map of a YAML document (between `---`
/// lines) whose `kind` is `Secret`.
fn in_kubernetes_secret_data(text: &str, at: usize) -> bool {
    let from = (0..=at.saturating_sub(MANIFEST_WINDOW)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let head = text.get(from..at).unwrap_or_default();
    let doc_start = head.rfind("\n---").map_or(0, |i| i + 1);
    let tail = text.get(at..).unwrap_or_default();
    let doc_end = tail.find("\n---").unwrap_or(tail.len());
    let before = head.get(doc_start..).unwrap_or_default();
    let document = [before, tail.get(..doc_end).unwrap_or_default()];
    let is_secret = document.iter().flat_map(|part| part.lines()).any(|line| {
        let line = line.trim_end();
        line == "kind: Secret" || line == "kind: \"Secret\"" || line == "kind: 'Secret'"
    });
    // The section: the nearest line above the value's line that is not indented.
    let above = before.rfind('\n').and_then(|end| before.get(..end)).unwrap_or_default();
    let section = above.lines().rev().find(|line| line.starts_with(|c: char| !c.is_whitespace()));
    is_secret && section.is_some_and(|line| matches!(line.trim_end(), "data:" | "stringData:"))
}
