// Attach files in the chat, end to end (issue 30): a real core with a tiny model, driven in
// headless Chromium. A text file (the paperclip) and a PDF (pasted) become chips above the
// composer and go with the message as delimited blocks: the recorded turn's prompt holds their
// text, its view lists them, and the sent message shows chips, never the raw text. A long file is
// cut to the model's context with a notice; an image dropped on the chat is refused with the
// reason. Screenshots at 1280 and 800 px wide.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import axe from "axe-core";
import type { Browser, Page } from "playwright-core";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { browserMissing, ensureRendererBuilt, launchBrowser, screenshot, signInUrl } from "../helpers/browser.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { minimalPdf, PNG_BYTES } from "../attachments/pdf.js";

/** axe's serious and critical violations on the page as it is now, and visible buttons under 32 px (as test/e2e/accessibility.test.ts checks every page). */
async function accessibilityProblems(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(axe.source);
  const found = await page.evaluate<string[]>(`
    axe.run(document, { resultTypes: ["violations"] }).then((r) =>
      r.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => v.id + ": " + v.nodes.map((n) => n.target.join(" ")).join(", ")),
    )
  `);
  const small = await page.evaluate<string[]>(`
    [...document.querySelectorAll("button")]
      .filter((el) => el.offsetParent !== null)
      .map((el) => [el, el.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && (Math.round(r.height) < 32 || Math.round(r.width) < 32))
      .map(([el, r]) => (el.getAttribute("aria-label") || el.textContent.trim()) + " " + Math.round(r.width) + "x" + Math.round(r.height))
  `);
  return [...found, ...small.map((b) => `small button: ${b}`)];
}

const NOTE = "The secret word is PINEAPPLE.\nRemember it.";
const PDF_LINE = "Quarterly plan: ship the attach button";

describe("attach files in headless Chromium", { skip: browserMissing() ?? false, timeout: 1_800_000 }, () => {
  let core: RunningCore;
  let browser: Browser;
  let page: Page;
  const dataDir = tempDir("clawrl-attach-e2e-");
  const token = "attach-e2e-token-0123456789";
  const pageProblems: string[] = [];

  const api = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
    const r = await fetch(core.url + path, { ...init, headers: { Authorization: `Bearer ${token}`, ...(init.headers ?? {}) } });
    return (await r.json()) as T;
  };

  before(async () => {
    ensureRendererBuilt();
    const model = await tinyModel({ arch: "qwen2" });
    core = await startCore({ model, port: 0, dataDir, token, training: false });
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    // As ui.test.ts: a short, seeded answer from the real core.
    await page.route("**/v1/chat/completions", (r) =>
      r.continue({ postData: JSON.stringify({ ...(r.request().postDataJSON() as object), max_tokens: 24, seed: 7 }) }),
    );
    page.on("pageerror", (e) => pageProblems.push(`page error: ${e.message}`));
    await page.goto(signInUrl(core.url, token));
    await page.getByRole("button", { name: "New chat" }).waitFor();
    await page.goto(`${core.url}/#/chat`);
    await page.getByRole("textbox", { name: "Message" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await core?.close();
  });

  /** A chip above the composer, by file name. */
  const chip = (name: string) => page.locator(".attachments-pending .attachment-chip").filter({ hasText: name });

  test("a text file (button) and a PDF (pasted) go with the message; the recorded prompt holds their text", async () => {
    await page.getByTestId("attach-input").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from(NOTE) });
    await chip("notes.txt").filter({ hasText: /\d+ B/ }).waitFor();
    // Pasted into the message box, as a file copied in a file manager.
    const pdf = minimalPdf([[PDF_LINE, "Second line of the plan."]]);
    await page.getByRole("textbox", { name: "Message" }).focus();
    await page.evaluate(
      `(() => {
        const dt = new DataTransfer();
        const bytes = Uint8Array.from(atob(${JSON.stringify(pdf.toString("base64"))}), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], "plan.pdf", { type: "application/pdf" }));
        document.querySelector('textarea[aria-label="Message"]').dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
      })()`,
    );
    await chip("plan.pdf").filter({ hasText: /\d+ B/ }).waitFor();
    assert.equal(await page.getByRole("button", { name: "Remove notes.txt" }).count(), 1);

    await page.getByRole("textbox", { name: "Message" }).fill("What do these files say?");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 900_000 });
    // Sent: the chips above the composer are gone; the message shows what was typed and a chip per file.
    assert.equal(await page.locator(".attachments-pending").count(), 0);
    const bubble = page.locator(".msg.user .bubble").last();
    await bubble.locator(".attachment-chip").filter({ hasText: "plan.pdf" }).waitFor();
    const shown = (await bubble.textContent()) ?? "";
    assert.match(shown, /What do these files say\?/);
    assert.match(shown, /notes\.txt/);
    assert.doesNotMatch(shown, /PINEAPPLE|<attachment/);

    const { sessions } = await api<{ sessions: { id: string }[] }>("/api/sessions");
    const session = await api<{ turns: { messages: { role: string; content: string }[]; attachments?: { name: string; mediaType: string }[] }[] }>(
      `/api/sessions/${encodeURIComponent(sessions[0].id)}`,
    );
    const turn = session.turns.at(-1)!;
    const prompt = turn.messages.filter((m) => m.role === "user").at(-1)!.content;
    assert.match(
      prompt,
      /^What do these files say\?\n\n<attachment id="att_[0-9a-f]{16}" name="notes.txt">\nThe secret word is PINEAPPLE\.\nRemember it\.\n<\/attachment>/,
    );
    assert.match(prompt, new RegExp(`<attachment id="att_[0-9a-f]{16}" name="plan.pdf">\\n${PDF_LINE}\\nSecond line of the plan\\.\\n</attachment>$`));
    assert.deepEqual(
      turn.attachments?.map((a) => [a.name, a.mediaType]),
      [
        ["notes.txt", "text/plain"],
        ["plan.pdf", "application/pdf"],
      ],
    );
    // The reopened chat shows the same chips, with their sizes from the store.
    await page.reload();
    await page.locator(".session").first().click();
    await page.locator(".msg.user .attachment-chip").filter({ hasText: "notes.txt" }).filter({ hasText: /\d+ B/ }).waitFor();
    await screenshot(page, "attachments-sent-1280");
    assert.deepEqual(await accessibilityProblems(page), []);
    await page.setViewportSize({ width: 800, height: 800 });
    await screenshot(page, "attachments-sent-800");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("a long file is cut to the context with a notice; an image dropped on the chat is refused with the reason", async () => {
    const long = Array.from({ length: 8000 }, (_, i) => `Line ${i}: a long log file that will not fit the model's context whole.`).join("\n");
    const uploaded = page.waitForResponse((r) => r.url().endsWith("/api/attachments") && r.request().method() === "POST");
    await page.getByTestId("attach-input").setInputFiles({ name: "huge.log", mimeType: "text/plain", buffer: Buffer.from(long) });
    const hugeId = ((await (await uploaded).json()) as { attachment: { id: string } }).attachment.id;
    const cut = chip("huge.log").locator(".attachment-note");
    await cut.waitFor();
    const notice = (await cut.textContent()) ?? "";
    assert.match(notice, new RegExp(`^Cut to [\\d,]+ of ${long.length.toLocaleString("en-US")} characters to fit the model's context$`));

    // Dropped on the chat, as from a file manager.
    await page.evaluate(
      `(() => {
        const dt = new DataTransfer();
        const bytes = Uint8Array.from(atob(${JSON.stringify(PNG_BYTES.toString("base64"))}), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], "photo.png", { type: "image/png" }));
        const target = document.querySelector(".messages");
        for (const type of ["dragenter", "dragover", "drop"]) target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      })()`,
    );
    const refused = chip("photo.png").getByRole("alert");
    await refused.waitFor();
    assert.match((await refused.textContent()) ?? "", /Images need a vision-capable model; this app's runtime reads text only for now/);
    // Send takes the readable file only; nothing was stored for the image.
    assert.equal(await page.getByRole("button", { name: "Send" }).isEnabled(), true);
    await screenshot(page, "attachments-pending-1280");
    assert.deepEqual(await accessibilityProblems(page), []);
    await page.setViewportSize({ width: 800, height: 800 });
    await screenshot(page, "attachments-pending-800");
    await page.setViewportSize({ width: 1280, height: 800 });

    // Removed before sending: the chip and the stored copy go.
    const deleted = page.waitForResponse((r) => r.url().endsWith(`/api/attachments/${hugeId}`) && r.request().method() === "DELETE");
    await page.getByRole("button", { name: "Remove huge.log" }).click();
    assert.equal((await deleted).status(), 204);
    await page.getByRole("button", { name: "Remove photo.png" }).click();
    assert.equal(await page.locator(".attachments-pending").count(), 0);
    assert.deepEqual(pageProblems, []);
  });
});
