//! The published docs site (`[site]`): the public URL of a cited section, so a support agent
//! pastes a link to the docs page, not a path in a repository. `page` says where a
//! generator puts a document's page, `anchor` which id it gives a heading; this module joins
//! them to the base URL, reading the cited document (confined, as a tool reads it) when the
//! generator's ids or Docusaurus's front matter depend on it.

mod anchor;
mod page;

use url::Url;

use crate::config::{Config, ConfigError, Generator, SiteConfig};
use crate::doc_kind::DocKind;
use crate::index::chunk::{SiteOutline, site_outline};
use crate::workspace::{Workspace, policy};

/// Where the docs are published and what built them; made once from `[site]`.
#[derive(Debug, Clone)]
pub struct Site {
    /// The URL of the docs folder's root on the site, ending in `/`.
    base: Url,
    /// What built the site.
    generator: Generator,
    /// The largest document read for its headings (`index.max_file_bytes`).
    max_file_bytes: u64,
}

/// The settings' check only this module makes: the base URL reads as an `http` or `https`
/// URL with a host and nothing after its path.
pub fn check_config(config: &Config) -> Result<(), ConfigError> {
    base_url(&config.site).map(|_| ())
}

/// `site.base_url` read, ending in `/`; `None` when it is empty.
fn base_url(site: &SiteConfig) -> Result<Option<Url>, ConfigError> {
    let raw = site.base_url.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let bad = |why: &str| {
        ConfigError(format!(
            "site.base_url (DOCS_AGENT_SITE_URL) {why}: `{}`; give the URL the docs folder is published at, \
             such as https://docs.example.com/ (or leave it empty for citations without a URL)",
            crate::guard::clip(raw, 120)
        ))
    };
    let mut url = Url::parse(raw).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(bad("must be an http:// or https:// URL with a host"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must have no query, fragment or user name"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(Some(url))
}

impl Site {
    /// The site of `config`, or `None` when `site.base_url` is empty (the configuration was
    /// checked by [`check_config`]).
    pub fn of(config: &Config) -> Result<Option<Site>, ConfigError> {
        Ok(base_url(&config.site)?.map(|base| Site {
            base,
            generator: config.site.generator,
            max_file_bytes: config.index.max_file_bytes,
        }))
    }

    /// The public URL of the section `anchor` of the document at `path` (`docs/...`, as
    /// citations name it; an empty anchor is the page's top). The page alone when its heading
    /// cannot be found (the document changed or cannot be read); `None` for a path outside
    /// `docs/`, a document the operator's rules hide, or one the generator makes no page of.
    pub fn url(&self, workspace: &Workspace, path: &str, anchor: &str) -> Option<String> {
        let inner = path.strip_prefix("docs/")?;
        // What the operator's rules hide is not linked: a URL would say what it holds.
        if workspace.hides(path) {
            return None;
        }
        let outline = self.outline(workspace, path);
        let page = page::of(self.generator, inner, outline.as_ref().and_then(|o| o.front_matter.as_deref()))?;
        let mut url = self.base.clone();
        // The base itself (ending in `/`) is the page of the docs' top `index.md`.
        if !page.segments.is_empty() {
            let mut segments = url.path_segments_mut().ok()?;
            segments.pop_if_empty().extend(&page.segments);
            if page.folder {
                segments.push("");
            }
        }
        let fragment = match (anchor, &outline) {
            ("", _) => None,
            (anchor, Some(outline)) => anchor::on_page(self.generator, &outline.headings, anchor),
            // A file published as it is, or a Docusaurus page unread: the index's anchor, as
            // the site keeps it; else the page alone.
            (anchor, None) => self.keeps_anchors(inner).then(|| anchor.to_string()),
        };
        url.set_fragment(fragment.as_deref().filter(|f| !f.is_empty()));
        Some(url.into())
    }

    /// The cited document's outline, when the generator renders it and its ids or its front
    /// matter matter, and it reads.
    fn outline(&self, workspace: &Workspace, path: &str) -> Option<SiteOutline> {
        if self.generator == Generator::Files || !page::renders(self.generator, path) {
            return None;
        }
        let model_path = policy::check_read(path).ok()?;
        let source = workspace.read_text(&model_path, self.max_file_bytes).ok()?;
        // MDX is read as the index reads it: its JSX and imports cut out, on the same lines.
        let source = match DocKind::of(path) {
            Some(DocKind::Mdx) => crate::index::mdx::to_markdown(&source).ok()?,
            _ => source,
        };
        Some(site_outline(&source))
    }

    /// True when a citation's anchor is the page's id as it is: the files as they are,
    /// Docusaurus (GitHub's slugs, as the index's), and documents the generator publishes as
    /// they are.
    fn keeps_anchors(&self, inner: &str) -> bool {
        matches!(self.generator, Generator::Files | Generator::Docusaurus) || !page::renders(self.generator, inner)
    }
}

#[cfg(test)]
mod tests;
