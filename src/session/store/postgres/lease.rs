//! One writer per session across replicas: a lease row per session, `(holder, token,
//! expires_at)`, taken when free or expired, renewed by its holder every third of its length,
//! and deleted when released. A replica killed mid-turn stops renewing, so its lease lapses
//! after `session.lease_secs` and another replica can take the session over. Times are the
//! database's (`now()`), so replicas' clocks never need to agree.
//!
//! Every append checks the lease in its own transaction (a share lock on the row, so it cannot
//! be taken over mid-append): a holder whose lease was taken over is refused, as is anyone
//! appending without a lease while another holder's lease is live.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_postgres::Transaction;

use super::{LogError, Store, database, describe, get};

/// How long dropping a lease waits for its row to be deleted; past that it lapses by itself.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A held lease: released (its row deleted) when dropped.
pub struct Lease {
    /// The store it was taken in.
    store: Arc<Store>,
    /// The session.
    session: String,
    /// This holding's token.
    token: String,
    /// The handle's leases, this one among them while held.
    held: Arc<Mutex<HashMap<String, String>>>,
    /// The task that renews it.
    renewal: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("session", &self.session).finish_non_exhaustive()
    }
}

impl Lease {
    /// Takes `session`'s lease for this handle (`held`), or says it is busy.
    pub fn take(
        store: &Arc<Store>,
        session: &str,
        held: &Arc<Mutex<HashMap<String, String>>>,
    ) -> Result<Lease, LogError> {
        let token = crate::session::new_id()?;
        let secs = store.lease.as_secs_f64();
        let (id, holder, mine) = (session.to_string(), store.holder.clone(), token.clone());
        let taken = store.run(move |pool, shown| async move {
            let what = format!("taking the lease of session {id} in {shown}");
            let client = get(&pool, &shown).await?;
            let row = client
                .query_opt(
                    "INSERT INTO docs_agent_leases (session, holder, token, expires_at)
                     VALUES ($1, $2, $3, now() + make_interval(secs => $4))
                     ON CONFLICT (session) DO UPDATE
                       SET holder = EXCLUDED.holder, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
                       WHERE docs_agent_leases.expires_at <= now()
                     RETURNING token",
                    &[&id, &holder, &mine, &secs],
                )
                .await
                .map_err(database(&what))?;
            Ok(row.is_some())
        })?;
        if !taken {
            return Err(LogError::Busy { session: session.to_string() });
        }
        held.lock().unwrap_or_else(|p| p.into_inner()).insert(session.to_string(), token.clone());
        let renewal = store.handle.spawn(renew(store.clone(), session.to_string(), token.clone()));
        Ok(Lease { store: store.clone(), session: session.to_string(), token, held: held.clone(), renewal })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewal.abort();
        {
            // Only this holding's entry: the handle may have taken the session again since.
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            if held.get(&self.session) == Some(&self.token) {
                held.remove(&self.session);
            }
        }
        // Released before the drop returns, so the next turn, here or on another replica, can
        // take it at once; if the database cannot be reached, the lease lapses by itself.
        let (id, token) = (self.session.clone(), self.token.clone());
        let released = self.store.run_within(RELEASE_WAIT, move |pool, shown| async move {
            let client = get(&pool, &shown).await?;
            client
                .execute("DELETE FROM docs_agent_leases WHERE session = $1 AND token = $2", &[&id, &token])
                .await
                .map_err(database("releasing a session lease"))?;
            Ok(())
        });
        if let Err(e) = released {
            tracing::warn!(session = %self.session, "a session lease was not released (it lapses by itself): {e}");
        }
    }
}

/// Renews `session`'s lease every third of its length, until it is dropped or lost.
async fn renew(store: Arc<Store>, session: String, token: String) {
    let secs = store.lease.as_secs_f64();
    let mut every = tokio::time::interval(store.lease / 3);
    every.tick().await;
    loop {
        every.tick().await;
        let renewed = match store.pool.get().await {
            Ok(client) => client
                .execute(
                    "UPDATE docs_agent_leases SET expires_at = now() + make_interval(secs => $3)
                     WHERE session = $1 AND token = $2 AND expires_at > now()",
                    &[&session, &token, &secs],
                )
                .await
                .map_err(|e| describe(&e)),
            Err(e) => Err(e.to_string()),
        };
        match renewed {
            Ok(1) => {}
            Ok(_) => {
                tracing::warn!(%session, "the session's lease lapsed; once another replica takes it, this one's appends are refused");
                return;
            }
            Err(e) => tracing::warn!(%session, "cannot renew the session's lease (retrying): {e}"),
        }
    }
}

/// Checks, inside an append's transaction, that the append may go on: with `token`, that it is
/// still the session's lease; without one, that no other holder's lease is live.
pub async fn check(tx: &Transaction<'_>, session: &str, token: Option<&str>) -> Result<(), LogError> {
    let row = tx
        .query_opt("SELECT token, expires_at > now() FROM docs_agent_leases WHERE session = $1 FOR SHARE", &[&session])
        .await
        .map_err(database("checking the session's lease"))?;
    let current = row.map(|r| (r.get::<_, String>(0), r.get::<_, bool>(1)));
    match (token, current) {
        (Some(mine), Some((theirs, _))) if mine == theirs => Ok(()),
        (Some(_), _) => Err(LogError::LeaseLost { session: session.to_string() }),
        (None, Some((_, true))) => Err(LogError::Busy { session: session.to_string() }),
        (None, _) => Ok(()),
    }
}
