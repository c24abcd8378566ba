// The application menu: the usual roles on every platform, the macOS app menu only on macOS.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { MenuItemConstructorOptions } from "electron";
import { appMenuTemplate } from "../../electron/main/menu.js";

function roles(items: MenuItemConstructorOptions[]): string[] {
  const out: string[] = [];
  for (const i of items) {
    if (i.role) out.push(i.role);
    if (Array.isArray(i.submenu)) out.push(...roles(i.submenu));
  }
  return out;
}

describe("application menu", () => {
  it("has edit, window, view and quit roles on Linux and Windows, and no macOS app menu", () => {
    for (const platform of ["linux", "win32"] as const) {
      const t = appMenuTemplate(platform, "ClawRL");
      const r = roles(t);
      for (const role of ["editMenu", "windowMenu", "help", "reload", "toggleDevTools", "togglefullscreen", "quit"])
        assert.ok(r.includes(role), `${platform}: ${role}`);
      assert.equal(r.includes("services"), false);
      assert.equal(t[0].label, "File");
    }
  });
  it("starts with the app menu on macOS (about, hide, quit) and closes windows from File", () => {
    const t = appMenuTemplate("darwin", "ClawRL");
    assert.equal(t[0].label, "ClawRL");
    const appRoles = roles([t[0]]);
    for (const role of ["about", "services", "hide", "hideOthers", "unhide", "quit"]) assert.ok(appRoles.includes(role), role);
    assert.deepEqual(roles([t[1]]), ["close"]);
  });
  it("adds Import Model… with Ctrl/Cmd+O when given the action, and calls it", () => {
    let opened = 0;
    const file = appMenuTemplate("linux", "ClawRL", { openModelFile: () => opened++ })[0];
    const item = (file.submenu as MenuItemConstructorOptions[])[0];
    assert.equal(item.label, "Import Model…");
    assert.equal(item.accelerator, "CmdOrCtrl+O");
    (item.click as () => void)();
    assert.equal(opened, 1);
  });
});
