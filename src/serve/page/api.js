// The API as the page uses it: the token kept for this browser session only (sessionStorage,
// gone when the tab closes) or, signed in through the company's provider or proxy, the browser's
// own cookie with the CSRF token the server gave; JSON calls that raise the server's own error
// message, and a reader of server-sent events from a fetch response.

const TOKEN = "docs-agent-token";
const SESSION = "docs-agent-session";

// The token and the open session, for this browser session only.
export const stored = {
  token: () => sessionStorage.getItem(TOKEN) || "",
  session: () => sessionStorage.getItem(SESSION) || "",
  keepToken: (token) => sessionStorage.setItem(TOKEN, token),
  keepSession: (id) => (id ? sessionStorage.setItem(SESSION, id) : sessionStorage.removeItem(SESSION)),
  forget: () => { sessionStorage.removeItem(TOKEN); sessionStorage.removeItem(SESSION); },
};

// The CSRF token of a cookie or proxy sign-in (GET /v1/me gives it), sent with every call that
// changes something; none with a token.
let csrf = "";
export function keepCsrf(token) {
  csrf = token || "";
}

// An error the server answered with: its status, code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// `fetch` with the token; a response that is not 2xx becomes an ApiError with the server's message.
export async function call(method, path, body, { accept, signal } = {}) {
  const headers = {};
  if (stored.token()) headers.Authorization = "Bearer " + stored.token();
  else if (csrf && method !== "GET") headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (accept) headers.Accept = accept;
  const response = await fetch(path, { method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let code = "http_" + response.status, message = response.status + " " + response.statusText;
    try {
      const data = await response.json();
      if (data && data.error) ({ code, message } = data.error);
    } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, code, message);
  }
  return response;
}

// A JSON call's parsed body.
export async function json(method, path, body) {
  return (await call(method, path, body)).json();
}

// A call answered with server-sent events: onEvent(kind, data, id) for each; returning false
// from it stops reading.
export async function stream(method, path, body, onEvent, signal) {
  const response = await call(method, path, body, { accept: "text/event-stream", signal });
  await readEvents(response, onEvent, signal);
}

// Reads a server-sent event stream from a fetch response.
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
      if (onEvent(kind, parsed, id) === false) {
        reader.cancel().catch(() => {});
        return;
      }
    }
  }
}

// Every event of session `id`, read a page at a time until a page comes back empty (the
// server decides how many a page holds).
export async function sessionEvents(id) {
  const all = [];
  for (let after = 0; ;) {
    const page = await json("GET", "/v1/sessions/" + encodeURIComponent(id) + "/events?after=" + after);
    if (page.events.length === 0) return all;
    all.push(...page.events);
    after = page.events[page.events.length - 1].seq;
  }
}
