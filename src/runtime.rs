//! The async runtimes, built in one place: one thread for what the command line runs (a
//! question, a chat, a session's turn, a health check), a pool of workers for the HTTP service.

/// Threads the worker pool may hand blocking work to ([`blocking`]): commits wait on one disk
/// and SQLite lets one writer in at a time, so more would only queue there, holding memory.
const BLOCKING_THREADS: usize = 8;

/// Which runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// One thread: the command line, and the eval runner's questions.
    OneThread,
    /// This many workers, one per core the process may use (counted before the kernel sandbox
    /// hides the cgroup's CPU limit): `docs-agent serve`.
    Workers(usize),
}

/// The runtime could not start (the OS refused a thread or an event queue).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the async runtime: {0}")]
pub struct RuntimeError(#[source] std::io::Error);

/// Builds a runtime of `flavor`, with timers and IO enabled.
pub fn build(flavor: Flavor) -> Result<tokio::runtime::Runtime, RuntimeError> {
    let mut builder = match flavor {
        Flavor::OneThread => tokio::runtime::Builder::new_current_thread(),
        Flavor::Workers(threads) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(threads.max(1)).max_blocking_threads(BLOCKING_THREADS);
            builder
        }
    };
    builder.enable_all().build().map_err(RuntimeError)
}

/// Runs `work`, which blocks its thread (a durable commit waits for the disk, a handler opens
/// the log), without stalling the other tasks of a worker pool: tokio hands this worker's
/// queue to another thread first (`block_in_place`). On a single thread (the command line, the
/// tests) or outside a runtime there is nobody to stall, and `work` simply runs. The harness's
/// first search (retrieve-first's evidence) runs here too: on a real docs set a request that
/// needs no search waited 20% less behind it and sessions/s rose 25%, for 5% of the asks/s
/// (bench/README.md, "Searches and the async workers").
pub fn blocking<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blocking` works on both runtimes (tokio's `block_in_place` alone panics on one thread)
    /// and outside any, and other tasks run while it waits.
    #[test]
    fn blocking_runs_on_both_runtimes_and_outside_one() {
        assert_eq!(blocking(|| 1), 1);
        let one = build(Flavor::OneThread).expect("runtime");
        assert_eq!(one.block_on(async { blocking(|| 2) }), 2);
        let workers = build(Flavor::Workers(2)).expect("runtime");
        let answered = workers.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            // This task waits in `blocking` until another task, spawned after it, answers.
            let waiter =
                tokio::spawn(async move { blocking(move || rx.recv_timeout(std::time::Duration::from_secs(10))) });
            tokio::spawn(async move { tx.send(()) }).await.expect("the second task ran").is_ok()
                && waiter.await.expect("the waiter ended").is_ok()
        });
        assert!(answered);
    }
}
