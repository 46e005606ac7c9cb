// The list of earlier conversations: the caller's own, latest first, searchable (the server
// matches every word against each conversation's name and questions), each renamed in place or
// deleted from the list (the server records both as events: a deleted conversation is closed,
// not destroyed, and an admin can still audit it). Built from safe nodes, as the rest.
import { json } from "/api.js";
import { $, ago, button, count, el, words } from "/panels.js";

// How long typing in the search box waits before the list is asked for again.
const SEARCH_PAUSE_MS = 250;
let searchTimer = null;
let asked = 0;

// Fills the list. `ctx`: {current() (the open conversation's id), open(id), deleted(id), error(message),
// several() (the caller reads several collections: each conversation names its own)}.
export async function loadHistory(ctx) {
  const mine = ++asked;
  const q = $("history-search").value.trim();
  try {
    const { sessions } = await json("GET", "/v1/sessions" + (q ? "?q=" + encodeURIComponent(q) : ""));
    if (mine !== asked) return;
    const list = $("sessions");
    list.textContent = "";
    if (sessions.length === 0) list.appendChild(el("li", q ? "No conversation holds those words." : "No conversations yet.", "empty"));
    for (const s of sessions) list.appendChild(itemOf(s, ctx));
  } catch (error) {
    ctx.error(error.message);
  }
}

// Asks for the list again once typing pauses.
export function searchHistory(ctx) {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => loadHistory(ctx), SEARCH_PAUSE_MS);
}

function itemOf(s, ctx) {
  const item = el("li", null, "listed");
  const title = s.title || "(no question yet)";
  const open = button(title, () => ctx.open(s.id), "session");
  open.dataset.id = s.id;
  if (s.id === ctx.current()) open.setAttribute("aria-current", "true");
  const note = count(s.turns, "question") + " · " + ago(s.last_ms) + (s.status !== "idle" ? " · " + words(s.status) : "") +
    (ctx.several() && s.collection ? " · " + s.collection : "");
  open.appendChild(el("small", note));
  const actions = el("div", null, "actions");
  const rename = button("Rename", () => renameIn(item, s, ctx), "rename");
  rename.setAttribute("aria-label", "Rename “" + title + "”");
  const remove = button("Delete", () => remove_(s, title, ctx), "delete");
  remove.setAttribute("aria-label", "Delete “" + title + "” from the list");
  actions.append(rename, remove);
  item.append(open, actions);
  return item;
}

// The title as a field: Enter saves the name (PATCH), Esc leaves it as it was.
function renameIn(item, s, ctx) {
  const form = el("form", null, "rename-form");
  const field = el("input");
  field.type = "text";
  field.value = s.title;
  field.maxLength = 120;
  field.setAttribute("aria-label", "the conversation's new name (Enter saves, Esc cancels)");
  form.appendChild(field);
  const done = () => loadHistory(ctx);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = field.value.trim();
    if (!name || name === s.title) return done();
    try {
      await json("PATCH", "/v1/sessions/" + encodeURIComponent(s.id), { title: name });
    } catch (error) {
      ctx.error(error.message);
    }
    done();
  });
  field.addEventListener("keydown", (event) => { if (event.key === "Escape") { event.stopPropagation(); done(); } });
  item.textContent = "";
  item.appendChild(form);
  field.focus();
  field.select();
}

// Deleted from the list after a confirmation: the server closes it, and records who did.
async function remove_(s, title, ctx) {
  if (!window.confirm("Delete “" + title + "” from your conversations? It is kept in the log for audit.")) return;
  try {
    await json("DELETE", "/v1/sessions/" + encodeURIComponent(s.id));
    ctx.deleted(s.id);
  } catch (error) {
    ctx.error(error.message);
  }
  loadHistory(ctx);
}
