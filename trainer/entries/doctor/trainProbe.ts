/**
 * Doctor's training probe, a child process: on one trainer backend, loads a real-shaped model
 * for training (the memory plan decides the placement), creates a LoRA and runs a warm-up step
 * and `steps` measured steps of the live loop's binary method, as bench/trainer-real-size.ts
 * does; reports seconds per step, trained tokens and the FLOPs of a step.
 */
import { createLora, disposeLora } from "../../lora/params.js";
import { AdamW } from "../../optim/adamw.js";
import { loadForTraining } from "../../plan/loadForTraining.js";
import { loraParamRecord, trainSteps } from "../../train/trainSteps.js";
import { syntheticBatch } from "../../train/syntheticBatch.js";
import { probeMain } from "../../../common/probeChild.js";
import { flopsPerStep } from "../../../models/arch/flops.js";
import { trainRequestSchema, type TrainResult } from "./protocol.js";
import { isStarted, startTrainerBackend } from "./startBackend.js";
import { nativeProductsFor } from "../../native/gemm.js";

probeMain(trainRequestSchema, async (req, progress) => {
  // Named: doctor trains only on a backend whose matMul probe started (webgpu on software only when asked).
  const backend = await startTrainerBackend(req.backend, true);
  if (!isStarted(backend)) return backend;
  const { batch: B, context: T, rank } = req;
  const t0 = performance.now();
  const { model, plan } = await loadForTraining(req.modelPath, backend, { rank, maxContext: T, batchSize: B });
  const loadSeconds = (performance.now() - t0) / 1000;
  await progress(`${req.backend}: ${req.shape} loaded for training in ${loadSeconds.toFixed(1)} s (${plan.placement.layers}/${plan.placement.head})`);
  const c = model.config;
  const samples = syntheticBatch(c.nVocab, B, T);
  const prompt = samples[0].promptLength;
  const lora = createLora(model, { rank, alpha: 2 * rank });
  const optimizer = new AdamW(loraParamRecord(lora), { lr: 1e-4 });
  const state = { model, lora, optimizer };
  const opts = { method: "binary" as const, steps: 1, batchSize: B, microBatchTokens: plan.microBatchTokens };
  const seconds: number[] = [];
  // The first step pays for kernels and heap growth; it is the figure only when no other step runs.
  const [warm] = await trainSteps(state, samples, opts);
  await progress(`${req.backend}: step 1 ${warm.seconds.toFixed(1)} s`);
  for (let i = 0; i < req.steps; i++) {
    const [m] = await trainSteps(state, samples, opts);
    seconds.push(m.seconds);
    await progress(`${req.backend}: step ${i + 2} ${m.seconds.toFixed(1)} s`);
  }
  const stepSeconds = seconds.length > 0 ? Math.min(...seconds) : warm.seconds;
  const result: TrainResult = {
    backend: req.backend,
    device: backend.device,
    loadSeconds,
    stepSeconds,
    steps: Math.max(1, seconds.length),
    trainedTokensPerStep: B * (T - prompt),
    flopsPerStep: flopsPerStep(c, B, T, T - prompt, rank),
    placement: `${plan.placement.layers}/${plan.placement.head}`,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    nativeProducts: model.weights.hostProducts ? (nativeProductsFor(backend.name)?.isa ?? null) : null,
  };
  optimizer.dispose();
  disposeLora(lora);
  model.dispose();
  return { type: "result", data: result };
});
