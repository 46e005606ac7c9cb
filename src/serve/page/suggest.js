// Suggested questions on an empty conversation (`GET /v1/suggestions`): what several people
// asked and the docs answered, then topics from the docs' headings. One click asks.
import { json } from "/api.js";
import { $, el, button } from "/panels.js";

// The list, fetched once per sign-in.
let loaded = null;

// Shows the suggestions while the conversation is empty; `onPick(question)` asks one.
export async function showSuggestions(onPick) {
  const box = $("suggestions");
  const empty = () => $("turns").children.length === 0;
  if (!empty()) { box.hidden = true; return; }
  try {
    if (!loaded) loaded = (await json("GET", "/v1/suggestions?limit=4")).suggestions || [];
  } catch (_) {
    box.hidden = true; // an older server, or none to offer: the page works without
    return;
  }
  if (!empty() || loaded.length === 0) { box.hidden = true; return; }
  const list = $("suggestion-list");
  list.textContent = "";
  for (const s of loaded) {
    const item = el("li");
    item.appendChild(button(s.label, () => onPick(s.question), "suggestion"));
    item.appendChild(el("span", s.origin === "asked" ? "asked by " + s.people + " people" : "from the docs", "meta"));
    list.appendChild(item);
  }
  box.hidden = false;
}

// Hides them (a question was asked, or a conversation opened).
export function hideSuggestions() {
  $("suggestions").hidden = true;
}

// Forgets the list (signed out: the next person fetches their own).
export function forgetSuggestions() {
  loaded = null;
  hideSuggestions();
}
