/**
 * How far each checkpoint of an eval run walked from the base model, beside what the eval saw:
 * for each `clawrl eval` run directory given, the mean KL(checkpoint || base model) per token
 * (trainer/train/gateScores.ts meanKl, the gate's own measure) over the run's main turns (prompt +
 * the answer served), next to the fluency the eval measured when that checkpoint was served
 * (the base model's mean log-prob per token of its held-out answers). This is what the gate's
 * drift budget (electron/core/training/gate.ts DRIFT_BUDGET) was read from.
 *
 *   node --import tsx bench/learning-drift.ts OUT_DIR... [--model FILE]
 *
 * OUT_DIR: a `clawrl eval --out` directory (report.json, runs/<method>/data/).
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { initBackend } from "../trainer/backend.js";
import { readLoraAdapter } from "../trainer/lora/adapter-file.js";
import { disposeLora } from "../trainer/lora/params.js";
import { loadForTraining } from "../trainer/plan/loadForTraining.js";
import { meanKl } from "../trainer/train/gateScores.js";
import { Store } from "../electron/core/store/store.js";

const root = path.resolve(import.meta.dirname, "..");
const { values, positionals } = parseArgs({ allowPositionals: true, options: { model: { type: "string" } } });
const modelPath = path.resolve(values.model ?? path.join(root, "models", "test", "stories260K.gguf"));
if (positionals.length === 0) throw new Error("give one or more `clawrl eval --out` directories");

const backend = await initBackend(undefined, () => undefined);
const { model } = await loadForTraining(modelPath, backend, { rank: 16, maxContext: 512, batchSize: 16 });

interface Point {
  interactions: number;
  adapters: string[];
  fluency: { meanLogprob: number } | null;
}

console.log("run                     ckpt  KL(ckpt||base)  fluency (eval)  Δ vs base");
for (const dir of positionals) {
  const report = JSON.parse(fs.readFileSync(path.join(dir, "report.json"), "utf8")) as {
    runs: Array<{ method: string; points: Point[]; dataDir: string | null }>;
  };
  const base = report.runs[0].points[0].fluency?.meanLogprob ?? null;
  for (const run of report.runs.slice(1)) {
    if (!run.dataDir) continue;
    const store = Store.open(run.dataDir, { readOnly: true });
    try {
      const seqs = [...store.turnEntries()]
        .filter((e) => e.type === "main")
        .map((e) => store.readTurn(e.turnId))
        .filter((t) => t.promptTokens.length > 0 && t.responseTokens.length > 0)
        .map((t) => ({ tokens: [...t.promptTokens, ...t.responseTokens], start: t.promptTokens.length }));
      for (const p of run.points) {
        const version = p.adapters.length === 1 ? p.adapters[0] : null;
        if (!version || version === "base") continue;
        const n = Number(version.replace(/^ckpt-/, ""));
        const file = path.join(run.dataDir, "checkpoints", String(n), "adapter.gguf");
        if (!fs.existsSync(file)) continue;
        const lora = readLoraAdapter(file, model);
        const { kl } = await meanKl(model, lora, null, seqs);
        disposeLora(lora);
        const fl = p.fluency?.meanLogprob ?? null;
        console.log(
          `${`${path.basename(dir)}/${run.method}`.padEnd(24)}${String(n).padStart(4)}  ${kl === null ? "-" : kl.toFixed(3).padStart(14)}  ${fl === null ? "-" : fl.toFixed(3).padStart(14)}  ${fl === null || base === null ? "-" : (fl - base).toFixed(3).padStart(9)}   @${p.interactions}`,
        );
      }
    } finally {
      store.close();
    }
  }
}
model.dispose();
