/**
 * The round trip, on llama.cpp itself: an adapter the trainer trained (a few steps, so B
 * is far from zero) is exported as a PEFT directory (electron/core/adapters/exportAdapter.ts),
 * imported back as a staged candidate checkpoint (importAdapter.ts), and llama.cpp's log-probs
 * with the imported adapter equal those with the original within 1e-5, on the tiny llama (Q/K
 * rows permuted and back), qwen2 and qwen3 models and on stories260K (a real llama model). The
 * staged checkpoint is also one the trainer resumes from (adapter, optimizer state, metrics).
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { initBackend } from "../../trainer/backend.js";
import { disposeLora, writeLoraAdapter } from "../../trainer/lora/index.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { loadCheckpoint } from "../../trainer/train/checkpoint.js";
import { exportAdapter } from "../../electron/core/adapters/exportAdapter.js";
import { stageImport } from "../../electron/core/adapters/importAdapter.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { llamaCppLogProbs, llamaCppTokenize, maxLogProbDiff, ourLogProbs, trainedLora } from "../trainer/parity-reference.js";

const TOL = 1e-5;

for (const arch of ["llama", "qwen2", "qwen3", "stories260K"] as const) {
  test(`${arch}: trained adapter → PEFT → imported checkpoint: llama.cpp's log-probs equal the original's within 1e-5`, async () => {
    await initBackend();
    const base = arch === "stories260K" ? storiesModelPath() : await tinyModel({ arch });
    const model = await loadBaseModel(base);
    try {
      const tokens =
        arch === "stories260K"
          ? [1, 403, 407, 261, 378, 429, 267, 10, 55, 99, 300, 12, 70, 80, 90]
          : await llamaCppTokenize(base, "Once upon a time, a small cat sat by the warm fire and sang.");
      const lora = await trainedLora(model, tokens);
      const dir = tempDir();
      const original = path.join(dir, "adapter.gguf");
      await writeLoraAdapter(original, model, lora);
      disposeLora(lora);

      const peft = path.join(dir, "peft");
      const r = exportAdapter({ adapterPath: original, basePath: base, format: "peft", outDir: peft, label: "ckpt-1" });
      assert.ok(fs.existsSync(path.join(peft, "adapter_model.safetensors")) && fs.existsSync(path.join(peft, "adapter_config.json")));
      assert.equal(r.rank, 4);
      const staging = path.join(dir, ".staging-import");
      const summary = stageImport(peft, base, staging);
      assert.equal(summary.format, "peft");
      assert.equal(summary.rank, 4);
      assert.equal(summary.alpha, 8);
      assert.deepEqual(fs.readdirSync(staging).sort(), ["adapter.gguf", "metrics.json", "optimizer.bin"]);

      const before = await llamaCppLogProbs(base, tokens);
      const want = await llamaCppLogProbs(base, tokens, { loraPath: original });
      const got = await llamaCppLogProbs(base, tokens, { loraPath: path.join(staging, "adapter.gguf") });
      const moved = maxLogProbDiff(want, before);
      assert.ok(moved > 0.05, `the trained adapter moves llama.cpp's log-probs (max ${moved.toFixed(3)})`);
      const d = maxLogProbDiff(got, want);
      assert.ok(d <= TOL, `${arch}: max |imported − original| = ${d.toExponential(2)} > ${TOL}`);

      // The trainer resumes from the imported checkpoint: same adapter, AdamW at step 0.
      const ck = loadCheckpoint(staging, model, { lr: 1e-4 });
      try {
        assert.equal(ck.optimizer.step, 0);
        assert.equal(ck.lora.rank, 4);
        const ours = await ourLogProbs(model, ck.lora, tokens);
        const d2 = maxLogProbDiff(ours, got);
        assert.ok(d2 <= 1e-3, `the trainer's forward pass with the imported adapter matches llama.cpp (${d2.toExponential(2)})`);
      } finally {
        ck.optimizer.dispose();
        disposeLora(ck.lora);
      }
    } finally {
      model.dispose();
    }
  });
}
