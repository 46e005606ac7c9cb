//! Connections: accepted here, each served by hyper with a deadline for its request headers
//! (which is also how long a kept-alive connection may sit idle), and at most
//! `serve.max_connections` open at once.
//!
//! A client that opens connections and never finishes its headers (slowloris) cannot starve
//! the others: when every slot is taken, the oldest connection that has not yet sent a whole
//! request (head and body) is closed to make room, so a flood of half-open connections only ever evicts
//! itself, while a real client, which sends its headers at once, gets in and is served. Only when
//! every open connection has sent a request is a new one answered 503 and closed. Each
//! half-open connection is also cut after `serve.header_read_timeout_secs`, and one whose body
//! is slower than `serve.body_read_timeout_secs` is answered 408 and closed (`body`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::AbortHandle;
use tower::ServiceExt;

/// Streams one HTTP/2 connection may have open at once (hyper's default is 200): a connection
/// counts once against `serve.max_connections`, so its streams are kept few.
const H2_STREAMS: u32 = 8;

/// What bounds connections: from `serve.max_connections` and `serve.header_read_timeout_secs`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time to send a request's headers, and to send the next request on a kept-alive connection.
    pub header_read_timeout: Duration,
}

/// The answer to a connection over the cap when no half-open one can make room, written once
/// without waiting, then closed.
const SHED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 85\r\n\r\n{\"error\":{\"code\":\"overloaded\",\"message\":\"too many open connections; try again soon\"}}";

/// How long to wait after the listener fails to accept (no file descriptor left) before trying
/// again, so a full table does not spin a core.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A connection that has not sent a whole request head yet: the one to close when a slot is
/// needed.
struct HalfOpen {
    /// Set when its first request head arrived.
    started: Arc<AtomicBool>,
    /// Closes it.
    abort: AbortHandle,
}

/// Counts a connection as open for as long as its task lives (aborted or finished).
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes, then waits for open
/// connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let open = Arc::new(AtomicUsize::new(0));
    let mut half_open: VecDeque<HalfOpen> = VecDeque::new();
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.header_read_timeout)
        .max_concurrent_streams(H2_STREAMS);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if open.load(Ordering::Acquire) >= limits.max_connections {
            // Make room by closing the oldest connection still without a request; if every
            // open connection is busy with real requests, refuse this one.
            let victim = std::iter::from_fn(|| half_open.pop_front())
                .find(|c| !c.started.load(Ordering::Acquire) && !c.abort.is_finished());
            match victim {
                Some(victim) => victim.abort.abort(),
                None => {
                    let _ = stream.try_write(SHED);
                    continue;
                }
            }
        }
        if half_open.len() > limits.max_connections.saturating_mul(2) {
            half_open.retain(|c| !c.started.load(Ordering::Acquire) && !c.abort.is_finished());
        }
        open.fetch_add(1, Ordering::AcqRel);
        let counted = Open(open.clone());
        let _ = stream.set_nodelay(true);
        let started = Arc::new(AtomicBool::new(false));
        let mark = started.clone();
        // The request is marked as arrived once its body is in (`body::read_within`).
        let app = app.clone().map_request(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(super::body::Arrived(mark.clone()));
            // Whom the connection is from: a proxy's identity header is believed only from its addresses.
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            request
        });
        let service = TowerToHyperService::new(app);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).into_owned();
        let connection = graceful.watch(connection);
        let task = tokio::spawn(async move {
            // A connection that ends in an error (a reset, a header deadline, evicted) has no one
            // to report to; it stops counting as open either way.
            let _counted = counted;
            let _ = connection.await;
        });
        half_open.push_back(HalfOpen { started, abort: task.abort_handle() });
    }
    graceful.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::SHED;

    #[test]
    fn the_shed_answer_has_the_length_it_says() {
        let text = std::str::from_utf8(SHED).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .and_then(|n| n.parse().ok())
            .expect("content-length");
        assert_eq!(length, body.len());
        assert!(serde_json::from_str::<serde_json::Value>(body).is_ok(), "{body}");
    }
}
