// Remembered window bounds: validation, atomic save, and placement on the displays present now.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadWindowState, parseWindowState, placeWindow, saveWindowState, type Rect } from "../../electron/main/windowState.js";
import { tempDir } from "../helpers/cli.js";

const laptop: Rect = { x: 0, y: 0, width: 1440, height: 860 };
const rightMonitor: Rect = { x: 1440, y: 0, width: 2560, height: 1400 };

describe("window state file", () => {
  it("round-trips through an atomic write and leaves no temp file", () => {
    const file = path.join(tempDir(), "sub", "window-state.json");
    const state = { bounds: { x: 40, y: 50, width: 1000, height: 700 }, maximized: true };
    saveWindowState(file, state);
    assert.deepEqual(loadWindowState(file), state);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ["window-state.json"]);
  });
  it("a missing, truncated or foreign file reads as null", () => {
    const dir = tempDir();
    assert.equal(loadWindowState(path.join(dir, "none.json")), null);
    const bad = path.join(dir, "bad.json");
    for (const text of [
      '{"bounds": {"x": 1',
      "[]",
      '{"bounds":{"x":0,"y":0,"width":-5,"height":10},"maximized":false}',
      '{"bounds":{"x":"0","y":0,"width":5,"height":10},"maximized":false}',
    ]) {
      fs.writeFileSync(bad, text);
      assert.equal(loadWindowState(bad), null, text);
    }
  });
  it("refuses to save an invalid state", () => {
    const file = path.join(tempDir(), "w.json");
    assert.throws(() => saveWindowState(file, { bounds: { x: 0, y: 0, width: Number.NaN, height: 10 }, maximized: false }), /invalid window state/);
    assert.equal(fs.existsSync(file), false);
  });
  it("parseWindowState drops unknown extra keys", () => {
    assert.deepEqual(parseWindowState({ bounds: { x: 1, y: 2, width: 800, height: 600, z: 9 }, maximized: false, extra: 1 }), {
      bounds: { x: 1, y: 2, width: 800, height: 600 },
      maximized: false,
    });
  });
});

describe("placeWindow", () => {
  it("no saved state: default size, fitted to the primary display, centred", () => {
    assert.deepEqual(placeWindow(null, [laptop]), { width: 1200, height: 800, maximized: false });
    assert.deepEqual(placeWindow(null, [{ x: 0, y: 0, width: 1024, height: 600 }]), { width: 1024, height: 600, maximized: false });
  });
  it("keeps a position that is on a display, including a secondary one", () => {
    const saved = { bounds: { x: 2000, y: 100, width: 1200, height: 900 }, maximized: false };
    assert.deepEqual(placeWindow(saved, [laptop, rightMonitor]), { x: 2000, y: 100, width: 1200, height: 900, maximized: false });
  });
  it("drops the position when its display is gone (window would be off-screen)", () => {
    const saved = { bounds: { x: 2000, y: 100, width: 1200, height: 900 }, maximized: true };
    assert.deepEqual(placeWindow(saved, [laptop]), { width: 1200, height: 860, maximized: true });
  });
  it("drops the position when only a sliver, or no title bar, would be visible", () => {
    const sliver = { bounds: { x: 1400, y: 100, width: 1000, height: 700 }, maximized: false };
    assert.equal("x" in placeWindow(sliver, [laptop]), false);
    const titleAbove = { bounds: { x: 100, y: -500, width: 1000, height: 700 }, maximized: false };
    assert.equal("x" in placeWindow(titleAbove, [laptop]), false);
  });
  it("clamps size to the minimum and to the largest display", () => {
    const tiny = placeWindow({ bounds: { x: 0, y: 0, width: 100, height: 50 }, maximized: false }, [laptop]);
    assert.deepEqual([tiny.width, tiny.height], [720, 480]);
    const huge = placeWindow({ bounds: { x: 0, y: 0, width: 9000, height: 9000 }, maximized: false }, [laptop, rightMonitor]);
    assert.deepEqual([huge.width, huge.height], [2560, 1400]);
  });
});
