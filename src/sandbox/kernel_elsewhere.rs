//! The kernel sandbox on a system other than Linux: Landlock is a Linux security module, so
//! nothing is restricted and the [`Status`] says so. `docs-agent check`, `health` and `/readyz`
//! show it; a command run with `--require-sandbox` refuses to start (`SandboxError::Required`).

use super::{Plan, SandboxError, State, Status};

/// Restricts nothing: this system has no Landlock.
pub fn restrict(_plan: &Plan) -> Result<Status, SandboxError> {
    Ok(Status {
        state: State::Unavailable,
        abi: 0,
        filesystem: false,
        network: false,
        scopes: false,
        no_new_privs: false,
        reason: format!("it is Landlock, which only Linux has, and this is {}", std::env::consts::OS),
    })
}
