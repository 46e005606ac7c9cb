// docs-agent web page. Everything the server sends is shown as text (textContent), never as
// HTML; citations become buttons that load the cited section through the API.
"use strict";

const $ = (id) => document.getElementById(id);
// The document types the index reads (index::kind::EXTENSIONS), longest first.
const CITATION = /docs\/[A-Za-z0-9_.\/-]+\.(?:markdown|html|mdx|htm|txt|md)(?:#[A-Za-z0-9_-]*)?/g;
let sessionId = null;
let follower = null;

function token() {
  return $("token").value.trim();
}

function showError(message) {
  $("error").textContent = message || "";
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try {
      const data = await response.json();
      if (data && data.error) message = data.error.message;
    } catch (_) { /* not JSON */ }
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return response;
}

// Reads a server-sent event stream from a fetch response: onEvent(kind, data, id).
async function readEvents(response, onEvent, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  while (true) {
    if (signal && signal.aborted) return;
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let kind = "message", data = "", id = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
        else if (line.startsWith("id:")) id = line.slice(3).trim();
      }
      if (!data) continue;
      let parsed = null;
      try { parsed = JSON.parse(data); } catch (_) { parsed = data; }
      if (onEvent(kind, parsed, id) === false) return;
    }
  }
}

// The answer as text, with each citation a button that opens the section.
function renderAnswer(text) {
  const box = $("answer");
  box.textContent = "";
  let at = 0;
  for (const match of text.matchAll(CITATION)) {
    box.appendChild(document.createTextNode(text.slice(at, match.index)));
    const button = document.createElement("button");
    button.type = "button";
    button.className = "cite";
    button.textContent = match[0];
    const [path, anchor] = match[0].split("#");
    button.addEventListener("click", () => showSection(path, anchor || ""));
    box.appendChild(button);
    at = match.index + match[0].length;
  }
  box.appendChild(document.createTextNode(text.slice(at)));
}

async function showSection(path, anchor) {
  try {
    const query = "path=" + encodeURIComponent(path) + "&anchor=" + encodeURIComponent(anchor);
    const section = await (await api("GET", "/v1/sections?" + query)).json();
    $("section-heading").textContent = section.heading;
    $("section-source").textContent = section.path + (section.anchor ? "#" + section.anchor : "") +
      " (lines " + section.lines[0] + "-" + section.lines[1] + ")";
    $("section-text").textContent = section.text;
    $("section-panel").hidden = false;
  } catch (error) {
    showError("cannot open " + path + ": " + error.message);
  }
}

function addStep(step) {
  const item = document.createElement("li");
  item.textContent = step.tool + " — " + step.decision;
  $("steps").appendChild(item);
}

async function ensureSession() {
  if (sessionId) return sessionId;
  const created = await (await api("POST", "/v1/sessions")).json();
  sessionId = created.id;
  return sessionId;
}

async function ask(event) {
  event.preventDefault();
  showError("");
  const question = $("question").value.trim();
  if (!question) return;
  sessionStorage.setItem("docs-agent-token", token());
  $("steps").textContent = "";
  $("answer").textContent = "";
  $("waiting").hidden = true;
  $("status").textContent = "asking…";
  $("ask").disabled = true;
  try {
    const id = await ensureSession();
    const response = await fetch("/v1/sessions/" + encodeURIComponent(id) + "/messages", {
      method: "POST",
      headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ text: question }),
    });
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      throw new Error(data && data.error ? data.error.message : response.statusText);
    }
    let streamed = "";
    await readEvents(response, (kind, data) => {
      if (kind === "tool") addStep(data);
      else if (kind === "text") { streamed += data.delta; $("answer").textContent = streamed; }
      else if (kind === "answer") renderAnswer(data.answer);
      else if (kind === "approval_required") { $("waiting").hidden = false; followSession(id, data.requested_seq); refreshApprovals(); }
      else if (kind === "done") $("status").textContent = data.degraded ? data.stop + " (retrieval only: the model is unavailable)" : data.stop;
      else if (kind === "error") showError(data.message);
    });
  } catch (error) {
    showError(error.message);
    $("status").textContent = "";
  } finally {
    $("ask").disabled = false;
  }
}

// After a write waits for approval, follow the session until its turn ends: from the request's
// own event, so a decision taken before the stream opens is seen too.
async function followSession(id, after) {
  if (follower) follower.abort();
  follower = new AbortController();
  const signal = follower.signal;
  try {
    const response = await fetch("/v1/sessions/" + encodeURIComponent(id) + "/events?after=" + after, {
      headers: { Authorization: "Bearer " + token(), Accept: "text/event-stream" },
      signal,
    });
    await readEvents(response, (kind, data) => {
      const event = data && data.event;
      if (kind === "tool_result" && event) addStep({ tool: "result", decision: event.decision });
      if (kind === "answer" && event) { renderAnswer(event.text); $("waiting").hidden = true; }
      if (kind === "stopped" && event) { $("status").textContent = event.reason; return false; }
      return true;
    }, signal);
  } catch (error) {
    if (!signal.aborted) showError(error.message);
  } finally {
    if (follower && follower.signal === signal) follower.abort();
  }
}

async function refreshApprovals() {
  const list = $("approvals");
  try {
    const data = await (await api("GET", "/v1/approvals?state=pending")).json();
    $("approvals-panel").hidden = false;
    list.textContent = "";
    if (data.approvals.length === 0) {
      const empty = document.createElement("li");
      empty.textContent = "Nothing waits.";
      list.appendChild(empty);
    }
    for (const pending of data.approvals) {
      const item = document.createElement("li");
      const title = document.createElement("strong");
      title.textContent = pending.path + " (asked in " + (pending.principal || "?") + "'s session)";
      const content = document.createElement("pre");
      content.textContent = pending.content;
      item.append(title, content);
      for (const [label, decision] of [["Approve once", "once"], ["Approve for the session", "session"], ["Deny", "deny"]]) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = label;
        button.dataset.decision = decision;
        button.addEventListener("click", async () => {
          try {
            await api("POST", "/v1/approvals/" + encodeURIComponent(pending.id), { decision });
            refreshApprovals();
          } catch (error) {
            showError(error.message);
          }
        });
        item.appendChild(button);
      }
      list.appendChild(item);
    }
  } catch (error) {
    // 403: not an approver; the panel stays hidden.
    if (error.status !== 403) showError(error.message);
    $("approvals-panel").hidden = error.status === 403 ? true : $("approvals-panel").hidden;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem("docs-agent-token") || "";
  $("ask-form").addEventListener("submit", ask);
  $("new-session").addEventListener("click", () => { sessionId = null; $("answer").textContent = ""; $("steps").textContent = ""; });
  $("refresh-approvals").addEventListener("click", refreshApprovals);
  $("token").addEventListener("change", () => { sessionStorage.setItem("docs-agent-token", token()); refreshApprovals(); });
  if (token()) refreshApprovals();
});
