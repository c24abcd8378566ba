/**
 * `clawrl doctor`: what this machine can do, measured. Every probe that loads native code
 * (node-llama-cpp's backends, Dawn, tfjs backends) runs in a child process with a timeout
 * (probeRunner.ts): a backend that crashes, hangs or throws becomes a row saying how, and the
 * report is still written. The probes run one after another (they would measure each other).
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { z } from "zod";
import { appRoot } from "../config/paths.js";
import { vulkanDriverFiles } from "../../../common/vulkanDrivers.js";
import { backendOrder } from "../inference/backendProbe.js";
import { findCatalogEntry, loadCatalog, type CatalogEntry } from "../../../models/catalog.js";
import { ModelRegistry } from "../../../models/registry.js";
import { ensureShapeModel } from "../../../models/tiny/shapeCache.js";
import { findShape } from "../../../models/tiny/shapes.js";
import { catalogFootprint, installedTrainability, trainabilityOf } from "../../../models/trainability.js";
import { backendMemory } from "../../../models/plan/available.js";
import { machineBasics, nvidiaDriver } from "./machine.js";
import { whatItMeans } from "./meaning.js";
import { runProbeChild, type ProbeOutcome, type ProbeSpec } from "./probeRunner.js";
import {
  llamaProbeResultSchema,
  matmulResultSchema,
  trainResultSchema,
  TRAINER_BACKENDS,
  webgpuAdaptersResultSchema,
  type LlamaProbeRequest,
  type MatmulRequest,
  type MatmulResult,
  type TrainRequest,
} from "./probes/contracts.js";
import { doctorReportSchema, type DoctorReport, type GpuRoute, type InferenceRun } from "../api/doctorReport.js";

export type DoctorSection = "inference" | "training";

export interface DoctorOptions {
  mode: "quick" | "deep";
  /** A GGUF file, an installed model id or a catalog id: the served/selected model (default: the active one). */
  model?: string;
  /** Data dir whose installed models `model` and the active model come from. */
  modelsDir?: string;
  /** WebGPU asked for by name: a software adapter is measured too. */
  webgpu?: boolean;
  /** Sections to measure (default both; [] for the machine alone); the machine is always described. */
  only?: DoctorSection[];
  /** More probes, run after their section (whether or not it is measured) as rows of it (tests: a backend that aborts). */
  extraProbes?: ProbeSpec[];
  /** One line per probe as it starts and ends (the CLI prints them on stderr). */
  log?: (line: string) => void;
}

/** What each mode measures; sized so --quick ends in ~2 minutes on a busy 2-core machine. */
export const MODE_PLAN = {
  quick: {
    inferenceShapes: ["qwen3-0.6b"],
    promptTokens: 24,
    decodeTokens: 6,
    matmulSeconds: 0.6,
    maxProductSeconds: 4,
    trainShape: "qwen2.5-0.5b",
    trainBatch: 1,
    trainContext: 32,
    trainSteps: 0,
  },
  deep: {
    inferenceShapes: ["qwen3-0.6b", "qwen3-1.7b"],
    promptTokens: 256,
    decodeTokens: 64,
    matmulSeconds: 2,
    maxProductSeconds: 20,
    trainShape: "qwen3-1.7b",
    trainBatch: 1,
    trainContext: 128,
    trainSteps: 2,
  },
} as const;

const PROBES = path.join(appRoot, "electron", "core", "doctor", "probes");
/** The trainer's probes are entries of the trainer (trainer/entries/doctor/), started by path. */
const TRAINER_PROBES = path.join(appRoot, "trainer", "entries", "doctor");
export const PROBE_SCRIPTS = {
  llama: path.join(PROBES, "llamaProbe.ts"),
  webgpu: path.join(TRAINER_PROBES, "webgpuProbe.ts"),
  matmul: path.join(TRAINER_PROBES, "matmulProbe.ts"),
  train: path.join(TRAINER_PROBES, "trainProbe.ts"),
};

const require = createRequire(import.meta.url);

/**
 * Why a backend cannot exist here, found without a child (milliseconds): a missing optional
 * package, no Vulkan driver, node-llama-cpp's own detection of CUDA/Vulkan support. null: probe it.
 */
async function precheckLlama(backend: LlamaProbeRequest["backend"]): Promise<string | null> {
  if (backend === "cpu") return null;
  if (backend === "vulkan" && process.platform === "linux" && vulkanDriverFiles().length === 0)
    return "no Vulkan driver installed (no ICD manifest where the Vulkan loader looks)";
  // node-llama-cpp's detection (CUDA libraries, a Vulkan loader, Apple silicon): JS only, no native load.
  const { getLlamaGpuTypes } = await import("node-llama-cpp");
  const supported = await getLlamaGpuTypes("supported").catch(() => [] as Array<string | false>);
  return supported.includes(backend)
    ? null
    : `node-llama-cpp finds no ${backend} support on this machine${backend === "cuda" ? " (no CUDA runtime libraries)" : ""}`;
}

function precheckTrainer(backend: MatmulRequest["backend"]): string | null {
  const pkg = backend === "tfjs-node-gpu" ? "@tensorflow/tfjs-node-gpu" : backend === "tfjs-node" ? "@tensorflow/tfjs-node" : null;
  if (!pkg) return null;
  try {
    require.resolve(pkg);
    return null;
  } catch {
    return "not installed (optional dependency; its install downloads libtensorflow)";
  }
}

function packageVersion(): string {
  try {
    return String((JSON.parse(fs.readFileSync(path.join(appRoot, "package.json"), "utf8")) as { version?: string }).version ?? "?");
  } catch {
    return "?";
  }
}

const recordOf = (spec: Pick<ProbeSpec, "id" | "section" | "name">, o: ProbeOutcome): DoctorReport["probes"][number] => ({
  id: spec.id,
  section: spec.section,
  name: spec.name,
  status: o.status,
  reason: o.reason,
  seconds: o.seconds,
  exit: o.exit,
});

/** The served/selected model: a file (measured and planned from its header) or a catalog entry (planned from its shape). */
interface Selected {
  label: string;
  file: string | null;
  entry: CatalogEntry | null;
}

function selectModel(arg: string | undefined, modelsDir: string | undefined): Selected | null {
  const registry = modelsDir ? new ModelRegistry(modelsDir) : null;
  const entryOfFile = (file: string) => loadCatalog().find((e) => e.file === path.basename(file)) ?? null;
  if (arg === undefined) {
    const active = registry?.active() ?? null;
    return active && fs.existsSync(active.path)
      ? { label: active.id, file: active.path, entry: findCatalogEntry(active.id) ?? entryOfFile(active.path) }
      : null;
  }
  if (fs.existsSync(arg) && fs.statSync(arg).isFile()) return { label: path.basename(arg), file: path.resolve(arg), entry: entryOfFile(arg) };
  const installed = registry?.get(arg);
  if (installed && fs.existsSync(installed.path)) return { label: arg, file: installed.path, entry: findCatalogEntry(arg) ?? entryOfFile(installed.path) };
  const entry = findCatalogEntry(arg);
  if (entry) return { label: arg, file: null, entry };
  throw new Error(`no model file, installed model or catalog id '${arg}' (doctor downloads nothing; see 'clawrl models list')`);
}

/** One doctor run's shared parts: its options and plan, the probe rows so far, and how to add one. */
class DoctorRun {
  readonly plan: (typeof MODE_PLAN)[DoctorOptions["mode"]];
  readonly log: (line: string) => void;
  readonly sections: Set<DoctorSection>;
  readonly probes: DoctorReport["probes"] = [];
  readonly selected: Selected | null;

  constructor(readonly o: DoctorOptions) {
    this.plan = MODE_PLAN[o.mode];
    this.log = o.log ?? (() => undefined);
    this.sections = new Set<DoctorSection>(o.only ?? ["inference", "training"]);
    this.selected = selectModel(o.model, o.modelsDir);
  }

  /** A row decided without a child: recorded like a probe. */
  decided(id: string, section: ProbeSpec["section"], name: string, status: "unavailable" | "skipped", reason: string): void {
    this.probes.push({ id, section, name, status, reason, seconds: 0, exit: null });
    this.log(`${id}: ${status} (${reason})`);
  }

  async probe<S extends z.ZodType>(spec: ProbeSpec, schema: S): Promise<ProbeOutcome<z.infer<S>>> {
    this.log(`${spec.id}: …`);
    const out = await runProbeChild(spec, schema, (line) => this.log(`  ${line}`));
    this.probes.push(recordOf(spec, out));
    this.log(`${spec.id}: ${out.status}${out.reason ? ` (${out.reason})` : ""} in ${out.seconds.toFixed(1)} s`);
    return out;
  }

  /** A shape model, generated on first use with a line per 20% (~1 min for 0.5B on 2 cores). */
  shapeModel(shape: string): string {
    let last = -1;
    return ensureShapeModel(shape, "q8_0", {
      onProgress: (p) => {
        const fifth = Math.floor((5 * p.bytesWritten) / Math.max(1, p.totalBytes));
        if (fifth !== last) {
          last = fifth;
          this.log(`  generating ${shape}: ${(20 * fifth).toFixed(0)}% of ${(p.totalBytes / 2 ** 20).toFixed(0)} MiB`);
        }
      },
    });
  }

  extras(section: DoctorSection): ProbeSpec[] {
    return (this.o.extraProbes ?? []).filter((p) => p.section === section);
  }
}

type Routes = Record<"cuda" | "vulkan" | "webgpu", GpuRoute>;
type InferenceRows = DoctorReport["inference"]["rows"];
type TrainingRows = DoctorReport["training"]["rows"];

export async function runDoctor(o: DoctorOptions): Promise<DoctorReport> {
  const t0 = performance.now();
  const run = new DoctorRun(o);
  const { basics, routes } = await probeMachine(run);
  const order = backendOrder("auto");
  const inferenceRows = await measureInference(run, routes, order);
  const { picked, pick } = pickBackend(run, inferenceRows, order);
  const training = await measureTraining(run, routes);
  const { best, facts, trainingRows, train } = training;
  const bestFacts = best ? facts.get(best) : undefined;
  const memory = bestFacts ? backendMemory({ ...bestFacts, webgpu: bestFacts.webgpu }) : null;

  // What it means.
  const decode: InferenceRun | null = picked?.runs.filter((r) => findShape(r.model)).sort((a, b) => b.modelBytes - a.modelBytes)[0] ?? null;
  const meaning = whatItMeans({
    ramTotalBytes: basics.ramTotalBytes,
    cores: basics.cores,
    loadAverage: basics.loadAverage,
    peakGflops: trainingRows.find((r) => r.backend === best)?.peakGflops ?? null,
    decode,
    pickedBackend: pick.backend,
    vramBytes: pick.backend === "cuda" || pick.backend === "vulkan" ? (routes[pick.backend].vramTotalBytes ?? 0) : 0,
    train,
    trainBackend: memory,
    trainerOnGpu: best === "tfjs-node-gpu" || (best === "webgpu" && !bestFacts?.webgpu?.software),
    selected: run.selected?.entry ?? null,
    selectedLabel: run.selected?.label ?? null,
  });

  const report: DoctorReport = {
    version: 1,
    createdAt: new Date().toISOString(),
    mode: o.mode,
    app: packageVersion(),
    wallSeconds: (performance.now() - t0) / 1000,
    machine: { ...basics, gpus: [routes.cuda, routes.vulkan, routes.webgpu] },
    inference: { rows: inferenceRows, pick },
    training: { rows: trainingRows, best, train, trainReason: training.trainReason, plan: planVerdictOf(run.selected, memory) },
    meaning,
    probes: run.probes,
  };
  // The report is what bug reports carry: never hand out one that its own schema refuses.
  return doctorReportSchema.parse(report);
}

/** The machine: its basics, and the WebGPU adapter Dawn offers (when training is measured). */
async function probeMachine(run: DoctorRun): Promise<{ basics: ReturnType<typeof machineBasics>; routes: Routes }> {
  const basics = machineBasics();
  run.log(
    `machine: ${basics.cpuModel}, ${basics.cores} cores, ${(basics.ramFreeBytes / 2 ** 30).toFixed(1)} of ${(basics.ramTotalBytes / 2 ** 30).toFixed(1)} GiB RAM free, ${basics.os}, Node ${basics.node}`,
  );
  const driver = nvidiaDriver();
  const routes: Routes = {
    cuda: { route: "cuda", status: "skipped", reason: "not probed (--only)", devices: [], driver, vramTotalBytes: null, adapters: [] },
    vulkan: { route: "vulkan", status: "skipped", reason: "not probed (--only)", devices: [], driver: null, vramTotalBytes: null, adapters: [] },
    webgpu: { route: "webgpu", status: "skipped", reason: "not probed (--only)", devices: [], driver: null, vramTotalBytes: null, adapters: [] },
  };
  if (run.sections.has("training")) {
    // The adapter Dawn offers, software ones included: the machine's answer (the trainer row says whether it is used).
    const spec: ProbeSpec = {
      id: "machine.webgpu",
      section: "machine",
      name: "webgpu",
      script: PROBE_SCRIPTS.webgpu,
      request: { allowSoftware: true },
      timeoutMs: 45_000,
    };
    const out = await run.probe(spec, webgpuAdaptersResultSchema);
    routes.webgpu = {
      ...routes.webgpu,
      status: out.status,
      reason: out.reason,
      adapters: out.data ? [out.data] : [],
      devices: out.data ? [out.data.description || out.data.name] : [],
    };
  }
  return { basics, routes };
}

/** Inference: each node-llama-cpp backend, loaded and decoding in a child (the GPU routes filled in as found). */
async function measureInference(run: DoctorRun, routes: Routes, order: ReturnType<typeof backendOrder>): Promise<InferenceRows> {
  const { plan, selected } = run;
  const inferenceRows: InferenceRows = [];
  const llamaBackends = [...new Set<LlamaProbeRequest["backend"]>(["cuda", "vulkan", ...order])];
  if (run.sections.has("inference")) {
    run.log(`preparing the model shapes ${plan.inferenceShapes.join(", ")} (random weights, generated once into .cache/models)`);
    const models: LlamaProbeRequest["models"] = plan.inferenceShapes.map((s) => ({ label: s, path: run.shapeModel(s) }));
    if (selected?.file) models.push({ label: selected.label, path: selected.file });
    for (const backend of llamaBackends) {
      const absent = await precheckLlama(backend);
      if (absent) {
        inferenceRows.push({ backend, status: "unavailable", reason: absent, devices: [], runs: [] });
        run.decided(`inference.${backend}`, "inference", backend, "unavailable", absent);
        if (backend === "cuda" || backend === "vulkan") routes[backend] = { ...routes[backend], status: "unavailable", reason: absent };
        continue;
      }
      const request: LlamaProbeRequest = { backend, models, promptTokens: plan.promptTokens, decodeTokens: plan.decodeTokens };
      // A GPU load of a big model on a cold disk takes a while; the CPU's time is the run's.
      const timeoutMs = (backend === "cpu" ? 90_000 : 180_000) * models.length;
      const out = await run.probe(
        { id: `inference.${backend}`, section: "inference", name: backend, script: PROBE_SCRIPTS.llama, request, timeoutMs },
        llamaProbeResultSchema,
      );
      inferenceRows.push({ backend, status: out.status, reason: out.reason, devices: out.data?.devices ?? [], runs: out.data?.runs ?? [] });
      if (backend === "cuda" || backend === "vulkan") {
        routes[backend] = {
          ...routes[backend],
          status: out.status,
          reason: out.reason,
          devices: out.data?.devices ?? [],
          vramTotalBytes: out.data?.vramTotalBytes ?? null,
        };
      }
    }
  } else for (const backend of llamaBackends) inferenceRows.push({ backend, status: "skipped", reason: "not asked (--only)", devices: [], runs: [] });
  for (const spec of run.extras("inference")) {
    const out = await run.probe(spec, z.unknown());
    inferenceRows.push({ backend: spec.name, status: out.status, reason: out.reason, devices: [], runs: [] });
  }
  return inferenceRows;
}

/** The backend the app picks with the default preference: the first in its order that works, and why. */
function pickBackend(
  run: DoctorRun,
  inferenceRows: InferenceRows,
  order: ReturnType<typeof backendOrder>,
): { picked: InferenceRows[number] | null; pick: DoctorReport["inference"]["pick"] } {
  const picked = order.map((b) => inferenceRows.find((r) => r.backend === b)).find((r) => r?.status === "ok") ?? null;
  const before = order.slice(0, picked ? order.indexOf(picked.backend as (typeof order)[number]) : order.length);
  const whyNot = before.map((b) => `${b}: ${inferenceRows.find((r) => r.backend === b)?.reason ?? "not measured"}`).join("; ");
  const pick = picked
    ? {
        backend: picked.backend,
        why:
          picked.backend === "cpu"
            ? `the last resort in the app's order (${order.join(" → ")})${whyNot ? `; ${whyNot}` : ""}`
            : `the first in the app's order (${order.join(" → ")}) that loads and decodes${whyNot ? `; ${whyNot}` : ""}`,
      }
    : {
        backend: null,
        why: run.sections.has("inference")
          ? `no backend decoded here: ${inferenceRows.map((r) => `${r.backend}: ${r.reason}`).join("; ")}`
          : "not measured (--only)",
      };
  return { picked, pick };
}

interface TrainingMeasure {
  trainingRows: TrainingRows;
  facts: Map<string, MatmulResult["facts"]>;
  best: string | null;
  train: DoctorReport["training"]["train"];
  trainReason: string | null;
}

/** Training: each trainer backend's matMul rows, then a training step on the fastest. */
async function measureTraining(run: DoctorRun, routes: Routes): Promise<TrainingMeasure> {
  const m: TrainingMeasure = {
    trainingRows: [],
    facts: new Map(),
    best: null,
    train: null,
    trainReason: run.sections.has("training") ? null : "not asked (--only)",
  };
  if (run.sections.has("training")) {
    await measureTrainerBackends(run, routes, m);
    const ranked = m.trainingRows
      .filter((r) => r.status === "ok" && r.peakGflops !== null && m.facts.has(r.backend))
      .sort((a, b) => b.peakGflops! - a.peakGflops!);
    m.best = ranked[0]?.backend ?? null;
    if (!m.best) m.trainReason = "no trainer backend started";
    else await measureTrainStep(run, m.best, ranked[0], m);
  } else
    for (const backend of TRAINER_BACKENDS)
      m.trainingRows.push({ backend, status: "skipped", reason: "not asked (--only)", device: null, matmul: [], peakGflops: null });
  for (const spec of run.extras("training")) {
    const out = await run.probe(spec, z.unknown());
    m.trainingRows.push({ backend: spec.name, status: out.status, reason: out.reason, device: null, matmul: [], peakGflops: null });
  }
  return m;
}

/** Each trainer backend, started by name in a child; matMul at 512² (sizes the others), 1024² and 2048². */
async function measureTrainerBackends(run: DoctorRun, routes: Routes, m: TrainingMeasure): Promise<void> {
  const adapter = routes.webgpu.adapters[0];
  for (const backend of TRAINER_BACKENDS) {
    const explicit = backend === "webgpu" && run.o.webgpu === true;
    const absent =
      precheckTrainer(backend) ??
      // The trainer takes a software adapter only when webgpu is asked for by name (it is slower than wasm).
      (backend === "webgpu" && !explicit && adapter?.software
        ? `only a software adapter here (${adapter.software}, ${adapter.backend}): slower than wasm; ask for it by name: --webgpu`
        : null);
    if (absent) {
      const status = backend === "webgpu" ? "skipped" : "unavailable";
      m.trainingRows.push({ backend, status, reason: absent, device: null, matmul: [], peakGflops: null });
      run.decided(`training.${backend}`, "training", backend, status, absent);
      continue;
    }
    const request: MatmulRequest = {
      backend,
      explicit,
      sizes: [512, 1024, 2048],
      seconds: run.plan.matmulSeconds,
      maxProductSeconds: run.plan.maxProductSeconds,
    };
    const out = await run.probe(
      { id: `training.${backend}`, section: "training", name: backend, script: PROBE_SCRIPTS.matmul, request, timeoutMs: 120_000 },
      matmulResultSchema,
    );
    const figures = out.data?.matmul.map((x) => x.gflops).filter((g): g is number => g !== null) ?? [];
    m.trainingRows.push({
      backend,
      status: out.status,
      reason: out.reason,
      device: out.data?.device ?? null,
      matmul: out.data?.matmul ?? [],
      peakGflops: figures.length ? Math.max(...figures) : null,
    });
    if (out.data) m.facts.set(backend, out.data.facts);
  }
}

/** A training step of the plan's shape on the fastest backend, against that backend's peak. */
async function measureTrainStep(run: DoctorRun, best: string, row: TrainingRows[number], m: TrainingMeasure): Promise<void> {
  const { plan } = run;
  run.log(`preparing the model shape ${plan.trainShape} (random weights, generated once into .cache/models)`);
  const modelPath = run.shapeModel(plan.trainShape);
  const request: TrainRequest = {
    backend: best as TrainRequest["backend"],
    modelPath,
    shape: plan.trainShape,
    batch: plan.trainBatch,
    context: plan.trainContext,
    steps: plan.trainSteps,
    rank: 16,
  };
  const out = await run.probe(
    {
      id: `training.${best}.train`,
      section: "training",
      name: best,
      script: PROBE_SCRIPTS.train,
      request,
      timeoutMs: run.o.mode === "deep" ? 420_000 : 150_000,
    },
    trainResultSchema,
  );
  if (!out.data) {
    m.trainReason = `training on ${best} ${out.status}: ${out.reason}`;
    return;
  }
  const d = out.data;
  const gflops = d.flopsPerStep / d.stepSeconds / 1e9;
  m.train = {
    backend: d.backend,
    // The step's GFLOP/s is then not a fraction of the backend's matMul peak (it can exceed it).
    device: d.nativeProducts ? `${d.device}; frozen-weight products native (${d.nativeProducts})` : d.device,
    shape: plan.trainShape,
    batch: plan.trainBatch,
    context: plan.trainContext,
    steps: d.steps,
    firstStepOnly: plan.trainSteps === 0,
    loadSeconds: d.loadSeconds,
    stepSeconds: d.stepSeconds,
    trainedTokensPerStep: d.trainedTokensPerStep,
    trainedTokensPerSecond: d.trainedTokensPerStep / d.stepSeconds,
    gflops,
    fractionOfPeak: row.peakGflops && !d.nativeProducts ? gflops / row.peakGflops : null,
    placement: d.placement,
    peakRssBytes: d.peakRssBytes,
  };
}

/** The memory plan's verdict for the served/selected model on the best backend. */
function planVerdictOf(selected: Selected | null, memory: ReturnType<typeof backendMemory> | null): DoctorReport["training"]["plan"] {
  if (!memory || !selected) return null;
  const shape = selected.entry ? catalogFootprint(selected.entry) : null;
  const t = selected.file ? installedTrainability(selected.file, { backend: memory }) : shape ? trainabilityOf(shape, { backend: memory }) : null;
  return t
    ? { model: selected.label, backend: t.backend, fits: t.fits, maxContext: t.maxContext, summary: t.summary }
    : {
        model: selected.label,
        backend: memory.name,
        fits: false,
        maxContext: 0,
        summary: "the trainer cannot read this model (another architecture): serve only",
      };
}
