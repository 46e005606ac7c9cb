//! Bearer tokens: each maps to a principal and its roles. Only the SHA-256 of a token is kept
//! (in the configuration and in memory); the token itself is never stored or logged.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{Credential, Via};
use crate::config::TokenConfig;
use crate::service::Principal;

/// The tokens, by the hex SHA-256 of the token; replaced whole when the config file changes
/// (`cli::serve` watches it), so a token added or revoked takes effect without a restart. A
/// watch channel holds them, so a stream already open learns of a revocation ([`Tokens::revoked`]).
pub struct Tokens(tokio::sync::watch::Sender<HashMap<String, Principal>>);

impl Tokens {
    /// From the configuration.
    pub fn new(tokens: &[TokenConfig]) -> Tokens {
        Tokens(tokio::sync::watch::Sender::new(by_hash(tokens)))
    }

    /// The principal a presented token belongs to.
    pub fn find(&self, token: &str) -> Option<Principal> {
        self.admit(token).map(|c| c.principal)
    }

    /// The credential of a presented token, if it is one.
    pub(super) fn admit(&self, token: &str) -> Option<Credential> {
        let digest = hash(token);
        let principal = self.0.borrow().get(&digest).cloned()?;
        Some(Credential { principal, via: Via::Token { digest } })
    }

    /// From now on, the tokens of `tokens` and no others; how many there are.
    pub fn replace(&self, tokens: &[TokenConfig]) -> usize {
        let next = by_hash(tokens);
        let count = next.len();
        self.0.send_replace(next);
        count
    }

    /// When the file's tokens cannot all be taken (it names collections this serve does not
    /// serve, or another of its values does not load): only the tokens that `listed` still
    /// has exactly as they are now are kept, so a revoked or changed token stops working at
    /// once, and nothing is added or widened until a restart. The names of the tokens dropped.
    pub fn keep_unchanged(&self, listed: &[Listed]) -> Vec<String> {
        let mut dropped = Vec::new();
        self.0.send_if_modified(|tokens| {
            tokens.retain(|digest, principal| {
                let same = listed.iter().any(|l| l.sha256.eq_ignore_ascii_case(digest) && l.admits_as(principal));
                if !same {
                    dropped.push(principal.name.clone());
                }
                same
            });
            !dropped.is_empty()
        });
        dropped.sort();
        dropped
    }

    /// Resolves once the token of `digest` no longer admits `principal` as it did (revoked, or
    /// given to another name or other roles); never while it does.
    pub(super) fn revoked(
        &self,
        digest: &str,
        principal: &Principal,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut tokens = self.0.subscribe();
        let (digest, principal) = (digest.to_string(), principal.clone());
        async move {
            loop {
                if tokens.borrow_and_update().get(&digest) != Some(&principal) {
                    return;
                }
                // The sender lives as long as the server: closed, nothing can change any more.
                if tokens.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// A `[[serve.tokens]]` entry as the file lists it, read on its own when the rest of the file
/// does not load (`cli::serve`'s watch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The token's SHA-256, hex.
    pub sha256: String,
    /// Who it is.
    pub principal: String,
    /// Its roles, as written.
    pub roles: Vec<String>,
    /// The collections it reads, as written (none: every one, without `[[collections]]`).
    pub collections: Vec<String>,
}

impl Listed {
    /// An entry of a configuration that loaded.
    pub fn of(token: &TokenConfig) -> Listed {
        Listed {
            sha256: token.sha256.clone(),
            principal: token.principal.clone(),
            roles: token.roles.iter().map(|r| r.as_str().to_string()).collect(),
            collections: token.collections.clone(),
        }
    }

    /// True when this entry gives exactly `principal` (name, roles and collections).
    fn admits_as(&self, principal: &Principal) -> bool {
        self.principal == principal.name
            && self.roles.iter().map(String::as_str).eq(principal.roles.iter().map(|r| r.as_str()))
            && reads(&self.collections) == principal.collections
    }
}

/// The collections a token that names `collections` reads: those, or every one (`*`) when it
/// names none (which the configuration's check allows only without `[[collections]]`).
fn reads(collections: &[String]) -> Vec<String> {
    match collections.is_empty() {
        true => vec![crate::config::ALL_COLLECTIONS.to_string()],
        false => collections.to_vec(),
    }
}

/// The principal of each token, by its hash ([`reads`]: a token naming no collections reads
/// every one).
fn by_hash(tokens: &[TokenConfig]) -> HashMap<String, Principal> {
    tokens
        .iter()
        .map(|t| {
            let principal =
                Principal { name: t.principal.clone(), roles: t.roles.clone(), collections: reads(&t.collections) };
            (t.sha256.to_ascii_lowercase(), principal)
        })
        .collect()
}

/// The hex SHA-256 of a token, as the configuration stores it.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Role;

    #[test]
    fn tokens_are_found_by_their_hash_only() {
        let config = [TokenConfig {
            principal: "ana".into(),
            sha256: hash("s3cret-token"),
            roles: vec![Role::Ask],
            collections: Vec::new(),
        }];
        let tokens = Tokens::new(&config);
        assert_eq!(tokens.find("s3cret-token").map(|p| p.name), Some("ana".to_string()));
        assert!(tokens.find("s3cret-token ").is_none());
        assert!(tokens.find(&hash("s3cret-token")).is_none(), "the hash itself is not a token");
        assert_eq!(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // Replaced whole: the old token stops working, the new one works.
        let next = [TokenConfig {
            principal: "bo".into(),
            sha256: hash("other-token"),
            roles: vec![Role::Ask],
            collections: Vec::new(),
        }];
        assert_eq!(tokens.replace(&next), 1);
        assert!(tokens.find("s3cret-token").is_none());
        assert_eq!(tokens.find("other-token").map(|p| p.name), Some("bo".to_string()));
    }

    #[tokio::test]
    async fn a_stream_learns_its_token_was_revoked_or_changed() {
        use futures_util::FutureExt;
        let ana = TokenConfig {
            principal: "ana".into(),
            sha256: hash("s3cret-token"),
            roles: vec![Role::Ask],
            collections: Vec::new(),
        };
        let bo = TokenConfig {
            principal: "bo".into(),
            sha256: hash("other-token"),
            roles: vec![Role::Ask],
            collections: Vec::new(),
        };
        let tokens = Tokens::new(&[ana.clone(), bo.clone()]);
        let Some(principal) = tokens.find("s3cret-token") else { panic!("ana's token admits") };
        let digest = hash("s3cret-token");
        let mut revoked = Box::pin(tokens.revoked(&digest, &principal));
        assert!(revoked.as_mut().now_or_never().is_none(), "valid: the stream goes on");
        // Another caller's change, or the same tokens read again, leave it be.
        tokens.replace(std::slice::from_ref(&ana));
        tokens.replace(&[ana.clone(), bo.clone()]);
        assert!(revoked.as_mut().now_or_never().is_none(), "still valid after other changes");
        tokens.replace(std::slice::from_ref(&bo));
        assert_eq!(revoked.as_mut().now_or_never(), Some(()), "revoked: the stream ends");
        // Fewer roles for the same token end a stream too.
        let tokens = Tokens::new(&[TokenConfig { roles: vec![Role::Ask, Role::Approve], ..ana.clone() }]);
        let Some(principal) = tokens.find("s3cret-token") else { panic!("admits") };
        let mut changed = Box::pin(tokens.revoked(&digest, &principal));
        assert!(changed.as_mut().now_or_never().is_none());
        tokens.replace(&[ana]);
        assert_eq!(changed.as_mut().now_or_never(), Some(()), "its roles changed: the stream ends");
    }

    /// When the file cannot all be taken, only the tokens it lists exactly as they are go on:
    /// one revoked and one given more roles stop at once, and one added waits for a restart.
    #[test]
    fn only_tokens_listed_exactly_as_they_are_are_kept() {
        let token = |principal: &str, roles: Vec<Role>| TokenConfig {
            principal: principal.into(),
            sha256: hash(&format!("{principal}-token")),
            roles,
            collections: Vec::new(),
        };
        let (ana, bo, cy) = (token("ana", vec![Role::Ask]), token("bo", vec![Role::Ask]), token("cy", vec![Role::Ask]));
        let tokens = Tokens::new(&[ana.clone(), bo, cy.clone()]);
        let listed = [
            Listed { sha256: ana.sha256.to_ascii_uppercase(), ..Listed::of(&ana) },
            Listed::of(&TokenConfig { roles: vec![Role::Ask, Role::Admin], ..cy }),
            Listed::of(&token("dee", vec![Role::Ask])),
        ];
        assert_eq!(tokens.keep_unchanged(&listed), ["bo", "cy"]);
        assert_eq!(tokens.find("ana-token").map(|p| p.name), Some("ana".to_string()), "unchanged: kept");
        for gone in ["bo-token", "cy-token", "dee-token"] {
            assert!(tokens.find(gone).is_none(), "{gone} admits");
        }
    }
}
