//! Server-sent events: a turn streamed as it runs (`tool`, `text`, `approval_required`,
//! `answer`, `done`, `error`), and a session's log followed from a sequence number (each event
//! with its `id:` = seq, so a client that lost its connection resumes with `Last-Event-ID` or
//! `?after=`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use tokio::sync::mpsc;

use super::AppState;

/// Events a follower reads from the log at a time.
const BATCH: usize = 200;

/// An SSE event of `kind` carrying `data` as JSON, every string in it scrubbed: the last step
/// of everything a stream sends (what it carries was guarded where it was made; an error's
/// message from outside, say, passes here too).
pub fn event(kind: &str, data: &impl Serialize) -> Event {
    let Ok(mut value) = serde_json::to_value(data) else {
        return Event::default().event(kind).data("{}");
    };
    crate::guard::scrub_json(&mut value);
    Event::default().event(kind).json_data(&value).unwrap_or_else(|_| Event::default().event(kind).data("{}"))
}

/// An `error` event: the one error shape's code and message, for a stream already begun.
pub fn error_event(e: super::error::ApiError) -> Event {
    event("error", &serde_json::json!({"code": e.code, "message": e.message}))
}

/// What a turn followed live tells, as a stream's `tool` or `text` event.
pub fn live_event(live: crate::service::turns::LiveEvent) -> Event {
    use crate::service::turns::LiveEvent;
    match live {
        LiveEvent::Tool(line) => event("tool", &line),
        LiveEvent::Text(delta) => event("text", &serde_json::json!({ "delta": delta })),
    }
}

/// True when the client asked for a stream.
pub fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// The stream of events sent to `rx`, with keep-alive comments, until the caller's token is
/// `revoked` (see [`until_revoked`]).
pub fn from_channel(
    rx: mpsc::UnboundedReceiver<Event>,
    revoked: impl Future<Output = ()> + Send + 'static,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) });
    Sse::new(until_revoked(stream, revoked)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// `stream` until `revoked` resolves: then one `error` event (`token_revoked`) and the end. A
/// token revoked (or its roles changed) while its stream is open stops what it receives at
/// once, not at its next request; what the stream was about (a turn) goes on without it.
pub fn until_revoked<S>(stream: S, revoked: impl Future<Output = ()> + Send + 'static) -> impl Stream<Item = S::Item>
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let start = Some((Box::pin(stream), Box::pin(revoked)));
    futures_util::stream::unfold(start, |state| async move {
        let (mut stream, mut revoked) = state?;
        tokio::select! {
            biased;
            () = &mut revoked => {
                let error = super::error::ApiError::new(
                    axum::http::StatusCode::UNAUTHORIZED,
                    "token_revoked",
                    "the token this stream was opened with was revoked or changed; sign in again",
                );
                Some((Ok(error_event(error)), None))
            }
            item = stream.next() => item.map(|item| (item, Some((stream, revoked)))),
        }
    })
}

/// What an event leaving over HTTP is shaped by: the hosts its links may point to, and the
/// published docs site its citations link to.
pub struct View<'a> {
    /// `allowed_link_hosts`.
    pub hosts: &'a [String],
    /// The docs site (`[site]`) and the workspace its pages' headings are read from.
    pub site: Option<(&'a crate::site::Site, &'a crate::workspace::Workspace)>,
    /// The operator's redaction, applied to an answer's nodes once parsed.
    pub hooks: Option<&'a crate::hooks::Hooks>,
    /// The index searched now: an answer's citations whose sections changed since are marked
    /// `stale`.
    pub index: Option<std::sync::Arc<crate::index::Index>>,
}

impl<'a> View<'a> {
    /// The view of events of a session of `collection`, served by `state`.
    pub fn of(state: &'a AppState, collection: &'a crate::service::collections::Collection) -> View<'a> {
        let harness = &collection.harness;
        View {
            hosts: &state.config.allowed_link_hosts,
            site: harness.site.as_ref().map(|site| (site, &harness.workspace)),
            hooks: Some(&harness.hooks),
            index: Some(harness.index.current()),
        }
    }
}

/// An event as it may leave over HTTP: the log holds model-written text scrubbed of secrets,
/// but with its links as the model wrote them; here they are neutralised like an answer's. An
/// answer also comes as safe nodes and with its citations, checked against what its turn
/// retrieved (`session` holds the session's events up to the answer at least), each with its
/// page on the docs site.
pub fn outward(
    stored: &crate::session::store::Stored,
    view: &View<'_>,
    session: &[crate::session::store::Stored],
) -> serde_json::Value {
    use crate::session::event::Event;
    let allowed_hosts = view.hosts;
    let neutral = |t: &str| crate::guard::outbound(t, allowed_hosts);
    let event = match &stored.event {
        Event::AssistantMessage { text, tool_calls, usage, estimated, origin } => Event::AssistantMessage {
            text: neutral(text),
            tool_calls: tool_calls.clone(),
            usage: *usage,
            estimated: *estimated,
            origin: *origin,
        },
        Event::Interrupted { partial_text, estimated } => {
            Event::Interrupted { partial_text: neutral(partial_text), estimated: *estimated }
        }
        // A correction may quote the model's own text back.
        Event::Correction { kind, text } => Event::Correction { kind: *kind, text: neutral(text) },
        // The server's folders are not a client's business: the workspace goes by its name.
        Event::SessionStarted { model, workspace, config_fingerprint, principal, collection } => {
            Event::SessionStarted {
                model: model.clone(),
                workspace: folder_name(workspace),
                config_fingerprint: config_fingerprint.clone(),
                principal: principal.clone(),
                collection: collection.clone(),
            }
        }
        other => other.clone(),
    };
    // An answer also comes as safe nodes, for the page to build from (never as HTML).
    if let Event::Answer { text, .. } = &event {
        let redact =
            |text: &str| view.hooks.map_or_else(|| text.to_string(), |hooks| hooks.redacted(text).into_owned());
        let nodes = crate::guard::markdown::render(text, allowed_hosts, &redact);
        let mut citations = crate::session::verify::answer_citations(session, stored.seq);
        if let Some(index) = &view.index {
            crate::session::stale::mark(session, stored.seq, &mut citations, index, view.hooks);
        }
        let citations = crate::session::verify::linked(citations, view.site);
        return serde_json::json!({
            "seq": stored.seq, "at_ms": stored.at_ms, "event": event, "nodes": nodes, "citations": citations,
        });
    }
    serde_json::json!({"seq": stored.seq, "at_ms": stored.at_ms, "event": event})
}

/// The last part of a folder's path (`/srv/acme/docs-workspace` is `docs-workspace`).
fn folder_name(path: &str) -> String {
    std::path::Path::new(path).file_name().map_or_else(|| "workspace".to_string(), |n| n.to_string_lossy().into_owned())
}

/// Where a follower resumes: `Last-Event-ID` wins over `?after=`. Either must be an event
/// number the log can hold (0 to 2^63 - 1): a larger one would wrap and replay the whole log.
pub fn resume_point(headers: &HeaderMap, after: u64) -> Result<u64, String> {
    let cursor = match headers.get("last-event-id") {
        None => after,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| "Last-Event-ID must be an event number (the `id:` of an event)".to_string())?,
    };
    check_cursor(cursor)
}

/// `cursor` when the log can hold an event of that number, else what is wrong with it.
pub fn check_cursor(cursor: u64) -> Result<u64, String> {
    if i64::try_from(cursor).is_ok() {
        Ok(cursor)
    } else {
        Err(format!("event number {cursor} is out of range: events are numbered from 1 to {}", i64::MAX))
    }
}

/// Follows session `id`'s log (a session of `collection`) after `cursor`: every event as it is
/// committed, until the client goes away or its token is `revoked`.
pub fn follow(
    state: Arc<AppState>,
    id: String,
    collection: crate::service::collections::Which,
    cursor: u64,
    slot: (tokio::sync::OwnedSemaphorePermit, crate::service::shares::Held),
    revoked: impl Future<Output = ()> + Send + 'static,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // Subscribe before the first read, so an event committed in between still wakes us.
    let changes = state.watch(&id);
    let stopping = state.stopping();
    let start = (state, id, cursor, changes, VecDeque::<Event>::new());
    let stream = futures_util::stream::unfold(start, move |(state, id, mut cursor, mut changes, mut ready)| {
        // The follower's slot and its principal's share are held for as long as the stream lives.
        let _held = &slot;
        let mut stopping = stopping.clone();
        async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    return Some((Ok(event), (state, id, cursor, changes, ready)));
                }
                // Through the shared readers: a follower holds no log handle of its own.
                match state.readers.read(&state.store, |log| log.events_after(&id, cursor)).await {
                    Ok(events) if !events.is_empty() => {
                        // An answer's citations are checked against its whole turn: read from
                        // the start when the batch holds one.
                        let answers = events.iter().take(BATCH).any(|s| s.event.kind() == "answer");
                        let whole = match answers {
                            true => state.readers.read(&state.store, |log| log.events_after(&id, 0)).await,
                            false => Ok(Vec::new()),
                        };
                        let whole = match whole {
                            Ok(whole) => whole,
                            Err(e) => {
                                let error = error_event(e.into());
                                return Some((Ok(error), (state, id, u64::MAX, changes, ready)));
                            }
                        };
                        let view = View::of(&state, state.collections.get(collection));
                        let send = || {
                            for stored in events.into_iter().take(BATCH) {
                                cursor = stored.seq;
                                let data = outward(&stored, &view, &whole);
                                ready.push_back(event(stored.event.kind(), &data).id(stored.seq.to_string()));
                            }
                        };
                        // An answer's citations read their documents for the site's ids: off the
                        // async workers, and only then.
                        match answers && view.site.is_some() {
                            true => crate::runtime::blocking(send),
                            false => send(),
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let error = error_event(e.into());
                        return Some((Ok(error), (state, id, u64::MAX, changes, ready)));
                    }
                }
                if cursor == u64::MAX || *stopping.borrow() {
                    return None;
                }
                // Wait for a commit, or for the server to shut down (then the stream ends).
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return None },
                    _ = stopping.changed() => return None,
                }
            }
        }
    });
    Sse::new(until_revoked(stream, revoked)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[cfg(test)]
mod tests {
    use crate::session::event::{CorrectionKind, Event};
    use crate::session::store::Stored;

    /// Text the model wrote leaves over HTTP with its links neutralised, also when a
    /// correction quotes it back.
    #[test]
    fn model_text_in_events_leaves_with_links_neutralised() {
        let link = "see ![x](https://evil.example/p?d=internal) now";
        let events = [
            Event::Correction {
                kind: CorrectionKind::Unverified,
                text: format!("This quote is not in them: \"{link}\""),
            },
            Event::Interrupted { partial_text: link.to_string(), estimated: None },
        ];
        for event in events {
            let view = super::View { hosts: &[], site: None, hooks: None, index: None };
            let out = super::outward(&Stored { seq: 1, at_ms: 0, event }, &view, &[]).to_string();
            assert!(!out.contains("evil.example"), "{out}");
        }
    }
}
