// docs-agent's web page: sign in through the company's identity provider (a cookie), behind an
// authenticating proxy, or with a token (kept for this browser session only); keep a
// conversation with the docs (turns streamed as they run, tool steps, sources, ratings), reopen
// earlier conversations, and, for approvers and admins, the pending writes and the docs' gaps.
// Everything the server sends is shown as text or built from safe nodes; nothing is parsed as HTML.
import { ApiError, call, json, keepCsrf, sessionEvents, stream, stored } from "/api.js";
import { renderAnswer } from "/render.js";
import { $, refreshApprovals, showGaps, showSection, words } from "/panels.js";
import { forgetSuggestions, hideSuggestions, showSuggestions } from "/suggest.js";
import { loadHistory, searchHistory } from "/history.js";
import { addStep, argumentOf, firstLine, turnElement, turnsOf } from "/turns.js";

// How often an approver's list of pending writes is read again (while the page is visible).
const APPROVALS_EVERY_MS = 5000;

let me = null;            // who is signed in: {principal, may: {ask, approve, admin}}
let sessionId = "";       // the open conversation
let running = null;       // the turn this page runs or follows live: {id, stream: AbortController}
let follower = null;      // an AbortController following the open conversation's turn
let opening = 0;          // counts openSession calls: only the latest one shows
let approvalsTimer = null;
let collection = "";      // the collection a new conversation reads ("" where the server has one)

function showError(message) {
  $("error").textContent = message || "";
}

function setStatus(text) {
  $("status").textContent = text || "";
}

// Opens a cited section; `from` is the answer ({session, seq}) whose lines are highlighted.
function openSource(path, anchor, from) {
  // a link in the section to another opens that one, with nothing highlighted
  showSection(path, anchor, from, showError, (to, at) => openSource(to, at), collection);
}

// `path` reading the chosen collection (`?collection=`), where the server has several.
function inCollection(path) {
  if (!collection) return path;
  return path + (path.includes("?") ? "&" : "?") + "collection=" + encodeURIComponent(collection);
}

// The picker of collections: shown when the caller reads more than one; the first is chosen.
function offerCollections(list) {
  const names = (list || []).map((c) => c.name);
  const select = $("collection");
  select.textContent = "";
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    select.appendChild(option);
  }
  collection = names.length > 1 ? names[0] : "";
  $("collection-picker").hidden = names.length < 2;
}

// What a turn's elements need to know: the session they belong to, what a source click does.
function ctx(session) {
  return { session, onSource: openSource, onError: showError };
}

// ---- signing in and out ----

// Signs in with `token`, or with none: then the browser's own sign-in (a cookie from the
// identity provider, or the proxy in front), quietly, showing the sign-in form if there is none.
async function signIn(token) {
  showError("");
  if (token) stored.keepToken(token);
  try {
    me = await json("GET", "/v1/me");
  } catch (error) {
    me = null;
    // Only a refused token is forgotten: a server that is restarting keeps it for a retry.
    if (token && error.status === 401) stored.forget();
    if (token) showError(error.status === 401 ? "That token is not valid: check it, or ask your admin for one." : "Cannot sign in: " + error.message);
    // Signed in elsewhere but given no role (a proxy's sign-in): say so; not signed in: the form.
    else if (error.status !== 401) showError(error.message);
    $("sign-in").hidden = false;
    if (!$("sso").hidden) $("sso").focus(); else $("token").focus();
    return;
  }
  keepCsrf(me.csrf);
  offerCollections(me.collections);
  // A proxy's sign-in ends at the proxy, not here.
  $("sign-out").hidden = me.signed_in_with === "proxy";
  $("token").value = "";
  $("who").textContent = me.principal;
  $("sign-in").hidden = true;
  $("signed-in").hidden = false;
  $("app").hidden = false;
  // Pending writes mean something only where writes can happen at all.
  const approves = me.may.approve && me.writes !== false;
  $("show-approvals").hidden = !approves;
  $("show-gaps").hidden = !me.may.admin;
  // A token that may not ask (an approver only) sees no conversations.
  for (const id of ["chat", "new-session", "history"]) $(id).hidden = !me.may.ask;
  if (approves) {
    // The panel shows once something waits (or at once for an approver who does not ask, who
    // has nothing else to see); the button opens it any time.
    const told = (n) => {
      $("approvals-count").textContent = n > 0 ? " (" + n + ")" : "";
      if (n > 0) $("approvals-panel").hidden = false;
    };
    $("approvals-panel").hidden = me.may.ask;
    const poll = async () => {
      if (document.visibilityState !== "visible") return;
      if (!(await refreshApprovals(showError, told))) clearInterval(approvalsTimer);
    };
    poll();
    approvalsTimer = setInterval(poll, APPROVALS_EVERY_MS);
  }
  if (!me.may.ask) return;
  // The conversation to reopen is the one stored before the list loads: a question asked
  // meanwhile starts (and stores) a conversation of its own, which is never wiped under it.
  const reopen = stored.session();
  await loadSessions();
  if (reopen && !sessionId && !running) await openSession(reopen);
  offerSuggestions();
  $("question").focus();
}

// Offers suggested questions while the conversation on the page is empty.
function offerSuggestions() {
  showSuggestions(askThis, () => !sessionId && !running && $("turns").children.length === 0, collection);
}

// Asks a picked suggestion; whatever was typed in the box stays there.
function askThis(question) {
  if (running) return;
  $("question").focus();
  ask(null, question);
}

// Forgets the token (or ends the provider's sign-in) and everything shown: the next person at
// this browser sees nothing of it.
async function signOut() {
  if (me && me.signed_in_with === "oidc") {
    try { await call("POST", "/auth/logout"); } catch (error) { showError("Signing out failed: " + error.message); return; }
  }
  keepCsrf("");
  forgetSuggestions();
  if (follower) follower.abort();
  if (running && running.stream) running.stream.abort();
  running = null;
  busy(false);
  clearInterval(approvalsTimer);
  stored.forget();
  me = null;
  sessionId = "";
  opening++;
  $("history-search").value = "";
  for (const id of ["turns", "sessions", "approvals", "gaps", "section-text", "section-heading", "section-source", "gaps-summary"]) $(id).textContent = "";
  delete $("approvals").dataset.ids;
  $("question").value = "";
  for (const id of ["section-panel", "approvals-panel", "gaps-panel", "app", "signed-in", "waiting", "resume"]) $(id).hidden = true;
  $("sign-in").hidden = false;
  setStatus("");
  showError("");
  if (!$("sso").hidden) $("sso").focus(); else $("token").focus();
}

// ---- the list of conversations ----

// The list of earlier conversations (history.js), with what its items do here.
const history = {
  current: () => sessionId,
  open: (id) => openSession(id),
  deleted: (id) => { if (id === sessionId) newConversation(); },
  error: (message) => showError(message),
  several: () => !$("collection-picker").hidden,
};

async function loadSessions() {
  if (!me || !me.may.ask) return;
  await loadHistory(history);
}

function newConversation() {
  if (follower) follower.abort();
  opening++;
  $("section-panel").hidden = true;
  sessionId = "";
  stored.keepSession("");
  $("turns").textContent = "";
  $("waiting").hidden = true;
  $("resume").hidden = true;
  setStatus("");
  document.querySelectorAll("#sessions [aria-current]").forEach((b) => b.removeAttribute("aria-current"));
  offerSuggestions();
  $("question").focus();
}

// Opens session `id` with its history. A turn running on the server is followed live, one that
// waits for an approver is followed until it is decided, and one a crash or shutdown left
// unfinished can be resumed. Only the latest call shows (a slow reply to an earlier click, or
// one a question asked meanwhile overtook, is dropped). `keepError`: an error already shown stays.
async function openSession(id, keepError) {
  if (!keepError) showError("");
  if (follower) follower.abort();
  const mine = ++opening;
  hideSuggestions();
  try {
    const events = await sessionEvents(id);
    const shown = await json("GET", "/v1/sessions/" + encodeURIComponent(id));
    if (mine !== opening) return;
    // A conversation reads the collection it started in: the picker says which.
    const started = events.length > 0 ? events[0].event : null;
    if (collection && started && started.collection) {
      collection = started.collection;
      $("collection").value = collection;
    }
    if (id !== sessionId) $("section-panel").hidden = true;
    sessionId = id;
    stored.keepSession(id);
    quietly(() => {
      const list = $("turns");
      list.textContent = "";
      for (const turn of turnsOf(events)) list.appendChild(turnElement(turn, false, ctx(id)));
    });
    document.querySelectorAll("#sessions button.session").forEach((b) => {
      if (b.dataset.id === id) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    });
    const mineRunning = running && running.id === id;
    $("resume").hidden = !(shown.status === "in_turn" && !shown.running && !mineRunning);
    $("waiting").hidden = shown.status !== "awaiting_approval";
    if (!mineRunning) setStatus(shown.status === "idle" ? "" : words(shown.status));
    const last = events.length > 0 ? events[events.length - 1].seq : 0;
    if (shown.status === "awaiting_approval") {
      const asked = events.filter((e) => e.event.type === "approval_requested").pop();
      follow(id, asked ? asked.seq : last);
    } else if (shown.status === "in_turn" && shown.running && !mineRunning) {
      follow(id, last, true);
    }
    const end = $("turns").lastElementChild;
    if (end) end.scrollIntoView({ block: "end" });
  } catch (error) {
    if (mine !== opening) return;
    if (error instanceof ApiError && error.status === 404) {
      stored.keepSession("");
      showError("That conversation is gone, or is not yours.");
    } else {
      showError(error.message);
    }
  }
}

// Changes the conversation without a screen reader announcing all of it again.
function quietly(change) {
  const log = $("log");
  log.setAttribute("aria-live", "off");
  try { change(); } finally { log.setAttribute("aria-live", "polite"); }
}

// ---- asking ----

async function ensureSession() {
  if (sessionId) return sessionId;
  const created = await json("POST", inCollection("/v1/sessions"));
  sessionId = created.id;
  stored.keepSession(sessionId);
  return sessionId;
}

// Asks what is typed in the box, or `picked` (a suggestion), leaving the box as it is.
async function ask(event, picked) {
  if (event) event.preventDefault();
  const question = picked || $("question").value.trim();
  if (!question || running) return;
  // Taken before the first wait, so a second Enter does not ask twice.
  running = { id: "", stream: new AbortController() };
  // A conversation still being opened is not shown over this question (see openSession).
  opening++;
  busy(true);
  showError("");
  $("waiting").hidden = true;
  $("resume").hidden = true;
  let id;
  try {
    id = await ensureSession();
  } catch (error) {
    showError(error.message);
    running = null;
    busy(false);
    return;
  }
  running.id = id;
  hideSuggestions();
  const item = turnElement({ question, steps: [] }, true, ctx(id));
  $("turns").appendChild(item);
  item.scrollIntoView({ block: "end" });
  const answer = item.querySelector(".answer");
  setStatus("asking…");
  let waiting = false, failed = false, opened = false, answerSeq = null;
  try {
    let streamed = "";
    await stream("POST", "/v1/sessions/" + encodeURIComponent(id) + "/messages", { text: question }, (kind, data) => {
      // The question is cleared once the server has it.
      if (!opened) { opened = true; if (!picked) $("question").value = ""; }
      if (kind === "tool") {
        // Text the model wrote before a tool call is not part of the answer.
        streamed = "";
        answer.textContent = "";
        addStep(item, { tool: data.tool, argument: argumentOf(JSON.stringify(data.args)), result: firstLine(data.result), decision: data.decision });
      }
      else if (kind === "text") { streamed += data.delta; answer.textContent = streamed; }
      else if (kind === "answer") {
        answerSeq = data.seq;
        renderAnswer(answer, data.answer, data.nodes, (path, anchor) => openSource(path, anchor, { session: id, seq: data.seq }));
      }
      else if (kind === "approval_required") {
        waiting = true;
        // Only the conversation on screen shows the wait and follows it.
        if (sessionId === id) { $("waiting").hidden = false; follow(id, data.requested_seq); }
      }
      else if (kind === "done") setStatus(data.degraded ? words(data.stop) + " (retrieval only: the model is unavailable)" : words(data.stop));
      else if (kind === "error") { failed = true; showError(data.message); }
    }, running.stream.signal);
  } catch (error) {
    failed = true;
    if (!(running && running.stream.signal.aborted)) showError(error.message);
    setStatus("");
    if (!opened) item.remove();
  } finally {
    running = null;
    busy(false);
  }
  // The turn as recorded, in place: its answer with sources and a rating form. The live
  // element stays busy until then.
  if (!waiting && !failed && sessionId === id) await settle(id, item, answerSeq);
  answer.removeAttribute("aria-busy");
  loadSessions();
}

// Replaces a turn shown live with the turn as the log recorded it, without announcing it again.
// The turn is found by its answer's `seq` (or, with no answer, by the element's place in the
// list), never as "the last turn": a question asked meanwhile may already be recorded after it.
async function settle(id, item, seq) {
  try {
    const turns = turnsOf(await sessionEvents(id));
    const place = [...$("turns").children].indexOf(item);
    const turn = seq === null ? turns[place] : turns.find((t) => t.answer && t.answer.seq === seq);
    if (turn && item.isConnected && sessionId === id) quietly(() => item.replaceWith(turnElement(turn, false, ctx(id))));
  } catch (error) {
    showError(error.message);
  }
}

function busy(on) {
  $("ask").disabled = on;
  $("stop").hidden = !on;
}

// Stops the running turn (the server records it as cancelled, keeping any partial text).
async function stop() {
  if (!running || !running.id) return;
  const id = running.id;
  try {
    await json("POST", "/v1/sessions/" + encodeURIComponent(id) + "/cancel");
    setStatus("stopping…");
  } catch (error) {
    showError(error.message);
  }
}

async function resume() {
  if (running) return;
  const id = sessionId;
  $("resume").hidden = true;
  running = { id };
  busy(true);
  setStatus("resuming…");
  let failed = false;
  try {
    const outcome = await json("POST", "/v1/sessions/" + encodeURIComponent(id) + "/resume");
    setStatus(words(outcome.stop));
  } catch (error) {
    failed = true;
    showError(error.message);
  } finally {
    running = null;
    busy(false);
  }
  if (sessionId === id) await openSession(id, failed);
}

// Follows session `id` from event `after` until its turn stops (a decision taken before the
// stream opens is seen too), then shows the turn as recorded. `live`: a turn running on the
// server (after a reload), which Stop and Esc can cancel.
async function follow(id, after, live) {
  if (follower) follower.abort();
  follower = new AbortController();
  const signal = follower.signal;
  if (live) { running = { id }; busy(true); setStatus("a turn is running…"); }
  let failed = false;
  try {
    await stream("GET", "/v1/sessions/" + encodeURIComponent(id) + "/events?after=" + after, undefined, (kind, data) => {
      if (kind === "approval_granted") setStatus("approved: going on…");
      else if (kind === "approval_denied") setStatus("denied");
      else if (kind === "error") { failed = true; showError(data.message); return false; }
      return !(kind === "stopped" && data && data.event);
    }, signal);
  } catch (error) {
    failed = true;
    if (!signal.aborted) showError(error.message);
  } finally {
    if (live && running && running.id === id) { running = null; busy(false); }
  }
  if (signal.aborted) return;
  $("waiting").hidden = true;
  if (sessionId === id) await openSession(id, failed);
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
  $("collection").addEventListener("change", () => {
    collection = $("collection").value;
    newConversation();
  });
  $("history-search").addEventListener("input", () => searchHistory(history));
  $("show-approvals").addEventListener("click", () => {
    $("approvals-panel").hidden = false;
    $("approvals-panel").scrollIntoView({ block: "nearest" });
  });
  $("show-gaps").addEventListener("click", () => showGaps(showError, (path, anchor) => openSource(path, anchor, null)));
  for (const close of document.querySelectorAll("button.close")) {
    close.addEventListener("click", () => { close.closest("section").hidden = true; });
  }
  start();
});

// Offers the provider's sign-in when the server has one, then signs in with the stored token
// or the browser's own sign-in.
async function start() {
  try {
    const methods = await (await fetch("/auth/methods")).json();
    $("sso").hidden = !methods.oidc;
  } catch (_) { /* an older server: tokens only */ }
  await signIn(stored.token());
}
