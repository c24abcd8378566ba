// The core's JSON, read tolerantly: the app API is built at the same time as this UI, so every
// reader accepts the documented field name and the obvious alternatives, and never throws on
// a missing field (a page shows "—" instead of going blank).

type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** First defined value among dotted paths, e.g. pick(o, "training.state", "trainingState"). */
export function pick(o: unknown, ...paths: string[]): unknown {
  for (const p of paths) {
    let cur: unknown = o;
    for (const k of p.split(".")) cur = isObj(cur) ? cur[k] : Array.isArray(cur) ? cur[Number(k)] : undefined;
    if (cur !== undefined && cur !== null) return cur;
  }
  return undefined;
}
export const str = (v: unknown): string | null => (typeof v === "string" ? v : typeof v === "number" ? String(v) : null);
export const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : null);
const bool = (v: unknown): boolean => v === true || v === "true" || v === 1;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** A list either bare or wrapped as {key: [...]} / {data: [...]}. */
export function listOf(body: unknown, key: string): unknown[] {
  if (Array.isArray(body)) return body;
  return arr(pick(body, key, "data", "items"));
}

export interface ModelInfo {
  name: string;
  path: string | null;
  sizeBytes: number | null;
  quantization: string | null;
  contextSize: number | null;
  gpuLayers: number | null;
  arch: string | null;
  trainable: boolean | null;
  /** Whether it trains on this machine (GET /api/models), null when not known. */
  training: Trainability | null;
}

/**
 * Whether a model trains on this machine, and how (core: models/trainability.ts, the
 * trainer's memory plan): GET /api/models's `training` of each model.
 */
export interface Trainability {
  fits: boolean;
  /** tfjs backend it was planned for ("wasm" until the trainer has reported another). */
  backend: string;
  /** Longest sample kept in training; 0 when it does not fit. */
  maxContext: number;
  summary: string;
  /** Why it cannot train: "memory" (too large here), "architecture" (serve only), null when it fits. */
  limit: "memory" | "architecture" | null;
  needDeviceBytes: number | null;
  availableDeviceBytes: number | null;
  needHostBytes: number | null;
  availableHostBytes: number | null;
}

export function readTrainability(t: unknown): Trainability | null {
  if (!isObj(t) || typeof t.fits !== "boolean") return null;
  const limit = str(pick(t, "limit"));
  return {
    fits: t.fits,
    backend: str(pick(t, "backend")) ?? "wasm",
    maxContext: num(pick(t, "maxContext")) ?? 0,
    summary: str(pick(t, "summary")) ?? "",
    limit: t.fits ? null : limit === "architecture" ? "architecture" : "memory",
    needDeviceBytes: num(pick(t, "needDeviceBytes")),
    availableDeviceBytes: num(pick(t, "availableDeviceBytes")),
    needHostBytes: num(pick(t, "needHostBytes")),
    availableHostBytes: num(pick(t, "availableHostBytes")),
  };
}

/** The served model's verdict from the trainer's own, live plan (/api/status training.memory). */
export function trainabilityOfMemory(m: TrainingMemory, backend: string): Trainability {
  return { ...m, backend, maxContext: m.fits ? m.maxContext : 0, limit: m.fits ? null : "memory" };
}

export function readModel(m: unknown): ModelInfo | null {
  if (typeof m === "string") return { name: m, path: null, sizeBytes: null, quantization: null, contextSize: null, gpuLayers: null, arch: null, trainable: null, training: null };
  if (!isObj(m)) return null;
  const path = str(pick(m, "path", "file"));
  const trainable = pick(m, "trainable", "trainingSupported");
  return {
    name: str(pick(m, "name", "id")) ?? (path ? path.split(/[\\/]/).pop()! : "model"),
    path,
    sizeBytes: num(pick(m, "sizeBytes", "size", "bytes")),
    quantization: str(pick(m, "quantization", "quant", "fileType", "type")),
    contextSize: num(pick(m, "contextSize", "context", "contextLength", "nCtx")),
    gpuLayers: num(pick(m, "gpuLayers", "gpu.layers")),
    arch: str(pick(m, "arch", "architecture")),
    trainable: trainable === undefined ? null : bool(trainable),
    training: readTrainability(pick(m, "training")),
  };
}

export interface TrainingStatus {
  /** idle | judging | training | publishing | paused | … as the core says it. */
  state: string;
  step: number | null;
  steps: number | null;
  samplesWaiting: number | null;
  judgeQueue: number | null;
  backend: string | null;
  device: string | null;
  paused: boolean;
  lastError: string | null;
  /** checkpoint number being served; null = base model */
  activeCheckpoint: number | null;
  /** the last adapter swap: how long new requests waited */
  lastSwapMs: number | null;
  loss: number | null;
  restarts: number | null;
  /** The trainer's memory plan for the served model (null until the trainer has started once). */
  memory: TrainingMemory | null;
  /** The latest rollback the learner made by itself (the watch on what is served), or null. */
  lastRevert: RevertNote | null;
  /** The checkpoint the watch compares with the one it replaced, or null. */
  watch: WatchNote | null;
}

export interface RevertNote {
  checkpoint: number;
  /** the checkpoint served instead; null = the base model */
  to: number | null;
  reason: string;
  at: number | null;
}

export interface WatchNote {
  checkpoint: number;
  parent: number | null;
  /** rated turns of each so far, and their mean reward */
  rated: number;
  parentRated: number;
  meanReward: number | null;
  parentMeanReward: number | null;
}

function readRevert(r: unknown): RevertNote | null {
  const checkpoint = num(pick(r, "checkpoint"));
  const reason = str(pick(r, "reason"));
  if (checkpoint === null || reason === null) return null;
  return { checkpoint, to: num(pick(r, "to")), reason, at: time(pick(r, "at")) };
}

function readWatch(w: unknown): WatchNote | null {
  const checkpoint = num(pick(w, "checkpoint"));
  if (checkpoint === null) return null;
  return {
    checkpoint,
    parent: num(pick(w, "parent")),
    rated: num(pick(w, "reward.child.n")) ?? 0,
    parentRated: num(pick(w, "reward.parent.n")) ?? 0,
    meanReward: num(pick(w, "reward.child.mean")),
    parentMeanReward: num(pick(w, "reward.parent.mean")),
  };
}

/** What the trainer's memory plan decided (core: trainer/protocol.ts memoryPlanSchema). */
export interface TrainingMemory {
  fits: boolean;
  summary: string;
  maxContext: number;
  requestedMaxContext: number;
  maxContextThatFits: number;
  needDeviceBytes: number;
  availableDeviceBytes: number | null;
  needHostBytes: number;
  availableHostBytes: number;
}

function readMemory(m: unknown): TrainingMemory | null {
  if (m === null || typeof m !== "object") return null;
  const fits = bool(pick(m, "fits"));
  const summary = str(pick(m, "summary"));
  if (summary === null) return null;
  return {
    fits,
    summary,
    maxContext: num(pick(m, "maxContext")) ?? 0,
    requestedMaxContext: num(pick(m, "requestedMaxContext")) ?? 0,
    maxContextThatFits: num(pick(m, "maxContextThatFits")) ?? 0,
    needDeviceBytes: num(pick(m, "needDeviceBytes")) ?? 0,
    availableDeviceBytes: num(pick(m, "availableDeviceBytes")),
    needHostBytes: num(pick(m, "needHostBytes")) ?? 0,
    availableHostBytes: num(pick(m, "availableHostBytes")) ?? 0,
  };
}

export function readTraining(t: unknown): TrainingStatus {
  const state = str(pick(t, "state", "phase")) ?? (typeof t === "string" ? t : "idle");
  return {
    state,
    step: num(pick(t, "step", "progress.step")),
    steps: num(pick(t, "steps", "totalSteps", "progress.steps", "progress.total")),
    samplesWaiting: num(pick(t, "samplesWaiting", "samplesReady", "queue.samples", "samples")),
    judgeQueue: num(pick(t, "judgeQueue", "judgeQueued", "queue.judge", "judging")),
    backend: str(pick(t, "backend", "backend.name")),
    device: str(pick(t, "device", "backend.device")),
    paused: bool(pick(t, "paused")) || state === "paused",
    lastError: str(pick(t, "lastError", "error")),
    activeCheckpoint: num(pick(t, "activeCheckpoint")),
    lastSwapMs: num(pick(t, "lastSwap.pauseMs")),
    loss: num(pick(t, "loss")),
    restarts: num(pick(t, "restarts")),
    memory: readMemory(pick(t, "memory")),
    lastRevert: readRevert(pick(t, "lastRevert")),
    watch: readWatch(pick(t, "watch")),
  };
}

export interface CoreStatus {
  model: ModelInfo | null;
  /** Inference backend: cuda / vulkan / cpu … */
  backend: string | null;
  gpu: string | null;
  adapter: string;
  training: TrainingStatus;
  swapping: boolean;
}

export function readStatus(s: unknown): CoreStatus {
  const model = readModel(pick(s, "model"));
  const gpuLayers = num(pick(s, "gpu.layers", "gpuLayers", "model.gpuLayers", "backend.gpuLayers"));
  if (model && model.gpuLayers === null) model.gpuLayers = gpuLayers;
  return {
    model,
    backend: str(pick(s, "backend.name", "backend.type", "inference.backend", "backend", "gpu.type")),
    gpu: str(pick(s, "gpu.name", "backend.device", "backend.gpu", "inference.device", "gpuName")),
    adapter: str(pick(s, "adapter.version", "adapterVersion", "adapter")) ?? "base",
    training: readTraining(pick(s, "training", "learner")),
    swapping: bool(pick(s, "swapping", "adapter.swapping", "swap.inProgress")),
  };
}

export interface SessionSummary {
  id: string;
  title: string;
  updatedAt: number | null;
  turnCount: number | null;
  /** "ui" (our chat) or "outside" (an API client such as OpenClaw) */
  source: string | null;
}

function time(v: unknown): number | null {
  if (typeof v === "number") return v < 1e12 ? v * 1000 : v; // seconds or ms
  if (typeof v === "string") {
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

export function readSessions(body: unknown): SessionSummary[] {
  return listOf(body, "sessions")
    .filter(isObj)
    .map((s) => ({
      id: str(pick(s, "id", "sessionId")) ?? "",
      title: str(pick(s, "title", "name")) ?? "",
      updatedAt: time(pick(s, "lastActivityAt", "updatedAt", "lastActivity", "createdAt")),
      turnCount: num(pick(s, "turnCount", "turns")),
      source: str(pick(s, "source")),
    }))
    .filter((s) => s.id !== "")
    .sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0));
}

export type Thumbs = "up" | "down" | null;

export interface Vote {
  score: number | null;
  text: string | null;
}

export interface Turn {
  id: string;
  type: string;
  /** The user's message this turn answered. */
  userText: string;
  /** Every prompt message (to rebuild the conversation), when the core sends them. */
  messages: { role: string; content: string }[];
  response: string;
  adapter: string;
  thumbs: Thumbs;
  hint: string | null;
  reward: number | null;
  votes: Vote[];
  judgeHints: string[];
  at: number | null;
}

/** Message content as text: plain strings, or OpenAI text-part arrays. */
export function contentText(c: unknown): string {
  if (typeof c === "string") return c;
  return arr(c)
    .map((p) => (isObj(p) && typeof p.text === "string" ? p.text : ""))
    .join("");
}

function readVotes(v: unknown): Vote[] {
  return arr(v).map((x) => (isObj(x) ? { score: num(pick(x, "score", "vote", "value")), text: str(pick(x, "text", "raw", "explanation")) } : { score: num(x), text: null }));
}

export function readTurn(t: unknown): Turn {
  const messages = arr(pick(t, "messages", "prompt.messages", "request.messages", "prompt"))
    .filter(isObj)
    .map((m) => ({ role: str(m.role) ?? "user", content: contentText(m.content) }));
  // OpenClaw appends its internal context as a last user message: that is not what the user said.
  const lastUser = [...messages].reverse().find((m) => m.role === "user" && !m.content.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"));
  const thumbs = str(pick(t, "feedback.thumbs", "thumbs"));
  return {
    id: str(pick(t, "id", "turnId")) ?? "",
    type: str(pick(t, "type", "turnType")) ?? "main",
    userText: str(pick(t, "userText", "user")) ?? lastUser?.content ?? "",
    messages,
    response: str(pick(t, "text", "response.text", "response.content", "responseText", "response", "answer", "content")) ?? "",
    adapter: str(pick(t, "adapter", "adapterVersion")) ?? "base",
    thumbs: thumbs === "up" || thumbs === "down" ? thumbs : null,
    hint: str(pick(t, "feedback.hint", "hint")),
    reward: num(pick(t, "reward", "judge.reward", "evaluation.reward")),
    votes: readVotes(pick(t, "votes", "judge.votes", "evaluation.votes")),
    judgeHints: arr(pick(t, "judgeHints", "judge.hints", "evaluation.hints")).map(str).filter((x): x is string => !!x),
    at: time(pick(t, "createdAt", "at", "time", "timestamp")),
  };
}

export interface SessionDetail {
  id: string;
  title: string;
  turns: Turn[];
}

export function readSession(body: unknown): SessionDetail {
  const s = isObj(body) && isObj(body.session) ? body.session : body;
  return {
    id: str(pick(s, "id", "sessionId")) ?? "",
    title: str(pick(s, "title", "name")) ?? "",
    turns: arr(pick(s, "turns", "data") ?? pick(body, "turns")).map(readTurn),
  };
}

export interface Checkpoint {
  n: number;
  version: string;
  at: number | null;
  samples: number | null;
  meanReward: number | null;
  loss: number | null;
  kl: number | null;
  verdict: string | null;
  active: boolean;
  pinned: boolean;
  /** made by importing an adapter trained elsewhere */
  imported: boolean;
  /** why the learner rolled it back by itself (verdict "reverted"), else null */
  revertReason: string | null;
  /** mean KL(checkpoint || base model) per token on recent prompts when it was made */
  klToBase: number | null;
}

export function readCheckpoints(body: unknown): { items: Checkpoint[]; active: string | null } {
  const active = str(pick(body, "active", "activeVersion"));
  const items = listOf(body, "checkpoints")
    .filter(isObj)
    .map((c) => {
      const n = num(pick(c, "n", "number", "id", "version")) ?? 0;
      const version = str(pick(c, "version", "name")) ?? `v${n}`;
      return {
        n,
        version,
        at: time(pick(c, "createdAt", "time", "at", "metrics.createdAt")),
        samples: num(pick(c, "samples", "metrics.samples", "metrics.samplesUsed", "samplesUsed")),
        meanReward: num(pick(c, "meanReward", "metrics.meanReward")),
        loss: num(pick(c, "loss", "metrics.loss")),
        kl: num(pick(c, "kl", "metrics.kl", "metrics.klToServing")),
        verdict: str(pick(c, "verdict", "gate.verdict", "metrics.gate.verdict", "metrics.verdict", "metrics.gate")),
        active: bool(pick(c, "active")) || (active !== null && (active === version || active === String(n))),
        pinned: bool(pick(c, "pinned")),
        imported: bool(pick(c, "imported")),
        revertReason: str(pick(c, "reverted.reason")),
        klToBase: num(pick(c, "klToBase.recent", "gate.klToBase.recent")),
      };
    });
  return { items, active };
}

export interface MetricPoint {
  at: number | null;
  meanReward: number | null;
  loss: number | null;
  kl: number | null;
  /** drift: mean KL(candidate || base model) per token on recent prompts, and on held-back turns */
  klToBase: number | null;
  klToBaseHeldBack: number | null;
  /** the gate's budget for it */
  driftBudget: number | null;
  verdict: string | null;
}

/** Points for the training charts: the checkpoints (published or rejected candidates) in time order. */
export function metricSeries(checkpoints: Checkpoint[], history: unknown): MetricPoint[] {
  const fromHistory = arr(history)
    .filter(isObj)
    .map((h) => ({
      at: time(pick(h, "at", "time", "createdAt")),
      meanReward: num(pick(h, "meanReward", "reward")),
      loss: num(pick(h, "loss")),
      kl: num(pick(h, "kl")),
      klToBase: num(pick(h, "klToBase")),
      klToBaseHeldBack: num(pick(h, "klToBaseHeldBack")),
      driftBudget: num(pick(h, "driftBudget")),
      verdict: str(pick(h, "verdict", "gate")),
    }));
  if (fromHistory.length) return fromHistory;
  return [...checkpoints]
    .sort((a, b) => a.n - b.n)
    .map((c) => ({ at: c.at, meanReward: c.meanReward, loss: c.loss, kl: c.kl, klToBase: c.klToBase, klToBaseHeldBack: null, driftBudget: null, verdict: c.verdict }));
}

export interface CatalogEntry {
  id: string;
  name: string;
  sizeBytes: number | null;
  arch: string | null;
  license: string | null;
  installed: boolean;
  download: DownloadState | null;
  recommended: boolean;
  quantization: string | null;
  notes: string | null;
  serveMemoryBytes: number | null;
  /** Whether it would train on this machine (the trainer's memory plan for its shape). */
  training: Trainability | null;
}

export interface DownloadState {
  state: string;
  bytes: number;
  total: number | null;
  speed: number | null;
  etaSeconds: number | null;
  error: string | null;
}

export function readDownload(d: unknown): DownloadState | null {
  if (!isObj(d)) return null;
  return {
    state: str(pick(d, "state", "status")) ?? "downloading",
    bytes: num(pick(d, "bytes", "received", "downloaded")) ?? 0,
    total: num(pick(d, "total", "totalBytes", "size")),
    speed: num(pick(d, "speed", "bytesPerSecond", "rate")),
    etaSeconds: num(pick(d, "eta", "etaSeconds", "secondsLeft")),
    error: str(pick(d, "error", "message")),
  };
}

export interface ModelsView {
  active: ModelInfo | null;
  catalog: CatalogEntry[];
  /** downloaded or imported models (ids usable with "use") */
  installed: (ModelInfo & { id: string; origin: string | null })[];
  recommendation: string | null;
  restartRequired: boolean;
}

export function readModels(body: unknown): ModelsView {
  return {
    active: readModel(pick(body, "active", "current", "model")),
    catalog: arr(pick(body, "catalog", "models", "available") ?? (Array.isArray(body) ? body : []))
      .filter(isObj)
      .map((m) => ({
        id: str(pick(m, "id")) ?? "",
        name: str(pick(m, "name", "id")) ?? "",
        sizeBytes: num(pick(m, "sizeBytes", "size", "bytes")),
        arch: str(pick(m, "arch", "architecture")),
        license: str(pick(m, "license")),
        installed: bool(pick(m, "installed", "downloaded", "present")),
        download: readDownload(pick(m, "download", "progress")),
        recommended: bool(pick(m, "recommended")),
        quantization: str(pick(m, "quantization")),
        notes: str(pick(m, "notes")),
        serveMemoryBytes: num(pick(m, "serveMemoryBytes")),
        training: readTrainability(pick(m, "training")),
      })),
    installed: arr(pick(body, "installed"))
      .filter(isObj)
      .map((m) => ({ ...readModel(m)!, id: str(pick(m, "id")) ?? "", origin: str(pick(m, "origin")) })),
    recommendation: str(pick(body, "recommendation.reason")),
    restartRequired: bool(pick(body, "restartRequired")),
  };
}

/** Where the judge runs: the served model without its adapter, another GGUF, or an OpenAI-compatible endpoint. */
export type JudgeSource = { kind: "base" } | { kind: "gguf"; path: string } | { kind: "endpoint"; baseUrl: string; model: string; apiKey?: string };

/** The settings the UI edits, named as the core's PATCH /api/settings names them; others are left alone. */
export interface Settings {
  learningMethod: "combined" | "binary" | "opd" | "topk";
  batchSize: number;
  learningRate: number;
  loraRank: number;
  /** OPD teacher: the learning policy with the hint (as the reference) or the base model with it */
  teacherSource: "policy" | "base";
  judgeVotes: number;
  judgeSource: JudgeSource;
  autoLearn: boolean;
  outsideDefaultTurnType: "main" | "side";
  headerlessTurnsMain: boolean;
  /** β of the KL to the base model in the training loss (the anchor; 0 = off) */
  klBeta: number;
  /** share of main turns held back from training (the gate and the watch check on them) */
  heldBackShare: number;
}

export const defaultSettings: Settings = {
  learningMethod: "combined",
  batchSize: 16,
  learningRate: 1e-4,
  loraRank: 16,
  teacherSource: "policy",
  judgeVotes: 3,
  judgeSource: { kind: "base" },
  autoLearn: true,
  outsideDefaultTurnType: "side",
  headerlessTurnsMain: true,
  // As the core's defaults (electron/core/store/settings.ts KL_BETA_DEFAULT, HELD_BACK_DEFAULT).
  klBeta: 0.3,
  heldBackShare: 0.125,
};

function readJudgeSource(v: unknown): JudgeSource {
  const kind = str(pick(v, "kind"));
  if (kind === "gguf") return { kind, path: str(pick(v, "path")) ?? "" };
  if (kind === "endpoint") {
    const apiKey = str(pick(v, "apiKey"));
    return { kind, baseUrl: str(pick(v, "baseUrl")) ?? "", model: str(pick(v, "model")) ?? "", ...(apiKey ? { apiKey } : {}) };
  }
  return { kind: "base" };
}

export function readSettings(body: unknown): Settings {
  const s = isObj(body) && isObj(body.settings) ? body.settings : body;
  const method = str(pick(s, "learningMethod", "method"));
  const turnType = str(pick(s, "outsideDefaultTurnType"));
  const d = defaultSettings;
  return {
    learningMethod: method === "binary" || method === "opd" || method === "topk" || method === "combined" ? method : d.learningMethod,
    batchSize: num(pick(s, "batchSize")) ?? d.batchSize,
    learningRate: num(pick(s, "learningRate")) ?? d.learningRate,
    loraRank: num(pick(s, "loraRank")) ?? d.loraRank,
    teacherSource: str(pick(s, "teacherSource")) === "base" ? "base" : "policy",
    judgeVotes: num(pick(s, "judgeVotes")) ?? d.judgeVotes,
    judgeSource: readJudgeSource(pick(s, "judgeSource")),
    autoLearn: pick(s, "autoLearn") === undefined ? d.autoLearn : bool(pick(s, "autoLearn")),
    outsideDefaultTurnType: turnType === "main" ? "main" : "side",
    headerlessTurnsMain: pick(s, "headerlessTurnsMain") === undefined ? d.headerlessTurnsMain : bool(pick(s, "headerlessTurnsMain")),
    klBeta: num(pick(s, "klBeta")) ?? d.klBeta,
    heldBackShare: num(pick(s, "heldBackShare")) ?? d.heldBackShare,
  };
}
