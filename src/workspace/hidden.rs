//! Which documents the operator's rules keep from being read, and so from being found: the one
//! answer every way of reading the docs asks (search, evidence, sections, resources, a model's
//! `read_file`), so a denied document is invisible, not only unreadable.
//!
//! A rule matches a path as written; a symbolic link inside `docs/` (`docs/pub -> internal`,
//! `docs/alias.md -> internal/plan.md`) is resolved inside `docs/` and the rule asked again of
//! where it leads, so a link cannot carry a denied text out under another name.

use std::sync::Arc;

use cap_std::fs::Dir;

/// The question a rule answers: does it keep `path` (`docs/…`) from being read?
type Rule = dyn Fn(&str) -> bool + Send + Sync;

/// The docs folder links are resolved in, one for every copy of a [`Hidden`].
type SharedDir = Arc<std::sync::RwLock<Arc<Dir>>>;

/// The operator's reading rules and the `docs/` folder their paths are resolved in. The default
/// hides nothing and asks the disk nothing.
#[derive(Clone, Default)]
pub struct Hidden {
    /// The rule and the folder; none when no rule could hide a document.
    /// The docs folder is shared by every copy and replaced in all of them at once when a git
    /// source's new tree is served ([`Hidden::switch`]).
    rule: Option<(Arc<Rule>, SharedDir)>,
}

impl std::fmt::Debug for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.rule.is_some() { "Hidden(rules)" } else { "Hidden(none)" })
    }
}

impl Hidden {
    /// Documents under `docs` that `hides` says are kept from being read. Hides nothing when
    /// the folder cannot be opened a second time (then nothing can be read through it either).
    pub fn new(docs: &Dir, hides: impl Fn(&str) -> bool + Send + Sync + 'static) -> Hidden {
        match docs.try_clone() {
            Ok(dir) => Hidden { rule: Some((Arc::new(hides), Arc::new(std::sync::RwLock::new(Arc::new(dir))))) },
            Err(e) => {
                tracing::warn!("docs/ could not be opened to resolve links for the operator's rules ({e})");
                Hidden::default()
            }
        }
    }

    /// True when the rules keep `path` (`docs/…`, as indexed or asked for) from being read: its
    /// own name, or where its links lead inside `docs/`. A path that cannot be resolved any more
    /// (deleted since it was indexed) is hidden when there are rules: failing closed.
    pub fn hides(&self, path: &str) -> bool {
        let Some((rule, dir)) = &self.rule else {
            return false;
        };
        let dir = dir.read().unwrap_or_else(|p| p.into_inner()).clone();
        rule(path) || resolved(&dir, path).is_none_or(|to| to != path && rule(&to))
    }

    /// True when some rule may hide a document: a word held by the docs may then be held only by
    /// a hidden one.
    pub fn has_rules(&self) -> bool {
        self.rule.is_some()
    }

    /// Resolves links in `docs` from now on (a git source's new tree), in every copy.
    pub fn switch(&self, docs: &Dir) {
        let Some((_, dir)) = &self.rule else { return };
        match docs.try_clone() {
            Ok(docs) => *dir.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(docs),
            Err(e) => tracing::warn!("the new docs folder could not be opened to resolve links ({e})"),
        }
    }

    /// Where `path` leads through a link, when that is a document the rules hide though its
    /// own name is not: the reason to refuse reading it under this name.
    pub fn leads_to_hidden(&self, path: &str) -> Option<String> {
        let (rule, dir) = self.rule.as_ref()?;
        let dir = dir.read().unwrap_or_else(|p| p.into_inner()).clone();
        let to = resolved(&dir, path)?;
        (to != path && !rule(path) && rule(&to)).then_some(to)
    }
}

/// `path` (`docs/…`) with every link in it resolved inside `docs`, as `docs/…`; none when it
/// does not exist or leads out.
fn resolved(docs: &Dir, path: &str) -> Option<String> {
    let inner = path.strip_prefix("docs/")?;
    let canonical = docs.canonicalize(inner).ok()?;
    let inner = canonical.to_str()?.trim_start_matches("./");
    Some(if inner.is_empty() || inner == "." { "docs".to_string() } else { format!("docs/{inner}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs_with_links() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let docs = tmp.path().join("docs");
        std::fs::create_dir_all(docs.join("internal")).expect("mkdir");
        std::fs::write(docs.join("internal/plan.md"), "# Plan\n\nBluebird.\n").expect("write");
        std::fs::write(docs.join("refunds.md"), "# Refunds\n").expect("write");
        std::os::unix::fs::symlink("internal", docs.join("pub")).expect("dir link");
        std::os::unix::fs::symlink("internal/plan.md", docs.join("plan-alias.md")).expect("file link");
        std::os::unix::fs::symlink("refunds.md", docs.join("refunds-alias.md")).expect("file link");
        let dir = Dir::open_ambient_dir(&docs, cap_std::ambient_authority()).expect("open docs");
        (tmp, dir)
    }

    /// A link to a hidden document is hidden and refused under its own name; a link to a
    /// visible one is not; without rules nothing is hidden.
    #[test]
    fn a_link_is_judged_by_where_it_leads() {
        let (_tmp, dir) = docs_with_links();
        let hidden = Hidden::new(&dir, |path| path.starts_with("docs/internal/"));
        for path in ["docs/internal/plan.md", "docs/pub/plan.md", "docs/plan-alias.md"] {
            assert!(hidden.hides(path), "{path}");
        }
        assert_eq!(hidden.leads_to_hidden("docs/pub/plan.md").as_deref(), Some("docs/internal/plan.md"));
        assert_eq!(hidden.leads_to_hidden("docs/plan-alias.md").as_deref(), Some("docs/internal/plan.md"));
        assert_eq!(hidden.leads_to_hidden("docs/internal/plan.md"), None, "its own name decides");
        for path in ["docs/refunds.md", "docs/refunds-alias.md"] {
            assert!(!hidden.hides(path) && hidden.leads_to_hidden(path).is_none(), "{path}");
        }
        assert!(hidden.hides("docs/gone.md"), "what cannot be resolved is hidden while there are rules");
        assert!(!Hidden::default().hides("docs/pub/plan.md"));
    }
}

#[cfg(test)]
mod switch_tests {
    use super::*;

    #[test]
    fn a_switch_resolves_in_the_new_folder_for_every_copy() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for (tree, file) in [("a", "old.md"), ("b", "new.md")] {
            std::fs::create_dir_all(tmp.path().join(tree)).expect("mkdir");
            std::fs::write(tmp.path().join(tree).join(file), "# Doc\n").expect("write");
        }
        let open =
            |tree: &str| Dir::open_ambient_dir(tmp.path().join(tree), cap_std::ambient_authority()).expect("dir");
        let hidden = Hidden::new(&open("a"), |path| path.contains("secret"));
        let copy = hidden.clone();
        assert!(!copy.hides("docs/old.md"));
        assert!(copy.hides("docs/new.md"), "not in the old folder: failing closed");
        hidden.switch(&open("b"));
        assert!(!copy.hides("docs/new.md"), "the copy resolves in the new folder");
        assert!(copy.hides("docs/old.md"));
    }
}
