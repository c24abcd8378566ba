// The desktop app's core (electron/core/entry.ts) serves the model chosen on the Models page,
// as `clawrl serve` does; a chosen model that is gone or does not load leaves it without one.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { dataPaths } from "../../electron/core/config/paths.js";
import { startWithChosenModel } from "../../electron/core/entry.js";
import { ModelRegistry } from "../../models/registry.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";

/** A data dir whose Models page chose `file` (imported, then made active). */
function chosen(file: string): string {
  const dataDir = tempDir("clawrl-entry-model-");
  const registry = new ModelRegistry(dataPaths(dataDir).models);
  registry.setActive(registry.importFile(file).id);
  return dataDir;
}

const opts = (dataDir: string) => ({ dataDir, port: 0, uiDir: "", training: false as const, engine: { threads: 1, sequences: 1 } });

describe("the app's core serves the chosen model", { timeout: 120_000 }, () => {
  it("loads the model chosen in the data dir when none is given", async () => {
    const core = await startWithChosenModel(opts(chosen(storiesModelPath())));
    try {
      assert.equal(core.engine?.info().modelPath, storiesModelPath());
    } finally {
      await core.close();
    }
  });

  it("starts without a model when the chosen file is gone or does not load", async () => {
    for (const damage of ["gone", "cut short"] as const) {
      const file = path.join(tempDir(), "chosen.gguf");
      fs.copyFileSync(storiesModelPath(), file);
      const dataDir = chosen(file);
      if (damage === "gone") fs.rmSync(file);
      else fs.writeFileSync(file, fs.readFileSync(storiesModelPath()).subarray(0, 4096));
      const core = await startWithChosenModel(opts(dataDir));
      try {
        assert.equal(core.engine, null, damage);
        const r = await fetch(`${core.url}/api/status`, { headers: { authorization: `Bearer ${core.token}` } });
        assert.equal(((await r.json()) as { model: unknown }).model, null);
      } finally {
        await core.close();
      }
    }
  });
});
