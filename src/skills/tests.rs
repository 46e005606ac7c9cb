//! Tables of SKILL.md texts and folders, and what the loader must make of them.

use super::*;

/// What `parse` should give for one input.
enum Want {
    /// A valid skill with this name.
    Skill(&'static str),
    /// Exactly these (rule, line) problems, in this order.
    Problems(&'static [(&'static str, Option<usize>)]),
}

/// A SKILL.md with these front-matter lines and body.
fn doc(front: &str, body: &str) -> String {
    format!("---\n{front}---\n{body}")
}

/// A SKILL.md for `skills/cite-sources/` with extra front-matter lines after the
/// required ones (so they start on line 4).
fn cite(extra: &str) -> String {
    doc(&format!("name: cite-sources\ndescription: Cite the docs page.\n{extra}"), "Body")
}

fn check(label: &str, folder: &str, text: &str, want: &Want) {
    let location = format!("skills/{folder}/SKILL.md");
    match (want, Skills::parse(folder, &location, text)) {
        (Want::Skill(name), Ok(skill)) => {
            assert_eq!(skill.name, *name, "{label}");
            assert_eq!(skill.location, location, "{label}");
        }
        (Want::Problems(expected), Err(problems)) => {
            let got: Vec<_> = problems.iter().map(|p| (p.rule, p.line)).collect();
            assert_eq!(got, expected.to_vec(), "{label}: {problems:#?}");
            for problem in &problems {
                assert_eq!(problem.file, location, "{label}");
                assert!(!problem.message.is_empty(), "{label}");
            }
        }
        (_, got) => panic!("{label}: unexpected result {got:#?}"),
    }
}

#[test]
fn parse_table() {
    use Want::{Problems, Skill};
    let name_64 = "a".repeat(64);
    let name_65 = "a".repeat(65);
    let compat_501 = "c".repeat(501);
    #[rustfmt::skip]
    let cases: Vec<(&str, &str, String, Want)> = vec![
        ("valid minimal", "cite-sources", cite(""), Skill("cite-sources")),
        ("valid all optional fields", "cite-sources", cite("license: Apache-2.0\ncompatibility: any\nmetadata:\n  author: docs-team\nallowed-tools: search read\n"), Skill("cite-sources")),
        ("digits and hyphens", "v2-notes", doc("name: v2-notes\ndescription: d\n", ""), Skill("v2-notes")),
        ("name of 64 chars", &name_64, doc(&format!("name: {name_64}\ndescription: d\n"), ""), Skill("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")),
        ("name uppercase", "Cite-Sources", doc("name: Cite-Sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name underscore", "cite_sources", doc("name: cite_sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name leading hyphen", "-cite", doc("name: -cite\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name trailing hyphen", "cite-", doc("name: cite-\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name double hyphen", "cite--sources", doc("name: cite--sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name of 65 chars", &name_65, doc(&format!("name: {name_65}\ndescription: d\n"), ""), Problems(&[("name", Some(2))])),
        ("name empty", "cite", doc("name: \"\"\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name without value", "cite", doc("name:\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name a number", "42", doc("name: 42\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
        ("name missing", "cite", doc("description: d\n", ""), Problems(&[("name", Some(1))])),
        ("name differs from folder", "other", cite(""), Problems(&[("name-matches-folder", Some(2))])),
        ("description blank", "cite", doc("name: cite\ndescription: \"   \"\n", ""), Problems(&[("description", Some(3))])),
        ("description 1025 chars", "cite", doc(&format!("name: cite\ndescription: {}\n", "d".repeat(1025)), ""), Problems(&[("description", Some(3))])),
        ("description 1024 chars", "cite", doc(&format!("name: cite\ndescription: {}\n", "d".repeat(1024)), ""), Skill("cite")),
        ("description missing", "cite", doc("name: cite\n", ""), Problems(&[("description", Some(1))])),
        ("no front matter", "cite", "# Cite sources\n".to_string(), Problems(&[("front-matter", Some(1))])),
        ("front matter not on line 1", "cite", format!("\n{}", cite("")), Problems(&[("front-matter", Some(1))])),
        ("front matter unclosed", "cite", "---\nname: cite\ndescription: d\n".to_string(), Problems(&[("front-matter", Some(1))])),
        ("front matter empty", "cite", doc("", "Body"), Problems(&[("front-matter", Some(1))])),
        ("front matter a list", "cite", doc("- name\n", ""), Problems(&[("front-matter", Some(2))])),
        ("yaml syntax error on line 2", "cite", doc("name: cite: sources\ndescription: d\n", ""), Problems(&[("yaml", Some(2))])),
        ("yaml syntax error on line 4", "cite-sources", cite("license: MIT: x\n"), Problems(&[("yaml", Some(4))])),
        ("yaml duplicate key", "cite-sources", cite("name: again\n"), Problems(&[("yaml", Some(2))])),
        ("unknown field", "cite-sources", cite("version: 1\n"), Problems(&[("unknown-field", Some(4))])),
        ("metadata non-string value", "cite-sources", cite("metadata:\n  author: me\n  version: 1.0\n"), Problems(&[("metadata", Some(6))])),
        ("metadata not a map", "cite-sources", cite("metadata: yes\n"), Problems(&[("metadata", Some(4))])),
        ("license not a string", "cite-sources", cite("license: [MIT]\n"), Problems(&[("license", Some(4))])),
        ("compatibility 501 chars", "cite-sources", cite(&format!("compatibility: {compat_501}\n")), Problems(&[("compatibility", Some(4))])),
        ("allowed-tools as string", "cite-sources", cite("allowed-tools: search_docs read_page\n"), Skill("cite-sources")),
        ("allowed-tools as list", "cite-sources", cite("allowed-tools:\n  - search_docs\n  - read_page\n"), Skill("cite-sources")),
        ("allowed-tools a number", "cite-sources", cite("allowed-tools: 3\n"), Problems(&[("allowed-tools", Some(4))])),
        ("allowed-tools list of maps", "cite-sources", cite("allowed-tools:\n  - a: b\n"), Problems(&[("allowed-tools", Some(4))])),
        ("several problems, by line", "Cite", doc("name: Cite\ncolour: red\n", ""), Problems(&[("description", Some(1)), ("name", Some(2)), ("unknown-field", Some(3))])),
        ("CRLF line endings", "cite-sources", cite("").replace('\n', "\r\n"), Skill("cite-sources")),
        ("byte-order mark", "cite-sources", format!("\u{feff}{}", cite("")), Skill("cite-sources")),
    ];
    for (label, folder, text, want) in &cases {
        check(label, folder, text, want);
    }
}

#[test]
fn all_fields_are_kept() {
    let text = cite(
        "license: Apache-2.0\ncompatibility: Needs network access\nmetadata:\n  \
         author: docs-team\n  version: \"1.0\"\nallowed-tools:\n  - search_docs\n  - read_page\n",
    )
    .replace("Body", "\n\n# Cite sources\n\nAlways link the page.\n\n");
    let skill = Skills::parse("cite-sources", "skills/cite-sources/SKILL.md", &text);
    let want = Skill {
        name: "cite-sources".to_string(),
        description: "Cite the docs page.".to_string(),
        location: "skills/cite-sources/SKILL.md".to_string(),
        body: "# Cite sources\n\nAlways link the page.".to_string(),
        license: Some("Apache-2.0".to_string()),
        compatibility: Some("Needs network access".to_string()),
        metadata: BTreeMap::from([
            ("author".to_string(), "docs-team".to_string()),
            ("version".to_string(), "1.0".to_string()),
        ]),
        allowed_tools: vec!["search_docs".to_string(), "read_page".to_string()],
    };
    assert_eq!(skill, Ok(want));
}

#[test]
fn allowed_tools_forms() {
    let cases = [
        ("allowed-tools: search_docs  read_page\n", vec!["search_docs", "read_page"]),
        ("allowed-tools: [search_docs, read_page]\n", vec!["search_docs", "read_page"]),
        ("allowed-tools: \"\"\n", vec![]),
        ("", vec![]),
    ];
    for (extra, want) in cases {
        let skill = Skills::parse("cite-sources", "s", &cite(extra));
        let got = skill.map(|s| s.allowed_tools);
        assert_eq!(got, Ok(want.iter().map(|t| t.to_string()).collect()), "{extra}");
    }
}

#[test]
fn messages_say_what_to_do() {
    let cases = [
        (
            "Cite_Sources",
            doc("name: Cite_Sources\ndescription: d\n", ""),
            "skills/Cite_Sources/SKILL.md:2: [name] name `Cite_Sources` may contain only lowercase letters, digits and hyphens",
        ),
        (
            "cite-sources",
            cite("version: 1\n"),
            "skills/cite-sources/SKILL.md:4: [unknown-field] unknown field `version`; allowed: name, description, license, compatibility, metadata, allowed-tools",
        ),
    ];
    for (folder, text, want) in cases {
        let location = format!("skills/{folder}/SKILL.md");
        let problems = Skills::parse(folder, &location, &text).err().unwrap_or_default();
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(shown, vec![want.to_string()]);
    }
    let no_line = problem_at("skills/x/SKILL.md", None, "missing-skill-md", "m".into());
    assert_eq!(no_line.to_string(), "skills/x/SKILL.md: [missing-skill-md] m");
}

/// Each way a field's value is refused: the error the check returns for the input that causes
/// it, and its message (the [`SkillProblem`]'s, word for word).
#[test]
fn field_errors_name_the_field_and_what_to_write() {
    let value = |yaml: &str| yaml_serde::from_str::<Value>(yaml).expect("yaml");
    let long_description = "d".repeat(1025);
    let long_compatibility = "c".repeat(501);
    #[rustfmt::skip]
    let cases: Vec<(&str, Result<String, FieldError>, FieldError, &str)> = vec![
        ("no value", string_field("license", &value("~")).map(|_| String::new()),
         FieldError::NoValue { key: "license".into() },
         "`license` has no value; give it one or remove the line"),
        ("not a string", string_field("name", &value("42")),
         FieldError::NotAString { key: "name".into(), found: "number" },
         "`name` must be a string, found a number; put the value in quotes"),
        ("blank description", check_description("   "),
         FieldError::EmptyDescription,
         "`description` is empty; say what the skill does and when to use it"),
        ("long description", check_description(&long_description),
         FieldError::LongDescription { chars: 1025 },
         "`description` is 1025 characters; keep it to 1024 and move detail into the body"),
        ("blank compatibility", check_compatibility(" ".into()),
         FieldError::EmptyCompatibility,
         "`compatibility` is empty; describe the requirements or remove the line"),
        ("long compatibility", check_compatibility(long_compatibility),
         FieldError::LongCompatibility { chars: 501 },
         "`compatibility` is 501 characters; keep it to 500"),
        ("tool entry", allowed_tools_field(&value("[read, 3]")).map(|_| String::new()),
         FieldError::ToolEntry { found: "number" },
         "`allowed-tools` entries must be non-empty strings, found a number"),
        ("tools shape", allowed_tools_field(&value("{a: b}")).map(|_| String::new()),
         FieldError::ToolsShape { found: "map" },
         "`allowed-tools` must be a space-separated string or a list of strings, found a map"),
    ];
    for (label, got, want, message) in cases {
        assert_eq!(got, Err(want.clone()), "{label}");
        assert_eq!(want.to_string(), message, "{label}");
    }
}

/// A SKILL.md that is a folder, or over the size limit, is refused before it is read.
#[test]
fn files_are_refused_as_not_regular_or_too_large() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(tmp.path().join("folder")).expect("mkdir");
    std::fs::write(tmp.path().join("big.md"), vec![b'a'; MAX_SKILL_BYTES as usize + 1]).expect("write");
    std::fs::write(tmp.path().join("small.md"), "---\n").expect("write");
    let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("open");
    let check = |name: &str| check_regular_and_small(&dir.metadata(name).expect("metadata"));
    #[rustfmt::skip]
    let cases = [
        ("folder", Err(FileRefused::NotRegular),
         "SKILL.md is not a regular file (a directory, FIFO or device); replace it with a plain Markdown file"),
        ("big.md", Err(FileRefused::TooLarge),
         "file is larger than 256 KiB; keep the SKILL.md short and move long material into files the skill points to"),
        ("small.md", Ok(()), ""),
    ];
    for (name, want, message) in cases {
        let got = check(name);
        assert_eq!(got, want, "{name}");
        if let Err(refused) = got {
            assert_eq!(refused.to_string(), message, "{name}");
        }
    }
}

#[test]
fn catalog_lists_skills_escaped_and_without_bodies() {
    let mut skills = Skills::default();
    let texts = [("b-skill", "description: Use when a < b & c > d\n"), ("a-skill", "description: First\n")];
    for (name, front) in texts {
        let text = doc(&format!("name: {name}\n{front}"), "SECRET BODY <b>");
        let location = format!("skills/{name}/SKILL.md");
        skills.add(Skills::parse(name, &location, &text));
    }
    skills.skills.sort_by(|a, b| a.name.cmp(&b.name));
    let want = "<available_skills>\n<skill>\n<name>a-skill</name>\n<description>First</description>\n\
                <location>skills/a-skill/SKILL.md</location>\n</skill>\n<skill>\n<name>b-skill</name>\n\
                <description>Use when a &lt; b &amp; c &gt; d</description>\n\
                <location>skills/b-skill/SKILL.md</location>\n</skill>\n</available_skills>";
    let catalog = skills.catalog();
    assert_eq!(catalog, want);
    assert!(!catalog.contains("SECRET BODY"));
    assert_eq!(skills.get("b-skill").map(|s| s.body.as_str()), Some("SECRET BODY <b>"));
    assert!(skills.get("c-skill").is_none());
    assert_eq!(Skills::default().catalog(), "");
}

/// How one `skills/<folder>` is laid out in the load fixture.
enum Fixture {
    /// SKILL.md with this text.
    Text(String),
    /// SKILL.md with these raw bytes.
    Bytes(&'static [u8]),
    /// The folder but no SKILL.md.
    NoSkillMd,
    /// SKILL.md is a symlink to a file outside the workspace.
    LinkOutside,
    /// SKILL.md is a FIFO nobody writes to.
    Fifo,
    /// The folder itself is a symlink to a folder outside the workspace.
    FolderLinkOutside,
    /// A loose file, not a folder.
    LooseFile,
}

/// One load-fixture row: folder name, how it is laid out, and the (rule, line) of the
/// problem it must produce (`None`: no problem).
type Row = (&'static str, Fixture, Option<(&'static str, Option<usize>)>);

/// Builds `root/skills/...` from the table; `outside/` holds what links point to.
fn build(base: &std::path::Path, table: &[Row]) {
    let outside = base.join("outside");
    let skills = base.join("root").join("skills");
    std::fs::create_dir_all(outside.join("secret-skill")).unwrap();
    std::fs::write(outside.join("SKILL.md"), cite("")).unwrap();
    std::fs::create_dir_all(&skills).unwrap();
    for (folder, fixture, _) in table {
        let dir = skills.join(folder);
        let file = dir.join(SKILL_FILE);
        match fixture {
            Fixture::FolderLinkOutside => std::os::unix::fs::symlink(outside.join("secret-skill"), &dir).unwrap(),
            Fixture::LooseFile => std::fs::write(&dir, "notes").unwrap(),
            _ => std::fs::create_dir(&dir).unwrap(),
        }
        match fixture {
            Fixture::Text(text) => std::fs::write(&file, text).unwrap(),
            Fixture::Bytes(bytes) => std::fs::write(&file, bytes).unwrap(),
            Fixture::LinkOutside => std::os::unix::fs::symlink(outside.join("SKILL.md"), &file).unwrap(),
            Fixture::Fifo => {
                let status = std::process::Command::new("mkfifo").arg(&file).status();
                assert!(status.is_ok_and(|s| s.success()), "mkfifo failed");
            }
            _ => {}
        }
    }
}

#[test]
fn load_reports_bad_folders_and_keeps_good_ones() {
    let huge = format!("{}{}", cite(""), "x".repeat(MAX_SKILL_BYTES as usize));
    #[rustfmt::skip]
    let table: Vec<Row> = vec![
        ("cite-sources", Fixture::Text(cite("")), None),
        ("summarize", Fixture::Text(doc("name: summarize\ndescription: Sum up.\n", "Body")), None),
        ("bad-name", Fixture::Text(cite("")), Some(("name-matches-folder", Some(2)))),
        ("empty", Fixture::NoSkillMd, Some(("missing-skill-md", None))),
        ("escape", Fixture::LinkOutside, Some(("unreadable", None))),
        ("fifo", Fixture::Fifo, Some(("unreadable", None))),
        ("huge", Fixture::Text(huge), Some(("unreadable", None))),
        ("latin1", Fixture::Bytes(b"---\nname: latin1\ndescription: caf\xe9\n---\n"), Some(("unreadable", Some(3)))),
        ("linked-folder", Fixture::FolderLinkOutside, Some(("unreadable", None))),
        ("notes.txt", Fixture::LooseFile, None),
    ];
    let base = tempfile::tempdir().unwrap();
    build(base.path(), &table);
    let root = Dir::open_ambient_dir(base.path().join("root"), cap_std::ambient_authority()).unwrap();
    // Load on another thread so a FIFO that blocks fails the test instead of hanging it.
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(Skills::load(&root)));
    let loaded =
        receive.recv_timeout(std::time::Duration::from_secs(20)).expect("Skills::load hung (a FIFO was opened?)");

    let names: Vec<&str> = loaded.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cite-sources", "summarize"]);
    let got: Vec<(String, &str, Option<usize>)> =
        loaded.problems.iter().map(|p| (p.file.clone(), p.rule, p.line)).collect();
    let want: Vec<(String, &str, Option<usize>)> = table
        .iter()
        .filter_map(|(folder, fixture, want)| {
            let file = match fixture {
                Fixture::FolderLinkOutside => format!("skills/{folder}"),
                _ => format!("skills/{folder}/SKILL.md"),
            };
            want.map(|(rule, line)| (file, rule, line))
        })
        .collect();
    assert_eq!(got, want, "{:#?}", loaded.problems);
    let catalog = loaded.catalog();
    assert!(catalog.contains("<location>skills/summarize/SKILL.md</location>"));
    assert!(!catalog.contains("bad-name"));
}

#[test]
fn load_without_skills_folder_is_empty() {
    let base = tempfile::tempdir().unwrap();
    let root = Dir::open_ambient_dir(base.path(), cap_std::ambient_authority()).unwrap();
    let loaded = Skills::load(&root);
    assert!(loaded.skills.is_empty() && loaded.problems.is_empty());
    assert_eq!(loaded.catalog(), "");
}
