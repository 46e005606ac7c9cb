// End-to-end sign-in through a real OpenID provider: panva's certified `oidc-provider` (npm) runs
// in this process on 127.0.0.1, `docs-agent serve` signs people in with it (authorization code
// with PKCE), and Debian's headless Chromium, driven by playwright-core, plays the people. It
// checks, each with a screenshot under target/browser/:
// - a support person signs in, asks, copies an answer whose citations are public URLs, rates it,
//   and an admin signed in the same way sees the rating in the docs-gaps view;
// - an ID token for another audience, an expired one, a tampered state and a person none of
//   whose groups has a role are each refused with a page that says why, and sign nobody in;
// - a state-changing request the page did not send (no CSRF token) is refused, and signing out
//   ends the cookie's session;
// - axe-core finds no serious or critical accessibility violation on those pages.
// Prints "N passed, M failed" and exits non-zero on any failure.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from "jose";
import Provider from "oidc-provider";
import { chromium } from "playwright-core";
import { assert, audit, check, finish } from "./harness.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const binary = process.env.DOCS_AGENT_BIN || path.join(root, "target/debug/docs-agent");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = path.join(root, "target/browser");
const REFUND = "how long is the refund window";
const SITE = "https://docs.acme.test/help/";
const CLIENT_SECRET = "signin-test-client-secret-0123456789";

const shot = (page, name) => page.screenshot({ path: path.join(shots, "signin-" + name + ".png"), fullPage: true });
fs.mkdirSync(shots, { recursive: true });

// ---- the OpenID provider ----

// Who can sign in at the provider (any password), and the groups it reports for each.
const GROUPS = { ana: ["support"], adam: ["docs-admins", "support"], carol: ["marketing"], eve: ["support"] };
// How the provider's next ID tokens are spoiled: "" (not at all), "audience" or "expired".
let spoil = "";

const { privateKey } = await generateKeyPair("RS256", { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: "signin-test", alg: "RS256", use: "sig" };
// docs-agent's port is known only once it listens; the provider needs the redirect URI first.
// So docs-agent listens on a port picked here, free at this moment.
const agentPort = await freePort();
const agent = "http://127.0.0.1:" + agentPort;
const providerServer = await listen();
const issuer = "http://127.0.0.1:" + providerServer.address().port;
const provider = new Provider(issuer, {
  clients: [{
    client_id: "docs-agent",
    client_secret: CLIENT_SECRET,
    redirect_uris: [agent + "/auth/callback"],
    response_types: ["code"],
    grant_types: ["authorization_code"],
  }],
  jwks: { keys: [jwk] },
  // PKCE for every client, so a sign-in without it fails here as it would at a strict provider.
  pkce: { required: () => true },
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "preferred_username"], groups: ["groups"] },
  cookies: { keys: ["signin-test-cookie-key"] },
  findAccount: async (_ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, email: id + "@acme.test", email_verified: id !== "eve", name: id, preferred_username: id, groups: GROUPS[id] || [] }),
  }),
  features: { devInteractions: { enabled: true } },
  ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
});
// The provider is reached over plain HTTP on loopback; it must not insist on TLS.
provider.proxy = false;
// Spoils the ID token the token endpoint returns, re-signed with the provider's own key, so
// only the claim under test is wrong.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== "/token" || !spoil || !ctx.body || !ctx.body.id_token) return;
  const claims = decodeJwt(ctx.body.id_token);
  const now = Math.floor(Date.now() / 1000);
  if (spoil === "audience") claims.aud = "another-app";
  if (spoil === "expired") { claims.iat = now - 7200; claims.exp = now - 3600; }
  ctx.body.id_token = await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: jwk.kid, typ: "JWT" }).sign(privateKey);
});
providerServer.on("request", provider.callback());

function listen() {
  return new Promise((resolve) => {
    const server = http.createServer();
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}
async function freePort() {
  const server = await listen();
  const port = server.address().port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ---- docs-agent ----

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-agent-signin-"));
const ws = path.join(dir, "ws");
fs.cpSync(path.join(root, "workspace"), ws, { recursive: true });
fs.writeFileSync(path.join(dir, "docs-agent.toml"), `
[serve]
listen = "127.0.0.1:${agentPort}"
[serve.oidc]
issuer = "${issuer}"
client_id = "docs-agent"
redirect_url = "${agent}/auth/callback"
scopes = ["openid", "email", "profile", "groups"]
[serve.groups]
ask = ["support"]
admin = ["docs-admins"]
`);
const server = spawn(binary, ["serve"], {
  cwd: dir,
  env: { PATH: process.env.PATH, WORKSPACE: ws, LLM_MODEL: "scripted", DOCS_AGENT_SESSION_LOG: path.join(dir, "state/sessions.db"),
         DOCS_AGENT_INDEX: path.join(dir, "state/index.db"), DOCS_AGENT_SITE_URL: SITE, DOCS_AGENT_SITE_GENERATOR: "mkdocs",
         DOCS_AGENT_OIDC_CLIENT_SECRET: CLIENT_SECRET },
  stdio: ["ignore", "ignore", "pipe"],
});
let serverLog = "";
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("the server did not start: " + serverLog)), 30000);
  server.stderr.on("data", (chunk) => {
    serverLog += chunk;
    if (/serving on http:\/\//.test(serverLog)) { clearTimeout(timer); resolve(); }
  });
  server.on("exit", (code) => reject(new Error("the server exited with " + code + ": " + serverLog)));
});

const browser = await chromium.launch({
  executablePath: browserPath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const consoleErrors = [];

// A new browser context at docs-agent's page, not signed in.
async function fresh(options = {}) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  await page.goto(agent + "/");
  return page;
}
// Signs `login` in through the provider: the page's button, the provider's login form and
// consent; resolves once the browser is back on docs-agent, whatever it answered.
async function throughProvider(page, login) {
  await page.click("#sso");
  await page.waitForURL((url) => url.toString().startsWith(issuer), { timeout: 10000 });
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any password");
  await page.click("button[type=submit]");
  // Consent, the first time this browser signs this person in to this client.
  await page.waitForLoadState();
  if (page.url().startsWith(issuer)) {
    const consent = page.locator("button[type=submit]", { hasText: "Continue" });
    if (await consent.count()) await consent.click();
  }
  await page.waitForURL((url) => url.toString().startsWith(agent), { timeout: 10000 });
}
async function signedIn(login, options) {
  const page = await fresh(options);
  await throughProvider(page, login);
  await page.waitForSelector("#app:not([hidden])", { timeout: 10000 });
  return page;
}
// Who the browser's cookie signs in, as the API says (status and body).
async function me(page) {
  return page.evaluate(async () => {
    const response = await fetch("/v1/me");
    return { status: response.status, body: await response.json().catch(() => null) };
  });
}
// Types `question`, sends it with Enter, and resolves once the page shows the turn recorded.
async function ask(page, question) {
  const before = await page.locator("#turns > li").count();
  await page.fill("#question", question);
  await page.press("#question", "Enter");
  await page.waitForFunction((n) => {
    const turns = document.querySelectorAll("#turns > li");
    return turns.length === n + 1 && !document.querySelector("#turns .answer[aria-busy]") && !document.querySelector("#stop:not([hidden])");
  }, before, { timeout: 20000 });
}

try {
  await check("a support person signs in at the provider, asks, copies an answer with public URLs, and an admin sees the rating", async () => {
    const page = await signedIn("ana", { permissions: ["clipboard-read", "clipboard-write"] });
    assert((await page.textContent("#who")) === "ana@acme.test", "signed in by the email claim: " + (await page.textContent("#who")));
    assert(await page.locator("#sign-in").isHidden(), "no token form once signed in");
    const cookies = await page.context().cookies(agent);
    const session = cookies.find((c) => c.name === "docs_agent_session");
    assert(session && session.httpOnly && session.sameSite === "Lax", "an HttpOnly, SameSite cookie: " + JSON.stringify(cookies));
    assert(!session.value.includes("ana"), "the cookie does not show who it is: " + session.value);
    await ask(page, REFUND);
    await shot(page, "asked");
    await audit(page, "signed in through the provider, with an answer");
    const turn = page.locator("#turns > li").last();
    await turn.locator("button.copy-markdown").click();
    const markdown = await page.evaluate(() => navigator.clipboard.readText());
    assert(markdown.includes("14 days"), "the answer is copied: " + markdown);
    assert(markdown.includes(SITE + "refunds/#window"), "its citation as a public URL: " + markdown);
    assert(!markdown.includes("docs/refunds.md"), "not as a repository path: " + markdown);
    await turn.locator("button.copy-text").click();
    const text = await page.evaluate(() => navigator.clipboard.readText());
    assert(text.includes("14 days") && text.includes(SITE + "refunds/#window") && !text.includes("**"), "plain text, with the URL: " + text);
    await turn.locator(".feedback input").fill("wanted the annual plan rule");
    await turn.locator(".feedback button.not-helpful").click();
    await turn.locator(".feedback .said", { hasText: "not helpful" }).waitFor({ timeout: 10000 });
    const admin = await signedIn("adam");
    await admin.click("#show-gaps");
    await admin.waitForSelector("#gaps-panel:not([hidden]) .gap", { timeout: 10000 });
    const gaps = await admin.evaluate(() => [...document.querySelectorAll("#gaps .gap")].map((g) => g.textContent));
    assert(gaps.some((g) => g.includes(REFUND) && g.includes("wanted the annual plan rule")), "the admin sees the rating: " + JSON.stringify(gaps));
    await shot(admin, "admin");
    await admin.context().close();
    await page.context().close();
  });

  // Each refusal: the page says why, and the browser holds no session afterwards.
  async function refused(login, expect, name) {
    const page = await fresh();
    await throughProvider(page, login);
    const status = await page.evaluate(() => document.body.dataset.status || "");
    const said = await page.textContent("body");
    await shot(page, name);
    assert(said.includes(expect), "the page says why (" + expect + "): " + said.slice(0, 300));
    assert(status === "401" || status === "403" || status === "400", "refused with a status: " + status);
    await audit(page, "the refusal page (" + name + ")");
    const asked = await me(page);
    assert(asked.status === 401, "nobody is signed in: " + JSON.stringify(asked));
    await page.context().close();
  }

  await check("an ID token issued for another audience signs nobody in", async () => {
    spoil = "audience";
    try { await refused("ana", "audience", "wrong-audience"); } finally { spoil = ""; }
  });

  await check("an expired ID token signs nobody in", async () => {
    spoil = "expired";
    try { await refused("ana", "expired", "expired"); } finally { spoil = ""; }
  });

  await check("a sign-in whose state was tampered with signs nobody in", async () => {
    const page = await fresh();
    await page.click("#sso");
    await page.waitForURL((url) => url.toString().startsWith(issuer), { timeout: 10000 });
    await page.fill("input[name=login]", "ana");
    await page.fill("input[name=password]", "any password");
    await page.click("button[type=submit]");
    await page.locator("button[type=submit]", { hasText: "Continue" }).waitFor({ timeout: 10000 });
    // Consent sends the browser back through the provider's redirects, which the browser follows
    // without the page; they are followed here instead, and the last one, to docs-agent, has its
    // state altered, as a link altered in transit would.
    await page.route((url) => url.toString().startsWith(issuer), async (route) => {
      if (route.request().method() !== "POST") return route.continue();
      const first = await route.fetch({ maxRedirects: 0 });
      let location = first.headers()["location"] || "";
      for (let hops = 0; hops < 5 && location.startsWith(issuer); hops++) {
        location = (await page.context().request.get(location, { maxRedirects: 0 })).headers()["location"] || "";
      }
      assert(location.startsWith(agent + "/auth/callback"), "the provider sends the browser back: " + location);
      const url = new URL(location);
      url.searchParams.set("state", "x" + url.searchParams.get("state"));
      await route.fulfill({ status: 303, headers: { location: url.toString() } });
    });
    await page.click("button[type=submit]");
    await page.waitForURL((url) => url.toString().startsWith(agent + "/auth/callback"), { timeout: 10000 });
    const said = await page.textContent("body");
    await shot(page, "tampered-state");
    assert(said.includes("state"), "the page says the state does not match: " + said.slice(0, 300));
    const asked = await me(page);
    assert(asked.status === 401, "nobody is signed in: " + JSON.stringify(asked));
    await page.context().close();
  });

  await check("a person none of whose groups has a role signs in to nothing, told whom to ask", async () => {
    await refused("carol", "marketing", "no-role");
  });

  await check("an email the provider says is unverified names nobody", async () => {
    await refused("eve", "not verified", "unverified");
  });

  await check("a state-changing request without the page's CSRF token is refused; signing out ends the session", async () => {
    const page = await signedIn("ana");
    const forged = await page.evaluate(async () => {
      const response = await fetch("/v1/ask", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ question: "refund window" }) });
      return { status: response.status, body: await response.json().catch(() => null) };
    });
    assert(forged.status === 403 && forged.body.error.code === "csrf", "refused as CSRF: " + JSON.stringify(forged));
    const csrf = (await me(page)).body.csrf;
    const sent = await page.evaluate(async (token) => {
      const response = await fetch("/v1/ask", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": token }, body: JSON.stringify({ question: "refund window" }) });
      return response.status;
    }, csrf);
    assert(sent === 200, "with the token it is answered: " + sent);
    const cookie = (await page.context().cookies(agent)).find((c) => c.name === "docs_agent_session");
    await page.click("#sign-out");
    await page.waitForSelector("#sign-in:not([hidden])", { timeout: 10000 });
    assert((await me(page)).status === 401, "signed out");
    await page.reload();
    await page.waitForSelector("#sign-in:not([hidden])", { timeout: 10000 });
    assert(await page.locator("#app").isHidden(), "a reload shows the sign-in");
    // The cookie's value, sent again after signing out (a copy kept elsewhere), opens nothing.
    const again = await fetch(agent + "/v1/me", { headers: { Cookie: cookie.name + "=" + cookie.value } });
    assert(again.status === 401, "the signed-out cookie is refused: " + again.status);
    await shot(page, "signed-out");
    await page.context().close();
  });

  await check("no script error", async () => {
    assert(consoleErrors.length === 0, "script errors: " + consoleErrors.join(" | "));
  });
} finally {
  await browser.close();
  server.kill("SIGTERM");
  providerServer.close();
  providerServer.closeAllConnections();
}
finish();
