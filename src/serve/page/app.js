// docs-agent web page. Everything the server sends is shown as text (textContent), never as
// HTML: an answer's Markdown comes as safe nodes the page builds elements from; citations
// become buttons that load the cited section through the API.
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

// The answer: from the server's safe nodes (guard::markdown) when it sent them, else as text.
// Every node becomes elements made here, with text set as textContent; nothing is ever parsed
// as HTML. Citations in text ([docs/x.md#anchor]) become buttons that open the section.
function renderAnswer(text, nodes) {
  const box = $("answer");
  box.textContent = "";
  if (Array.isArray(nodes) && (nodes.length > 0 || !text)) build(nodes, box);
  else appendText(box, text || "");
}

// Text, with each citation a button.
function appendText(into, text) {
  let at = 0;
  for (const match of text.matchAll(CITATION)) {
    into.appendChild(document.createTextNode(text.slice(at, match.index)));
    into.appendChild(sectionButton(match[0], [{ t: "text", text: match[0] }]));
    at = match.index + match[0].length;
  }
  into.appendChild(document.createTextNode(text.slice(at)));
}

function sectionButton(target, children) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "cite";
  const [path, anchor] = target.split("#");
  build(children, button, true);
  button.addEventListener("click", () => showSection(path, anchor || ""));
  return button;
}

// Elements for nodes, appended to `into`. `plain`: inside a button, no citation buttons.
function build(nodes, into, plain) {
  const make = (tag, children) => {
    const element = document.createElement(tag);
    build(children || [], element, plain);
    into.appendChild(element);
    return element;
  };
  for (const node of nodes || []) {
    switch (node && node.t) {
      case "text": if (plain) into.appendChild(document.createTextNode(node.text)); else appendText(into, node.text); break;
      case "heading": make(["h3", "h3", "h4", "h5", "h6", "h6"][Math.min(5, Math.max(0, (node.level | 0) - 1))], node.children); break;
      case "paragraph": make("p", node.children); break;
      case "quote": make("blockquote", node.children); break;
      case "strong": make("strong", node.children); break;
      case "em": make("em", node.children); break;
      case "del": make("del", node.children); break;
      case "break": into.appendChild(document.createElement("br")); break;
      case "rule": into.appendChild(document.createElement("hr")); break;
      case "inline_code": { const code = document.createElement("code"); code.textContent = node.text; into.appendChild(code); break; }
      case "code": {
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = node.text;
        if (node.lang) code.dataset.lang = node.lang;
        pre.appendChild(code);
        into.appendChild(pre);
        break;
      }
      case "list": {
        const list = document.createElement(node.start === undefined || node.start === null ? "ul" : "ol");
        if (list.tagName === "OL" && node.start !== 1) list.start = node.start | 0;
        for (const item of node.items || []) {
          const li = document.createElement("li");
          build(item, li, plain);
          list.appendChild(li);
        }
        into.appendChild(list);
        break;
      }
      case "table": {
        const table = document.createElement("table");
        const head = table.createTHead().insertRow();
        for (const cell of node.head || []) { const th = document.createElement("th"); build(cell, th, plain); head.appendChild(th); }
        const body = table.createTBody();
        for (const row of node.rows || []) {
          const tr = body.insertRow();
          for (const cell of row) build(cell, tr.insertCell(), plain);
        }
        into.appendChild(table);
        break;
      }
      case "section": if (plain) build(node.children, into, plain); else into.appendChild(sectionButton(node.target, node.children)); break;
      case "link": {
        // The server allowed it; the page checks the scheme once more.
        if (!/^(https?:|mailto:)/i.test(node.href || "")) { build(node.children, into, plain); break; }
        // Its text plain: a citation button inside a link would do both on one click.
        const a = document.createElement("a");
        build(node.children, a, true);
        into.appendChild(a);
        a.href = node.href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        break;
      }
      case "blocked": {
        const span = make("span", node.children);
        span.className = "blocked";
        span.title = "link not allowed: " + node.url;
        span.appendChild(document.createTextNode(" (link not allowed: " + node.url + ")"));
        break;
      }
      case "image": {
        const span = document.createElement("span");
        span.className = "blocked";
        span.textContent = "[image not shown" + (node.alt ? ": " + node.alt : "") + "]";
        into.appendChild(span);
        break;
      }
      default: break;
    }
  }
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

// Rating the answer just shown: the session's last `answer` event, rated by its seq.
let ratedSeq = null;
async function offerFeedback(id) {
  try {
    const data = await (await api("GET", "/v1/sessions/" + encodeURIComponent(id) + "/events")).json();
    const answers = data.events.filter((e) => e.event && e.event.type === "answer");
    if (answers.length === 0) return;
    ratedSeq = { id, seq: answers[answers.length - 1].seq };
    $("feedback-comment").value = "";
    $("feedback-status").textContent = "";
    $("feedback").hidden = false;
  } catch (error) {
    showError(error.message);
  }
}

async function sendFeedback(helpful) {
  if (!ratedSeq) return;
  try {
    await api("POST", "/v1/sessions/" + encodeURIComponent(ratedSeq.id) + "/feedback",
      { answer_seq: ratedSeq.seq, helpful, comment: $("feedback-comment").value.trim() });
    $("feedback-status").textContent = helpful ? "Thanks: recorded as helpful." : "Thanks: recorded as not helpful; the docs team will see it.";
  } catch (error) {
    showError(error.message);
  }
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
  $("feedback").hidden = true;
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
      else if (kind === "answer") renderAnswer(data.answer, data.nodes);
      else if (kind === "approval_required") { $("waiting").hidden = false; followSession(id, data.requested_seq); refreshApprovals(); }
      else if (kind === "done") {
        $("status").textContent = data.degraded ? data.stop + " (retrieval only: the model is unavailable)" : data.stop;
        if (data.stop === "answered") offerFeedback(id);
      }
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
      if (kind === "answer" && event) { renderAnswer(event.text, data.nodes); $("waiting").hidden = true; }
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
  $("new-session").addEventListener("click", () => { sessionId = null; $("answer").textContent = ""; $("steps").textContent = ""; $("feedback").hidden = true; });
  $("refresh-approvals").addEventListener("click", refreshApprovals);
  $("helpful").addEventListener("click", () => sendFeedback(true));
  $("not-helpful").addEventListener("click", () => sendFeedback(false));
  $("feedback").addEventListener("submit", (event) => { event.preventDefault(); sendFeedback(false); });
  $("token").addEventListener("change", () => { sessionStorage.setItem("docs-agent-token", token()); refreshApprovals(); });
  if (token()) refreshApprovals();
});
