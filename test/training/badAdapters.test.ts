/**
 * Adapters the app must refuse and stay on what it had (issue 26 F6, F7): one with NaN weights
 * at import and at activation (its checksum matching: the file was written that way), with a
 * 422 that names the tensor, never a 500, and the served adapter unchanged.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { readGguf } from "../../models/gguf/reader.js";
import { assertFiniteWeights, firstNonFiniteTensor, NonFiniteWeightsError } from "../../models/gguf/finiteWeights.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { writeLoraAdapter } from "../inference/loraFixture.js";
import { api, chat, startLearningCore, FLUENCY_NOT_TESTED } from "./helpers.js";

/** Overwrites one f32 value of a tensor of a GGUF in place with `value`. */
function poison(file: string, tensorIndex: number, value: number): string {
  const g = readGguf(file);
  const t = g.tensors[tensorIndex];
  const fd = fs.openSync(file, "r+");
  try {
    const b = Buffer.alloc(4);
    b.writeFloatLE(value);
    fs.writeSync(fd, b, 0, 4, g.tensorDataOffset + t.offset + 4 * 7);
  } finally {
    fs.closeSync(fd);
  }
  return t.name;
}

describe("adapters with non-finite weights", () => {
  let core: RunningCore;
  let model: string;
  const work = tempDir("clawrl-badadapters-");
  before(async () => {
    core = await startLearningCore({ gate: FLUENCY_NOT_TESTED });
    model = await tinyModel({ arch: "qwen2" });
    for (const q of ["what is a cat", "name a colour"]) await chat(core, q);
  });
  after(async () => {
    await core?.close();
  });

  it("finds the first tensor holding NaN or Inf, and none in a sound adapter", () => {
    const good = path.join(work, "good.gguf");
    writeLoraAdapter(good, model, { rank: 4, alpha: 8, magnitude: 0.05, seed: 5 });
    assert.equal(firstNonFiniteTensor(good), null);
    assert.doesNotThrow(() => assertFiniteWeights(good));
    for (const [i, v] of [
      [3, NaN],
      [5, Infinity],
      [0, -Infinity],
    ] as const) {
      const bad = path.join(work, `bad-${i}.gguf`);
      fs.copyFileSync(good, bad);
      const name = poison(bad, i, v);
      assert.equal(firstNonFiniteTensor(bad), name);
      assert.throws(
        () => assertFiniteWeights(bad),
        (e: unknown) => e instanceof NonFiniteWeightsError && e.tensor === name && e.statusCode === 422,
      );
    }
  });

  it("refuses a NaN adapter at import with a 422 naming the tensor; nothing is written, nothing served changes", async () => {
    const file = path.join(work, "nan.gguf");
    writeLoraAdapter(file, model, { rank: 4, alpha: 8, magnitude: 0.05, seed: 7 });
    const name = poison(file, 2, NaN);
    const before = (await api(core, "GET", "/api/checkpoints")).json;
    const r = await api(core, "POST", "/api/checkpoints/import", { path: file });
    assert.equal(r.status, 422, JSON.stringify(r.json));
    assert.ok(r.json.error.message.includes(name) && /NaN/.test(r.json.error.message), r.json.error.message);
    assert.deepEqual((await api(core, "GET", "/api/checkpoints")).json, before);
    assert.deepEqual(
      fs.readdirSync(core.paths.checkpoints).filter((n) => n.startsWith(".staging-")),
      [],
    );
    assert.equal((await chat(core, "still there?")).adapter, "base");
  });

  it("refuses to serve a checkpoint whose adapter turned NaN with a matching checksum: 422, not 500, the served one stays", async () => {
    const file = path.join(work, "good-import.gguf");
    writeLoraAdapter(file, model, { rank: 4, alpha: 8, magnitude: 0.05, seed: 9 });
    const imp = await api(core, "POST", "/api/checkpoints/import", { path: file });
    assert.equal(imp.status, 200, JSON.stringify(imp.json));
    const n = imp.json.checkpoint.n as number;
    assert.equal(imp.json.checkpoint.active, true, JSON.stringify(imp.json.checkpoint.gate));
    assert.equal((await api(core, "POST", "/api/checkpoints/base/activate")).status, 200);

    const adapter = path.join(core.paths.checkpoints, String(n), "adapter.gguf");
    poison(adapter, 1, NaN);
    const sha = createHash("sha256").update(fs.readFileSync(adapter)).digest("hex");
    core.store.updateState((d) => {
      const c = d.checkpoints.find((x) => x.id === n)! as unknown as { sha256: { adapter: string; optimizer: string } };
      c.sha256 = { ...c.sha256, adapter: sha };
    });
    const r = await api(core, "POST", `/api/checkpoints/${n}/activate`);
    assert.equal(r.status, 422, JSON.stringify(r.json));
    assert.match(r.json.error.message, /NaN or infinite weights/);
    assert.equal(core.store.state.training.activeCheckpoint, null);
    assert.equal((await chat(core, "and now?")).adapter, "base");
  });
});
