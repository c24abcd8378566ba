/**
 * One learning cycle at a real size, with the app's defaults (the real gate included): a core
 * serves a real-shaped random-weight model (models/tiny/shapes.ts), a batch of main turns gets
 * thumbs, and the learning loop runs by itself. Prints the wall time of each phase the status
 * shows (trainer start and model load, the training steps, the gate: KL on recent and held-back
 * turns then the fluency probe, the publish and hot swap), the gate's verdict and reasons, and
 * a chat answer's time to first token idle vs during the cycle (median and p95). Nothing here is a test: the
 * figures are what a user of this machine waits for between feedback and a new adapter.
 *
 *   node --import tsx bench/learning-cycle.ts [--shape qwen2.5-0.5b|qwen3-1.7b] [--type q8_0] [--batch 16]
 *        [--answer-tokens 48] [--steps N (absent: the app's steps policy; a first cycle takes its fewest)] [--compare] [--think 0] [--full-probe]
 *
 * --shape picks the model shape (models/tiny/shapes.ts ids or their catalog ids: qwen2.5-0.5b,
 * qwen3-1.7b, ...). --compare (issue 31) runs the cycle twice in one run, each on a core of its
 * own: first as before issue 31 (the trainer started when the run is due, every block
 * recomputed in the backward, the fluency probe sampling every answer), then as now (the
 * trainer started ahead, kept activations, the sequential probe), and prints both and the ratio
 * of the totals. --think S waits S seconds after each rating before the next question, as a
 * person reading the answer does: the work the app does ahead (the trainer's start and its
 * anchor pass, the probe's base answers) happens in those pauses; 0 (default) asks back to back.
 * --full-probe has the fluency probe sample every planned answer, as it does for a candidate whose
 * verdict never becomes clear (a borderline one): the cycle's longest gate, everything else as now.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startCore } from "../electron/core/core.js";
import type { GateResult } from "../electron/core/training/gate.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import { liveCore, median, p95 } from "./lib/liveCore.js";
import type { ShapeType } from "../models/tiny/generate.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen2.5-0.5b" },
    type: { type: "string", default: "q8_0" },
    batch: { type: "string", default: "16" },
    "answer-tokens": { type: "string", default: "48" },
    steps: { type: "string" },
    compare: { type: "boolean", default: false },
    think: { type: "string", default: "0" },
    "full-probe": { type: "boolean", default: false },
  },
});
const batch = Number(values.batch);
const answerTokens = Number(values["answer-tokens"]);

console.error(`preparing ${values.shape} (${values.type})…`);
const modelPath = ensureShapeModel(values.shape, values.type as ShapeType);

/** Idle first-token times measured before the cycle, and how often chat asks during it: enough answers for a p95 (issue 31: p95 during ≤ 1.3× idle). */
const IDLE_ASKS = 10;
const ASK_EVERY_MS = 15_000;

/** One cycle on a core of its own; `before31`: as the loop ran before issue 31. Returns the cycle's seconds. */
async function runCycle(before31: boolean): Promise<number> {
  // The trainer process reads it at start (trainer/plan/loadForTraining.ts): every block recomputed.
  process.env.CLAWRL_KEEP_ACTIVATIONS = before31 ? "0" : "1";
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-cycle-"));
  const t0 = performance.now();
  // Options the core passes through to the supervisor (core.ts spreads `training`).
  const issue31 = before31 ? { startAhead: false, probeSequential: false } : values["full-probe"] ? { probeSequential: false } : {};
  const core = await startCore({
    model: modelPath,
    dataDir,
    token: "bench",
    uiDir: "",
    training: { ...(values.steps !== undefined ? { stepsPerRun: Number(values.steps) } : {}), ...issue31 },
  });
  const loadS = (performance.now() - t0) / 1000;
  const { api, get, ask, feedBatch } = liveCore(core, answerTokens);
  await api("PATCH", "/api/settings", { batchSize: batch });

  await ask("warm up");
  const idle: number[] = [];
  // First tokens only, idle and during alike: a whole answer every 15 s would be a load of its own (a 1.7B answer of 48 tokens takes ~10 s of 2 cores).
  for (let i = 0; i < IDLE_ASKS; i++) idle.push((await ask(`idle question ${i}`, { firstTokenOnly: true })).ms);
  console.error(
    `model loaded in ${loadS.toFixed(1)} s; idle TTFT ${median(idle).toFixed(0)} ms; asking questions with thumbs until ${batch} samples are ready`,
  );

  const { asked, seconds: feedS } = await feedBatch(batch, Number(values.think) * 1000);

  // Follow the phases until a checkpoint (published or rejected) is written.
  const phases: Array<{ phase: string; at: number }> = [];
  const during: number[] = [];
  /** Each answer during the cycle with the phase it was asked in: the slowest ones say what chat waited for. */
  const duringAt: Array<{ ms: number; phase: string; at: number; lagMs: number }> = [];
  // The core runs in this process: the event loop's longest stall during an answer tells a
  // first token that waited for the core's own JavaScript from one that waited for the CPU.
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const cycleT0 = performance.now();
  let lastProbe = 0;
  let lastTenth: string | null = null;
  for (;;) {
    const st = await get("/api/status");
    const phase = st.training.state === "training" && st.training.step ? `training (step ${st.training.step} of ${st.training.steps})` : st.training.state;
    if (phases.at(-1)?.phase !== phase) {
      phases.push({ phase, at: performance.now() });
      console.error(`  ${((performance.now() - cycleT0) / 1000).toFixed(1).padStart(7)} s  ${phase}`);
    }
    // The progress the Training page shows, every tenth of a part: its estimate of the time left can be checked against the phase times.
    const p = st.training.progress;
    const tenth = p ? `${p.part} ${Math.floor(p.fraction * 10) * 10}%` : null;
    if (p && tenth !== lastTenth) {
      console.error(
        `  ${((performance.now() - cycleT0) / 1000).toFixed(1).padStart(7)} s    ${tenth}${p.secondsLeft !== null ? `, ${p.secondsLeft.toFixed(0)} s left` : ""}`,
      );
    }
    lastTenth = tenth;
    const cks = await get("/api/checkpoints");
    if (cks.checkpoints.length > 0 && ["idle", "paused", "error"].includes(st.training.state)) break;
    if (st.training.state === "error") throw new Error(`learning stopped: ${st.training.lastError}`);
    // A chat answer now and then while the cycle runs: serving never waits for learning.
    if (performance.now() - lastProbe > ASK_EVERY_MS && st.training.state !== "idle") {
      lag.reset();
      const { ms } = await ask("a question while it learns", { firstTokenOnly: true });
      during.push(ms);
      duringAt.push({ ms, phase, at: (performance.now() - cycleT0) / 1000, lagMs: lag.max / 1e6 });
      lastProbe = performance.now();
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const end = performance.now();
  lag.disable();
  const ck = (await get("/api/checkpoints")).checkpoints[0];
  const st = await get("/api/status");
  const metrics = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, String(ck.n), "metrics.json"), "utf8")) as {
    gate: GateResult;
    totalSteps: number;
  };
  // The first cycle's checkpoint: its optimizer's count is the steps the cycle took (the policy's fewest unless --steps).
  const steps = metrics.totalSteps;
  await core.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  // Wall time per phase (steps folded into one "training" line with the per-step mean).
  const spans = new Map<string, number>();
  for (let i = 0; i < phases.length; i++) {
    const name = phases[i].phase.startsWith("training") ? "training" : phases[i].phase;
    spans.set(name, (spans.get(name) ?? 0) + ((phases[i + 1]?.at ?? end) - phases[i].at) / 1000);
  }
  const now = values["full-probe"] ? "now, the fluency probe sampling every answer (a borderline candidate's gate)" : "now";
  console.log(`${before31 ? "before issue 31 (trainer started when the run is due, every block recomputed, full fluency probe)" : now}:`);
  console.log(
    `${values.shape} (${values.type}), ${os.cpus().length} CPUs; trainer ${st.training.backend} (${st.training.device}); batch ${batch} turns of ≤ ${answerTokens} answer tokens, ${steps} steps`,
  );
  console.log(`core start with the model ${loadS.toFixed(1)} s; ${asked} answers with thumbs ${feedS.toFixed(1)} s (${values.think} s pause after each)`);
  const g = metrics.gate;
  const parts = (name: string) =>
    name === "training"
      ? ` (${(spans.get("training")! / steps).toFixed(1)} s a step)`
      : name === "evaluating"
        ? ` (trainer: KL and log-probs ${g.evaluationSeconds?.toFixed(1) ?? "—"} s; fluency probe ${g.fluency?.seconds.toFixed(1) ?? "—"} s for ${g.fluency?.answers ?? 0}${g.fluency?.planned ? ` of ${g.fluency.planned}` : ""} answers${g.fluency?.stoppedEarly ? " (verdict clear: stopped early)" : ""}, ${g.fluency?.tokens ?? 0} tokens; ${g.fluency?.baseSampled ?? "—"} of the base model's answers sampled in the gate, not ahead)`
        : "";
  for (const [name, s] of spans) if (name !== "idle") console.log(`  ${name.padEnd(12)} ${s.toFixed(1).padStart(7)} s${parts(name)}`);
  console.log(
    `  cycle        ${((end - cycleT0) / 1000).toFixed(1).padStart(7)} s from the last thumbs to ${ck.version} ${ck.verdict}${ck.gate.reasons.length ? `: ${ck.gate.reasons.join("; ")}` : ""}`,
  );
  console.log(
    `  gate: KL to serving ${ck.kl?.toFixed(4) ?? "—"}, to base ${ck.klToBase?.recent?.toFixed(4) ?? "—"}; fluency ${ck.fluency?.candidate?.toFixed(2) ?? "—"} vs base ${ck.fluency?.base?.toFixed(2) ?? "—"}; swap pause ${ck.swapPauseMs?.toFixed(1) ?? "—"} ms`,
  );
  console.log(
    `chat TTFT idle median ${median(idle).toFixed(0)} ms, p95 ${p95(idle).toFixed(0)} ms (${idle.length} answers); during the cycle ${during.length ? `median ${median(during).toFixed(0)} ms, p95 ${p95(during).toFixed(0)} ms (${during.length} answers): p95 ${(p95(during) / p95(idle)).toFixed(2)}× idle` : "— (none asked)"}`,
  );
  const slowest = [...duringAt].sort((a, b) => b.ms - a.ms).slice(0, 3);
  if (slowest.length)
    console.log(
      `  slowest first tokens during the cycle: ${slowest.map((x) => `${x.ms.toFixed(0)} ms at ${x.at.toFixed(0)} s (${x.phase}; event loop stalled up to ${x.lagMs.toFixed(0)} ms)`).join("; ")}`,
    );
  return (end - cycleT0) / 1000;
}

if (values.compare) {
  const before = await runCycle(true);
  const now = await runCycle(false);
  console.log(`cycle before issue 31 ${before.toFixed(1)} s, now ${now.toFixed(1)} s: ${(before / now).toFixed(2)}x faster (same run, same machine)`);
} else await runCycle(false);
