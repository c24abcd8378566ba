// What crosses into the page: window.clawrl = {apiBase, token, openModelFile()}, nothing else.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createBridge, parseBridgeConfig } from "../../electron/preload/bridge.js";

const config = { apiBase: "http://127.0.0.1:8765", token: "abcdefgh12345678" };

describe("preload bridge", () => {
  it("exposes exactly apiBase, token and openModelFile, frozen", () => {
    const b = createBridge({ ...config, secret: "no" }, async () => null);
    assert.deepEqual(Object.keys(b).sort(), ["apiBase", "openModelFile", "token"]);
    assert.equal(b.apiBase, config.apiBase);
    assert.equal(b.token, config.token);
    assert.equal(Object.isFrozen(b), true);
    assert.throws(() => {
      (b as { token: string }).token = "x";
    }, TypeError);
  });
  it("openModelFile passes through a path and turns anything else into null", async () => {
    let answer: unknown = "/home/me/model.gguf";
    const b = createBridge(config, async () => answer);
    assert.equal(await b.openModelFile(), "/home/me/model.gguf");
    for (answer of [undefined, null, "", 42, { path: "/x" }]) assert.equal(await b.openModelFile(), null);
  });
  it("rejects a missing or malformed config with a clear message", () => {
    assert.throws(() => parseBridgeConfig(null), /main sent no core config/);
    assert.throws(() => parseBridgeConfig({ token: config.token }), /apiBase must be an http origin/);
    assert.throws(() => parseBridgeConfig({ ...config, apiBase: "http://127.0.0.1:8765/v1" }), /apiBase must be an http origin/);
    assert.throws(() => parseBridgeConfig({ ...config, apiBase: "file:///x" }), /apiBase must be an http origin/);
    assert.throws(() => parseBridgeConfig({ ...config, token: "" }), /token missing/);
  });
});
