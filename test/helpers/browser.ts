import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { repoRoot } from "./cli.js";

export const chromiumPath = process.env.CLAWRL_CHROMIUM ?? "/usr/bin/chromium";
export const rendererOut = path.join(repoRoot, "out", "renderer");
export const artifactsDir = path.join(repoRoot, "test-artifacts");

/** Why the browser tests cannot run here, or null when they can. */
export function browserMissing(): string | null {
  return fs.existsSync(chromiumPath) ? null : `no Chromium at ${chromiumPath} (apt-get install chromium, or set CLAWRL_CHROMIUM)`;
}

/** Headless Chromium as CI runs it: no sandbox (containers), no GPU, no background network. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

function newestMtime(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = 0;
  for (const e of fs.readdirSync(p)) m = Math.max(m, newestMtime(path.join(p, e)));
  return m;
}

/**
 * Builds the renderer into out/renderer (what the core serves) when it is missing or older
 * than its sources. Built to a temp folder and swapped in, so a failed build never leaves
 * the core serving half a UI.
 */
export function ensureRendererBuilt(): void {
  const index = path.join(rendererOut, "index.html");
  const sources = Math.max(newestMtime(path.join(repoRoot, "renderer")), newestMtime(path.join(repoRoot, "package-lock.json")));
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= sources) return;
  const tmp = `${rendererOut}.tmp-${process.pid}`;
  const vite = path.join(repoRoot, "node_modules", "vite", "bin", "vite.js");
  const r = spawnSync(process.execPath, [vite, "build", "--config", "renderer/vite.config.ts", "--outDir", tmp, "--emptyOutDir", "--logLevel", "warn"], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`renderer build failed:\n${r.stdout}\n${r.stderr}`);
  }
  fs.rmSync(rendererOut, { recursive: true, force: true });
  fs.renameSync(tmp, rendererOut);
}

/** Saves a whole-page PNG to test-artifacts/<name>.png (git-ignored) for a person to look at. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, `${name}.png`);
  // The app scrolls inside .main (the window itself does not), so fullPage alone would cut a
  // long page at the window's height: make the window as tall as the page for the shot.
  const inner = await page.evaluate<number>("(() => { const m = document.querySelector('.main'); return m ? m.scrollHeight : 0; })()");
  const vp = page.viewportSize();
  if (vp && inner > vp.height) {
    await page.setViewportSize({ width: vp.width, height: inner });
    try {
      await page.screenshot({ path: file, fullPage: true });
    } finally {
      await page.setViewportSize(vp);
    }
    return file;
  }
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The sign-in address `clawrl serve` prints: the UI with the token in the fragment. */
export function signInUrl(coreUrl: string, token: string): string {
  return `${coreUrl}/#token=${encodeURIComponent(token)}`;
}

/**
 * Screenshots of the page at 1280×800 and 800×700, light and dark (`setTheme` switches it the way
 * the test can), named `<prefix>-<width>-<theme>`; the page never scrolls sideways. Leaves it light
 * at 1280 × `restoreHeight`.
 */
export async function layoutShots(page: Page, prefix: string, setTheme: (theme: "light" | "dark") => Promise<void>, restoreHeight: number): Promise<void> {
  for (const [w, h] of [
    [1280, 800],
    [800, 700],
  ] as const) {
    for (const theme of ["light", "dark"] as const) {
      await page.setViewportSize({ width: w, height: h });
      await setTheme(theme);
      const [doc, vw] = await page.evaluate<[number, number]>("[document.documentElement.scrollWidth, window.innerWidth]");
      assert.ok(doc <= vw, `${prefix} at ${w} px: document ${doc} px wide in a ${vw} px window`);
      await screenshot(page, `${prefix}-${w}-${theme}`);
    }
  }
  await setTheme("light");
  await page.setViewportSize({ width: 1280, height: restoreHeight });
}
