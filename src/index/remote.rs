//! What search's two model clients share (the embedding model, [`super::embed`], and the
//! reranker, [`super::rerank`]): a thread of their own that runs their HTTP requests.
//!
//! The index is searched from synchronous code on every front end (a tool call, `/v1/search`,
//! MCP, the command line), so both clients are synchronous: a request runs on a thread with a
//! small async runtime of its own, started on first use (after the kernel sandbox, which
//! refuses to start once a second thread runs), and the caller waits for its reply on a
//! channel. A caller on a server's worker waits through [`crate::runtime::blocking`], so the
//! other tasks of that worker move on meanwhile.

use std::future::Future;
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

/// A thread that runs requests, started on first use, and ended when this is dropped (its
/// client with it).
pub struct RequestThread {
    /// The thread's name, in a debugger and in errors.
    name: &'static str,
    /// Its runtime's handle and what ends it, or why it could not start.
    started: OnceLock<Result<Started, String>>,
}

/// A started thread.
struct Started {
    /// Where jobs are spawned.
    handle: tokio::runtime::Handle,
    /// Dropped with the `RequestThread`: the thread's runtime then stops, and the thread ends.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl RequestThread {
    /// A thread called `name`, not started yet.
    pub const fn new(name: &'static str) -> RequestThread {
        RequestThread { name, started: OnceLock::new() }
    }

    /// Runs `job` on the thread and waits for what it returns; an error says the thread could
    /// not start or stopped (what to tell the person: restart docs-agent).
    pub fn run<T: Send + 'static>(&self, job: impl Future<Output = T> + Send + 'static) -> Result<T, String> {
        let handle = match self.started.get_or_init(|| self.start()) {
            Ok(started) => started.handle.clone(),
            Err(e) => return Err(e.clone()),
        };
        let (reply, answer) = mpsc::sync_channel(1);
        handle.spawn(async move {
            // The caller may have given up; nobody to tell.
            let _ = reply.send(job.await);
        });
        crate::runtime::blocking(|| answer.recv())
            .map_err(|_| format!("the {} request thread has stopped; restart docs-agent", self.name))
    }

    /// Starts the thread: a one-threaded runtime that runs whatever is spawned on it until the
    /// `RequestThread` is dropped.
    fn start(&self) -> Result<Started, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the {} request thread's runtime: {e}", self.name))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || {
                // Ends when the sender is dropped; the runtime, and any job still running on it,
                // go with it.
                let _ = runtime.block_on(stopped);
            })
            .map_err(|e| format!("cannot start the {} request thread: {e}", self.name))?;
        Ok(Started { handle, _stop: stop })
    }
}

/// An HTTP client whose requests give up after `timeout` (and connecting after at most 10 s).
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    // reqwest is built without a default TLS provider; a second install attempt is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs from several threads run on the one request thread, each answered to its caller.
    #[test]
    fn jobs_from_many_threads_are_each_answered() {
        static THREAD: RequestThread = RequestThread::new("test-requests");
        let answers: Vec<u64> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..8u64)
                .map(|n| {
                    scope.spawn(move || {
                        THREAD
                            .run(async move {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                                n * 2
                            })
                            .expect("the request thread answers")
                    })
                })
                .collect();
            callers.into_iter().map(|c| c.join().expect("a caller")).collect()
        });
        assert_eq!(answers, (0..8u64).map(|n| n * 2).collect::<Vec<_>>());
        let name = THREAD.run(async { std::thread::current().name().map(str::to_string) }).expect("answers");
        assert_eq!(name.as_deref(), Some("test-requests"), "jobs run on the request thread");
    }

    /// Dropped, the thread ends: a job it was running is dropped with its runtime.
    #[test]
    fn the_thread_ends_with_its_owner() {
        struct Told(mpsc::Sender<()>);
        impl Drop for Told {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let thread = RequestThread::new("test-ending");
        let (told, ended) = mpsc::channel();
        thread
            .run(async move {
                let told = Told(told);
                tokio::spawn(async move {
                    let _held = told;
                    std::future::pending::<()>().await;
                });
            })
            .expect("the request thread answers");
        assert!(ended.try_recv().is_err(), "the job runs while the thread lives");
        drop(thread);
        assert!(ended.recv_timeout(Duration::from_secs(30)).is_ok(), "the thread's jobs end with it");
    }
}
