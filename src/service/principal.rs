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
}

impl Principal {
    /// True when the principal has `role`; an admin may do everything but approve.
    pub fn may(&self, role: Role) -> bool {
        self.roles.contains(&role) || self.roles.contains(&Role::Admin) && role != Role::Approve
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
