// What both browser tests share: named checks that count and report, assertions, the axe-core
// audit of a page, and the end that prints "N passed, M failed" and sets the exit code.
import fs from "node:fs";
import path from "node:path";

let passed = 0, failed = 0;

// Runs one named check; a failure is reported and counted, and the next check runs.
export async function check(name, body) {
  try {
    await body();
    passed++;
    console.log("ok   " + name);
  } catch (error) {
    failed++;
    console.log("FAIL " + name + "\n     " + (error && error.stack ? error.stack.split("\n").slice(0, 3).join("\n     ") : error));
  }
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

const axe = fs.readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), "node_modules/axe-core/axe.min.js"), "utf8");

// axe-core's serious and critical findings on the page as it is now: none allowed.
export async function audit(page, state) {
  await page.evaluate(axe);
  const { violations } = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert(bad.length === 0, state + ": " + JSON.stringify(bad.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }))));
}

// Prints the count and exits non-zero on any failure.
export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
