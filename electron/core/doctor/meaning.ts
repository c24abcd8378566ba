/**
 * "What it means" for doctor: from the measured figures, the largest catalog model that serves
 * here at a usable speed, the largest that learns here, and one learning cycle's time with the
 * app's defaults. Estimates, each saying how it is made: the figures are measured on a few
 * real-shaped models and scaled to the others.
 */
import { loadCatalog, trainerRamBeside, localMachineFacts, type CatalogEntry } from "../../../models/catalog.js";
import { findShape } from "../../../models/tiny/shapes.js";
import { catalogFootprint, configOfShape, trainabilityOf, APP_TRAIN_CONTEXT } from "../../../models/trainability.js";
import type { BackendMemory } from "../../../models/plan/memoryPlan.js";
import { flopsPerStep } from "../../../models/arch/flops.js";
import { DEFAULT_STEPS_PER_RUN } from "../training/supervisorTypes.js";
import { MAX_STEPS_PER_RUN } from "../training/stepsPolicy.js";
import type { DoctorReport, InferenceRun, TrainRun } from "../api/doctorReport.js";

/** Decode speed an answer reads comfortably at (people read ~5 words, ~7 tokens, a second). */
export const USABLE_DECODE_TPS = 8;
/** The live loop's batch as the catalog's recommendation counts it: 16 samples of ~256 tokens. */
const BATCH_SAMPLES = 16;
const SAMPLE_TOKENS = 256;
const PROMPT_TOKENS = 16;
const RANK = 16;
/** The optimizer steps of a first cycle (the steps policy's fewest; later cycles take up to MAX_STEPS_PER_RUN). */
const STEPS_PER_RUN = DEFAULT_STEPS_PER_RUN;
/** Longest batch a CPU machine is said to learn at (models/catalog.ts MAX_CPU_BATCH_SECONDS). */
const MAX_BATCH_SECONDS = 600;
/** The gate's fluency probe: up to 8 prompts × 4 answers; ~48 tokens each assumed. */
const FLUENCY_TOKENS = 8 * 4 * 48;

const fmtS = (s: number) => (s >= 120 ? `${(s / 60).toFixed(0)} min` : `${s.toFixed(0)} s`);

export interface MeaningInput {
  ramTotalBytes: number;
  cores: number;
  loadAverage: number;
  /** Decode run on the backend the app would pick (largest measured model), and that backend's GPU memory. */
  decode: InferenceRun | null;
  pickedBackend: string | null;
  vramBytes: number;
  train: TrainRun | null;
  /** The training backend's matMul peak measured in the same run. */
  peakGflops: number | null;
  trainBackend: BackendMemory | null;
  trainerOnGpu: boolean;
  /** The served/selected catalog entry (or null: the "learns" model is used for the cycle). */
  selected: CatalogEntry | null;
  selectedLabel: string | null;
}

/**
 * The rate a step's FLOPs are priced at: the backend's matMul peak, unless the measured step ran
 * faster (the frozen weights' products native beside wasm): a peak below a measured rate is no
 * peak, and pricing at it would call the step slower than it was measured.
 */
export function estimatingRate(peakGflops: number | null, train: TrainRun | null): number {
  return Math.max(peakGflops ?? 0, train?.gflops ?? 0) || 1;
}

/**
 * Seconds of one step of the live loop's batch (16 samples × 256 tokens) on `entry`'s shape,
 * from one measured step of another shape: the measured step's time beyond its FLOPs at the
 * backend's matMul peak is counted as per-step cost that grows with the weights (streaming them
 * from RAM, the head's vocabulary slices, kernel set-up) and scaled by parameters; the batch's
 * own FLOPs are counted at the matMul peak. Optimistic by the step's distance from the peak.
 */
export function batchSeconds(entry: CatalogEntry, train: TrainRun, peakGflops: number): number | null {
  const s = findShape(entry.id);
  const measured = findShape(train.shape);
  if (!s || !measured) return null;
  const measuredFlops = train.gflops * 1e9 * train.stepSeconds;
  const overhead = Math.max(0, train.stepSeconds - measuredFlops / (peakGflops * 1e9));
  const params = (x: typeof s) =>
    x.layers * (x.dim * (x.heads + 2 * x.kvHeads) * x.headDim + x.heads * x.headDim * x.dim + 3 * x.dim * x.ffn) + x.vocab * x.dim;
  const flops = flopsPerStep(configOfShape(s), BATCH_SAMPLES, SAMPLE_TOKENS, SAMPLE_TOKENS - PROMPT_TOKENS, RANK);
  return overhead * (params(s) / params(measured)) + flops / (peakGflops * 1e9);
}

/** Decode tokens/s on `entry`, from a measured run scaled by weight bytes (decode reads every weight once a token). */
export function decodeEstimate(entry: CatalogEntry, run: InferenceRun): number {
  return run.decodeTokensPerSecond * (run.modelBytes / entry.sizeBytes);
}

export function whatItMeans(m: MeaningInput): DoctorReport["meaning"] {
  const catalog = [...loadCatalog()].sort((a, b) => b.parameters - a.parameters);
  const budget = m.ramTotalBytes * 0.6 + m.vramBytes;

  let serves: DoctorReport["meaning"]["serves"];
  if (!m.decode) serves = { model: null, decodeTokensPerSecond: null, how: "not measured: no inference backend decoded here" };
  else {
    const d = m.decode;
    const ok = catalog.find((e) => e.serveMemoryBytes <= budget && decodeEstimate(e, d) >= USABLE_DECODE_TPS);
    serves = {
      model: ok?.id ?? null,
      decodeTokensPerSecond: ok ? decodeEstimate(ok, d) : null,
      how:
        `decode ${d.decodeTokensPerSecond.toFixed(1)} tokens/s measured on the ${d.model} shape (${(d.modelBytes / 2 ** 20).toFixed(0)} MiB) on ${m.pickedBackend}, ` +
        `scaled by file size (decode reads every weight once a token); usable: ≥ ${USABLE_DECODE_TPS} tokens/s; fits: serve memory ≤ 60% of RAM${m.vramBytes ? " + GPU memory" : ""}`,
    };
  }

  let learns: DoctorReport["meaning"]["learns"];
  const facts = localMachineFacts();
  const peak = estimatingRate(m.peakGflops, m.train);
  if (!m.train || !m.trainBackend) learns = { model: null, batchSeconds: null, how: "not measured: no trainer backend trained here" };
  else {
    const t = m.train;
    const backend = m.trainBackend;
    const fits = (e: CatalogEntry) => {
      const shape = catalogFootprint(e);
      return shape !== null && trainabilityOf(shape, { backend, hostBytes: trainerRamBeside(e, { ...facts, vramBytes: m.vramBytes }) }).fits;
    };
    const ok = catalog.find((e) => fits(e) && (m.trainerOnGpu || (batchSeconds(e, t, peak) ?? Infinity) <= MAX_BATCH_SECONDS));
    learns = {
      model: ok?.id ?? null,
      batchSeconds: ok ? batchSeconds(ok, t, peak) : null,
      how:
        `the trainer's memory plan on ${t.backend} with the RAM left beside serving, and a step of ${BATCH_SAMPLES} samples × ${SAMPLE_TOKENS} tokens ` +
        `estimated from the measured step (its FLOPs at ${peak === m.peakGflops ? `the ${peak.toFixed(1)} GFLOP/s matMul peak` : `the ${peak.toFixed(1)} GFLOP/s it ran at, above the backend's matMul peak (native products)`}, ` +
        `the rest of its ${t.stepSeconds.toFixed(1)} s scaled by parameters)${m.trainerOnGpu ? "" : `, at most ${MAX_BATCH_SECONDS / 60} min`}`,
    };
  }

  let cycle: DoctorReport["meaning"]["learningCycle"];
  // The served model; else the one that learns here; else the smallest with a known shape (the cycle is then long: that is the news).
  const cycleEntry = m.selected ?? catalog.find((e) => e.id === learns.model) ?? [...catalog].reverse().find((e) => findShape(e.id)) ?? null;
  if (!m.train || !cycleEntry)
    cycle = { model: m.selectedLabel, seconds: null, how: m.train ? "no catalog shape known for this model" : "not measured: no trainer backend trained here" };
  else {
    const step = batchSeconds(cycleEntry, m.train, peak);
    const decode = m.decode ? decodeEstimate(cycleEntry, m.decode) : null;
    if (step === null) cycle = { model: cycleEntry.id, seconds: null, how: "no catalog shape known for this model" };
    else {
      // Gate: KL and log-probs over the batch's and held-back turns (forward only, ~1/3 of a step
      // each, twice), and the fluency probe's answers sampled and scored (decode speed, twice).
      const gate = (2 * step) / 3 + (decode ? (2 * FLUENCY_TOKENS) / decode : 0);
      const seconds = STEPS_PER_RUN * step + gate;
      cycle = {
        model: cycleEntry.id,
        seconds,
        how:
          `${STEPS_PER_RUN} steps (a first cycle's; up to ${MAX_STEPS_PER_RUN} once candidates pass with room) of ${BATCH_SAMPLES} samples × ${SAMPLE_TOKENS} tokens, each estimated as for "learns" (${fmtS(step)} a step), ` +
          `plus the gate: ~⅔ of a step for its KL passes and ${FLUENCY_TOKENS} fluency-probe tokens sampled and scored at ~${decode?.toFixed(1) ?? "?"} tokens/s; ` +
          `trainer start and model load not counted; context ${APP_TRAIN_CONTEXT} allowed, ${SAMPLE_TOKENS} assumed per turn`,
      };
    }
  }

  const name = (id: string | null) => (id ? (loadCatalog().find((e) => e.id === id)?.name ?? id) : null);
  const lines = [
    serves.model
      ? `Serves: up to ${name(serves.model)} at ~${serves.decodeTokensPerSecond!.toFixed(0)} tokens/s on ${m.pickedBackend} (estimated).`
      : `Serves: ${m.decode ? `no catalog model reaches ${USABLE_DECODE_TPS} tokens/s here` : "not measured (no inference backend ran)"}.`,
    learns.model
      ? `Learns: up to ${name(learns.model)} on ${m.train!.backend} (~${fmtS(learns.batchSeconds!)} a step of ${BATCH_SAMPLES} turns, estimated).`
      : `Learns: ${m.train ? "no catalog model trains here in reasonable time" : "not measured (no trainer backend trained)"}.`,
    cycle.seconds !== null
      ? `One learning cycle with the app's defaults on ${name(cycle.model)}: ~${fmtS(cycle.seconds)} (estimated from the measured step; see how).`
      : `One learning cycle: unknown (${cycle.how}).`,
  ];
  if (m.loadAverage > m.cores)
    lines.push(`Measured while the machine was busy (load ${m.loadAverage.toFixed(1)} on ${m.cores} cores): an idle machine does better.`);
  return { serves, learns, learningCycle: cycle, lines };
}
