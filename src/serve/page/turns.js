// A conversation's turns: folded from a session's events, and each built as elements (its
// question, collapsed tool steps, the answer from safe nodes, its sources and a rating form).
// `ctx` says which session they belong to and what a click on a source or an error does:
// {session, onSource(path, anchor, from), onError(message)}.
import { json } from "/api.js";
import { renderAnswer } from "/render.js";
import { asMarkdown, asText } from "/copy.js";
import { button, count, docsLink, el } from "/panels.js";

// The session's turns, folded from its events: each question with its tool steps, answer
// (text, nodes, sources, seq), how it stopped, and its latest rating.
export function turnsOf(events) {
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

export function argumentOf(text) {
  try {
    const args = JSON.parse(text);
    // The argument that says what the call is about, in trace::brief_tool_line's order.
    return String(args.path || args.query || args.name || "");
  } catch (_) {
    return "";
  }
}

export function firstLine(text) {
  const line = String(text || "").split("\n").find((l) => l.trim()) || "";
  return line.length > 100 ? line.slice(0, 99) + "…" : line;
}

// One turn's element: the question, its tool steps (collapsed), the answer, its sources and a
// rating form. `live`: a turn running now, whose answer streams in.
export function turnElement(turn, live, ctx) {
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
    const from = { session: ctx.session, seq: turn.answer.seq };
    renderAnswer(answer, turn.answer.text, turn.answer.nodes, (path, anchor) => ctx.onSource(path, anchor, from));
    item.appendChild(copyOf(turn.answer, ctx));
    item.appendChild(sourcesOf(turn.answer, ctx));
    item.appendChild(ratingOf(turn, ctx));
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
export function addStep(item, step) {
  const steps = item.querySelector(".steps");
  const line = el("li", null, "step " + (step.decision || ""));
  line.appendChild(el("code", step.tool));
  if (step.argument) line.appendChild(document.createTextNode(" “" + step.argument + "”"));
  if (step.result) line.appendChild(document.createTextNode(": " + step.result));
  steps.querySelector("ol").appendChild(line);
  const n = steps.querySelectorAll("li").length;
  steps.querySelector("summary").textContent = count(n, "step") + ": what was searched and read";
  steps.hidden = false;
}

// The answer's sources: path, heading, whether the turn retrieved the section, and a link to
// its page on the docs site when the server has one.
function sourcesOf(answer, ctx) {
  const box = el("div", null, "sources");
  if (answer.citations.length === 0) {
    box.appendChild(el("p", "No sources cited.", "meta"));
    return box;
  }
  box.appendChild(el("h3", "Sources"));
  const list = el("ul");
  for (const c of answer.citations) {
    const item = el("li", null, c.verified ? "verified" : "unverified");
    const open = button("", () => ctx.onSource(c.path, c.anchor, { session: ctx.session, seq: answer.seq }), "source");
    open.appendChild(el("span", c.heading || c.path, "heading"));
    open.appendChild(el("span", c.path + (c.anchor ? "#" + c.anchor : ""), "path"));
    item.appendChild(open);
    item.appendChild(el("span", c.verified ? "✓ verified" : "✗ not retrieved", "mark"));
    // Reopened later: the section changed since the answer (or is gone).
    if (c.stale) item.appendChild(el("span", "⚠ changed since this answer", "stale"));
    const out = docsLink(c.url, "docs page");
    if (out) {
      out.setAttribute("aria-label", "docs page of " + (c.heading || c.path) + ", on the docs site");
      item.appendChild(out);
    }
    list.appendChild(item);
  }
  box.appendChild(list);
  return box;
}

// Copy the answer, as Markdown or as plain text, its citations as the docs site's URLs.
function copyOf(answer, ctx) {
  const row = el("div", null, "copy");
  const said = el("span", "", "said");
  said.setAttribute("role", "status");
  const copy = async (text, what) => {
    try {
      await navigator.clipboard.writeText(text);
      said.textContent = "Copied " + what + ".";
    } catch (error) {
      ctx.onError("Cannot copy: " + error.message);
    }
  };
  const markdown = button("Copy", () => copy(asMarkdown(answer), "as Markdown"), "copy-markdown");
  markdown.setAttribute("aria-label", "Copy the answer as Markdown");
  const text = button("Copy as text", () => copy(asText(answer), "as plain text"), "copy-text");
  text.setAttribute("aria-label", "Copy as text: the answer in plain text");
  row.append(markdown, text, said);
  return row;
}

// "Was this answer helpful?": recorded as the answer's feedback event.
function ratingOf(turn, ctx) {
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
      await json("POST", "/v1/sessions/" + encodeURIComponent(ctx.session) + "/feedback",
        { answer_seq: turn.answer.seq, helpful, comment: comment.value.trim() });
      said.textContent = helpful ? "Thanks: recorded as helpful." : "Thanks: recorded as not helpful; the docs team will see it.";
    } catch (error) {
      ctx.onError(error.message);
    }
  };
  form.append(button("Yes", () => rate(true), "helpful"), button("No", () => rate(false), "not-helpful"), comment, said);
  // Enter in the comment does not rate: only a click on Yes or No does.
  form.addEventListener("submit", (event) => event.preventDefault());
  return form;
}
