import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { SwapResult } from "../inference/adapterGate.js";
import { assertFiniteWeights } from "../../../models/gguf/finiteWeights.js";
import { GgufError } from "../../../models/gguf/types.js";
import { AdapterMismatchError, stageImport, type ImportSummary } from "../adapters/importAdapter.js";
import { modelFileOf } from "./checkpoints.js";
import { evaluateCandidate, gateOf } from "./publishGate.js";
import { ActivationError, type ImportResult, type SupervisorContext } from "./supervisorTypes.js";
import { WorkerExitError, type WorkerClient } from "./workerClient.js";

/**
 * Imports an adapter trained elsewhere (a PEFT LoRA directory or a llama.cpp LoRA GGUF) as a
 * candidate: checked against the served base and staged in llama.cpp's format
 * (adapters/importAdapter.ts: a mismatch is refused, ActivationError 422, before anything is
 * written), loaded into the trainer, evaluated against the serving adapter and judged by the
 * same gate as a trained candidate, committed as a checkpoint either way, and served only when
 * the gate publishes it; a rejected one is kept for inspection and the trainer goes back to
 * the serving state. Runs under the supervisor's lock.
 */
export async function importCandidate(ctx: SupervisorContext, source: string): Promise<ImportResult> {
  const { o, st, trainer } = ctx;
  if (st.paused) throw new ActivationError("learning is paused: resume it to import an adapter (the publish gate runs in the trainer)", 409);
  if (st.state === "restarting") throw new ActivationError("the trainer is restarting; try the import again in a moment", 503);
  const runId = `import-${Date.now().toString(36)}-${crypto.randomBytes(3).toString("hex")}`;
  const staging = o.checkpoints.stagingDir(runId);
  const imported = stage(source, o.modelPath, staging);
  let committed = false;
  let w: WorkerClient | null = null;
  try {
    w = await gatingTrainer(ctx);
    ctx.setPhase("evaluating");
    await w.request({ type: "load", dir: staging }).catch((e: Error) => {
      throw new ActivationError(`cannot import ${source}: the trainer cannot read the converted adapter: ${e.message}`, 422);
    });
    const serving = o.store.state.training.activeCheckpoint;
    const servingDir = ctx.activeDir();
    const ev = await evaluateCandidate(ctx, w, runId);
    const gate = await gateOf(ctx, ev, path.join(staging, "adapter.gguf"));
    ctx.setPhase("publishing");
    const entry = await o.checkpoints.commit(staging, {
      verdict: gate.verdict,
      runId,
      sampleIds: [],
      meanReward: null,
      loss: 0,
      kl: ev.kl,
      gate,
      totalSteps: 0,
      parent: serving,
      model: modelFileOf(o.modelPath),
    });
    committed = true;
    o.bus.emit("checkpoint", { checkpoint: { ...entry } });
    let swap: SwapResult | null = null;
    if (gate.verdict === "published") {
      swap = await ctx.serving.swapTo(entry);
      ctx.serving.armWatch(entry);
      st.lrScale = ctx.lr.record("imported", entry.id);
    } else {
      ctx.lr.record("importRejected", entry.id);
      await w.request({ type: "load", dir: servingDir });
    }
    return { checkpoint: o.checkpoints.get(entry.id) ?? entry, imported, swap };
  } catch (e) {
    if (!committed) fs.rmSync(staging, { recursive: true, force: true });
    // The trainer may hold the imported adapter: it trains on from what is served.
    if (w && w === trainer.worker && trainer.workerReady) await w.request({ type: "load", dir: ctx.activeDir() }).catch(() => undefined);
    if (e instanceof ActivationError) throw e;
    throw new ActivationError(`cannot import ${source}: ${(e as Error).message.split("\n")[0]}`, e instanceof WorkerExitError ? 503 : 500);
  } finally {
    if (trainer.worker && trainer.workerReady && (st.state === "evaluating" || st.state === "publishing")) ctx.setPhase(st.paused ? "paused" : "idle");
    ctx.loop.kick();
  }
}

/** Checks the adapter against the served base and stages it in llama.cpp's format (a mismatch: ActivationError 422, nothing left). */
function stage(source: string, modelPath: string, staging: string): ImportSummary {
  try {
    const imported = stageImport(source, modelPath, staging);
    assertFiniteWeights(path.join(staging, "adapter.gguf"));
    return imported;
  } catch (e) {
    if (e instanceof AdapterMismatchError || e instanceof GgufError) {
      fs.rmSync(staging, { recursive: true, force: true });
      throw new ActivationError(`cannot import ${source}: ${e instanceof GgufError ? e.message.split(": ").slice(1).join(": ") : e.message}`, 422);
    }
    throw e;
  }
}

/** The gate runs in the trainer: started if it is not running yet; ActivationError 503 when it cannot be. */
async function gatingTrainer(ctx: SupervisorContext): Promise<WorkerClient> {
  const { trainer, st } = ctx;
  if (!trainer.worker) trainer.spawn();
  try {
    await trainer.ready;
  } catch (e) {
    throw new ActivationError(`the trainer could not start, so the adapter cannot be gated: ${(e as Error).message}`, 503);
  }
  const w = trainer.worker;
  if (!w || !trainer.workerReady)
    throw new ActivationError(`the trainer is not running, so the adapter cannot be gated${st.lastError ? ` (${st.lastError})` : ""}`, 503);
  return w;
}
