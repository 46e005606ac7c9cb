use super::Node;

/// An answer's nodes, with no operator patterns.
fn render(answer: &str, hosts: &[String]) -> Vec<Node> {
    super::render(answer, hosts, &|t| t.to_string())
}

/// A section's nodes, with no operator patterns.
fn render_source(text: &str, document: &str, hosts: &[String], cited: &[usize]) -> Vec<Node> {
    super::render_source(text, document, hosts, cited, &|t| t.to_string())
}

fn text(t: &str) -> Node {
    Node::Text { text: t.into() }
}

/// Headings, lists, emphasis, code and tables become their nodes.
#[test]
fn markdown_becomes_nodes() {
    let nodes = render(
        "## Refunds\n\n- **14 days** from the *first* payment\n- `POST /refunds`\n\n```sh\ncurl x\n```\n\n| plan | days |\n|---|---|\n| monthly | 14 |\n",
        &[],
    );
    assert_eq!(nodes[0], Node::Heading { level: 2, children: vec![text("Refunds")] });
    let Node::List { start: None, items } = &nodes[1] else { panic!("{nodes:?}") };
    assert_eq!(items[0][0], Node::Strong { children: vec![text("14 days")] });
    assert_eq!(items[0][2], Node::Em { children: vec![text("first")] });
    assert_eq!(items[1], vec![Node::InlineCode { text: "POST /refunds".into() }]);
    assert_eq!(nodes[2], Node::Code { lang: "sh".into(), text: "curl x\n".into() });
    let Node::Table { head, rows } = &nodes[3] else { panic!("{nodes:?}") };
    assert_eq!(head, &vec![vec![text("plan")], vec![text("days")]]);
    assert_eq!(rows, &vec![vec![vec![text("monthly")], vec![text("14")]]]);
}

/// Raw HTML is text; an image is its alt text; a link goes to a docs section, an allowed
/// host, or nowhere (its URL shown as text).
#[test]
fn html_images_and_links_are_inert_unless_allowed() {
    let hosts = vec!["docs.acme.example".to_string()];
    let nodes = render(
        "<script>alert(1)</script>\n\nsee <img src=x onerror=alert(1)> ![secret](https://evil.example/?q=k) [Refunds](docs/refunds.md#window) [guide](https://docs.acme.example/g) [x](https://evil.example/) [js](javascript:alert(1)) [up](../etc/passwd)",
        &hosts,
    );
    assert_eq!(nodes[0], Node::Paragraph { children: vec![text("<script>alert(1)</script>\n")] });
    let Node::Paragraph { children } = &nodes[1] else { panic!("{nodes:?}") };
    assert_eq!(children[0], text("see <img src=x onerror=alert(1)> "));
    assert_eq!(children[1], Node::Image { alt: "secret".into() });
    assert!(
        children.contains(&Node::Section { target: "docs/refunds.md#window".into(), children: vec![text("Refunds")] })
    );
    assert!(
        children.contains(&Node::Link { href: "https://docs.acme.example/g".into(), children: vec![text("guide")] })
    );
    for url in ["https://evil.example/", "javascript:alert(1)", "../etc/passwd"] {
        assert!(
            children.iter().any(|n| matches!(n, Node::Blocked { url: u, .. } if u == url)),
            "{url} must be blocked: {children:?}"
        );
    }
    let shown = serde_json::to_string(&nodes).expect("json");
    assert!(!shown.contains("\"href\":\"https://evil") && !shown.contains("\"href\":\"javascript"), "{shown}");
}

/// A secret the parser makes by decoding an escape or an entity is redacted in the tree
/// (in a code span nothing is decoded: it shows as the answer wrote it).
#[test]
fn a_secret_made_by_decoding_is_redacted() {
    let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    for written in [key.replace('_', "\\_"), key.replace('_', "&lowbar;"), key.replace('_', "&#95;")] {
        let shown = serde_json::to_string(&render(&format!("the key is {written}"), &[])).expect("json");
        assert!(!shown.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{written}: {shown}");
    }
}

/// Nesting thousands deep is flattened, its text kept, and nothing recurses that deep.
#[test]
fn deep_nesting_is_flattened() {
    fn depth(nodes: &[Node]) -> usize {
        nodes
            .iter()
            .map(|n| match n {
                Node::Quote { children } | Node::Paragraph { children } => 1 + depth(children),
                Node::List { items, .. } => 1 + items.iter().map(|i| depth(i)).max().unwrap_or(0),
                _ => 1,
            })
            .max()
            .unwrap_or(0)
    }
    for deep in [format!("{}deep", ">".repeat(100_000)), format!("{}deep", "- ".repeat(20_000))] {
        let nodes = render(&deep, &[]);
        let shown = serde_json::to_string(&nodes).expect("json");
        assert!(shown.contains("deep"), "the text is kept");
        assert!(depth(&nodes) <= 40, "{}", depth(&nodes));
    }
}

/// An email autolink is a mailto link; an anchor may be in any script.
#[test]
fn email_autolinks_and_non_ascii_anchors() {
    let nodes = render("write to <help@acme.example>, see [élan](docs/plans.md#élan-2024)", &[]);
    let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
    assert!(
        children.iter().any(|n| matches!(n, Node::Link { href, .. } if href == "mailto:help@acme.example")),
        "{children:?}"
    );
    assert!(
        children.iter().any(|n| matches!(n, Node::Section { target, .. } if target == "docs/plans.md#élan-2024")),
        "{children:?}"
    );
}

/// A fence tag the model quotes from a tool result links to its section; the closing tag
/// is dropped; a fence naming anything else stays text.
#[test]
fn a_quoted_fence_tag_is_a_link_to_its_section_and_nothing_else() {
    let nodes = render("From the docs:\n<untrusted source=\"docs/refunds.md#window\">\n14 days\n</untrusted>", &[]);
    let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
    let target = "docs/refunds.md#window".to_string();
    assert!(
        children.contains(&Node::Section { target: target.clone(), children: vec![text(&target)] }),
        "{children:?}"
    );
    let shown = format!("{nodes:?}");
    assert!(!shown.contains("untrusted"), "{shown}");
    // A fence naming anything but a section stays text.
    let nodes = render("<untrusted source=\"https://evil.example/x\"> hi", &[]);
    let shown = format!("{nodes:?}");
    assert!(shown.contains("evil.example") && !shown.contains("Section"), "{shown}");
    assert!(!shown.contains("Link"), "{shown}");
}

/// A section link must be a plain path under docs/.
#[test]
fn section_links_are_plain_paths_under_docs() {
    for (url, section) in [
        ("docs/refunds.md#window", true),
        ("./docs/a/b.md", true),
        ("docs/../secrets.md", false),
        ("docs//x.md", false),
        ("docs/x.md#a\"b", false),
        ("other/x.md", false),
    ] {
        let nodes = render(&format!("[t]({url})"), &[]);
        let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
        assert_eq!(matches!(children[0], Node::Section { .. }), section, "{url}: {children:?}");
    }
}

/// Every `Cited` node's plain text, in order.
fn cited(nodes: &[Node]) -> Vec<String> {
    fn walk(nodes: &[Node], inside: bool, out: &mut Vec<String>) {
        for node in nodes {
            match node {
                Node::Cited { children } => {
                    let mut text = Vec::new();
                    walk(children, true, &mut text);
                    out.push(text.concat());
                }
                Node::Text { text } | Node::InlineCode { text } | Node::Code { text, .. } if inside => {
                    out.push(text.clone())
                }
                Node::List { items, .. } => items.iter().for_each(|item| walk(item, inside, out)),
                Node::Table { head, rows } => {
                    head.iter().chain(rows.iter().flatten()).for_each(|cell| walk(cell, inside, out));
                }
                other => walk(other.children(), inside, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(nodes, false, &mut out);
    out
}

/// A docs section renders as Markdown, and what holds the cited lines is marked: a wrapped
/// paragraph's line, a tight list's item, a table's row, a code block; nothing else.
#[test]
fn a_section_marks_the_blocks_of_its_cited_lines() {
    let source = "## Refund window\n\nRefunds are possible for\n14 days after payment.\n\n- monthly plans\n- annual plans: 30 days\n\n| plan | days |\n|---|---|\n| monthly | 14 |\n| annual | 30 |\n\n```sh\ncurl /refunds\n```\n\nUnrelated closing words.\n";
    // lines: 0 heading, 2-3 paragraph, 5-6 list, 8-11 table, 13-15 code, 17 closing
    let nodes = render_source(source, "docs/refunds.md", &[], &[3, 6, 11, 14]);
    assert_eq!(
        cited(&nodes),
        [" 14 days after payment.", "annual plans: 30 days", "annual", "30", "curl /refunds\n"],
        "{nodes:?}"
    );
    assert_eq!(nodes[0], Node::Heading { level: 2, children: vec![text("Refund window")] });
    // Without cited lines, nothing is marked, and the tree is an answer's.
    let plain = render_source(source, "docs/refunds.md", &[], &[]);
    assert!(cited(&plain).is_empty());
    assert_eq!(plain, render(source, &[]));
}

/// In a loose list or a list with a nested one, the marked line's own block is marked, not
/// the whole item around it.
#[test]
fn a_nested_item_is_marked_on_its_own() {
    let source =
        "- Plans\n  - monthly: 14 days\n  - annual: 30 days\n- Credits\n\n  Credits never expire.\n\n  Ask billing.\n";
    let nodes = render_source(source, "docs/refunds.md", &[], &[2, 5]);
    assert_eq!(cited(&nodes), ["annual: 30 days", "Credits never expire."], "{nodes:?}");
    let nodes = render_source(source, "docs/refunds.md", &[], &[0]);
    assert_eq!(cited(&nodes), ["Plans"], "{nodes:?}");
}

/// A relative link in a docs file is the section it leads to; one that climbs out of docs/,
/// names a rooted path or a page that is not a docs file stays blocked.
#[test]
fn relative_links_in_a_section_lead_to_sections() {
    let source = "[roles](../admin/roles.md#refunds) [fees](#fees) [same](./fees.md) [out](../../AGENTS.md) [root](/admin/roles) [img](diagram.png) [web](https://evil.example/)";
    let nodes = render_source(source, "docs/billing/refunds.md", &[], &[]);
    let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
    let sections: Vec<&str> = children
        .iter()
        .filter_map(|n| match n {
            Node::Section { target, .. } => Some(target.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(sections, ["docs/admin/roles.md#refunds", "docs/billing/refunds.md#fees", "docs/billing/fees.md"]);
    let blocked: Vec<&str> = children
        .iter()
        .filter_map(|n| match n {
            Node::Blocked { url, .. } => Some(url.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(blocked, ["../../AGENTS.md", "/admin/roles", "diagram.png", "https://evil.example/"]);
    // In an answer, a relative link is not a section: the model must name docs/ in full.
    let answer = render("[roles](../admin/roles.md#refunds)", &[]);
    assert!(format!("{answer:?}").contains("Blocked"), "{answer:?}");
}

/// Plain text keeps its lines, each cited line marked; raw HTML in a text
/// file is text; a secret is scrubbed.
#[test]
fn plain_text_sections_are_paragraphs_of_lines() {
    let source = "Refund window\n14 days.\n\n<b>Contact</b>\nkey sk_live_4eC39HqLyjWDarjtT1zdp7dc\n";
    let nodes = render_source(source, "docs/faq.txt", &[], &[1]);
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert_eq!(
        nodes[0],
        Node::Paragraph {
            children: vec![text("Refund window"), Node::Break, Node::Cited { children: vec![text("14 days.")] }]
        }
    );
    let shown = serde_json::to_string(&nodes).expect("json");
    assert!(shown.contains("<b>Contact</b>") && !shown.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{shown}");
}

/// The operator's patterns apply to what the parser decoded and to the paths relative links
/// resolve to: a link whose target they change keeps only its text.
#[test]
fn redaction_reaches_decoded_text_and_resolved_links() {
    let source =
        "Proj&#101;ct Falcon ships soon. See [the plan](../falcon/plan.md) and [web](https://intra&#46;corp/x).";
    let nodes = render_source(source, "docs/billing/refunds.md", &["intra.corp".to_string()], &[]);
    let before = serde_json::to_string(&nodes).expect("json");
    assert!(before.contains("Project Falcon") && before.contains("docs/falcon/plan.md"), "{before}");
    let redact = |text: &str| {
        text.replace("Project Falcon", "[REDACTED]").replace("falcon", "[REDACTED]").replace("intra.corp", "[REDACTED]")
    };
    let nodes =
        super::render_source(source, "docs/billing/refunds.md", &["intra.corp".to_string()], &[], &|t| redact(t));
    let after = serde_json::to_string(&nodes).expect("json");
    assert!(!after.contains("Falcon") && !after.contains("falcon") && !after.contains("intra.corp"), "{after}");
    assert!(
        after.contains("the plan") && after.contains("web") && !after.contains("\"t\":\"section\""),
        "the links' text stays: {after}"
    );
    assert!(!after.contains("\"t\":\"link\""), "{after}");
    // An answer's nodes get the same.
    let answer = serde_json::to_string(&super::render("Proj&#101;ct Falcon", &[], &|t| redact(t))).expect("json");
    assert!(!answer.contains("Falcon"), "{answer}");
}
