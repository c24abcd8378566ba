import fs from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { appRoot, dataPaths, defaultDataDir, type DataPaths } from "./config/paths.js";
import { createServer } from "./server/app.js";
import { loadOrCreateToken } from "./server/token.js";
import { registerApiRoutes } from "./server/routes/api.js";
import { registerSessionRoutes } from "./server/routes/sessions.js";
import { registerAnswerEditRoute } from "./server/routes/answerEdit.js";
import { Store } from "./store/store.js";
import { EventBus } from "./rollout/events.js";
import { Rollout } from "./rollout/rollout.js";
import { Engine, type EngineOptions } from "./inference/engine.js";
import { registerOpenAiRoutes } from "./server/routes/openai.js";
import { registerCompletionRoutes } from "./server/routes/completions.js";
import { bodyLimitFor, promptLengthGuard } from "./inference/promptBound.js";
import { registerEmbeddingRoutes } from "./server/routes/embeddings.js";
import { settingsEmbeddings } from "./inference/embeddings.js";
import { registerResponseRoutes } from "./server/routes/responses.js";
import { ResponseStore } from "./store/responses.js";
import { registerEvalRoutes } from "./eval/latest.js";
import { startPreferences, type PreferenceService } from "./preferences/index.js";
import { tokenCounter } from "./preferences/inject.js";
import { PreferenceChecker } from "./preferences/retire.js";
import { registerPreferenceRoutes } from "./server/routes/preferences.js";
import { ModelService } from "./models/modelService.js";
import { registerModelRoutes } from "./server/routes/apiModels.js";
import { Checkpoints, modelFileOf, startupAdapter } from "./training/checkpoints.js";
import type { SamplePool } from "./training/pool.js";
import { TurnSamplePool } from "./rollout/samples.js";
import { watchEditedQuestions } from "./rollout/branches.js";
import { JudgeService } from "./judge/service.js";
import { judgeBackendFactory } from "./judge/sources.js";
import { TrainingSupervisor, type SupervisorOptions } from "./training/supervisor.js";
import { gateProbeFor } from "./training/gateProbe.js";
import type { FluencyMeasure } from "./inference/fluencyProbe.js";
import { registerTrainingRoutes } from "./server/routes/training.js";
import { registerAdapterImportRoute } from "./server/routes/adapterImport.js";
import { APP_TRAIN_CONTEXT } from "../../models/trainVerdict.js";
import { describeGguf } from "../../models/registry.js";
import { UnavailableError } from "./domainErrors.js";
import { ServedModel, forwarder, type ServedParts } from "./servedModel.js";
import { ToolHost } from "./tools/host.js";
import { resultCharsFor } from "./tools/result.js";
import { registerToolRoutes } from "./server/routes/tools.js";
import { registerDoctorRoutes } from "./server/routes/doctor.js";
import { defaultAnswerTokens } from "./api/generationLimits.js";
import type { ModelLoadPatch } from "./api/modelLoad.js";
import { engineLoadOf, loadKeyOf, ModelLoads } from "./inference/loadSettings.js";
import { registerModelLoadRoutes } from "./server/routes/modelLoad.js";
import { registerAttachmentRoutes } from "./server/routes/attachments.js";
import { attachmentStoreOf, followSessions } from "./attachments/turns.js";

export interface CoreOptions {
  dataDir?: string;
  host?: string;
  /** 0 = any free port. */
  port?: number;
  token?: string;
  /** Path of a GGUF to serve. */
  model?: string;
  uiDir?: string;
  /** Inference settings (backend, context cap, sequences, threads...); model path comes from `model`. */
  engine?: Omit<EngineOptions, "modelPath">;
  /** Largest request body (bytes); larger gets 413. */
  bodyLimit?: number;
  /** The learning loop (trainer process, gate, checkpoints); on when a model is served. */
  training?:
    | false
    | (Partial<Pick<SupervisorOptions, "stepsPerRun" | "gate" | "evalTurns" | "restartBackoffMs" | "worker" | "watch">> & {
        pool?: SamplePool;
        probe?: FluencyMeasure | null;
      });
}

export interface RunningCore {
  url: string;
  token: string;
  paths: DataPaths;
  server: FastifyInstance;
  /** state.json + logs/trajectories.jsonl */
  store: Store;
  /** in-process events (SSE, learning loop) */
  bus: EventBus;
  /** sessions and turns: the /v1 route calls beginTurn/completeTurn/abortTurn */
  rollout: Rollout;
  /** catalog, installed models, downloads */
  models: ModelService;
  /** the loaded model, when `model` was given (the current one after a switch) */
  readonly engine: Engine | null;
  /** the learning loop, when a model is served and training is not turned off */
  readonly training: TrainingSupervisor | null;
  /** the background judge (turns with a next state → judge lines in the log) */
  readonly judge: JudgeService;
  /** the served model, switchable while the core runs (POST /api/models/use); none loaded when started without one */
  served: ServedModel<Engine, CoreParts>;
  /** main turns with a reward and/or hint, for the trainer */
  samples: TurnSamplePool;
  /** standing preferences: hints applied from the next turn on, distilled, retired when learned */
  preferences: PreferenceService;
  /** the MCP servers of <data dir>/mcp.json (started when first needed, stopped by close) */
  tools: ToolHost;
  close(): Promise<void>;
}

/** What is built on one served model. */
export interface CoreParts extends ServedParts<Engine> {
  judge: JudgeService;
  training: TrainingSupervisor | null;
}

/** How long a /v1 request waits for a model switch to finish before it is answered 503. */
const SWITCH_WAIT_MS = 120_000;

export const defaultUiDir = path.join(appRoot, "out", "renderer");

/** What the core holds whatever model is served (or none). */
interface CoreBase {
  opts: CoreOptions;
  paths: DataPaths;
  token: string;
  store: Store;
  bus: EventBus;
  rollout: Rollout;
  preferences: ReturnType<typeof startPreferences>;
  checkpoints: Checkpoints;
  threads: number | undefined;
  samples: TurnSamplePool;
  /** what each model last loaded with (a failed reload comes back with it); the load settings' routes read it */
  loads: ModelLoads;
}

/** The served model (switchable live), and the judge, which runs without a model too. */
interface CoreServing {
  served: ServedModel<Engine, CoreParts>;
  initial: CoreParts | null;
  latest: () => CoreParts | null;
  judge: () => JudgeService;
  /** the judge of a core without a model, until a model's own takes over */
  modelless: { judge: JudgeService | null };
}

/** What the routes phase starts that close() stops. */
interface CoreServices {
  models: ModelService;
  tools: ToolHost;
  embeddings: ReturnType<typeof settingsEmbeddings>;
  preferenceChecks: PreferenceChecker;
}

/** Starts the headless core: the HTTP server with its routes. No electron import, ever. */
export async function startCore(opts: CoreOptions = {}): Promise<RunningCore> {
  const base = openCoreBase(opts);
  const serving = await serveModel(base);
  // A host given to listen on (not a wildcard) is a name the server answers to, with the user's own.
  const boundName = opts.host && !["0.0.0.0", "::"].includes(opts.host) ? [opts.host] : [];
  const server = createServer({
    token: base.token,
    uiDir: opts.uiDir ?? defaultUiDir,
    bodyLimit: opts.bodyLimit ?? bodyLimitFor(serving.initial?.engine.info().contextSize),
    allowedHosts: () => [...boundName, ...base.store.settings.allowedHosts],
  });
  const services = registerRoutes(server, base, serving);
  const host = opts.host ?? "127.0.0.1";
  await server.listen({ host, port: opts.port ?? 0 });
  const addr = server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return runningCore(`http://${shownHost}:${port}`, server, base, serving, services);
}

/** The data directory, the store and what runs on it whatever model is served. */
function openCoreBase(opts: CoreOptions): CoreBase {
  const paths = dataPaths(opts.dataDir ?? defaultDataDir());
  fs.mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  const token = loadOrCreateToken(paths.token, opts.token);
  const store = Store.open(paths.root);
  if (store.recoveryMessage) console.warn(store.recoveryMessage);
  const bus = new EventBus();
  const rollout = new Rollout({ store, bus });
  rollout.start();
  const preferences = startPreferences(store, bus, rollout);
  const checkpoints = new Checkpoints(store, paths.checkpoints);
  const threads = opts.engine?.threads ?? envThreads();
  const samples = new TurnSamplePool(store, bus);
  // An edited question gives its earlier version's first answer a next state (docs/method.md "Edits and branches").
  watchEditedQuestions(store, bus);
  return { opts, paths, token, store, bus, rollout, preferences, checkpoints, threads, samples, loads: new ModelLoads() };
}

/** The served model and what is built on it; all of it is rebuilt when the model is switched. */
async function bringUp(
  base: CoreBase,
  modelPath: string,
  adapter: { path: string; version: string } | undefined,
  onLoadProgress?: (fraction: number) => void,
  restoring = false,
): Promise<CoreParts> {
  const { opts, paths, store, bus, checkpoints, samples, loads } = base;
  // The model's load settings (api/modelLoad.ts) under clawrl serve's flags; back after a failed reload: what it loaded with before.
  const wanted = engineLoadOf(store.settings.modelLoad[loadKeyOf(modelPath)], loadOverridesOf(opts), {
    backend: store.settings.backend,
    threads: base.threads,
  });
  const load = (restoring ? loads.lastGood(modelPath) : undefined) ?? wanted;
  const engine = await Engine.load({
    ...opts.engine,
    onLoadProgress,
    adapter,
    ...load,
    // GPU backends found broken here are remembered (with why) until the app or driver changes.
    probe: { cacheFile: path.join(paths.root, "backendProbe.json"), ...opts.engine?.probe },
    modelPath,
  });
  loads.loaded(modelPath, load);
  const threads = load.threads;
  const judge = new JudgeService({ store, bus, backendFor: judgeBackendFactory(engine, { threads }) });
  judge.start();
  let training: TrainingSupervisor | null = null;
  let probe: FluencyMeasure | null = null;
  if (opts.training !== false) {
    const t = opts.training ?? {};
    const pool = t.pool ?? samples;
    // The gate's fluency check samples candidates with llama.cpp in a model instance of its own.
    probe = t.probe === undefined ? gateProbeFor(engine, threads) : t.probe;
    training = new TrainingSupervisor({ ...t, store, bus, pool, checkpoints, engine, foreground: engine.foreground, modelPath, probe });
  }
  return {
    engine,
    judge,
    training,
    close: async () => {
      await judge.close();
      await training?.stop();
      await probe?.close();
      await engine.close();
    },
  };
}

/** Loads the model given (if any), else starts the judge alone; the served model can be switched later, live. */
async function serveModel(base: CoreBase): Promise<CoreServing> {
  const { opts, store, bus, rollout, checkpoints, threads } = base;
  let initial: CoreParts | null = null;
  // Without a model the judge still runs (an endpoint judge needs no local model).
  const modelless: { judge: JudgeService | null } = { judge: null };
  try {
    if (opts.model) initial = await bringUp(base, opts.model, opts.engine?.adapter ?? startupAdapter(store, checkpoints, opts.model));
  } catch (err) {
    // Nothing may stay open (the rollout's idle timer would keep the process alive).
    rollout.stop();
    store.close();
    throw err;
  }
  if (!initial) {
    modelless.judge = new JudgeService({ store, bus, backendFor: judgeBackendFactory(null, { threads }) });
    modelless.judge.start();
  }

  // Started without a model (the app's first run), the core can load one later, live.
  const served = new ServedModel<Engine, CoreParts>(initial, {
    bus,
    busy: (e) => e.gate.inflight + e.gate.queued > 0,
    pathOf: (e) => e.info().modelPath,
    bringUp: async (modelPath, restoring, onProgress) => {
      // Adapters fit the model they were trained on: each model serves its own line, the one it
      // served last (startupAdapter → enterModelLine); the old model returning after a failed
      // switch gets its own back the same way.
      const parts = await bringUp(base, modelPath, startupAdapter(store, checkpoints, modelPath), onProgress, restoring);
      // The model's own judge takes over from the one a core without a model ran.
      const before = modelless.judge;
      modelless.judge = null;
      await before?.close();
      parts.training?.start();
      return parts;
    },
  });
  const latest = (): CoreParts | null => served.latest;
  return { served, initial, latest, judge: () => latest()?.judge ?? modelless.judge!, modelless };
}

/** Every route, in the order they were always registered (the hooks among them). */
function registerRoutes(server: FastifyInstance, base: CoreBase, serving: CoreServing): CoreServices {
  const { opts, store, bus, rollout, checkpoints } = base;
  const { served, judge } = serving;
  // Built first: the status routes' closures name the models it knows.
  const models = modelService(base, served);
  const describe = modelFacts();
  registerApiRoutes(server, {
    store,
    rollout,
    bus,
    engineStatus: () => servedStatus(served, describe, (p) => models.nameOf(p)),
    trainingStatus: () => ({ ...(served.now?.training?.status() ?? {}), judgeQueue: judge().queueLength }),
  });
  registerAnswerEditRoute(server, { store, bus });
  if (opts.training !== false) {
    const training = forwarder(() => {
      const t = served.current().training;
      if (!t) throw new UnavailableError("Learning is off for this model.", { code: "no_training" });
      return t;
    });
    const servingNow = () => ({ active: store.state.training.activeCheckpoint, modelPath: served.latest?.engine.info().modelPath ?? null });
    registerTrainingRoutes(server, training, () => checkpoints.list(), servingNow, { store, judgeQueue: () => judge().queueLength });
    registerAdapterImportRoute(server, training, servingNow);
    serving.initial?.training?.start();
  }
  const embeddings = registerInferenceRoutes(server, base, serving, models);
  registerEvalRoutes(server, base.paths.root);
  registerSessionRoutes(server, { store, rollout, bus });
  const preferenceChecks = registerPreferences(server, base, serving);
  registerModelRoutes(server, models);
  registerModelLoadRoutes(server, { store, served, loads: base.loads, overrides: loadOverridesOf(opts), appThreads: base.threads, models });
  // MCP tools (issue 29): a broken mcp.json is reported in GET /api/tools; the app runs without tools.
  const tools = new ToolHost({
    dataDir: base.paths.root,
    emit: (payload) => bus.emit("tools", payload),
    maxResultChars: () => resultCharsFor(served.now?.engine.info().contextSize ?? null),
  });
  registerToolRoutes(server, tools);
  registerDoctorRoutes(server, { modelsDir: base.paths.models, emit: (e) => bus.emit("doctor", e) });
  // Attached files (issue 30), stored with their chat: moved to it on its first turn, removed with it.
  const attachments = attachmentStoreOf(base.paths.root);
  registerAttachmentRoutes(server, { store: attachments, contextSize: () => served.now?.engine.info().contextSize ?? null });
  followSessions(attachments, bus, (turnId) => store.readTurn(turnId).messages);
  return { models, tools, embeddings, preferenceChecks };
}

/** The /v1 routes (chat, completions, embeddings, responses) and the hooks in front of them. */
function registerInferenceRoutes(server: FastifyInstance, base: CoreBase, serving: CoreServing, models: ModelService): ReturnType<typeof settingsEmbeddings> {
  const { store, rollout, threads, paths } = base;
  const { served } = serving;
  // A prompt that cannot fit the context is refused from its byte length, and a long one is
  // counted in chunks that yield, before a route tokenizes it in one blocking call (issue 26 F4).
  server.addHook(
    "preHandler",
    promptLengthGuard(() => served.now?.engine ?? null),
  );
  // A /v1 request that arrives during a model switch waits for the new model (bounded; then the
  // route's 503 says why) rather than failing: outside clients rarely retry. Without a model the
  // routes answer 503 "No model is loaded".
  server.addHook("onRequest", async (req) => {
    if (req.url.startsWith("/v1/")) await served.settled(SWITCH_WAIT_MS);
  });
  const engine = forwarder(() => served.current().engine);
  registerOpenAiRoutes(server, {
    engine,
    rollout,
    defaultMaxTokens: () => defaultAnswerTokens(served.now?.engine.info().contextSize, store.settings.defaultMaxTokens),
  });
  registerCompletionRoutes(server, { engine, rollout });
  // /v1/embeddings: the settings' embedding GGUF (its own model and context), else the served model.
  const embeddings = settingsEmbeddings({
    served: () => served.current().engine,
    modelPath: () => store.settings.embeddingModelPath,
    idOf: (p) => models.registry.snapshot().models.find((m) => m.path === p)?.id ?? null,
    threads,
  });
  registerEmbeddingRoutes(server, { source: embeddings.source });
  registerResponseRoutes(server, {
    engine,
    rollout,
    store: new ResponseStore(path.join(paths.root, "responses")),
    defaultMaxTokens: () => defaultAnswerTokens(served.now?.engine.info().contextSize, store.settings.defaultMaxTokens),
  });
  return embeddings;
}

/** The preference routes, with the retirement check that runs after each adapter swap (and on request). */
function registerPreferences(server: FastifyInstance, base: CoreBase, serving: CoreServing): PreferenceChecker {
  const { store, bus, preferences } = base;
  const preferenceEngine = (): Engine | null => serving.latest()?.engine ?? null;
  // Retirement: after each adapter swap (and on request), learned preferences leave the prompt.
  const preferenceChecks = new PreferenceChecker({ store, prefs: preferences.service, bus, engine: preferenceEngine });
  registerPreferenceRoutes(server, {
    prefs: preferences.service,
    settings: () => store.settings,
    countTokens: () => {
      const e = preferenceEngine();
      return e ? tokenCounter(e) : null;
    },
    check: () => {
      if (!serving.latest()) throw new UnavailableError("No model is served: nothing to check preferences against.", { code: "no_model" });
      return preferenceChecks.check();
    },
  });
  return preferenceChecks;
}

/** The catalog, installed models and downloads, told what is served and what the trainer says. */
function modelService(base: CoreBase, served: ServedModel<Engine, CoreParts>): ModelService {
  const { paths, bus, store } = base;
  return new ModelService({
    dir: paths.models,
    emit: (name, payload) => bus.emit(name, payload),
    served: () => {
      const e = served.now?.engine;
      if (!e) return null;
      const i = e.info();
      return { path: i.modelPath, id: i.modelId, contextSize: i.contextSize, gpuLayers: i.gpuLayers };
    },
    trainer: () => served.now?.training?.status() ?? null,
    // As the supervisor asks the trainer (its settings()).
    trainSettings: () => ({ maxContext: store.settings.maxTrainContext ?? APP_TRAIN_CONTEXT, rank: store.settings.loraRank }),
    switchTo: (m) => served.switchTo(m),
    checkpointsOf: (modelPath) => base.checkpoints.list().filter((c) => c.model === modelFileOf(modelPath)).length,
  });
}

/** The running core's handle, and its close: each part stopped in order. */
function runningCore(url: string, server: FastifyInstance, base: CoreBase, serving: CoreServing, services: CoreServices): RunningCore {
  const { token, paths, store, bus, rollout, samples, preferences } = base;
  const { served, latest, judge, modelless } = serving;
  const { models, tools, embeddings, preferenceChecks } = services;
  return {
    url,
    token,
    paths,
    server,
    store,
    bus,
    rollout,
    models,
    get engine() {
      return latest()?.engine ?? null;
    },
    get training() {
      return latest()?.training ?? null;
    },
    get judge() {
      return judge();
    },
    served,
    samples,
    preferences: preferences.service,
    tools,
    close: async () => {
      // First: a call in flight ends (as an error result) instead of holding the server's close, and no server process outlives the core.
      await tools.close();
      await preferenceChecks.close();
      await modelless.judge?.close();
      await embeddings.close();
      await served.close();
      samples.close();
      models.close();
      await server.close();
      preferences.close();
      rollout.stop();
      store.close();
    },
  };
}

/** clawrl serve's load flags (startCore's engine options): they win over each model's stored load settings for this run. */
function loadOverridesOf(opts: CoreOptions): ModelLoadPatch {
  const e = opts.engine ?? {};
  const o: ModelLoadPatch = {};
  if (e.backend !== undefined) o.backend = e.backend;
  if (e.maxContextSize !== undefined) o.contextSize = e.maxContextSize;
  if (e.gpuLayers !== undefined) o.gpuLayers = e.gpuLayers;
  if (e.threads !== undefined) o.threads = e.threads;
  return o;
}

/** CLAWRL_THREADS: CPU threads per evaluation (tests on a shared machine set 1). */
function envThreads(): number | undefined {
  const n = Number(process.env.CLAWRL_THREADS);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** A served file's size, quantization and context from its GGUF header, read once per file. */
function modelFacts(): (file: string) => { sizeBytes: number | null; quantization: string | null } {
  const known = new Map<string, { sizeBytes: number | null; quantization: string | null }>();
  return (file) => {
    let f = known.get(file);
    if (!f) {
      try {
        const d = describeGguf(file);
        f = { sizeBytes: d.sizeBytes, quantization: d.quantization };
      } catch {
        f = { sizeBytes: null, quantization: null }; // moved or unreadable: the header shows less
      }
      known.set(file, f);
    }
    return f;
  };
}

/** GET /api/status's model part: the served model, or the switch under way. */
function servedStatus(served: ServedModel<Engine, CoreParts>, facts: ReturnType<typeof modelFacts>, installedName: (file: string) => string | null) {
  const sw = served.switchState;
  const e = served.now?.engine;
  if (!e) return { model: null, backend: null, gpu: null, adapter: "base", modelSwitch: sw };
  return { ...engineStatus(e, facts, installedName), modelSwitch: sw };
}

function engineStatus(engine: Engine, facts: ReturnType<typeof modelFacts>, installedName: (file: string) => string | null) {
  const i = engine.info();
  return {
    model: {
      id: i.modelId,
      name: installedName(i.modelPath) ?? i.modelId,
      path: i.modelPath,
      contextSize: i.contextSize,
      trainContextSize: i.trainContextSize,
      chatWrapper: i.chatWrapper,
      ...facts(i.modelPath),
    },
    backend: i.backend,
    /** backends tried before the serving one: [{ backend, kind: "unavailable" | "broken", reason, rememberedSince? }] */
    backendSkipped: i.backendSkipped,
    gpu: i.backend === "cpu" ? null : { ...(i.devices.length > 0 ? { name: i.devices.join(", ") } : {}), layers: i.gpuLayers },
    adapter: i.adapter,
    sequences: i.sequences,
  };
}
