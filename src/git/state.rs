//! A source's `state.json` (what is served, and the last failure) and its lock.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::SyncError;

/// What a source's last syncs did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The commit whose tree is served (hex), if any sync succeeded.
    pub commit: Option<String>,
    /// When that tree was checked out (seconds since the epoch).
    pub synced_at: Option<u64>,
    /// When the branch was last looked at.
    pub checked_at: Option<u64>,
    /// Why the last sync failed, when it did (redacted).
    pub error: Option<String>,
    /// When it failed.
    pub failed_at: Option<u64>,
    /// What the served tree leaves out.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// A file of the repository left out of the tree, and why. Both are printed (`sources sync`,
/// `sources status`) and both hold what the repository wrote (a name, a link's target), so both
/// are scrubbed (no terminal controls, no invisible characters, no secrets): when made, and
/// when read back from a state file an older version wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SkippedAsWritten")]
pub struct Skipped {
    /// Its path in the docs folder.
    pub path: String,
    /// Why: too large, a link out of the tree, a submodule, a name that is not UTF-8.
    pub why: String,
}

impl Skipped {
    /// `path` left out for `why`, both as they may be printed: terminal controls out, and a
    /// path's other control characters (a line break in a name) written as escapes, so one
    /// name is one line.
    pub fn new(path: &str, why: &str) -> Skipped {
        let plain = |text: &str| crate::guard::scrub(text).into_owned();
        let path = plain(path)
            .chars()
            .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
            .collect();
        Skipped { path, why: plain(why) }
    }
}

/// A [`Skipped`] as the state file holds it.
#[derive(Deserialize)]
struct SkippedAsWritten {
    path: String,
    why: String,
}

impl From<SkippedAsWritten> for Skipped {
    fn from(written: SkippedAsWritten) -> Skipped {
        Skipped::new(&written.path, &written.why)
    }
}

const FILE: &str = "state.json";

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl State {
    /// The state kept in `home`, `None` before the first sync.
    pub fn read(home: &Path) -> Result<Option<State>, SyncError> {
        let path = home.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| SyncError::Disk(format!("{} is damaged ({e}); remove it and sync again", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SyncError::Disk(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// Writes the state whole: a temporary file, synced, then renamed over the old one.
    pub fn write(&self, home: &Path) -> Result<(), SyncError> {
        let path = home.join(FILE);
        let temp = home.join(format!(".{FILE}.{}", std::process::id()));
        let failed = |e: std::io::Error| SyncError::Disk(format!("cannot write {}: {e}", path.display()));
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| SyncError::Disk(e.to_string()))?;
        let mut file = std::fs::File::create(&temp).map_err(failed)?;
        file.write_all(&bytes).and_then(|()| file.sync_all()).map_err(failed)?;
        std::fs::rename(&temp, &path).map_err(failed)
    }
}

/// The lock one sync of a source holds, across processes (`serve` and `docs-agent sources sync`).
pub struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Waits for the source's lock.
    pub fn take(home: &Path) -> Result<Lock, SyncError> {
        let path = home.join("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| SyncError::Disk(format!("cannot open {}: {e}", path.display())))?;
        file.lock().map_err(|e| SyncError::Disk(format!("cannot lock {}: {e}", path.display())))?;
        Ok(Lock { _file: file })
    }
}
