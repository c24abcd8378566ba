import fs from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { appRoot, dataPaths, defaultDataDir, type DataPaths } from "./config/paths.js";
import { createServer } from "./server/app.js";
import { loadOrCreateToken } from "./server/token.js";
import { registerApiRoutes } from "./server/routes/api.js";
import { Store } from "./store/store.js";
import { EventBus } from "./rollout/events.js";
import { Rollout } from "./rollout/rollout.js";
import { Engine, type EngineOptions } from "./inference/engine.js";
import { registerOpenAiRoutes } from "./server/routes/openai.js";
import { registerCompletionRoutes } from "./server/routes/completions.js";
import { registerEvalRoutes } from "./eval/latest.js";
import { ModelService } from "./models/modelService.js";
import { registerModelRoutes } from "./server/routes/apiModels.js";
import { Checkpoints, startupAdapter } from "./training/checkpoints.js";
import type { SamplePool } from "./training/pool.js";
import { TurnSamplePool } from "./rollout/samples.js";
import { JudgeService } from "./judge/service.js";
import { judgeBackendFactory } from "./judge/sources.js";
import { TrainingSupervisor, type SupervisorOptions } from "./training/supervisor.js";
import { gateProbeFor } from "./training/gateProbe.js";
import type { FluencyMeasure } from "./inference/fluencyProbe.js";
import { registerTrainingRoutes } from "./server/routes/training.js";
import { registerAdapterImportRoute } from "./server/routes/adapterImport.js";
import { APP_TRAIN_CONTEXT } from "../../models/trainVerdict.js";

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
  training?: false | (Partial<Pick<SupervisorOptions, "stepsPerRun" | "gate" | "evalTurns" | "restartBackoffMs" | "worker" | "watch">> & { pool?: SamplePool; probe?: FluencyMeasure | null });
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
  /** the loaded model, when `model` was given */
  engine: Engine | null;
  /** the learning loop, when a model is served and training is not turned off */
  training: TrainingSupervisor | null;
  /** the background judge (turns with a next state → judge lines in the log) */
  judge: JudgeService;
  /** main turns with a reward and/or hint, for the trainer */
  samples: TurnSamplePool;
  close(): Promise<void>;
}

export const defaultUiDir = path.join(appRoot, "out", "renderer");

/** Starts the headless core: the HTTP server with its routes. No electron import, ever. */
export async function startCore(opts: CoreOptions = {}): Promise<RunningCore> {
  const paths = dataPaths(opts.dataDir ?? defaultDataDir());
  fs.mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  const token = loadOrCreateToken(paths.token, opts.token);
  const store = Store.open(paths.root);
  if (store.recoveryMessage) console.warn(store.recoveryMessage);
  const bus = new EventBus();
  const rollout = new Rollout({ store, bus });
  rollout.start();
  const checkpoints = new Checkpoints(store, paths.checkpoints);
  const adapter = opts.engine?.adapter ?? startupAdapter(store, checkpoints);
  let engine: Engine | null = null;
  try {
    if (opts.model) {
      engine = await Engine.load({
        ...opts.engine,
        adapter,
        threads: opts.engine?.threads ?? envThreads(),
        // The Settings choice unless the caller (clawrl serve --gpu) named one.
        backend: opts.engine?.backend ?? store.settings.backend,
        // GPU backends found broken here are remembered (with why) until the app or driver changes.
        probe: { cacheFile: path.join(paths.root, "backendProbe.json"), ...opts.engine?.probe },
        modelPath: opts.model,
      });
    }
  } catch (err) {
    // Nothing may stay open (the rollout's idle timer would keep the process alive).
    rollout.stop();
    store.close();
    throw err;
  }
  let training: TrainingSupervisor | null = null;
  let probe: FluencyMeasure | null = null;
  const samples = new TurnSamplePool(store, bus);
  const judge = new JudgeService({ store, bus, backendFor: judgeBackendFactory(engine, { threads: opts.engine?.threads ?? envThreads() }) });
  judge.start();
  if (engine && opts.training !== false) {
    const t = opts.training ?? {};
    const pool = t.pool ?? samples;
    // The gate's fluency check samples candidates with llama.cpp in a model instance of its own.
    probe = t.probe === undefined ? gateProbeFor(engine, opts.engine?.threads ?? envThreads()) : t.probe;
    training = new TrainingSupervisor({ ...t, store, bus, pool, checkpoints, engine, modelPath: opts.model!, probe });
  }
  const server = createServer({ token, uiDir: opts.uiDir ?? defaultUiDir, bodyLimit: opts.bodyLimit });
  registerApiRoutes(server, {
    store,
    rollout,
    bus,
    engineStatus: engine ? () => engineStatus(engine) : undefined,
    trainingStatus: () => ({ ...(training?.status() ?? {}), judgeQueue: judge.queueLength }),
  });
  if (training) {
    registerTrainingRoutes(server, training, () => checkpoints.list(), () => store.state.training.activeCheckpoint, { store, judgeQueue: () => judge.queueLength });
    registerAdapterImportRoute(server, training, () => store.state.training.activeCheckpoint);
    training.start();
  }
  if (engine) registerOpenAiRoutes(server, { engine, rollout, defaultMaxTokens: () => store.settings.defaultMaxTokens });
  if (engine) registerCompletionRoutes(server, { engine, rollout });
  registerEvalRoutes(server, paths.root);
  const models = new ModelService({
    dir: paths.models,
    emit: (name, payload) => bus.emit(name, payload),
    served: engine ? () => ({ path: engine.info().modelPath, id: engine.info().modelId, contextSize: engine.info().contextSize, gpuLayers: engine.info().gpuLayers }) : undefined,
    trainer: training ? () => training!.status() : undefined,
    // As the supervisor asks the trainer (its settings()).
    trainSettings: () => ({ maxContext: store.settings.maxTrainContext ?? APP_TRAIN_CONTEXT, rank: store.settings.loraRank }),
  });
  registerModelRoutes(server, models);
  const host = opts.host ?? "127.0.0.1";
  await server.listen({ host, port: opts.port ?? 0 });
  const addr = server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    token,
    paths,
    server,
    store,
    bus,
    rollout,
    models,
    engine,
    training,
    judge,
    samples,
    close: async () => {
      await judge.close();
      await training?.stop();
      await probe?.close();
      samples.close();
      models.close();
      await server.close();
      await engine?.close();
      rollout.stop();
      store.close();
    },
  };
}

/** CLAWRL_THREADS: CPU threads per evaluation (tests on a shared machine set 1). */
function envThreads(): number | undefined {
  const n = Number(process.env.CLAWRL_THREADS);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function engineStatus(engine: Engine) {
  const i = engine.info();
  return {
    model: { id: i.modelId, path: i.modelPath, contextSize: i.contextSize, trainContextSize: i.trainContextSize, chatWrapper: i.chatWrapper },
    backend: i.backend,
    /** backends tried before the serving one: [{ backend, kind: "unavailable" | "broken", reason, rememberedSince? }] */
    backendSkipped: i.backendSkipped,
    gpu: i.backend === "cpu" ? null : { ...(i.devices.length > 0 ? { name: i.devices.join(", ") } : {}), layers: i.gpuLayers },
    adapter: i.adapter,
    sequences: i.sequences,
  };
}
