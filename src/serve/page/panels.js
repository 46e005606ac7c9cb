// The panels beside the conversation: a cited section with the lines the answer draws on
// highlighted, the pending writes an approver decides (with the conversation each came from),
// and the admin's docs-gaps report. Everything is built with createElement and textContent.
import { json } from "/api.js";
import { renderNodes } from "/render.js";

// The element with this id.
export const $ = (id) => document.getElementById(id);

// "1 step", "3 steps".
export function count(n, word) {
  return n + " " + word + (n === 1 ? "" : "s");
}

// A server's snake_case word as text: `awaiting_approval` → "awaiting approval".
export function words(code) {
  return String(code || "").replace(/_/g, " ");
}

// An element `tag` with `text` and, optionally, a class.
export function el(tag, text, className) {
  const element = document.createElement(tag);
  if (text !== undefined && text !== null) element.textContent = text;
  if (className) element.className = className;
  return element;
}

// A button that calls `onClick`.
export function button(label, onClick, className) {
  const b = el("button", label, className);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

// A link out to a page of the published docs (`url`, from the server's [site]), opened in a new
// tab; null for anything but an http(s) URL.
export function docsLink(url, label) {
  if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return null;
  const a = el("a", label, "docs-link");
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

// "3 min ago", "2 h ago", or the date.
export function ago(ms) {
  const minutes = Math.round((Date.now() - ms) / 60000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return minutes + " min ago";
  if (minutes < 24 * 60) return Math.round(minutes / 60) + " h ago";
  return new Date(ms).toLocaleDateString();
}

// Shows one panel of the aside (`section-panel`, `approvals-panel`, `gaps-panel`) in view.
function reveal(id) {
  const panel = $(id);
  panel.hidden = false;
  panel.scrollIntoView({ block: "nearest" });
}

// Opens section path#anchor beside the conversation, rendered from the server's safe nodes; with
// `from` ({session, seq} of an answer), the blocks holding the lines that answer draws on are
// highlighted and the first is scrolled to. A link in the section to another calls `onCite`.
// Without `from`, the section is read in `collection` ("": the server's one).
export async function showSection(path, anchor, from, onError, onCite, collection) {
  try {
    let query = "path=" + encodeURIComponent(path) + "&anchor=" + encodeURIComponent(anchor || "");
    if (from) query += "&session=" + encodeURIComponent(from.session) + "&seq=" + from.seq;
    else if (collection) query += "&collection=" + encodeURIComponent(collection);
    const section = await json("GET", "/v1/sections?" + query);
    $("section-heading").textContent = section.heading || section.path;
    $("section-source").textContent = section.path + (section.anchor ? "#" + section.anchor : "") +
      " (lines " + section.lines[0] + "-" + section.lines[1] + ")";
    const out = docsLink(section.url, "Open on the docs site");
    if (out) $("section-source").append(" ", out);
    const cited = (section.cited_lines || []).length;
    const text = $("section-text");
    // The panel's title is the heading: the section's own first heading is not shown twice.
    const nodes = section.nodes || [];
    const lead = nodes[0] && nodes[0].t === "cited" ? (nodes[0].children || [])[0] : nodes[0];
    const shown = nodes.length > 1 && lead && lead.t === "heading" ? nodes.slice(1) : nodes;
    renderNodes(text, shown, onCite);
    $("section-cited").textContent = cited > 0
      ? "What the answer draws on (" + count(cited, "line") + ") is highlighted."
      : "";
    reveal("section-panel");
    const first = text.querySelector("mark");
    if (first) first.scrollIntoView({ block: "nearest" });
  } catch (error) {
    onError("cannot open " + path + (anchor ? "#" + anchor : "") + ": " + error.message);
  }
}

// The pending writes, for an approver: each with its target, the conversation it came from and
// its exact (redacted) content, decided with one click. `told` is told how many wait.
// The list is rebuilt only when the set of pending writes changed, so a reader's place, focus
// and open details survive each refresh. Resolves false when the caller may not approve.
export async function refreshApprovals(onError, told) {
  const list = $("approvals");
  try {
    const data = await json("GET", "/v1/approvals?state=pending");
    const ids = data.approvals.map((p) => p.id).join(" ");
    told(data.approvals.length);
    if (list.dataset.ids === ids && list.childElementCount > 0) return true;
    list.dataset.ids = ids;
    list.textContent = "";
    if (data.approvals.length === 0) list.appendChild(el("li", "Nothing waits.", "empty"));
    for (const pending of data.approvals) list.appendChild(approvalItem(pending, onError, told));
    return true;
  } catch (error) {
    onError(error.message);
    return !(error.status === 401 || error.status === 403);
  }
}

function approvalItem(pending, onError, told) {
  const item = el("li", null, "approval");
  item.dataset.id = pending.id;
  item.appendChild(el("h3", pending.path));
  const expires = Math.max(0, Math.round((pending.expires_at_ms - Date.now()) / 60000));
  item.appendChild(el("p", (pending.tool || "write_file") + " in " + (pending.principal || "?") + "'s session · asked " +
    ago(pending.requested_at_ms) + " · expires in " + expires + " min", "meta"));
  if (pending.rule) item.appendChild(el("p", "asked by the rule " + pending.rule, "meta"));
  const conversation = el("details", null, "conversation");
  conversation.open = true;
  conversation.appendChild(el("summary", "The conversation it came from"));
  const said = el("ol");
  for (const message of pending.conversation || []) {
    const line = el("li", null, message.role);
    line.appendChild(el("span", message.role === "user" ? "asked: " : "answered: ", "who"));
    line.appendChild(el("span", message.text));
    said.appendChild(line);
  }
  conversation.appendChild(said);
  item.appendChild(conversation);
  item.appendChild(el("p", "Content to write (secrets redacted):", "meta"));
  item.appendChild(el("pre", pending.content, "content"));
  const row = el("div", null, "row");
  for (const [label, decision] of [["Approve once", "once"], ["Approve for the session", "session"], ["Deny", "deny"]]) {
    const b = button(label, async () => {
      row.querySelectorAll("button").forEach((x) => { x.disabled = true; });
      try {
        await json("POST", "/v1/approvals/" + encodeURIComponent(pending.id), { decision });
      } catch (error) {
        onError(error.message);
        row.querySelectorAll("button").forEach((x) => { x.disabled = false; });
      }
      refreshApprovals(onError, told);
    }, decision === "deny" ? "danger" : "");
    b.dataset.decision = decision;
    row.appendChild(b);
  }
  item.appendChild(row);
  return item;
}

// The admin's to-do list for the docs: the questions the docs could not answer, alike ones
// grouped and counted, with the sections that came closest.
export async function showGaps(onError, onCite) {
  const list = $("gaps");
  try {
    const report = await json("GET", "/v1/reports/gaps?days=30&limit=50");
    $("gaps-summary").textContent = count(report.questions, "question") + " in " + count(report.groups, "group") +
      " in the last " + report.days + " days.";
    list.textContent = "";
    if (report.gaps.length === 0) list.appendChild(el("li", "No gaps: every question found an answer.", "empty"));
    for (const gap of report.gaps) {
      const item = el("li", null, "gap");
      item.appendChild(el("h3", gap.question));
      const reasons = Object.entries(gap.reasons).map(([why, n]) => words(why) + " ×" + n).join(", ");
      item.appendChild(el("p", "asked " + count(gap.count, "time") + " · " + reasons +
        " · last " + ago(gap.last_ms), "meta"));
      const comments = gap.asked.map((a) => a.comment).filter(Boolean);
      for (const comment of comments) item.appendChild(el("blockquote", comment));
      if (gap.closest.length > 0) {
        item.appendChild(el("p", "Closest sections:", "closest"));
        const closest = el("ul", null, "closest");
        for (const c of gap.closest) {
          const [path, anchor] = c.section.split("#");
          const line = el("li");
          line.appendChild(button(c.section, () => onCite(path, anchor || ""), "cite"));
          closest.appendChild(line);
        }
        item.appendChild(closest);
      } else {
        item.appendChild(el("p", "No section came close: the docs lack this topic.", "closest"));
      }
      list.appendChild(item);
    }
    reveal("gaps-panel");
  } catch (error) {
    onError(error.message);
  }
}
