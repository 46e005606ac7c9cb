// Suggested questions on an empty conversation (`GET /v1/suggestions`): what several people
// asked and the docs answered, then topics from the docs' headings. One click asks.
import { json } from "/api.js";
import { $, el, button } from "/panels.js";

// The lists, fetched once per sign-in and collection.
let loaded = new Map();
// Bumped whenever the suggestions stop being wanted (hidden, forgotten): a reply that arrives
// after that shows nothing.
let wanted = 0;

// Shows the suggestions of `collection` ("": the server's one) while the conversation is empty
// (`isEmpty()`); `onPick(question)` asks one.
export async function showSuggestions(onPick, isEmpty, collection) {
  const box = $("suggestions");
  const mine = ++wanted;
  if (!isEmpty()) { box.hidden = true; return; }
  let offered;
  try {
    const query = collection ? "&collection=" + encodeURIComponent(collection) : "";
    offered = loaded.get(collection) || (await json("GET", "/v1/suggestions?limit=4" + query)).suggestions || [];
  } catch (_) {
    if (mine === wanted) box.hidden = true; // an older server: the page works without
    return;
  }
  if (mine !== wanted) return; // signed out, or a conversation opened, meanwhile
  loaded.set(collection, offered);
  if (!isEmpty() || offered.length === 0) { box.hidden = true; return; }
  const list = $("suggestion-list");
  list.textContent = "";
  for (const s of offered) {
    const item = el("li");
    item.appendChild(button(s.label, () => onPick(s.question), "suggestion"));
    item.appendChild(el("span", s.origin === "asked" ? "asked by " + s.people + " people" : "from the docs", "meta"));
    list.appendChild(item);
  }
  box.hidden = false;
}

// Hides them (a question was asked, or a conversation opened).
export function hideSuggestions() {
  wanted++;
  $("suggestions").hidden = true;
}

// Forgets the list (signed out: the next person fetches their own).
export function forgetSuggestions() {
  loaded = new Map();
  hideSuggestions();
}
