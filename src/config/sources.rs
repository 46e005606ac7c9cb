//! `[[sources]]`: where the documents come from when they live in a git repository. Plain data;
//! `git::check_config` parses the URL and reads the credentials.

use serde::Deserialize;

/// One git repository whose branch (or a folder of it) is the docs.
///
/// ```toml
/// [[sources]]
/// name = "billing"
/// git = "https://git.example.com/acme/billing-docs.git"
/// branch = "main"
/// path = "docs"
/// every = "5m"
/// token_env = "BILLING_DOCS_TOKEN"
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// A short name (letters, digits, `-`, `_`): the folder its trees are kept in and the
    /// webhook's route (`POST /v1/sources/NAME/sync`).
    pub name: String,
    /// The repository: an `https://` (or `http://`) URL, or the path of a repository on this
    /// machine (`/srv/git/docs.git`, `file:///srv/git/docs.git`), read in place.
    pub git: String,
    /// The branch whose tip is served.
    #[serde(default = "main_branch")]
    pub branch: String,
    /// The folder of the repository that holds the docs (empty: the whole tree).
    #[serde(default)]
    pub path: String,
    /// How often the branch is looked at: `30s`, `5m`, `1h`, or seconds; `0` or empty: only at
    /// start, by `docs-agent sources sync` and by the webhook.
    #[serde(default)]
    pub every: String,
    /// A file holding the HTTPS token (a mounted secret); never the token itself.
    #[serde(default)]
    pub token_file: Option<std::path::PathBuf>,
    /// An environment variable holding the HTTPS token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The user name sent with the token: `x-access-token` (GitHub), `oauth2` (GitLab),
    /// `x-token-auth` (Bitbucket).
    #[serde(default = "token_user")]
    pub username: String,
    /// A file holding the webhook's HMAC secret (GitHub's `X-Hub-Signature-256`; GitLab's
    /// `X-Gitlab-Token` is compared whole); without one, the webhook route refuses.
    #[serde(default)]
    pub webhook_secret_file: Option<std::path::PathBuf>,
    /// An environment variable holding the webhook's secret.
    #[serde(default)]
    pub webhook_secret_env: Option<String>,
    /// The token and the webhook secret once read from their files or variables (by the
    /// command line, before its sandbox): never from the configuration itself.
    #[serde(skip)]
    pub secrets: SourceSecrets,
}

/// A source's secrets, read from where the configuration says they are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SourceSecrets {
    /// The HTTPS token.
    pub token: Option<String>,
    /// The webhook's secret.
    pub webhook: Option<String>,
}

impl std::fmt::Debug for SourceSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Option<String>| if s.is_some() { "[set]" } else { "[unset]" };
        f.debug_struct("SourceSecrets").field("token", &set(&self.token)).field("webhook", &set(&self.webhook)).finish()
    }
}

fn main_branch() -> String {
    "main".into()
}

fn token_user() -> String {
    "x-access-token".into()
}

/// The shortest poll interval: a forge rate-limits clients that ask more often.
pub const MIN_EVERY_SECS: u64 = 10;

impl SourceConfig {
    /// The poll interval in seconds (`None`: never polled), or what is wrong with `every`.
    pub fn every_secs(&self) -> Result<Option<u64>, String> {
        let text = self.every.trim();
        if text.is_empty() || text == "0" {
            return Ok(None);
        }
        let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
            Some(at) => text.split_at(at),
            None => (text, "s"),
        };
        let scale = match unit.trim() {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            _ => {
                return Err(format!(
                    "sources.{}.every: {text:?} is not a duration; write 30s, 5m, 1h or seconds",
                    self.name
                ));
            }
        };
        let secs = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)).ok_or_else(|| {
            format!("sources.{}.every: {text:?} is not a duration; write 30s, 5m, 1h or seconds", self.name)
        })?;
        match secs {
            0 => Ok(None),
            s if s < MIN_EVERY_SECS => Err(format!(
                "sources.{}.every must be at least {MIN_EVERY_SECS}s (or 0: never polled), got {text}",
                self.name
            )),
            s => Ok(Some(s)),
        }
    }

    /// Checks what the types alone cannot: the name, the branch, the folder, the interval.
    pub fn validate(&self) -> Result<(), String> {
        let name = &self.name;
        if name.is_empty()
            || name.len() > 64
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "sources: name {name:?} must be 1 to 64 letters, digits, '-' or '_' (it names a folder and a route)"
            ));
        }
        if self.git.trim().is_empty() {
            return Err(format!("sources.{name}.git is empty: give an https:// URL or a repository's path"));
        }
        let branch = &self.branch;
        if branch.is_empty()
            || branch.starts_with(['-', '/'])
            || branch.ends_with(['/', '.'])
            || branch.contains("..")
            || branch.chars().any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c))
        {
            return Err(format!("sources.{name}.branch {branch:?} is not a branch name"));
        }
        let climbs = std::path::Path::new(&self.path)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if climbs {
            return Err(format!(
                "sources.{name}.path {:?} must be a folder inside the repository (no '..', not absolute)",
                self.path
            ));
        }
        if self.token_file.is_some() && self.token_env.is_some() {
            return Err(format!("sources.{name}: give token_file or token_env, not both"));
        }
        if self.webhook_secret_file.is_some() && self.webhook_secret_env.is_some() {
            return Err(format!("sources.{name}: give webhook_secret_file or webhook_secret_env, not both"));
        }
        self.every_secs().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(every: &str) -> SourceConfig {
        SourceConfig {
            name: "docs".into(),
            git: "https://example.com/docs.git".into(),
            branch: "main".into(),
            path: String::new(),
            every: every.into(),
            token_file: None,
            token_env: None,
            username: token_user(),
            webhook_secret_file: None,
            webhook_secret_env: None,
            secrets: SourceSecrets::default(),
        }
    }

    #[test]
    fn every_reads_units_and_refuses_what_it_cannot_read() {
        assert_eq!(source("").every_secs(), Ok(None));
        assert_eq!(source("0").every_secs(), Ok(None));
        assert_eq!(source("90").every_secs(), Ok(Some(90)));
        assert_eq!(source("5m").every_secs(), Ok(Some(300)));
        assert_eq!(source("2h").every_secs(), Ok(Some(7200)));
        assert!(source("5s").every_secs().is_err_and(|e| e.contains("at least 10s")));
        assert!(source("5 minutes").every_secs().is_err_and(|e| e.contains("not a duration")));
        assert!(source("99999999999999999999h").every_secs().is_err());
    }

    #[test]
    fn names_branches_and_folders_are_checked() {
        assert!(source("").validate().is_ok());
        let with = |f: fn(&mut SourceConfig)| {
            let mut s = source("");
            f(&mut s);
            s.validate()
        };
        assert!(with(|s| s.name = "../x".into()).is_err());
        assert!(with(|s| s.name = String::new()).is_err());
        assert!(with(|s| s.branch = "a..b".into()).is_err());
        assert!(with(|s| s.branch = "-x".into()).is_err());
        assert!(with(|s| s.branch = "release/2.0".into()).is_ok());
        assert!(with(|s| s.path = "../etc".into()).is_err_and(|e| e.contains("inside the repository")));
        assert!(with(|s| s.path = "/etc".into()).is_err());
        assert!(with(|s| s.path = "site/docs".into()).is_ok());
        assert!(
            with(|s| {
                s.token_file = Some("/t".into());
                s.token_env = Some("T".into());
            })
            .is_err_and(|e| e.contains("not both"))
        );
    }
}
