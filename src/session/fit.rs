//! The context budget inside a turn: every request a turn sends fits
//! `session.context_budget_tokens`, whatever its tools returned. Compaction (`compact`)
//! summarises what came before the latest question; what the turn itself retrieved is fitted
//! here, in the request only (the log keeps every result whole):
//! 0. call arguments longer than 2 KB (no tool takes that much) are left out, in valid JSON
//!    that says how long they were;
//! 1. results older than the latest step become a stub that says what they showed and how to
//!    see it again (`read_file` with offsets), oldest first;
//! 2. then older steps are dropped, each call with its results, oldest first;
//! 3. then the latest step's results share the room left, each cut to its share with a note
//!    that says how to read the rest.
//!
//! The system prompt (the rules), a compaction's pinned goal and summary, and every person's
//! message (the latest question above all) are never touched: when they alone do not fit, no
//! request is sent ([`Overflow`]). A call is never separated from its results.

use crate::guard::fence;
use crate::guard::redact;
use crate::model::Message;

use super::compact::tokens;
use super::projection::Projected;

/// Where a section of the docs is: its first and last line, by `path#anchor`.
pub type Locate<'a> = &'a dyn Fn(&str) -> Option<(usize, usize)>;

/// Bytes kept free for a cut's note before the text is cut.
const NOTE_RESERVE: usize = 420;
/// Call arguments longer than this are left out of a request over the budget.
const MAX_ARGUMENT_BYTES: usize = 2048;
/// Bytes of harness words after a result's last fence kept when it is cut.
const MAX_TAIL: usize = 600;
/// Places a stub or a note points at, at most.
const MAX_POINTERS: usize = 3;
/// How a fence opens and closes (`guard::fence` makes them; bodies cannot hold either).
const OPEN: &str = "<untrusted source=\"";
const CLOSE_TAG: &str = "</untrusted>";

/// A request fitted to the budget, and what was done to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The messages to send.
    pub messages: Vec<Message>,
    /// Their estimated tokens (the tool schemas not included).
    pub tokens: u64,
    /// Results shortened to a stub.
    pub stubbed: usize,
    /// Steps (a call with its results) left out.
    pub dropped: usize,
    /// Results of the latest step cut to fit, and call arguments left out.
    pub cut: usize,
}

impl Fitted {
    /// Whether the request was changed at all.
    pub fn changed(&self) -> bool {
        self.stubbed + self.dropped + self.cut > 0
    }
}

/// What cannot be left out is larger than the budget: no request is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    /// Tokens of the smallest request the harness could make.
    pub needed: u64,
    /// Tokens the messages may take: the budget less the tool schemas.
    pub room: u64,
}

/// One step of the conversation: an assistant message that called tools, and its results.
struct Step {
    /// The assistant message.
    at: usize,
    /// Its results, in order (they follow it).
    results: std::ops::Range<usize>,
}

/// Fits `projected` into `room` tokens (the budget less the tool schemas sent with it).
pub fn fit(projected: Projected, room: u64, locate: Locate<'_>) -> Result<Fitted, Overflow> {
    let Projected { messages, pinned } = projected;
    let mut slots: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let size = |m: &Message| tokens(std::slice::from_ref(m));
    let mut total: u64 = slots.iter().flatten().map(size).sum();
    let mut fitted = Fitted { messages: Vec::new(), tokens: total, stubbed: 0, dropped: 0, cut: 0 };
    if total > room {
        let steps = steps(&slots, pinned);
        // The latest step: the one whose results end the request (the model reads them next).
        let latest = steps.last().filter(|s| s.results.end == slots.len() && !s.results.is_empty());
        let older = &steps[..steps.len() - usize::from(latest.is_some())];
        // 0. Arguments too long to be anything but noise (a model that wrote 200 KB of
        //    query), in every step: the request says how long they were, in valid JSON.
        for step in &steps {
            if total <= room {
                break;
            }
            let Some(Some(message)) = slots.get_mut(step.at) else { continue };
            let before = size(message);
            if let Message::Assistant { tool_calls, .. } = message {
                for call in tool_calls.iter_mut().filter(|c| c.arguments.len() > MAX_ARGUMENT_BYTES) {
                    let note = serde_json::json!({ "left_out": format!(
                        "{} bytes of arguments, to fit the context budget", call.arguments.len()
                    ) });
                    call.arguments = note.to_string();
                    fitted.cut += 1;
                }
            }
            // A message's bytes / 4 rounds as a whole: its size again, not the bytes saved.
            total = total - before + size(message);
        }
        // 1. Stubs, oldest first.
        let mut stubbed = Vec::new();
        'stubs: for step in older {
            for i in step.results.clone() {
                if total <= room {
                    break 'stubs;
                }
                let Some(Some(was @ Message::Tool { call_id, content })) = slots.get(i) else { continue };
                let stub = Message::Tool { call_id: call_id.clone(), content: stub_of(content, locate) };
                let (before, after) = (size(was), size(&stub));
                if after < before {
                    total -= before - after;
                    slots[i] = Some(stub);
                    stubbed.push(i);
                }
            }
        }
        // 2. Older steps left out, oldest first.
        for step in older {
            if total <= room {
                break;
            }
            for i in std::iter::once(step.at).chain(step.results.clone()) {
                if let Some(gone) = slots[i].take() {
                    total -= size(&gone);
                }
            }
            fitted.dropped += 1;
        }
        // Stubs still in the request (a dropped step's are gone with it).
        fitted.stubbed = stubbed.iter().filter(|&&i| slots[i].is_some()).count();
        // 3. The latest step's results share what is left.
        if let Some(step) = latest
            && total > room
        {
            let mut results: Vec<(usize, u64)> =
                step.results.clone().filter_map(|i| slots[i].as_ref().map(|m| (i, size(m)))).collect();
            let theirs: u64 = results.iter().map(|(_, s)| s).sum();
            let mut left = room.saturating_sub(total - theirs);
            // The smallest first: a result under its share keeps it whole, and the rest share more.
            results.sort_by_key(|&(_, s)| s);
            let mut waiting = results.len() as u64;
            total -= theirs;
            for (i, was) in results {
                let share = left / waiting.max(1);
                waiting -= 1;
                let now = if was <= share {
                    was
                } else if let Some(Message::Tool { call_id, content }) = slots[i].take() {
                    // A message costs its bytes / 4 and 4 more.
                    let bytes = (share.saturating_sub(4).saturating_mul(4) as usize).saturating_sub(call_id.len());
                    let mut shorter = cut(&content, bytes, locate);
                    // Too little room for any of its text: what it showed, as a stub says it.
                    let stub = stub_of(&content, locate);
                    if shorter.len() > bytes && stub.len() < shorter.len() {
                        shorter = stub;
                    }
                    let cut = Message::Tool { call_id, content: shorter };
                    let now = size(&cut);
                    slots[i] = Some(cut);
                    fitted.cut += 1;
                    now
                } else {
                    was
                };
                left = left.saturating_sub(now);
                total += now;
            }
        }
    }
    fitted.messages = slots.into_iter().flatten().collect();
    fitted.tokens = total;
    if total > room {
        return Err(Overflow { needed: total, room });
    }
    Ok(fitted)
}

/// The steps after the first `pinned` messages, in order.
fn steps(slots: &[Option<Message>], pinned: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut i = pinned;
    while i < slots.len() {
        if let Some(Message::Assistant { tool_calls, .. }) = &slots[i]
            && !tool_calls.is_empty()
        {
            let end =
                (i + 1..slots.len()).find(|&j| !matches!(slots[j], Some(Message::Tool { .. }))).unwrap_or(slots.len());
            out.push(Step { at: i, results: i + 1..end });
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// One fenced text a result showed: where from, and which lines when it is a `read_file` slice.
struct Shown {
    /// `docs/refunds.md#window`, or a path.
    source: String,
    /// `read_file`'s "lines A-B of N" header: A, B and N.
    lines: Option<(usize, usize, usize)>,
}

impl Shown {
    fn of(found: &fence::Found<'_>) -> Shown {
        Shown { source: found.source.clone(), lines: header(found.body) }
    }

    /// How the person reading the stub (the model) sees it again: a `read_file` call, and
    /// a label of what it showed.
    fn pointer(&self, from_line: Option<usize>, locate: Locate<'_>) -> (String, String) {
        let path = self.source.split('#').next().unwrap_or_default();
        let (first, last, label) = match self.lines {
            Some((a, b, n)) => {
                let first = from_line.unwrap_or(a);
                (Some(first), Some(b), format!("{path} lines {first}-{b} of {n}"))
            }
            None => match locate(&self.source) {
                Some((a, b)) => (Some(a), Some(b), format!("{} (lines {a}-{b})", self.source)),
                None => (None, None, self.source.clone()),
            },
        };
        let mut call = serde_json::json!({ "path": path });
        if let (Some(first), Some(last)) = (first, last) {
            call["offset"] = first.into();
            call["limit"] = (last.saturating_sub(first) + 1).into();
        }
        (said(&label), said(&format!("read_file {call}")))
    }
}

/// The "lines A-B of N" header `read_file` puts first in its fence.
fn header(body: &str) -> Option<(usize, usize, usize)> {
    let line = body.lines().next()?.strip_prefix("lines ")?;
    let (range, total) = line.split_once(" of ")?;
    let (a, b) = range.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?, total.trim().parse().ok()?))
}

/// Harness words may quote a source: its tags neutralised, on one line, clipped.
fn said(text: &str) -> String {
    crate::guard::clip(&fence::neutralize_tags(&text.replace(['\n', '\r'], " ")), 200)
}

/// What an older result is shortened to: what it showed and how to see it again.
fn stub_of(content: &str, locate: Locate<'_>) -> String {
    let shown: Vec<Shown> = fence::found_in(content).map(|f| Shown::of(&f)).collect();
    if shown.is_empty() {
        return format!(
            "[docs-agent: this result ({} bytes) was left out to fit the context budget; call the tool again to see it]",
            content.len()
        );
    }
    let pointers: Vec<(String, String)> = shown.iter().map(|s| s.pointer(None, locate)).collect();
    pointing("shortened to fit the context budget. This result showed", "To see it again", &pointers, MAX_POINTERS * 2)
}

/// A harness note: `what`, the labels of up to `labels` pointers, then `how`: their distinct
/// `read_file` calls, up to [`MAX_POINTERS`].
fn pointing(what: &str, how: &str, pointers: &[(String, String)], labels: usize) -> String {
    let shown: Vec<&str> = pointers.iter().map(|(l, _)| l.as_str()).take(labels).collect();
    let calls = distinct(pointers.iter().map(|(_, c)| c.as_str()));
    format!(
        "[docs-agent: {what} {}{}. {how}: {}]",
        shown.join("; "),
        more(pointers.len(), shown.len()),
        calls.join("; ")
    )
}

/// The first [`MAX_POINTERS`] distinct calls (sections of one file without their lines are one call).
fn distinct<'s>(calls: impl Iterator<Item = &'s str>) -> Vec<&'s str> {
    let mut out: Vec<&str> = Vec::new();
    for call in calls {
        if out.len() < MAX_POINTERS && !out.contains(&call) {
            out.push(call);
        }
    }
    out
}

/// ", and N more" when `shown` of `all` were listed.
fn more(all: usize, shown: usize) -> String {
    if all > shown { format!(", and {} more", all - shown) } else { String::new() }
}

/// `content` cut to at most `max_bytes` (when a note fits in that), at a line's end, outside
/// any fence's opening tag, every fence it opens closed, and a note saying what is left out and
/// how to read it.
pub fn cut(content: &str, max_bytes: usize, locate: Locate<'_>) -> String {
    if content.len() <= max_bytes {
        return content.to_string();
    }
    let (content, tail) = split_tail(content, max_bytes);
    let mut keep = max_bytes.saturating_sub(NOTE_RESERVE + tail.len());
    loop {
        let head = head(content, keep);
        let mut out = format!("{}{}", closed(head), note(content, head, locate));
        if !tail.is_empty() {
            out.push('\n');
            out.push_str(tail);
        }
        if out.len() <= max_bytes || keep == 0 {
            return out;
        }
        keep = keep.saturating_sub(out.len() - max_bytes).min(head.len().saturating_sub(1));
    }
}

/// `content` and the harness's words after its last fence (retrieve-first repeats the
/// question there), which a cut keeps after its note: only words outside every fence, short,
/// with room for them in `max_bytes`; else no tail.
fn split_tail(content: &str, max_bytes: usize) -> (&str, &str) {
    let Some(end) = content.rfind(CLOSE_TAG).map(|at| at + CLOSE_TAG.len()) else {
        return (content, "");
    };
    let tail = content[end..].trim_start_matches('\n');
    if tail.is_empty() || tail.len() > MAX_TAIL || tail.contains('<') || NOTE_RESERVE + tail.len() > max_bytes / 2 {
        return (content, "");
    }
    (&content[..end], tail)
}

/// The start of `content` kept in `keep` bytes: up to a line's end when one is in the last
/// half, never inside a fence's opening tag or a redaction marker.
fn head(content: &str, keep: usize) -> &str {
    let mut head = redact::head(content, keep);
    if let Some(end) = head.rfind('\n').filter(|&end| end + 1 >= head.len() / 2) {
        head = &head[..=end];
    }
    // The start of a tag, cut before it is complete.
    for tag in [OPEN, CLOSE_TAG] {
        if let Some(n) = (1..tag.len()).rev().find(|&n| head.ends_with(&tag[..n])) {
            head = &head[..head.len() - n];
        }
    }
    // A fence opened and not closed keeps its opening only with some of its body after it.
    if let Some(open) = head.rfind(OPEN)
        && head.rfind(CLOSE_TAG).is_none_or(|close| close < open)
        && head[open..].find("\">\n").is_none_or(|at| open + at + 3 == head.len())
    {
        head = &head[..open];
    }
    // A skill's opening tag, whole or not at all.
    if head.starts_with("<skill ") && !head.contains(">\n") {
        head = "";
    }
    head
}

/// `head` with the fence it ends inside closed (bodies hold no closing tag, so the last
/// opening tag after the last closing one is open), and a skill's tag likewise.
fn closed(head: &str) -> String {
    let mut out = head.to_string();
    let newline = |out: &mut String| {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
    };
    if let Some(open) = head.rfind(OPEN)
        && head.rfind(CLOSE_TAG).is_none_or(|close| close < open)
    {
        newline(&mut out);
        out.push_str(CLOSE_TAG);
    }
    if head.starts_with("<skill ") && !head.contains("</skill>") {
        newline(&mut out);
        out.push_str("</skill>");
    }
    newline(&mut out);
    out
}

/// What a cut to `head` left out of `content`, and how to read it.
fn note(content: &str, head: &str, locate: Locate<'_>) -> String {
    let all: Vec<fence::Found<'_>> = fence::found_in(content).collect();
    if all.is_empty() {
        return format!(
            "[docs-agent: cut to fit the context budget: {} of {} bytes shown; call the tool again with a narrower request for the rest]",
            head.len(),
            content.len()
        );
    }
    let seen: Vec<fence::Found<'_>> = fence::found_in(head).collect();
    let whole = seen.iter().filter(|f| f.closed).count();
    let mut pointers = Vec::new();
    for (i, found) in all.iter().enumerate().skip(whole) {
        let shown = Shown::of(found);
        // The section the cut went through: read on from its first line not shown.
        let from = seen.get(i).filter(|f| !f.closed).and_then(|partial| {
            let (a, _, _) = shown.lines?;
            let kept = partial.body.matches('\n').count().checked_sub(1)?;
            Some(a + kept)
        });
        // Cut inside its closing tag: every line was shown.
        if from.zip(shown.lines).is_some_and(|(from, (_, last, _))| from > last) {
            continue;
        }
        pointers.push(shown.pointer(from, locate));
    }
    if pointers.is_empty() {
        return "[docs-agent: cut to fit the context budget]".to_string();
    }
    pointing("cut to fit the context budget. Not shown:", "To read it", &pointers, MAX_POINTERS)
}

#[cfg(test)]
mod tests;
