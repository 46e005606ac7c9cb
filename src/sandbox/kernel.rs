//! The Landlock ruleset: every access right of ABI 7 is handled (so denied unless a rule grants
//! it), then the plan's paths and ports are granted. Rights no rule grants anywhere: running a
//! program (`Execute`), making devices and sockets, and `ioctl` on devices opened later.
//!
//! The crate's best-effort mode drops what an older kernel lacks; the [`Status`] says what was
//! kept. A kernel without Landlock yields `Unavailable` (`no_new_privs` is still set).

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, RestrictionStatus, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, make_bitflags,
};

use super::{Entry, Follow, Grant, Plan, SandboxError, State, Status};

/// The newest ABI this code was written and tested against: rights a newer kernel adds are
/// not handled (so not denied) until they are vetted here.
const ABI_HANDLED: ABI = ABI::V7;

/// Reading files and listing folders.
const READ: BitFlags<AccessFs> = make_bitflags!(AccessFs::{ReadFile | ReadDir});

/// Reading, plus making, changing, renaming and removing files and folders.
const WRITE: BitFlags<AccessFs> = make_bitflags!(AccessFs::{
    ReadFile | ReadDir | WriteFile | Truncate | MakeReg | MakeDir | RemoveFile | RemoveDir | Refer
});

/// Writing, plus symbolic links.
const WRITE_LINKS: BitFlags<AccessFs> = make_bitflags!(AccessFs::{
    ReadFile | ReadDir | WriteFile | Truncate | MakeReg | MakeDir | RemoveFile | RemoveDir | Refer | MakeSym
});

/// Writing, plus symbolic links and named pipes.
const SCRATCH: BitFlags<AccessFs> = make_bitflags!(AccessFs::{
    ReadFile | ReadDir | WriteFile | Truncate | MakeReg | MakeDir | RemoveFile | RemoveDir | Refer | MakeSym | MakeFifo
});

/// Builds and enforces the ruleset for `plan` on the calling thread (and the threads it
/// starts later).
pub fn restrict(plan: &Plan) -> Result<Status, SandboxError> {
    let fail = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_HANDLED))
        .map_err(fail)?
        .handle_access(AccessNet::from_all(ABI_HANDLED))
        .map_err(fail)?
        .scope(Scope::from_all(ABI_HANDLED))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    for entry in &plan.entries {
        let Some(file) = open(entry)? else { continue };
        let rights = match entry.grant {
            Grant::Read => READ,
            Grant::Write => WRITE,
            Grant::WriteLinks => WRITE_LINKS,
            Grant::Scratch => SCRATCH,
        };
        // A file takes only the rights a file can have; a folder's would make the rule
        // "partial" in the crate's eyes.
        let is_folder = file.metadata().map(|m| m.is_dir()).unwrap_or(false);
        let rights = if is_folder { rights } else { rights & AccessFs::from_file(ABI_HANDLED) };
        ruleset = ruleset
            .add_rule(PathBeneath::new(file, rights))
            .map_err(|e| SandboxError::Ruleset(format!("a rule for {} was refused: {e}", entry.path.display())))?;
    }
    for port in &plan.connect {
        ruleset = ruleset.add_rule(NetPort::new(*port, AccessNet::ConnectTcp)).map_err(fail)?;
    }
    for port in &plan.bind {
        ruleset = ruleset.add_rule(NetPort::new(*port, AccessNet::BindTcp)).map_err(fail)?;
    }
    Ok(status(ruleset.restrict_self().map_err(fail)?))
}

/// A path handle (`O_PATH`) for a rule, or `None` when the path is missing (or, for
/// [`Follow::NoLinks`], is a link or not a folder): such a path gets no rule.
fn open(entry: &Entry) -> Result<Option<File>, SandboxError> {
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if entry.follow == Follow::NoLinks {
        // With O_PATH, O_NOFOLLOW alone would open the link itself; O_DIRECTORY refuses it.
        flags |= libc::O_NOFOLLOW | libc::O_DIRECTORY;
    }
    match OpenOptions::new().read(true).custom_flags(flags).open(&entry.path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) if entry.follow == Follow::NoLinks && matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
            Ok(None)
        }
        Err(e) => Err(SandboxError::Ruleset(format!("cannot open {} for a rule: {e}", entry.path.display()))),
    }
}

/// What the kernel enforced, from the crate's report.
fn status(restricted: RestrictionStatus) -> Status {
    let (abi, reason) = match restricted.landlock {
        LandlockStatus::Available { effective_abi, .. } => (effective_abi as u8, String::new()),
        LandlockStatus::NotEnabled => {
            (0, "Landlock is built into this kernel but not enabled (boot with lsm=...,landlock)".into())
        }
        LandlockStatus::NotImplemented => {
            (0, "this kernel has no Landlock (not built in, or a seccomp filter hides it)".into())
        }
    };
    let state = match restricted.ruleset {
        RulesetStatus::FullyEnforced => State::Enforced,
        RulesetStatus::PartiallyEnforced => State::Partial,
        RulesetStatus::NotEnforced => State::Unavailable,
    };
    let on = state != State::Unavailable;
    Status {
        state,
        abi,
        filesystem: on && abi >= 1,
        network: on && abi >= 4,
        scopes: on && abi >= 6,
        no_new_privs: restricted.no_new_privs,
        reason: if on || !reason.is_empty() { reason } else { "the kernel enforced none of the rules".into() },
    }
}
