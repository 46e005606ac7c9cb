//! Cancelling a turn: Ctrl-C in the CLI, a cancel request over HTTP later. The turn checks it
//! while the model streams and before each tool call, keeps the partial text, and records an
//! `interrupted` event so the session is ready for the next message.

use tokio::sync::watch;

/// The turn's side: asks whether a cancel came.
#[derive(Debug, Clone)]
pub struct Cancel(Option<watch::Receiver<bool>>);

/// The caller's side: cancels the turn.
#[derive(Debug)]
pub struct Canceller(watch::Sender<bool>);

impl Cancel {
    /// A turn nobody can cancel (one-shot questions).
    pub fn never() -> Cancel {
        Cancel(None)
    }

    /// A linked pair.
    pub fn pair() -> (Canceller, Cancel) {
        let (tx, rx) = watch::channel(false);
        (Canceller(tx), Cancel(Some(rx)))
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|rx| *rx.borrow())
    }

    /// Completes when cancelled; never, for [`Cancel::never`] or once the canceller is gone.
    pub async fn cancelled(&mut self) {
        match self.0.as_mut() {
            Some(rx) => {
                if rx.wait_for(|cancelled| *cancelled).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

impl Canceller {
    /// Cancels the linked turn.
    pub fn cancel(&self) {
        let _ = self.0.send(true);
    }
}
