//! The roles a signed-in person's groups give (`[serve.groups]`), for OIDC and the proxy alike.

use crate::config::{GroupRoles, Role};

/// The group that stands for everyone who signs in.
const EVERYONE: &str = "*";

/// The roles `groups` give under `map`, in a fixed order; empty when none of them is mapped.
pub fn roles(map: &GroupRoles, groups: &[String]) -> Vec<Role> {
    [(Role::Ask, &map.ask), (Role::Approve, &map.approve), (Role::Admin, &map.admin)]
        .into_iter()
        .filter(|(_, mapped)| given(mapped, groups))
        .map(|(role, _)| role)
        .collect()
}

/// The collections `groups` read: each collection whose `groups` hold one of them (or `*`).
pub fn collections(map: &[(String, Vec<String>)], groups: &[String]) -> Vec<String> {
    map.iter().filter(|(_, mapped)| given(mapped, groups)).map(|(name, _)| name.clone()).collect()
}

/// True when `mapped` (the groups a role or collection is given to) holds one of `groups`, or
/// `*`.
fn given(mapped: &[String], groups: &[String]) -> bool {
    mapped.iter().map(|g| g.trim()).any(|g| g == EVERYONE || groups.iter().any(|have| have.trim() == g))
}

/// Why someone signed in has no role, for the page that tells them: their groups, and that an
/// admin maps groups in `[serve.groups]`.
pub fn no_role(name: &str, groups: &[String]) -> String {
    let listed = match groups {
        [] => "no groups at all".to_string(),
        groups => format!("the groups {}", groups.join(", ")),
    };
    format!(
        "{name} is signed in, but the identity provider reports {listed}, and none of them is given a role in \
         docs-agent. Ask whoever runs docs-agent to map one of your groups in [serve.groups]."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> GroupRoles {
        GroupRoles { ask: vec!["support".into()], approve: vec!["leads".into()], admin: vec![" docs-admins ".into()] }
    }

    #[test]
    fn groups_give_their_roles_and_only_theirs() {
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(roles(&map(), &groups(&["support"])), vec![Role::Ask]);
        assert_eq!(roles(&map(), &groups(&["leads", "support"])), vec![Role::Ask, Role::Approve]);
        assert_eq!(roles(&map(), &groups(&["docs-admins"])), vec![Role::Admin]);
        assert!(roles(&map(), &groups(&["marketing"])).is_empty(), "an unmapped group gives nothing");
        assert!(roles(&map(), &groups(&["Support"])).is_empty(), "groups match exactly, as the provider spells them");
        assert!(roles(&map(), &[]).is_empty());
        let everyone = GroupRoles { ask: vec!["*".into()], ..GroupRoles::default() };
        assert_eq!(roles(&everyone, &[]), vec![Role::Ask], "`*` is everyone who signs in");
        assert!(no_role("carol@acme.test", &groups(&["marketing"])).contains("marketing"));
        let by = vec![("billing".to_string(), groups(&["support"])), ("erp".to_string(), groups(&["erp"]))];
        assert_eq!(collections(&by, &groups(&["support"])), vec!["billing"]);
        assert_eq!(collections(&by, &groups(&["erp", "support"])), vec!["billing", "erp"]);
        assert!(collections(&by, &groups(&["marketing"])).is_empty(), "no group, no collection");
        let open = vec![("billing".to_string(), groups(&["*"]))];
        assert_eq!(collections(&open, &[]), vec!["billing"]);
    }
}
