//! Who is calling: a principal and its roles, as a front end established them (a bearer
//! token under `serve`; the local user of `docs-agent mcp` has none).

use super::Refused;
use crate::config::Role;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The name sessions belong to.
    pub name: String,
    /// What they may do.
    pub roles: Vec<Role>,
    /// The collections they read (`*`: all), when the configuration has `[[collections]]`
    /// (without them, the one collection is everyone's and this is not looked at).
    pub collections: Vec<String>,
}

impl Principal {
    /// True when the principal has `role`; an admin may do everything but approve.
    pub fn may(&self, role: Role) -> bool {
        self.roles.contains(&role) || self.roles.contains(&Role::Admin) && role != Role::Approve
    }

    /// True when the principal reads collection `name` (of a configuration with
    /// `[[collections]]`).
    pub fn reads(&self, name: &str) -> bool {
        self.collections.iter().any(|c| c == crate::config::ALL_COLLECTIONS || c == name)
    }

    /// Refuses unless the principal has `role`.
    pub fn require(&self, role: Role) -> Result<(), Refused> {
        if self.may(role) {
            Ok(())
        } else {
            Err(Refused::Forbidden(format!("{} lacks the `{}` role this needs", self.name, role.as_str())))
        }
    }
}
