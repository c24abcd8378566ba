// Accessibility of every page (issue 32): axe-core 4 in headless Chromium against a real core
// serving a tiny model, in the light and the dark theme, at 1280×800 and 800×700. A serious or
// critical violation fails the test (each printed with the elements it names); the chat is checked
// with a real answer in it. Beside axe: every page has a level-1 heading, visible buttons are at
// least 32 px high and wide, and the type follows the user's default font size (rem, not px).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import axe from "axe-core";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; summary: string }[];
}

/** axe's violations on the page as it is now (page scripts as strings: this file compiles without the DOM's types). */
async function axeViolations(page: Page): Promise<Violation[]> {
  // Run in the page through the DevTools protocol: the page's CSP (no inline or eval'd scripts) does not apply.
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(axe.source);
  const { violations, passed } = await page.evaluate<{ violations: Violation[]; passed: string[] }>(`
    axe.run(document, { resultTypes: ["violations"] }).then((r) => ({
      passed: r.passes.map((p) => p.id),
      violations: r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n) => ({ target: n.target.map(String), summary: (n.failureSummary || "").replace(/\\s+/g, " ") })),
      })),
    }))
  `);
  // axe really looked: the contrast of the page's text was measured and passed.
  assert.ok(passed.includes("color-contrast"), `axe's passed rules: ${passed.join(", ")}`);
  return violations;
}

/** Visible buttons (and button-like links) smaller than 32×32 px: their text or label and size. */
async function smallTargets(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`
    [...document.querySelectorAll("button, [role=button], .nav a, summary")]
      .filter((el) => el.offsetParent !== null && !el.closest(".sr-only"))
      .map((el) => [el, el.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && (Math.round(r.height) < 32 || Math.round(r.width) < 32))
      .map(([el, r]) => (el.getAttribute("aria-label") || el.textContent.trim()).slice(0, 40) + " " + Math.round(r.width) + "×" + Math.round(r.height))
  `);
}

const pages = [
  ["chat", "Chat"],
  ["models", "Models"],
  ["checkpoints", "Checkpoints"],
  ["training", "Training"],
  ["preferences", "Preferences"],
  ["tools", "Tools"],
  ["settings", "Settings"],
] as const;

const sizes = [
  [1280, 800],
  [800, 700],
] as const;

describe("accessibility of every page (axe-core, issue 32)", { skip: browserMissing() ?? false, timeout: 1_800_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  const token = "a11y-token-0123456789abcdef";

  before(async () => {
    ensureRendererBuilt();
    const model = await tinyModel({ arch: "qwen2" });
    core = await startCore({ model, port: 0, dataDir: tempDir("clawrl-a11y-"), token });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  /** A signed-in page at this size and theme (the app follows the system's theme until one is picked). */
  async function openApp(width: number, height: number, theme: "light" | "dark"): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height }, colorScheme: theme });
    const page = await context.newPage();
    // A tiny random model may ramble to the end of its context: cap its answer (as ui.test.ts does).
    await page.route("**/v1/chat/completions", (r) =>
      r.continue({ postData: JSON.stringify({ ...(r.request().postDataJSON() as object), max_tokens: 24, seed: 7 }) }),
    );
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    return page;
  }

  /** The chat with an answer in it: asks once, then opens that chat from the list. */
  let asked = false;
  async function chatWithAnswer(page: Page, width: number): Promise<void> {
    if (!asked) {
      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("Hello there, what can you do?");
      await box.press("Enter");
      await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 900_000 });
      asked = true;
      return;
    }
    if (width < 1000) await page.getByRole("button", { name: "Chats" }).click();
    await page.locator(".session-open").first().click();
  }

  for (const [width, height] of sizes) {
    for (const theme of ["light", "dark"] as const) {
      test(`${width}×${height}, ${theme}: no serious or critical axe violation on any page`, async (t) => {
        const page = await openApp(width, height, theme);
        const problems: string[] = [];
        const small: string[] = [];
        const minor: string[] = [];
        try {
          for (const [id, name] of pages) {
            await page.goto(`${core.url}/#/${id}`);
            await page.getByRole("heading", { level: 1, name }).waitFor();
            if (id === "chat") {
              await chatWithAnswer(page, width);
              await page.locator(".msg.assistant .msg-tools").last().waitFor();
              // The hint box open, as a user writing one sees it: its placeholder is whole (issue 32: clipped at 800 px).
              await page.getByRole("button", { name: "Add hint" }).last().click();
              const room = await page.evaluate<{ text: number; box: number }>(`(() => {
                const i = document.querySelector(".hint-form input"), cs = getComputedStyle(i);
                const c = document.createElement("canvas").getContext("2d");
                c.font = cs.font;
                return { text: c.measureText(i.placeholder).width, box: i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) };
              })()`);
              assert.ok(room.text <= room.box, `the hint box's placeholder needs ${room.text} px, the box has ${room.box}`);
            }
            // What the page loads (lists, settings, the machine's facts) arrives after its heading.
            await page.waitForTimeout(800);
            for (const v of await axeViolations(page)) {
              if (v.impact !== "serious" && v.impact !== "critical") {
                minor.push(`${name}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
                continue;
              }
              problems.push(`${name}: ${v.id} (${v.impact}) ${v.help}\n${v.nodes.map((n) => `    ${n.target.join(" ")}: ${n.summary}`).join("\n")}`);
            }
            for (const s of await smallTargets(page)) small.push(`${name}: ${s}`);
            await screenshot(page, `a11y-${id}-${width}-${theme}`);
          }
        } finally {
          await page.context().close();
        }
        if (minor.length) t.diagnostic(`minor and moderate (not failing):\n${minor.join("\n")}`);
        if (small.length) t.diagnostic(`targets under 32 px:\n${small.join("\n")}`);
        assert.deepEqual(problems, [], `axe found serious or critical violations:\n${problems.join("\n")}`);
        assert.deepEqual(small, [], "every visible button is at least 32×32 px");
      });
    }
  }

  test("the first-run guide (no model yet): no serious or critical axe violation, light and dark, 1280 and 800 px", async () => {
    const bare = await startCore({ port: 0, dataDir: tempDir("clawrl-a11y-first-"), token, training: false });
    try {
      const problems: string[] = [];
      for (const [width, height] of sizes) {
        for (const theme of ["light", "dark"] as const) {
          const context = await browser.newContext({ viewport: { width, height }, colorScheme: theme });
          const page = await context.newPage();
          try {
            await page.goto(signInUrl(bare.url, token));
            await page.getByRole("heading", { name: "Welcome to ClawRL" }).waitFor();
            await page.getByRole("heading", { level: 1, name: "Chat" }).waitFor({ state: "attached" });
            await page.waitForTimeout(800);
            for (const v of await axeViolations(page)) {
              if (v.impact === "serious" || v.impact === "critical")
                problems.push(`${width} ${theme}: ${v.id} ${v.help}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
            }
            assert.deepEqual(await smallTargets(page), [], `first run at ${width} px, ${theme}: every visible button is at least 32×32 px`);
            await screenshot(page, `a11y-first-run-${width}-${theme}`);
          } finally {
            await context.close();
          }
        }
      }
      assert.deepEqual(problems, [], `axe found serious or critical violations:\n${problems.join("\n")}`);
    } finally {
      await bare.close();
    }
  });

  test("type follows the user's default font size (rem, not px)", async () => {
    const page = await openApp(1280, 800, "light");
    try {
      await page.goto(`${core.url}/#/settings`);
      await page.getByRole("heading", { level: 1, name: "Settings" }).waitFor();
      // The form comes after the heading (GET /api/settings): each element measured must be there.
      for (const s of ["body", "h1", ".nav a", ".settings label", "button"]) await page.locator(s).first().waitFor();
      const sizesAt = async (root: number) => {
        await page.evaluate(`document.documentElement.style.fontSize = "${root}px"`);
        return page.evaluate<number[]>(
          `["body", "h1", ".nav a", ".settings label", "button"].map((s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize))`,
        );
      };
      const at16 = await sizesAt(16);
      const at20 = await sizesAt(20);
      at16.forEach((px, i) => assert.ok(Math.abs(at20[i] / px - 1.25) < 0.02, `element ${i}: ${px} px at 16, ${at20[i]} px at 20`));
    } finally {
      await page.context().close();
    }
  });
});
