// The window's security decisions, checked directly (Electron cannot run here).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import {
  contentSecurityPolicy,
  decideWindowOpen,
  externalUrl,
  isAllowedNavigation,
  isAllowedPermission,
  parseCsp,
  windowOptions,
  withCsp,
} from "../../electron/main/security.js";
import { repoRoot } from "../helpers/cli.js";

const app = "http://127.0.0.1:8765";

describe("window options", () => {
  it("isolate the page: context isolation, sandbox, no Node, web security, no webview", () => {
    const o = windowOptions({ preload: "/app/out/preload/index.cjs" });
    const w = o.webPreferences!;
    assert.equal(w.contextIsolation, true);
    assert.equal(w.sandbox, true);
    assert.equal(w.nodeIntegration, false);
    assert.equal(w.nodeIntegrationInWorker, false);
    assert.equal(w.nodeIntegrationInSubFrames, false);
    assert.equal(w.webSecurity, true);
    assert.equal(w.allowRunningInsecureContent, false);
    assert.equal(w.webviewTag, false);
    assert.equal(w.preload, "/app/out/preload/index.cjs");
    assert.equal(o.show, false);
  });
  it("use saved bounds when given, the default size otherwise", () => {
    const placed = windowOptions({ preload: "p", bounds: { x: 10, y: 20, width: 900, height: 700 } });
    assert.deepEqual([placed.x, placed.y, placed.width, placed.height], [10, 20, 900, 700]);
    const centred = windowOptions({ preload: "p", bounds: { width: 900, height: 700 } });
    assert.equal("x" in centred, false);
    const fresh = windowOptions({ preload: "p" });
    assert.deepEqual([fresh.width, fresh.height], [1200, 800]);
  });
});

describe("content security policy", () => {
  const csp = parseCsp(contentSecurityPolicy());
  it("allows scripts and connections only from the app's own origin", () => {
    assert.deepEqual(csp.get("default-src"), ["'self'"]);
    assert.deepEqual(csp.get("script-src"), ["'self'"]);
    assert.deepEqual(csp.get("connect-src"), ["'self'"]);
    assert.deepEqual(csp.get("object-src"), ["'none'"]);
    assert.deepEqual(csp.get("frame-ancestors"), ["'none'"]);
    assert.deepEqual(csp.get("base-uri"), ["'none'"]);
  });
  it("has no eval, no inline script, no remote hosts anywhere", () => {
    for (const [name, sources] of csp) {
      for (const s of sources) {
        assert.doesNotMatch(s, /unsafe-eval|^https?:|^\*$|^ws/, `${name} allows ${s}`);
        if (name.startsWith("script")) assert.notEqual(s, "'unsafe-inline'");
      }
    }
  });
  it("replaces any CSP header the server sent, whatever its case, and keeps the other headers", () => {
    const h = withCsp({ "content-security-policy": ["default-src *"], "Content-Type": ["text/html"] });
    assert.deepEqual(Object.keys(h).sort(), ["Content-Security-Policy", "Content-Type"]);
    assert.deepEqual(h["Content-Security-Policy"], [contentSecurityPolicy()]);
    assert.deepEqual(h["Content-Type"], ["text/html"]);
    assert.deepEqual(withCsp(undefined), { "Content-Security-Policy": [contentSecurityPolicy()] });
  });
  it("the renderer's meta tag is as strict for scripts and allows no eval or remote script", () => {
    const html = fs.readFileSync(path.join(repoRoot, "renderer", "index.html"), "utf8");
    const meta = /<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]+)"/i.exec(html);
    assert.ok(meta, "renderer/index.html has a CSP meta tag");
    const m = parseCsp(meta[1]);
    const scripts = m.get("script-src") ?? m.get("default-src");
    assert.deepEqual(scripts, ["'self'"]);
    assert.deepEqual(m.get("object-src"), ["'none'"]);
    for (const sources of m.values()) assert.equal(sources.includes("'unsafe-eval'"), false);
  });
});

describe("navigation guard", () => {
  it("allows the app's own origin, any path", () => {
    assert.equal(isAllowedNavigation(`${app}/`, app), true);
    assert.equal(isAllowedNavigation(`${app}/#/training?x=1`, app), true);
  });
  it("blocks other ports, hosts, schemes and junk", () => {
    for (const url of [
      "http://127.0.0.1:8766/",
      "http://localhost:8765/",
      "https://127.0.0.1:8765/",
      "https://example.com/",
      "file:///etc/passwd",
      "javascript:alert(1)",
      "data:text/html,<script>1</script>",
      "about:blank",
      "not a url",
      "",
    ]) {
      assert.equal(isAllowedNavigation(url, app), false, url);
    }
  });
  it("blocks everything when the app origin is unknown", () => {
    assert.equal(isAllowedNavigation(`${app}/`, ""), false);
  });
});

describe("window.open and external links", () => {
  it("never opens a window; outside http(s) links go to the system browser", () => {
    assert.deepEqual(decideWindowOpen("https://github.com/x", app), { action: "deny", openExternal: "https://github.com/x" });
    assert.deepEqual(decideWindowOpen("http://example.org/a?b=c", app), { action: "deny", openExternal: "http://example.org/a?b=c" });
  });
  it("drops links into the app and non-http(s) schemes", () => {
    assert.deepEqual(decideWindowOpen(`${app}/other`, app), { action: "deny", openExternal: null });
    for (const url of ["file:///tmp/x", "javascript:void 0", "smb://host/share", "vscode://open", "mailto:a@b.c", "nonsense"]) {
      assert.deepEqual(decideWindowOpen(url, app), { action: "deny", openExternal: null }, url);
    }
  });
  it("does not open URLs with credentials in them", () => {
    assert.equal(externalUrl("https://user:pw@example.com/"), null);
  });
});

describe("permissions", () => {
  it("grant only clipboard writes, only to the app's origin", () => {
    assert.equal(isAllowedPermission("clipboard-sanitized-write", `${app}/`, app), true);
    assert.equal(isAllowedPermission("clipboard-sanitized-write", "https://evil.example/", app), false);
    for (const p of ["media", "geolocation", "notifications", "openExternal", "clipboard-read", "fullscreen"]) {
      assert.equal(isAllowedPermission(p, `${app}/`, app), false, p);
    }
  });
});
