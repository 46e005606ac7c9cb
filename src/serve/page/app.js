// docs-agent's web page: sign in with a token (kept for this browser session only), keep a
// conversation with the docs (turns streamed as they run, tool steps, sources, ratings), reopen
// earlier conversations, and, for approvers and admins, the pending writes and the docs' gaps.
// Everything the server sends is shown as text or built from safe nodes; nothing is parsed as HTML.
import { ApiError, json, sessionEvents, stream, stored } from "/api.js";
import { renderAnswer } from "/render.js";
import { ago, button, el, refreshApprovals, showGaps, showSection } from "/panels.js";

const $ = (id) => document.getElementById(id);
// How often an approver's list of pending writes is read again.
const APPROVALS_EVERY_MS = 5000;

let me = null;            // who is signed in: {principal, may: {ask, approve, admin}}
let sessionId = "";       // the open conversation
let running = null;       // the turn this page runs: {id}
let follower = null;      // an AbortController following a turn that waits for an approver
let approvalsTimer = null;

function showError(message) {
  $("error").textContent = message || "";
}

function setStatus(text) {
  $("status").textContent = text || "";
}

// Opens a cited section; `from` is the answer ({session, seq}) whose lines are highlighted.
function openSource(path, anchor, from) {
  showSection(path, anchor, from, showError);
}

// ---- signing in and out ----

async function signIn(token) {
  showError("");
  stored.keepToken(token);
  try {
    me = await json("GET", "/v1/me");
  } catch (error) {
    stored.forget();
    me = null;
    showError(error.status === 401 ? "That token is not valid: check it, or ask your admin for one." : error.message);
    return;
  }
  $("token").value = "";
  $("who").textContent = me.principal;
  $("sign-in").hidden = true;
  $("signed-in").hidden = false;
  $("app").hidden = false;
  $("show-approvals").hidden = !me.may.approve;
  $("show-gaps").hidden = !me.may.admin;
  if (me.may.approve) {
    const count = (n) => { $("approvals-count").textContent = n > 0 ? " (" + n + ")" : ""; };
    $("approvals-panel").hidden = false;
    refreshApprovals(showError, count);
    approvalsTimer = setInterval(() => refreshApprovals(showError, count), APPROVALS_EVERY_MS);
  }
  await loadSessions();
  const reopen = stored.session();
  if (reopen) await openSession(reopen);
  $("question").focus();
}

function signOut() {
  if (follower) follower.abort();
  clearInterval(approvalsTimer);
  stored.forget();
  me = null;
  sessionId = "";
  $("turns").textContent = "";
  $("sessions").textContent = "";
  for (const id of ["section-panel", "approvals-panel", "gaps-panel", "app", "signed-in"]) $(id).hidden = true;
  $("sign-in").hidden = false;
  setStatus("");
  showError("");
  $("token").focus();
}

// ---- the list of conversations ----

async function loadSessions() {
  try {
    const { sessions } = await json("GET", "/v1/sessions");
    const list = $("sessions");
    list.textContent = "";
    if (sessions.length === 0) list.appendChild(el("li", "No conversations yet.", "empty"));
    for (const s of sessions) {
      const item = el("li");
      const open = button(s.title || "(no question yet)", () => openSession(s.id), "session");
      open.dataset.id = s.id;
      if (s.id === sessionId) open.setAttribute("aria-current", "true");
      const note = s.turns + (s.turns === 1 ? " question" : " questions") + " · " + ago(s.last_ms) +
        (s.status !== "idle" ? " · " + s.status.replace(/_/g, " ") : "");
      open.appendChild(el("small", note));
      item.appendChild(open);
      list.appendChild(item);
    }
  } catch (error) {
    showError(error.message);
  }
}

function newConversation() {
  if (follower) follower.abort();
  $("section-panel").hidden = true;
  sessionId = "";
  stored.keepSession("");
  $("turns").textContent = "";
  $("waiting").hidden = true;
  $("resume").hidden = true;
  setStatus("");
  document.querySelectorAll("#sessions [aria-current]").forEach((b) => b.removeAttribute("aria-current"));
  $("question").focus();
}

// ---- a conversation, from its events ----

// The session's turns, folded from its events: each question with its tool steps, answer
// (text, nodes, sources, seq), how it stopped, and its latest rating.
function turnsOf(events) {
  const turns = [];
  const steps = new Map();
  let turn = null;
  for (const { seq, event, nodes, citations } of events) {
    switch (event.type) {
      case "user_message":
        turn = { question: event.text, steps: [], answer: null, stop: "", detail: "", rating: null };
        turns.push(turn);
        break;
      case "assistant_message":
        for (const call of (turn && event.tool_calls) || []) {
          const step = { tool: call.name, argument: argumentOf(call.arguments), result: "", decision: "asked" };
          steps.set(call.id, step);
          turn.steps.push(step);
        }
        break;
      case "tool_result": {
        const step = steps.get(event.call_id);
        if (step) { step.result = firstLine(event.text); step.decision = event.decision; }
        break;
      }
      case "approval_requested":
        if (turn) turn.steps.push({ tool: "approval", argument: event.path, result: "waits for an approver", decision: "asked" });
        break;
      case "approval_granted":
        if (turn) turn.steps.push({ tool: "approval", argument: "", result: "granted by " + event.by, decision: "allowed" });
        break;
      case "approval_denied":
        if (turn) turn.steps.push({ tool: "approval", argument: "", result: "denied" + (event.reason ? ": " + event.reason : ""), decision: "denied" });
        break;
      case "approval_expired":
        if (turn) turn.steps.push({ tool: "approval", argument: "", result: "expired", decision: "denied" });
        break;
      case "answer":
        if (turn) turn.answer = { text: event.text, nodes, citations: citations || [], seq };
        break;
      case "interrupted":
        if (turn) turn.partial = event.partial_text;
        break;
      case "feedback":
        for (const t of turns) if (t.answer && t.answer.seq === event.answer_seq) t.rating = event.helpful;
        break;
      case "stopped":
        if (turn) { turn.stop = event.reason; turn.detail = event.detail || ""; }
        break;
      default:
        break;
    }
  }
  return turns;
}

function argumentOf(text) {
  try {
    const args = JSON.parse(text);
    return String(args.query || args.path || args.name || "");
  } catch (_) {
    return "";
  }
}

function firstLine(text) {
  const line = String(text || "").split("\n").find((l) => l.trim()) || "";
  return line.length > 100 ? line.slice(0, 99) + "…" : line;
}

// One turn's element: the question, its tool steps (collapsed), the answer, its sources and a
// rating form. `live`: a turn running now, whose answer streams in.
function turnElement(turn, live) {
  const item = el("li", null, "turn");
  item.appendChild(el("p", turn.question, "question"));
  const steps = el("details", null, "steps");
  steps.appendChild(el("summary", ""));
  steps.appendChild(el("ol"));
  item.appendChild(steps);
  for (const step of turn.steps) addStep(item, step);
  steps.hidden = turn.steps.length === 0;
  const answer = el("div", null, "answer");
  if (live) answer.setAttribute("aria-busy", "true");
  item.appendChild(answer);
  if (turn.answer) {
    renderAnswer(answer, turn.answer.text, turn.answer.nodes, (path, anchor) => openSource(path, anchor, { session: sessionId, seq: turn.answer.seq }));
    item.appendChild(sourcesOf(turn.answer));
    item.appendChild(ratingOf(turn));
  } else if (!live) {
    // What the model had said when the turn was cut is kept, as text.
    if (turn.partial) answer.appendChild(el("p", turn.partial, "partial"));
    answer.appendChild(el("p", stopText(turn.stop, turn.detail), "stopped"));
  }
  return item;
}

function stopText(stop, detail) {
  const why = {
    "": "No answer yet: the turn is unfinished.",
    cancelled: "Stopped before an answer.",
    step_limit: "No answer: the step limit was reached.",
    time_limit: "No answer: the time limit was reached.",
    model_error: "No answer: the model server failed.",
    budget: "No answer: the token budget is spent.",
  }[stop] || "No answer (" + stop + ").";
  return detail ? why + " " + detail : why;
}

// A tool step, added to a turn's collapsed list (its summary counts them).
function addStep(item, step) {
  const steps = item.querySelector(".steps");
  const line = el("li", null, "step " + (step.decision || ""));
  line.appendChild(el("code", step.tool));
  if (step.argument) line.appendChild(document.createTextNode(" “" + step.argument + "”"));
  if (step.result) line.appendChild(document.createTextNode(": " + step.result));
  steps.querySelector("ol").appendChild(line);
  const n = steps.querySelectorAll("li").length;
  steps.querySelector("summary").textContent = n + (n === 1 ? " step" : " steps") + ": what was searched and read";
  steps.hidden = false;
}

// The answer's sources: path, heading and whether the turn retrieved the section.
function sourcesOf(answer) {
  const box = el("div", null, "sources");
  if (answer.citations.length === 0) {
    box.appendChild(el("p", "No sources cited.", "meta"));
    return box;
  }
  box.appendChild(el("h3", "Sources"));
  const list = el("ul");
  for (const c of answer.citations) {
    const item = el("li", null, c.verified ? "verified" : "unverified");
    const open = button("", () => openSource(c.path, c.anchor, { session: sessionId, seq: answer.seq }), "source");
    open.appendChild(el("span", c.heading || c.path, "heading"));
    open.appendChild(el("span", c.path + (c.anchor ? "#" + c.anchor : ""), "path"));
    item.appendChild(open);
    item.appendChild(el("span", c.verified ? "✓ verified" : "✗ not retrieved", "mark"));
    list.appendChild(item);
  }
  box.appendChild(list);
  return box;
}

// "Was this answer helpful?": recorded as the answer's feedback event.
function ratingOf(turn) {
  const form = el("form", null, "feedback");
  form.appendChild(el("span", "Was this answer helpful?"));
  const comment = el("input");
  comment.type = "text";
  comment.maxLength = 2000;
  comment.placeholder = "what was missing or wrong (optional)";
  comment.setAttribute("aria-label", "comment on this answer");
  const said = el("span", turn.rating === null ? "" : turn.rating ? "Rated helpful." : "Rated not helpful.", "said");
  said.setAttribute("role", "status");
  const rate = async (helpful) => {
    try {
      await json("POST", "/v1/sessions/" + encodeURIComponent(sessionId) + "/feedback",
        { answer_seq: turn.answer.seq, helpful, comment: comment.value.trim() });
      said.textContent = helpful ? "Thanks: recorded as helpful." : "Thanks: recorded as not helpful; the docs team will see it.";
    } catch (error) {
      showError(error.message);
    }
  };
  form.append(button("Yes", () => rate(true), "helpful"), button("No", () => rate(false), "not-helpful"), comment, said);
  form.addEventListener("submit", (event) => { event.preventDefault(); rate(false); });
  return form;
}

// Opens session `id` with its history; an unfinished turn can be resumed, and a write that
// waits is followed until it is decided.
async function openSession(id) {
  showError("");
  if (follower) follower.abort();
  try {
    const events = await sessionEvents(id);
    if (id !== sessionId) $("section-panel").hidden = true;
    sessionId = id;
    stored.keepSession(id);
    const list = $("turns");
    list.textContent = "";
    for (const turn of turnsOf(events)) list.appendChild(turnElement(turn, false));
    document.querySelectorAll("#sessions button.session").forEach((b) => {
      if (b.dataset.id === id) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    });
    const { status } = await json("GET", "/v1/sessions/" + encodeURIComponent(id));
    $("resume").hidden = !(status === "in_turn" && !running);
    $("waiting").hidden = status !== "awaiting_approval";
    setStatus(status === "idle" ? "" : status.replace(/_/g, " "));
    if (status === "awaiting_approval") {
      const asked = events.filter((e) => e.event.type === "approval_requested").pop();
      follow(id, asked ? asked.seq : 0);
    }
    const last = list.lastElementChild;
    if (last) last.scrollIntoView({ block: "end" });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      stored.keepSession("");
      showError("That conversation is gone, or is not yours.");
    } else {
      showError(error.message);
    }
  }
}

// ---- asking ----

async function ensureSession() {
  if (sessionId) return sessionId;
  const created = await json("POST", "/v1/sessions");
  sessionId = created.id;
  stored.keepSession(sessionId);
  return sessionId;
}

async function ask(event) {
  if (event) event.preventDefault();
  const question = $("question").value.trim();
  if (!question || running) return;
  showError("");
  $("waiting").hidden = true;
  $("resume").hidden = true;
  let id;
  try {
    id = await ensureSession();
  } catch (error) {
    showError(error.message);
    return;
  }
  const item = turnElement({ question, steps: [] }, true);
  $("turns").appendChild(item);
  item.scrollIntoView({ block: "end" });
  const answer = item.querySelector(".answer");
  $("question").value = "";
  running = { id };
  busy(true);
  setStatus("asking…");
  let waiting = false;
  try {
    let streamed = "";
    await stream("POST", "/v1/sessions/" + encodeURIComponent(id) + "/messages", { text: question }, (kind, data) => {
      if (kind === "tool") addStep(item, { tool: data.tool, argument: argumentOf(JSON.stringify(data.args)), result: firstLine(data.result), decision: data.decision });
      else if (kind === "text") { streamed += data.delta; answer.textContent = streamed; }
      else if (kind === "answer") renderAnswer(answer, data.answer, data.nodes, (path, anchor) => openSource(path, anchor, { session: id, seq: data.seq }));
      else if (kind === "approval_required") { waiting = true; $("waiting").hidden = false; follow(id, data.requested_seq); }
      else if (kind === "done") setStatus(data.degraded ? data.stop + " (retrieval only: the model is unavailable)" : data.stop.replace(/_/g, " "));
      else if (kind === "error") showError(data.message);
    });
  } catch (error) {
    showError(error.message);
    setStatus("");
  } finally {
    answer.removeAttribute("aria-busy");
    running = null;
    busy(false);
  }
  // The turn as recorded: its answer with sources and a rating form.
  if (!waiting && sessionId === id) await openSession(id);
  loadSessions();
}

function busy(on) {
  $("ask").disabled = on;
  $("stop").hidden = !on;
}

// Stops the running turn (the server records it as cancelled, keeping any partial text).
async function stop() {
  if (!running) return;
  const id = running.id;
  try {
    await json("POST", "/v1/sessions/" + encodeURIComponent(id) + "/cancel");
    setStatus("stopping…");
  } catch (error) {
    showError(error.message);
  }
}

async function resume() {
  $("resume").hidden = true;
  setStatus("resuming…");
  try {
    const outcome = await json("POST", "/v1/sessions/" + encodeURIComponent(sessionId) + "/resume");
    setStatus(outcome.stop.replace(/_/g, " "));
  } catch (error) {
    showError(error.message);
  }
  await openSession(sessionId);
}

// After a write waits for approval, follows the session from the request until its turn ends
// (a decision taken before the stream opens is seen too), then shows the turn as recorded.
async function follow(id, after) {
  if (follower) follower.abort();
  follower = new AbortController();
  const signal = follower.signal;
  try {
    await stream("GET", "/v1/sessions/" + encodeURIComponent(id) + "/events?after=" + after, undefined, (kind, data) => {
      const event = data && data.event;
      if (kind === "approval_granted") setStatus("approved: writing…");
      if (kind === "approval_denied") setStatus("denied");
      return !(kind === "stopped" && event);
    }, signal);
  } catch (error) {
    if (!signal.aborted) showError(error.message);
    return;
  }
  if (signal.aborted) return;
  $("waiting").hidden = true;
  if (sessionId === id) await openSession(id);
  loadSessions();
}

// ---- keys and wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) signIn(token);
  });
  $("sign-out").addEventListener("click", signOut);
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (event) => {
    // Enter sends; Shift+Enter is a new line; a composing input method keeps its Enter.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ask();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && running) {
      event.preventDefault();
      stop();
    }
  });
  $("stop").addEventListener("click", stop);
  $("resume").addEventListener("click", resume);
  $("new-session").addEventListener("click", newConversation);
  $("show-approvals").addEventListener("click", () => {
    $("approvals-panel").hidden = false;
    $("approvals-panel").scrollIntoView({ block: "nearest" });
  });
  $("show-gaps").addEventListener("click", () => showGaps(showError, (path, anchor) => openSource(path, anchor, null)));
  for (const close of document.querySelectorAll("button.close")) {
    close.addEventListener("click", () => { close.closest("section").hidden = true; });
  }
  if (stored.token()) signIn(stored.token());
  else $("token").focus();
});
