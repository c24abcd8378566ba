// The core entry's configuration: flags over env, clear one-line errors.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { entryConfigFrom } from "../../electron/core/entry.js";

describe("core entry configuration", () => {
  it("defaults: any free port, 5 s drain, everything else left to the core", () => {
    assert.deepEqual(entryConfigFrom([], {}), {
      core: { dataDir: undefined, port: 0, host: undefined, model: undefined, uiDir: undefined },
      drainMs: 5000,
    });
  });
  it("reads env, and flags win over env; paths become absolute", () => {
    const env = { CLAWRL_HOME: "data", CLAWRL_CORE_PORT: "8765", CLAWRL_UI_DIR: "/ui", CLAWRL_MODEL: "/m.gguf", CLAWRL_CORE_DRAIN_MS: "100" };
    const c = entryConfigFrom(["--port", "9000", "--data-dir", "/d"], env);
    assert.deepEqual(c, { core: { dataDir: "/d", port: 9000, host: undefined, model: "/m.gguf", uiDir: "/ui" }, drainMs: 100 });
    assert.equal(entryConfigFrom([], env).core.dataDir, path.resolve("data"));
  });
  it("rejects bad numbers and unknown flags", () => {
    assert.throws(() => entryConfigFrom([], { CLAWRL_CORE_PORT: "70000" }), /port must be an integer from 0 to 65535, got "70000"/);
    assert.throws(() => entryConfigFrom(["--port=-1"], {}), /port must be an integer/);
    assert.throws(() => entryConfigFrom(["--drain-ms", "1.5"], {}), /drain-ms must be an integer/);
    assert.throws(() => entryConfigFrom(["--bogus"], {}), /Unknown option '--bogus'/);
  });
});
