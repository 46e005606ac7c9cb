//! Git sources (`[[sources]]`): a branch's tree brought into the state folder, a whole new
//! folder per commit, so what is served is always one commit's tree, complete.
//!
//! On disk, under `STATE_DIR/sources/NAME/`:
//! - `repo.git/`: the bare cache a remote is fetched into (a repository on this machine is read
//!   in place and has none);
//! - `trees/COMMIT/`: a checked-out tree, written under a temporary name and renamed when whole;
//!   `trees/COMMIT.files`: its manifest (each file's blob id), so the next checkout links the
//!   files that did not change instead of writing them (same inode, size and time: the index
//!   reads only what changed);
//! - `state.json`: the last good commit, when it was synced, the last failure (written whole
//!   through a rename);
//! - `lock`: one sync at a time, across processes.
//!
//! A sync that fails (unreachable, the branch deleted, a bad tree) changes nothing: the last good
//! tree keeps serving, and the failure is recorded beside it. No `git` program is run, and no
//! helper, prompt or system configuration is read (`gix::open::Options::isolated`).

mod checkout;
mod fetch;
mod state;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::config::SourceConfig;

pub use state::{Skipped, State};

/// Where a source's repository is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
    /// Fetched over smart HTTP(S).
    Http(String),
    /// A repository on this machine, read in place.
    Local(PathBuf),
}

impl Remote {
    /// Reads a source's `git` value: an `http(s)://` URL (no credentials in it), a `file://` URL or
    /// a path. `ssh://` and `user@host:path` would need the `ssh` program, which the image has not.
    pub fn parse(name: &str, git: &str) -> Result<Remote, String> {
        let git = git.trim();
        if let Some(path) = git.strip_prefix("file://") {
            return Ok(Remote::Local(PathBuf::from(path)));
        }
        if git.starts_with("http://") || git.starts_with("https://") {
            let url = reqwest::Url::parse(git).map_err(|e| format!("sources.{name}.git: {e}"))?;
            if !url.username().is_empty()
                || url.password().is_some()
                || url.query().is_some()
                || url.fragment().is_some()
            {
                return Err(format!(
                    "sources.{name}.git has credentials, a query or a fragment in it; give the repository's URL alone, \
                     and a token with token_file or token_env"
                ));
            }
            if url.host_str().is_none_or(str::is_empty) {
                return Err(format!("sources.{name}.git: {git} names no host"));
            }
            return Ok(Remote::Http(url.to_string()));
        }
        if git.starts_with("ssh://") || git.starts_with("git://") || (git.contains('@') && git.contains(':')) {
            return Err(format!(
                "sources.{name}.git: {git}: only https:// (with a token) and repositories on this machine are read; \
                 ssh needs a program the image has not, git:// is unauthenticated"
            ));
        }
        if git.contains("://") {
            return Err(format!("sources.{name}.git: {git}: give an https:// URL or a repository's path"));
        }
        Ok(Remote::Local(PathBuf::from(git)))
    }

    /// The port a sync connects to, for the sandbox (none for a local repository).
    pub fn port(&self) -> Option<u16> {
        match self {
            Remote::Http(url) => reqwest::Url::parse(url).ok().and_then(|u| u.port_or_known_default()),
            Remote::Local(_) => None,
        }
    }
}

/// A source, checked and with its credentials read: what a sync needs.
#[derive(Clone)]
pub struct Source {
    /// Its name.
    pub name: String,
    /// Where its repository is.
    pub remote: Remote,
    /// The branch served.
    pub branch: String,
    /// The folder of the repository that is the docs (empty: all of it).
    pub path: String,
    /// The poll interval, if it is polled.
    pub every: Option<std::time::Duration>,
    /// `STATE_DIR/sources/NAME`.
    pub home: PathBuf,
    /// The token and its user name, for HTTPS.
    credentials: Option<(String, String)>,
    /// The webhook's secret.
    webhook_secret: Option<String>,
    /// Files larger than this are left out of the tree (`index.max_file_bytes`).
    pub max_file_bytes: u64,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("remote", &self.remote)
            .field("branch", &self.branch)
            .field("path", &self.path)
            .field("credentials", &self.credentials.as_ref().map(|_| "[set]"))
            .finish_non_exhaustive()
    }
}

/// Reads a secret from a file or a variable of `env`; it is remembered, so it is redacted
/// wherever it would appear.
fn secret(
    name: &str,
    what: &str,
    file: Option<&Path>,
    var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    let value = match (file, var) {
        (Some(file), _) => std::fs::read_to_string(file)
            .map_err(|e| format!("sources.{name}: cannot read the {what} file {}: {e}", file.display()))?,
        (None, Some(var)) => env(var).ok_or_else(|| format!("sources.{name}: the {what} variable {var} is not set"))?,
        (None, None) => return Ok(None),
    };
    let value = value.trim().to_string();
    if value.is_empty() {
        return Err(format!("sources.{name}: the {what} is empty"));
    }
    crate::guard::redact::remember(&value);
    Ok(Some(value))
}

/// Reads every source's token and webhook secret from its file or `env`'s variable into the
/// configuration (the command line does, before its sandbox), and checks each source whole.
pub fn read_secrets(config: &mut crate::config::Config, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    for source in &mut config.sources {
        let name = source.name.clone();
        source.secrets.token = secret(&name, "token", source.token_file.as_deref(), source.token_env.as_deref(), env)?;
        source.secrets.webhook = secret(
            &name,
            "webhook secret",
            source.webhook_secret_file.as_deref(),
            source.webhook_secret_env.as_deref(),
            env,
        )?;
    }
    check_config(config).map(|_| ())
}

impl Source {
    /// The source `config` describes (its secrets read by [`read_secrets`]).
    pub fn of(config: &SourceConfig, state_dir: &Path, max_file_bytes: u64) -> Result<Source, String> {
        config.validate()?;
        let name = &config.name;
        let remote = Remote::parse(name, &config.git)?;
        let token = config.secrets.token.clone();
        if token.is_some() && matches!(remote, Remote::Local(_)) {
            return Err(format!(
                "sources.{name}: a token is given for a repository on this machine; it is read without one"
            ));
        }
        let webhook_secret = config.secrets.webhook.clone();
        Ok(Source {
            name: name.clone(),
            remote,
            branch: config.branch.clone(),
            path: config.path.trim_matches('/').to_string(),
            every: config.every_secs()?.map(std::time::Duration::from_secs),
            home: state_dir.join("sources").join(name),
            credentials: token.map(|t| (config.username.clone(), t)),
            webhook_secret,
            max_file_bytes,
        })
    }

    /// The webhook's secret, when one is set.
    pub fn webhook_secret(&self) -> Option<&str> {
        self.webhook_secret.as_deref()
    }

    /// What was last synced, if anything was.
    pub fn state(&self) -> Result<Option<State>, SyncError> {
        State::read(&self.home)
    }

    /// The docs folder of the last good tree, if there is one.
    pub fn docs(&self) -> Result<Option<PathBuf>, SyncError> {
        Ok(self.state()?.and_then(|s| s.commit.map(|commit| self.tree(&commit))))
    }

    /// Where the tree of `commit` is: its folder is named by the commit and by what decides
    /// its contents besides it (the folder served, the size limit), so a change of either is a
    /// new checkout, never an old tree served as if it were the new one.
    pub fn tree(&self, commit: &str) -> PathBuf {
        self.home.join("trees").join(self.tree_name(commit))
    }

    fn tree_name(&self, commit: &str) -> String {
        use sha2::{Digest, Sha256};
        let key = Sha256::digest(format!("{}\0{}", self.path, self.max_file_bytes));
        let key: String = key.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!("{commit}-{key}")
    }

    /// Keeps the tree of `commit` from being pruned while this process reads it (another
    /// process's sync leaves it alone), in place of the tree it held before.
    pub fn hold(&self, commit: &str) {
        static HELD: std::sync::Mutex<Vec<(PathBuf, std::fs::File)>> = std::sync::Mutex::new(Vec::new());
        let mut manifest = self.tree(commit).into_os_string();
        manifest.push(".files");
        let Ok(file) = std::fs::File::open(&manifest) else { return };
        if let Err(e) = file.lock_shared() {
            tracing::warn!("cannot mark the tree of {commit} as in use ({e}); another sync may prune it");
            return;
        }
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|(home, _)| home != &self.home);
        held.push((self.home.clone(), file));
    }

    /// Brings the branch's tip into a tree of its own, unless it is the one served; `stop` ends a
    /// fetch early. A failure leaves the last good tree in place and is recorded in the state.
    pub fn sync(&self, stop: &AtomicBool) -> Result<Synced, SyncError> {
        std::fs::create_dir_all(self.home.join("trees"))
            .map_err(|e| SyncError::Disk(format!("cannot create {}: {e}", self.home.display())))?;
        let _lock = state::Lock::take(&self.home)?;
        let before = State::read(&self.home)?.unwrap_or_default();
        let outcome = self.sync_locked(&before, stop);
        let mut after = before.clone();
        after.checked_at = Some(state::now());
        match &outcome {
            Ok(synced) => {
                after.commit = Some(synced.commit.clone());
                after.error = None;
                after.failed_at = None;
                if synced.changed {
                    after.synced_at = after.checked_at;
                    after.skipped = synced.skipped.clone();
                }
            }
            Err(e) => {
                after.error = Some(crate::guard::scrub(&e.to_string()).into_owned());
                after.failed_at = after.checked_at;
            }
        }
        after.write(&self.home)?;
        if let Ok(synced) = &outcome
            && synced.changed
        {
            let keep = [Some(self.tree_name(&synced.commit)), before.commit.as_deref().map(|c| self.tree_name(c))];
            checkout::prune(&self.home.join("trees"), &keep);
        }
        outcome
    }

    fn sync_locked(&self, before: &State, stop: &AtomicBool) -> Result<Synced, SyncError> {
        let (repo, commit) = match &self.remote {
            Remote::Http(url) => {
                let repo = fetch::cache(&self.home.join("repo.git"))?;
                let commit = fetch::fetch(&repo, url, &self.branch, self.credentials.clone(), stop)?;
                (repo, commit)
            }
            Remote::Local(path) => fetch::local(path, &self.branch)?,
        };
        let commit_hex = commit.to_string();
        // The tree holds the source's folder only: it is the docs folder.
        let tree = self.tree(&commit_hex);
        if before.commit.as_deref() == Some(commit_hex.as_str()) && tree.is_dir() {
            return Ok(Synced { commit: commit_hex, docs: tree, changed: false, skipped: before.skipped.clone() });
        }
        let previous = before.commit.as_deref().map(|c| self.tree(c));
        let skipped = checkout::checkout(&repo, commit, &self.path, &tree, previous.as_deref(), self.max_file_bytes)?;
        Ok(Synced { commit: commit_hex, docs: tree, changed: true, skipped })
    }
}

/// What a sync did.
#[derive(Debug, Clone)]
pub struct Synced {
    /// The commit served now (hex).
    pub commit: String,
    /// Its docs folder.
    pub docs: PathBuf,
    /// False when it was already served.
    pub changed: bool,
    /// What its tree leaves out, and why.
    pub skipped: Vec<Skipped>,
}

/// Why a sync failed; the last good tree is kept.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The remote could not be reached or refused the fetch.
    #[error("{0}")]
    Fetch(String),
    /// The branch is not in the repository (deleted, or misnamed).
    #[error("the branch {branch} is not in {remote} (deleted, or misnamed); a tree synced before keeps serving")]
    BranchGone {
        /// The branch looked for.
        branch: String,
        /// Where.
        remote: String,
    },
    /// The tree could not be read or written.
    #[error("{0}")]
    Checkout(String),
    /// The state folder could not be used.
    #[error("{0}")]
    Disk(String),
    /// Stopped before it was done.
    #[error("the sync was stopped")]
    Stopped,
}

/// The configuration's sources, each checked (its URL read).
pub fn check_config(config: &crate::config::Config) -> Result<Vec<Source>, String> {
    config.sources.iter().map(|s| Source::of(s, &config.state_dir, config.index.max_file_bytes)).collect()
}
