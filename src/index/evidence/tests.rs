use super::*;

/// An index of `files` (name, text) in a temporary `docs/`.
fn index_of(files: &[(&str, &str)]) -> Index {
    let tmp = tempfile::tempdir().expect("tmp");
    for (name, text) in files {
        std::fs::write(tmp.path().join(name), text).expect("write");
    }
    let docs = cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("docs");
    Index::build(&docs, crate::index::Limits::file_only(1 << 20)).expect("build")
}

const BUDGET: Budget = Budget { sections: 8, files: 3, bytes: 1_200, items: 4 };

/// A small billing docs set: the refund window sits in a long section among unrelated text.
fn billing() -> Index {
    let filler = "Our team reviews every request by hand and answers within a working day. ".repeat(6);
    index_of(&[
        (
            "refunds.md",
            &format!(
                "# Refunds\n\n## Window\n\n{filler}\n\nCustomers can ask for a refund within 14 days of the first payment.\n\n{filler}\n\n## Exceptions\n\nAnnual plans are refunded pro rata.\n"
            ),
        ),
        (
            "plans.md",
            "# Plans\n\n| Plan | Monthly |\n|---|---|\n| Starter | 29 EUR |\n| Growth | 99 EUR |\n| Scale | 299 EUR |\n",
        ),
        ("webhooks.md", "# Webhooks\n\nAn account can have up to 16 endpoints.\n\nEvents are retried for 3 days.\n"),
    ])
}

#[test]
fn the_passage_that_answers_is_chosen_and_the_filler_is_not() {
    let evidence = billing().evidence("how many days do customers have to ask for a refund", BUDGET).expect("evidence");
    let first = evidence.items.first().expect("an item");
    assert_eq!(first.source(), "docs/refunds.md#window");
    assert_eq!(first.heading, "Refunds > Window");
    assert!(first.text.contains("within 14 days of the first payment"), "{first:?}");
    assert!(!first.text.contains("answers within a working day"), "filler was chosen: {first:?}");
    assert!(evidence.coverage > 0.8, "coverage {}", evidence.coverage);
}

#[test]
fn a_table_row_comes_with_its_header_and_not_the_other_rows() {
    // Room for the matching row only (with the header, heading and source): it is that row.
    let budget = Budget { bytes: 115, ..BUDGET };
    let evidence = billing().evidence("monthly price of the Growth plan", budget).expect("evidence");
    let item = evidence.items.iter().find(|i| i.path == "docs/plans.md").expect("the plans table");
    assert!(item.text.starts_with("| Plan | Monthly |\n|---|---|\n"), "{item:?}");
    assert!(item.text.contains("| Growth | 99 EUR |"), "{item:?}");
    assert!(!item.text.contains("Starter"), "a row that does not match: {item:?}");
}

#[test]
fn the_budget_bounds_the_evidence_and_the_best_passage_always_comes() {
    let index = billing();
    for bytes in [10, 200, 600, 1_200, 5_000] {
        let budget = Budget { bytes, ..BUDGET };
        let evidence = index.evidence("refund window days endpoints webhooks plans", budget).expect("evidence");
        assert!(!evidence.items.is_empty(), "{bytes}: nothing chosen");
        let size: usize = evidence.items.iter().map(|i| i.text.len() + i.heading.len() + i.source().len()).sum();
        if evidence.items.len() > 1 || evidence.items[0].text.contains('\n') {
            assert!(size <= bytes, "{bytes}: {size} bytes chosen: {evidence:?}");
        }
    }
    let one = Budget { items: 1, ..BUDGET };
    assert_eq!(index.evidence("refund window endpoints", one).expect("evidence").items.len(), 1);
}

#[test]
fn coverage_is_low_when_the_rare_words_are_nowhere() {
    let index = billing();
    let on_topic = index.evidence("how many webhook endpoints can one account have", BUDGET).expect("evidence");
    let off_topic = index.evidence("does it support kubernetes helm charts", BUDGET).expect("evidence");
    assert!(on_topic.coverage > 0.7, "on topic: {}", on_topic.coverage);
    assert!(off_topic.coverage < 0.3, "off topic: {} {:?}", off_topic.coverage, off_topic.items);
    let nothing = index.evidence("zzz qqq", BUDGET).expect("evidence");
    assert!(nothing.items.is_empty() && nothing.coverage == 0.0);
}

#[test]
fn passages_far_apart_are_joined_with_a_gap() {
    let index = index_of(&[(
        "faq.md",
        "# FAQ\n\nRefunds take 5 days to arrive.\n\nThe sky is blue today.\n\nGrass is green.\n\nA refund shows on the statement as ACME.\n",
    )]);
    let evidence = index.evidence("refund arrive statement", BUDGET).expect("evidence");
    let item = &evidence.items[0];
    assert_eq!(item.text, format!("Refunds take 5 days to arrive.{GAP}A refund shows on the statement as ACME."));
}

#[test]
fn the_neighbours_of_a_chosen_passage_fill_the_room_left() {
    let index = index_of(&[(
        "retries.md",
        "# Failed payments\n\nWhen a renewal charge fails:\n\n1. We email the customer.\n2. We retry after 3 days.\n3. We retry after 7 days.\n4. We cancel the subscription.\n\nUnrelated closing words here.\n",
    )]);
    let wide = index.evidence("when is a failed renewal charge retried", BUDGET).expect("evidence");
    let text = &wide.items[0].text;
    for step in ["2. We retry after 3 days.", "3. We retry after 7 days.", "1. We email the customer."] {
        assert!(text.contains(step), "{step} missing from {text:?}");
    }
    let narrow =
        index.evidence("when is a failed renewal charge retried", Budget { bytes: 110, ..BUDGET }).expect("evidence");
    assert!(narrow.items[0].text.len() < text.len(), "no room, no neighbours: {:?}", narrow.items[0].text);
}

#[test]
fn an_order_number_or_a_name_is_no_topic_and_the_words_the_docs_never_use_are_named() {
    let index = billing();
    let weak = crate::tools::Weak { coverage: 0.2, known: 0.6, min_relevance: 0.0, covers_at: 1.0 };
    // An order number names one case of a topic the docs cover: it weighs nothing.
    let order = index.evidence("why was order 4417 refunded within 14 days", BUDGET).expect("evidence");
    assert!(!weak.judges(&order), "coverage {} known {}", order.coverage, order.known);
    assert!(order.unknown.is_empty(), "{:?}", order.unknown);
    // Words the docs never use are named, as asked.
    let helm = index.evidence("are refunds deployed with kubernetes helm charts", BUDGET).expect("evidence");
    assert!(weak.judges(&helm), "coverage {} known {}", helm.coverage, helm.known);
    assert_eq!(helm.unknown, ["deployed", "kubernetes", "helm", "charts"], "as asked, in order");
}

#[test]
fn a_hit_deep_in_a_long_file_is_read() {
    let mut text = String::from("# Reference\n");
    for n in 0..120 {
        text.push_str(&format!("\n## Field {n}\n\nThe field number {n} holds an ordinary value.\n"));
    }
    text.push_str("\n## Zebra quota\n\nEach account may hold 42 zebras.\n");
    let index = index_of(&[("reference.md", &text)]);
    let evidence = index.evidence("how many zebras may an account hold", BUDGET).expect("evidence");
    let first = evidence.items.first().expect("an item");
    assert_eq!(first.source(), "docs/reference.md#zebra-quota", "{evidence:?}");
}

/// A lead-in that introduces a list, a table or code comes with it, as much as fits, cut from
/// the far end; never alone.
#[test]
fn a_lead_in_comes_with_what_it_introduces() {
    let index = index_of(&[
        (
            "python.md",
            "# Python\n\n## Versions\n\nThe interpreter is downloaded on first use and cached for later runs.\n\n\
             uv has Tier 1 support for the following Python versions:\n\n- CPython 3.9 on Linux\n- CPython 3.10 on Linux\n\
             - CPython 3.11 on Linux\n- CPython 3.12 on Linux\n- CPython 3.13 on Linux\n\nNothing else is promised here.\n",
        ),
        (
            "install.md",
            "# Install\n\nTo put the tool on a new machine, run this:\n\n```sh\ncurl -LsSf https://x.example/i.sh | sh\n```\n",
        ),
        (
            "limits.md",
            "# Limits\n\nWhich plans get priority support is set per plan.\n\nThese plans are not eligible:\n\n- Free\n- Hobby\n",
        ),
    ]);
    let question = "which python versions have tier 1 support";
    let wide = index.evidence(question, BUDGET).expect("evidence");
    let text = &wide.items[0].text;
    assert!(text.starts_with("uv has Tier 1 support for the following Python versions:"), "{text:?}");
    assert!(text.ends_with("- CPython 3.13 on Linux"), "the whole list: {text:?}");
    // Room for part of the list: its first items, in order, none skipped.
    let narrow = index.evidence(question, Budget { bytes: 170, ..BUDGET }).expect("evidence");
    let text = &narrow.items[0].text;
    assert!(text.contains("3.9") && !text.contains("3.13"), "cut from the far end: {text:?}");
    let items: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    let expected: Vec<String> = (9..9 + items.len()).map(|v| format!("- CPython 3.{v} on Linux")).collect();
    assert_eq!(items, expected, "never from the middle: {text:?}");
    // Code, introduced.
    let code = index.evidence("how do I put the tool on a new machine", BUDGET).expect("evidence");
    let item = code.items.iter().find(|i| i.path == "docs/install.md").expect("install");
    assert!(item.text.contains("To put the tool on a new machine, run this:\n\n```sh\ncurl"), "{item:?}");
    // A list item chosen brings the lead-in that says what the list is.
    let not = index.evidence("is the hobby plan eligible", BUDGET).expect("evidence");
    let item = not.items.iter().find(|i| i.path == "docs/limits.md").expect("limits");
    assert!(item.text.contains("These plans are not eligible:") && item.text.contains("- Hobby"), "{item:?}");
}

/// The leads read for their meaning: the reranker's most relevant first (always), others at
/// 0.5 or more, then the vectors' standouts, two at most.
#[test]
fn the_sections_read_for_their_meaning() {
    let none: [Option<f64>; 4] = [None; 4];
    assert_eq!(by_meaning(&[0.0, 3.0, 1.0, 2.6], &none), [1, 3], "standing 2.5 or more, most first");
    assert_eq!(by_meaning(&[0.0; 4], &[Some(0.01), Some(0.2), None, Some(0.1)]), [1], "the most relevant, alone");
    assert_eq!(by_meaning(&[0.0; 4], &[Some(0.9), Some(0.6), Some(0.7), None]), [0, 2], "0.5 or more, two at most");
    assert_eq!(by_meaning(&[0.0, 0.0, 3.0, 0.0], &[Some(0.2), None, None, None]), [0, 2], "then the vectors'");
    assert!(by_meaning(&[], &[]).is_empty());
}

/// The docs' share of a question calls it not covered only when what they lack is a name: the
/// asker's everyday words are phrasing, a product the docs never mention is a subject.
#[test]
fn only_a_name_the_docs_never_use_makes_the_docs_share_decide() {
    let index = billing();
    let weak = crate::tools::Weak { coverage: 0.0, known: 0.6, min_relevance: 0.0, covers_at: 1.0 };
    let everyday = index.evidence("can a customer reclaim leftover payment money", BUDGET).expect("evidence");
    assert!(everyday.unknown.contains(&"leftover".to_string()), "{:?}", everyday.unknown);
    assert!(everyday.unknown_named.is_empty(), "{:?}", everyday.unknown_named);
    assert!(everyday.known < 0.6 && !weak.judges(&everyday), "known {}", everyday.known);
    let named = index.evidence("can a customer reclaim a payment through Salesforce", BUDGET).expect("evidence");
    assert_eq!(named.unknown_named, ["salesforce"], "{:?}", named.unknown);
    assert!(named.known < 0.6 && weak.judges(&named), "known {}", named.known);
    // Nothing of the question found is 0, never -0 (which would print as "-0.00"): "ask" finds
    // sections, and is everyday English; "qqqxyz", all that weighs, is nowhere.
    let nothing = index.evidence("ask qqqxyz", BUDGET).expect("evidence");
    assert!(!nothing.searched.is_empty(), "{:?}", nothing.searched);
    assert!(nothing.coverage == 0.0 && nothing.coverage.is_sign_positive(), "{}", nothing.coverage);
    assert!(nothing.known.is_sign_positive(), "{}", nothing.known);
}
